"""``symbolkg logicgraph generate``: new LogicGraph instances in the dataset's format.

Backward construction from the goal with the seven argument forms, the paper's three solver
filters with our own solvers, and a ground truth that is the enumerator's complete list of
minimal supports (see :mod:`symbolkg.solvers.logicgraph.generate`)::

    symbolkg logicgraph generate --tier small --count 100 --seed 0 --out gen/small.jsonl --stats

The file is written to a temporary name next to ``--out`` and renamed when complete, so a killed
run leaves no half file behind (instances are independent per ``(tier, seed, index)``: a rerun,
or ``--start`` to continue a range, gives the same lines). Saved as
``<data dir>/logicgraph/<tier>.jsonl`` it is the dataset ``logicgraph/<tier>`` for every other
command. Progress goes to stderr; ``--stats`` prints the tier statistics next to the dataset's
(when the data folder has that tier), ``--json`` prints them as JSON on stdout.

``--text llm`` asks an LLM (``--engine``, as for the other jobs) what each atom means, in the
instance's theme, and keeps the connectives in the templates, so the model's wording cannot change
what a premise says; an atom whose statement fails the checks keeps its template English.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from symbolkg.actors.engines.base import (
    ChatRequest,
    EngineDeadError,
    EngineError,
    Message,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.actors.engines.factory import ENGINES, EngineOptions, make_engine
from symbolkg.jobs.core.concurrency import for_each_in_flight
from symbolkg.jobs.datasets.files import default_data_dir
from symbolkg.solvers.logicgraph.generate import TIERS, GenerationError, generate_instance, reword, tier_statistics
from symbolkg.solvers.logicgraph.instances import load_instances
from symbolkg.solvers.logicgraph.wording import parse_readings, readings_request

#: the statistics rows of ``--stats``: (label, key in tier_statistics)
_ROWS = (
    ("instances", "instances"),
    ("proofs / instance", "solutions"),
    ("steps / proof", "steps"),
    ("families / instance", "families"),
    ("premises / instance", "premises"),
    ("facts / instance", "facts"),
    ("atoms / instance", "atoms"),
    ("core / branch proofs", None),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tier",
        choices=sorted(TIERS),
        default="small",
        help="small: 2-4 proofs, medium: 5-7, large: 8 or more (default small)",
    )
    p.add_argument("--count", type=int, default=100, help="instances to write (default 100)")
    p.add_argument(
        "--seed", type=int, default=0, help="run seed; instance i depends only on (tier, seed, i) (default 0)"
    )
    p.add_argument("--start", type=int, default=0, help="first instance index (default 0), to extend a run")
    p.add_argument("--out", required=True, help="output .jsonl (written atomically)")
    p.add_argument(
        "--distractors",
        type=int,
        help="dead-end chains per instance (default: the tier's, 0: like the dataset, every premise used)",
    )
    p.add_argument(
        "--text",
        choices=("template", "llm"),
        default="template",
        help="English from templates (default), or each atom's statement from an LLM (--engine ...) "
        "with the connectives still from templates",
    )
    g = p.add_argument_group("--text llm")
    g.add_argument(
        "--engine",
        choices=ENGINES,
        default="vllm",
        help="LLM backend (default vllm with the embedded SmolLM2-135M-Instruct)",
    )
    g.add_argument("--model", help="model name or path")
    g.add_argument("--openai-url", help="base URL of an OpenAI-compatible server (--engine openai)")
    g.add_argument("--cache", help="completion cache dir (written through; read by --engine replay)")
    g.add_argument("--max-tokens", type=int, default=2048, help="most generated tokens per instance (default 2048)")
    g.add_argument("--max-in-flight", type=int, default=32, help="instances worded concurrently (default 32)")
    p.add_argument("--stats", action="store_true", help="print tier statistics next to the dataset's")
    p.add_argument("--json", action="store_true", help="print the statistics as JSON on stdout")
    p.add_argument(
        "--data-dir", help="data root for the dataset's statistics (default: $SYMBOLKG_DATA, else ../shared/data)"
    )
    p.add_argument("--quiet", action="store_true", help="no per-instance progress on stderr")


def _generate_all(config: Any, args: argparse.Namespace) -> tuple[list, list[str], int, int]:
    """Instances ``--start .. --start + --count - 1``: (generated, failures, constructions, proofs from search)."""
    generated_all = []
    failures: list[str] = []
    attempts = proved = 0
    for k, index in enumerate(range(args.start, args.start + args.count), 1):
        try:
            generated = generate_instance(config, args.seed, index)
        except GenerationError as exc:
            failures.append(str(exc))
            print(f"[{k}/{args.count}] index {index}: FAILED {exc}", file=sys.stderr)
            continue
        generated_all.append(generated)
        attempts += generated.attempts
        proved += generated.proved
        if not args.quiet:
            print(
                f"[{k}/{args.count}] {generated.instance.id}: {len(generated.instance.proofs)} proofs, "
                f"{len(generated.instance.premises)} premises, {generated.attempts} attempt(s), "
                f"{generated.seconds:.2f}s",
                file=sys.stderr,
            )
    return generated_all, failures, attempts, proved


def _write_atomically(generated_all: list, out: Path) -> list:
    """Write the records to ``out`` through a temporary file renamed when complete; the instances."""
    out.parent.mkdir(parents=True, exist_ok=True)
    # same folder as the target, so the final rename is atomic on one filesystem; a per-process
    # name ("x": never someone else's file) with the usual permissions (mkstemp's are 0600)
    tmp_name = out.parent / f".{out.name}.{os.getpid()}.tmp"
    instances = []
    try:
        with open(tmp_name, "x", encoding="utf-8") as fh:
            for generated in generated_all:
                fh.write(json.dumps(generated.record, ensure_ascii=False) + "\n")
                instances.append(generated.instance)
        os.replace(tmp_name, out)
    except BaseException:
        # a failure or Ctrl-C: drop the partial file, keep any earlier complete --out untouched
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return instances


def run(args: argparse.Namespace) -> int:
    if args.count < 1 or args.start < 0:
        print(
            f"symbolkg logicgraph generate: --count must be >= 1 and --start >= 0 (got {args.count}, {args.start})",
            file=sys.stderr,
        )
        return 2
    config = TIERS[args.tier]
    if args.distractors is not None:
        if args.distractors < 0:
            print(f"symbolkg logicgraph generate: --distractors must be >= 0 (got {args.distractors})", file=sys.stderr)
            return 2
        config = replace(config, distractors=args.distractors)
    out = Path(args.out)
    t0 = time.perf_counter()
    generated_all, failures, attempts, proved = _generate_all(config, args)
    text_stats = None
    if args.text == "llm":
        try:
            generated_all, text_stats = _word_with_llm(generated_all, args)
        except ValueError as exc:  # bad engine options
            print(f"symbolkg logicgraph generate: {exc}", file=sys.stderr)
            return 2
        except EngineDeadError as exc:
            print(f"symbolkg logicgraph generate: the LLM engine died: {exc}; nothing written", file=sys.stderr)
            return 1
        print(
            f"worded {len(generated_all)} instances with {text_stats['model']}: {text_stats['atoms_from_llm']} of "
            f"{text_stats['atoms']} atoms from the model, the rest from templates ({text_stats['engine_errors']} "
            f"engine errors)",
            file=sys.stderr,
        )
    instances = _write_atomically(generated_all, out)
    wall = time.perf_counter() - t0
    stats = tier_statistics(instances)
    print(
        f"wrote {len(instances)} {args.tier} instances to {out} in {wall:.1f}s "
        f"({attempts} constructions, {proved} proofs from the search, {len(failures)} failed)",
        file=sys.stderr,
    )
    reference = _dataset_statistics(args.tier, args.data_dir, out) if (args.stats or args.json) else None
    if args.stats:
        print(format_statistics(stats, reference, args.tier))
    if args.json:
        print(
            json.dumps(
                {
                    "tier": args.tier,
                    "seed": args.seed,
                    "start": args.start,
                    "count": args.count,
                    "written": len(instances),
                    "failed": failures,
                    "wall_s": round(wall, 3),
                    "constructions": attempts,
                    "proofs_from_search": proved,
                    "text": args.text,
                    "text_stats": text_stats,
                    "generated": stats,
                    "dataset": reference,
                },
                indent=1,
            )
        )
    return 1 if failures else 0


async def word_with_llm(
    generated_all: list, engine, *, max_tokens: int = 2048, max_in_flight: int = 32
) -> tuple[list, dict[str, Any]]:
    """Ask ``engine`` for each instance's atom statements; re-word the instances with them.

    The logic, proofs and first-order atoms do not change; an atom whose statement fails
    :func:`~symbolkg.solvers.logicgraph.wording.parse_readings`'s checks (or an instance whose
    request failed) keeps its template English, and the record says so
    (``metadata.generator.text_problems``).

    Returns:
        the re-worded instances (same order) and counts: atoms, atoms worded by the model, engine
        errors, tokens.

    Raises:
        EngineDeadError: the engine died (the caller writes nothing).
    """
    stats = {
        "model": engine.model,
        "atoms": 0,
        "atoms_from_llm": 0,
        "engine_errors": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
    }
    out: dict[int, Any] = {}

    async def one(k: int) -> None:
        generated = generated_all[k]
        names = sorted(generated.readings, key=lambda a: (a != "G", int(a[1:]) if a[1:].isdigit() else 0))
        messages, schema = readings_request(generated.theme, names)
        request = ChatRequest(
            messages=tuple(Message(m["role"], m["content"]) for m in messages),
            params=SamplingParams(max_tokens=max_tokens),
            structured=StructuredOutput(json_schema=schema) if engine.supports_structured else None,
            problem_id=generated.instance.id,
            purpose="logicgraph_readings",
            request_id=f"{generated.instance.id}:readings",
        )
        stats["atoms"] += len(names)
        try:
            (completion,) = await engine.generate([request])
        except EngineDeadError:
            raise
        except EngineError as exc:
            stats["engine_errors"] += 1
            out[k] = reword(generated, generated.readings, text="template", problems=[f"engine error: {exc}"])
            return
        readings, problems = parse_readings(completion.text, generated.readings)
        stats["atoms_from_llm"] += sum(readings[a] is not generated.readings[a] for a in names)
        stats["prompt_tokens"] += completion.prompt_tokens
        stats["completion_tokens"] += completion.completion_tokens
        out[k] = reword(generated, readings, text=f"llm:{completion.model or engine.model}", problems=problems)

    await for_each_in_flight(range(len(generated_all)), one, max_in_flight)
    return [out[k] for k in range(len(generated_all))], stats


def _word_with_llm(generated_all: list, args: argparse.Namespace) -> tuple[list, dict[str, Any]]:
    """:func:`word_with_llm` with the engine ``args`` describe (built here, closed after).

    Raises:
        ValueError: bad engine options.
        EngineDeadError: the engine died.
    """
    if args.max_tokens < 1 or args.max_in_flight < 1:
        raise ValueError("--max-tokens and --max-in-flight must be >= 1")
    opts = EngineOptions(kind=args.engine, model=args.model, cache_dir=args.cache, openai_url=args.openai_url)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

    async def main_async() -> tuple[list, dict[str, Any]]:
        engine = make_engine(opts)
        try:
            return await word_with_llm(
                generated_all, engine, max_tokens=args.max_tokens, max_in_flight=args.max_in_flight
            )
        finally:
            await engine.close()

    return asyncio.run(main_async())


def _dataset_statistics(tier: str, data_dir: str | None, out: Path) -> dict[str, Any] | None:
    """The dataset's own statistics for the tier, or None when the data folder does not have it."""
    path = default_data_dir(data_dir) / "logicgraph" / f"{tier}.jsonl"
    if not path.is_file() or path.resolve() == out.resolve():
        return None
    return tier_statistics(load_instances(path))


def format_statistics(generated: dict[str, Any], dataset: dict[str, Any] | None, tier: str) -> str:
    """A plain-text table: one row per statistic, ``min-max (mean)``, generated vs. dataset."""

    def cell(stats: dict[str, Any] | None, key: str | None) -> str:
        if stats is None:
            return "-"
        if key is None:
            return f"{stats['core']} / {stats['branch']}"
        value = stats[key]
        if isinstance(value, dict):
            return f"{value['min']}-{value['max']} ({value['mean']:.2f})"
        return str(value)

    lines = [f"{'LogicGraph ' + tier:24s} {'generated':>22s} {'dataset':>22s}", "-" * 70]
    for label, key in _ROWS:
        lines.append(f"{label:24s} {cell(generated, key):>22s} {cell(dataset, key):>22s}")
    rules = ", ".join(f"{r} {n}" for r, n in generated["rules"].items())
    lines.append(f"forms used (generated): {rules}")
    if dataset is not None:
        lines.append("forms used (dataset):   " + ", ".join(f"{r} {n}" for r, n in dataset["rules"].items()))
    return "\n".join(lines)
