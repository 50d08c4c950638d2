"""The batch solve job: problems with programs -> solver pool -> results Parquet.

Runs as ``symbolkg solve ...`` or, on a cluster, unchanged as
``ray job submit --working-dir . -- python -m symbolkg.jobs solve ...``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from symbolkg.jobs.core.answers import interpret
from symbolkg.jobs.core.results import check_spec, result_row
from symbolkg.jobs.core.rows import Problem, Program, ResultRow
from symbolkg.jobs.pipeline.intake import Intake, UniqueIds, progress_total
from symbolkg.jobs.pipeline.store import ResultStore
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, SolveRequest, Status
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


def _recorded_row(
    problem: Problem,
    outcome: Outcome,
    *,
    method: str,
    result: PoolResult | None = None,
    trace: dict | None = None,
) -> ResultRow:
    """The row of a given program's outcome: its answer interpreted for ``problem``, one round (none
    without a program); ``result``: where the pool ran it (None: it did not run)."""
    return result_row(
        problem,
        outcome,
        method=method,
        predicted=interpret(problem, outcome.answer) if outcome.executed else None,
        language=problem.program.language if problem.program else None,
        program=problem.program.text if problem.program else None,
        rounds=1 if problem.program else 0,
        success_round=1 if outcome.executed else None,
        worker=result.worker if result else "-",
        pool_attempts=result.attempts if result else 0,
        latency_s=result.latency_s if result else 0.0,
        trace=trace,
    )


def _cross_check_outcomes(
    todo: list[Problem], pool: SolverPool, limits: Limits, corrections: bool
) -> dict[str, Outcome]:
    """``--cross-check``: problem id -> the second prover's outcome, for every program of a :data:`CROSS_CHECK` language
    (the same checks and corrections first, so both provers solve the same program)."""
    requests = [
        SolveRequest(
            p.id, CROSS_CHECK[p.program.language][0], p.program.text, limits, check_spec(p, corrections=corrections)
        )
        for p in todo
        if p.program is not None and p.program.language in CROSS_CHECK
    ]
    return {result.request.problem_id: result.outcome for result in pool.imap_unordered(requests)}


def _checked_row_parts(problem: Problem, outcome: Outcome) -> tuple[Problem, Outcome, dict]:
    """The problem with the program the worker solved, the outcome, and the checks' trace entries
    ({} when the worker returned no report: it crashed or was stopped before its checks ended)."""
    report = outcome.checks
    if report is None:
        return problem, outcome, {}
    if report.corrected and report.program is not None and problem.program is not None:
        problem = problem.with_program(Program(language=problem.program.language, text=report.program))
    return problem, outcome, report.trace()


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

    def summary(self, intake: Intake, wall_seconds: float) -> SolveSummary:
        """The :class:`SolveSummary` of the session that read its problems through ``intake``."""
        return SolveSummary(
            total=intake.seen,
            skipped_done=intake.skipped,
            solved=self.solved,
            wall_seconds=wall_seconds,
            cross_checked=self.cross_checked_rows,
            disagreements=self.disagreements,
            cross_undecided=self.cross_undecided,
        )


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
    tally = _Tally(_progress(progress_total(problems, store), progress))
    intake = Intake(store, tally.bar)
    todo: Iterable[Problem] = intake.todo(problems)
    second: dict[str, Outcome] = {}
    if cross_check:  # a pass of its own first: this one mode holds the problems to do
        todo = list(todo)
        second = _cross_check_outcomes(todo, pool, limits, corrections)
    session = _Session(store, method, limits, corrections, tally, UniqueIds(store), second)
    try:
        for result in pool.imap_unordered(session.requests(todo)):
            session.record(result)
        store.finalize()
    finally:
        store.flush()
        if tally.bar is not None:
            tally.bar.close()
    return tally.summary(intake, time.monotonic() - t0)


@dataclass
class _Session:
    """One session of :func:`run_solve` between the pool and the store: the requests it sends, the rows it writes.

    Attributes:
        second: ``--cross-check``: the second prover's outcome by problem id (taken as rows are written).
        in_flight: the problems sent to the pool and not yet written, by id.
    """

    store: ResultStore
    method: str
    limits: Limits
    corrections: bool
    tally: _Tally
    unique: UniqueIds
    second: dict[str, Outcome]
    in_flight: dict[str, Problem] = field(default_factory=dict)

    def requests(self, todo: Iterable[Problem]) -> Iterator[SolveRequest]:
        """One request per problem with a program (in flight until its row is written); a problem without
        one is written at once as :data:`NO_PROGRAM`.

        Raises:
            ValueError: a problem id met again while its first copy is in flight or written by this session.
        """
        for p in todo:
            self.unique.enter(p.id)
            if p.program is None:
                self.store.append(_recorded_row(p, NO_PROGRAM, method=self.method))
                self.unique.leave(p.id)
                self.tally.wrote(None)
                continue
            self.in_flight[p.id] = p
            spec = check_spec(p, corrections=self.corrections)
            yield SolveRequest(p.id, p.program.language, p.program.text, self.limits, spec)

    def record(self, result: PoolResult) -> ResultRow:
        """Write the row of a request the pool finished (the program the worker solved, its checks, the
        cross-check entry when there is one) and return it."""
        problem, outcome, trace = _checked_row_parts(self.in_flight.pop(result.request.problem_id), result.outcome)
        if problem.id in self.second:
            trace = self.tally.cross_checked(trace, result, self.second.pop(problem.id))
        row = _recorded_row(problem, outcome, method=self.method, result=result, trace=trace)
        self.store.append(row)
        self.unique.leave(problem.id)
        self.tally.wrote(row)
        return row
