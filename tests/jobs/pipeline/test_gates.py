"""Per-stage gates (jobs/pipeline/gates.py).

The gate alone, and method jobs whose ``llm`` / ``solve`` stages are bounded.
The job tests measure concurrency inside the backends (a counting wrapper around the scripted
engine and around real solver workers), so a gate that let too many calls through would show.
The wrappers hold calls until a condition on the job holds (enough calls inside, every problem in
flight past its LLM call) rather than sleeping: the overlap they measure is then the job's doing,
not a matter of how fast the machine ran the other problems during a sleep.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence

import pytest

from symbolkg.actors.engines.base import ChatRequest, Completion, Message
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.pipeline.gates import (
    GatedEngine,
    GateLog,
    StageGate,
    StageLimits,
    gate_log_dir,
    read_gate_log,
    write_gate_log,
)
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.outcomes import SolveRequest
from symbolkg.solvers.runtime.local_pool import LocalSolverPool, PoolResult
from tests.jobs.test_methods import GOOD_LP, problem


async def _settle() -> None:
    """Let every ready task run until it blocks (a few loop turns)."""
    for _ in range(5):
        await asyncio.sleep(0)


# -- the gate alone ---------------------------------------------------------------------------------------


def test_waiters_enter_in_arrival_order():
    async def main() -> list[int]:
        gate = StageGate("solve", 1)
        order: list[int] = []
        await gate.acquire()

        async def worker(i: int) -> None:
            async with gate.slot():
                order.append(i)
                await asyncio.sleep(0)

        tasks = []
        for i in range(6):
            tasks.append(asyncio.create_task(worker(i)))
            await _settle()  # worker i is queued before worker i + 1 arrives
        assert gate.waiting == 6 and order == []
        gate.release()
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(main()) == [0, 1, 2, 3, 4, 5]


def test_a_big_request_at_the_head_is_not_overtaken_by_a_small_one():
    async def main() -> None:
        gate = StageGate("llm", 2)
        await gate.acquire(1)
        big = asyncio.create_task(gate.acquire(2))
        await _settle()
        small = asyncio.create_task(gate.acquire(1))
        await _settle()
        assert not big.done() and not small.done()  # one slot is free, but the big call came first
        gate.release(1)
        await _settle()
        assert big.done() and not small.done() and gate.running == 2
        gate.release(await big)
        await small
        assert gate.running == 1 and gate.waiting == 0

    asyncio.run(main())


def test_limit_holds_under_contention_and_stats_add_up():
    async def main() -> tuple[int, StageGate, GateLog]:
        log = GateLog()
        gate = StageGate("solve", 3, sink=log)
        inside = peak = 0
        rng = random.Random(7)

        async def work() -> None:
            nonlocal inside, peak
            async with gate.slot():
                inside += 1
                peak = max(peak, inside)
                await asyncio.sleep(rng.uniform(0.0, 0.004))
                inside -= 1

        await asyncio.gather(*(work() for _ in range(40)))
        return peak, gate, log

    peak, gate, log = asyncio.run(main())
    s = gate.stats()
    assert peak == 3 == s.peak_running
    assert (s.passes, s.waiting, s.running, s.cancelled, s.limit) == (40, 0, 0, 0, 3)
    assert s.peak_waiting == 37  # all but the first three queued at once
    assert 0 < s.mean_wait_s <= s.max_wait_s and 0 < s.p95_wait_s <= s.max_wait_s
    assert s.total_wait_s == pytest.approx(s.mean_wait_s * 40, rel=1e-3)
    events = log.events()
    assert [e.event for e in events].count("enter") == 40 and [e.event for e in events].count("leave") == 40
    assert [e.event for e in events].count("wait") == 37
    assert all(0 <= e.running <= 3 and e.waiting >= 0 and e.stage == "solve" and e.limit == 3 for e in events)
    assert events[-1].running == 0 and events[-1].waiting == 0
    assert max(e.wait_s for e in events if e.event == "enter") == pytest.approx(s.max_wait_s, abs=1e-6)
    assert all(e.wait_s is None for e in events if e.event != "enter")


def test_a_cancelled_waiter_releases_nothing_it_did_not_hold():
    async def main() -> None:
        gate = StageGate("solve", 1)
        await gate.acquire()
        waiter = asyncio.create_task(gate.acquire())
        await _settle()
        assert gate.waiting == 1
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert (gate.running, gate.waiting, gate.stats().cancelled, gate.stats().passes) == (1, 0, 1, 1)
        gate.release()
        assert gate.running == 0
        await asyncio.wait_for(gate.acquire(), 1.0)  # the gate is free again: no slot was lost
        assert gate.running == 1

    asyncio.run(main())


def test_cancelling_the_head_lets_the_calls_behind_it_in():
    async def main() -> None:
        gate = StageGate("llm", 2)
        await gate.acquire(1)
        big = asyncio.create_task(gate.acquire(2))
        await _settle()
        small = asyncio.create_task(gate.acquire(1))
        await _settle()
        big.cancel()
        await asyncio.gather(big, return_exceptions=True)
        await asyncio.wait_for(small, 1.0)
        assert (gate.running, gate.waiting) == (2, 0)

    asyncio.run(main())


def test_slots_granted_to_a_call_cancelled_before_it_resumed_are_handed_back():
    async def main() -> None:
        gate = StageGate("solve", 1)
        await gate.acquire()
        waiter = asyncio.create_task(gate.acquire())
        behind = asyncio.create_task(gate.acquire())
        await _settle()
        gate.release()  # grants the waiter's future ...
        waiter.cancel()  # ... but the waiter is cancelled before it runs again
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await asyncio.wait_for(behind, 1.0)  # the slot went on to the next call
        assert (gate.running, gate.waiting) == (1, 0)

    asyncio.run(main())


def test_a_request_for_more_slots_than_the_limit_takes_the_whole_gate():
    async def main() -> None:
        gate = StageGate("llm", 2)
        assert await gate.acquire(5) == 2 and gate.running == 2
        gate.release(2)
        unlimited = StageGate("llm", None)
        assert await unlimited.acquire(5) == 5 and unlimited.running == 5

    asyncio.run(main())


@pytest.mark.parametrize("limit", [0, -1, True, 1.5, "2", "auto"])
def test_invalid_gate_limits_raise(limit):
    with pytest.raises(ValueError, match="must be an int >= 1"):
        StageGate("solve", limit)


def test_invalid_gate_use_raises():
    with pytest.raises(ValueError, match="non-empty name"):
        StageGate("", 1)
    gate = StageGate("solve", 1)
    with pytest.raises(ValueError, match="n >= 1"):
        asyncio.run(gate.acquire(0))
    with pytest.raises(RuntimeError, match="only 0 are held"):
        gate.release()
    log = GateLog()
    StageGate("solve", 1, sink=log)
    with pytest.raises(ValueError, match="already writes"):
        StageGate("solve", 2, sink=log)


@pytest.mark.parametrize("kwargs", [{"llm": 0}, {"llm": "auto"}, {"solve": -2}, {"solve": "lots"}, {"llm": 2.0}])
def test_invalid_stage_limits_raise(kwargs):
    with pytest.raises(ValueError, match="stage limit"):
        StageLimits(**kwargs)


def test_stage_limits_parse_and_resolve():
    assert StageLimits.parse("llm=16,solve=4") == StageLimits(llm=16, solve=4)
    assert StageLimits.parse(" solve = none ") == StageLimits(llm=None, solve=None)
    assert StageLimits.parse("llm=8") == StageLimits(llm=8, solve="auto")
    assert StageLimits.parse("") == StageLimits()
    for bad, match in [
        ("llm", "look like"),
        ("gpu=2", "look like"),
        ("llm=1,llm=2", "twice"),
        ("solve=x", "int >= 1"),
        ("llm=0", "stage limit llm"),
        ("llm=auto", "stage limit llm"),
    ]:
        with pytest.raises(ValueError, match=match):
            StageLimits.parse(bad)

    class Pool:
        workers = 3

    assert StageLimits().resolve(Pool()).solve == 6  # type: ignore[arg-type]
    assert StageLimits().resolve(None).solve is None  # no pool size: unlimited
    assert StageLimits(solve=5).resolve(Pool()).solve == 5  # type: ignore[arg-type]


def test_gated_engine_keeps_the_engine_face_and_holds_a_slot_per_request():
    async def main() -> None:
        inner = ScriptedEngine(lambda r: "ok", model="m", supports_structured=True, latency_s=0.01)
        gate = StageGate("llm", 4)
        engine = GatedEngine(inner, gate)
        assert (engine.model, engine.supports_structured) == ("m", True)
        reqs = [ChatRequest((Message("user", "hi"),)) for _ in range(3)]
        task = asyncio.create_task(engine.generate(reqs))
        await _settle()
        assert gate.running == 3
        assert [c.text for c in await task] == ["ok"] * 3 and gate.running == 0
        await engine.close()
        assert inner._closed

    asyncio.run(main())


def test_gate_log_round_trip(tmp_path):
    async def main(log: GateLog) -> None:
        gate = StageGate("solve", 1, sink=log)
        await asyncio.gather(*(_hold(gate) for _ in range(3)))

    log = GateLog()
    run = tmp_path / "run.parquet"
    assert write_gate_log(run, log) is None and read_gate_log(run) == []  # nothing to write; no folder: no events
    asyncio.run(main(log))
    path = write_gate_log(run, log)
    assert path is not None and path.parent == gate_log_dir(run) == tmp_path / "run.parquet.gates"
    assert read_gate_log(run) == log.events() and len(log.events()) == len(log) > 0


async def _hold(gate: StageGate) -> None:
    async with gate.slot():
        await asyncio.sleep(0.001)


# -- gated method jobs ------------------------------------------------------------------------------------


async def _until(condition: Callable[[], bool], patience_s: float = 10.0, then_turns: int = 0) -> None:
    """Poll ``condition`` every millisecond until it holds, then stay ``then_turns`` more loop turns
    (scheduling steps, not wall time: every other ready problem moves on meanwhile). Give up after
    ``patience_s``, a generous deadline: the conditions below hold within a few loop turns, and a
    gate that keeps them from ever holding fails its test on the counts."""
    deadline = time.monotonic() + patience_s
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    for _ in range(then_turns):
        await asyncio.sleep(0)


class CountingPool:
    """Real solver workers behind a wrapper that counts solve calls in flight.

    ``hold``: each call waits until it returns True before it runs (None: no wait).
    """

    def __init__(self, pool: LocalSolverPool, hold: Callable[[], bool] | None = None) -> None:
        self.pool = pool
        self.workers = pool.workers
        self.hold = hold
        self.inside = self.peak = self.calls = 0

    def imap_unordered(self, requests):  # pragma: no cover - not used by the method jobs
        return self.pool.imap_unordered(requests)

    async def solve(self, request: SolveRequest) -> PoolResult:
        self.inside += 1
        self.calls += 1
        self.peak = max(self.peak, self.inside)
        try:
            if self.hold is not None:
                await _until(self.hold)
            return await self.pool.solve(request)
        finally:
            self.inside -= 1

    def close(self) -> None:  # pragma: no cover - the module fixture closes the real pool
        pass


class CountingEngine:
    """A scripted engine behind a wrapper that counts requests in flight and answered.

    ``hold``: each call waits until it returns True before it is answered (None: no wait), and
    then ``hold_turns`` loop turns more.
    """

    def __init__(self, engine: ScriptedEngine, hold: Callable[[], bool] | None = None, hold_turns: int = 0) -> None:
        self.engine = engine
        self.model = engine.model
        self.supports_structured = engine.supports_structured
        self.hold = hold
        self.hold_turns = hold_turns
        self.inside = self.peak = self.answered = 0

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        self.inside += len(requests)
        self.peak = max(self.peak, self.inside)
        try:
            if self.hold is not None:
                await _until(self.hold, then_turns=self.hold_turns)
            completions = await self.engine.generate(requests)
            self.answered += len(requests)
            return completions
        finally:
            self.inside -= len(requests)

    async def close(self) -> None:
        await self.engine.close()


@pytest.fixture(scope="module")
def workers():
    with LocalSolverPool(4) as p:  # more workers than the gate allows: the pool alone would not bound it
        yield p


MAX_IN_FLIGHT = 8


def _run(
    tmp_path,
    workers,
    limits: StageLimits | None,
    *,
    n: int = 16,
    engine_hold: Callable[[CountingEngine, CountingPool], bool] | None = None,
    pool_hold: Callable[[CountingEngine, CountingPool], bool] | None = None,
):
    problems = [problem(f"p{i}") for i in range(n)]
    engine = CountingEngine(ScriptedEngine(lambda r: GOOD_LP))
    pool = CountingPool(workers)
    if engine_hold is not None:
        engine.hold = lambda: engine_hold(engine, pool)
        engine.hold_turns = 10
    if pool_hold is not None:
        pool.hold = lambda: pool_hold(engine, pool)
    out = tmp_path / "run.parquet"
    summary = asyncio.run(
        run_method_job(
            problems,
            ResultStore(out),
            MethodConfig("logiclm"),
            engine,
            pool,
            max_in_flight=MAX_IN_FLIGHT,
            progress=False,
            stage_limits=limits,
        )
    )
    table, _ = read_run(out)
    ids = table.column("problem_id").to_pylist()
    assert sorted(ids) == sorted(p.id for p in problems) and len(ids) == n  # every problem: exactly one row
    assert all(table.column("correct").to_pylist())
    return summary, engine, pool, read_gate_log(out)


def test_solve_limit_bounds_the_solver_calls_of_a_job(tmp_path, workers):
    # The calls inside the gate are held until every problem in flight has its program, so the
    # others are waiting at the gate meanwhile: the gate is contended on any machine.
    summary, engine, pool, events = _run(
        tmp_path, workers, StageLimits(solve=2), pool_hold=lambda engine, pool: engine.answered >= MAX_IN_FLIGHT
    )
    assert pool.peak == 2 and pool.calls == 16  # never more than two solver calls at once, and it was contended
    stats = {s.stage: s for s in summary.gates}
    solve = stats["solve"]
    assert (solve.limit, solve.passes, solve.peak_running, solve.waiting, solve.running) == (2, 16, 2, 0, 0)
    # problems waiting at the gate hold their in-flight slots: at most max_in_flight - limit queue there
    assert 0 < solve.peak_waiting <= MAX_IN_FLIGHT - 2 and solve.max_wait_s > 0
    assert stats["llm"].limit is None and stats["llm"].passes == len(engine.engine.requests) == 16
    solve_events = [e for e in events if e.stage == "solve"]
    assert max(e.running for e in solve_events) == 2 and any(e.event == "wait" for e in solve_events)
    assert sum(e.event == "enter" for e in solve_events) == 16
    assert max(e.wait_s or 0.0 for e in solve_events) == pytest.approx(solve.max_wait_s, abs=1e-6)
    assert {e.stage for e in events} == {"llm", "solve"}


def test_without_a_solve_limit_the_same_job_overlaps_more_solver_calls(tmp_path, workers):
    """The control of the test above: the measurement can see more than two calls."""
    # Calls are held until three are inside at once: without a limit that happens at once; a gate
    # that still let only two through would show a peak of 2 after the hold's patience ran out.
    summary, _, pool, _ = _run(
        tmp_path, workers, StageLimits(solve=None), pool_hold=lambda engine, pool: pool.peak >= 3
    )
    assert pool.peak > 2
    assert {s.stage: s for s in summary.gates}["solve"].peak_waiting == 0


def test_llm_limit_bounds_the_requests_in_the_engine(tmp_path, workers):
    # Requests are held until three are in the engine (so the peak is reached on any machine), and
    # ten loop turns more, in which the other problems in flight reach the gate and queue there.
    summary, engine, pool, events = _run(
        tmp_path, workers, StageLimits(llm=3, solve=None), engine_hold=lambda engine, pool: engine.peak >= 3
    )
    assert engine.peak == 3
    llm = {s.stage: s for s in summary.gates}["llm"]
    assert (llm.limit, llm.passes, llm.peak_running) == (3, 16, 3) and 0 < llm.peak_waiting <= MAX_IN_FLIGHT - 3
    llm_events = [e for e in events if e.stage == "llm"]
    assert max(e.running for e in llm_events) == 3 and any((e.wait_s or 0.0) > 0 for e in llm_events)


def test_default_limits_and_no_log(tmp_path, workers):
    problems = [problem(f"d{i}") for i in range(4)]
    out = tmp_path / "run.parquet"
    summary = asyncio.run(
        run_method_job(
            problems,
            ResultStore(out),
            MethodConfig("logiclm"),
            ScriptedEngine(lambda r: GOOD_LP),
            CountingPool(workers),
            progress=False,
            gate_log=False,
        )
    )
    stats = {s.stage: s for s in summary.gates}
    assert stats["llm"].limit is None and stats["solve"].limit == 2 * workers.workers
    assert not gate_log_dir(out).exists() and summary.solved == 4
    cot = asyncio.run(
        run_method_job(
            [problem("c")],
            ResultStore(tmp_path / "cot.parquet"),
            MethodConfig("cot"),
            ScriptedEngine(lambda r: "The answer is A."),
            None,
            progress=False,
        )
    )
    assert [s.stage for s in cot.gates] == ["llm"]  # no solver pool: no solve gate


def test_cli_rejects_a_bad_stage_limit(tmp_path, capsys):
    from symbolkg.jobs.cli import main as cli_main

    base = ["solve", "--method", "direct", "--dataset", "prontoqa", "--out", str(tmp_path / "r.parquet")]
    assert cli_main([*base, "--stage-limit", "retrieve=4"]) == 2
    assert "stage limits look like 'llm=16,solve=8'" in capsys.readouterr().err
    assert cli_main([*base, "--stage-limit", "solve=0"]) == 2
