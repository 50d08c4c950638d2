"""The ``logiclm`` job's LLM throughput against vLLM's own offline ceiling, same requests, same run.

One process, one model (default ``qwen2.5-coder-1.5b``, vLLM's CPU build here):

1. **The job.** ``run_method_job`` runs the ``logiclm`` method (the CLI's defaults: section-skeleton
   decoding, up to three repairs) on the first ``--limit`` problems of ``--dataset`` with the engine
   a ``symbolkg solve --model M`` job builds (:class:`~symbolkg.actors.engines.vllm_engine.VLLMEngine`,
   warmed by one request first, no completion cache). Every request the job sends is kept, with when
   it was submitted and answered (:class:`~symbolkg.actors.engines.metered.MeteredEngine`). The job's
   rate: generated tokens over the span from its first request to its last answer.
2. **The ceiling.** The engine is shut down, and vLLM's offline ``LLM`` starts with exactly the same
   engine arguments (:meth:`VLLMEngine.offline_llm`) and gets every one of those requests at once in
   one ``LLM.generate`` call: the same prompt tokens, the same sampling and structured-output
   settings (:meth:`VLLMEngine.offline_inputs`; a completion the job's repeat stop ended is decoded
   to the same length: :func:`as_decoded`), the same priorities (each problem's admission number:
   with ``--scheduling-policy priority`` the engine's queue serves lower first when more requests
   wait than ``--max-num-seqs`` runs).
   Its rate: generated tokens over that call's wall time (after one warm-up request). This is the
   most the engine can do with these requests here: all of them known up front, none waiting for a
   solver or for its own earlier round.

3. **The ceiling wave by wave.** The same offline engine gets the kept requests in waves: every
   problem's first request at once, then every problem's second, and so on (a problem's requests
   are in sequence: a repair waits for the program it repairs). Its rate: generated tokens over
   the sum of the waves' wall times. This is what the refine loop's dependencies alone leave of the
   ceiling, without any plumbing: it is not a strict bound (the job may start a problem's repair
   while another problem's first program is still being written; the waves may not).

The ratio job / ceiling is what the job's plumbing (a problem's rounds in sequence, the solver in
between, the asyncio pipeline, the engine thread) costs. It splits into job / waves (the plumbing
under the same dependencies) and waves / ceiling (the dependencies: few repairs decoded nearly
alone at the end). The job's first wave (every first request, submitted at once: its tokens over
the span from the first submission to the last of them answered) is also compared with the offline
first wave, the same requests on both sides; repairs the job starts inside that span compete with
it, so the job's side is a lower bound there. Greedy decoding: both sides generate the same tokens up
to vLLM's CPU batching, which is not bit-exact (the token totals are both reported).

    python benchmarks/llm_ceiling.py [--model qwen2.5-coder-1.5b] [--dataset logiclm/prontoqa] [--limit 12]
                                     [--max-num-seqs 64] [--max-in-flight 64] [--scheduling-policy fcfs]
                                     [--repair-max-tokens N] [--no-waves] [--data-dir DIR]

Writes ``benchmarks/out/llm_ceiling.json`` and ``.png``, the job's rows in ``llm_ceiling.parquet`` (correct,
executed, every attempt: ``symbolkg view``), and its request log (each request's problem,
submission and answer times, tokens) in ``llm_ceiling.parquet.requests/``, which
``scheduling_sim.py --requests`` replays (its chains are this machine's, not the kept float32 run's).
Budget with the 1.5B model on 2 cores: about 20 minutes at ``--limit 12`` (two engine starts, the job, the
ceiling twice). Run it alone: two vLLM engines, or one beside a test suite, do not fit this machine's memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from symbolkg.actors.engines.base import ChatRequest, Completion, LLMEngine, Message, SamplingParams
from symbolkg.actors.engines.repeats import FINISH_REASON as REPEAT

OUT = Path(__file__).resolve().parent / "out"


class KeepingEngine:
    """Passes requests to ``engine`` and keeps each one (the ceiling replays exactly these)."""

    supports_structured = True

    def __init__(self, engine: LLMEngine) -> None:
        self.engine = engine
        self.model = engine.model
        self.requests: list[ChatRequest] = []
        self.finish_reasons: dict[str, int] = {}

    async def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        completions = await self.engine.generate(requests)
        self.requests.extend(as_decoded(r, c) for r, c in zip(requests, completions, strict=True))
        for c in completions:
            self.finish_reasons[c.finish_reason] = self.finish_reasons.get(c.finish_reason, 0) + 1
        return completions

    async def close(self) -> None:  # the benchmark shuts the engine down itself, after the job
        return None


def as_decoded(request: ChatRequest, completion: Completion) -> ChatRequest:
    """``request`` as the offline engine gets it: a completion the repeat stop ended
    (``finish_reason="repeat"``, :mod:`symbolkg.actors.engines.repeats`) decodes exactly as many tokens
    offline (vLLM's offline ``LLM`` has no such stop), so both sides decode the same tokens."""
    if completion.finish_reason != REPEAT:
        return request
    return replace(request, params=replace(request.params, max_tokens=max(1, completion.completion_tokens)))


def run_job(
    engine: LLMEngine,
    problems: list,
    limit_note: str,
    max_in_flight: int = 64,
    log_to: Path | None = None,
    repair_max_tokens: int | None = None,
) -> dict:
    """Phase 1: the logiclm job on ``problems``, ``max_in_flight`` at a time; its requests and their span.

    ``repair_max_tokens`` bounds each repair's budget (``symbolkg solve --repair-max-tokens``; None: the
    program's, as Logic-LM); the offline side gets the requests as the job sent them, bound included.

    With ``log_to`` (a results path), the job's rows are kept there (``symbolkg view`` opens them), and
    its request records (problem, round, submitted and answered, tokens) in its request-log folder,
    which ``scheduling_sim.py --requests`` replays; rows and a log there from an earlier run are
    replaced (the job always starts afresh: no cache, nothing resumed)."""
    from symbolkg.actors.engines.metered import MeteredEngine, request_log_dir
    from symbolkg.jobs.methods import MethodConfig
    from symbolkg.jobs.methods.logiclm import LogicLM
    from symbolkg.jobs.pipeline.method_job import run_method_job
    from symbolkg.jobs.pipeline.store import ResultStore, read_run
    from symbolkg.solvers.runtime.local_pool import LocalSolverPool

    keeping = KeepingEngine(engine)
    if log_to is not None:
        log_to.unlink(missing_ok=True)
        for kept in (request_log_dir(log_to), *log_to.parent.glob(log_to.name + ".*")):
            shutil.rmtree(kept, ignore_errors=True)
    metered = MeteredEngine(keeping, log_to=log_to, flush_records=len(problems) * 64)  # written once, at the end
    with tempfile.TemporaryDirectory() as tmp, LocalSolverPool(2) as pool:
        rows_at = log_to if log_to is not None else Path(tmp) / "run.parquet"
        store = ResultStore(rows_at, run_info={"source": limit_note, "repair_max_tokens": repair_max_tokens})
        t0 = time.perf_counter()
        asyncio.run(
            run_method_job(
                problems,
                store,
                MethodConfig("logiclm", repair_max_tokens=repair_max_tokens),
                metered,
                pool,
                max_in_flight=max_in_flight,
                progress=False,
                method=LogicLM(),
            )
        )
        wall = time.perf_counter() - t0
        rows = read_run(rows_at)[0].to_pylist()
    records = list(metered.records)
    metered.flush_log()
    span = max(r.finished for r in records) - min(r.submitted for r in records)
    generated = sum(r.completion_tokens for r in records)
    first_ids = {r.request_id for r in waves(keeping.requests)[0]}
    first = [r for r in records if r.request_id in first_ids]
    first_span = max(r.finished for r in first) - min(r.submitted for r in first)
    first_generated = sum(r.completion_tokens for r in first)
    return {
        "requests": keeping.requests,
        "problems": len(rows),
        "correct": sum(bool(r["correct"]) for r in rows),
        "executed": sum(bool(r["executed"]) for r in rows),
        "llm_requests": len(records),
        "finish_reasons": keeping.finish_reasons,
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "generated_tokens": generated,
        "llm_span_s": round(span, 2),
        "job_wall_s": round(wall, 2),
        "generated_tok_s": round(generated / span, 2),
        "generated_tok_s_whole_job": round(generated / wall, 2),
        "first_wave": {
            "llm_requests": len(first),
            "generated_tokens": first_generated,
            "span_s": round(first_span, 2),
            "generated_tok_s": round(first_generated / first_span, 2),
        },
    }


def waves(requests: list[ChatRequest]) -> list[list[ChatRequest]]:
    """``requests`` by their place in their problem's sequence: every first request, every second, ...

    A problem's requests arrive in order (a repair is asked after the program it repairs), so the
    k-th request of a problem can be answered only after its (k-1)-th.
    """
    seen: dict[str, int] = {}
    out: list[list[ChatRequest]] = []
    for r in requests:
        k = seen.get(r.problem_id, 0)
        seen[r.problem_id] = k + 1
        if k == len(out):
            out.append([])
        out[k].append(r)
    return out


def offline_input(engine: Any, request: ChatRequest) -> tuple[Any, Any, int]:
    """What the offline ``LLM.generate`` takes for ``request``: prompt, sampling, priority."""
    prompt, params = engine.offline_inputs(request)
    return prompt, params, request.priority


def preemptions(llm: Any) -> int:
    """vLLM's count of preempted requests so far (its KV cache was full: their work is recomputed)."""
    return int(sum(m.value for m in llm.get_metrics() if m.name == "vllm:num_preemptions"))


def offline_generate(llm: Any, inputs: list) -> dict:
    """``inputs`` (prompt, sampling, priority) in one offline ``LLM.generate`` call: requests, tokens, wall, rate."""
    before = preemptions(llm)
    t0 = time.perf_counter()
    prompts, params, priorities = (list(x) for x in zip(*inputs, strict=True))
    outs = llm.generate(prompts, params, use_tqdm=False, priority=priorities)
    wall = time.perf_counter() - t0
    generated = sum(len(o.outputs[0].token_ids) for o in outs)
    return {
        "llm_requests": len(outs),
        "generated_tokens": generated,
        "wall_s": round(wall, 2),
        "generated_tok_s": round(generated / wall, 2),
        "preemptions": preemptions(llm) - before,
    }


def run_ceiling(llm: Any, inputs: list, wave_inputs: list[list] | None) -> tuple[dict, dict | None]:
    """Phases 2 and 3: every kept request in one ``LLM.generate`` call; then wave by wave (None: skipped)."""
    llm.generate([inputs[0][0]], [inputs[0][1]], use_tqdm=False)  # warm-up, as the job's engine had
    ceiling = offline_generate(llm, inputs)
    if wave_inputs is None:
        return ceiling, None
    per_wave = [offline_generate(llm, w) for w in wave_inputs]
    wall = sum(w["wall_s"] for w in per_wave)
    generated = sum(w["generated_tokens"] for w in per_wave)
    by_waves = {
        "waves": per_wave,
        "generated_tokens": generated,
        "wall_s": round(wall, 2),
        "generated_tok_s": round(generated / wall, 2),
    }
    return ceiling, by_waves


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--dataset", default="logiclm/prontoqa")
    ap.add_argument("--limit", type=int, default=12)
    ap.add_argument("--data-dir", default=os.environ.get("SYMBOLKG_DATA"))
    ap.add_argument("--out", default=str(OUT / "llm_ceiling.json"))
    ap.add_argument(
        "--max-num-seqs",
        type=int,
        default=64,
        help="the engine's batch, both sides (default 64, as `symbolkg solve`)",
    )
    ap.add_argument(
        "--max-in-flight",
        type=int,
        default=64,
        help="the job's problems in flight (default 64, as `symbolkg solve`)",
    )
    ap.add_argument(
        "--scheduling-policy",
        choices=("fcfs", "priority"),
        default="fcfs",
        help="how the engine's queue serves requests waiting for a batch slot (VLLMConfig.scheduling_policy)",
    )
    ap.add_argument(
        "--repair-max-tokens",
        type=int,
        help="the job's bound on a repair's budget (symbolkg solve --repair-max-tokens; default none: the "
        "program's, as Logic-LM)",
    )
    ap.add_argument(
        "--no-waves",
        action="store_true",
        help="skip phase 3 (the ceiling wave by wave): on a big job it costs as much model time as the job",
    )
    args = ap.parse_args(argv)
    from symbolkg.actors.engines.vllm_engine import VLLMConfig, VLLMEngine
    from symbolkg.jobs.datasets.registry import load_problems

    problems = load_problems(args.dataset, args.data_dir, limit=args.limit).problems
    # what `symbolkg solve --model M` builds, with vLLM's statistics on: the job's engine logs its
    # running/waiting requests, KV-cache use and preemptions every few seconds, the offline one counts them
    engine = VLLMEngine(
        VLLMConfig(
            model=args.model,
            max_num_seqs=args.max_num_seqs,
            scheduling_policy=args.scheduling_policy,
            log_stats=True,
        )
    )
    print(f"engine loaded in {engine.load_s:.0f} s", file=sys.stderr, flush=True)
    warm = ChatRequest((Message("user", "Say OK."),), SamplingParams(max_tokens=4), purpose="warm-up")
    asyncio.run(engine.generate([warm]))
    out = Path(args.out)
    log_to = out.with_suffix(".parquet")  # its request log: OUT.parquet.requests/
    job = run_job(
        engine, problems, f"{args.dataset} first {args.limit}", args.max_in_flight, log_to, args.repair_max_tokens
    )
    print(f"job: {json.dumps({k: v for k, v in job.items() if k != 'requests'})}", file=sys.stderr, flush=True)
    requests = job.pop("requests")
    inputs = [offline_input(engine, r) for r in requests]
    wave_inputs = None if args.no_waves else [[offline_input(engine, r) for r in w] for w in waves(requests)]
    engine.shutdown()
    llm = engine.offline_llm()
    ceiling, by_waves = run_ceiling(llm, inputs, wave_inputs)
    print(f"ceiling: {json.dumps(ceiling)}", file=sys.stderr, flush=True)
    print(f"waves: {json.dumps(by_waves)}", file=sys.stderr, flush=True)
    result = {
        "command": "python benchmarks/llm_ceiling.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": f"{platform.node()} ({os.cpu_count()} cores), Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "model": args.model,
        "dataset": args.dataset,
        "limit": args.limit,
        "max_num_seqs": args.max_num_seqs,
        "max_in_flight": args.max_in_flight,
        "scheduling_policy": engine.config.scheduling_policy,
        "repair_max_tokens": args.repair_max_tokens,
        "job": job,
        "ceiling": ceiling,
        "ceiling_by_waves": by_waves,
        "ratio": round(job["generated_tok_s"] / ceiling["generated_tok_s"], 3),
        "ratio_whole_job": round(job["generated_tok_s_whole_job"] / ceiling["generated_tok_s"], 3),
        **(_wave_ratios(job, ceiling, by_waves) if by_waves is not None else {}),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    plot(result, out.with_suffix(".png"))
    line = (
        f"{args.model} on {args.dataset} (first {args.limit}): job {job['generated_tok_s']} generated tok/s over its "
        f"LLM span ({job['generated_tok_s_whole_job']} over the whole job), offline LLM.generate "
        f"{ceiling['generated_tok_s']} tok/s: ratio {result['ratio']} ({result['ratio_whole_job']})"
    )
    if by_waves is not None:
        line += (
            f"; wave by wave {by_waves['generated_tok_s']} tok/s: job / waves {result['ratio_job_to_waves']}, "
            f"waves / ceiling {result['ratio_waves_to_ceiling']}; first wave alone: job / offline "
            f"{result['ratio_first_wave']}"
        )
    print(line)
    return 0


def _wave_ratios(job: dict, ceiling: dict, by_waves: dict) -> dict:
    """The split of the ratio: the plumbing under the loop's dependencies, and the dependencies themselves;
    and the same first requests, submitted at once on both sides."""
    return {
        "ratio_job_to_waves": round(job["generated_tok_s"] / by_waves["generated_tok_s"], 3),
        "ratio_waves_to_ceiling": round(by_waves["generated_tok_s"] / ceiling["generated_tok_s"], 3),
        "ratio_first_wave": round(job["first_wave"]["generated_tok_s"] / by_waves["waves"][0]["generated_tok_s"], 3),
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_waves = result["ceiling_by_waves"]
    bars = [
        ("job\n(LLM span)", result["job"]["generated_tok_s"], "#4C72B0"),
        ("LLM.generate\nwave by wave", by_waves["generated_tok_s"] if by_waves else None, "#8FAADC"),
        ("LLM.generate\nall at once", result["ceiling"]["generated_tok_s"], "#55A868"),
        ("job\nfirst wave", result["job"]["first_wave"]["generated_tok_s"], "#4C72B0"),
        ("offline\nfirst wave", by_waves["waves"][0]["generated_tok_s"] if by_waves else None, "#55A868"),
    ]
    bars = [b for b in bars if b[1] is not None]  # --no-waves: no wave bars
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    ax.bar([b[0] for b in bars], [b[1] for b in bars], color=[b[2] for b in bars])
    ax.set_ylabel("generated tokens / s")
    ax.set_title(f"{result['model']}: logiclm job vs offline ceiling (ratio {result['ratio']})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
