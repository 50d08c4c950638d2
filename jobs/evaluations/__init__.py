"""Evaluations: jobs that measure a part of the system against a ground truth or a scale.

* :mod:`.router`: the logic router against the solver each dataset's paper routes to (``symbolkg router-eval``);
* :mod:`.retrieval`: SymbolLKG's retrieval on multi-hop QA (``symbolkg retrieval-eval``);
* :mod:`.pipeline_bench`: the real orchestrator at cluster scale on simulated engines
  (``symbolkg bench pipeline --simulated``).
"""
