"""The LLM batch job: many problems in flight through one engine and one solver pool.

An engine is only saturated when it sees many requests at once (continuous batching;
DESIGN.md: one problem at a time wastes ~17/18 of a 70B engine). So the job runs
``max_in_flight`` problem coroutines concurrently, each awaiting its own LLM and solver
calls, instead of batching problems in lockstep: a problem whose program needs a repair
round does not hold up the others, and the engine always has work queued.

Each stage has its own bound too (:mod:`symbolkg.jobs.pipeline.gates`): the engine and the solver pool sit
behind FIFO gates (``stage_limits``), so a problem that finds its stage full waits at the
gate holding its in-flight slot, and when every slot waits at the slowest stage no new
problem is taken (backpressure). The gates' events go beside the run
(``RUN.parquet.gates/``, read by ``symbolkg profile``) and their summary into the
returned :class:`symbolkg.jobs.pipeline.programs_job.SolveSummary`.

Every request of a problem carries the problem's admission number as its priority
(:class:`~symbolkg.actors.engines.base.Prioritized`). A vLLM engine started with
``VLLMConfig.scheduling_policy="priority"`` serves the requests waiting for a batch slot by it (a
started problem's repair before a later problem's first request, so problems finish in about the
order they started); the default, first come first served, ignores it.

Problems that share a context are taken next to each other (:func:`group_by_context`): every
prompt puts its fixed instructions and examples first, then the context, then the question, so
questions on one context share the longest prompt prefix, and the engine's prefix cache still
holds it when the next of them arrives (ProofWriter has 600 questions on 345 contexts, scattered
through the file).

Rows stream into the resumable :class:`symbolkg.jobs.pipeline.store.ResultStore` as problems finish; a
rerun skips the problems already recorded (and with the replay cache on, a rerun of
finished LLM calls costs no tokens). A store with a shard (``--shard i/n``) runs only that
shard's problems, so ``n`` drivers split one job (:mod:`symbolkg.jobs.pipeline.store`).

The driver's memory follows the problems in flight, not the size of the job: the input is read
lazily (grouping looks ahead a bounded window), and nothing is kept per finished problem but the
store's 8-byte hash of its id (see ``run_method_job``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import count, islice
from typing import Any

from symbolkg.actors.engines.base import EngineDeadError, LLMEngine, Prioritized
from symbolkg.jobs import methods
from symbolkg.jobs.core.concurrency import for_each_in_flight
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.methods import Method, MethodConfig, run_problem
from symbolkg.jobs.pipeline.gates import GatedEngine, GatedSolver, GateLog, StageGate, StageLimits
from symbolkg.jobs.pipeline.intake import Intake, UniqueIds, progress_total
from symbolkg.jobs.pipeline.programs_job import SolveSummary
from symbolkg.jobs.pipeline.store import ResultStore
from symbolkg.solvers.runtime.local_pool import SolverPool


async def run_method_job(
    problems: Iterable[Problem],
    store: ResultStore,
    cfg: MethodConfig,
    engine: LLMEngine,
    solver: SolverPool | None,
    *,
    max_in_flight: int = 64,
    progress: bool = True,
    method: Method | None = None,
    stage_limits: StageLimits | None = None,
    gate_log: bool = True,
    group_contexts: bool = True,
) -> SolveSummary:
    """Run ``cfg.method`` on every problem not yet in ``store`` (of ``store.shard``, when it has one).

    Args:
        problems: the problems (ids must be unique), consumed once, lazily (a generator of 10^7 is
            fine: memory follows the problems in flight; a resumed job also holds the exact set of
            the problems already done, ~25 bytes each).
        store: results store; finalized when every problem has a row. With a shard
            (:class:`~symbolkg.jobs.core.ids.Shard`), only the problems of that shard run.
        cfg: the method's name and the settings every method shares.
        engine: the LLM backend (used concurrently).
        solver: the solver pool (needed by methods whose ``needs_solver`` is set).
        max_in_flight: problems processed concurrently (keep it >= the engine's batch size).
        progress: progress bar on stderr.
        method: the method, with its own settings and per-job state (e.g. the ``symbolkg``
            method's LKG store); default: the registry's ``cfg.method`` with its defaults.
            Closed when the job ends, however it ends.
        stage_limits: slots of the ``llm`` and ``solve`` gates (:class:`symbolkg.jobs.pipeline.gates.StageLimits`);
            None = the defaults (LLM unlimited, solver calls at most twice the pool's workers).
        gate_log: stream the gates' events beside the run (``RUN.parquet.gates/``, the last ones
            however the job ends) for ``symbolkg profile``.
        group_contexts: take problems that share a context next to each other, within windows of
            :data:`GROUP_WINDOW` problems (:func:`group_by_context`); False = the input order.

    Returns:
        What this session did; ``gates`` holds the stats of the ``llm`` gate (and the ``solve``
        gate when there is a solver pool).

    Raises:
        EngineDeadError: the engine died; rows finished so far are flushed, a rerun resumes.
        ValueError: ``max_in_flight`` < 1, an unknown method, a method that needs a solver pool
            without one, or a problem id met a second time while its first copy is in flight or
            recorded by this session (the input is read lazily: raised when the copy comes up; rows
            finished before are kept, as after a kill).
    """
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
    t0 = time.monotonic()
    method = _resolve_method(cfg, solver, method)
    tally = _Tally(_progress_bar(progress_total(problems, store)) if progress else None, t0)
    intake = Intake(store, tally.bar)
    todo = intake.todo(problems)
    if group_contexts:
        todo = _grouped(todo, GROUP_WINDOW)
    log = GateLog(spill_to=store.path) if gate_log else None
    gates, gated_engine, gated_solver = _gated(engine, solver, (stage_limits or StageLimits()).resolve(solver), log)
    unique = UniqueIds(store)
    admitted = count()

    async def solve(problem: Problem) -> None:
        engine_of_problem = Prioritized(gated_engine, next(admitted))
        with unique.running(problem.id):
            row = await run_problem(problem, cfg, engine_of_problem, gated_solver, method)
        store.append(row)
        tally.wrote(row)

    try:
        await for_each_in_flight(todo, solve, max_in_flight)
        store.finalize()
    finally:
        store.flush()
        method.close()
        tally.close()
        if log is not None:
            log.close()
    return tally.summary(intake, gates)


GROUP_WINDOW = 4096
"""Problems read ahead to group by context (:func:`group_by_context`): a bounded lookahead, so a
job of any size holds at most this many problems beyond those in flight."""


@dataclass
class _Tally:
    """What the job wrote so far, shown on its progress bar (None: no bar)."""

    bar: Any
    t0: float
    solved: int = 0
    correct: int = 0
    tokens: int = 0

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def summary(self, intake: Intake, gates: list[StageGate]) -> SolveSummary:
        """The :class:`SolveSummary` of the job that read its problems through ``intake``; the gates' stats now."""
        return SolveSummary(
            total=intake.seen,
            skipped_done=intake.skipped,
            solved=self.solved,
            wall_seconds=time.monotonic() - self.t0,
            gates=tuple(g.stats() for g in gates),
        )

    def wrote(self, row: ResultRow) -> None:
        self.solved += 1
        self.correct += row.correct
        self.tokens += row.completion_tokens
        if self.bar is not None:
            elapsed = max(time.monotonic() - self.t0, 1e-9)
            self.bar.set_postfix(
                correct=f"{self.correct}/{self.solved}", tok_s=f"{self.tokens / elapsed:.0f}", refresh=False
            )
            self.bar.update(1)


def _progress_bar(total: int | None) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="problem", dynamic_ncols=True, file=sys.stderr)


def _resolve_method(cfg: MethodConfig, solver: SolverPool | None, method: Method | None) -> Method:
    """:func:`methods.resolve`, closing the given ``method`` when it does not fit (ValueError)."""
    try:
        return methods.resolve(cfg, solver, method)
    except ValueError:
        if method is not None:
            method.close()
        raise


def _gated(
    engine: LLMEngine, solver: SolverPool | None, limits: StageLimits, log: GateLog | None
) -> tuple[list[StageGate], GatedEngine, GatedSolver | None]:
    """The stage gates (``llm``, and ``solve`` with a solver pool) and the engine and solver behind them."""
    gates = [StageGate("llm", limits.llm, sink=log)]
    gated_engine = GatedEngine(engine, gates[0])
    gated_solver = None
    if solver is not None:
        gates.append(StageGate("solve", limits.solve, sink=log))  # type: ignore[arg-type]  # resolved: no "auto"
        gated_solver = GatedSolver(solver, gates[1])
    return gates, gated_engine, gated_solver


def group_by_context(problems: Iterable[Problem]) -> list[Problem]:
    """The problems with those that share a context next to each other.

    Stable: groups come in the order of their first problem, and a group keeps its problems'
    order, so an input without shared contexts comes back unchanged. Contexts are compared by
    their exact text (what the prompt holds). Resuming is unaffected: the job skips finished
    problems by id, whatever the order.
    """
    groups: dict[str, list[Problem]] = {}
    for p in problems:
        groups.setdefault(p.context, []).append(p)
    return [p for group in groups.values() for p in group]


def _grouped(problems: Iterable[Problem], window: int) -> Iterator[Problem]:
    """:func:`group_by_context` over consecutive windows of ``window`` problems, lazily."""
    it = iter(problems)
    while chunk := list(islice(it, window)):
        yield from group_by_context(chunk)


__all__ = ["run_method_job", "group_by_context", "EngineDeadError"]
