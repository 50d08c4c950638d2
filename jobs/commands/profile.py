"""``symbolkg profile RUN --out DIR``: per-stage latency, waits, engine occupancy.

The job is :mod:`symbolkg.jobs.inspection.profile`.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile", help="per-stage latency, waits, LLM engine occupancy and throughput of a run, with plots"
    )
    p.add_argument("run", help="results Parquet written by `symbolkg solve`")
    p.add_argument("--out", required=True, help="folder for profile.json, profile.md and the plots")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # the job only when the command runs (pyarrow and more): the CLI builds every command's parser
    from symbolkg.jobs.inspection.profile import format_profile, profile_run

    try:
        report = profile_run(args.run, args.out)
    except FileNotFoundError as exc:
        print(f"symbolkg profile: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report) if args.json else format_profile(report))
    return 0
