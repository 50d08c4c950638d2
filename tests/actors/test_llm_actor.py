"""The LLM Ray actor and RemoteEngine, on a local Ray with the scripted engine inside."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

import pytest

from symbolkg.actors.engines.base import ChatRequest, EngineDeadError, EngineError, Message, StructuredOutput
from symbolkg.actors.llm_actor import LLMActorConfig, RemoteEngine, ScriptedActorConfig, start_llm_actor

ray = pytest.importorskip("ray")


def req(problem_id: str, text: str = "hello", **kw) -> ChatRequest:
    return ChatRequest((Message("user", text),), problem_id=problem_id, **kw)


def script(request: ChatRequest):
    """Echo the problem id; some ids fail the way a real engine does."""
    if request.problem_id == "bad":
        return EngineError("scripted: cannot answer 'bad'")
    if request.problem_id == "dead":
        return EngineDeadError("scripted: the engine died")
    return f"answer to {request.problem_id}: {request.messages[-1].content}"


@pytest.fixture(scope="module")
def ray_local():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    if started:
        ray.shutdown()


@pytest.fixture
def remote(ray_local):
    engine = start_llm_actor(
        LLMActorConfig("scripted", script, num_cpus=0.5),
    )
    yield engine
    asyncio.run(engine.close())


# -- config (no Ray) ---------------------------------------------------------------------------


def test_config_validates_and_reserves_gpus_by_tensor_parallel_size():
    with pytest.raises(ValueError, match="kind"):
        LLMActorConfig("llama.cpp")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="script"):
        LLMActorConfig("scripted")
    with pytest.raises(ValueError, match="max_concurrency"):
        LLMActorConfig("scripted", script, max_concurrency=0)
    vllm_tp4 = LLMActorConfig("vllm", SimpleNamespace(tensor_parallel_size=4))
    assert vllm_tp4.resolved_num_gpus(cluster_gpus=8) == 4
    assert vllm_tp4.resolved_num_gpus(cluster_gpus=0) == 0  # CPU build
    assert LLMActorConfig("vllm", SimpleNamespace(tensor_parallel_size=4), num_gpus=1).resolved_num_gpus(8) == 1
    assert LLMActorConfig("scripted", script).resolved_num_gpus(8) == 0


# -- through Ray -------------------------------------------------------------------------------


def test_remote_engine_returns_completions_in_order(remote):
    requests = [req(f"p{i}", text=f"q{i}") for i in range(5)]
    requests.append(req("s", structured=StructuredOutput(choice=("A", "B"))))
    out = asyncio.run(remote.generate(requests))
    assert [c.text for c in out[:5]] == [f"answer to p{i}: q{i}" for i in range(5)]
    assert all(c.model == "scripted" for c in out)
    assert remote.model == "scripted" and remote.supports_structured is False
    assert out[0].prompt_tokens == 1 and out[0].completion_tokens == 4


def test_actor_serves_concurrent_calls_at_once(ray_local):
    latency_s, calls = 1.0, 40
    engine = start_llm_actor(
        LLMActorConfig("scripted", ScriptedActorConfig(script, model="slow", latency_s=latency_s), num_cpus=0.5)
    )

    async def many():
        return await asyncio.gather(*(engine.generate([req(f"p{i}")]) for i in range(calls)))

    try:
        t0 = time.perf_counter()
        results = asyncio.run(many())
        elapsed = time.perf_counter() - t0
    finally:
        asyncio.run(engine.close())
    assert [r[0].text for r in results] == [f"answer to p{i}: hello" for i in range(calls)]
    assert engine.model == "slow"
    # All at once take about latency_s (measured idle: 1.05 s), 10x inside the bound; one call at a
    # time would take calls * latency_s = 40 s, and even three at a time 13 s.
    assert elapsed < 11.0, f"{calls} concurrent calls took {elapsed:.2f} s"


def test_errors_keep_their_class_across_the_actor(remote):
    with pytest.raises(EngineError, match="cannot answer") as info:
        asyncio.run(remote.generate([req("bad")]))
    assert not isinstance(info.value, EngineDeadError)
    with pytest.raises(EngineDeadError, match="died"):
        asyncio.run(remote.generate([req("dead")]))
    # A failed request does not break the actor.
    assert asyncio.run(remote.generate([req("ok")]))[0].text == "answer to ok: hello"


def test_a_killed_actor_is_a_dead_engine(remote):
    from tests.actors.ray_wait import kill_and_wait_until_dead

    # ray.kill returns before the actor is dead (a call right after it was once still answered)
    kill_and_wait_until_dead(remote.handle, "describe")
    with pytest.raises(EngineDeadError, match="died"):
        asyncio.run(remote.generate([req("p1")]))


def test_close_kills_an_owned_actor_and_is_idempotent(ray_local):
    engine = start_llm_actor(LLMActorConfig("scripted", script, num_cpus=0.5))
    handle = engine.handle
    asyncio.run(engine.close())
    asyncio.run(engine.close())
    with pytest.raises(EngineDeadError, match="closed"):
        asyncio.run(engine.generate([req("p1")]))
    from tests.actors.ray_wait import wait_until_dead

    wait_until_dead(handle, "describe")  # close calls ray.kill, which returns before the actor is gone


def test_remote_engine_from_a_bare_handle_asks_the_actor(remote):
    other = RemoteEngine(remote.handle)  # does not own the actor
    assert other.model == "scripted"
    asyncio.run(other.close())  # closes the engine inside, leaves the actor
    assert ray.get(remote.handle.describe.remote())["model"] == "scripted"
