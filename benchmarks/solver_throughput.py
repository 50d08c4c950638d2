"""Solver throughput: all five Logic-LM GPT-4 program sets through the Ray solver pool, 1 vs 2 workers.

Runs the real batch job (`symbolkg.jobs.pipeline.solve.run_solve`: Ray actors, worker processes,
results Parquet) once per worker count, side by side in one process, and
reports per dataset and per backend: problems/s, p50/p95/max solver latency,
execution rate and accuracy, plus the wall time of the whole set.

    python benchmarks/solver_throughput.py [--workers 1 2] [--timeout-s 10] [--data-dir DIR]

Writes benchmarks/out/solver_throughput.json and benchmarks/out/solver_throughput.png.
Reference: Logic-LM's own sequential solvers took 134 s for the 1,833 programs on
this kind of machine; the target is at most a third of that (44.7 s).
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from symbolkg.jobs.datasets.files import default_data_dir
from symbolkg.jobs.datasets.registry import load_problems
from symbolkg.jobs.report import summarize
from symbolkg.jobs.pipeline.solve import run_solve
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.outcomes import Limits

DATASETS = ["ProntoQA", "ProofWriter", "FOLIO", "LogicalDeduction", "AR-LSAT"]
LOGICLM_SECONDS = 134.0
OUT = Path(__file__).resolve().parent / "out"


def run_once(problem_sets: dict[str, list], workers: int, limits: Limits) -> dict:
    """One pool; each dataset is one batch job, back to back; the whole set's wall time is their sum."""
    from symbolkg.actors.solver_pool import RaySolverPool

    pool = RaySolverPool(workers)
    all_rows, by_ds, total_wall = [], {}, 0.0
    try:
        # Warm the workers (process start, imports) outside the timed region, like a long-lived pool.
        from symbolkg.solvers.outcomes import SolveRequest

        warm = [SolveRequest(f"warm{i}", "smtlib2", "(check-sat)") for i in range(2 * workers)]
        list(pool.imap_unordered(warm))
        with tempfile.TemporaryDirectory() as tmp:
            for name, problems in problem_sets.items():
                out = Path(tmp) / f"{name}.parquet"
                t0 = time.perf_counter()
                run_solve(problems, ResultStore(out), pool, limits=limits, progress=True)
                wall = time.perf_counter() - t0
                total_wall += wall
                table, meta = read_run(out)
                rows = table.to_pylist()
                all_rows += rows
                s = summarize(table, {**meta, "wall_seconds": wall})
                ds = rows[0]["dataset"]
                by_ds[ds] = {
                    "problems": s["problems"], "wall_seconds": round(wall, 3),
                    "problems_per_second": round(s["problems"] / wall, 2),
                    "execution_rate": s["execution_rate"], "accuracy": s["accuracy"],
                    "latency": s["latency"], "errors_by_kind": s["errors_by_kind"],
                    "timeouts": sum(1 for r in rows if r["status"] == "timeout"),
                }
    finally:
        pool.close()
    import pyarrow as pa

    from symbolkg.jobs.pipeline.rows import RESULT_SCHEMA

    s = summarize(pa.Table.from_pylist(all_rows, schema=RESULT_SCHEMA), {"wall_seconds": total_wall})
    return {
        "workers": workers, "wall_seconds": round(total_wall, 3), "problems": s["problems"],
        "problems_per_second": round(s["problems"] / total_wall, 2), "execution_rate": s["execution_rate"],
        "accuracy": s["accuracy"], "by_dataset": by_ds, "by_backend": s["latency_by_backend"],
        "errors_by_kind": s["errors_by_kind"], "timeouts": sum(1 for r in all_rows if r["status"] == "timeout"),
    }


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels = [f"{r['workers']} worker(s)" for r in results] + ["Logic-LM\n(sequential)"]
    walls = [r["wall_seconds"] for r in results] + [LOGICLM_SECONDS]
    ax1.bar(labels, walls, color=["#4c72b0"] * len(results) + ["#999999"])
    ax1.axhline(LOGICLM_SECONDS / 3, color="red", ls="--", label="target: 1/3 of Logic-LM")
    for i, w in enumerate(walls):
        ax1.text(i, w, f"{w:.1f}s", ha="center", va="bottom")
    ax1.set_ylabel("wall seconds, 1,833 programs")
    ax1.set_title("Whole set")
    ax1.legend()
    last = results[-1]
    names = list(last["by_dataset"])
    x = range(len(names))
    for k, (q, c) in enumerate([("p50_s", "#55a868"), ("p95_s", "#dd8452"), ("max_s", "#c44e52")]):
        ax2.bar([i + 0.27 * (k - 1) for i in x], [last["by_dataset"][n]["latency"][q] for n in names], 0.27,
                label=q.replace("_s", ""), color=c)
    ax2.set_yscale("log")
    ax2.set_xticks(list(x), [n.split("/")[-1] for n in names])
    ax2.set_ylabel("solver seconds per program (log)")
    ax2.set_title(f"Latency per dataset ({last['workers']} workers)")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--timeout-s", type=float, default=10.0)
    ap.add_argument("--data-dir")
    args = ap.parse_args()
    root = default_data_dir(args.data_dir)
    problem_sets = {ds: load_problems(str(root / "logiclm" / "programs" / f"{ds}_dev_gpt-4.json"), root).problems
                    for ds in DATASETS}
    n = sum(len(p) for p in problem_sets.values())
    limits = Limits(timeout_s=args.timeout_s)
    results = []
    for w in args.workers:
        print(f"== {w} worker(s), {n} problems")
        results.append(run_once(problem_sets, w, limits))
        r = results[-1]
        print(f"   wall {r['wall_seconds']:.1f} s, {r['problems_per_second']:.1f} problems/s, "
              f"exec {r['execution_rate']:.1%}, acc {r['accuracy']:.1%}, timeouts {r['timeouts']}")
    OUT.mkdir(exist_ok=True)
    doc = {
        "benchmark": "solver_throughput", "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
        "cpus": __import__("os").cpu_count(), "timeout_s": args.timeout_s, "logiclm_seconds": LOGICLM_SECONDS,
        "target_seconds": round(LOGICLM_SECONDS / 3, 1), "runs": results,
    }
    (OUT / "solver_throughput.json").write_text(json.dumps(doc, indent=2))
    plot(results, OUT / "solver_throughput.png")
    print(f"\n{'dataset':28s} " + " ".join(f"{'w=' + str(r['workers']) + ' p/s':>9s} {'p50':>6s} {'p95':>6s} {'max':>6s}" for r in results))
    for ds in results[0]["by_dataset"]:
        cells = []
        for r in results:
            d = r["by_dataset"][ds]
            lat = d["latency"]
            cells.append(f"{d['problems_per_second']:9.1f} {lat['p50_s']:6.3f} {lat['p95_s']:6.3f} {lat['max_s']:6.2f}")
        print(f"{ds:28s} " + " ".join(cells))
    print("\nper backend (last run):")
    for b, lat in results[-1]["by_backend"].items():
        print(f"  {b:16s} n={lat['count']:<5d} p50={lat['p50_s']:.3f}s p95={lat['p95_s']:.3f}s max={lat['max_s']:.2f}s")
    print(f"\nwrote {OUT / 'solver_throughput.json'} and {OUT / 'solver_throughput.png'}")


if __name__ == "__main__":
    main()
