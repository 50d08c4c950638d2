"""The FOL backend per program and per step: every recorded FOLIO program solved in-process.

Each program goes through what the solve stage does to it (the formalization checks' correction,
:func:`symbolkg.solvers.checks.correct_program`, as the solve stage's worker does) and then
:func:`symbolkg.solvers.registry.run` in this process, with the steps of the ``logiclm-fol`` engine
timed by wrapping its functions (the real ones: nothing is replaced, only timed):

=================  ============================================================================
checks             the formalization checks (outside the solver call, as in the solve stage)
parse              the ``logiclm-fol`` parser
translate          FOL to Prover9 notation
prover9_start      starting a Prover9 process (temporary directory, input file, fork/exec)
prover9_wait       waiting for the Prover9 processes (goal and negation side, in parallel)
prover9_read       reading a Prover9 output (proof, exit reason)
prover9_other      the rest of the two searches (input text, labels, temporary directories' cleanup)
certificate        the answer and its certificate from the deciding proof
countermodels      the finite-model search for an Unknown answer's countermodels (also the race's,
                   which runs in a thread beside the Prover9 wait: that time overlaps ``prover9_wait``)
readings           combining the program's readings, and the rest of the call
=================  ============================================================================

Times are exclusive (a step's time excludes the steps inside it) and per thread; the Prover9
sides' own wall times (``goal_side_s``, ``negation_side_s``) are recorded beside them. With
``--verify`` every certificate is re-checked (:func:`symbolkg.solvers.certificates.check`);
with ``--compare OLD.json`` each row's status, answer, error kind and certificate claim is
compared with an earlier run's.

    python benchmarks/fol_backend.py [--only FOLIO_dev_120] [--skip FOLIO_dev_120] [--verify]
        [--compare benchmarks/out/fol_backend_before.json] [--name fol_backend] [--timeout-s 10]

Writes benchmarks/out/<name>.json. ``fol_backend_before.json`` was made by this script on the code
before issue 29's changes (that ``solvers/`` copied aside and imported in place of the package's),
``fol_backend.json`` on the code after; benchmarks/RESULTS.md has both.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import platform
import resource
import statistics
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from symbolkg.jobs.datasets.registry import load_problems
from symbolkg.solvers import registry
from symbolkg.solvers.certificates import check as check_certificate
from symbolkg.solvers.checks import correct_program
from symbolkg.solvers.outcomes import Limits, SolveRequest

OUT = Path(__file__).resolve().parent / "out"
PROGRAMS = "/work/shared/data/logiclm/programs/FOLIO_dev_gpt-4.json"

#: (module, attribute, step): the functions timed; a missing one is skipped (older or newer code).
TIMED = [
    ("symbolkg.solvers.fol.engine", "parse", "parse"),
    ("symbolkg.solvers.fol.engine", "to_prover9", "translate"),
    ("symbolkg.solvers.fol.prover9", "_Run.__init__", "prover9_start"),
    ("symbolkg.solvers.fol.prover9", "_run_until", "prover9_wait"),
    ("symbolkg.solvers.fol.prover9", "_read_result", "prover9_read"),
    ("symbolkg.solvers.fol.prover9", "entail", "certificate"),
    ("symbolkg.solvers.fol.prover9", "entailment", "prover9_other"),
    ("symbolkg.solvers.fol.prover9", "with_countermodels", "countermodels"),
    ("symbolkg.solvers.fol.race", "countermodels", "countermodels"),
]
STEPS = [
    "checks",
    "parse",
    "translate",
    "prover9_start",
    "prover9_wait",
    "prover9_read",
    "prover9_other",
    "certificate",
    "countermodels",
    "readings",
]


#: Solved once before the timed run (imports, the Prover9 binary paged in, Z3 loaded).
WARM_UP = """Predicates:
Dog(x) ::: x is a dog.
Animal(x) ::: x is an animal.
Premises:
∀x (Dog(x) → Animal(x)) ::: Every dog is an animal.
Dog(rex) ::: Rex is a dog.
Conclusion:
Animal(rex) ::: Rex is an animal.
"""


class StepClock:
    """Exclusive time per step for the current program, per thread (a step excludes its inner steps)."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.sides: list[tuple[str, float, str]] = []  # (side, seconds, exit reason) of each Prover9 run
        self._local = threading.local()
        self._lock = threading.Lock()

    def reset(self) -> None:
        self.totals = defaultdict(float)
        self.sides = []

    def wrap(self, fn: Any, step: str) -> Any:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack = self._local.__dict__.setdefault("stack", [])
            stack.append(0.0)  # time spent in inner steps
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - t0
                inner = stack.pop()
                if stack:
                    stack[-1] += elapsed
                with self._lock:
                    self.totals[step] += elapsed - inner

        return timed

    def record_sides(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            result = fn(*args, **kwargs)
            with self._lock:
                for side in ("goal_side", "negation_side"):
                    r = getattr(result, side)
                    if r.exit_reason != "skipped":
                        self.sides.append((side, r.seconds, r.exit_reason))
            return result

        return recorded


def instrument(clock: StepClock) -> list[str]:
    """Wrap the functions of :data:`TIMED` that exist; returns the ones wrapped."""
    wrapped = []
    for module_name, attribute, step in TIMED:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner: Any = module
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is None or not hasattr(owner, name):
            continue
        fn = getattr(owner, name)
        if attribute == "entailment":
            fn = clock.record_sides(fn)
        setattr(owner, name, clock.wrap(fn, step))
        wrapped.append(f"{module_name}.{attribute}")
    return wrapped


def solve_all(problems: list, limits: Limits, clock: StepClock, verify: bool) -> list[dict]:
    rows = []
    for i, problem in enumerate(problems):
        clock.reset()
        t0 = time.perf_counter()
        program = correct_program(problem.program.language, problem.program.text, problem).text
        checks_s = time.perf_counter() - t0
        cpu0 = _cpu()
        t1 = time.perf_counter()
        outcome = registry.run(SolveRequest(problem.id, "logiclm-fol", program, limits))
        solve_s = time.perf_counter() - t1
        cpu1 = _cpu()
        steps = {"checks": checks_s, **{k: v for k, v in clock.totals.items()}}
        steps["readings"] = max(0.0, solve_s - sum(v for k, v in clock.totals.items()))
        cert = outcome.certificate or {}
        row = {
            "id": problem.id,
            "status": outcome.status.value,
            "answer": outcome.answer,
            "error_kind": outcome.error_kind,
            "backend": outcome.backend,
            "claim": cert.get("claim"),
            "producer": cert.get("producer"),
            "countermodels": sum(
                1 for side in ("goal_false", "goal_true") if (cert.get("countermodels") or {}).get(side) is not None
            ),
            "solve_s": round(solve_s, 6),
            "cpu_self_s": round(cpu1[0] - cpu0[0], 6),
            "cpu_children_s": round(cpu1[1] - cpu0[1], 6),
            "steps": {k: round(v, 6) for k, v in steps.items()},
            "prover9_sides": [[s, round(t, 6), r] for s, t, r in clock.sides],
        }
        if verify and outcome.certificate is not None:
            verdict = check_certificate(
                outcome.certificate, language="logiclm-fol", program=program, answer=outcome.answer, limits=limits
            )
            row["verdict"], row["verdict_s"] = verdict.status, round(verdict.seconds, 6)
        rows.append(row)
        if (i + 1) % 25 == 0:
            print(f"  {i + 1}/{len(problems)}", flush=True)
    return rows


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its reaped children (the Prover9 runs)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"total_s": 0.0, "p50_s": 0.0, "p95_s": 0.0, "max_s": 0.0}
    ordered = sorted(values)
    return {
        "total_s": round(sum(ordered), 4),
        "p50_s": round(statistics.median(ordered), 5),
        "p95_s": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 5),
        "max_s": round(ordered[-1], 4),
    }


