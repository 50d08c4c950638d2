"""The ``symba`` method on SymBa's sets: the gold engine on whole sets, the embedded model on 20 each.

* ``gold``: ``symbolkg solve --method symba --engine gold`` on every record of proofwriter_dep5,
  birdselectricity, pararules and clutrr, and of the two constructed sets in tests/fixtures/symba
  (fair_trial; court_conclusions, whose gold statements assert conclusions the world rules also
  define), three ways: the default (Algorithm 1 of the paper: every subgoal without an answer is
  asked about, world-defined ones included), ``--symba-world-complete`` (never ask about a
  predicate the world rules define) and ``--symba-ask missing`` (only subgoals no clause head
  unifies with). The engine answers each search and translation from
  the record's gold statements, so this measures the loop itself: accuracy (it must equal the
  solver's on the gold programs, benchmarks/symba_solver.py), and how many of the gold statements
  the proofs asked for (a statement enters only when a subgoal needs it);
* ``llm``: ``symbolkg solve --method symba`` with the embedded SmolLM2-135M-Instruct (vLLM CPU
  build, in this process) on ``--limit`` problems of each of the seven sets, with accuracy, calls,
  tokens and time per set, beside SymBa's Table 2 (GPT-4 Turbo) and Table 3 (tokens and hours for
  300 ProofWriter problems).

    python benchmarks/symba_method.py [--runs gold,llm] [--limit 20] [--data-dir DIR]

Writes benchmarks/out/symba_method.json and .png (accuracy per set: gold engine, embedded model,
the paper's GPT-4 Turbo).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from symbolkg.jobs.cli import main as cli

OUT = Path(__file__).resolve().parent / "out"
GOLD_SETS = ("proofwriter_dep5", "birdselectricity", "pararules", "clutrr", "fair_trial", "court_conclusions")
#: the constructed SymBa-format sets of the tests (a legal rule base's shape: world rules over quoted sentences)
FIXTURE_SETS = ("fair_trial", "court_conclusions")
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "symba"
#: the gold runs: name -> the method's flags
GOLD_VARIANTS = {"algorithm1": [], "world_complete": ["--symba-world-complete"], "missing": ["--symba-ask", "missing"]}
ALL_SETS = ("proofwriter_dep5", "birdselectricity", "pararules", "prontoqa", "clutrr", "gsm8k", "mawps")
#: SymBa, Table 2: accuracy (%) with GPT-4 Turbo
PAPER_GPT4T = {
    "proofwriter_dep5": 79.8,
    "birdselectricity": 94.4,
    "pararules": 79.2,
    "prontoqa": 96.3,
    "clutrr": 84.3,
    "mawps": 86.7,
    "gsm8k": 63.8,
}
#: SymBa, Table 3: 300 ProofWriter problems
PAPER_COST = {"problems": 300, "tokens": 880_106, "hours": 1.15}


def _quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return cli(argv)


def _summary(rows: list[dict], gold_total: int = 0) -> dict:
    traces = [json.loads(r["trace"] or "{}") for r in rows]
    added = [len(t.get("statements", [])) for t in traces]
    out = {
        "problems": len(rows),
        "correct": sum(bool(r["correct"]) for r in rows),
        "accuracy": round(sum(bool(r["correct"]) for r in rows) / max(1, len(rows)), 4),
        "answered": sum(r["predicted"] is not None for r in rows),
        "llm_calls": sum(r["llm_calls"] for r in rows),
        "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
        "completion_tokens": sum(r["completion_tokens"] for r in rows),
        "solver_rounds_p50": statistics.median([r["rounds"] for r in rows]) if rows else 0,
        "solver_rounds_max": max((r["rounds"] for r in rows), default=0),
        "statements_added": sum(added),
        "stops": {},
        "wrong": [r["problem_id"] for r in rows if not r["correct"]][:20],
    }
    for t in traces:
        out["stops"][t.get("stop", "?")] = out["stops"].get(t.get("stop", "?"), 0) + 1
    if gold_total:
        out["gold_statements"] = gold_total
    return out


def _gold_programs(data: Path, folder: str) -> dict[str, list]:
    records = json.loads((data / "symba" / folder / "test_data.json").read_text())
    return {f"{folder}_{r['id']}": [s for s in r["program"] if s["statement"].strip()] for r in records}


def gold_data(data: Path, tmp: Path) -> Path:
    """A data folder with SymBa's sets from ``data`` and the constructed sets of the tests beside them."""
    root = tmp / "gold-data" / "symba"
    root.mkdir(parents=True)
    for folder in GOLD_SETS:
        source = FIXTURES / folder if folder in FIXTURE_SETS else data / "symba" / folder
        (root / folder).symlink_to(source, target_is_directory=True)
    return root.parent


def run_gold(data: Path, tmp: Path, workers: int, variant: str) -> dict:
    results = {}
    for folder in GOLD_SETS:
        out = tmp / f"gold-{variant}-{folder}.parquet"
        t0 = time.perf_counter()
        code = _quiet(
            [
                "solve",
                "--method",
                "symba",
                "--engine",
                "gold",
                "--dataset",
                f"symba/{folder}",
                "--data-dir",
                str(data),
                "--out",
                str(out),
                "--executor",
                "local",
                "--workers",
                str(workers),
                "--no-progress",
                *GOLD_VARIANTS[variant],
            ]
        )
        if code != 0:
            raise RuntimeError(f"symba --engine gold on {folder} failed ({code})")
        gold_total = sum(len(v) for v in _gold_programs(data, folder).values())
        summary = _summary(pq.read_table(out).to_pylist(), gold_total)
        summary["wall_seconds"] = round(time.perf_counter() - t0, 2)
        results[folder] = summary
        print(
            f"gold, {variant:14s} {folder:18s} {summary['correct']:4d}/{summary['problems']:<4d} "
            f"statements asked for {summary['statements_added']}/{summary.get('gold_statements', 0)} of the gold "
            f"program  calls {summary['llm_calls']}  rounds p50 {summary['solver_rounds_p50']} max "
            f"{summary['solver_rounds_max']}  {summary['wall_seconds']:.1f} s",
            flush=True,
        )
    return results


