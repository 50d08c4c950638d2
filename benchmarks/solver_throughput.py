"""Solver throughput: the five Logic-LM GPT-4 program sets as ONE job through the Ray solver pool.

The whole recorded set (1,833 programs of ProntoQA, ProofWriter, FOLIO, LogicalDeduction and
AR-LSAT) is one mixed stream, shuffled with a fixed seed, as a user runs a batch: one
`symbolkg.jobs.pipeline.programs_job.run_solve` job (Ray actors, worker processes, the formalization
checks and certificates in the workers, results Parquet). It runs ``--repeats`` times per worker
count, the worker counts interleaved (1, 2, 1, 2, ...) so that a noisy neighbour hits both, and
reports the median wall time, per dataset and per backend: problems/s, p50/p95/max solver latency,
execution rate and accuracy.

    python benchmarks/solver_throughput.py [--workers 1 2] [--repeats 3] [--timeout-s 10] [--data-dir DIR]

Writes benchmarks/out/solver_throughput.json and benchmarks/out/solver_throughput.png.

The scale table (``--copies 1 10 100``): the same job over 1x, 10x and 100x the stream (copies of
every problem under new ids, read lazily), each size in a process of its own (its own peak RSS),
2 workers; the workers' cache of FOL model searches is off (``SYMBOLKG_FOL_MODEL_CACHE=0``) so that a
copy costs what a new program of its kind would. Writes benchmarks/out/solver_scale.json and .png.
Reference: Logic-LM's own sequential solvers took 134 s for the 1,833 programs on this kind of
machine; issue 29's target is 12 s with 2 workers, every answer certified.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from symbolkg.actors.solver_pool import RaySolverPool
from symbolkg.jobs.datasets.files import default_data_dir
from symbolkg.jobs.datasets.registry import load_problems
from symbolkg.jobs.inspection.report import summarize
from symbolkg.jobs.pipeline.programs_job import run_solve
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.outcomes import Limits, SolveRequest

DATASETS = ["ProntoQA", "ProofWriter", "FOLIO", "LogicalDeduction", "AR-LSAT"]
LOGICLM_SECONDS = 134.0
TARGET_SECONDS = 12.0
OUT = Path(__file__).resolve().parent / "out"


def mixed_stream(root: Path, seed: int = 0) -> list:
    """Every recorded program of the five sets, shuffled (a fixed seed: the same stream every run)."""
    problems = [
        p
        for ds in DATASETS
        for p in load_problems(str(root / "logiclm" / "programs" / f"{ds}_dev_gpt-4.json"), root).problems
    ]
    random.Random(seed).shuffle(problems)
    return problems


def run_once(problems: list, pool: RaySolverPool, limits: Limits, keep: Path | None = None) -> dict:
    """One job over the whole stream on a warm pool; its wall time and summary (``keep``: where to copy its results)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "all.parquet"
        t0 = time.perf_counter()
        run_solve(problems, ResultStore(out), pool, limits=limits, progress=False)
        wall = time.perf_counter() - t0
        table, meta = read_run(out)
        if keep is not None:
            keep.parent.mkdir(parents=True, exist_ok=True)
            keep.write_bytes(out.read_bytes())
    rows = table.to_pylist()
    by_ds = {}
    for ds in sorted({r["dataset"] for r in rows}):
        part = [r for r in rows if r["dataset"] == ds]
        s = summarize(pa.Table.from_pylist(part, schema=table.schema), {"wall_seconds": wall})
        by_ds[ds] = {
            "problems": s["problems"],
            "execution_rate": s["execution_rate"],
            "accuracy": s["accuracy"],
            "latency": s["latency"],
            "errors_by_kind": s["errors_by_kind"],
            "certified": sum(1 for r in part if r["certificate"]),
            "answered": sum(1 for r in part if r["predicted"] is not None),
            "timeouts": sum(1 for r in part if r["status"] == "timeout"),
        }
    s = summarize(table, {**meta, "wall_seconds": wall})
    return {
        "wall_seconds": round(wall, 3),
        "problems": s["problems"],
        "problems_per_second": round(s["problems"] / wall, 2),
        "execution_rate": s["execution_rate"],
        "accuracy": s["accuracy"],
        "by_dataset": by_ds,
        "by_backend": s["latency_by_backend"],
        "timeouts": sum(1 for r in rows if r["status"] == "timeout"),
        "answered": sum(1 for r in rows if r["predicted"] is not None),
        "certified": sum(1 for r in rows if r["certificate"] and r["predicted"] is not None),
    }


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = [f"{r['workers']} worker(s)" for r in results] + ["Logic-LM\n(sequential)"]
    walls = [r["median_wall_seconds"] for r in results] + [LOGICLM_SECONDS]
    ax1.bar(labels, walls, color=["#4c72b0"] * len(results) + ["#999999"])
    for r_i, r in enumerate(results):
        ax1.scatter([r_i] * len(r["walls"]), r["walls"], color="black", s=10, zorder=3)
    ax1.axhline(TARGET_SECONDS, color="red", ls="--", label=f"target: {TARGET_SECONDS:g} s (2 workers)")
    for i, w in enumerate(walls):
        ax1.text(i, w, f"{w:.1f}s", ha="center", va="bottom")
    ax1.set_yscale("log")
    ax1.set_ylabel("wall seconds, 1,833 programs, one job (median; dots: runs)")
    ax1.set_title("Whole recorded set as one mixed job")
    ax1.legend()
    last = results[-1]["runs"][-1]
    names = list(last["by_dataset"])
    x = range(len(names))
    for k, (q, c) in enumerate([("p50_s", "#55a868"), ("p95_s", "#dd8452"), ("max_s", "#c44e52")]):
        ax2.bar(
            [i + 0.27 * (k - 1) for i in x],
            [last["by_dataset"][n]["latency"][q] for n in names],
            0.27,
            label=q.replace("_s", ""),
            color=c,
        )
    ax2.set_yscale("log")
    ax2.set_xticks(list(x), [n.split("/")[-1] for n in names])
    ax2.set_ylabel("solver seconds per program (log)")
    ax2.set_title(f"Latency per dataset ({results[-1]['workers']} workers)")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _print_table(results: list[dict]) -> None:
    last = {r["workers"]: r["runs"][-1] for r in results}
    print(
        f"\n{'dataset':28s} "
        + " ".join(f"{'w=' + str(w) + ' exec':>10s} {'acc':>6s} {'p50':>6s} {'p95':>6s} {'max':>6s}" for w in last)
    )
    for ds in next(iter(last.values()))["by_dataset"]:
        cells = []
        for run in last.values():
            d = run["by_dataset"][ds]
            lat = d["latency"]
            cells.append(
                f"{d['execution_rate']:10.1%} {d['accuracy']:6.1%} {lat['p50_s']:6.3f} {lat['p95_s']:6.3f} "
                f"{lat['max_s']:6.2f}"
            )
        print(f"{ds:28s} " + " ".join(cells))
    print("\nper backend (last run):")
    for b, lat in results[-1]["runs"][-1]["by_backend"].items():
        print(f"  {b:16s} n={lat['count']:<5d} p50={lat['p50_s']:.3f}s p95={lat['p95_s']:.3f}s max={lat['max_s']:.2f}s")


