"""``symbolkg logicgraph solve``: an LLM writes as many independent proofs as it can; then they are verified.

A batch job like the others: every instance is one request (many in flight through one engine,
which batches them), structured-decoded to the instance's own schema
(:func:`~symbolkg.solvers.logicgraph.prompts.answer_schema`: the seven rule names, the instance's
premise ids and atoms). Each answer is appended to ``RUN/answers.jsonl`` as soon as it arrives,
in the format ``symbolkg logicgraph verify --answers`` reads, with its token counts and raw text.
A rerun skips the ids already answered (and a line cut off by a kill is dropped first), so it
resumes and never writes an instance twice; ``--cache DIR`` keeps the completions themselves,
so a rerun into a fresh ``--out`` costs no tokens. When all are answered the run is verified
(:mod:`.verify`) and the metrics go to ``RUN/report.json`` and the terminal, beside the paper's
best model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symbolkg.actors.engines.base import ChatRequest, EngineDeadError, EngineError, Message, SamplingParams, StructuredOutput
from symbolkg.actors.engines.factory import ENGINES, EngineOptions, make_engine
from symbolkg.jobs.datasets.registry import dataset_path
from symbolkg.jobs.logicgraph.verify import format_report, verify_run
from symbolkg.jobs.pipeline.concurrency import for_each_in_flight
from symbolkg.solvers.logicgraph.instances import InstanceError, load_instances
from symbolkg.solvers.logicgraph.prompts import PROMPT_VERSION, SHOW_CHOICES, answer_schema, messages, parse_answer

#: LogicGraph paper, Table 4: the best model's averages over Small/Medium/Large (and its Small column).
PAPER_BEST = {
    "model": "Gemini-3-Pro-Preview",
    "average": {"success_rate": 96.11, "precision": 90.10, "shortest_path_rate": 80.33, "diversity": 59.60,
                "versatility": 79.44, "originality": 29.31},
    "small": {"success_rate": 93.00, "precision": 89.11, "shortest_path_rate": 80.00, "diversity": 70.03,
              "versatility": 83.03, "originality": 20.96},
    "medium": {"success_rate": 98.00, "precision": 91.89, "shortest_path_rate": 82.67, "diversity": 60.30,
               "versatility": 79.99, "originality": 30.3},
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default="logicgraph/small", help="logicgraph/<tier> (default logicgraph/small)")
    p.add_argument("--data-dir", help="data root (default: $SYMBOLKG_DATA, else ../shared/data)")
    p.add_argument("--limit", type=int, help="only the first N instances")
    p.add_argument("--ids", nargs="+", help="only these instance ids")
    p.add_argument("--out", required=True, help="run folder: answers.jsonl (resumable) and report.json")
    p.add_argument("--engine", choices=ENGINES, default="vllm",
                   help="LLM backend (default vllm with the embedded SmolLM2-135M-Instruct)")
    p.add_argument("--model", help="model name or path (see `symbolkg solve --help`)")
    p.add_argument("--openai-url", help="base URL of an OpenAI-compatible server (--engine openai)")
    p.add_argument("--cache", help="completion cache dir (written through; read by --engine replay)")
    p.add_argument("--max-model-len", type=int, help="vLLM context length")
    p.add_argument("--max-tokens", type=int, default=1024, help="most generated tokens per instance (default 1024)")
    p.add_argument("--max-proofs", type=int, default=8, help="most proofs the schema allows in one answer (default 8)")
    p.add_argument("--max-steps", type=int, default=16, help="most steps per proof the schema allows (default 16)")
    p.add_argument("--max-in-flight", type=int, default=32, help="instances asked concurrently (default 32)")
    p.add_argument("--show", choices=SHOW_CHOICES, default="both",
                   help="premises as formulas and English (default), formulas only, or English only (the paper's setting)")
    p.add_argument("--no-structured", action="store_true", help="plain-text decoding instead of the JSON schema")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")


@dataclass(frozen=True)
class SolveConfig:
    """What one request looks like.

    Attributes:
        max_tokens: generated-token budget per instance.
        max_proofs, max_steps: the schema's bounds.
        show: how premises are shown (see :func:`~symbolkg.solvers.logicgraph.prompts.messages`).
        structured: structured decoding to the instance's schema.
    """

    max_tokens: int = 1024
    max_proofs: int = 8
    max_steps: int = 16
    show: str = "both"
    structured: bool = True

    def __post_init__(self) -> None:
        for name in ("max_tokens", "max_proofs", "max_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")


class AnswerLog:
    """``answers.jsonl``: one line per answered instance, appended and flushed as each arrives.

    Opening it drops a last line cut off by a kill (everything before it is kept), so a rerun
    resumes from exactly the instances whose answers were written in full.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: dict[str, dict[str, Any]] = {}
        if path.exists():
            good_bytes = 0
            with open(path, "rb") as fh:
                for raw in fh:
                    try:
                        row = json.loads(raw)
                    except json.JSONDecodeError:
                        break
                    if not raw.endswith(b"\n"):
                        break
                    self.done[row["id"]] = row
                    good_bytes += len(raw)
            if good_bytes != path.stat().st_size:
                with open(path, "r+b") as fh:
                    fh.truncate(good_bytes)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - held for the job, closed by close()

    def write(self, row: dict[str, Any]) -> None:
        if row["id"] in self.done:  # never twice, even if asked twice
            return
        self._fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.done[row["id"]] = row

    def close(self) -> None:
        self._fh.close()


