"""``symbolkg router-eval``: router accuracy on the mixed stream of the five logic datasets.

The evaluation is :mod:`symbolkg.jobs.evaluations.router`; this is its command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from symbolkg.actors.engines.base import EngineDeadError
from symbolkg.jobs.commands.common import DATA_DIR_HELP, add_llm_options, llm_options, run_with_engine
from symbolkg.jobs.datasets.records import InputError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("router-eval", help="logic router accuracy on a mixed stream of the five Logic-LM datasets")
    p.add_argument(
        "--per-dataset", type=int, default=100, help="problems per dataset (default 100; fewer if a set is smaller)"
    )
    p.add_argument(
        "--store", help="LKG store: add each problem's graph counts (constraints, rules, relations) as features"
    )
    p.add_argument(
        "--no-option-features",
        action="store_true",
        help="ablation: hide the answer options (their format nearly names the dataset)",
    )
    p.add_argument(
        "--llm-vote", action="store_true", help="also ask the LLM; its vote overrules only weak feature rules"
    )
    add_llm_options(p, "--llm-vote")
    p.add_argument("--data-dir", help=DATA_DIR_HELP)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # the job only when the command runs (the LKG store: pyarrow, pandas): the CLI builds every command's parser
    from symbolkg.jobs.evaluations.router import evaluate_router, llm_votes, mixed_stream
    from symbolkg.retrieval.lkg.store import LKGStore  # as above

    if args.per_dataset < 1:
        print("symbolkg router-eval: --per-dataset must be >= 1", file=sys.stderr)
        return 2
    if args.store and not (Path(args.store) / "contexts").is_dir():
        print(f"symbolkg router-eval: no LKG store at {args.store}", file=sys.stderr)
        return 2
    try:
        stream = mixed_stream(args.per_dataset, args.data_dir)
    except (FileNotFoundError, InputError, ValueError) as exc:
        print(f"symbolkg router-eval: {exc}", file=sys.stderr)
        return 2
    store = LKGStore(args.store) if args.store else None
    votes = None
    if args.llm_vote:
        try:
            opts = llm_options(args)
        except ValueError as exc:
            print(f"symbolkg router-eval: {exc}", file=sys.stderr)
            return 2
        try:
            votes = run_with_engine(opts, lambda engine: llm_votes(engine, [p for _, p in stream]))
        except EngineDeadError as exc:
            print(f"symbolkg router-eval: the LLM engine died: {exc}", file=sys.stderr)
            return 1
    report, _ = evaluate_router(stream, store, use_options=not args.no_option_features, votes=votes)
    print(json.dumps(report.to_dict()) if args.json else report.format())
    return 0
