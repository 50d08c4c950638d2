"""``symbolkg report RUN``: accuracy, execution rate, errors by kind, timings.

The report is :mod:`symbolkg.jobs.inspection.report`.
``symbolkg report --summary RUN [RUN ...]`` prints the counts of several runs as one table instead
(:func:`symbolkg.jobs.inspection.report.summary`): what ``make demo`` ends with.
"""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="accuracy, execution rate, errors by kind, timings of a run")
    p.add_argument("run", nargs="+", help="results Parquet written by `symbolkg solve` (several with --summary)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", help="per-stage latency plot (PNG) for runs with stage timings (default RUN_stages.png)")
    p.add_argument("--no-plot", action="store_true", help="do not write the stage plot")
    p.add_argument(
        "--summary",
        action="store_true",
        help="one short table over every RUN given: what ran, problems, executed, correct, accuracy, "
        "certified answers; no timings, no paths (what `make demo` ends with)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # the job only when the command runs (pyarrow and more): the CLI builds every command's parser
    from symbolkg.jobs.inspection.report import default_plot_path, report, summary

    if not args.summary and len(args.run) > 1:
        print("symbolkg report: one RUN at a time (or --summary for a table over several)", file=sys.stderr)
        return 2
    if args.summary and (args.json or args.plot):
        print("symbolkg report: --summary prints a table only (no --json, no --plot)", file=sys.stderr)
        return 2
    try:
        if args.summary:
            print(summary(args.run))
            return 0
        plot = None if args.no_plot else (args.plot or default_plot_path(args.run[0]))
        print(report(args.run[0], as_json=args.json, plot=plot))
    except FileNotFoundError as exc:
        print(f"symbolkg report: {exc}", file=sys.stderr)
        return 2
    return 0
