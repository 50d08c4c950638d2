"""The batch jobs and the ``symbolkg`` command line (the top layer: it may import every other).

Where things are:

* :mod:`.cli`: the parser, built from the command registry (``cli.COMMANDS``), and the dispatch;
  ``python -m symbolkg.jobs`` (:mod:`.__main__`) is the same command line.
* ``commands/``: one module per subcommand: ``add_parser(sub)`` (its options) and
  ``run(args) -> int`` (read the flags, call the job, print, exit status), nothing else;
  ``commands/common.py`` holds what several share (problem input, the LLM engine flags).
* The job behind a command, which tests, benchmarks and other jobs call as functions, is a
  module of this folder named after it: :mod:`.lkg`, :mod:`.report`, :mod:`.profile`,
  :mod:`.verify`, :mod:`.explain`, :mod:`.bench`, :mod:`.router_eval` and :mod:`.multihop`
  (``retrieval-eval``); :mod:`.mcp_server` is the server ``mcp serve`` starts. A command with no
  job of its own (``datasets``, ``check``, ``retrieve``, ``solve``) is only its command module.
* ``pipeline/``: the parts of the batch pipeline: result rows and store, answer
  interpretation, stage gates, the in-flight window, the recorded-programs job
  (``pipeline/solve.py``), the LLM-method job (``pipeline/runner.py``) and the retrieval stage.
* ``methods/``: the reasoning methods as plug-ins (the registry is ``methods/__init__.py``).
* ``datasets/``: the dataset families that turn inputs into problems.
* Command groups with a package of their own keep their command line in it (their package's
  ``add_parser``, listed in ``cli.COMMANDS``): ``logicgraph/`` and ``view/``.

The solver pools are one layer down: the interface and the local pool in
``symbolkg.solvers.runtime.local_pool``, the Ray pool and ``make_solver_pool`` (which picks one
for ``--executor``) in ``symbolkg.actors.solver_pool``.
"""
