"""Minimal supports on LogicGraph: exactness against the reference proofs, and time per instance.

For every instance of the Small and Medium tiers: enumerate the minimal supports
(`symbolkg.solvers.logicgraph.minimal_support.minimal_supports`, ``recheck=False``), timed alone, ``--repeat``
times (the instance's time is the median; wall clock and process CPU time); then recheck every set
with Z3 (`recheck_supports`) and verify the completeness certificate (`check_certificate`), each
timed once; compare the sets with the reference proofs' premise sets.

    python benchmarks/logicgraph_supports.py [--repeat 3] [--tiers small medium] [--data-dir DIR]

Writes benchmarks/out/logicgraph_supports.json and benchmarks/out/logicgraph_supports.png.
Target (the issue): p95 enumeration time under 10 ms per instance on both tiers, recall 100 %,
no extra set, complete on every instance.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from symbolkg.jobs.datasets import dataset_path
from symbolkg.solvers.logicgraph.instances import load_instances
from symbolkg.solvers.logicgraph.minimal_support import check_certificate, minimal_supports, recheck_supports
from symbolkg.solvers.logicgraph.propositional import parse

OUT = Path(__file__).resolve().parent / "out"
TARGET_P95_MS = 10.0


def quantile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1)))]


def run_tier(tier: str, data_dir: str | None, repeat: int) -> dict:
    rows = []
    for inst in load_instances(dataset_path(f"logicgraph/{tier}", data_dir)):
        premises = {k: p.formula for k, p in inst.premises.items()}
        wall, cpu = [], []
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            result = minimal_supports(premises, inst.goal, recheck=False)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        t0 = time.perf_counter()
        recheck_supports(premises, inst.goal, result.supports)
        t1 = time.perf_counter()
        check = check_certificate(premises, inst.goal, result)
        t2 = time.perf_counter()
        found, reference = set(result.supports), inst.reference_supports()
        rows.append({
            "id": inst.id, "premises": len(premises), "supports": len(result.supports), "complete": result.complete,
            "missing": sum(s not in found for s in reference), "extra": len(found - set(reference)),
            "ms": round(statistics.median(wall) * 1000, 4), "cpu_ms": round(statistics.median(cpu) * 1000, 4),
            "recheck_ms": round((t1 - t0) * 1000, 4), "certificate_ms": round((t2 - t1) * 1000, 4),
            "solver_calls": result.solver_calls, "blocks": check.blocks, "countermodels": check.transversals,
        })
    gt = sum(r["supports"] - r["extra"] + r["missing"] for r in rows)

    def stats(key: str) -> dict[str, float]:
        v = sorted(r[key] for r in rows)
        return {"p50": round(quantile(v, 0.5), 3), "p95": round(quantile(v, 0.95), 3), "max": round(v[-1], 3)}

    return {
        "instances": len(rows), "gt_sets": gt, "found_sets": sum(r["supports"] for r in rows),
        "recall": (gt - sum(r["missing"] for r in rows)) / gt, "extra": sum(r["extra"] for r in rows),
        "complete": sum(r["complete"] for r in rows), "enumerate_ms": stats("ms"), "enumerate_cpu_ms": stats("cpu_ms"),
        "recheck_ms": stats("recheck_ms"), "certificate_ms": stats("certificate_ms"),
        "solver_calls": stats("solver_calls"), "countermodels": stats("countermodels"), "blocks": stats("blocks"),
        "rows": rows,
    }


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for (tier, r), color in zip(results.items(), ("tab:blue", "tab:green", "tab:purple", "tab:brown")):
        for key, style in (("ms", "-"), ("cpu_ms", ":")):
            ms = sorted(row[key] for row in r["rows"])
            ax1.plot(ms, [(i + 1) / len(ms) for i in range(len(ms))], style, color=color,
                     label=f"{tier} ({'wall' if key == 'ms' else 'CPU'})")
        ms = sorted(row["recheck_ms"] for row in r["rows"])
        ax2.plot(ms, [(i + 1) / len(ms) for i in range(len(ms))], color=color, label=f"{tier}: Z3 recheck")
        ms = sorted(row["certificate_ms"] for row in r["rows"])
        ax2.plot(ms, [(i + 1) / len(ms) for i in range(len(ms))], "--", color=color, label=f"{tier}: certificate check")
    ax1.axvline(TARGET_P95_MS, color="red", linestyle="--", label="target p95 (10 ms)")
    ax1.axhline(0.95, color="grey", linewidth=0.5)
    for ax, title in ((ax1, "Enumeration time per instance"), (ax2, "Independent checks per instance")):
        ax.set_xscale("log")
        ax.set_xlabel("ms, log")
        ax.set_ylabel("fraction of instances")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="enumerations per instance; the median is reported")
    ap.add_argument("--tiers", nargs="+", default=["small", "medium"])
    ap.add_argument("--data-dir")
    args = ap.parse_args()
    # warm-up outside the measurement (imports, Z3's first context)
    warm = {"r": parse("A -> G"), "a": parse("A")}
    minimal_supports(warm, parse("G"), recheck=True)
    load_before = os.getloadavg()
    results = {tier: run_tier(tier, args.data_dir, args.repeat) for tier in args.tiers}
    load_after = os.getloadavg()
    print(f"\n{'tier':8s} {'inst':>5s} {'gt sets':>7s} {'found':>6s} {'recall':>7s} {'extra':>5s} {'complete':>8s}"
          f" | {'enum p50':>8s} {'p95':>6s} {'max':>6s} | {'cpu p50':>7s} {'p95':>6s} | {'recheck p50':>11s} {'p95':>6s}"
          f" | {'cert p50':>8s} {'p95':>6s} | {'calls p95':>9s} {'cm max':>6s}")
    for tier, r in results.items():
        e, c, z, k = r["enumerate_ms"], r["enumerate_cpu_ms"], r["recheck_ms"], r["certificate_ms"]
        print(f"{tier:8s} {r['instances']:5d} {r['gt_sets']:7d} {r['found_sets']:6d} {r['recall']:7.1%} {r['extra']:5d} {r['complete']:8d}"
              f" | {e['p50']:8.2f} {e['p95']:6.2f} {e['max']:6.1f} | {c['p50']:7.2f} {c['p95']:6.2f} | {z['p50']:11.2f} {z['p95']:6.2f}"
              f" | {k['p50']:8.2f} {k['p95']:6.2f} | {r['solver_calls']['p95']:9.0f} {r['countermodels']['max']:6.0f}")
    print(f"load average (1/5/15 min) before: {load_before}, after: {load_after}")
    OUT.mkdir(exist_ok=True)
    doc = {"benchmark": "logicgraph_supports", "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
           "cpus": os.cpu_count(), "python": platform.python_version(), "repeat": args.repeat,
           "load_before": load_before, "load_after": load_after, "target_p95_ms": TARGET_P95_MS, "tiers": results}
    (OUT / "logicgraph_supports.json").write_text(json.dumps(doc, indent=1))
    plot(results, OUT / "logicgraph_supports.png")
    print(f"\nwrote {OUT / 'logicgraph_supports.json'} and {OUT / 'logicgraph_supports.png'}")


if __name__ == "__main__":
    main()
