"""The ``logiclm-fol`` language (Logic-LM's FOL, FOLIO) decided by Prover9, with its certificates.

The language (syntax tree, parser, readings) is :mod:`symbolkg.solvers.fol.syntax`; this module is
its engine: the program goes to Prover9 in Prover9's notation
(:func:`symbolkg.solvers.fol.prover9_syntax.to_prover9`), Prover9 decides the conclusion
(:func:`symbolkg.solvers.fol.prover9.entail`: two searches, for the goal and for its negation), the
readings combine as :func:`symbolkg.solvers.fol.readings.decide_readings` says, and every answer
carries an ``entailment`` certificate (:mod:`symbolkg.solvers.certificates.entailment`).

A program Prover9 has not decided after a short, adaptive wait is raced by a finite-model search
(:class:`symbolkg.solvers.fol.race.ModelRace`): two models (one with the goal false, one with it
true) answer Unknown at once, with backend ``z3`` and the models as the certificate; a proof
stops the search. The models of an Unknown answer Prover9 decided come from the same search
(:func:`symbolkg.solvers.fol.prover9.with_countermodels`).
"""

from __future__ import annotations

import time
from dataclasses import replace

from symbolkg.solvers.fol import prover9
from symbolkg.solvers.fol.race import ModelRace, record_decision
from symbolkg.solvers.fol.prover9_syntax import to_prover9
from symbolkg.solvers.fol.readings import decide_readings
from symbolkg.solvers.fol.syntax import FolProgram, Formula, parse
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

BACKEND = prover9.BACKEND

# ``parse`` (imported above from the syntax) and ``solve`` make this module the ``logiclm-fol``
# language of :mod:`symbolkg.solvers.registry`.


def solve(text: str, limits: Limits) -> Outcome:
    """Parse a FOLIO program and decide its conclusion with Prover9.

    Returns:
        PROVED/``"True"``, DISPROVED/``"False"`` or UNKNOWN/``"Unknown"``
        with the deciding proof and an ``entailment`` certificate
        (:mod:`symbolkg.solvers.certificates.entailment`: the premises the
        proof used; for Unknown, countermodels found by Z3 within
        :data:`symbolkg.solvers.fol.prover9.COUNTERMODEL_BUDGET_S`); PARSE_ERROR with a line and an actionable
        message for a malformed program; TIMEOUT when the search for the
        conclusion or its negation ran out of time with nothing proved.
        Never raises for a bad program.
    """
    with Stopwatch() as sw:
        try:
            program = parse(text)
        except ProgramError as err:
            return err.to_outcome(seconds=sw.elapsed(), backend=BACKEND)
        outcome = decide_readings(program, lambda goal, lim, full: _entail(program, goal, lim, countermodels=full),
                                  limits, backend=BACKEND)
    return replace(outcome, seconds=sw.seconds)


def _entail(program: FolProgram, goal: Formula, limits: Limits, *, countermodels: bool = True) -> Outcome:
    """Prover9 on the premises and ``goal``, raced by the model search when slow; the certificate (countermodels for Unknown)."""
    program = replace(program, conclusion=replace(program.conclusion, formula=goal))
    translation = to_prover9(program)
    texts = [p.text for p in program.premises] + [program.conclusion.text]
    premises = [p.formula for p in program.premises]
    race = ModelRace(premises, goal, time.perf_counter() + limits.timeout_s)
    try:
        outcome = prover9.entail(translation.assumptions, translation.goal, limits, source_lines=translation.lines,
                                 source_texts=texts, race=race)
        if outcome.backend == prover9.BACKEND and outcome.status in (Status.PROVED, Status.DISPROVED, Status.UNKNOWN):
            record_decision(outcome.seconds)
        if outcome.answer == "Unknown" and outcome.certificate is not None and (countermodels or race.started):
            certificate = prover9.with_countermodels(outcome.certificate, premises, goal, limits, race=race)
            outcome = replace(outcome, certificate=certificate)
    finally:
        race.stop()
    if outcome.status is Status.PARSE_ERROR:
        # Prover9 rejecting our own translation is a bug of ours, not of the program.
        outcome = Outcome.error(
            Status.RUNTIME_ERROR,
            ErrorKind.INTERNAL,
            f"internal translation error: {outcome.error_message}",
            line=outcome.error_line,
            backend=BACKEND,
        )
    return outcome
