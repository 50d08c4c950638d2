"""``symbolkg report RUN``: accuracy, execution rate, errors by kind, timings; the report is :mod:`symbolkg.jobs.report`."""

from __future__ import annotations

import argparse
import sys

from symbolkg.jobs.report import default_plot_path, report


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="accuracy, execution rate, errors by kind, timings of a run")
    p.add_argument("run", help="results Parquet written by `symbolkg solve`")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", help="per-stage latency plot (PNG) for runs with stage timings (default RUN_stages.png)")
    p.add_argument("--no-plot", action="store_true", help="do not write the stage plot")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    plot = None if args.no_plot else (args.plot or default_plot_path(args.run))
    try:
        print(report(args.run, as_json=args.json, plot=plot))
    except FileNotFoundError as exc:
        print(f"symbolkg report: {exc}", file=sys.stderr)
        return 2
    return 0
