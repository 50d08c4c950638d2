"""The CSP, AR-LSAT and LP backends per program and per step: every recorded program solved in-process.

Each program goes through what the solve stage does to it (the formalization checks' correction,
:func:`symbolkg.solvers.checks.correct_program`, as the solve stage's worker does) and then
:func:`symbolkg.solvers.registry.run` in this process, with the engine's steps timed by wrapping its
functions (the real ones: nothing is replaced, only timed; a function the code does not have is
skipped, so the same script times an older tree, e.g. ``PYTHONPATH=/tmp/old_tree``, where
``/tmp/old_tree/symbolkg/solvers`` is a copy):

==============  ===============================================================================
checks          the formalization checks (outside the solver call, as in the solve stage)
parse           the language's parser
encode          building the Z3 terms and asserting the constraints (CSP: the session; AR-LSAT:
                the compiler, the tracked constraints, the proof text)
solve           Z3's checks that decide the answer (constraints, then each option)
options         AR-LSAT: building the options' formulas (outside Z3's checks)
cert_encode     AR-LSAT: a second encoding for the certificate (where the engine builds one)
cert_solve      the certificate's satisfiability questions outside core minimisation
cert_core       unsat-core minimisation with the solver calls it makes
cert_model      writing Z3 models as the certificate's JSON
certificate     the rest of the certificate (its assembly, line texts, size check)
chain           LP: the forward chainer's fixpoint
result          the rest of the call (outcome, proof text, readings)
==============  ===============================================================================

Times are exclusive (a step's time excludes the steps inside it), except that ``cert_core``
includes the solver calls made inside it. ``--verify`` re-checks every certificate with the
independent checker (:func:`symbolkg.solvers.certificates.check`); ``--compare OLD.json`` lists the
rows whose status, answer or error kind differ from an earlier run's and counts the certificates,
proofs and messages that are not byte-identical. ``--certificates`` keeps each row's certificate
in the JSON (a baseline to compare against); otherwise only its SHA-256.

    python benchmarks/constraint_backends.py [--sets LogicalDeduction AR-LSAT ProntoQA ProofWriter]
        [--verify] [--compare benchmarks/out/constraint_backends_before.json] [--certificates]
        [--name constraint_backends] [--timeout-s 10]

Writes benchmarks/out/<name>.json.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib
import json
import os
import platform
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from symbolkg.jobs.datasets.registry import load_problems
from symbolkg.solvers import registry
from symbolkg.solvers.certificates import check as check_certificate
from symbolkg.solvers.checks import correct_program
from symbolkg.solvers.outcomes import Limits, Program, SolveRequest

OUT = Path(__file__).resolve().parent / "out"
PROGRAMS = "/work/shared/data/logiclm/programs/{}_dev_gpt-4.json"
SETS = ["LogicalDeduction", "AR-LSAT", "ProntoQA", "ProofWriter"]

_CSP = "symbolkg.solvers.csp.engine"
_SMT = "symbolkg.solvers.smt.lsat_engine"
_LP = "symbolkg.solvers.lp.engine"
#: (module, attribute, step, absorbs): the functions timed; an absent one is skipped (older or newer
#: code). A step that absorbs counts the time of the timed functions it calls as its own.
TIMED = [
    (_CSP, "parse", "parse", False),
    (_CSP, "_Session.__init__", "encode", False),
    (_CSP, "_Session.check", "solve", False),
    (_CSP, "_Session.minimal_core", "cert_core", True),
    (_CSP, "_Session.model_json", "cert_model", False),
    (_CSP, "_Session.certificate", "certificate", False),
    (_SMT, "parse", "parse", False),
    (_SMT, "_run", "encode", False),
    (_SMT, "_Checker.satisfiable", "solve", False),
    (_SMT, "_Session.check", "solve", False),
    (_SMT, "_evaluate", "options", False),
    (_SMT, "_CertificateWriter.__init__", "cert_encode", False),
    (_SMT, "_CertificateWriter.run", "cert_solve", False),
    (_SMT, "_CertificateWriter.minimal_core", "cert_core", True),
    ("symbolkg.solvers.certificates.constraint", "minimise", "cert_core", True),
    (_SMT, "_CertificateWriter.model_json", "cert_model", False),
    (_SMT, "_certificate", "certificate", False),
    (_LP, "parse", "parse", False),
    (_LP, "forward_chain", "chain", False),
    (_LP, "derivation_certificate", "certificate", False),
]
STEPS = [
    "checks",
    "parse",
    "encode",
    "solve",
    "options",
    "cert_encode",
    "cert_solve",
    "cert_core",
    "cert_model",
    "certificate",
    "chain",
    "result",
]


class StepClock:
    """Exclusive wall and CPU time and calls per step for the current program (a step excludes its inner
    steps). CPU time is this thread's (Z3 runs in the caller's thread), steadier on a loaded machine."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._stack: list[list[Any]] = []  # [step, inner wall seconds, absorbs, inner CPU seconds]

    def reset(self) -> None:
        self.totals = defaultdict(float)
        self.cpu = defaultdict(float)
        self.calls = defaultdict(int)

    def wrap(self, fn: Any, step: str, absorbs: bool) -> Any:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._stack and self._stack[-1][2]:
                return fn(*args, **kwargs)  # inside an absorbing step: its time is that step's
            self._stack.append([step, 0.0, absorbs, 0.0])
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed, cpu = time.perf_counter() - t0, time.thread_time() - c0
                _, inner, _, inner_cpu = self._stack.pop()
                if self._stack:
                    self._stack[-1][1] += elapsed
                    self._stack[-1][3] += cpu
                self.totals[step] += elapsed - inner
                self.cpu[step] += cpu - inner_cpu
                self.calls[step] += 1

        return timed


