"""LLM throughput of the embedded engine: vLLM (CPU build here) on SmolLM2-135M-Instruct.

Measures, on formalization-style chats (a ProntoQA problem to translate into a Logic-LM LP
program; synthetic ones when ../shared/data is absent):

* engine load time (model resolution + vLLM start);
* generated tokens/s and requests/s with 1, 8 and 64 requests kept in flight (a closed loop:
  a finished request is replaced at once, as a batch job with many problems does);
* the speed-up of feeding the same N problems concurrently (``asyncio.gather``) instead of
  one at a time (sequential awaits): what continuous batching buys a pipeline.

Each phase also reports ``foreign_cpu_share``: the share of the machine's CPU time that other
processes used meanwhile (a shared 2-core box makes numbers without it unreadable).

    python benchmarks/llm_throughput.py [--model smollm2-135m] [--max-tokens 64] [--problems 32]

Writes benchmarks/out/llm_throughput.json and benchmarks/out/llm_throughput.png.
Greedy decoding; completions end at the model's end token or at ``--max-tokens``, so token
counts are real generated tokens, not padding. Budget: about 5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from symbolkg.actors.engines.base import ChatRequest, Completion, Message, SamplingParams

OUT = Path(__file__).resolve().parent / "out"
REPO = Path(__file__).resolve().parents[1]

SYSTEM = (
    "You translate logic problems into Logic-LM LP programs. Write four sections: "
    "'Predicates:' with one line per predicate like Red($x, bool), 'Facts:' with ground facts like "
    "Red(Bob, True), 'Rules:' with lines like Big($x, True) >>> Red($x, True), and 'Query:' with one fact. "
    "Write only the program."
)


def load_contexts(n: int, data_dir: Path | None) -> list[tuple[str, str]]:
    """``n`` (context, question) pairs: ProntoQA dev problems, or synthetic chains."""
    root = data_dir or Path(os.environ.get("SYMBOLKG_DATA", REPO.parent / "shared" / "data"))
    path = root / "logiclm" / "ProntoQA" / "dev.json"
    if path.is_file():
        rows = json.loads(path.read_text())
        pairs = [(r["context"], r["question"]) for r in rows]
        return [pairs[i % len(pairs)] for i in range(n)]
    kinds = ["wumpus", "yumpus", "zumpus", "dumpus", "impus", "tumpus"]
    out = []
    for i in range(n):
        chain = [kinds[(i + k) % len(kinds)] for k in range(4)]
        facts = " ".join(f"Every {a} is a {b}." for a, b in zip(chain, chain[1:], strict=False))
        question = f"Is the following statement true or false? Max{i} is a {chain[-1]}."
        out.append((f"{facts} Max{i} is a {chain[0]}.", question))
    return out


EXAMPLE_USER = (
    "Translate this problem into a Logic-LM LP program.\n"
    "Context: Every cat is a mammal. Mammals are warm. Tom is a cat.\n"
    "Question: Is the following statement true or false? Tom is warm."
)
EXAMPLE_PROGRAM = (
    "Predicates:\nCat($x, bool) ::: Is x a cat?\nMammal($x, bool) ::: Is x a mammal?\nWarm($x, bool) ::: Is x warm?\n"
    "Facts:\nCat(Tom, True)\n"
    "Rules:\nCat($x, True) >>> Mammal($x, True)\nMammal($x, True) >>> Warm($x, True)\n"
    "Query:\nWarm(Tom, True)"
)


def make_requests(pairs: Sequence[tuple[str, str]], max_tokens: int, tag: str) -> list[ChatRequest]:
    """One-shot formalization chats (Logic-LM prompts are few-shot), one per problem.

    ``tag`` opens the system prompt: requests of one phase share their preamble in vLLM's
    prefix cache (as a real job's do), but no phase reuses another phase's cached prompts.
    """
    return [
        ChatRequest(
            (
                Message("system", f"[{tag}] {SYSTEM}"),
                Message("user", EXAMPLE_USER),
                Message("assistant", EXAMPLE_PROGRAM),
                Message("user", f"Translate this problem into a Logic-LM LP program.\nContext: {c}\nQuestion: {q}"),
            ),
            params=SamplingParams(max_tokens=max_tokens),
            problem_id=f"{tag}-{i}",
            purpose="formulate",
            request_id=f"{tag}-{i}-formulate-0",
        )
        for i, (c, q) in enumerate(pairs)
    ]


class CpuMeter:
    """CPU seconds used on the machine by processes outside this benchmark, between two marks.

    The 2-core development box is shared; a throughput number means little without knowing
    how much of the CPU something else took meanwhile. ``foreign_cpu_share`` is that other
    work's CPU time over the phase's available CPU time (wall x cores).
    """

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        self._me = psutil.Process()

    def mark(self) -> tuple[float, float, float]:
        t = self._psutil.cpu_times()
        busy = t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)
        ours = 0.0
        for p in [self._me, *self._me.children(recursive=True)]:
            try:
                c = p.cpu_times()
                ours += c.user + c.system
            except self._psutil.Error:
                pass
        return time.perf_counter(), busy, ours

    @staticmethod
    def foreign_share(start: tuple[float, float, float], end: tuple[float, float, float]) -> float:
        wall = max(end[0] - start[0], 1e-9)
        foreign = max(0.0, (end[1] - start[1]) - (end[2] - start[2]))
        return round(foreign / (wall * (os.cpu_count() or 1)), 3)


async def closed_loop(engine, requests: Sequence[ChatRequest], in_flight: int) -> tuple[list[Completion], float]:
    """Run ``requests`` keeping ``in_flight`` of them submitted at any time; (completions, wall s)."""
    queue = list(enumerate(requests))
    results: list[Completion | None] = [None] * len(requests)

    async def worker():
        while queue:
            i, r = queue.pop(0)
            (results[i],) = await engine.generate([r])

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(min(in_flight, len(requests)))))
    return results, time.perf_counter() - t0  # type: ignore[return-value]


async def sequential(engine, requests: Sequence[ChatRequest]) -> tuple[list[Completion], float]:
    t0 = time.perf_counter()
    out = [(await engine.generate([r]))[0] for r in requests]
    return out, time.perf_counter() - t0


async def all_at_once(engine, requests: Sequence[ChatRequest]) -> tuple[list[Completion], float]:
    t0 = time.perf_counter()
    out = await asyncio.gather(*(engine.generate([r]) for r in requests))
    return [o[0] for o in out], time.perf_counter() - t0


def summarize(completions: Sequence[Completion], wall_s: float, foreign_cpu_share: float | None = None) -> dict:
    gen = sum(c.completion_tokens for c in completions)
    lat = sorted(c.latency_s for c in completions)
    return {
        "requests": len(completions),
        "wall_s": round(wall_s, 2),
        "prompt_tokens": sum(c.prompt_tokens for c in completions),
        "generated_tokens": gen,
        "mean_generated_tokens": round(gen / len(completions), 1),
        "generated_tokens_per_s": round(gen / wall_s, 1),
        "requests_per_s": round(len(completions) / wall_s, 3),
        "latency_p50_s": round(statistics.median(lat), 2),
        "latency_p95_s": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 2),
        "finish_length": sum(c.finish_reason == "length" for c in completions),
        "foreign_cpu_share": foreign_cpu_share,
    }


async def measure(engine, args) -> dict:
    meter = CpuMeter()
    # Warm-up outside the timed region (first-request paths, prefix cache of the system prompt).
    await engine.generate(make_requests(load_contexts(2, args.data_dir), 8, "warm"))
    levels = []
    for in_flight, n in zip(args.in_flight, args.requests_per_level, strict=False):
        reqs = make_requests(load_contexts(n, args.data_dir), args.max_tokens, f"c{in_flight}")
        m0 = meter.mark()
        completions, wall = await closed_loop(engine, reqs, in_flight)
        row = {"in_flight": in_flight, **summarize(completions, wall, meter.foreign_share(m0, meter.mark()))}
        levels.append(row)
        print(
            f"  in flight {in_flight:3d}: {row['requests']:4d} requests in {wall:6.1f} s  "
            f"{row['generated_tokens_per_s']:7.1f} gen tok/s  {row['requests_per_s']:6.2f} req/s  "
            f"p50 {row['latency_p50_s']:.2f} s  (other work: {row['foreign_cpu_share']:.0%} of the CPU)",
            flush=True,
        )
    pairs = load_contexts(args.problems, args.data_dir)
    m0 = meter.mark()
    seq_c, seq_s = await sequential(engine, make_requests(pairs, args.speedup_max_tokens, "seq"))
    m1 = meter.mark()
    con_c, con_s = await all_at_once(engine, make_requests(pairs, args.speedup_max_tokens, "con"))
    m2 = meter.mark()
    same_text = sum(a.text == b.text for a, b in zip(seq_c, con_c, strict=True))
    speedup = {
        "problems": args.problems,
        "max_tokens": args.speedup_max_tokens,
        "sequential": summarize(seq_c, seq_s, meter.foreign_share(m0, m1)),
        "concurrent": summarize(con_c, con_s, meter.foreign_share(m1, m2)),
        "speedup": round(seq_s / con_s, 2),
        "identical_texts": same_text,
    }
    print(
        f"  {args.problems} problems one at a time: {seq_s:.1f} s; all in flight: {con_s:.1f} s "
        f"-> speed-up x{speedup['speedup']} ({same_text}/{args.problems} identical greedy texts)",
        flush=True,
    )
    return {"levels": levels, "sequential_vs_concurrent": speedup}


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = result["levels"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    xs = [str(lv["in_flight"]) for lv in levels]
    bars = ax1.bar(xs, [lv["generated_tokens_per_s"] for lv in levels], color="#4c72b0")
    for b, lv in zip(bars, levels, strict=True):
        ax1.annotate(
            f"{lv['generated_tokens_per_s']:.0f} tok/s\n{lv['requests_per_s']:.2f} req/s\n"
            f"other work {lv['foreign_cpu_share']:.0%}",
            (b.get_x() + b.get_width() / 2, b.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax1.set_xlabel("requests in flight")
    ax1.set_ylabel("generated tokens / s")
    ax1.set_title(f"{result['model']} on {result['machine']['cpus']} CPU cores ({result['platform']})")
    ax1.margins(y=0.25)
    s = result["sequential_vs_concurrent"]
    walls = [s["sequential"]["wall_s"], s["concurrent"]["wall_s"]]
    bars = ax2.bar(["one at a time", "all in flight"], walls, color=["#dd8452", "#55a868"])
    for b, w in zip(bars, walls, strict=True):
        ax2.annotate(f"{w:.1f} s", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom")
    ax2.set_ylabel("wall seconds")
    ax2.set_title(f"{s['problems']} problems, <= {s['max_tokens']} tokens each: x{s['speedup']}")
    ax2.margins(y=0.2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", default=None, help="registered name, HF folder or cached repo id (default: smollm2-135m)"
    )
    parser.add_argument("--max-tokens", type=int, default=64, help="completion cap for the in-flight levels")
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 8, 64])
    parser.add_argument(
        "--requests-per-level",
        type=int,
        nargs="+",
        default=[4, 16, 96],
        help="requests run at each in-flight level (same order as --in-flight)",
    )
    parser.add_argument("--problems", type=int, default=32, help="N for the one-at-a-time vs all-in-flight comparison")
    parser.add_argument("--speedup-max-tokens", type=int, default=32)
    parser.add_argument("--max-num-seqs", type=int, default=64)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if len(args.requests_per_level) != len(args.in_flight):
        parser.error("--requests-per-level needs one count per --in-flight level")

    from symbolkg.actors.engines.vllm_engine import VLLMConfig, VLLMEngine

    t_start = time.perf_counter()
    load_before = os.getloadavg()
    config = VLLMConfig(**({"model": args.model} if args.model else {}), max_num_seqs=args.max_num_seqs)
    engine = VLLMEngine(config)
    print(f"engine: {engine.model} on {engine.platform}, loaded in {engine.load_s:.1f} s", flush=True)
    try:
        measured = asyncio.run(measure(engine, args))
    finally:
        t0 = time.perf_counter()
        engine.shutdown()
        close_s = time.perf_counter() - t0
    result = {
        "benchmark": "llm_throughput",
        "model": engine.model,
        "model_path": engine.spec.path,
        "platform": engine.platform,
        "config": {
            "max_num_seqs": config.max_num_seqs,
            "max_model_len": config.max_model_len,
            "dtype": engine.dtype,
            "enforce_eager": engine.enforce_eager,
            "cpu_omp_threads_bind": config.cpu_omp_threads_bind,
            "max_tokens": args.max_tokens,
            "temperature": 0.0,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        },
        "load_s": round(engine.load_s, 1),
        "close_s": round(close_s, 1),
        **measured,
        "total_s": round(time.perf_counter() - t_start, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "llm_throughput.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(result, args.out / "llm_throughput.png")
    print_table(result)
    print(f"wrote {args.out / 'llm_throughput.json'} and {args.out / 'llm_throughput.png'}")
    return result


def print_table(result: dict) -> None:
    print(
        f"\nmodel {result['model']} ({result['platform']}, {result['machine']['cpus']} cores): "
        f"load {result['load_s']} s, close {result['close_s']} s, total {result['total_s']} s, "
        f"load average {result['machine']['loadavg_before'][0]} -> {result['machine']['loadavg_after'][0]}"
    )
    header = (
        f"{'in flight':>9} {'requests':>8} {'wall s':>7} {'gen tok':>8} {'tok/s':>7} {'req/s':>6} "
        f"{'p50 s':>6} {'p95 s':>6} {'other CPU':>9}"
    )
    print(header)
    print("-" * len(header))
    for lv in result["levels"]:
        print(
            f"{lv['in_flight']:>9} {lv['requests']:>8} {lv['wall_s']:>7.1f} {lv['generated_tokens']:>8} "
            f"{lv['generated_tokens_per_s']:>7.1f} {lv['requests_per_s']:>6.2f} {lv['latency_p50_s']:>6.2f} "
            f"{lv['latency_p95_s']:>6.2f} {lv['foreign_cpu_share']:>9.0%}"
        )
    s = result["sequential_vs_concurrent"]
    print(
        f"\n{s['problems']} problems: one at a time {s['sequential']['wall_s']} s "
        f"({s['sequential']['generated_tokens_per_s']} tok/s, "
        f"other work {s['sequential']['foreign_cpu_share']:.0%}), "
        f"all in flight {s['concurrent']['wall_s']} s ({s['concurrent']['generated_tokens_per_s']} tok/s, "
        f"other work {s['concurrent']['foreign_cpu_share']:.0%}): speed-up x{s['speedup']}"
    )


if __name__ == "__main__":  # vLLM spawns its processes: the guard is required
    main()
