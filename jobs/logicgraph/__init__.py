"""``symbolkg logicgraph ...``: LogicGraph's multi-path reasoning task, end to end.

Subcommands, one module each (each module has ``add_arguments(parser)`` and ``run(args) -> int``):

* ``supports`` (:mod:`.supports`): every minimal premise set that entails the goal, with a
  completeness proof, checked against the reference proofs;
* ``verify`` (:mod:`.verify`): step-by-step verification of answer proofs and the paper's metrics,
  of answers files and of ``multipath`` results files (:mod:`.results`);
* ``generate`` (:mod:`.generate`): new instances in the dataset's format, ground truth by enumeration.

An LLM writing proofs is the ``multipath`` method's job like any method's: ``symbolkg solve --method
multipath --dataset logicgraph/<tier> --out RUN.parquet``, then ``symbolkg logicgraph verify --results
RUN.parquet`` for the paper's metrics. The logic lives in ``symbolkg.solvers``
(:mod:`~symbolkg.solvers.logicgraph.instances` records, :mod:`~symbolkg.solvers.logicgraph.elimination`,
:mod:`~symbolkg.solvers.logicgraph.proofs`, :mod:`~symbolkg.solvers.logicgraph.scoring`); these
modules are the commands around it.
"""

from __future__ import annotations

import argparse
import importlib

#: subcommand -> (module, help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "supports": (
        "supports",
        "every minimal premise set entailing the goal, complete by proof, checked against the reference",
    ),
    "verify": (
        "verify",
        "verify answer proofs step by step; Success/Precision/Shortest/Diversity/Versatility/Originality",
    ),
    "generate": ("generate", "generate new instances in the dataset's format; ground truth from the enumerator"),
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``logicgraph`` and its subcommands on the top-level CLI."""
    group = sub.add_parser("logicgraph", help="LogicGraph multi-path reasoning: supports, verify, generate")
    group_sub = group.add_subparsers(dest="logicgraph_command", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(f"{__name__}.{module_name}")
        p = group_sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(p)
        p.set_defaults(func=module.run)
