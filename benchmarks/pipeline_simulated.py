"""Pipeline efficiency at cluster scale: the real orchestrator against simulated vLLM engines.

Runs :mod:`symbolkg.jobs.evaluations.pipeline_bench` (the real ``logiclm`` batch job, real results Parquet; simulated
engines and solver) over 10,000 synthetic problems on 4 engines x 64 sequences, sized like
Llama-3.3-70B on 4xH100 TP4 (an assumption: see ``actors/engines/simulated.py``), and the
same pipeline one problem at a time on the first 100 problems (the papers' way). Then a
sweep of the time scale on a smaller run shows how much of the gap to the engines' capacity
is the orchestrator's own CPU time, which simulated time magnifies by ``1 / time_scale``.

    python benchmarks/pipeline_simulated.py [--problems 10000] [--engines 4] [--concurrency 64]
        [--time-scale 0.1] [--sweep-problems 2000] [--sweep-scales 0.01 0.02 0.05 0.1 0.2]

Writes benchmarks/out/pipeline_simulated.json and benchmarks/out/pipeline_simulated.png.
Target: efficiency (achieved problems/s over what the engines allow) >= 0.9.

The driver's scale table (issue 29: memory follows the work in flight, not the job)::

    python benchmarks/pipeline_simulated.py --scale 10000 100000 1000000
    python benchmarks/pipeline_simulated.py --scale-from r1e4.json r1e5.json r1e6.json [--scale-before ...]

runs ``symbolkg bench pipeline --simulated --engines 16 --time-scale 0.05 --sequential-problems 0``
at each size in a process of its own (or reads such ``--json`` reports) and writes
benchmarks/out/pipeline_scale.json and .png: wall and CPU time, peak RSS, resident memory over
each run. Target: peak RSS flat within 20% across the sizes, 0 lost, 0 duplicated.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from symbolkg.actors.engines.simulated import LLAMA_3_3_70B_4XH100
from symbolkg.jobs.evaluations.pipeline_bench import BIN_S, BenchConfig, PipelineRun, run_bench

OUT = Path(__file__).resolve().parent / "out"


def occupancy(run: PipelineRun) -> dict[str, list[float]]:
    """Per engine: the mean share of its batch slots in use in each ``BIN_S`` bin of the run."""
    return {
        name: [round(s / (BIN_S * run.max_batch), 4) for s in run.totals.occupancy.get(name, [])]
        for name in run.engine_names
    }


def finished_curve(run: PipelineRun) -> list[tuple[float, int]]:
    """(simulated s, problems finished) at the end of every ``BIN_S`` bin with a row."""
    curve, done = [], 0
    for i, n in enumerate(run.finished):
        done += n
        if n:
            curve.append((round(min((i + 1) * BIN_S, run.last_row_s), 2), done))
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
    ax.set_title(
        f"{main['problems']} problems, {main['engines']} engines x {main['max_batch']}: "
        f"efficiency {main['efficiency']:.3f}"
    )
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
        for bar, s in zip(bars, sweep, strict=True):
            label = f"{s['efficiency']:.3f}\nlate {100 * s['late_share_of_service']:.1f}%"
            ax.annotate(
                label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=8
            )
        ax.axhline(0.9, color="k", ls="--", lw=1)
        ax.set_ylim(0, 1.15)
        ax.set_xlabel("time scale (real s per simulated s)")
        ax.set_ylabel("efficiency")
        ax.set_title(f"{sweep[0]['problems']} problems: efficiency (and slot time lost to late timers)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


SCALE_FLAGS = ["--engines", "16", "--time-scale", "0.05", "--sequential-problems", "0"]
"""The scale runs' settings (issue 29's command): 16 engines x 64, 2,048 in flight, time scale 0.05."""


def scale_runs(sizes: list[int]) -> list[dict]:
    """``symbolkg bench pipeline --simulated`` at each size, each in a process of its own (its own peak RSS)."""
    reports = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [
                sys.executable,
                "-m",
                "symbolkg.jobs",
                "bench",
                "pipeline",
                "--simulated",
                *SCALE_FLAGS,
                "--problems",
                str(n),
                "--json",
                "--no-progress",
                "--out",
                tmp,
            ]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        reports.append(json.loads(done.stdout))
        print(
            f"scale: {n} problems: peak RSS {reports[-1]['peak_rss_mb']} MiB, "
            f"{reports[-1]['cpu_ms_per_problem']} ms CPU a problem",
            file=sys.stderr,
        )
    return reports


def scale_table(reports: list[dict]) -> dict:
    """The driver's rows of the scale table: per size, time, CPU and peak memory; the spread of the peaks."""
    rows = [
        {
            "problems": r["problems"],
            "wall_seconds": r["wall_seconds"],
            "cpu_seconds": r["cpu_seconds"],
            "cpu_ms_per_problem": r["cpu_ms_per_problem"],
            "peak_rss_mb": r["peak_rss_mb"],
            "rss_mb_by_rows": r["rss_mb_by_rows"],
            "lost": r["lost"],
            "duplicated": r["duplicated"],
            "efficiency": r["efficiency"],
        }
        for r in sorted(reports, key=lambda r: r["problems"])
    ]
    peaks = [r["peak_rss_mb"] for r in rows]
    return {"rows": rows, "peak_rss_spread": round(max(peaks) / min(peaks) - 1, 4)}