def copies(problems: list, k: int):
    """``k`` copies of the stream, one after the other, each problem under the id ``ID#copy`` (lazily)."""
    for c in range(k):
        for p in problems:
            yield dataclasses.replace(p, id=f"{p.id}#{c}")


def scale_child(k: int, workers: int, limits: Limits, root: Path) -> dict:
    """One size of the scale table, in this process: the job over ``k`` copies; its wall time and peak RSS."""
    problems = mixed_stream(root)
    with RaySolverPool(workers) as pool, tempfile.TemporaryDirectory() as tmp:
        list(pool.imap_unordered([SolveRequest(f"warm{i}", "smtlib2", "(check-sat)") for i in range(2 * workers)]))
        out = Path(tmp) / "all.parquet"
        cpu0, t0 = time.process_time(), time.perf_counter()
        run_solve(copies(problems, k), ResultStore(out), pool, limits=limits, progress=False)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows = answered = certified = correct = 0
        ids = set()
        for b in pq.ParquetFile(out).iter_batches(
            65_536, columns=["problem_id", "predicted", "certificate", "correct"]
        ):
            d = b.to_pydict()
            rows += len(d["problem_id"])
            ids.update(d["problem_id"])
            answered += sum(x is not None for x in d["predicted"])
            certified += sum(
                c is not None and x is not None for c, x in zip(d["certificate"], d["predicted"], strict=True)
            )
            correct += sum(bool(x) for x in d["correct"])
    return {
        "copies": k,
        "problems": k * len(problems),
        "rows": rows,
        "duplicated": rows - len(ids),
        "lost": k * len(problems) - len(ids),
        "wall_seconds": round(wall, 2),
        "driver_cpu_seconds": round(cpu, 2),
        "driver_peak_rss_mb": round(peak, 1),
        "answered": answered,
        "certified": certified,
        "correct_per_copy": correct / k,
        "load_after": os.getloadavg()[0],
    }


def main_scale(sizes: list[int], workers: int, timeout_s: float, data_dir: str | None) -> None:
    """The scale table: each size in a child process, the FOL model cache off; JSON and a plot."""
    env = {**os.environ, "SYMBOLKG_FOL_MODEL_CACHE": "0", "ARROW_DEFAULT_MEMORY_POOL": "system"}
    rows = []
    for k in sizes:
        cmd = [
            sys.executable,
            __file__,
            "--copies-child",
            str(k),
            "--workers",
            str(workers),
            "--timeout-s",
            str(timeout_s),
            *(["--data-dir", data_dir] if data_dir else []),
        ]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(
            f"{k}x: {r['problems']} problems, wall {r['wall_seconds']} s, "
            f"driver peak RSS {r['driver_peak_rss_mb']} MiB, "
            f"{r['certified']}/{r['answered']} certified, correct per copy {r['correct_per_copy']:.1f}, "
            f"lost {r['lost']}, duplicated {r['duplicated']}",
            flush=True,
        )
    doc = {
        "benchmark": "solver_scale",
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "workers": workers,
        "timeout_s": timeout_s,
        "command": "python benchmarks/solver_throughput.py --copies " + " ".join(map(str, sizes)),
        "rows": rows,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "solver_scale.json").write_text(json.dumps(doc, indent=2))
    plot_scale(rows, OUT / "solver_scale.png")
    print(f"wrote {OUT / 'solver_scale.json'} and {OUT / 'solver_scale.png'}")