def instrument(clock: StepClock) -> list[str]:
    """Wrap the functions of :data:`TIMED` that exist; returns the ones wrapped."""
    wrapped = []
    for module_name, attribute, step, absorbs in TIMED:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner: Any = module
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is None or name not in vars(owner):
            continue
        setattr(owner, name, clock.wrap(getattr(owner, name), step, absorbs))
        wrapped.append(f"{module_name}.{attribute}")
    return wrapped


def _digest(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def solve_one(problem: Any, limits: Limits, clock: StepClock, verify: bool, keep_certificate: bool) -> dict:
    """One program: the checks, the solver call with its steps, and (``verify``) the certificate's re-check."""
    clock.reset()
    t0 = time.perf_counter()
    program = Program(
        problem.program.language, correct_program(problem.program.language, problem.program.text, problem).text
    )
    checks_s = time.perf_counter() - t0
    t1, c1 = time.perf_counter(), time.thread_time()
    outcome = registry.run(SolveRequest(problem.id, program.language, program.text, limits))
    solve_s, solve_cpu_s = time.perf_counter() - t1, time.thread_time() - c1
    steps = {"checks": checks_s, **clock.totals}
    steps["result"] = max(0.0, solve_s - sum(clock.totals.values()))
    cpu = {**clock.cpu, "result": max(0.0, solve_cpu_s - sum(clock.cpu.values()))}
    row = {
        "id": problem.id,
        "language": program.language,
        "status": outcome.status.value,
        "answer": outcome.answer,
        "error_kind": outcome.error_kind,
        "error_line": outcome.error_line,
        "backend": outcome.backend,
        "has_certificate": outcome.certificate is not None,
        "certificate_sha": _digest(outcome.certificate),
        "proof_sha": _digest(outcome.proof),
        "message_sha": _digest(outcome.error_message),
        "solve_s": round(solve_s, 6),
        "solve_cpu_s": round(solve_cpu_s, 6),
        "steps": {k: round(v, 6) for k, v in steps.items()},
        "cpu": {k: round(v, 6) for k, v in cpu.items()},
        "calls": dict(clock.calls),
    }
    if keep_certificate:
        row["certificate"] = outcome.certificate
    if verify and outcome.certificate is not None:
        verdict = check_certificate(
            outcome.certificate, language=program.language, program=program.text, answer=outcome.answer, limits=limits
        )
        row["verdict"], row["verdict_s"] = verdict.status, round(verdict.seconds, 6)
        if verdict.status != "verified":
            row["verdict_reason"] = verdict.reason
    return row


def _quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"total_s": 0.0, "p50_s": 0.0, "p95_s": 0.0, "max_s": 0.0}
    ordered = sorted(values)
    return {
        "total_s": round(sum(ordered), 4),
        "p50_s": round(statistics.median(ordered), 6),
        "p95_s": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 6),
        "max_s": round(ordered[-1], 4),
    }


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for v in values:
        counts[str(v)] += 1
    return dict(counts)


def summarize(rows: list[dict]) -> dict[str, Any]:
    steps = {s: _quantiles([r["steps"].get(s, 0.0) for r in rows]) for s in STEPS if any(s in r["steps"] for r in rows)}
    calls = {s: sum(r["calls"].get(s, 0) for r in rows) for s in STEPS if any(s in r["calls"] for r in rows)}
    cpu = {s: round(sum(r["cpu"].get(s, 0.0) for r in rows), 4) for s in STEPS if any(s in r["cpu"] for r in rows)}
    return {
        "programs": len(rows),
        "solve": _quantiles([r["solve_s"] for r in rows]),
        "solve_cpu": _quantiles([r["solve_cpu_s"] for r in rows]),
        "steps": steps,
        "cpu_s": cpu,
        "calls": calls,
        "statuses": _count(r["status"] for r in rows),
        "certified": sum(r["has_certificate"] for r in rows),
        "verdicts": _count(r["verdict"] for r in rows if "verdict" in r),
        "verdict_s": _quantiles([r["verdict_s"] for r in rows if "verdict_s" in r]),
        "checks_plus_solve_s": round(sum(r["solve_s"] + r["steps"]["checks"] for r in rows), 3),
    }


