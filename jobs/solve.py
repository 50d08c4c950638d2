"""The batch solve job: problems with programs -> solver pool -> results Parquet.

Runs as ``symbolkg solve ...`` or, on a cluster, unchanged as
``ray job submit --working-dir . -- python -m symbolkg.jobs solve ...``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator

from symbolkg.jobs.answers import interpret, is_correct
from symbolkg.jobs.records import Problem, ResultRow, certificate_json
from symbolkg.jobs.store import ResultStore
from symbolkg.solvers.pool import PoolResult, SolverPool
from symbolkg.solvers.records import ErrorKind, Limits, Outcome, SolveRequest, Status

if TYPE_CHECKING:
    from symbolkg.jobs.gates import GateStats


@dataclass(frozen=True)
class SolveSummary:
    """What one session of the job did."""

    total: int  # problems in the input
    skipped_done: int  # already recorded by an earlier session
    solved: int  # rows written by this session
    wall_seconds: float
    gates: tuple[GateStats, ...] = ()  # the LLM jobs' stage gates at the end (jobs/gates.py); () for run_solve


def result_row(problem: Problem, outcome: Outcome, *, method: str, worker: str, attempts: int, latency_s: float) -> ResultRow:
    """Interpret an outcome for a problem and build its result row."""
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
    )


def _progress(total: int, enabled: bool):  # -> tqdm | None
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
) -> SolveSummary:
    """Solve every problem not yet in ``store``; stream rows into it; finalize it.

    Args:
        problems: problems with programs (``program=None`` is recorded as
            ``no_program``, unexecuted).
        store: the results store; problems it already holds are skipped.
        pool: where programs run (never in this process).
        limits: per-call limits.
        method: value of the ``method`` column.
        progress: show a progress bar on stderr.

    Returns:
        A :class:`SolveSummary` of this session.

    Raises:
        ValueError: when two input problems share an id (results would be ambiguous).
    """
    t0 = time.monotonic()
    problems = list(problems)
    by_id: dict[str, Problem] = {}
    for p in problems:
        if p.id in by_id:
            raise ValueError(f"duplicate problem id {p.id!r} in the input")
        by_id[p.id] = p
    done = store.done_ids()
    todo = [p for p in problems if p.id not in done]
    bar = _progress(len(problems), progress)
    if bar is not None:
        bar.update(len(problems) - len(todo))
    solved = 0
    ok = 0

    def requests() -> Iterator[SolveRequest]:
        nonlocal solved
        for p in todo:
            if p.program is None:
                outcome = Outcome.error(Status.PARSE_ERROR, ErrorKind.NO_PROGRAM, "the problem has no program",
                                        backend="none")
                store.append(result_row(p, outcome, method=method, worker="-", attempts=0, latency_s=0.0))
                solved += 1
                if bar is not None:
                    bar.update(1)
                continue
            yield SolveRequest(p.id, p.program.language, p.program.text, limits)

    try:
        result: PoolResult
        for result in pool.imap_unordered(requests()):
            problem = by_id[result.request.problem_id]
            row = result_row(problem, result.outcome, method=method, worker=result.worker,
                             attempts=result.attempts, latency_s=result.latency_s)
            store.append(row)
            solved += 1
            ok += row.correct
            if bar is not None:
                bar.update(1)
                bar.set_postfix(correct=f"{ok}/{solved}", refresh=False)
        store.finalize()
    finally:
        store.flush()
        if bar is not None:
            bar.close()
    return SolveSummary(total=len(problems), skipped_done=len(problems) - len(todo), solved=solved,
                        wall_seconds=time.monotonic() - t0)
