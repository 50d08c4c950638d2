"""How the engine's queue policy and the batch size move the logiclm job's ratio to its offline ceiling: a simulation.

The real measurement is ``benchmarks/llm_ceiling.py`` (about 45 minutes of model time per point on
this machine); this script asks the cheaper question of which settings are worth a real run. It
replays the *lengths* of the requests a kept run sent (default: qwen's logiclm run on ProntoQA,
``benchmarks/out/qwen/logiclm-skeleton.parquet.requests/``): each problem is a chain of completions,
a repair waiting on the program before it. A job of ``N`` problems is ``N`` chains drawn with
replacement (seeded). Two engines are stepped one decode step at a time, each step costing what
``--step-rates`` says a batch of that size decodes on this CPU (tokens/s at a few batch sizes,
interpolated linearly between them and beyond the last):

* **the job**: ``--max-in-flight`` problems admitted, a finished problem admits the next; a finished
  request releases its problem's next one; the engine runs at most ``max_num_seqs`` requests and the
  rest wait, first come first served, by their problem's admission number (``priority``), or
  deepest round first (``depth``: a repair before any first program, then first come);
* **the ceiling**: every request of the job known at once, in one queue, same batch and policy.

Ratio: the job's tokens/s over the ceiling's. The plot also marks the ratios ``llm_ceiling.py``
measured (its JSON files in ``benchmarks/out/``, marked by date). Left out: prefill (and the prefix
cache), the solver's time between rounds, grammar compilation, preemption. So it ranks settings; how
close it comes to the measured ratio depends on how well ``--step-rates`` match the machine: the
default rates, read on the VM of 2026-12-06, say 0.90 at 72 problems where that VM measured 0.83;
the rates read off the VM of 2026-12-07 (``1:5,6:24,30:80,64:110``: it decodes twice as fast in a
full batch and slower alone) say 0.83 at 150 where it measured 0.85 (benchmarks/RESULTS.md).

``--settings`` picks the engine settings compared (``max_num_seqs:max_in_flight:policy``, ``all``
for every problem in flight); ``--order longest-first`` admits the problems with the longest chains
first: an oracle (no job knows a chain's length before it runs) that shows what the order of the long
chains is worth. ``--repair-cap N`` cuts every repair of the replayed chains to at most ``N`` tokens:
what a bound on a repair's length would be worth to the ratio (only that: a cut repair would fail
and might cost a round more, which the replay cannot know).

    python benchmarks/scheduling_sim.py [--requests DIR] [--dataset-prefix ProntoQA] [--sizes 24,48,72,96,144,288]
                                        [--step-rates 1:6.5,24:70,64:60] [--settings 64:64:fcfs,32:all:priority]
                                        [--order drawn|longest-first] [--repair-cap N] [--out FILE]

Writes ``benchmarks/out/scheduling_sim.json`` and ``.png``; runs in seconds.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
REQUESTS = OUT / "qwen" / "logiclm-skeleton.parquet.requests"
#: batch size -> generated tokens/s of the 1.5B model on this 2-core CPU (benchmarks/RESULTS.md:
#: about 6.5 tokens/s for one sequence, 60-75 at 24 running, ~60 decoding at 64)
STEP_RATES = "1:6.5,24:70,64:60"
#: (max_num_seqs, max_in_flight or None for all N, policy)
SETTINGS = ((64, 64, "fcfs"), (32, None, "fcfs"), (32, None, "priority"), (48, None, "priority"))
#: admission orders: as drawn; longest chain (most tokens in all its rounds) first
ORDERS = ("drawn", "longest-first")
#: the engine's queue: first come first served; the problem's admission number; deepest round first
POLICIES = ("fcfs", "priority", "depth")


def rank(policy: str, problem: int, k: int) -> int:
    """A waiting request's place in the queue under ``policy`` (lower first; ties first come)."""
    return {"fcfs": 0, "priority": problem, "depth": -k}[policy]


def in_order(job: list[list[int]], order: str) -> list[list[int]]:
    """``job``'s chains in the admission ``order`` (:data:`ORDERS`); ties keep their drawn order."""
    if order == "longest-first":
        return sorted(job, key=sum, reverse=True)
    return job


