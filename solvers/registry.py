"""Program languages by name, and the one entry point that runs a program.

Every language module exposes two functions:

* ``parse(text: str) -> <typed program>`` raising :class:`symbolkg.solvers.outcomes.ProgramError`
  with a line number and an actionable message for malformed input;
* ``solve(text: str, limits: Limits) -> Outcome`` which never raises for a bad
  program.

Modules are imported lazily so that a worker only pays for the solvers it uses.
"""

from __future__ import annotations

import dataclasses
import importlib
import traceback
from collections.abc import Callable
from typing import Any

from symbolkg.solvers import checks
from symbolkg.solvers.outcomes import CheckSpec, ErrorKind, Limits, Outcome, SolveRequest, Status

#: language name -> (module, what it is)
LANGUAGES: dict[str, tuple[str, str]] = {
    "logiclm-lp": (
        "symbolkg.solvers.lp.engine",
        "Logic-LM logic program (ProntoQA/ProofWriter): Pred($x, True) facts, >>> rules",
    ),
    "logiclm-lp-swipl": (
        "symbolkg.solvers.lp.swipl",
        "the logiclm-lp language answered by SWI-Prolog (the router's prolog route)",
    ),
    "logiclm-fol": (
        "symbolkg.solvers.fol.engine",
        "Logic-LM first-order logic (FOLIO): Unicode connectives, Prover9 backend",
    ),
    "logiclm-fol-z3": (
        "symbolkg.solvers.fol.z3_engine",
        "the logiclm-fol language decided by Z3 (symbolkg solve --cross-check's second prover)",
    ),
    "logiclm-csp": (
        "symbolkg.solvers.csp.engine",
        "Logic-LM constraint program (LogicalDeduction): Domain/Variables/Constraints/Query",
    ),
    "logiclm-smt": (
        "symbolkg.solvers.smt.lsat_engine",
        "Logic-LM SAT/SMT DSL (AR-LSAT): EnumSort, Function, ForAll, Count, options",
    ),
    "prolog": (
        "symbolkg.solvers.prolog.language",
        "SWI-Prolog program text with a '% query: Goal' line (tabled, bounded)",
    ),
    "prover9": ("symbolkg.solvers.fol.prover9", "Prover9 input: formulas(assumptions)/formulas(goals) lists"),
    "smtlib2": ("symbolkg.solvers.smt.smtlib", "SMT-LIB2 script for Z3"),
    "symba": (
        "symbolkg.solvers.symba.engine",
        "SymBa clause language (ASP-like facts/rules, not, -p, denials, pooling, {a; b}, #count, arithmetic, "
        "strings) with a '?- goal.' query: tabled SLDNF backward chainer",
    ),
}

#: Languages the solver worker runs for the system itself, never given by a user or a dataset (not
#: in :data:`LANGUAGES`, so no input can name them): name -> (module, what it is).
INTERNAL_LANGUAGES: dict[str, tuple[str, str]] = {
    "certificate-check": (
        "symbolkg.solvers.certificates.recheck",
        "symbolkg verify: a JSON request that re-checks one answer's certificate with an independent engine",
    ),
}


def language_module(language: str) -> Any:
    try:
        module_name, _ = LANGUAGES[language] if language in LANGUAGES else INTERNAL_LANGUAGES[language]
    except KeyError:
        raise ValueError(f"unknown program language {language!r}; known: {', '.join(sorted(LANGUAGES))}") from None
    return importlib.import_module(module_name)


def parse(language: str, text: str) -> Any:
    """Parse ``text`` as ``language``; raises ProgramError on malformed input."""
    return language_module(language).parse(text)


def _checked(request: SolveRequest, spec: CheckSpec, solve: Callable[[str, Limits], Outcome]) -> Outcome:
    """The checks on ``request``'s program, its solve (as corrected when ``spec`` asks), and when that run is
    inconsistent and ``unstated_facts`` resolves it (:func:`symbolkg.solvers.checks.revise`), the revised run."""
    steps = 16 if spec.corrections else 0  # without corrections: the findings only
    corrected = checks.correct_program(request.language, request.text, spec, max_steps=steps)
    report = checks.check_report(request.text, corrected, corrections=spec.corrections)
    solved = report.program if report.corrected and report.program is not None else request.text
    outcome = solve(solved, request.limits)
    if spec.corrections and outcome.error_kind == ErrorKind.INCONSISTENT.value:
        finding = checks.revise(request.language, solved, spec.context, request.limits)
        revised = solve(finding.correction, request.limits) if finding and finding.correction else None
        if finding is not None and revised is not None and revised.error_kind != ErrorKind.INCONSISTENT.value:
            outcome = revised
            report = checks.with_revision(report, request.text, finding, request.language, spec)
    return dataclasses.replace(outcome, checks=report)


def run(request: SolveRequest) -> Outcome:
    """Run one program in this process. Never raises for a bad program.

    With ``request.checks``, the formalization checks run first (parse only) and the program is
    solved as they corrected it (when the spec asks for corrections; an inconsistent LP run is then
    revised, ``unstated_facts``); the outcome's ``checks``
    holds their typed report (:func:`symbolkg.solvers.checks.check_report`).

    This is what a solver worker process calls; the orchestrator never calls it
    on LLM-written programs (it goes through :mod:`symbolkg.solvers.runtime.worker`).
    """
    if request.language not in LANGUAGES and request.language not in INTERNAL_LANGUAGES:
        return Outcome.error(
            Status.PARSE_ERROR, ErrorKind.UNSUPPORTED, f"unknown program language {request.language!r}"
        )
    try:
        solve: Callable[[str, Limits], Outcome] = language_module(request.language).solve
        if request.checks is None:
            return solve(request.text, request.limits)
        return _checked(request, request.checks, solve)
    except MemoryError:
        return Outcome.error(Status.MEMORY, ErrorKind.MEMORY, "out of memory (worker memory limit reached)")
    except RecursionError:
        return Outcome.error(Status.RUNTIME_ERROR, ErrorKind.UNSUPPORTED, "program nested too deeply to process")
    except Exception as exc:  # noqa: BLE001 - the worker boundary: a bug of ours becomes a recorded outcome
        tb = traceback.format_exc(limit=4)
        return Outcome.error(Status.RUNTIME_ERROR, ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}\n{tb}")
