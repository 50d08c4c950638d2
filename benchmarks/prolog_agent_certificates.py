"""Certificates of the ``prolog-agent`` method's answers on PARARULE-Plus depths 2-4.

The agent answers through SWI-Prolog sessions behind an MCP server, which give a verdict and no
proof. With a solver pool the agent rewrites the program that ran into SymBa's language and
re-derives the answer there; when SymBa agrees, its proof tree is the row's certificate
(:mod:`symbolkg.jobs.methods.prolog_agent`). This runs the agent with the ``pararule-template``
engine (the deterministic translator: a model that formalizes perfectly) and a local solver
pool over every question (or ``--limit`` per depth), then ``symbolkg verify``'s checker over the
rows, and reports per depth: answered, certified, verified / failed / unverifiable, and why a
row has no certificate (``trace.rederived``).

    python benchmarks/prolog_agent_certificates.py [--limit N] [--workers 2]

Writes benchmarks/out/prolog_agent_certificates.json and .png.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from symbolkg.actors.engines.factory import EngineOptions, make_engine
from symbolkg.jobs.datasets.files import default_data_dir
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.jobs.inspection.certificates import verify_run
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.methods.prolog_agent import PrologAgent, PrologAgentConfig
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore
from symbolkg.solvers.runtime.local_pool import LocalSolverPool

OUT = Path(__file__).resolve().parent / "out"
DEPTHS = (2, 3, 4)


def one_depth(depth: int, data: Path, tmp: Path, pool: LocalSolverPool, limit: int | None) -> dict:
    problems = load_dataset(f"pararule_plus/depth{depth}", data, limit=limit).problems
    out = tmp / f"d{depth}.parquet"

    async def job() -> None:
        engine = make_engine(EngineOptions(kind="pararule-template"))
        try:
            await run_method_job(
                problems,
                ResultStore(out),
                MethodConfig(method="prolog-agent"),
                engine,
                pool,
                max_in_flight=32,
                progress=False,
                method=PrologAgent(PrologAgentConfig(sldnf=False)),
            )
        finally:
            await engine.close()

    t0 = time.perf_counter()
    asyncio.run(job())
    solve_s = time.perf_counter() - t0
    rows = pq.read_table(out).to_pylist()
    t0 = time.perf_counter()
    verdicts, summary = verify_run(out, pool, progress=False)
    verify_s = time.perf_counter() - t0
    why = Counter()
    for r in rows:
        if r["executed"] and r["certificate"] is None:
            rederived = json.loads(r["trace"] or "{}").get("rederived") or {}
            why[str(rederived.get("reason") or rederived.get("status") or "no pool")[:120]] += 1
    return {
        "questions": len(rows),
        "correct": sum(r["correct"] for r in rows),
        "answered": summary["answered"],
        "with_certificate": summary["with_certificate"],
        "verified": summary["verified"],
        "failed": summary["failed"],
        "unverifiable": summary["unverifiable"],
        "no_certificate_because": dict(why),
        "not_verified": summary["problems"],
        "solve_seconds": round(solve_s, 1),
        "verify_seconds": round(verify_s, 1),
        "check_ms_p50": round(1000 * sorted(v.seconds for v in verdicts)[len(verdicts) // 2], 2) if verdicts else 0.0,
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [f"depth {d}" for d in DEPTHS]
    rows = [result["depths"][f"depth{d}"] for d in DEPTHS]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    bottom = [0] * len(rows)
    for key, color, label in (
        ("verified", "tab:green", "verified"),
        ("unverifiable", "tab:orange", "unverifiable"),
        ("failed", "tab:red", "failed"),
    ):
        values = [r[key] for r in rows]
        ax.bar(names, values, bottom=bottom, color=color, label=label)
        bottom = [a + b for a, b in zip(bottom, values, strict=True)]
    uncertified = [r["answered"] - r["with_certificate"] for r in rows]
    ax.bar(names, uncertified, bottom=bottom, color="tab:gray", label="no certificate")
    ax.set_ylabel("answered questions")
    ax.set_title(
        "prolog-agent (template engine): SWI-Prolog verdicts re-derived by SymBa, checked bottom-up", fontsize=8
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, help="questions per depth (default: all)")
    parser.add_argument("--workers", type=int, default=2, help="solver worker processes (default 2)")
    parser.add_argument("--data-dir", help="data root (default $SYMBOLKG_DATA, else ../shared/data)")
    args = parser.parse_args()
    data = default_data_dir(args.data_dir)
    result: dict = {
        "command": "benchmarks/prolog_agent_certificates.py",
        "limit": args.limit,
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "depths": {},
    }
    with tempfile.TemporaryDirectory() as tmp, LocalSolverPool(args.workers) as pool:
        for depth in DEPTHS:
            s = one_depth(depth, data, Path(tmp), pool, args.limit)
            result["depths"][f"depth{depth}"] = s
            print(
                f"depth {depth}: {s['correct']}/{s['questions']} correct; answered {s['answered']}, certified "
                f"{s['with_certificate']}, verified {s['verified']}, failed {s['failed']}, unverifiable "
                f"{s['unverifiable']}; no certificate: {s['no_certificate_because'] or 'none'}; "
                f"{s['solve_seconds']} s + verify {s['verify_seconds']} s",
                flush=True,
            )
    keys = ("questions", "correct", "answered", "with_certificate", "verified", "failed", "unverifiable")
    result["total"] = {k: sum(d[k] for d in result["depths"].values()) for k in keys}
    OUT.mkdir(exist_ok=True)
    (OUT / "prolog_agent_certificates.json").write_text(json.dumps(result, indent=2))
    plot(result, OUT / "prolog_agent_certificates.png")
    print(json.dumps(result["total"]))


if __name__ == "__main__":
    main()
