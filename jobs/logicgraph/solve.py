"""``symbolkg logicgraph solve``: the ``multipath`` method job, then LogicGraph's answers file and metrics.

An alias of ``symbolkg solve --method multipath --dataset logicgraph/<tier>``: the method
(:mod:`symbolkg.jobs.methods.multipath`) asks the model for as many independent proofs as it can,
structured-decoded to the instance's own schema, and verifies each one step by step; the job
(:func:`~symbolkg.jobs.pipeline.runner.run_method_job`) keeps many instances in flight through one
engine, behind its stage gates. This module only adapts: its flags onto the method's and the job's,
and the rows onto what the paper's metrics need. In the run folder ``--out``:

* ``results.parquet``: the job's results, one row per instance, streamed as answers arrive (with
  the job's gate and request logs beside it, for ``symbolkg profile``). A rerun skips the
  instances recorded and never writes one twice (a kill loses at most the rows not yet flushed);
  ``--cache DIR`` keeps the completions themselves, so a rerun into a fresh ``--out`` costs no
  tokens. An engine error is recorded in its row like any failure: the instance stays unanswered
  in this folder (a rerun into a fresh ``--out`` asks it again, the others from the cache).
* ``answers.jsonl``: derived from the rows after every run (rewritten whole), one line per answered
  instance in the format ``symbolkg logicgraph verify --answers`` reads: the proofs parsed from the
  row's raw completion (:func:`~symbolkg.solvers.logicgraph.prompts.parse_answer`), token counts,
  how the completion came back, and the raw text.
* ``report.json``: the paper's metrics (:func:`~symbolkg.jobs.logicgraph.verify.verify_run`), also
  printed on the terminal beside the paper's best model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symbolkg.actors.engines.base import EngineDeadError, LLMEngine, SamplingParams
from symbolkg.actors.engines.factory import ENGINES, EngineOptions
from symbolkg.jobs.commands.common import DATA_DIR_HELP, run_with_engine
from symbolkg.jobs.datasets.records import InputError
from symbolkg.jobs.logicgraph.verify import format_report, verify_run
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.methods.multipath import Multipath, instance_of
from symbolkg.jobs.pipeline.rows import Problem
from symbolkg.solvers.logicgraph.instances import Instance, InstanceError
from symbolkg.solvers.logicgraph.prompts import parse_answer
from symbolkg.solvers.outcomes import ErrorKind

if TYPE_CHECKING:
    from symbolkg.jobs.pipeline.store import ResultStore

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

#: the files of a run folder
RESULTS, ANSWERS, REPORT = "results.parquet", "answers.jsonl", "report.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default="logicgraph/small", help="logicgraph/<tier> (default logicgraph/small)")
    p.add_argument("--data-dir", help=DATA_DIR_HELP)
    p.add_argument("--limit", type=int, help="only the first N instances")
    p.add_argument("--ids", nargs="+", help="only these instance ids")
    p.add_argument(
        "--out", required=True, help="run folder: results.parquet (resumable), answers.jsonl and report.json"
    )
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="vllm",
        help="LLM backend (default vllm with the embedded SmolLM2-135M-Instruct)",
    )
    p.add_argument("--model", help="model name or path (see `symbolkg solve --help`)")
    p.add_argument("--openai-url", help="base URL of an OpenAI-compatible server (--engine openai)")
    p.add_argument("--cache", help="completion cache dir (written through; read by --engine replay)")
    p.add_argument("--max-model-len", type=int, help="vLLM context length")
    p.add_argument("--max-tokens", type=int, default=1024, help="most generated tokens per instance (default 1024)")
    # the method's own flags (--show, --max-proofs, --max-steps): `symbolkg solve`'s --multipath-*
    Multipath.add_arguments(p, prefix="--")
    p.add_argument("--max-in-flight", type=int, default=32, help="instances asked concurrently (default 32)")
    p.add_argument("--no-structured", action="store_true", help="plain-text decoding instead of the JSON schema")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")


@dataclass
class SolveRun:
    """One run folder of ``symbolkg logicgraph solve``: the method job into it, and what is derived from its rows.

    Attributes:
        dataset: the ``logicgraph/<tier>`` name (reported).
        problems: the instances as problems of the dataset (unique ids).
        out: the run folder.
        method: the ``multipath`` method with its settings.
        config: the job's shared settings (``method="multipath"``; token budget, structured decoding).
        max_in_flight, progress: as :func:`~symbolkg.jobs.pipeline.runner.run_method_job` takes them.
        run_info: what the results' metadata records of this job.
        instances: the LogicGraph instance of each problem (built on creation).

    Raises:
        InstanceError: a problem is no LogicGraph instance (another dataset).
    """

    dataset: str
    problems: list[Problem]
    out: Path
    method: Multipath = field(default_factory=Multipath)
    config: MethodConfig = field(default_factory=lambda: MethodConfig(method=Multipath.name))
    max_in_flight: int = 32
    progress: bool = True
    run_info: dict[str, Any] = field(default_factory=dict)
    instances: list[Instance] = field(init=False)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.instances = [instance_of(p) for p in self.problems]

    @property
    def results(self) -> Path:
        return self.out / RESULTS

    def store(self) -> ResultStore:
        # the job's Parquet side (pyarrow) only when the command runs: the CLI builds every command's parser
        from symbolkg.jobs.pipeline.store import ResultStore

        return ResultStore(self.results, run_info=self.run_info)

    def pending(self) -> list[str]:
        """Ids of the instances the results do not hold yet."""
        done = self.store().done_ids()
        return [p.id for p in self.problems if p.id not in done]

    async def answer(self, engine: LLMEngine) -> dict[str, Any]:
        """Run the method job on ``engine`` for every instance not yet recorded; this call's counts.

        Raises:
            EngineDeadError: the engine died; the rows finished so far are saved (a rerun resumes).
        """
        # the job's Parquet side (pyarrow) only when the command runs: the CLI builds every command's parser
        from symbolkg.actors.engines.metered import MeteredEngine, write_request_log
        from symbolkg.jobs.pipeline.runner import run_method_job  # as above

        asked = set(self.pending())
        store, metered = self.store(), MeteredEngine(engine)
        t0 = time.monotonic()
        try:
            await run_method_job(
                self.problems,
                store,
                self.config,
                metered,
                None,
                max_in_flight=self.max_in_flight,
                progress=self.progress,
                method=self.method,
            )
        finally:
            write_request_log(self.results, metered.records)
        return _counts([row for pid, row in self.rows().items() if pid in asked], len(asked), time.monotonic() - t0)

    def nothing_to_ask(self) -> dict[str, Any]:
        """This call's counts when every instance is recorded (no engine is started); merges a killed run's parts."""
        store = self.store()
        if store.parts_dir.is_dir():
            store.finalize()
        return _counts([], 0, 0.0)

    def rows(self) -> dict[str, dict[str, Any]]:
        """The recorded rows (merged or not), by instance id; empty before the first row."""
        # the job's Parquet side (pyarrow) only when the command runs: the CLI builds every command's parser
        from symbolkg.jobs.pipeline.store import read_run

        try:
            table, _ = read_run(self.results)
        except FileNotFoundError:
            return {}
        return {row["problem_id"]: row for row in table.to_pylist()}

    def answers(self) -> list[dict[str, Any]]:
        """Every answered instance as an answers-file object, in the dataset's order; rewrites ``answers.jsonl``."""
        rows = self.rows()
        answers = [
            _answer(rows[inst.id], inst)
            for inst in self.instances
            if inst.id in rows and rows[inst.id]["program"] is not None
        ]
        self.out.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.out / ANSWERS, "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in answers))
        return answers

    def finish(self, this_call: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        """Write ``answers.jsonl`` and ``report.json`` from the rows; the summary (what ``report.json`` holds)."""
        answers = self.answers()
        rows = self.rows()
        engine_errors = sum(rows[p.id]["error_kind"] == ErrorKind.LLM.value for p in self.problems if p.id in rows)
        summary = {
            "dataset": self.dataset,
            "instances": len(self.instances),
            "answered": len(answers),
            "engine_errors": engine_errors,
            "this_call": this_call,
            "config": config,
            "truncated": sum(bool(a["truncated"]) for a in answers),
            "unparsed": sum(not a["solutions"] for a in answers),
            "report": verify_run(self.instances, answers),
            "paper_best": PAPER_BEST,
            "results": str(self.results),
        }
        _write_atomically(self.out / REPORT, json.dumps(summary, indent=2) + "\n")
        return summary


def _counts(rows: list[dict[str, Any]], asked: int, seconds: float) -> dict[str, Any]:
    """This call's counts from the rows it wrote: asked, answered, engine errors (id -> message), tokens."""
    errors = {row["problem_id"]: row["error_message"] for row in rows if row["error_kind"] == ErrorKind.LLM.value}
    return {
        "asked": asked,
        "answered": sum(row["program"] is not None for row in rows),
        "engine_errors": len(errors),
        "prompt_tokens": sum(row["prompt_tokens"] for row in rows),
        "completion_tokens": sum(row["completion_tokens"] for row in rows),
        "seconds": round(seconds, 3),
        "errors": errors,
    }


def _answer(row: dict[str, Any], instance: Instance) -> dict[str, Any]:
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


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


# --------------------------------------------------------------------------- the command


def _problems(args: argparse.Namespace) -> list[Problem]:
    """The instances ``--dataset``, ``--ids`` and ``--limit`` name, as problems. Raises ValueError on a bad choice."""
    # the dataset readers (numpy) only when the command runs: the CLI builds every command's parser
    from symbolkg.jobs.datasets.registry import load_dataset

    loaded = load_dataset(args.dataset, args.data_dir, limit=None if args.ids else args.limit)
    if not args.ids:
        return list(loaded.problems)
    wanted = set(args.ids)
    problems = [p for p in loaded.problems if p.id in wanted]
    missing = sorted(wanted - {p.id for p in problems})
    if missing:
        raise ValueError(f"no instance {', '.join(missing)} in {args.dataset}")
    return problems[: args.limit]


def _solve_run(args: argparse.Namespace) -> tuple[SolveRun, EngineOptions]:
    """The run and the engine the flags describe.

    Raises:
        ValueError, InstanceError, InputError, FileNotFoundError: a bad flag or dataset (the message says which).
    """
    for flag, value in (
        ("--limit", args.limit),
        ("--max-in-flight", args.max_in_flight),
        ("--max-tokens", args.max_tokens),
    ):
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be >= 1, got {value}")
    try:
        method = Multipath.from_args(args)
    except ValueError as exc:  # the method names its `symbolkg solve` flags; here they have no prefix
        raise ValueError(str(exc).replace("--multipath-", "--")) from None
    opts = EngineOptions(
        kind=args.engine,
        model=args.model,
        cache_dir=args.cache,
        openai_url=args.openai_url,
        max_model_len=args.max_model_len,
    )
    config = MethodConfig(
        method=Multipath.name,
        formulate_params=SamplingParams(max_tokens=args.max_tokens),
        structured=not args.no_structured,
    )
    run_info = {
        "source": args.dataset,
        "method": Multipath.name,
        "engine": opts.kind,
        "model": args.model,
        "max_tokens": args.max_tokens,
        "command": "logicgraph solve",
        Multipath.name: method.run_info(),
    }
    solve_run = SolveRun(
        args.dataset,
        _problems(args),
        Path(args.out),
        method,
        config,
        max_in_flight=args.max_in_flight,
        progress=not args.no_progress,
        run_info=run_info,
    )
    return solve_run, opts


def run(args: argparse.Namespace) -> int:
    try:
        solve_run, opts = _solve_run(args)
    except (ValueError, InstanceError, InputError, FileNotFoundError) as exc:
        print(f"symbolkg logicgraph solve: {exc}", file=sys.stderr)
        return 2
    try:  # nothing to ask: never load a model
        this_call = run_with_engine(opts, solve_run.answer) if solve_run.pending() else solve_run.nothing_to_ask()
    except EngineDeadError as exc:
        solve_run.answers()
        print(
            f"symbolkg logicgraph solve: the LLM engine died: {exc}; answers so far are in {solve_run.results} "
            f"(and {solve_run.out / ANSWERS}), rerun to resume",
            file=sys.stderr,
        )
        return 1
    config = {
        "engine": opts.kind,
        "model": opts.model,
        "max_tokens": args.max_tokens,
        "show": solve_run.method.show,
        "structured": solve_run.config.structured,
    }
    summary = solve_run.finish(this_call, config)
    if args.json:
        print(json.dumps(summary))
    else:
        _print_report(summary, solve_run.out)
    return 0 if summary["answered"] == summary["instances"] else 1


def _print_report(summary: dict[str, Any], out: Path) -> None:
    now = summary["this_call"]
    print(
        f"{summary['dataset']}: {summary['answered']}/{summary['instances']} instances answered "
        f"({now['answered']} now, {now['engine_errors']} engine errors); "
        f"{summary['unparsed']} answers without a readable proof, {summary['truncated']} cut off at the token limit"
    )
    print(format_report(summary["report"], paper=PAPER_BEST))
    print(f"results: {summary['results']}\nanswers: {out / ANSWERS}\nreport:  {out / REPORT}")
