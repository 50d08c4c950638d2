"""The batch solve job: problems with programs -> solver pool -> results Parquet.

Runs as ``symbolkg solve ...`` or, on a cluster, unchanged as
``ray job submit --working-dir . -- python -m symbolkg.jobs solve ...``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Iterator, Sized
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from symbolkg.jobs.pipeline.answers import interpret, is_correct
from symbolkg.jobs.pipeline.intake import Intake, UniqueIds
from symbolkg.jobs.pipeline.rows import Problem, Program, ResultRow, certificate_json
from symbolkg.jobs.pipeline.store import ResultStore
from symbolkg.solvers.outcomes import CheckSpec, ErrorKind, Limits, Outcome, SolveRequest, Status
from symbolkg.solvers.runtime.local_pool import PoolResult, SolverPool

if TYPE_CHECKING:
    from symbolkg.jobs.pipeline.gates import GateStats


@dataclass(frozen=True)
class SolveSummary:
    """What one session of the job did."""

    total: int  # problems in the input
    skipped_done: int  # already recorded by an earlier session
    solved: int  # rows written by this session
    wall_seconds: float
    gates: tuple[GateStats, ...] = ()  # the LLM jobs' stage gates at the end (jobs/pipeline/gates.py); () for run_solve
    cross_checked: int = 0  # --cross-check: logiclm-fol rows also solved by Z3 this session
    disagreements: int = 0  # ... where Z3's answer differs from the row's (both answered)
    cross_undecided: int = 0  # ... where Z3 or the main prover gave no answer (agrees is null)


#: The outcome recorded for a problem without a program (unexecuted).
NO_PROGRAM = Outcome.error(Status.PARSE_ERROR, ErrorKind.NO_PROGRAM, "the problem has no program", backend="none")

#: ``--cross-check``: language -> (second-opinion language, its backend) for the same program text.
CROSS_CHECK = {"logiclm-fol": ("logiclm-fol-z3", "z3")}


def cross_check_entry(outcome: Outcome, second: Outcome, backend: str = "z3") -> dict:
    """The row's ``trace["cross_check"]``: the second prover's answer and whether it agrees (null: one has none)."""
    answers = (outcome.answer if outcome.executed else None, second.answer if second.executed else None)
    agrees = None if None in answers else answers[0] == answers[1]
    entry = {"backend": backend, "answer": answers[1], "agrees": agrees}
    if not second.executed:
        entry["status"] = second.status.value
    return entry


def result_row(
    problem: Problem,
    outcome: Outcome,
    *,
    method: str,
    worker: str,
    attempts: int,
    latency_s: float,
    trace: dict | None = None,
) -> ResultRow:
    """Interpret an outcome for a problem and build its result row (``trace``: the row's trace object, to which
    the parser's ``readings`` of the program are added when it made any)."""
    predicted = interpret(problem, outcome.answer) if outcome.executed else None
    return ResultRow(
        problem_id=problem.id,
        dataset=problem.dataset,
        method=method,
        language=problem.program.language if problem.program else None,
        program=problem.program.text if problem.program else None,
        status=outcome.status.value,
        executed=outcome.executed,
        answer=outcome.answer,
        predicted=predicted,
        gold=problem.answer,
        correct=outcome.executed and is_correct(problem, predicted),
        error_kind=outcome.error_kind,
        error_message=outcome.error_message,
        error_line=outcome.error_line,
        proof=outcome.proof,
        backend=outcome.backend,
        solve_seconds=outcome.seconds,
        latency_seconds=latency_s,
        worker=worker,
        attempts=attempts,
        finished_at=time.time(),
        rounds=1 if problem.program else 0,
        success_round=1 if outcome.executed else None,
        certificate=certificate_json(outcome.certificate),
        trace=json.dumps(
            {**(trace or {}), **({"readings": outcome.readings} if outcome.readings else {})}, ensure_ascii=False
        ),
    )


def _check_spec(problem: Problem, corrections: bool) -> CheckSpec:
    """The formalization checks the worker runs on ``problem``'s program before solving it."""
    return CheckSpec(problem.question, tuple(problem.options), corrections)


def _cross_check_outcomes(
    todo: list[Problem], pool: SolverPool, limits: Limits, corrections: bool
) -> dict[str, Outcome]:
    """``--cross-check``: problem id -> the second prover's outcome, for every program of a :data:`CROSS_CHECK` language
    (the same checks and corrections first, so both provers solve the same program)."""
    requests = [
        SolveRequest(p.id, CROSS_CHECK[p.program.language][0], p.program.text, limits, _check_spec(p, corrections))
        for p in todo
        if p.program is not None and p.program.language in CROSS_CHECK
    ]
    return {result.request.problem_id: result.outcome for result in pool.imap_unordered(requests)}


def _checked_row_parts(problem: Problem, outcome: Outcome) -> tuple[Problem, Outcome, dict]:
    """The problem with the program the worker solved, the outcome, and the checks' trace entries."""
    entries = dict(outcome.checks or {})
    solved = entries.pop("program", None)
    if solved is not None and problem.program is not None:
        problem = problem.with_program(Program(language=problem.program.language, text=solved))
    return problem, replace(outcome, checks=None), entries


@dataclass
class _Tally:
    """What a session of :func:`run_solve` wrote so far, and its progress bar (None: no bar)."""

    bar: Any
    solved: int = 0
    correct: int = 0
    cross_checked_rows: int = 0
    disagreements: int = 0
    cross_undecided: int = 0

    def wrote(self, row: ResultRow | None) -> None:
        """One row written: ``row`` from the pool, None for a problem without a program (no postfix)."""
        self.solved += 1
        if row is not None:
            self.correct += row.correct
        if self.bar is not None:
            self.bar.update(1)
            if row is not None:
                self.bar.set_postfix(correct=f"{self.correct}/{self.solved}", refresh=False)

    def cross_checked(self, trace: dict | None, result: PoolResult, second: Outcome) -> dict:
        """``trace`` with the ``cross_check`` entry of ``result`` against the second prover's outcome; counted."""
        entry = cross_check_entry(result.outcome, second, CROSS_CHECK[result.request.language][1])
        self.cross_checked_rows += 1
        self.disagreements += entry["agrees"] is False
        self.cross_undecided += entry["agrees"] is None
        return {**(trace or {}), "cross_check": entry}


def _progress(total: int | None, enabled: bool):  # -> tqdm | None
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="problem", dynamic_ncols=True, file=sys.stderr, smoothing=0.1)