async def answer_instances(instances, engine, cfg: SolveConfig, log: AnswerLog, *, max_in_flight: int = 32,
                           progress: bool = True) -> dict[str, Any]:
    """Ask ``engine`` about every instance not yet in ``log``; append each answer as it arrives.

    Returns:
        counts of this call: asked, answered, engine errors (those ids stay unanswered, so a
        rerun asks again), tokens and seconds.
    """
    todo = [inst for inst in instances if inst.id not in log.done]
    stats = {"asked": len(todo), "answered": 0, "engine_errors": 0, "prompt_tokens": 0, "completion_tokens": 0}
    errors: dict[str, str] = {}
    bar = None
    if progress and todo:
        from tqdm import tqdm  # optional third-party progress bar, imported only when shown

        bar = tqdm(total=len(todo), unit="instance", dynamic_ncols=True, file=sys.stderr)
    t0 = time.monotonic()
    structured_ok = cfg.structured and engine.supports_structured

    async def one(inst) -> None:
        request = ChatRequest(
            messages=tuple(Message(m["role"], m["content"]) for m in messages(inst, show=cfg.show)),
            params=SamplingParams(max_tokens=cfg.max_tokens),
            structured=StructuredOutput(json_schema=answer_schema(inst, max_proofs=cfg.max_proofs,
                                                                  max_steps=cfg.max_steps)) if structured_ok else None,
            problem_id=inst.id,
            purpose="logicgraph_proofs",
            request_id=f"{inst.id}:proofs",
        )
        try:
            (completion,) = await engine.generate([request])
        except EngineDeadError:
            raise
        except EngineError as exc:
            stats["engine_errors"] += 1
            errors[inst.id] = str(exc)
        else:
            parsed = parse_answer(completion.text, inst)
            log.write({
                "id": inst.id,
                "solutions": parsed.solutions,
                "tokens": completion.prompt_tokens + completion.completion_tokens,
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
                "finish_reason": completion.finish_reason,
                "structured": completion.structured,
                "cached": completion.cached,
                "parse_errors": parsed.errors,
                "truncated": parsed.truncated,
                "model": completion.model or engine.model,
                "prompt_version": PROMPT_VERSION,
                "raw": completion.text,
            })
            stats["answered"] += 1
            stats["prompt_tokens"] += completion.prompt_tokens
            stats["completion_tokens"] += completion.completion_tokens
        if bar is not None:
            bar.update(1)

    try:
        await for_each_in_flight(todo, one, max_in_flight)
    finally:
        if bar is not None:
            bar.close()
    stats["seconds"] = round(time.monotonic() - t0, 3)
    stats["errors"] = errors
    return stats


