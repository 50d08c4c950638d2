"""LKG extraction throughput of the embedded engine (vLLM CPU build, SmolLM2-135M-Instruct).

Runs the real build job (:func:`symbolkg.jobs.pipeline.lkg_build.run_lkg_build`: chunk -> structured JSON extraction ->
validation -> repair -> merge -> Parquet store) over FOLIO dev stories, twice on the same
contexts in fresh stores:

* ``concurrent``: every context in flight at once (vLLM batches them);
* ``sequential``: one context at a time (the papers' way);

and then a ``cached`` rebuild of the concurrent store (every context a cache hit). Reports
contexts/s, generated tokens/s, the share of graphs that validated, and the speed-up of
concurrency. Greedy decoding, so both passes generate the same tokens.

    python benchmarks/lkg_extraction.py [--contexts 16] [--max-tokens 2048] [--chunk-chars 200] [--repair-rounds 1]

Writes benchmarks/out/lkg_extraction.json and benchmarks/out/lkg_extraction.png.
Budget: about 15 minutes on 2 cores with the defaults.
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

OUT = Path(__file__).resolve().parent / "out"
REPO = Path(__file__).resolve().parents[1]


def folio_stories(n: int, data_dir: Path) -> list:
    """The first ``n`` distinct FOLIO dev stories, one problem each."""
    from symbolkg.jobs.datasets.registry import load_dataset

    seen: set[str] = set()
    out = []
    for p in load_dataset("logiclm/folio", data_dir).problems:
        if p.context not in seen:
            seen.add(p.context)
            out.append(p)
        if len(out) == n:
            break
    return out


async def measure(args) -> dict:
    from symbolkg.actors.engines.base import SamplingParams
    from symbolkg.actors.engines.vllm_engine import VLLMConfig, VLLMEngine
    from symbolkg.jobs.methods.lkg_extract import LKGConfig
    from symbolkg.jobs.pipeline.lkg_build import run_lkg_build
    from symbolkg.retrieval.lkg.store import LKGStore

    data_dir = Path(args.data_dir or os.environ.get("SYMBOLKG_DATA", REPO.parent / "shared" / "data"))
    problems = folio_stories(args.contexts, data_dir)
    cfg = LKGConfig(
        max_repair_rounds=args.repair_rounds,
        chunk_chars=args.chunk_chars,
        params=SamplingParams(max_tokens=args.max_tokens),
    )
    t = time.perf_counter()
    engine = VLLMEngine(VLLMConfig(model=args.model))
    load_s = time.perf_counter() - t
    phases = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for name, in_flight, subset in (
                ("concurrent", len(problems), problems),
                ("sequential", 1, problems[: args.sequential_contexts]),
            ):
                store = LKGStore(Path(tmp) / name)
                report = await run_lkg_build(subset, store, engine, cfg, max_in_flight=in_flight, progress=False)
                phases[name] = report.to_dict()
                print(
                    f"{name:10s} {report.contexts:3d} contexts  {report.wall_seconds:7.1f} s  "
                    f"{phases[name]['contexts_per_second']:.3f} contexts/s  "
                    f"{phases[name]['tokens_per_second']:.1f} tok/s  valid {report.valid}/{report.contexts}",
                    flush=True,
                )
            cached = await run_lkg_build(
                problems, LKGStore(Path(tmp) / "concurrent"), engine, cfg, max_in_flight=len(problems), progress=False
            )
            phases["cached"] = cached.to_dict()
            print(
                f"cached     {cached.contexts:3d} contexts  {cached.wall_seconds:7.2f} s  hits {cached.cache_hits}, "
                f"saved {cached.seconds_saved:.1f} s of LLM time",
                flush=True,
            )
        finally:
            await engine.close()
    conc, seq = phases["concurrent"], phases["sequential"]
    speedup = conc["contexts_per_second"] / seq["contexts_per_second"] if seq["contexts_per_second"] else None
    return {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d"),
        "model": engine.model,
        "engine_load_seconds": round(load_s, 1),
        "settings": {
            "contexts": len(problems),
            "sequential_contexts": args.sequential_contexts,
            "max_tokens": args.max_tokens,
            "repair_rounds": args.repair_rounds,
            "chunk_chars": args.chunk_chars,
        },
        "phases": phases,
        "concurrency_speedup_contexts_per_second": round(speedup, 2) if speedup else None,
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    phases = result["phases"]
    names = ["sequential", "concurrent"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    axes[0].bar(names, [phases[n]["contexts_per_second"] for n in names], color=["#999", "#2563eb"])
    axes[0].set_ylabel("contexts / s")
    axes[0].set_title(f"LKG extraction, {result['model']}")
    valid = [phases[n]["valid"] / max(phases[n]["contexts"], 1) for n in names]
    axes[1].bar(names, [phases[n]["tokens_per_second"] for n in names], color=["#999", "#2563eb"])
    axes[1].set_ylabel("generated tokens / s")
    axes[1].set_title(f"valid graphs: {valid[1]:.0%} (concurrent)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--contexts", type=int, default=16, help="FOLIO stories extracted concurrently")
    parser.add_argument("--sequential-contexts", type=int, default=4, help="of them, extracted one at a time")
    parser.add_argument("--max-tokens", type=int, default=2048)
    parser.add_argument("--chunk-chars", type=int, default=200, help="longest chunk of a context (CI's setting)")
    parser.add_argument("--repair-rounds", type=int, default=1)
    parser.add_argument("--data-dir")
    args = parser.parse_args()
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    result = asyncio.run(measure(args))
    OUT.mkdir(exist_ok=True)
    (OUT / "lkg_extraction.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(result, OUT / "lkg_extraction.png")
    print(
        f"speed-up of concurrency: {result['concurrency_speedup_contexts_per_second']}x; "
        f"wrote {OUT / 'lkg_extraction.json'} and .png"
    )


if __name__ == "__main__":
    main()