def summarize(rows: list[dict]) -> dict[str, Any]:
    steps = {s: _quantiles([r["steps"].get(s, 0.0) for r in rows]) for s in STEPS}
    sides = defaultdict(list)
    for r in rows:
        for side, seconds, _ in r["prover9_sides"]:
            sides[side].append(seconds)
    by_answer: dict[str, int] = defaultdict(int)
    for r in rows:
        by_answer[str(r["answer"] if r["answer"] is not None else r["status"])] += 1
    verdicts: dict[str, int] = defaultdict(int)
    for r in rows:
        if "verdict" in r:
            verdicts[r["verdict"]] += 1
    cpu = {
        "self_s": round(sum(r["cpu_self_s"] for r in rows), 3),
        "children_s": round(sum(r["cpu_children_s"] for r in rows), 3),
    }
    return {
        "programs": len(rows),
        "solve": _quantiles([r["solve_s"] for r in rows]),
        "cpu": cpu,
        "steps": steps,
        "prover9_sides": {k: _quantiles(v) for k, v in sides.items()},
        "answers": dict(by_answer),
        "backends": dict(_count(r["backend"] for r in rows)),
        "verdicts": dict(verdicts),
        "checks_plus_solve_s": round(sum(r["solve_s"] + r["steps"].get("checks", 0.0) for r in rows), 3),
    }


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for v in values:
        counts[str(v)] += 1
    return counts