def compare(rows: list[dict], old_rows: dict[str, dict]) -> dict[str, Any]:
    """Differences from an earlier run: rows whose answer changed, and how many artefacts are not identical."""
    answers, same = [], defaultdict(int)
    for r in rows:
        o = old_rows.get(r["id"])
        if o is None:
            continue
        changed = [k for k in ("status", "answer", "error_kind", "has_certificate") if r[k] != o[k]]
        if changed:
            answers.append(f"{r['id']}: " + ", ".join(f"{k} {o[k]!r} -> {r[k]!r}" for k in changed))
        for k in ("certificate_sha", "proof_sha", "message_sha", "error_line"):
            same[k] += r.get(k) == o.get(k)
    return {"answers": answers, "identical": dict(same), "compared": sum(1 for r in rows if r["id"] in old_rows)}


def report(name: str, summary: dict[str, Any], diff: dict[str, Any] | None) -> None:
    s = summary["solve"]
    print(
        f"\n{name}: {summary['programs']} programs, solver total {s['total_s']:.2f} s, p50 {s['p50_s'] * 1000:.1f} ms, "
        f"p95 {s['p95_s'] * 1000:.1f} ms, max {s['max_s'] * 1000:.0f} ms; checks+solve "
        f"{summary['checks_plus_solve_s']} s"
    )
    c = summary["solve_cpu"]
    print(f"  solver CPU {c['total_s']:.2f} s, p50 {c['p50_s'] * 1000:.1f} ms, p95 {c['p95_s'] * 1000:.1f} ms")
    print(f"  {'step':12s} {'total s':>8s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s} {'CPU s':>7s} {'calls':>7s}")
    for step, q in summary["steps"].items():
        cpu = summary["cpu_s"].get(step)
        print(
            f"  {step:12s} {q['total_s']:8.3f} {q['p50_s'] * 1000:8.2f} {q['p95_s'] * 1000:8.2f} "
            f"{q['max_s'] * 1000:8.1f} {'' if cpu is None else f'{cpu:7.3f}':>7} {summary['calls'].get(step, ''):>7}"
        )
    print(
        f"  statuses {summary['statuses']}  certified {summary['certified']}  verdicts {summary['verdicts'] or '-'}"
        + (f" (checker total {summary['verdict_s']['total_s']:.2f} s)" if summary["verdicts"] else "")
    )
    if diff is not None:
        print(
            f"  vs. the earlier run: {len(diff['answers'])} answers differ; identical of {diff['compared']}: "
            f"{diff['identical']}"
        )
        for line in diff["answers"][:20]:
            print(f"    {line}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", nargs="*", default=SETS)
    ap.add_argument("--data-dir", default="/work/shared/data")
    ap.add_argument("--timeout-s", type=float, default=10.0)
    ap.add_argument("--only", nargs="*", default=[], help="solve only these problem ids")
    ap.add_argument("--verify", action="store_true", help="re-check every certificate")
    ap.add_argument("--certificates", action="store_true", help="keep every certificate in the JSON")
    ap.add_argument("--compare", type=Path, help="an earlier run's JSON: list the rows whose answer changed")
    ap.add_argument("--name", default="constraint_backends", help="output file benchmarks/out/<name>.json")
    args = ap.parse_args()
    clock = StepClock()
    wrapped = instrument(clock)
    limits = Limits(timeout_s=args.timeout_s)
    old = (
        {r["id"]: r for d in json.loads(args.compare.read_text())["sets"].values() for r in d["rows"]}
        if args.compare
        else None
    )
    load = os.getloadavg()
    doc: dict[str, Any] = {
        "benchmark": "constraint_backends",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load],
        "timeout_s": args.timeout_s,
        "timed": wrapped,
        "sets": {},
    }
    for name in args.sets:
        problems = [
            p
            for p in load_problems(PROGRAMS.format(name), data_dir=args.data_dir).problems
            if p.program is not None and (not args.only or p.id in args.only)
        ]
        if not problems:
            continue
        solve_one(problems[0], limits, clock, False, False)  # warm: imports, Z3 loaded (timed run repeats it)
        rows = [solve_one(p, limits, clock, args.verify, args.certificates) for p in problems]
        summary = summarize(rows)
        diff = compare(rows, old) if old is not None else None
        report(f"{name} (load {os.getloadavg()[0]:.1f})", summary, diff)
        doc["sets"][name] = {"summary": summary, "differences": diff, "rows": rows}
    doc["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{args.name}.json"
    path.write_text(json.dumps(doc, indent=None if args.certificates else 1, ensure_ascii=False))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
