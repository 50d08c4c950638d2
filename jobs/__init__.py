"""The batch jobs and the ``symbolkg`` command line (the top layer: it may import every other).

Arranged by concern; the folders import downward only (``tests/test_layering.py``):

* :mod:`.core`: the typed records (problems, result rows, their schemas), the scored row built
  once, answers, ids, the in-flight loop: what everything else shares;
* :mod:`.datasets`: the dataset families that turn inputs into problems;
* :mod:`.methods`: the reasoning methods as plug-ins (the registry is ``methods/__init__.py``) and
  their stages;
* :mod:`.pipeline`: the batch jobs (``method_job``: every LLM method; ``programs_job``: recorded
  programs; ``lkg_build``: offline LKG precomputation) and their parts (store, gates, intake,
  reaper, provenance, run config);
* :mod:`.evaluations`: router, retrieval and pipeline-scale evaluations;
* :mod:`.inspection`: report, verify (certificates), explain, profile, LKG drawings;
* :mod:`.logicgraph`: the command group for what only LogicGraph has;
* :mod:`.servers`: the Prolog MCP server and the results viewer, apart from the batch jobs;
* :mod:`.cli` and ``commands/``: the command line, one thin module per subcommand
  (``add_parser(sub)``, ``run(args) -> int``), imported by nothing else.

The solver pools are one layer down: the interface and the local pool in
``symbolkg.solvers.runtime.local_pool``, the Ray pool and ``make_solver_pool`` (which picks one
for ``--executor``) in ``symbolkg.actors.solver_pool``.
"""
