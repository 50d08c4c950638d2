"""A dead LLM engine is rebuilt and its in-flight requests retried; a poisonous request is quarantined.

Unit cases drive :class:`symbolkg.actors.engines.factory.LazyEngine` with scripted engines whose death is
scripted; the kill test kills a real Ray LLM actor mid-job with ``ray.kill``. Each compares the
job with an uninterrupted run: the same problem ids, no duplicates, the same answers.
"""

from __future__ import annotations

import asyncio
import time

import pyarrow.parquet as pq
import pytest

from symbolkg.actors.engines.base import ChatRequest, EngineDeadError
from symbolkg.actors.engines.factory import LazyEngine
from symbolkg.actors.engines.metered import MeteredEngine
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore

OPTIONS = ("A) True", "B) False")


def problems(n: int) -> list[Problem]:
    return [
        Problem(f"p{i:03d}", "custom", f"Fact {i}.", f"Is {i} even?", OPTIONS, "A" if i % 2 == 0 else "B")
        for i in range(n)
    ]


def answer(request: ChatRequest) -> str:
    """The right letter, read off the problem id (so answers can be compared across runs)."""
    return "A" if int(request.problem_id.removeprefix("p")) % 2 == 0 else "B"


def run(engine, tmp_path, name: str, n: int = 30, in_flight: int = 8) -> dict[str, tuple]:
    out = tmp_path / f"{name}.parquet"
    asyncio.run(
        run_method_job(
            problems(n),
            ResultStore(out),
            MethodConfig(method="direct"),
            engine,
            None,
            max_in_flight=in_flight,
            progress=False,
        )
    )
    rows = pq.read_table(out).to_pylist()
    ids = [r["problem_id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicated rows"
    return {r["problem_id"]: (r["predicted"], r["error_message"]) for r in rows}


class DiesAfter:
    """Builds scripted engines; the first ``deaths`` of them die (every request fails) after ``k`` calls."""

    def __init__(self, k: int, deaths: int = 1) -> None:
        self.k, self.deaths, self.built = k, deaths, 0

    def __call__(self) -> ScriptedEngine:
        self.built += 1
        mortal = self.built <= self.deaths
        calls = {"n": 0}

        def script(request: ChatRequest):
            calls["n"] += 1
            if mortal and calls["n"] > self.k:
                return EngineDeadError(f"engine {self.built} died")
            return answer(request)

        return ScriptedEngine(script, latency_s=0.01)


def test_a_dead_engine_is_rebuilt_and_the_job_matches_an_uninterrupted_run(tmp_path):
    clean = run(LazyEngine(DiesAfter(k=10**9, deaths=0), model="s", supports_structured=False), tmp_path, "clean")
    builder = DiesAfter(k=10)
    engine = LazyEngine(builder, model="s", supports_structured=False, max_restarts=2)
    restarted = run(engine, tmp_path, "restarted")
    assert restarted == clean and len(clean) == 30 and all(e is None for _, e in clean.values())
    assert engine.restarts == 1 == builder.built - 1 and not engine.quarantined and "restart 1" in engine.events[0]


def test_without_restarts_a_death_stops_the_job_and_the_rerun_resumes(tmp_path):
    engine = LazyEngine(DiesAfter(k=10), model="s", supports_structured=False, max_restarts=0)
    with pytest.raises(EngineDeadError):
        run(engine, tmp_path, "stopped")
    done = ResultStore(tmp_path / "stopped.parquet").done_ids()
    assert 0 < len(done) < 30
    resumed = run(LazyEngine(DiesAfter(k=10**9, deaths=0), model="s", supports_structured=False), tmp_path, "stopped")
    assert len(resumed) == 30


def test_restarts_are_bounded(tmp_path):
    engine = LazyEngine(DiesAfter(k=3, deaths=10), model="s", supports_structured=False, max_restarts=2)
    with pytest.raises(EngineDeadError, match="2 restart"):
        run(engine, tmp_path, "bounded")
    assert engine.restarts == 2


def test_a_request_that_kills_every_engine_is_quarantined_and_the_rest_finish(tmp_path):
    built = []

    def build() -> ScriptedEngine:
        built.append(1)

        def script(request: ChatRequest):
            if request.problem_id == "p007":
                return EngineDeadError("p007 crashes the engine")
            return answer(request)

        return ScriptedEngine(script, latency_s=0.01)

    engine = LazyEngine(build, model="s", supports_structured=False, max_restarts=3, max_request_attempts=2)
    rows = run(engine, tmp_path, "poison")
    assert len(rows) == 30 and rows["p007"][0] is None and "quarantined" in rows["p007"][1]
    assert all(rows[p][0] is not None for p in rows if p != "p007")
    assert engine.quarantined == ["p007/direct"] and engine.restarts == 2 and len(built) == 3


def task_failed(metered: MeteredEngine) -> bool:
    """Whether a request the job saw failed (a restart retries inside the engine, so none should)."""
    return any(r.error for r in metered.records)


@pytest.mark.slow
def test_killing_the_ray_llm_actor_mid_job_loses_nothing(tmp_path):
    ray = pytest.importorskip("ray")
    from symbolkg.actors.llm_actor import LLMActorConfig, ScriptedActorConfig, start_llm_actor
    from symbolkg.actors.ray_runtime import ensure_ray
    from tests.actors.ray_wait import kill_and_wait_until_dead

    ensure_ray()
    try:
        actors = []

        def build():
            # 1 s per answer, far longer than a kill takes to land (measured idle: 0.005 s), so the
            # requests in flight at the kill die with the actor.
            remote = start_llm_actor(
                LLMActorConfig("scripted", ScriptedActorConfig(answer, latency_s=1.0), num_cpus=0.5)
            )
            actors.append(remote)
            return remote

        engine = LazyEngine(build, model="scripted", supports_structured=False, max_restarts=2)
        metered = MeteredEngine(engine)  # counts the answered requests

        async def job_with_a_kill(out):
            in_flight, n = 8, 40
            task = asyncio.ensure_future(
                run_method_job(
                    problems(n),
                    ResultStore(out),
                    MethodConfig(method="direct"),
                    metered,
                    None,
                    max_in_flight=in_flight,
                    progress=False,
                )
            )
            deadline = time.monotonic() + 120.0
            while len(metered.records) < 10:
                assert not task.done() and time.monotonic() < deadline, "the job never answered 10 requests"
                await asyncio.sleep(0.01)
            answered = len(metered.records)
            assert answered + in_flight < n, f"{answered} answered: the kill would not be mid-job"
            # Not awaited: this event loop, which sends the job's requests, stays blocked until the actor
            # is dead, so the requests not sent yet go to the dead actor and the engine must restart, however
            # slowly the kill lands (a bare ray.kill let the job finish on the old actor first).
            kill_and_wait_until_dead(actors[0].handle, "describe")
            await task

        out = tmp_path / "killed.parquet"
        asyncio.run(job_with_a_kill(out))
        rows = pq.read_table(out).to_pylist()
        assert sorted(r["problem_id"] for r in rows) == [p.id for p in problems(40)]
        assert all(r["correct"] for r in rows), [r for r in rows if not r["correct"]][:2]
        assert engine.restarts == 1 and len(actors) == 2 and not task_failed(metered)
        asyncio.run(engine.close())
    finally:
        ray.shutdown()


def test_several_llm_actors_are_lazy_replicas_behind_the_balancer():
    from symbolkg.actors.engines.balanced import BalancedEngine
    from symbolkg.actors.engines.factory import EngineOptions, make_engine

    engine = make_engine(EngineOptions("vllm", actor=True, actors=3, restarts=1))
    assert isinstance(engine, BalancedEngine) and len(engine.engines) == 3
    assert all(isinstance(e, LazyEngine) and not e.started and e.max_restarts == 1 for e in engine.engines)
    assert engine.model == "smollm2-135m"
    with pytest.raises(ValueError, match="--llm-actor"):
        EngineOptions("vllm", actors=2)
    with pytest.raises(ValueError, match=">= 1"):
        EngineOptions("vllm", actor=True, actors=0)
