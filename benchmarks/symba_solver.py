"""SymBa backward chainer on the gold programs: correctness and per-record time, in-process.

For each of the 1,000 records of ProofWriter (depth 5), Birds-Electricity, ParaRules and
CLUTRR, builds the gold program (the record's statements, the CLUTRR family rules where
``world_model`` names them, and ``?- <goal>.``), runs `symbolkg.solvers.symba.engine.solve`
(parse + tabled proof + proof tree + JSON, the solver worker's entry point) and compares
"proved" with the record's label; it also times `prove` alone on the parsed program (the
"prove" columns: CLUTRR's time is mostly parsing its 39 pooled family rules, ~80 clauses). Records
with an empty program are closed-world negatives (true for ``not`` goals). Each record runs
``--repeat`` times; its time is the median.

    python benchmarks/symba_solver.py [--repeat 3] [--timeout-s 10] [--data-dir DIR]

Writes benchmarks/out/symba_solver.json and benchmarks/out/symba_solver.png.
Reference: SymBa's own solver on proofwriter_dep5 took 6.7 / 17.7 ms p50 / p95 per record,
10.6 s at most, and did not terminate on 3 records (23, 88, 243: left-recursive rules).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import time
from pathlib import Path

from symbolkg.jobs.datasets.files import default_data_dir
from symbolkg.solvers.outcomes import Limits, Status
from symbolkg.solvers.symba import engine as symba

SETS = ["proofwriter_dep5", "birdselectricity", "pararules", "clutrr"]
SYMBA_REFERENCE_MS = {"proofwriter_dep5": {"p50": 6.7, "p95": 17.7, "max": 10_600.0, "non_terminating": 3}}
OUT = Path(__file__).resolve().parent / "out"


def gold_program(record: dict, world: dict[str, list[str]]) -> str:
    lines = [s["statement"] for s in record["program"] if s["statement"].strip()]
    for name in record["world_model"]:
        lines += world[name]
    return "\n".join(lines + [f"?- {record['goal']}."]) + "\n"


def quantile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1)))]


def run_set(records: list[dict], world: dict, limits: Limits, repeat: int) -> dict:
    rows = []
    for rec in records:
        text = gold_program(rec, world)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            out = symba.solve(text, limits)
            times.append(time.perf_counter() - t0)
        program = symba.parse(text)
        prove_times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            symba.prove(program, symba.Budget(timeout_s=limits.timeout_s))
            prove_times.append(time.perf_counter() - t0)
        proof = json.loads(out.proof) if out.proof else {}
        proved = out.status == Status.PROVED
        rows.append(
            {
                "id": rec["id"],
                "goal": rec["goal"],
                "label": rec["label"],
                "proved": proved,
                "correct": proved == rec["label"],
                "status": out.status.value,
                "kind": proof.get("kind"),
                "steps": proof.get("steps"),
                "ms": round(statistics.median(times) * 1000, 4),
                "prove_ms": round(statistics.median(prove_times) * 1000, 4),
                "has_program": bool(rec["program"]),
            }
        )
    ms = sorted(r["ms"] for r in rows)
    prove_ms = sorted(r["prove_ms"] for r in rows)
    return {
        "records": len(rows),
        "with_program": sum(r["has_program"] for r in rows),
        "correct": sum(r["correct"] for r in rows),
        "p50_ms": round(quantile(ms, 0.5), 3),
        "p95_ms": round(quantile(ms, 0.95), 3),
        "max_ms": round(ms[-1], 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "total_s": round(sum(ms) / 1000, 3),
        "prove_p50_ms": round(quantile(prove_ms, 0.5), 3),
        "prove_p95_ms": round(quantile(prove_ms, 0.95), 3),
        "prove_max_ms": round(prove_ms[-1], 3),
        "max_steps": max(r["steps"] or 0 for r in rows),
        "kinds": dict(collections.Counter(r["kind"] for r in rows)),
        "wrong": [{"id": r["id"], "goal": r["goal"], "label": r["label"]} for r in rows if not r["correct"]],
        "rows": rows,
    }


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = list(results)
    data = [[r["ms"] for r in results[n]["rows"]] for n in names]
    ax1.boxplot(data, whis=(5, 95), showfliers=True, flierprops={"markersize": 3})
    ax1.set_xticks(range(1, len(names) + 1), [n.replace("_dep5", "") for n in names])
    ax1.set_yscale("log")
    ax1.set_ylabel("ms per record (solve: parse + proof + tree), log")
    ref = SYMBA_REFERENCE_MS["proofwriter_dep5"]
    for q, style in (("p50", "-"), ("p95", "--")):
        ax1.hlines(ref[q], 0.6, 1.4, colors="red", linestyles=style, zorder=3, label=f"SymBa's solver, proofwriter {q}")
    ax1.set_ylim(top=max(ref["p95"], max(max(d) for d in data)) * 2)
    ax1.set_title("Per-record time (box: p25-p75, whiskers p5-p95)")
    ax1.legend(loc="center right", fontsize=8)
    for name in names:
        ms = sorted(r["ms"] for r in results[name]["rows"])
        ax2.plot(
            ms,
            [(i + 1) / len(ms) for i in range(len(ms))],
            label=f"{name} ({results[name]['correct']}/{results[name]['records']} correct)",
        )
    ax2.set_xscale("log")
    ax2.set_xlabel("ms per record, log")
    ax2.set_ylabel("fraction of records")
    ax2.set_title("Cumulative distribution")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per record; the median is reported")
    ap.add_argument("--timeout-s", type=float, default=10.0)
    ap.add_argument("--data-dir")
    args = ap.parse_args()
    root = default_data_dir(args.data_dir) / "symba"
    world_sets = json.loads((root / "clutrr" / "world_data.json").read_text())
    world = {w["name"]: [s["statement"] for s in w["statements"]] for w in world_sets}
    limits = Limits(timeout_s=args.timeout_s)
    # warm-up outside the measurement (imports, first-call costs)
    symba.solve("p(a).\n?- p(a).\n", limits)
    results = {}
    for name in SETS:
        records = json.loads((root / name / "test_data.json").read_text())
        results[name] = run_set(records, world, limits, args.repeat)
    print(
        f"\n{'set':18s} {'records':>7s} {'correct':>8s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s} {'total s':>8s}"
        f" | {'prove p50':>9s} {'p95':>6s} {'max':>6s}  kinds"
    )
    for name, r in results.items():
        print(
            f"{name:18s} {r['records']:7d} {r['correct']:8d} {r['p50_ms']:8.2f} {r['p95_ms']:8.2f} {r['max_ms']:8.2f} "
            f"{r['total_s']:8.2f} | {r['prove_p50_ms']:9.2f} {r['prove_p95_ms']:6.2f} {r['prove_max_ms']:6.2f}  "
            f"{r['kinds']}"
        )
    all_ms = sorted(row["ms"] for r in results.values() for row in r["rows"])
    total = {
        "records": len(all_ms),
        "correct": sum(r["correct"] for r in results.values()),
        "p50_ms": round(quantile(all_ms, 0.5), 3),
        "p95_ms": round(quantile(all_ms, 0.95), 3),
        "max_ms": round(all_ms[-1], 3),
        "total_s": round(sum(all_ms) / 1000, 3),
    }
    print(
        f"{'all':18s} {total['records']:7d} {total['correct']:8d} {total['p50_ms']:8.2f} {total['p95_ms']:8.2f} "
        f"{total['max_ms']:8.2f} {total['total_s']:8.2f}"
    )
    pw = results["proofwriter_dep5"]["rows"]
    print(
        "ProofWriter 23, 88, 243 (SymBa's solver never ends on them): "
        + ", ".join(f"{r['id']}: {r['kind']} {r['ms']:.2f} ms" for r in pw if r["id"] in (23, 88, 243))
    )
    for name, r in results.items():
        for w in r["wrong"]:
            print(f"WRONG {name} {w}")
    OUT.mkdir(exist_ok=True)
    doc = {
        "benchmark": "symba_solver",
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "repeat": args.repeat,
        "timeout_s": args.timeout_s,
        "symba_reference_ms": SYMBA_REFERENCE_MS,
        "total": total,
        "sets": results,
    }
    (OUT / "symba_solver.json").write_text(json.dumps(doc, indent=1))
    plot(results, OUT / "symba_solver.png")
    print(f"\nwrote {OUT / 'symba_solver.json'} and {OUT / 'symba_solver.png'}")


if __name__ == "__main__":
    main()