def plot_scale(table: dict, path: Path, before: list[dict] | None = None) -> None:
    """Peak RSS and wall time against problems (log x), and resident memory over each run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = table["rows"]
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    ax = axes[0]
    ax.plot([r["problems"] for r in rows], [r["peak_rss_mb"] for r in rows], "o-", label="after (issue 29)")
    for r in rows:
        ax.annotate(
            f"{r['peak_rss_mb']:.0f}",
            (r["problems"], r["peak_rss_mb"]),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            fontsize=8,
        )
    if before:
        ax.plot(
            [b["problems"] for b in before], [b["peak_rss_mb"] for b in before], "s--", color="tab:red", label="before"
        )
        for b in before:
            ax.annotate(
                f"{b['peak_rss_mb']:.0f}",
                (b["problems"], b["peak_rss_mb"]),
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
                fontsize=8,
            )
    ax.set_xscale("log")
    ax.set_xlabel("problems")
    ax.set_ylabel("driver peak RSS (MiB)")
    ax.set_title(f"peak memory (spread {100 * table['peak_rss_spread']:.0f}%)")
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.loglog([r["problems"] for r in rows], [r["wall_seconds"] for r in rows], "o-", label="wall s")
    ax.loglog([r["problems"] for r in rows], [r["cpu_seconds"] for r in rows], "s-", label="driver CPU s")
    ax.set_xlabel("problems")
    ax.set_ylabel("seconds")
    ax.set_title("time (CPU ms a problem: " + ", ".join(f"{r['cpu_ms_per_problem']:.2f}" for r in rows) + ")")
    ax.legend(fontsize=8)
    ax = axes[2]
    for r in rows:
        xs = [n / r["problems"] for n, _ in r["rss_mb_by_rows"]]
        ax.plot(xs, [m for _, m in r["rss_mb_by_rows"]], label=f"{r['problems']:,} problems")
    ax.set_xlabel("share of the problems finished")
    ax.set_ylabel("resident MiB")
    ax.set_title("resident memory during the run (every 5%)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main_scale(args: argparse.Namespace, out: Path) -> int:
    """``--scale N...`` (run them) or ``--scale-from JSON...`` (reports of runs already made): the scale table."""
    reports = scale_runs(args.scale) if args.scale else [json.loads(Path(f).read_text()) for f in args.scale_from]
    before = []
    for f in args.scale_before or []:  # each file: one report, or a list of them
        loaded = json.loads(Path(f).read_text())
        before += loaded if isinstance(loaded, list) else [loaded]
    table = scale_table(reports)
    result = {
        "command": "python benchmarks/pipeline_simulated.py " + " ".join(args.argv),
        "bench_flags": SCALE_FLAGS,
        "date": datetime.date.today().isoformat(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        **table,
        "before": before,
    }
    (out / "pipeline_scale.json").write_text(json.dumps(result, indent=1) + "\n")
    plot_scale(table, out / "pipeline_scale.png", before)
    print(json.dumps({k: v for k, v in table.items()}, indent=1))
    return 0 if all(r["lost"] == 0 and r["duplicated"] == 0 for r in table["rows"]) else 1


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
    parser.add_argument(
        "--scale",
        type=int,
        nargs="+",
        metavar="N",
        help="instead: the driver's scale table, one bench run per N (e.g. 10000 100000 1000000)",
    )
    parser.add_argument(
        "--scale-from",
        nargs="+",
        metavar="JSON",
        help="instead: the scale table from `symbolkg bench pipeline --json` outputs already made",
    )
    parser.add_argument(
        "--scale-before",
        nargs="*",
        metavar="JSON",
        help="with --scale/--scale-from: earlier reports of the same runs to plot beside "
        "(JSON objects, or lists of them, with at least problems and peak_rss_mb)",
    )
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.scale or args.scale_from:
        return main_scale(args, out)
    latency = replace(LLAMA_3_3_70B_4XH100, max_batch=args.concurrency)
    started = time.perf_counter()

    sweep = []
    for scale in args.sweep_scales:
        cfg = BenchConfig(
            problems=args.sweep_problems,
            engines=args.engines,
            latency=latency,
            time_scale=scale,
            seed=args.seed,
            sequential_problems=0,
        )
        with tempfile.TemporaryDirectory() as tmp:
            run = run_bench(cfg, Path(tmp)).concurrent
        s = run.summary()
        sweep.append(
            {
                "time_scale": scale,
                "problems": run.problems,
                "efficiency": s["efficiency"],
                "problems_per_second": s["problems_per_second"],
                "wall_seconds": s["wall_seconds"],
                "cpu_seconds": s["cpu_seconds"],
                "simulated_seconds": s["simulated_seconds"],
                "last_row_simulated_s": s["last_row_simulated_s"],
                "mean_late_s": s["mean_late_s"],
                "late_share_of_service": s["late_share_of_service"],
            }
        )
        print(
            f"sweep: time scale {scale}: efficiency {s['efficiency']:.3f}, late share of service "
            f"{s['late_share_of_service']:.3f}, wall {s['wall_seconds']:.1f} s",
            file=sys.stderr,
        )

    cfg = BenchConfig(
        problems=args.problems,
        engines=args.engines,
        latency=latency,
        time_scale=args.time_scale,
        seed=args.seed,
        sequential_problems=args.sequential_problems,
    )
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
        "finalize_simulated_s": round(c.sim_seconds - c.last_row_s, 2),
        "sweep": sweep,
        "finished": {
            "concurrent": finished_curve(c),
            "sequential": finished_curve(bench.sequential) if bench.sequential else [],
        },
        "occupancy": occupancy(c),
        "total_wall_seconds": round(time.perf_counter() - started, 1),
    }
    (out / "pipeline_simulated.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(result, out / "pipeline_simulated.png")
    print(
        json.dumps(
            {
                k: report[k]
                for k in (
                    "problems",
                    "problems_per_second",
                    "engine_capacity_problems_per_second",
                    "efficiency",
                    "sequential_problems",
                    "sequential_problems_per_second",
                    "speedup",
                    "lost",
                    "duplicated",
                    "simulated_seconds",
                    "last_row_simulated_s",
                    "wall_seconds",
                    "cpu_seconds",
                    "llm_calls",
                    "rounds_histogram",
                    "mean_queue_wait_s",
                    "mean_late_s",
                    "late_share_of_service",
                    "engine_utilization",
                )
            },
            indent=1,
        )
    )
    print(
        f"late share of service {report['late_share_of_service']}, "
        f"finalize {result['finalize_simulated_s']} simulated s, total wall {result['total_wall_seconds']} s; "
        f"wrote {out / 'pipeline_simulated.json'} and .png"
    )
    return 0 if report["lost"] == 0 and report["duplicated"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
