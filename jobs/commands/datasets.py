"""``symbolkg datasets``: the datasets it can load, with their problem counts."""

from __future__ import annotations

import argparse
import json
import sys

from symbolkg.jobs.commands.common import DATA_DIR_HELP
from symbolkg.jobs.datasets.files import default_data_dir


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("datasets", help="list the datasets it can load, with counts")
    p.add_argument("--data-dir", help=DATA_DIR_HELP)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # the dataset readers only when the command runs: the CLI builds every command's parser
    from symbolkg.jobs.datasets.registry import dataset_counts

    try:
        root = default_data_dir(args.data_dir)
    except FileNotFoundError as exc:
        print(f"symbolkg datasets: {exc}", file=sys.stderr)
        return 2
    counts = dataset_counts(root)
    if args.json:
        print(json.dumps({"data_dir": str(root), "datasets": counts}, indent=2))
        return 0
    print(f"data dir: {root}")
    print(f"{'dataset':32s} {'problems':>9s}")
    for name, n in counts.items():
        print(f"{name:32s} {n:9d}")
    return 0
