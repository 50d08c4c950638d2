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
returned :class:`symbolkg.jobs.pipeline.solve.SolveSummary`.

Problems that share a context are taken next to each other (:func:`group_by_context`): every
prompt puts its fixed instructions and examples first, then the context, then the question, so
questions on one context share the longest prompt prefix, and the engine's prefix cache still
holds it when the next of them arrives (ProofWriter has 600 questions on 345 contexts, scattered
through the file).

Rows stream into the resumable :class:`symbolkg.jobs.pipeline.store.ResultStore` as problems finish; a
rerun skips the problems already recorded (and with the replay cache on, a rerun of
finished LLM calls costs no tokens).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, Iterable

from symbolkg.actors.engines.base import EngineDeadError, LLMEngine
from symbolkg.jobs.pipeline.concurrency import for_each_in_flight
from symbolkg.jobs.pipeline.gates import GatedEngine, GatedSolver, GateLog, StageGate, StageLimits, write_gate_log
from symbolkg.jobs import methods
from symbolkg.jobs.methods import Method, MethodConfig, run_problem
from symbolkg.jobs.pipeline.rows import Problem, ResultRow
from symbolkg.jobs.pipeline.solve import SolveSummary
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
    """Run ``cfg.method`` on every problem not yet in ``store``.

    Args:
        problems: the problems (ids must be unique).
        store: results store; finalized when every problem has a row.
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
        gate_log: write the gates' events beside the run (``RUN.parquet.gates/``, one file per
            session, however the job ends) for ``symbolkg profile``.
        group_contexts: take problems that share a context next to each other (:func:`group_by_context`);
            False = the input order.

    Returns:
        What this session did; ``gates`` holds the stats of the ``llm`` gate (and the ``solve``
        gate when there is a solver pool).

    Raises:
        EngineDeadError: the engine died; rows finished so far are flushed, a rerun resumes.
        ValueError: duplicate problem ids, ``max_in_flight`` < 1, an unknown method, or a method
            that needs a solver pool without one.
    """
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
    t0 = time.monotonic()
    problems = list(problems)
    ids = [p.id for p in problems]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate problem ids in the input")
    method = _resolve_method(cfg, solver, method)
    done = store.done_ids()
    todo = [p for p in problems if p.id not in done]
    if group_contexts:
        todo = group_by_context(todo)
    skipped = sum(1 for p in problems if p.id in done)
    log = GateLog() if gate_log else None
    gates, gated_engine, gated_solver = _gated(engine, solver, (stage_limits or StageLimits()).resolve(solver), log)
    tally = _Tally(_progress_bar(len(problems), skipped) if progress else None, t0)

    async def solve(problem: Problem) -> None:
        row = await run_problem(problem, cfg, gated_engine, gated_solver, method)
        store.append(row)
        tally.wrote(row)

    try:
        await for_each_in_flight(todo, solve, max_in_flight)
        store.finalize()
    finally:
        store.flush()
        method.close()
        if tally.bar is not None:
            tally.bar.close()
        if log is not None:
            write_gate_log(store.path, log)
    return SolveSummary(total=len(problems), skipped_done=skipped, solved=tally.solved, wall_seconds=time.monotonic() - t0,
                        gates=tuple(g.stats() for g in gates))


@dataclass
class _Tally:
    """What the job wrote so far, shown on its progress bar (None: no bar)."""

    bar: Any
    t0: float
    solved: int = 0
    correct: int = 0
    tokens: int = 0

    def wrote(self, row: ResultRow) -> None:
        self.solved += 1
        self.correct += row.correct
        self.tokens += row.completion_tokens
        if self.bar is not None:
            elapsed = max(time.monotonic() - self.t0, 1e-9)
            self.bar.set_postfix(correct=f"{self.correct}/{self.solved}", tok_s=f"{self.tokens / elapsed:.0f}",
                                 refresh=False)
            self.bar.update(1)


def _progress_bar(total: int, skipped: int) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=skipped, unit="problem", dynamic_ncols=True, file=sys.stderr)


def _resolve_method(cfg: MethodConfig, solver: SolverPool | None, method: Method | None) -> Method:
    """:func:`methods.resolve`, closing the given ``method`` when it does not fit (ValueError)."""
    try:
        return methods.resolve(cfg, solver, method)
    except ValueError:
        if method is not None:
            method.close()
        raise


def _gated(engine: LLMEngine, solver: SolverPool | None, limits: StageLimits,
           log: GateLog | None) -> tuple[list[StageGate], GatedEngine, GatedSolver | None]:
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


__all__ = ["run_method_job", "group_by_context", "EngineDeadError"]