def run(args: argparse.Namespace) -> int:
    def fail(message: str) -> int:
        print(f"symbolkg logicgraph solve: {message}", file=sys.stderr)
        return 2

    if args.limit is not None and args.limit < 1:
        return fail("--limit must be >= 1")
    if args.max_in_flight < 1:
        return fail("--max-in-flight must be >= 1")
    try:
        path = dataset_path(args.dataset, args.data_dir)
        cfg = SolveConfig(max_tokens=args.max_tokens, max_proofs=args.max_proofs, max_steps=args.max_steps,
                          show=args.show, structured=not args.no_structured)
        opts = EngineOptions(kind=args.engine, model=args.model, cache_dir=args.cache, openai_url=args.openai_url,
                             max_model_len=args.max_model_len)
    except ValueError as exc:
        return fail(str(exc))
    if not path.is_file():
        return fail(f"dataset {args.dataset!r}: no file {str(path)!r}")
    try:
        instances = list(load_instances(path, limit=args.limit, ids=args.ids))
    except InstanceError as exc:
        return fail(str(exc))
    if args.ids:
        missing = sorted(set(args.ids) - {i.id for i in instances})
        if missing:
            return fail(f"no instance {', '.join(missing)} in {path}")
    out = Path(args.out)
    log = AnswerLog(out / "answers.jsonl")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

    async def main_async() -> dict[str, Any]:
        if all(inst.id in log.done for inst in instances):  # nothing to ask: never load a model
            return {"asked": 0, "answered": 0, "engine_errors": 0, "prompt_tokens": 0, "completion_tokens": 0,
                    "seconds": 0.0, "errors": {}}
        engine = make_engine(opts)
        try:
            return await answer_instances(instances, engine, cfg, log, max_in_flight=args.max_in_flight,
                                          progress=not args.no_progress)
        finally:
            await engine.close()

    try:
        stats = asyncio.run(main_async())
    except EngineDeadError as exc:
        print(f"symbolkg logicgraph solve: the LLM engine died: {exc}; answers so far are in {log.path}, "
              "rerun to resume", file=sys.stderr)
        return 1
    finally:
        log.close()
    answered = [log.done[i.id] for i in instances if i.id in log.done]
    _report(args, instances, answered, stats, cfg, opts, log, out)
    return 0 if len(answered) == len(instances) else 1


def _report(args: argparse.Namespace, instances: list, answered: list, stats: dict[str, Any], cfg: SolveConfig,
            opts: EngineOptions, log: AnswerLog, out: Path) -> None:
    """Verify the answers, write ``report.json`` and print the report."""
    report = verify_run(instances, answered)
    summary = {
        "dataset": args.dataset,
        "instances": len(instances),
        "answered": len(answered),
        "this_call": stats,
        "config": {"engine": args.engine, "model": opts.model, "max_tokens": cfg.max_tokens, "show": cfg.show,
                   "structured": cfg.structured},
        "truncated": sum(bool(a.get("truncated")) for a in answered),
        "unparsed": sum(not a["solutions"] for a in answered),
        "report": report,
        "paper_best": PAPER_BEST,
    }
    (out / "report.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{args.dataset}: {len(answered)}/{len(instances)} instances answered "
              f"({stats['answered']} now, {stats['engine_errors']} engine errors); "
              f"{summary['unparsed']} answers without a readable proof, {summary['truncated']} cut off at the token limit")
        print(format_report(report, paper=PAPER_BEST))
        print(f"answers: {log.path}\nreport:  {out / 'report.json'}")