def run_solve(
    problems: Iterable[Problem],
    store: ResultStore,
    pool: SolverPool,
    *,
    limits: Limits = Limits(),
    method: str = "recorded",
    progress: bool = True,
    corrections: bool = True,
    cross_check: bool = False,
) -> SolveSummary:
    """Solve every problem not yet in ``store``; stream rows into it; finalize it.

    Args:
        problems: problems with programs (``program=None`` is recorded as
            ``no_program``, unexecuted), consumed once, lazily: memory follows the requests in
            flight (with ``cross_check``, the problems not yet done are held for its first pass).
        store: the results store; problems it already holds are skipped; with a shard
            (``store.shard``), only that shard's problems run.
        pool: where programs run (never in this process).
        limits: per-call limits.
        method: value of the ``method`` column.
        progress: show a progress bar on stderr.
        corrections: solve the program as the formalization checks corrected it (the row's
            ``trace`` keeps the findings and the original program); False: solve it as given
            (the checks still run and are recorded). The checks run in the worker with the
            solve (:class:`~symbolkg.solvers.outcomes.CheckSpec`): they parse the program, which
            the orchestrator never does.
        cross_check: first solve every program of a language in :data:`CROSS_CHECK` with the
            second prover too (a pass of its own through ``pool``); each such row's ``trace``
            gets ``cross_check`` (:func:`cross_check_entry`) and the summary counts disagreements.

    Returns:
        A :class:`SolveSummary` of this session.

    Raises:
        ValueError: a problem id met a second time while its first copy is in flight or recorded by
            this session (raised when the copy comes up; rows finished before are kept, as after a kill).
    """
    t0 = time.monotonic()
    total = len(problems) if isinstance(problems, Sized) and store.shard is None else None  # a shard's share: unknown
    tally = _Tally(_progress(total, progress))
    intake = Intake(store, tally.bar)
    todo: Iterable[Problem] = intake.todo(problems)
    second: dict[str, Outcome] = {}
    if cross_check:  # a pass of its own first: this one mode holds the problems to do
        todo = list(todo)
        second = _cross_check_outcomes(todo, pool, limits, corrections)
    unique = UniqueIds(store)
    in_flight: dict[str, Problem] = {}

    def requests() -> Iterator[SolveRequest]:
        for p in todo:
            unique.enter(p.id)
            if p.program is None:
                store.append(result_row(p, NO_PROGRAM, method=method, worker="-", attempts=0, latency_s=0.0))
                unique.leave(p.id)
                tally.wrote(None)
                continue
            in_flight[p.id] = p
            yield SolveRequest(p.id, p.program.language, p.program.text, limits, _check_spec(p, corrections))

    try:
        for result in pool.imap_unordered(requests()):
            problem, outcome, trace = _checked_row_parts(in_flight.pop(result.request.problem_id), result.outcome)
            if problem.id in second:
                trace = tally.cross_checked(trace, result, second.pop(problem.id))
            row = result_row(
                problem,
                outcome,
                method=method,
                worker=result.worker,
                attempts=result.attempts,
                latency_s=result.latency_s,
                trace=trace,
            )
            store.append(row)
            unique.leave(problem.id)
            tally.wrote(row)
        store.finalize()
    finally:
        store.flush()
        if tally.bar is not None:
            tally.bar.close()
    return SolveSummary(
        total=intake.seen,
        skipped_done=intake.skipped,
        solved=tally.solved,
        wall_seconds=time.monotonic() - t0,
        cross_checked=tally.cross_checked_rows,
        disagreements=tally.disagreements,
        cross_undecided=tally.cross_undecided,
    )
