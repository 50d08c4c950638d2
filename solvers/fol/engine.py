"""The ``logiclm-fol`` language (Logic-LM's FOL, FOLIO) decided by Prover9, with its certificates.

The language (syntax tree, parser, readings) is :mod:`symbolkg.solvers.fol.syntax`; this module is
its engine: the program goes to Prover9 in Prover9's notation
(:func:`symbolkg.solvers.fol.prover9_syntax.to_prover9`), Prover9 decides the conclusion
(:func:`symbolkg.solvers.fol.prover9.entail`: two searches, for the goal and for its negation), the
readings combine as :func:`symbolkg.solvers.fol.readings.decide_readings` says, and every answer
carries an ``entailment`` certificate (:mod:`symbolkg.solvers.certificates.entailment`).

The order of the work (:mod:`symbolkg.solvers.fol.race`), each step only when the one before left
the answer open:

1. a finite-model search over 1-3 individuals (:func:`~symbolkg.solvers.fol.race.precheck`, a few
   milliseconds in this process): a model with the goal false and one with it true answer Unknown
   (backend ``z3``; the models are the certificate, checked by a plain evaluator); one model rules
   out the Prover9 search it refutes (:func:`~symbolkg.solvers.fol.race.provable_sides`), so a
   True or False answer usually costs one Prover9 process, not two;
2. Prover9 on the searches left (both when the one run proves nothing); its proof is the
   certificate (the premises it used);
3. when Prover9 has not decided after a short, adaptive wait, the model search over up to 6
   individuals races it in a thread (:class:`~symbolkg.solvers.fol.race.ModelRace`): the first
   definite answer wins, with its own certificate. The models of an Unknown answer Prover9
   decided come from the same search (:func:`symbolkg.solvers.fol.prover9.with_countermodels`).

The answer is the same as Prover9 alone gives whenever Prover9 decides (a finite model and a proof
cannot both exist); a program Prover9 cannot decide in time but that has small models is answered
Unknown instead of TIMEOUT.
"""

from __future__ import annotations

import time
from dataclasses import replace

from symbolkg.solvers.certificates.entailment import Cited
from symbolkg.solvers.fol import prover9
from symbolkg.solvers.fol.prover9_syntax import to_prover9
from symbolkg.solvers.fol.race import BACKEND as RACE_BACKEND
from symbolkg.solvers.fol.race import ModelRace, models_certificate, precheck, provable_sides, record_decision
from symbolkg.solvers.fol.readings import decide_readings
from symbolkg.solvers.fol.syntax import FolProgram, Formula, parse
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

BACKEND = prover9.BACKEND

#: The proof text of an Unknown answer the model search decided before any prover started.
MODELS_PROOF = (
    "Z3 found finite models of premises ∧ ¬goal and of premises ∧ goal: neither the goal nor its "
    "negation is entailed (both models are in the certificate)"
)

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
        outcome = decide_readings(
            program, lambda goal, lim, full: _entail(program, goal, lim, countermodels=full), limits, backend=BACKEND
        )
    return replace(outcome, seconds=sw.seconds)


def _entail(program: FolProgram, goal: Formula, limits: Limits, *, countermodels: bool = True) -> Outcome:
    """The premises and ``goal``: models first, then Prover9 raced by the model search; the certificate."""
    t0 = time.perf_counter()
    program = replace(program, conclusion=replace(program.conclusion, formula=goal))
    translation = to_prover9(program)
    texts = [p.text for p in program.premises] + [program.conclusion.text]
    premises = [p.formula for p in program.premises]
    goal_false, goal_true = precheck(premises, goal, limits.timeout_s)
    sides = provable_sides(goal_false, goal_true)
    if not sides:  # a model with the goal false and one with it true: Unknown, certified by both
        cited = Cited(translation.lines[-1], texts[-1], translation.goal)
        return Outcome(
            Status.UNKNOWN,
            answer="Unknown",
            proof=MODELS_PROOF,
            seconds=time.perf_counter() - t0,
            backend=RACE_BACKEND,
            certificate=models_certificate(cited, RACE_BACKEND, goal_false, goal_true),
        )
    race = ModelRace(premises, goal, t0 + limits.timeout_s)
    try:
        left = replace(limits, timeout_s=max(0.1, limits.timeout_s - (time.perf_counter() - t0)))
        outcome = prover9.entail(
            translation.assumptions,
            translation.goal,
            left,
            source_lines=translation.lines,
            source_texts=texts,
            race=race,
            sides=sides,
        )
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
