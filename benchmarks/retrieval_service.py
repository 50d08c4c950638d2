"""Retrieval off the event loop: inline search vs a worker-thread host vs Ray index actors.

The symbolkg job keeps many problems in flight; each awaits LLM calls around its retrieval
search. This measures what the search costs the *other* problems. ``--in-flight`` coroutines
each take problems from one queue and, per problem: await a simulated LLM call (``--llm-ms``),
search, await a second simulated call. Three ways to search, one run each, side by side:

* ``inline``: ``HybridRetriever.retrieve`` called in the coroutine (the job before retrieval
  hosts): the event loop stops for every search;
* ``thread``: :meth:`RetrievalService.local` — one host in a worker thread, batching what queues;
* ``actors``: :meth:`RetrievalService.actors` with ``--actors`` index actors (Ray, this machine).

Graphs and questions are real: the hand-checked LKGs of tests/fixtures (2 FOLIO, 2
LogicalDeduction, 1 ProntoQA story) and their problems' questions, each story under
``--copies`` context keys so that every key builds its own indexes as distinct stories would.
The embedder is the real all-MiniLM-L6-v2 on CPU. Reported per mode: problems/s, search
latency p50/p95 as a problem sees it (queueing included), the event loop's lag (how late a 5 ms
ticker wakes: p50/p99/max) and the service's batches.

    python benchmarks/retrieval_service.py [--problems 1000] [--in-flight 64] [--llm-ms 50] [--copies 40] [--actors 2]

Writes benchmarks/out/retrieval_service.json and .png.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from symbolkg.actors.retrieval_actor import EmbedderSpec, HostConfig, RetrievalService
from symbolkg.retrieval.embed import make_embedder, set_cpu_threads
from symbolkg.retrieval.hull import HullConfig
from symbolkg.retrieval.hybrid import HybridRetriever
from symbolkg.retrieval.lkg.schema import Graph
from symbolkg.retrieval.lkg.validate import validate_extraction

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "out"
FIXTURES = (
    REPO / "tests" / "fixtures" / "lkg" / "hand_checked.json",
    REPO / "tests" / "fixtures" / "symbolkg" / "prontoqa_14.json",
)


def stories() -> list[tuple[Graph, list[str]]]:
    """(graph, questions) of every hand-checked story."""
    out = []
    for path in FIXTURES:
        for entry in json.loads(path.read_text(encoding="utf-8"))["contexts"]:
            result = validate_extraction(entry["extraction"], entry["context"], entry["id"])
            problems = entry.get("problems", [entry])
            questions = [" ".join([p.get("question", ""), *p.get("options", [])]).strip() for p in problems]
            out.append((result.graph, [q for q in questions if q] or ["Which statement is true?"]))
    return out


def workload(n: int, copies: int) -> list[tuple[str, Graph, str]]:
    """``n`` (key, graph, question) items cycling over every story copy."""
    base = stories()
    items = []
    for i in range(n):
        graph, questions = base[i % len(base)]
        copy = (i // len(base)) % copies
        items.append((f"{graph.context_key}#{copy}", graph, questions[(i // len(base)) % len(questions)]))
    return items


def _ms(values: list[float]) -> dict:
    if not values:
        return {}
    a = np.asarray(values) * 1000
    return {
        "p50": round(float(np.percentile(a, 50)), 2),
        "p95": round(float(np.percentile(a, 95)), 2),
        "p99": round(float(np.percentile(a, 99)), 2),
        "max": round(float(a.max()), 2),
    }


async def run_mode(mode: str, items, in_flight: int, llm_s: float, search) -> dict:
    """One run: ``search(key, graph, question)`` is awaited (or called, inline) per item."""
    queue = list(reversed(items))
    latencies: list[float] = []
    lags: list[float] = []
    stop = False

    async def ticker() -> None:
        while not stop:
            t = time.perf_counter()
            await asyncio.sleep(0.005)
            lags.append(max(0.0, time.perf_counter() - t - 0.005))

    async def worker() -> None:
        while queue:
            key, graph, question = queue.pop()
            await asyncio.sleep(llm_s)  # query entities
            t = time.perf_counter()
            result = search(key, graph, question)
            if asyncio.iscoroutine(result):
                await result
            latencies.append(time.perf_counter() - t)
            await asyncio.sleep(llm_s)  # pruning

    tick = asyncio.ensure_future(ticker())
    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    wall = time.perf_counter() - t0
    stop = True
    await tick
    return {
        "mode": mode,
        "problems": len(items),
        "wall_seconds": round(wall, 2),
        "problems_per_second": round(len(items) / wall, 2),
        "search_ms": _ms(latencies),
        "loop_lag_ms": _ms(lags),
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = result["runs"]
    names = [r["mode"] for r in runs]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    bars = a.bar(names, [r["problems_per_second"] for r in runs], color=["grey", "tab:blue", "tab:green"][: len(runs)])
    for bar, r in zip(bars, runs, strict=True):
        a.annotate(
            f"{r['problems_per_second']:.0f}/s",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    a.set_ylabel("problems/s")
    a.set_title(f"{result['in_flight']} in flight, {result['llm_ms']:.0f} ms LLM waits")
    x = np.arange(len(runs))
    b.bar(x - 0.2, [r["loop_lag_ms"]["p99"] for r in runs], 0.4, label="p99")
    b.bar(x + 0.2, [r["loop_lag_ms"]["max"] for r in runs], 0.4, label="max")
    b.set_xticks(x, names)
    b.set_yscale("log")
    b.set_ylabel("event loop lag, ms (log)")
    b.legend(fontsize=8)
    b.set_title("how late the orchestrator wakes up")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--llm-ms", type=float, default=50.0, help="each simulated LLM call's latency (default 50)")
    parser.add_argument("--copies", type=int, default=40, help="context keys per story (default 40: 200 contexts)")
    parser.add_argument("--actors", type=int, default=2, help="index actors of the actors run (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="torch/FAISS threads per host (default 1)")
    args = parser.parse_args()

    set_cpu_threads(args.threads)
    items = workload(args.problems, args.copies)
    hull = HullConfig(k=4, max_nodes=48)
    config = HostConfig(EmbedderSpec("minilm"), hull=hull, cpu_threads=args.threads)
    embedder = make_embedder("minilm")
    embedder.embed(["warm up"])
    runs = []

    retrievers: dict[str, HybridRetriever] = {}

    def inline(key: str, graph: Graph, question: str):
        if key not in retrievers:
            retrievers[key] = HybridRetriever.from_graphs([graph], embedder, hull_config=hull)
        return retrievers[key].retrieve(question)

    runs.append(asyncio.run(run_mode("inline", items, args.in_flight, args.llm_ms / 1000, inline)))
    print(json.dumps(runs[-1]))

    for mode in ("thread", "actors"):
        if mode == "thread":
            service = RetrievalService.local(config, embedder)
        else:
            service = RetrievalService.actors(config, args.actors, num_cpus=1)
            asyncio.run(service.search(*items[0]))  # the actors load MiniLM before the clock starts
            service.stats.__init__()
        try:
            run = asyncio.run(
                run_mode(
                    mode if mode == "thread" else f"actors x{args.actors}",
                    items,
                    args.in_flight,
                    args.llm_ms / 1000,
                    service.search,
                )
            )
        finally:
            service.close()
        s = service.stats
        run["batches"] = s.batches
        run["mean_batch"] = round(s.mean_batch, 2)
        run["largest_batch"] = s.largest_batch
        runs.append(run)
        print(json.dumps(runs[-1]))

    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "problems": args.problems,
        "in_flight": args.in_flight,
        "llm_ms": args.llm_ms,
        "contexts": len({k for k, _, _ in items}),
        "threads_per_host": args.threads,
        "runs": runs,
        "speedup_vs_inline": {
            r["mode"]: round(r["problems_per_second"] / runs[0]["problems_per_second"], 2) for r in runs[1:]
        },
        "loop_lag_p99_ms": {r["mode"]: r["loop_lag_ms"]["p99"] for r in runs},
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "retrieval_service.json").write_text(json.dumps(result, indent=2))
    plot(result, OUT / "retrieval_service.png")
    print(json.dumps({k: result[k] for k in ("speedup_vs_inline", "loop_lag_p99_ms")}, indent=2))


if __name__ == "__main__":
    main()