def plot_scale(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    n = [r["problems"] for r in rows]
    ax1.loglog(n, [r["wall_seconds"] for r in rows], "o-", label="wall s (2 workers)")
    ax1.loglog(n, [r["driver_cpu_seconds"] for r in rows], "s-", label="driver CPU s")
    ax1.loglog(n, [rows[0]["wall_seconds"] * x / n[0] for x in n], ":", color="gray", label="linear from 1x")
    ax1.set_xlabel("problems (copies of the recorded set)")
    ax1.set_ylabel("seconds")
    ax1.set_title("solver stage: time")
    ax1.legend(fontsize=8)
    ax2.semilogx(n, [r["driver_peak_rss_mb"] for r in rows], "o-")
    for x, r in zip(n, rows, strict=True):
        ax2.annotate(
            f"{r['driver_peak_rss_mb']:.0f}",
            (x, r["driver_peak_rss_mb"]),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            fontsize=8,
        )
    ax2.set_ylim(bottom=0)
    ax2.set_xlabel("problems")
    ax2.set_ylabel("driver peak RSS (MiB)")
    ax2.set_title("solver stage: driver memory")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout-s", type=float, default=10.0)
    ap.add_argument("--data-dir")
    ap.add_argument(
        "--copies",
        type=int,
        nargs="+",
        metavar="K",
        help="instead: the scale table over K copies of the stream for each K (e.g. 1 10 100)",
    )
    ap.add_argument(
        "--keep-run",
        type=Path,
        metavar="PARQUET",
        help="copy the results of the last run with the most workers here (for `symbolkg verify`)",
    )
    ap.add_argument("--copies-child", type=int, help=argparse.SUPPRESS)  # one size of --copies, in its own process
    args = ap.parse_args()
    if args.copies_child:
        print(
            json.dumps(
                scale_child(
                    args.copies_child,
                    args.workers[0],
                    Limits(timeout_s=args.timeout_s),
                    default_data_dir(args.data_dir),
                )
            )
        )
        return
    if args.copies:
        main_scale(args.copies, 2 if args.workers == [1, 2] else args.workers[0], args.timeout_s, args.data_dir)
        return
    problems = mixed_stream(default_data_dir(args.data_dir))
    limits = Limits(timeout_s=args.timeout_s)
    runs: dict[int, list[dict]] = {w: [] for w in args.workers}
    for i in range(args.repeats):
        for w in args.workers:  # one pool at a time: on 2 cores, two pools' actors would not all get a CPU
            with RaySolverPool(w) as pool:  # warm: processes started, imports done, as a long-lived pool is
                list(pool.imap_unordered([SolveRequest(f"warm{k}", "smtlib2", "(check-sat)") for k in range(2 * w)]))
                last = i == args.repeats - 1 and w == max(args.workers)
                runs[w].append(run_once(problems, pool, limits, args.keep_run if last else None))
            r = runs[w][-1]
            print(
                f"run {i + 1}, {w} worker(s): wall {r['wall_seconds']:.1f} s, exec {r['execution_rate']:.1%}, "
                f"acc {r['accuracy']:.1%}, {r['certified']}/{r['answered']} answers certified, "
                f"timeouts {r['timeouts']}, load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    results = [
        {
            "workers": w,
            "walls": [r["wall_seconds"] for r in rs],
            "median_wall_seconds": statistics.median(r["wall_seconds"] for r in rs),
            "runs": rs,
        }
        for w, rs in runs.items()
    ]
    OUT.mkdir(exist_ok=True)
    doc = {
        "benchmark": "solver_throughput",
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "load_after": os.getloadavg(),
        "timeout_s": args.timeout_s,
        "problems": len(problems),
        "logiclm_seconds": LOGICLM_SECONDS,
        "target_seconds": TARGET_SECONDS,
        "results": results,
    }
    (OUT / "solver_throughput.json").write_text(json.dumps(doc, indent=2))
    plot(results, OUT / "solver_throughput.png")
    _print_table(results)
    for r in results:
        print(f"median wall, {r['workers']} worker(s): {r['median_wall_seconds']:.1f} s (runs: {r['walls']})")
    print(f"wrote {OUT / 'solver_throughput.json'} and {OUT / 'solver_throughput.png'}")


if __name__ == "__main__":
    main()
