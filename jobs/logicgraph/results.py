"""A ``multipath`` results file as LogicGraph's answers file and the paper's report.

The job is ``symbolkg solve --method multipath --dataset logicgraph/<tier> --out RUN.parquet`` (the
method job every method runs: resumable, cached, gated). ``symbolkg logicgraph verify --results
RUN.parquet`` then derives, beside the results file and rewritten whole on every call:

* ``RUN.answers.jsonl``: one line per answered instance in the format ``logicgraph verify
  --answers`` reads: the proofs parsed from the row's raw completion
  (:func:`~symbolkg.solvers.logicgraph.prompts.parse_answer`), token counts, how the completion
  came back, and the raw text;
* ``RUN.report.json``: the paper's metrics (:func:`~symbolkg.solvers.logicgraph.scoring.verify_run`)
  over every instance the results hold (an instance whose row has no answer counts as no paths),
  with the paper's best model beside them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from symbolkg.solvers.logicgraph.instances import Instance
from symbolkg.solvers.logicgraph.prompts import parse_answer
from symbolkg.solvers.logicgraph.scoring import verify_run
from symbolkg.solvers.outcomes import ErrorKind

#: LogicGraph paper, Table 4: the best model's averages over Small/Medium/Large (and its Small column).
PAPER_BEST = {
    "model": "Gemini-3-Pro-Preview",
    "average": {
        "success_rate": 96.11,
        "precision": 90.10,
        "shortest_path_rate": 80.33,
        "diversity": 59.60,
        "versatility": 79.44,
        "originality": 29.31,
    },
    "small": {
        "success_rate": 93.00,
        "precision": 89.11,
        "shortest_path_rate": 80.00,
        "diversity": 70.03,
        "versatility": 83.03,
        "originality": 20.96,
    },
    "medium": {
        "success_rate": 98.00,
        "precision": 91.89,
        "shortest_path_rate": 82.67,
        "diversity": 60.30,
        "versatility": 79.99,
        "originality": 30.3,
    },
}


def derived_paths(results: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``RUN.answers.jsonl`` and ``RUN.report.json`` beside ``RUN.parquet``."""
    path = Path(results)
    stem = path.name.removesuffix(".parquet")
    return path.with_name(f"{stem}.answers.jsonl"), path.with_name(f"{stem}.report.json")


def read_rows(results: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The recorded rows (merged or not, a killed run's parts included), by problem id.

    Raises:
        FileNotFoundError: no results at that path.
        ValueError: the rows are not all of the ``multipath`` method.
    """
    # the job's Parquet side (pyarrow) only when the command runs: the CLI builds every command's parser
    from symbolkg.jobs.pipeline.store import read_run

    table, _ = read_run(results)
    rows = {row["problem_id"]: row for row in table.to_pylist()}
    methods = {row["method"] for row in rows.values()}
    if methods - {"multipath"}:
        raise ValueError(
            f"{results}: rows of method {', '.join(sorted(methods))}; LogicGraph's metrics need a "
            "`symbolkg solve --method multipath` run"
        )
    return rows


def answer_of(row: Mapping[str, Any], instance: Instance) -> dict[str, Any]:
    """The answers-file object of one answered row: the proofs parsed from its raw completion, and its accounting."""
    parsed = parse_answer(row["program"], instance)
    attempt = (json.loads(row["attempts_log"] or "[]") or [{}])[0]
    return {
        "id": instance.id,
        "solutions": parsed.solutions,
        "tokens": row["prompt_tokens"] + row["completion_tokens"],
        "prompt_tokens": row["prompt_tokens"],
        "completion_tokens": row["completion_tokens"],
        "finish_reason": attempt.get("finish_reason"),
        "structured": attempt.get("structured"),
        "cached": row["cached_calls"] > 0,
        "parse_errors": parsed.errors,
        "truncated": parsed.truncated,
        "model": row["model"],
        "prompt_version": attempt.get("prompt_version"),
        "raw": row["program"],
    }


def summarize(
    results: str | os.PathLike[str], rows: Mapping[str, Mapping[str, Any]], instances: Iterable[Instance]
) -> dict[str, Any]:
    """Write ``RUN.answers.jsonl`` and ``RUN.report.json``; the summary (what the report holds).

    Args:
        results: the results file (names the derived files).
        rows: its rows by problem id (:func:`read_rows`).
        instances: the instances scored, in the dataset's order: those the rows hold.
    """
    scored = [inst for inst in instances if inst.id in rows]
    answers = [answer_of(rows[inst.id], inst) for inst in scored if rows[inst.id]["program"] is not None]
    answers_path, report_path = derived_paths(results)
    _write_atomically(answers_path, "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in answers))
    summary = {
        "datasets": sorted({rows[inst.id]["dataset"] for inst in scored}),
        "instances": len(scored),
        "answered": len(answers),
        "engine_errors": sum(rows[inst.id]["error_kind"] == ErrorKind.LLM.value for inst in scored),
        "truncated": sum(bool(a["truncated"]) for a in answers),
        "unparsed": sum(not a["solutions"] for a in answers),
        "cached": sum(bool(a["cached"]) for a in answers),
        "completion_tokens": sum(a["completion_tokens"] for a in answers),
        "report": verify_run(scored, answers, name=str(results)),
        "paper_best": PAPER_BEST,
        "results": str(results),
        "answers": str(answers_path),
    }
    _write_atomically(report_path, json.dumps(summary, indent=2) + "\n")
    return summary


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
