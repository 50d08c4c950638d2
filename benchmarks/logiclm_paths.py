"""One path for corrections: the ``logiclm`` method with the recorded engine against the direct solve.

For each of Logic-LM's five recorded GPT-4 program files it runs, through the real CLI (local
solver pool):

* ``direct``: ``symbolkg solve --programs FILE`` (corrections on, the default);
* ``direct_as_written``: the same with ``--no-corrections``; this is what the method path answered
  before the method applied the text-resolved corrections (the earlier acceptance test checked the
  two equal per problem), so it is the method's "before" column;
* ``method``: ``symbolkg solve --method logiclm --engine recorded --recorded FILE --dataset NAME``;

and reports per set the accuracy of each (unexecuted = wrong, over the dataset's problems) and the
problems where the method and the direct solve differ in answer, correctness, execution or the
program that ran (the acceptance asks for none).

Usage::

    .venv/bin/python benchmarks/logiclm_paths.py [--data-dir DIR] [--timeout-s 20] [--workers 2] [--sets A,B]

Prints a table; writes ``benchmarks/out/logiclm_paths.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from symbolkg.jobs.cli import main as symbolkg
from symbolkg.jobs.datasets.files import default_data_dir

SETS = {
    "ProntoQA": "logiclm/prontoqa",
    "ProofWriter": "logiclm/proofwriter",
    "FOLIO": "logiclm/folio",
    "LogicalDeduction": "logiclm/logicaldeduction",
    "AR-LSAT": "logiclm/ar-lsat",
}
COMPARED = ("correct", "executed", "predicted", "program")


def _run(argv: list[str], out: Path) -> dict[str, dict]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):  # the reports
        rc = symbolkg([*argv, "--out", str(out)])
    if rc != 0:
        raise RuntimeError(f"symbolkg {' '.join(argv)} exited {rc}")
    return {r["problem_id"]: r for r in pq.read_table(out).to_pylist()}


def measure(name: str, data_dir: Path, timeout_s: float, workers: int) -> dict:
    """The three runs of one program file and their per-problem comparison."""
    programs = data_dir / "logiclm" / "programs" / f"{name}_dev_gpt-4.json"
    common = [
        "--executor",
        "local",
        "--workers",
        str(workers),
        "--timeout-s",
        str(timeout_s),
        "--no-progress",
        "--data-dir",
        str(data_dir),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        runs = {
            "direct": _run(["solve", "--programs", str(programs), *common], Path(tmp) / "direct.parquet"),
            "direct_as_written": _run(
                ["solve", "--programs", str(programs), "--no-corrections", *common], Path(tmp) / "as_written.parquet"
            ),
            "method": _run(
                [
                    "solve",
                    "--method",
                    "logiclm",
                    "--engine",
                    "recorded",
                    "--recorded",
                    str(programs),
                    "--dataset",
                    SETS[name],
                    *common,
                ],
                Path(tmp) / "method.parquet",
            ),
        }
    direct, method = runs["direct"], runs["method"]
    differ = sorted(
        pid
        for pid in direct
        if direct[pid]["error_kind"] != "no_program"
        and any(direct[pid][k] != method.get(pid, {}).get(k) for k in COMPARED)
    )
    n = len(direct)
    out: dict = {"problems": n, "differ": differ, "same_ids": direct.keys() == method.keys()}
    for run, rows in runs.items():
        correct = sum(r["correct"] for r in rows.values())
        out[run] = {
            "correct": correct,
            "accuracy": round(100 * correct / n, 2),
            "executed": sum(r["executed"] for r in rows.values()),
            "timeouts": sorted(pid for pid, r in rows.items() if r["status"] == "timeout"),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", help="data root (default: $SYMBOLKG_DATA, else ../shared/data)")
    ap.add_argument("--timeout-s", type=float, default=20.0, help="per-program time limit (default 20, as the tests)")
    ap.add_argument("--workers", type=int, default=2, help="solver workers (default 2)")
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated program files (default all five)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "out" / "logiclm_paths.json"))
    args = ap.parse_args(argv)
    data_dir = default_data_dir(args.data_dir)
    t0 = time.monotonic()
    results = {}
    for name in args.sets.split(","):
        results[name] = measure(name, data_dir, args.timeout_s, args.workers)
        print(f"{name}: done ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    print(f"{'dataset':<18}{'problems':>9}{'method before':>15}{'method after':>14}{'direct':>10}{'differ':>8}")
    for name, r in results.items():
        print(
            f"{name:<18}{r['problems']:>9}{r['direct_as_written']['accuracy']:>14.1f}%{r['method']['accuracy']:>13.1f}%"
            f"{r['direct']['accuracy']:>9.1f}%{len(r['differ']):>8}"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "command": "benchmarks/logiclm_paths.py",
                "timeout_s": args.timeout_s,
                "workers": args.workers,
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
    return 0 if all(not r["differ"] and r["same_ids"] for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
