"""The Logic-LM FOL language decided by Z3 (language ``logiclm-fol-z3``).

The program text is the ``logiclm-fol`` language (:mod:`symbolkg.solvers.fol.syntax`, same parser);
only the prover differs: ``symbolkg solve --cross-check`` runs every ``logiclm-fol`` program through
it as a second opinion on Prover9's answer (:mod:`symbolkg.jobs.pipeline.programs_job`). The translation to
Z3 and the finite-model search are :mod:`symbolkg.solvers.fol.z3_eval`'s (shared with the
certificate checker).

Decision (:func:`decide`), each check inside the call's deadline:

==================================================  ======================
both unsat (the premises are inconsistent)          UNSAT, no answer, kind
                                                    ``inconsistent`` (as the
                                                    Prover9 path answers it)
premises ∧ ¬goal unsat                              PROVED, ``"True"``
premises ∧ goal unsat                               DISPROVED, ``"False"``
both satisfiable                                    UNKNOWN, ``"Unknown"``
a side Z3 cannot decide (``unknown``/time limit)    TIMEOUT, with Z3's reason
==================================================  ======================

A side Z3 answers ``unknown`` for (incomplete quantifier instantiation) is retried as a search
for a finite model (:func:`~symbolkg.solvers.fol.z3_eval.find_model`): a finite model found is a
model, so that side is satisfiable.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from symbolkg.solvers.fol.readings import decide_readings
from symbolkg.solvers.fol.syntax import FolProgram, Formula, Not, parse
from symbolkg.solvers.fol.z3_eval import Check, find_model, satisfiable
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

BACKEND = "z3"

# ``parse`` (imported above from the syntax) and ``solve`` make this module the ``logiclm-fol-z3``
# language of :mod:`symbolkg.solvers.registry`.


# --------------------------------------------------------------------------- decide


def _side(formulas: Sequence[Formula], deadline: float, share: float) -> Check:
    """One side of the decision: Z3 with quantifiers, then a finite-model search if it says unknown."""
    budget = max(0.001, (deadline - time.perf_counter()) * share)
    check = satisfiable(formulas, budget)
    if check.result != "unknown" or time.perf_counter() >= deadline:
        return check
    search = find_model(formulas, max(0.001, deadline - time.perf_counter()) * share)
    if search.model is not None:
        return Check("sat", "finite model", check.seconds + search.seconds)
    return Check("unknown", f"{check.reason}; {search.reason}", check.seconds + search.seconds)


def decide(program: FolProgram, limits: Limits) -> Outcome:
    """Three-valued entailment of the program's conclusion by Z3 (module docstring)."""
    deadline = time.perf_counter() + limits.timeout_s
    premises = [p.formula for p in program.premises]
    goal = program.conclusion.formula
    not_goal = _side([*premises, Not(goal)], deadline, 0.5)
    with_goal = _side([*premises, goal], deadline, 1.0)
    if not_goal.result == "unsat" and with_goal.result == "unsat":
        return Outcome(
            Status.UNSAT,
            error_kind=ErrorKind.INCONSISTENT.value,
            error_message="the premises contradict each other (they entail both the conclusion and its "
            "negation), so no answer follows from them",
            proof="Z3: premises ∧ goal and premises ∧ ¬goal are both unsatisfiable",
            backend=BACKEND,
        )
    if not_goal.result == "unsat":
        return Outcome(Status.PROVED, answer="True", proof="Z3: premises ∧ ¬goal is unsatisfiable", backend=BACKEND)
    if with_goal.result == "unsat":
        return Outcome(Status.DISPROVED, answer="False", proof="Z3: premises ∧ goal is unsatisfiable", backend=BACKEND)
    if not_goal.result == "sat" and with_goal.result == "sat":
        return Outcome(
            Status.UNKNOWN,
            answer="Unknown",
            proof="Z3: premises ∧ goal and premises ∧ ¬goal are both satisfiable",
            backend=BACKEND,
        )
    undecided = [
        name for name, c in (("premises ∧ ¬goal", not_goal), ("premises ∧ goal", with_goal)) if c.result == "unknown"
    ]
    reasons = "; ".join(
        f"{name}: {c.reason}"
        for name, c in (("premises ∧ ¬goal", not_goal), ("premises ∧ goal", with_goal))
        if c.result == "unknown"
    )
    return Outcome.error(
        Status.TIMEOUT,
        ErrorKind.TIMEOUT,
        f"Z3 could not decide {' and '.join(undecided)} within {limits.timeout_s:g} s ({reasons})",
        backend=BACKEND,
    )


def solve(text: str, limits: Limits) -> Outcome:
    """Parse a FOLIO program (the ``logiclm-fol`` language) and decide its conclusion with Z3.

    Returns the same statuses and answers as :func:`symbolkg.solvers.fol.engine.solve`, with backend
    ``"z3"``; never raises for a bad program.
    """
    with Stopwatch() as sw:
        try:
            program = parse(text)
        except ProgramError as err:
            return err.to_outcome(seconds=sw.elapsed(), backend=BACKEND)
        outcome = decide_readings(
            program,
            lambda goal, lim, _full: decide(
                replace(program, conclusion=replace(program.conclusion, formula=goal)), lim
            ),
            limits,
            backend=BACKEND,
        )
    return replace(outcome, seconds=sw.seconds)
