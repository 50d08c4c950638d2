"""Pipeline efficiency at cluster scale: the real orchestrator against simulated vLLM engines.

Runs :mod:`symbolkg.jobs.bench` (the real ``logiclm`` batch job, real results Parquet; simulated
engines and solver) over 10,000 synthetic problems on 4 engines x 64 sequences, sized like
Llama-3.3-70B on 4xH100 TP4 (an assumption: see ``actors/engines/simulated.py``), and the
same pipeline one problem at a time on the first 100 problems (the papers' way). Then a
sweep of the time scale on a smaller run shows how much of the gap to the engines' capacity
is the orchestrator's own CPU time, which simulated time magnifies by ``1 / time_scale``.

    python benchmarks/pipeline_simulated.py [--problems 10000] [--engines 4] [--concurrency 64]
        [--time-scale 0.1] [--sweep-problems 2000] [--sweep-scales 0.01 0.02 0.05 0.1 0.2]

Writes benchmarks/out/pipeline_simulated.json and benchmarks/out/pipeline_simulated.png.
Target: efficiency (achieved problems/s over what the engines allow) >= 0.9.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from symbolkg.actors.engines.simulated import LLAMA_3_3_70B_4XH100
from symbolkg.jobs.bench import BenchConfig, PipelineRun, run_bench

OUT = Path(__file__).resolve().parent / "out"
BIN_S = 10.0  # simulated seconds per occupancy bin


def occupancy(run: PipelineRun) -> dict[str, list[float]]:
    """Per engine: the mean share of its batch slots in use in each ``BIN_S`` bin of the run."""
    bins = int(run.sim_seconds // BIN_S) + 1
    per_engine = {name: [0.0] * bins for name in run.engine_names}
    for r in run.requests:
        slots = per_engine[r.engine]
        t = r.started_at_s
        while t < r.finished_at_s:
            i = int(t // BIN_S)
            end = min(r.finished_at_s, (i + 1) * BIN_S)
            slots[min(i, bins - 1)] += end - t
            t = end
    return {name: [round(s / (BIN_S * run.max_batch), 4) for s in slots] for name, slots in per_engine.items()}


def finished_curve(run: PipelineRun, points: int = 200) -> list[tuple[float, int]]:
    """(simulated s, problems finished) at up to ``points`` evenly spaced rows."""
    times = sorted(run.finished_at_s)
    step = max(1, len(times) // points)
    curve = [(round(times[i], 2), i + 1) for i in range(step - 1, len(times), step)]
    if curve[-1][1] != len(times):
        curve.append((round(times[-1], 2), len(times)))
    return curve


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    main = result["report"]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))

    ax = axes[0]
    rates = {"concurrent": main["problems_per_second"], "sequential": main["sequential_problems_per_second"]}
    for label, key in (("concurrent", "concurrent"), ("one at a time", "sequential")):
        curve = result["finished"][key]
        if curve:
            ax.plot([t for t, _ in curve], [n for _, n in curve], label=f"{label} ({rates[key]:.3g}/s)")
    horizon = main["simulated_seconds"]
    cap = main["engine_capacity_problems_per_second"]
    ax.plot([0, horizon], [0, cap * horizon], "k--", lw=1, label=f"engine capacity ({cap:.3g}/s)")
    ax.set_xlabel("simulated seconds")
    ax.set_ylabel("problems finished")
    ax.set_title(f"{main['problems']} problems, {main['engines']} engines x {main['max_batch']}: "
                 f"efficiency {main['efficiency']:.3f}")
    ax.legend(loc="upper left", fontsize=8)

    ax = axes[1]
    for name, series in result["occupancy"].items():
        ax.plot([BIN_S * (i + 0.5) for i in range(len(series))], series, lw=1, label=name)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("simulated seconds")
    ax.set_ylabel(f"batch slots in use (of {main['max_batch']})")
    ax.set_title("engine occupancy, concurrent run (10 s bins)")
    ax.legend(fontsize=8)

    ax = axes[2]
    sweep = result["sweep"]
    if sweep:
        labels = [str(s["time_scale"]) for s in sweep]
        bars = ax.bar(labels, [s["efficiency"] for s in sweep], color="tab:blue")
        for bar, s in zip(bars, sweep):
            label = f"{s['efficiency']:.3f}\nlate {100 * s['late_share_of_service']:.1f}%"
            ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                        fontsize=8)
        ax.axhline(0.9, color="k", ls="--", lw=1)
        ax.set_ylim(0, 1.15)
        ax.set_xlabel("time scale (real s per simulated s)")
        ax.set_ylabel("efficiency")
        ax.set_title(f"{sweep[0]['problems']} problems: efficiency (and slot time lost to late timers)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=10_000)
    parser.add_argument("--engines", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=64, help="sequences per engine (max batch)")
    parser.add_argument("--time-scale", type=float, default=0.1)
    parser.add_argument("--sequential-problems", type=int, default=100)
    parser.add_argument("--sweep-problems", type=int, default=2000)
    parser.add_argument("--sweep-scales", type=float, nargs="*", default=[0.01, 0.02, 0.05, 0.1, 0.2])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    latency = replace(LLAMA_3_3_70B_4XH100, max_batch=args.concurrency)
    started = time.perf_counter()

    sweep = []
    for scale in args.sweep_scales:
        cfg = BenchConfig(problems=args.sweep_problems, engines=args.engines, latency=latency, time_scale=scale,
                          seed=args.seed, sequential_problems=0)
        with tempfile.TemporaryDirectory() as tmp:
            run = run_bench(cfg, Path(tmp)).concurrent
        s = run.summary()
        sweep.append({"time_scale": scale, "problems": run.problems, "efficiency": s["efficiency"],
                      "problems_per_second": s["problems_per_second"], "wall_seconds": s["wall_seconds"],
                      "cpu_seconds": s["cpu_seconds"], "simulated_seconds": s["simulated_seconds"],
                      "last_row_simulated_s": s["last_row_simulated_s"],
                      "mean_late_s": s["mean_late_s"], "late_share_of_service": s["late_share_of_service"]})
        print(f"sweep: time scale {scale}: efficiency {s['efficiency']:.3f}, late share of service "
              f"{s['late_share_of_service']:.3f}, wall {s['wall_seconds']:.1f} s", file=sys.stderr)

    cfg = BenchConfig(problems=args.problems, engines=args.engines, latency=latency, time_scale=args.time_scale,
                      seed=args.seed, sequential_problems=args.sequential_problems)
    with tempfile.TemporaryDirectory() as tmp:
        bench = run_bench(cfg, Path(tmp), progress=True)
    report = bench.report()
    report["results"] = "(temporary)"
    if report["sequential"]:
        report["sequential"]["results"] = "(temporary)"
    c = bench.concurrent
    result = {
        "command": "python benchmarks/pipeline_simulated.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "date": datetime.date.today().isoformat(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "report": report,
        "finalize_simulated_s": round(c.sim_seconds - max(c.finished_at_s), 2),
        "sweep": sweep,
        "finished": {"concurrent": finished_curve(c),
                     "sequential": finished_curve(bench.sequential) if bench.sequential else []},
        "occupancy": occupancy(c),
        "total_wall_seconds": round(time.perf_counter() - started, 1),
    }
    (out / "pipeline_simulated.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(result, out / "pipeline_simulated.png")
    print(json.dumps({k: report[k] for k in (
        "problems", "problems_per_second", "engine_capacity_problems_per_second", "efficiency",
        "sequential_problems", "sequential_problems_per_second", "speedup", "lost", "duplicated",
        "simulated_seconds", "last_row_simulated_s", "wall_seconds", "cpu_seconds", "llm_calls",
        "rounds_histogram", "mean_queue_wait_s", "mean_late_s", "late_share_of_service",
        "engine_utilization")}, indent=1))
    print(f"late share of service {report['late_share_of_service']}, "
          f"finalize {result['finalize_simulated_s']} simulated s, total wall {result['total_wall_seconds']} s; wrote {out / 'pipeline_simulated.json'} and .png")
    return 0 if report["lost"] == 0 and report["duplicated"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
