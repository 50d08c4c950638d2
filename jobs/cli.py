"""The ``symbolkg`` command line: the parser built from the command modules, and the dispatch.

Every subcommand is a module with ``add_parser(sub)`` (its options; it sets ``func`` to its
``run(args) -> int``). :data:`COMMANDS` lists them in the order ``symbolkg --help`` shows them:
the modules of :mod:`symbolkg.jobs.commands`, and the command groups that live in their own
package (``logicgraph``: :mod:`symbolkg.jobs.logicgraph`; ``view``: :mod:`symbolkg.jobs.servers.view`).
Adding a command is one module and one entry here.
"""

from __future__ import annotations

import os

# Arrow allocates through the C library's malloc in a symbolkg process (and the Ray and solver
# processes it starts), unless ARROW_DEFAULT_MEMORY_POOL says otherwise. Arrow reads the variable
# once, when it is first imported, hence here, before any import that brings it. Its default,
# mimalloc, keeps the pages it frees for reuse, so a driver that streams rows through Parquet for
# hours (result parts, request and gate logs, the final merge) would hold the high-water mark of
# every batch it built: on the simulated 10^4-problem job, 250 MiB resident during the run and a
# 326 MiB peak in the final merge, against 224 and 267 MiB with malloc (benchmarks/RESULTS.md,
# "The driver at scale").
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

import argparse
import sys
from types import ModuleType

from symbolkg.jobs import logicgraph
from symbolkg.jobs.commands import (
    bench,
    check,
    config,
    datasets,
    explain,
    lkg,
    mcp,
    profile,
    report,
    retrieval_eval,
    retrieve,
    router_eval,
    solve,
    verify,
)
from symbolkg.jobs.servers import view

#: The subcommands, in the order of ``symbolkg --help``: each module's ``add_parser(sub)`` registers one.
COMMANDS: tuple[ModuleType, ...] = (
    datasets,
    solve,
    config,
    lkg,
    retrieve,
    retrieval_eval,
    router_eval,
    report,
    profile,
    bench,
    check,
    mcp,
    logicgraph,
    verify,
    explain,
    view,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="symbolkg", description="Batch engine for verifiable logical reasoning.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "workers", 1) < 1:
        print("symbolkg: --workers must be >= 1", file=sys.stderr)
        return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