def parse_settings(text: str) -> list[tuple[int, int | None, str]]:
    """``--settings``: ``max_num_seqs:max_in_flight:policy,...``; ``all`` in flight is None (every problem)."""
    out = []
    for part in text.split(","):
        try:
            seqs, flight, policy = part.split(":")
            row = (int(seqs), None if flight == "all" else int(flight), policy)
        except ValueError:
            raise SystemExit(
                f"--settings: {part!r} is not max_num_seqs:max_in_flight:policy (e.g. 64:all:fcfs)"
            ) from None
        if policy not in POLICIES or row[0] < 1 or (row[1] is not None and row[1] < 1):
            raise SystemExit(f"--settings: {part!r}: sizes must be >= 1 and the policy one of {', '.join(POLICIES)}")
        out.append(row)
    return out


def chains_of(requests: Path, prefix: str) -> list[list[int]]:
    """Completion lengths per problem, in the order they were asked, of the requests the model answered."""
    import pyarrow.parquet as pq

    rows = [r for f in sorted(requests.glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    chains: dict[str, list[int]] = {}
    for r in sorted(rows, key=lambda r: r["submitted"]):
        if r["problem_id"].startswith(prefix) and not r["cached"] and r["completion_tokens"] > 0:
            chains.setdefault(r["problem_id"], []).append(r["completion_tokens"])
    return list(chains.values())


def cut_repairs(chains: list[list[int]], cap: int) -> list[list[int]]:
    """Every repair (a chain's second round on) cut to at most ``cap`` tokens; first programs whole."""
    return [[chain[0], *(min(n, cap) for n in chain[1:])] for chain in chains]


def step_seconds(rates: list[tuple[int, float]]):
    """Seconds per decode step at batch size ``b``, from tokens/s at a few batch sizes."""
    points = [(b, b / rate) for b, rate in rates]

    def seconds(b: int) -> float:
        for (b0, t0), (b1, t1) in zip(points, points[1:], strict=False):
            if b <= b1:
                return t0 + (t1 - t0) * (b - b0) / (b1 - b0)
        (b0, t0), (b1, t1) = points[-2:]
        return t1 + (t1 - t0) * (b - b1) / (b1 - b0)

    return seconds


def simulate(chains: list[list[int]], seqs: int, in_flight: int, policy: str, seconds, dependent: bool) -> float:
    """Tokens/s of one engine over ``chains``: the job (``dependent``) or every request at once."""
    waiting: list[tuple[int, int, int, int]] = []  # (priority, arrival, problem, round)
    arrival = admitted = tokens = 0
    clock = 0.0

    def push(problem: int, k: int) -> None:
        nonlocal arrival
        heapq.heappush(waiting, (rank(policy, problem, k), arrival, problem, k))
        arrival += 1

    if dependent:
        for admitted in range(1, min(in_flight, len(chains)) + 1):
            push(admitted - 1, 0)
    else:
        for p, chain in enumerate(chains):
            for k in range(len(chain)):
                push(p, k)
    running: dict[tuple[int, int], int] = {}
    while waiting or running:
        while waiting and len(running) < seqs:
            _, _, p, k = heapq.heappop(waiting)
            running[(p, k)] = chains[p][k]
        clock += seconds(len(running))
        tokens += len(running)
        for p, k in [key for key, left in running.items() if left == 1]:
            del running[(p, k)]
            if dependent and k + 1 < len(chains[p]):
                push(p, k + 1)
            elif dependent and admitted < len(chains):
                push(admitted, 0)
                admitted += 1
        running = {key: left - 1 for key, left in running.items()}
    return tokens / clock


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", default=str(REQUESTS), help="a run's request logs (RUN.parquet.requests)")
    ap.add_argument("--dataset-prefix", default="ProntoQA", help="problems whose id starts so")
    ap.add_argument("--sizes", default="24,48,72,96,144,288", help="problems per simulated job")
    ap.add_argument("--seeds", type=int, default=5, help="jobs drawn per size (default 5)")
    ap.add_argument("--step-rates", default=STEP_RATES, help=f"batch:tokens/s,... (default {STEP_RATES})")
    ap.add_argument(
        "--settings",
        default=",".join(f"{s}:{f or 'all'}:{p}" for s, f, p in SETTINGS),
        help="max_num_seqs:max_in_flight (a number or all):policy,... (default: the four in the table)",
    )
    ap.add_argument(
        "--order",
        choices=ORDERS,
        default="drawn",
        help="admission order: as drawn, or longest chain first (an oracle: a job cannot know a chain's "
        "length before it runs; it shows what the order of the long chains is worth)",
    )
    ap.add_argument(
        "--repair-cap",
        type=int,
        help="cut every repair of the replayed chains to at most this many tokens (what a bound on a "
        "repair's length is worth; the first program of a chain is kept whole)",
    )
    ap.add_argument("--out", default=str(OUT / "scheduling_sim.json"))
    args = ap.parse_args(argv)
    chains = chains_of(Path(args.requests), args.dataset_prefix)
    if not chains:
        raise SystemExit(f"no answered requests of problems starting with {args.dataset_prefix!r} in {args.requests}")
    if args.repair_cap is not None:
        if args.repair_cap < 1:
            raise SystemExit(f"--repair-cap must be >= 1, got {args.repair_cap}")
        chains = cut_repairs(chains, args.repair_cap)
    rates = sorted((int(b), float(r)) for b, r in (part.split(":") for part in args.step_rates.split(",")))
    if len(rates) < 2 or any(b < 1 or r <= 0 for b, r in rates):
        raise SystemExit(f"--step-rates needs two or more batch:tokens/s pairs, positive, got {args.step_rates!r}")
    seconds = step_seconds(rates)
    settings = parse_settings(args.settings)
    results = []
    for n in (int(x) for x in args.sizes.split(",")):
        for seqs, in_flight, policy in settings:
            ratios = []
            for seed in range(args.seeds):
                rnd = random.Random(seed)
                job = [rnd.choice(chains) for _ in range(n)]
                job = in_order(job, args.order)
                flight = in_flight or n
                ratios.append(
                    simulate(job, seqs, flight, policy, seconds, True)
                    / simulate(job, seqs, flight, policy, seconds, False)
                )
            row = {
                "problems": n,
                "max_num_seqs": seqs,
                "max_in_flight": in_flight or n,
                "setting": f"batch {seqs}, {in_flight or 'all'} in flight, {policy}"
                + (", longest first" if args.order == "longest-first" else "")
                + (f", repairs cut to {args.repair_cap}" if args.repair_cap else ""),
                "policy": policy,
                "order": args.order,
                "ratio_mean": round(statistics.mean(ratios), 3),
                "ratio_min": round(min(ratios), 3),
                "ratio_max": round(max(ratios), 3),
            }
            results.append(row)
            print(
                f"{n:4d} problems, {row['setting']}: job / ceiling "
                f"{row['ratio_mean']:.3f} ({row['ratio_min']:.3f}-{row['ratio_max']:.3f})"
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "command": " ".join(["python benchmarks/scheduling_sim.py", *(sys.argv[1:] if argv is None else argv)]),
        "date": time.strftime("%Y-%m-%d"),
        "requests": os.path.relpath(args.requests, OUT.parent.parent),
        "chains": len(chains),
        "step_rates": args.step_rates,
        "repair_cap": args.repair_cap,
        "results": results,
    }
    out.write_text(json.dumps(result, indent=2))
    plot(results, out.with_suffix(".png"))
    return 0


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for label in dict.fromkeys(r["setting"] for r in results):
        rows = [r for r in results if r["setting"] == label]
        ax.errorbar(
            [r["problems"] for r in rows],
            [r["ratio_mean"] for r in rows],
            yerr=[[r["ratio_mean"] - r["ratio_min"] for r in rows], [r["ratio_max"] - r["ratio_mean"] for r in rows]],
            marker="o",
            capsize=3,
            label=label,
        )
    # measured points by date: the VMs of different days decode at different rates (benchmarks/RESULTS.md)
    measured: dict[str, list[tuple[int, float]]] = {}
    for d in (json.loads(f.read_text()) for f in sorted(OUT.glob("llm_ceiling*.json"))):
        # a ratio above 1 is an offline side slower than the job: no ceiling (the 300-problem run, RESULTS.md)
        default = (d.get("max_num_seqs", 64), d.get("max_in_flight", 64), d.get("scheduling_policy", "fcfs"))
        if default == (64, 64, "fcfs") and d["ratio"] <= 1:
            measured.setdefault(d["date"], []).append((d["limit"], d["ratio"]))
    for (day, points), marker in zip(sorted(measured.items()), "xP^v", strict=False):
        label = f"measured {day}: llm_ceiling.py, batch 64, 64 in flight, fcfs"
        ax.plot(*zip(*sorted(points), strict=True), "k" + marker, markersize=8, label=label)
    ax.axhline(0.9, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("problems in the job")
    ax.set_ylabel("job / ceiling (simulated)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
