"""``symbolkg logicgraph supports``: placeholder until its module lands (not a feature yet)."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="logicgraph/small")


def run(args: argparse.Namespace) -> int:
    print("symbolkg logicgraph supports: not built yet", file=sys.stderr)
    return 2
