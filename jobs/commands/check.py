"""``symbolkg check``: start a solver worker and run one program per native solver (an installation check)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="start a solver worker and run one program per native solver")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # the solver registry (every language's checks) only when the command runs: the CLI builds every parser
    from symbolkg.solvers.runtime import worker

    return worker.main(["--check"])
