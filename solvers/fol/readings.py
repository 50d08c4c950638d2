"""How a ``logiclm-fol`` program's readings combine into one answer, whichever prover decides it.

The readings are specified in :mod:`symbolkg.solvers.fol.syntax` ("free variables in the
conclusion", "ellipses in a conjunction"); :func:`decide_readings` applies them around any
decision procedure, so the Prover9 engine (:mod:`symbolkg.solvers.fol.engine`) and the Z3 engine
(:mod:`symbolkg.solvers.fol.z3_engine`) answer every program the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from symbolkg.solvers.fol.syntax import FolProgram, Formula
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, Status

_DECIDED = (Status.PROVED, Status.DISPROVED, Status.UNKNOWN)


def decide_readings(
    program: FolProgram, decide: Callable[[Formula, Limits, bool], Outcome], limits: Limits, *, backend: str
) -> Outcome:
    """The program's answer under the readings of the module docstring, with any prover.

    ``decide(goal, limits, full)`` decides ``goal`` from the premises (``full``: with the whole
    certificate; False for the second reading of a free variable, whose certificate is not kept).
    A conclusion with free variables is decided as ∀ and as ∃: the answer when both agree, else a
    PARSE_ERROR naming both answers. An Uncertain answer from premises with elided conjuncts is
    refused (the elided items might decide it).
    """
    start = time.perf_counter()
    outcome = decide(program.conclusion.formula, limits, True)
    if program.open_conclusion and outcome.status in _DECIDED:
        left = replace(limits, timeout_s=max(limits.timeout_s - (time.perf_counter() - start), 0.1))
        outcome = _both_readings(program, outcome, decide(program.existential_conclusion(), left, False), backend)
    if outcome.answer == "Unknown" and program.elided:
        lines = ", ".join(map(str, program.elided))
        outcome = Outcome.error(
            Status.PARSE_ERROR,
            ErrorKind.UNSUPPORTED,
            f"the written premises leave the conclusion Uncertain, and the '...' on line(s) {lines} elides conjuncts "
            "that might decide it; write out every item explicitly",
            line=program.elided[0],
            backend=backend,
        )
    return outcome


def _both_readings(program: FolProgram, universal: Outcome, existential: Outcome, backend: str) -> Outcome:
    """The ∀ reading's outcome when the ∃ reading gives the same answer; else a refusal naming both."""
    names = ", ".join(program.open_conclusion)
    if existential.status in _DECIDED and existential.answer == universal.answer:
        note = (
            f"free {names} in the conclusion: read as ∀ and as ∃, both give {universal.answer}; "
            "the proof below is the ∀ reading's"
        )
        return replace(universal, proof=f"{note}\n{universal.proof or ''}".rstrip())
    other = existential.answer if existential.status in _DECIDED else f"undecided ({existential.status.value})"
    forall = " ".join(f"∀{v}" for v in program.open_conclusion)
    exists = " ".join(f"∃{v}" for v in program.open_conclusion)
    return Outcome.error(
        Status.PARSE_ERROR,
        ErrorKind.UNDECLARED,
        f"the conclusion uses {names} without a quantifier, and the answer depends on the reading: with {forall} "
        f"it is {universal.answer}, with {exists} it is {other}; add the quantifier the sentence means "
        f"({forall} for 'every', {exists} for 'some' or one individual)",
        line=program.conclusion.line,
        backend=backend,
    )
