"""``symbolkg verify RUN``: re-check every executed answer's certificate.

The job is :mod:`symbolkg.jobs.inspection.certificates`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from symbolkg.jobs.commands.common import reaped
from symbolkg.solvers.outcomes import Limits

#: The counts of ``--json``'s summary, named in its help:
#: :data:`symbolkg.jobs.inspection.certificates.SUMMARY_KEYS`, written out here because the job
#: imports pyarrow and the CLI builds every command's parser (tests/test_startup.py checks
#: that the two agree).
SUMMARY_KEYS = ("rows", "executed", "answered", "with_certificate", "verified", "failed", "unverifiable", "no_answer")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="re-check every executed answer's certificate with an engine other than the one "
        "that answered; writes RUN.verify.parquet (exit 1 when a certificate fails)",
    )
    p.add_argument("run", help="results Parquet written by `symbolkg solve`")
    p.add_argument(
        "--json", action="store_true", help="print one JSON object (keys: " + ", ".join(SUMMARY_KEYS) + ", ...)"
    )
    p.add_argument("--workers", type=int, default=2, help="checker worker processes (default 2)")
    p.add_argument("--timeout-s", type=float, default=20.0, help="per-check time limit (default 20)")
    p.add_argument("--memory-mb", type=int, default=2048, help="per-worker memory limit (default 2048)")
    p.add_argument(
        "--executor",
        choices=("ray", "local"),
        default="local",
        help="local threads (default: checks are short) or Ray actors",
    )
    p.add_argument("--cpus-per-worker", type=float, default=1.0, help="Ray CPUs reserved per checker actor")
    p.add_argument("--ray-address", help="Ray cluster to join (default: $RAY_ADDRESS or a local Ray)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Exit 0: every certificate holds or is unverifiable; 1: one failed; 2: no run there."""
    # ray is heavy: imported when a pool is made, never to build the parser
    from symbolkg.actors.solver_pool import make_solver_pool
    from symbolkg.jobs.inspection.certificates import format_summary, verify_run, write_verdicts  # as above

    # the job (pyarrow) only when the command runs, as ray
    from symbolkg.jobs.pipeline.store import run_exists

    run_path = Path(args.run)
    if not run_exists(run_path):  # a finished file, parts, or shards (verify reads their union)
        print(f"symbolkg verify: no results at {run_path}", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    limits = Limits(timeout_s=args.timeout_s, memory_mb=args.memory_mb)
    with reaped():  # a killed verify leaves no checker (or Ray) process behind
        pool = make_solver_pool(
            args.executor,
            args.workers,
            memory_mb=args.memory_mb,
            cpus_per_worker=args.cpus_per_worker,
            ray_address=args.ray_address,
        )
        try:
            verdicts, summary = verify_run(
                run_path, pool, limits=limits, progress=not args.no_progress and not args.json
            )
        finally:
            pool.close()
    path = write_verdicts(run_path, verdicts)
    summary["wall_seconds"] = round(time.monotonic() - t0, 3)
    summary["verdicts"] = str(path)
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 1 if summary["failed"] else 0
