"""``symbolkg check``: start a solver worker and run one program per native solver (an installation check)."""

from __future__ import annotations

import argparse

from symbolkg.solvers.runtime import worker


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="start a solver worker and run one program per native solver")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return worker.main(["--check"])