def run_llm(data: Path, tmp: Path, limit: int, workers: int, cache: Path | None = None) -> dict:
    out = tmp / "llm.parquet"
    t0 = time.perf_counter()
    code = _quiet(
        [
            "solve",
            "--method",
            "symba",
            "--dataset",
            ",".join(f"symba/{s}" for s in ALL_SETS),
            "--limit",
            str(limit),
            "--data-dir",
            str(data),
            "--out",
            str(out),
            "--executor",
            "local",
            "--workers",
            str(workers),
            "--cache",
            str(cache or tmp / "completions"),
            "--no-progress",
        ]
    )
    if code != 0:
        raise RuntimeError(f"symba with the embedded model failed ({code})")
    wall = time.perf_counter() - t0
    rows = pq.read_table(out).to_pylist()
    results = {}
    for folder in ALL_SETS:
        results[folder] = _summary([r for r in rows if r["dataset"] == f"symba/{folder}"])
        s = results[folder]
        print(
            f"llm  {folder:18s} {s['correct']:3d}/{s['problems']:<3d} (paper, GPT-4 Turbo: "
            f"{PAPER_GPT4T[folder]}%)  calls {s['llm_calls']}  tokens {s['prompt_tokens'] + s['completion_tokens']}"
            f"  stops {s['stops']}",
            flush=True,
        )
    tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows)
    results["_all"] = {
        "problems": len(rows),
        "wall_seconds": round(wall, 1),
        "tokens": tokens,
        "tokens_per_problem": round(tokens / max(1, len(rows)), 1),
        "paper_tokens_per_problem": round(PAPER_COST["tokens"] / PAPER_COST["problems"], 1),
    }
    print(
        f"llm  all: {len(rows)} problems in {wall:.0f} s, {results['_all']['tokens_per_problem']} tokens per "
        f"problem (paper, GPT-4 Turbo on ProofWriter: {results['_all']['paper_tokens_per_problem']})"
    )
    return results


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(ALL_SETS)
    width = 0.27
    fig, ax = plt.subplots(figsize=(10, 4))
    series = [("gold engine", results.get("gold", {})), ("SmolLM2-135M", results.get("llm", {}))]
    for i, (label, res) in enumerate(series):
        ax.bar(
            [k + (i - 1) * width for k in range(len(sets))],
            [100 * res[s]["accuracy"] if s in res else 0 for s in sets],
            width,
            label=label,
        )
    ax.bar(
        [k + width for k in range(len(sets))],
        [PAPER_GPT4T[s] for s in sets],
        width,
        label="paper: GPT-4 Turbo",
        color="grey",
    )
    ax.set_xticks(range(len(sets)), sets, rotation=20)
    ax.set_ylabel("accuracy (%)")
    ax.set_title("symbolkg solve --method symba")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="gold,llm", help="comma list of gold, llm (default both)")
    ap.add_argument("--limit", type=int, default=20, help="problems per set of the llm run (default 20)")
    ap.add_argument("--workers", type=int, default=2, help="solver worker processes (default 2)")
    ap.add_argument(
        "--cache",
        help="completion cache of the llm run (default: a temporary one); a second run with "
        "the same cache generates only the calls the first did not make",
    )
    ap.add_argument(
        "--data-dir",
        default=os.environ.get("SYMBOLKG_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")),
    )
    args = ap.parse_args(argv)
    data = Path(args.data_dir)
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    unknown = set(runs) - {"gold", "llm"}
    if unknown:
        ap.error(f"unknown runs {sorted(unknown)}")
    if not (data / "symba").is_dir():
        ap.error(f"no SymBa data under {data} (--data-dir)")
    results: dict = {
        "machine": f"{platform.node()} ({os.cpu_count()} cores), Python {sys.version.split()[0]}",
        "date": time.strftime("%Y-%m-%d"),
    }
    with tempfile.TemporaryDirectory(prefix="symba-bench-") as tmp:
        if "gold" in runs:
            gold = gold_data(data, Path(tmp))
            results["gold"] = run_gold(gold, Path(tmp), args.workers, "algorithm1")
            # the departures, for comparison: world predicates never asked; only clause-less subgoals asked
            results["gold_world_complete"] = run_gold(gold, Path(tmp), args.workers, "world_complete")
            results["gold_missing"] = run_gold(gold, Path(tmp), args.workers, "missing")
        if "llm" in runs:
            results["llm"] = run_llm(
                data, Path(tmp), args.limit, args.workers, Path(args.cache) if args.cache else None
            )
    OUT.mkdir(exist_ok=True)
    (OUT / "symba_method.json").write_text(json.dumps(results, indent=2))
    plot(results, OUT / "symba_method.png")
    print(f"wrote {OUT / 'symba_method.json'} and .png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
