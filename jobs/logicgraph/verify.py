"""``symbolkg logicgraph verify``: check answer proofs step by step and compute the paper's metrics.

What it scores, together (Originality is measured across all of them):

* ``--answers FILE``: answers JSON lines (:mod:`symbolkg.solvers.logicgraph.answers`), e.g. another
  system's output;
* ``--results RUN.parquet``: a ``symbolkg solve --method multipath`` run; its answers file and report
  are written beside it (:mod:`symbolkg.jobs.logicgraph.results`) and the report is printed beside
  the paper's best model;
* ``--reference``: the dataset's own reference proofs (``--write-reference FILE`` writes them).

The checks and the metrics are :mod:`symbolkg.solvers.logicgraph.scoring`; docs/LOGICGRAPH.md
defines each metric.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from symbolkg.jobs.logicgraph.results import PAPER_BEST, read_rows, summarize
from symbolkg.solvers.logicgraph.answers import AnswerSet, answer_set, read_answers, reference_answers, write_answers
from symbolkg.solvers.logicgraph.instances import Instance, InstanceError, load_instances
from symbolkg.solvers.logicgraph.scoring import format_report, format_table, metrics, verify_answers


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset",
        action="append",
        default=None,
        metavar="NAME",
        help="logicgraph/<tier>, repeatable (default: the tiers of --results, else every logicgraph tier in the data "
        "folder)",
    )
    parser.add_argument(
        "--data-dir", default=None, help="the shared data folder (default: $SYMBOLKG_DATA or ../shared/data)"
    )
    parser.add_argument(
        "--answers",
        action="append",
        default=[],
        metavar="FILE",
        help="answers JSON lines {id, solutions, tokens?}; repeatable (Originality is measured across all)",
    )
    parser.add_argument(
        "--results",
        action="append",
        default=[],
        metavar="RUN.parquet",
        help="a `symbolkg solve --method multipath` results file; repeatable: its answers file and report are "
        "written beside it (RUN.answers.jsonl, RUN.report.json)",
    )
    parser.add_argument(
        "--reference", action="store_true", help="also verify the dataset's reference proofs as an answer set"
    )
    parser.add_argument(
        "--write-reference", metavar="FILE", default=None, help="write the reference proofs as an answers file"
    )
    parser.add_argument("--limit", type=int, default=None, help="first N instances of each tier")
    parser.add_argument(
        "--lenient-rules", action="store_true", help="count paths whose only errors are Rule Misapplications as valid"
    )
    parser.add_argument(
        "--allow-contraposition",
        action="store_true",
        help="accept contraposition (CP: P->Q |- -Q->-P) as an eighth rule",
    )
    parser.add_argument(
        "--details", metavar="FILE", default=None, help="write per-instance, per-path checks as JSON lines"
    )
    parser.add_argument("--json", action="store_true", help="print the metrics as JSON")


def _load(args: argparse.Namespace, tiers: set[str] = frozenset()) -> list[Instance]:
    """The instances of ``--dataset`` (default: ``tiers``, else every logicgraph tier in the data folder)."""
    # the dataset readers (numpy) only when the command runs: the CLI builds every command's parser
    from symbolkg.jobs.datasets.logicgraph import logicgraph_tiers
    from symbolkg.jobs.datasets.registry import dataset_path  # as above

    # the paper's tier order (Small/Medium/Large) first, any generated tier after
    order = {"logicgraph/small": 0, "logicgraph/medium": 1, "logicgraph/large": 2}
    names = args.dataset or sorted(tiers or logicgraph_tiers(args.data_dir), key=lambda n: (order.get(n, 3), n))
    if not names:
        raise FileNotFoundError("no logicgraph/<tier>.jsonl in the data folder")
    instances: list[Instance] = []
    for name in names:
        if not name.startswith("logicgraph/"):
            raise ValueError(f"--dataset {name!r}: expected logicgraph/<tier>")
        path = dataset_path(name, args.data_dir)
        if not path.is_file():
            raise FileNotFoundError(f"{name}: no file {path}")
        instances.extend(load_instances(path, limit=args.limit))
    return instances


def _print_summary(summary: dict[str, Any]) -> None:
    """A results file's report, beside the paper's best model."""
    print(
        f"{summary['results']}: {summary['answered']}/{summary['instances']} instances answered "
        f"({summary['engine_errors']} engine errors, {summary['cached']} from the completion cache); "
        f"{summary['unparsed']} answers without a readable proof, {summary['truncated']} cut off at the token limit"
    )
    print(format_report(summary["report"], paper=PAPER_BEST))
    print(f"answers: {summary['answers']}")


def _results_sets(args: argparse.Namespace) -> tuple[list[Instance], list[AnswerSet], list[dict[str, Any]]]:
    """The instances, and per ``--results`` file its answer set and summary (answers file and report written).

    Raises:
        FileNotFoundError, ValueError, InstanceError: a missing file or dataset, rows of another method.
    """
    runs = [(path, read_rows(path)) for path in args.results]
    instances = _load(args, {row["dataset"] for _, rows in runs for row in rows.values()})
    sets, summaries = [], []
    for path, rows in runs:
        summary = summarize(path, rows, instances)
        answers = [json.loads(line) for line in Path(summary["answers"]).read_text(encoding="utf-8").splitlines()]
        sets.append(answer_set(str(path), ((f"{path}[{k}]", a) for k, a in enumerate(answers)), []))
        summaries.append(summary)
    if runs:  # score the instances the results hold, not the whole tier
        held = {pid for _, rows in runs for pid in rows}
        instances = [inst for inst in instances if inst.id in held]
    return instances, sets, summaries


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        print(f"symbolkg logicgraph verify: --limit must be >= 1, got {args.limit}", file=sys.stderr)
        return 2
    try:
        instances, sets, summaries = _results_sets(args)
    except (FileNotFoundError, ValueError, InstanceError, KeyError) as exc:
        print(f"symbolkg logicgraph verify: {exc}", file=sys.stderr)
        return 2
    if args.write_reference:
        n = write_answers(reference_answers(instances), args.write_reference)
        print(f"wrote {n} reference answers to {args.write_reference}", file=sys.stderr)
    if args.reference:
        sets.append(reference_answers(instances))
    for path in args.answers:
        try:
            sets.append(read_answers(path))
        except OSError as exc:
            print(f"symbolkg logicgraph verify: {path}: {exc}", file=sys.stderr)
            return 2
    if not sets:
        if args.write_reference:
            return 0
        print(
            "symbolkg logicgraph verify: nothing to verify (give --results RUN.parquet, --answers FILE or --reference)",
            file=sys.stderr,
        )
        return 2

    started = time.perf_counter()
    reports = [
        verify_answers(
            instances, s, strict_rules=not args.lenient_rules, allow_contraposition=args.allow_contraposition
        )
        for s in sets
    ]
    tables = [metrics(r, pool=reports) for r in reports]
    elapsed = time.perf_counter() - started

    if args.details:
        with open(args.details, "w", encoding="utf-8") as fh:
            for report in reports:
                fh.writelines(
                    json.dumps({"answers": report.name, **r.to_json()}, ensure_ascii=False) + "\n"
                    for r in report.instances
                )
    if args.json:
        print(
            json.dumps(
                {
                    "seconds": round(elapsed, 3),
                    "answer_sets": [
                        {
                            "name": report.name,
                            "errors": list(report.errors),
                            "unknown_ids": list(report.unknown_ids),
                            "metrics": {tier: m.to_json() for tier, m in table.items()},
                        }
                        for report, table in zip(reports, tables, strict=True)
                    ],
                    "results": summaries,
                },
                indent=2,
            )
        )
    else:
        for summary in summaries:  # each results file beside the paper's best model (its report.json)
            _print_summary(summary)
            print()
        for report, table in list(zip(reports, tables, strict=True))[len(summaries) :]:
            print(format_table(report, table))
            print()
        print(f"verified {sum(len(r.instances) for r in reports)} instance answers in {elapsed:.1f} s")
    return 0
