"""``symbolkg explain RUN --id ID``: one answer, its premises and its proof.

The job is :mod:`symbolkg.jobs.inspection.explain`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "explain",
        help="one answer: the question, the premises its certificate rests on (with their "
        "sentences), and the proof, readably",
    )
    p.add_argument("run", help="results Parquet written by `symbolkg solve`")
    p.add_argument("--id", required=True, help="the problem id")
    p.add_argument("--html", metavar="FILE", help="write an HTML page instead of printing")
    p.add_argument(
        "--data-dir", help="data root, for the question and context (default: $SYMBOLKG_DATA, else ../shared/data)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # the job only when the command runs (pyarrow and more): the CLI builds every command's parser
    from symbolkg.jobs.inspection.explain import explain_row, format_html, format_text, problem_text, recorded_verdict
    from symbolkg.jobs.pipeline.store import read_run  # pyarrow: as above

    try:
        table, _ = read_run(args.run)
    except FileNotFoundError as exc:
        print(f"symbolkg explain: {exc}", file=sys.stderr)
        return 2
    rows = [r for r in table.to_pylist() if r["problem_id"] == args.id]
    if not rows:
        print(f"symbolkg explain: no row with id {args.id!r} in {args.run}", file=sys.stderr)
        return 2
    row = rows[0]
    question, options, context = problem_text(row["dataset"], row["problem_id"], args.data_dir)
    e = explain_row(
        row, question=question, options=options, context=context, verdict=recorded_verdict(args.run, args.id)
    )
    if args.html:
        Path(args.html).write_text(format_html(e), encoding="utf-8")
        print(f"wrote {args.html}")
    else:
        print(format_text(e))
    return 0
