"""How often each formalization check fires on Logic-LM's recorded GPT-4 programs, and what it is worth.

Runs the real recorded path (:func:`symbolkg.jobs.pipeline.programs_job.run_solve`, local solver pool) on the
five program files twice: with corrections off (the checks only run and are recorded) and on
(the corrected programs are solved). Per check and dataset it reports:

* ``fired``: programs with at least one finding of the check;
* ``fired_wrong``: of those, how many were answered wrongly with corrections off (unexecuted =
  wrong): how well the check points at wrong formalizations;
* ``corrected``: programs the check corrected; ``fixed`` / ``broke``: of those, how many went
  from wrong to right / right to wrong;

and per dataset the accuracy (unexecuted = wrong) with corrections off and on.

Usage::

    .venv/bin/python benchmarks/formalization_checks.py [--data-dir DIR] [--timeout-s 10]

Prints a table; writes ``benchmarks/out/formalization_checks.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

from symbolkg.jobs.datasets.files import default_data_dir
from symbolkg.jobs.datasets.logiclm import load_logiclm_programs
from symbolkg.jobs.pipeline.programs_job import run_solve
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.findings import CHECKS
from symbolkg.solvers.outcomes import Limits
from symbolkg.solvers.runtime.local_pool import LocalSolverPool

SETS = ("ProntoQA", "ProofWriter", "FOLIO", "LogicalDeduction", "AR-LSAT")


def _rows(problems: list, pool: LocalSolverPool, limits: Limits, corrections: bool, tmp: Path) -> dict[str, dict]:
    out = tmp / f"run_{corrections}.parquet"
    store = ResultStore(out, run_info={"source": "formalization_checks", "corrections": corrections})
    run_solve(problems, store, pool, limits=limits, progress=False, corrections=corrections)
    table, _ = read_run(out)
    return {r["problem_id"]: r for r in table.to_pylist()}


def measure(name: str, data_dir: Path, pool: LocalSolverPool, limits: Limits) -> dict:
    """Both runs of one program file, and the counts per check."""
    path = data_dir / "logiclm" / "programs" / f"{name}_dev_gpt-4.json"
    problems = load_logiclm_programs(path, data_dir=data_dir).problems
    with tempfile.TemporaryDirectory() as tmp:
        off = _rows(problems, pool, limits, False, Path(tmp))
        on = _rows(problems, pool, limits, True, Path(tmp))
    per_check: dict[str, dict[str, int]] = {}
    for check in CHECKS:
        c = {"fired": 0, "fired_wrong": 0, "fired_error": 0, "corrected": 0, "fixed": 0, "broke": 0}
        for pid, row in off.items():
            trace = json.loads(row["trace"] or "{}")
            found = [f for f in trace.get("checks", []) if f["check"] == check]
            if not found:
                continue
            c["fired"] += 1
            c["fired_wrong"] += not row["correct"]
            c["fired_error"] += any(f["severity"] == "error" for f in found)
            applied = json.loads(on[pid]["trace"] or "{}").get("corrections", [])
            if check in applied:
                c["corrected"] += 1
                c["fixed"] += (not row["correct"]) and on[pid]["correct"]
                c["broke"] += row["correct"] and not on[pid]["correct"]
        per_check[check] = c
    n = len(off)
    acc_off = sum(r["correct"] for r in off.values())
    acc_on = sum(r["correct"] for r in on.values())
    return {
        "problems": n,
        "correct_off": acc_off,
        "correct_on": acc_on,
        "accuracy_off": round(100 * acc_off / n, 2),
        "accuracy_on": round(100 * acc_on / n, 2),
        "corrected_programs": sum(bool(json.loads(r["trace"] or "{}").get("corrected")) for r in on.values()),
        "checks": per_check,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", help="data root (default: $SYMBOLKG_DATA, else ../shared/data)")
    ap.add_argument("--timeout-s", type=float, default=10.0, help="per-program time limit (default 10)")
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated program files to run (default all five)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "out" / "formalization_checks.json"))
    args = ap.parse_args(argv)
    data_dir = default_data_dir(args.data_dir)
    limits = Limits(timeout_s=args.timeout_s)
    pool = LocalSolverPool(1)
    t0 = time.monotonic()
    results: dict[str, dict] = {}
    try:
        for name in args.sets.split(","):
            results[name] = measure(name, data_dir, pool, limits)
            print(f"{name}: done ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    finally:
        pool.close()
    print(f"{'dataset':<18}{'problems':>9}{'acc off':>10}{'acc on':>10}{'corrected':>11}")
    for name, r in results.items():
        print(
            f"{name:<18}{r['problems']:>9}{r['accuracy_off']:>9.1f}%{r['accuracy_on']:>9.1f}%"
            f"{r['corrected_programs']:>11}   ({r['correct_off']} -> {r['correct_on']} correct)"
        )
    print()
    print(
        f"{'check':<22}{'dataset':<18}{'fired':>7}{'f&wrong':>9}{'f.error':>9}{'corrected':>11}{'fixed':>7}{'broke':>7}"
    )
    for check in CHECKS:
        for name, r in results.items():
            c = r["checks"][check]
            if c["fired"]:
                print(
                    f"{check:<22}{name:<18}{c['fired']:>7}{c['fired_wrong']:>9}{c['fired_error']:>9}"
                    f"{c['corrected']:>11}{c['fixed']:>7}{c['broke']:>7}"
                )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "command": "benchmarks/formalization_checks.py",
                "timeout_s": args.timeout_s,
                "machine": platform.platform(),
                "python": platform.python_version(),
                "date": time.strftime("%Y-%m-%d"),
                "wall_s": round(time.monotonic() - t0, 1),
                "results": results,
            },
            indent=2,
        )
    )
    print(f"\nwrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
