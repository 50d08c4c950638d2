"""Minimal supports on LogicGraph: the labelled elimination against the reference enumerator, and scale.

Per tier (Small and Medium from the data folder; ``large_8_12`` and ``large_15_19`` generated with
``symbolkg logicgraph generate``'s tiers at ``--seed``, written under benchmarks/out/data/ and reused):

* **before**: the previous method, dualize-and-advance over blocks
  (`symbolkg.solvers.logicgraph.dualize.reference_supports`), timed alone;
* **after**: labelled Davis-Putnam elimination (`symbolkg.solvers.logicgraph.elimination.minimal_supports`,
  ``recheck=False``), timed alone, then its certificate re-checked by the independent checker
  (`symbolkg.solvers.logicgraph.elimination_check.check_certificate`) and every set by Z3
  (`symbolkg.solvers.logicgraph.support_check.recheck_supports`);
* agreement: the elimination's sets against the reference enumerator's and the instance's reference
  proofs (recall, extra).

Each enumeration runs ``--repeat`` times (the instance's time is the median), with the garbage
collector off inside the timed call. Then the scale table: one generated ``large_8_12`` instance
copied ``k`` times with its atoms renamed apart (sharing only ``G``), so premises and proofs grow
``k``-fold, for k = 1, 10, 100: CPU time and peak memory (tracemalloc, a separate call) of the elimination, its checker,
and the reference enumerator at 1x (beyond, its transversals multiply across the copies).

    python benchmarks/logicgraph_supports.py [--repeat 3] [--generated 100] [--seed 7]

Writes benchmarks/out/logicgraph_supports.json and benchmarks/out/logicgraph_supports.png.
Target (issue 29): p95 <= 10 ms per instance on every tier, recall 100 %, no extra set, complete
and certified on every instance.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from symbolkg.jobs.datasets.registry import dataset_path
from symbolkg.solvers.logicgraph.dualize import reference_supports
from symbolkg.solvers.logicgraph.elimination import minimal_supports
from symbolkg.solvers.logicgraph.elimination_check import check_certificate
from symbolkg.solvers.logicgraph.generate import generate
from symbolkg.solvers.logicgraph.instances import Instance, load_instances
from symbolkg.solvers.logicgraph.propositional import Atom, Formula, parse
from symbolkg.solvers.logicgraph.support_check import recheck_supports
from symbolkg.solvers.logicgraph.wording import rename

OUT = Path(__file__).resolve().parent / "out"
TARGET_P95_MS = 10.0
GENERATED_TIERS = ("large_8_12", "large_15_19")


def quantile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1)))]


def timed(fn: Callable[[], Any], repeat: int) -> tuple[Any, float, float]:
    """The result and the median wall and CPU times in ms of ``repeat`` calls, collector off inside each.

    CPU time (of this process) is reported beside wall time because the machine is shared: under
    load the wall time includes waiting for a core.
    """
    wall, cpu = [], []
    result = None
    for _ in range(repeat):
        gc.disable()
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            result = fn()
        finally:
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            gc.enable()
    return result, statistics.median(wall), statistics.median(cpu)


def tier_instances(tier: str, data_dir: str | None, count: int, seed: int) -> list[Instance]:
    if tier not in GENERATED_TIERS:
        return list(load_instances(dataset_path(f"logicgraph/{tier}", data_dir)))
    path = OUT / "data" / "logicgraph" / f"{tier}_s{seed}_{count}.jsonl"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        lines = [json.dumps(g.record, ensure_ascii=False) + "\n" for g in generate(tier, count, seed)]
        path.write_text("".join(lines), encoding="utf-8")
        print(f"generated {count} {tier} instances (seed {seed}) in {time.perf_counter() - t0:.1f}s -> {path}")
    return list(load_instances(path))


def measure_instance(inst: Instance, repeat: int) -> dict[str, Any]:
    premises = {k: p.formula for k, p in inst.premises.items()}
    before, before_ms, before_cpu = timed(lambda: reference_supports(premises, inst.goal), repeat)
    after, after_ms, after_cpu = timed(lambda: minimal_supports(premises, inst.goal, recheck=False), repeat)
    check, check_ms, check_cpu = timed(lambda: check_certificate(premises, inst.goal, after), repeat)
    _, recheck_ms, _ = timed(lambda: recheck_supports(premises, inst.goal, after.supports), 1)
    found, old, reference = set(after.supports), set(before.supports), set(inst.reference_supports())
    return {
        "id": inst.id,
        "premises": len(premises),
        "proofs": len(inst.proofs),
        "supports": len(found),
        "complete": after.complete,
        "before_complete": before.complete,
        "missing": len(reference - found),
        "extra": len(found - reference),
        "missing_vs_before": len(old - found),
        "extra_vs_before": len(found - old),
        "before_ms": round(before_ms, 4),
        "ms": round(after_ms, 4),
        "check_ms": round(check_ms, 4),
        "before_cpu_ms": round(before_cpu, 4),
        "cpu_ms": round(after_cpu, 4),
        "check_cpu_ms": round(check_cpu, 4),
        "recheck_ms": round(recheck_ms, 4),
        "pairs": after.solver_calls,
        "clauses": check.clauses,
        "certificate_size": after.certificate.size(),
    }


def run_tier(tier: str, data_dir: str | None, repeat: int, count: int, seed: int) -> dict[str, Any]:
    rows = [measure_instance(inst, repeat) for inst in tier_instances(tier, data_dir, count, seed)]
    gt = sum(r["supports"] - r["extra"] + r["missing"] for r in rows)

    def stats(key: str) -> dict[str, float]:
        v = sorted(r[key] for r in rows)
        return {"p50": round(quantile(v, 0.5), 3), "p95": round(quantile(v, 0.95), 3), "max": round(v[-1], 3)}

    return {
        "instances": len(rows),
        "gt_sets": gt,
        "found_sets": sum(r["supports"] for r in rows),
        "recall": (gt - sum(r["missing"] for r in rows)) / gt if gt else 1.0,
        "extra": sum(r["extra"] for r in rows),
        "agree_with_before": sum(not r["missing_vs_before"] and not r["extra_vs_before"] for r in rows),
        "complete": sum(r["complete"] for r in rows),
        "premises": stats("premises"),
        "proofs": stats("proofs"),
        "before_ms": stats("before_ms"),
        "after_ms": stats("ms"),
        "check_ms": stats("check_ms"),
        "before_cpu_ms": stats("before_cpu_ms"),
        "after_cpu_ms": stats("cpu_ms"),
        "check_cpu_ms": stats("check_cpu_ms"),
        "recheck_ms": stats("recheck_ms"),
        "certificate_size": stats("certificate_size"),
        "rows": rows,
    }


def scaled(inst: Instance, k: int) -> tuple[dict[str, Formula], Formula]:
    """``k`` copies of the instance's premises, atoms renamed apart per copy except the goal's."""
    goal_atoms = {inst.goal.name} if isinstance(inst.goal, Atom) else set()
    premises: dict[str, Formula] = {}
    for c in range(k):
        names = {a: f"{a}_{c}" for a in inst.atoms() if a not in goal_atoms}
        for pid, p in inst.premises.items():
            premises[f"{pid}_{c}"] = rename(p.formula, names)
    return premises, inst.goal


def peak(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """Result, CPU ms (collector off, untraced) and peak traced memory in MiB (a second, traced call)."""
    gc.collect()
    result, _, cpu = timed(fn, 1)
    tracemalloc.start()
    try:
        fn()
        _, top = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, cpu, top / 2**20


def scale_table(inst: Instance, factors: list[int], before_budget_s: float) -> list[dict[str, Any]]:
    out = []
    for k in factors:
        premises, goal = scaled(inst, k)
        after, ms, mib = peak(partial(minimal_supports, premises, goal, recheck=False))
        check, check_ms, check_mib = peak(partial(check_certificate, premises, goal, after))
        before, before_ms, before_mib = None, 0.0, 0.0
        if k == 1:  # beyond 1x its minimal transversals multiply across the copies (memory, not just time)
            before, before_ms, before_mib = peak(partial(reference_supports, premises, goal, budget_s=before_budget_s))
        out.append(
            {
                "factor": k,
                "premises": len(premises),
                "supports": len(after.supports),
                "complete": after.complete,
                "ms": round(ms, 2),
                "peak_mib": round(mib, 2),
                "check_ms": round(check_ms, 2),
                "check_peak_mib": round(check_mib, 2),
                "certificate_size": after.certificate.size(),
                "before_status": before.status if before else "not run",
                "before_supports": len(before.supports) if before else None,
                "before_ms": round(before_ms, 2),
                "before_peak_mib": round(before_mib, 2),
            }
        )
        print(
            f"scale x{k}: {len(premises)} premises, {len(after.supports)} supports; elimination {ms:.1f} ms "
            f"{mib:.1f} MiB, check {check_ms:.1f} ms; before: {before.status if before else 'not run'} "
            f"{before_ms:.0f} ms"
        )
    return out


def plot(results: dict[str, Any], scale: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(17, 4.8))
    colors = ("tab:blue", "tab:green", "tab:purple", "tab:brown")
    for (tier, r), color in zip(results.items(), colors, strict=False):
        for key, style, what in (("before_ms", ":", "before (dualize)"), ("ms", "-", "after (elimination)")):
            ms = sorted(row[key] for row in r["rows"])
            ax1.plot(ms, [(i + 1) / len(ms) for i in range(len(ms))], style, color=color, label=f"{tier}: {what}")
        ms = sorted(row["check_ms"] for row in r["rows"])
        ax2.plot(ms, [(i + 1) / len(ms) for i in range(len(ms))], color=color, label=f"{tier}: certificate check")
        ms = sorted(row["recheck_ms"] for row in r["rows"])
        ax2.plot(ms, [(i + 1) / len(ms) for i in range(len(ms))], "--", color=color, label=f"{tier}: Z3 recheck")
    ax1.axvline(TARGET_P95_MS, color="red", linestyle="--", label="target p95 (10 ms)")
    for ax in (ax1, ax2):
        ax.axhline(0.95, color="grey", linewidth=0.5)
        ax.set_xscale("log")
        ax.set_xlabel("ms per instance, log")
        ax.set_ylabel("fraction of instances")
        ax.legend(fontsize=7)
    ax1.set_title("Enumeration time per instance")
    ax2.set_title("Independent checks per instance")
    premises = [s["premises"] for s in scale]
    ax3.plot(premises, [s["ms"] for s in scale], "o-", label="elimination (ms)")
    ax3.plot(premises, [s["check_ms"] for s in scale], "s-", label="certificate check (ms)")
    ax3.plot(premises, [s["peak_mib"] for s in scale], "^--", label="elimination peak memory (MiB)")
    ax3.set_xscale("log")
    ax3.set_yscale("log")
    ax3.set_xlabel("premises (1x, 10x, 100x one large_8_12 instance)")
    ax3.set_title("Scale")
    ax3.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def print_table(results: dict[str, Any]) -> None:
    print(
        f"\n{'tier':12s} {'inst':>5s} {'gt sets':>7s} {'recall':>7s} {'extra':>5s} {'=before':>7s} {'complete':>8s}"
        f" | {'before p50':>10s} {'p95':>6s} {'max':>7s} | {'after p50':>9s} {'p95':>6s} {'max':>6s}"
        f" | {'check p50':>9s} {'p95':>6s} | {'Z3 p95':>6s} | CPU p95: {'before':>6s} {'after':>6s} {'check':>6s}"
    )
    for tier, r in results.items():
        b, a, c, z = r["before_ms"], r["after_ms"], r["check_ms"], r["recheck_ms"]
        print(
            f"{tier:12s} {r['instances']:5d} {r['gt_sets']:7d} {r['recall']:7.1%} {r['extra']:5d} "
            f"{r['agree_with_before']:7d} {r['complete']:8d} | {b['p50']:10.2f} {b['p95']:6.2f} {b['max']:7.1f} | "
            f"{a['p50']:9.2f} {a['p95']:6.2f} {a['max']:6.1f} | {c['p50']:9.2f} {c['p95']:6.2f} | {z['p95']:6.2f} | "
            f"         {r['before_cpu_ms']['p95']:6.2f} {r['after_cpu_ms']['p95']:6.2f} {r['check_cpu_ms']['p95']:6.2f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="enumerations per instance; the median is reported")
    ap.add_argument("--tiers", nargs="+", default=["small", "medium", *GENERATED_TIERS])
    ap.add_argument("--generated", type=int, default=100, help="instances per generated tier (default 100)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--scale", type=int, nargs="+", default=[1, 10, 100], help="scale factors (default 1 10 100)")
    ap.add_argument(
        "--before-budget-s",
        type=float,
        default=10.0,
        help="budget of the reference enumerator at 1x in the scale table",
    )
    ap.add_argument("--data-dir")
    args = ap.parse_args()
    minimal_supports({"r": parse("A -> G"), "a": parse("A")}, parse("G"), recheck=True)  # imports, Z3's first context
    load_before = os.getloadavg()
    results = {tier: run_tier(tier, args.data_dir, args.repeat, args.generated, args.seed) for tier in args.tiers}
    print_table(results)
    base = tier_instances("large_8_12", args.data_dir, args.generated, args.seed)[0]
    scale = scale_table(base, args.scale, args.before_budget_s)
    load_after = os.getloadavg()
    print(f"load average (1/5/15 min) before: {load_before}, after: {load_after}")
    OUT.mkdir(exist_ok=True)
    doc = {
        "benchmark": "logicgraph_supports",
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "repeat": args.repeat,
        "seed": args.seed,
        "load_before": load_before,
        "load_after": load_after,
        "target_p95_ms": TARGET_P95_MS,
        "tiers": results,
        "scale": {"instance": base.id, "rows": scale},
    }
    (OUT / "logicgraph_supports.json").write_text(json.dumps(doc, indent=1))
    plot(results, scale, OUT / "logicgraph_supports.png")
    print(f"\nwrote {OUT / 'logicgraph_supports.json'} and {OUT / 'logicgraph_supports.png'}")


if __name__ == "__main__":
    main()