def compare(rows: list[dict], old_path: Path) -> list[str]:
    """Rows whose status, answer, error kind or certificate claim differ from ``old_path``'s."""
    old = {r["id"]: r for r in json.loads(old_path.read_text())["rows"]}
    diffs = []
    for r in rows:
        o = old.get(r["id"])
        if o is None:
            continue
        changed = [k for k in ("status", "answer", "error_kind", "claim") if r[k] != o[k]]
        if changed:
            diffs.append(f"{r['id']}: " + ", ".join(f"{k} {o[k]!r} -> {r[k]!r}" for k in changed))
    return diffs


def report(summary: dict[str, Any], title: str) -> None:
    print(
        f"\n{title}: {summary['programs']} programs, solve total {summary['solve']['total_s']:.2f} s, "
        f"p50 {summary['solve']['p50_s'] * 1000:.1f} ms, p95 {summary['solve']['p95_s'] * 1000:.1f} ms, "
        f"max {summary['solve']['max_s']:.2f} s; CPU {summary['cpu']['self_s']:.2f} s here + "
        f"{summary['cpu']['children_s']:.2f} s in Prover9 processes"
    )
    print(f"  {'step':14s} {'total s':>9s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>9s}")
    for step, q in summary["steps"].items():
        print(
            f"  {step:14s} {q['total_s']:9.3f} {q['p50_s'] * 1000:8.2f} {q['p95_s'] * 1000:8.2f} "
            f"{q['max_s'] * 1000:9.1f}"
        )
    for side, q in summary["prover9_sides"].items():
        print(f"  prover9 {side:15s} runs' own wall: total {q['total_s']:.2f} s, p50 {q['p50_s'] * 1000:.1f} ms")
    print(f"  answers {summary['answers']}  backends {summary['backends']}  verdicts {summary['verdicts'] or '-'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", default=PROGRAMS)
    ap.add_argument("--data-dir", default="/work/shared/data")
    ap.add_argument("--timeout-s", type=float, default=10.0)
    ap.add_argument("--only", nargs="*", default=[], help="solve only these problem ids")
    ap.add_argument("--skip", nargs="*", default=[], help="leave these problem ids out")
    ap.add_argument("--verify", action="store_true", help="re-check every certificate")
    ap.add_argument("--compare", type=Path, help="an earlier run's JSON: list the rows whose answer changed")
    ap.add_argument("--name", default="fol_backend", help="output file benchmarks/out/<name>.json")
    args = ap.parse_args()
    problems = load_problems(args.programs, data_dir=args.data_dir).problems
    problems = [
        p for p in problems if p.program is not None and p.id not in args.skip and (not args.only or p.id in args.only)
    ]
    clock = StepClock()
    wrapped = instrument(clock)
    limits = Limits(timeout_s=args.timeout_s)
    registry.run(SolveRequest("warm", "logiclm-fol", WARM_UP, limits))  # imports, binary paged in; not a FOLIO program
    load = os.getloadavg()
    t0 = time.perf_counter()
    rows = solve_all(problems, limits, clock, args.verify)
    wall = time.perf_counter() - t0
    summary = summarize(rows)
    doc = {
        "benchmark": "fol_backend",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "timeout_s": args.timeout_s,
        "wall_s": round(wall, 3),
        "timed": wrapped,
        "summary": summary,
        "rows": rows,
    }
    if args.compare:
        doc["differences"] = compare(rows, args.compare)
    report(summary, f"{args.name} (load {load[0]:.1f} -> {os.getloadavg()[0]:.1f})")
    slowest = sorted(rows, key=lambda r: -r["solve_s"])[:5]
    print("  slowest: " + ", ".join(f"{r['id']} {r['solve_s']:.2f}s" for r in slowest))
    if args.compare:
        print(f"  differences from {args.compare}: {len(doc['differences'])}")
        for d in doc["differences"]:
            print(f"    {d}")
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{args.name}.json"
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
