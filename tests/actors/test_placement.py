"""Multi-GPU LLM engine actors run in placement groups that live exactly as long as the actor.

No GPUs here: the local Ray node declares 4 fake GPUs, and scripted engines with an explicit
``num_gpus`` take the placement-group path that a vLLM engine with ``tensor_parallel_size`` > 1
takes on a GPU cluster. "Live" placement groups are the ones Ray has not removed.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from symbolkg.actors.engines.base import ChatRequest, EngineDeadError, Message
from symbolkg.actors.engines.factory import EngineOptions, LazyEngine, make_engine
from symbolkg.actors.engines.vllm_engine import VLLMConfig
from symbolkg.actors.llm_actor import LLMActorConfig, RemoteEngine, ScriptedActorConfig, start_llm_actor

ray = pytest.importorskip("ray")
from ray.util import placement_group_table  # noqa: E402

from tests.actors.ray_wait import kill_and_wait_until_dead  # noqa: E402

NODE_GPUS = 4


def script(request: ChatRequest) -> str:
    return f"answer to {request.problem_id}"


def req(problem_id: str) -> ChatRequest:
    return ChatRequest((Message("user", "hello"),), problem_id=problem_id)


def gpu_engine(num_gpus: int, *, timeout_s: float = 30.0, **kw) -> LLMActorConfig:
    return LLMActorConfig(
        "scripted", ScriptedActorConfig(script), num_gpus=num_gpus, num_cpus=0.25, placement_timeout_s=timeout_s, **kw
    )


def live_pgs() -> dict[str, dict]:
    """Placement groups not removed, by hex id."""
    return {pg_id: pg for pg_id, pg in placement_group_table().items() if pg["state"] != "REMOVED"}


def wait_for_free_gpus(n: float, timeout_s: float = 10.0) -> None:
    """Removing a group returns its GPUs to the node asynchronously (measured idle: within 0.11 s;
    the deadline is far over 10x that, as are the placement timeouts of 10 s and 30 s below, for
    groups that are placed in 0.03 s at most)."""
    deadline = time.monotonic() + timeout_s
    while ray.available_resources().get("GPU", 0.0) < n:
        assert time.monotonic() < deadline, f"GPUs not freed: {ray.available_resources().get('GPU')} of {n}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def gpu_node():
    """A local Ray whose only node has 4 (declared) GPUs; any other module's Ray session is ended first."""
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, num_gpus=NODE_GPUS, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def engines(gpu_node):
    """Engines a test starts; closed (actors killed, groups removed) even when the test fails."""
    started: list[RemoteEngine] = []
    yield started
    for engine in started:
        asyncio.run(engine.close())
    assert not live_pgs()
    wait_for_free_gpus(NODE_GPUS)


# -- the plan (no Ray) -------------------------------------------------------------------------


def test_vllm_tp4_gets_one_gpu_bundle_per_rank_on_one_node_and_the_ray_executor():
    vllm = VLLMConfig(tensor_parallel_size=4, max_num_seqs=32)
    plan = LLMActorConfig("vllm", vllm, num_cpus=1).placement(cluster_gpus=8)
    assert plan.uses_placement_group and plan.num_gpus == 4
    assert plan.bundles == ({"GPU": 1.0, "CPU": 1.0}, {"GPU": 1.0}, {"GPU": 1.0}, {"GPU": 1.0})
    assert plan.strategy == "STRICT_PACK"
    assert plan.engine_config.distributed_executor_backend == "ray"
    assert plan.engine_config.max_num_seqs == 32 and vllm.distributed_executor_backend is None  # a copy

    spread = LLMActorConfig("vllm", vllm, num_cpus=0, placement_strategy="PACK").placement(cluster_gpus=8)
    assert spread.bundles == ({"GPU": 1.0},) * 4 and spread.strategy == "PACK"


def test_one_gpu_cpu_and_mp_engines_stay_plain_actors():
    tp1 = LLMActorConfig("vllm", VLLMConfig()).placement(cluster_gpus=8)
    assert not tp1.uses_placement_group and tp1.num_gpus == 1 and tp1.engine_config.distributed_executor_backend is None
    cpu = LLMActorConfig("vllm", VLLMConfig(tensor_parallel_size=4)).placement(cluster_gpus=0)
    assert not cpu.uses_placement_group and cpu.num_gpus == 0
    # vLLM's multiprocessing workers can only use the GPUs the actor itself holds.
    mp = LLMActorConfig("vllm", VLLMConfig(tensor_parallel_size=2, distributed_executor_backend="mp")).placement(8)
    assert not mp.uses_placement_group and mp.num_gpus == 2 and mp.engine_config.distributed_executor_backend == "mp"
    assert gpu_engine(1).placement(cluster_gpus=0) == gpu_engine(1).placement(cluster_gpus=4)
    assert gpu_engine(2).placement(cluster_gpus=0).bundles == ({"GPU": 1.0, "CPU": 0.25}, {"GPU": 1.0})


def test_placement_options_are_validated():
    with pytest.raises(ValueError, match="placement_strategy"):
        LLMActorConfig("scripted", script, placement_strategy="PACKED")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="placement_timeout_s"):
        LLMActorConfig("scripted", script, placement_timeout_s=0)
    with pytest.raises(ValueError, match="whole number"):
        LLMActorConfig("scripted", script, num_gpus=1.5)
    with pytest.raises(ValueError, match="placement_strategy"):
        make_engine(EngineOptions("vllm", actor=True, placement_strategy="NOPE"))


# -- through Ray -------------------------------------------------------------------------------


def test_engines_get_their_own_groups_a_third_times_out_cleanly_and_fits_once_one_closes(engines):
    first, second = start_llm_actor(gpu_engine(2)), start_llm_actor(gpu_engine(2))
    engines.extend([first, second])
    seen = [ray.get(e.handle.placement.remote()) for e in (first, second)]
    pg_ids = [e.placement_group.id.hex() for e in (first, second)]
    assert [s["placement_group_id"] for s in seen] == pg_ids and len(set(pg_ids)) == 2
    for s in seen:
        assert s["captured"] == s["placement_group_id"]  # what vLLM's Ray executor will use for its workers
        assert s["bundles"] == [{"GPU": 1.0, "CPU": 0.25}, {"GPU": 1.0}]
        assert s["assigned"] == {"CPU": 0.25}  # the GPUs are the group's, for the engine's workers
    assert set(live_pgs()) == set(pg_ids)
    assert all(pg["strategy"] == "STRICT_PACK" and pg["state"] == "CREATED" for pg in live_pgs().values())
    assert ray.available_resources().get("GPU", 0.0) == 0
    assert [c.text for c in asyncio.run(first.generate([req("p1")]))] == ["answer to p1"]

    # All four GPUs are held by the two engines above: this group can never be placed, so only the
    # 0.5 s placement timeout ends the wait, on any machine.
    with pytest.raises(EngineDeadError, match=r"2 GPUs .*within 0.5 s.*4 GPUs \(0 free now\) on 1 node"):
        start_llm_actor(gpu_engine(2, timeout_s=0.5))
    assert set(live_pgs()) == set(pg_ids)  # the group that timed out was removed

    asyncio.run(first.close())
    asyncio.run(first.close())  # idempotent
    assert first.placement_group is None and set(live_pgs()) == {pg_ids[1]}
    third = start_llm_actor(gpu_engine(2, timeout_s=10))
    engines.append(third)
    assert ray.get(third.handle.placement.remote())["placement_group_id"] == third.placement_group.id.hex()
    assert [c.text for c in asyncio.run(third.generate([req("p3")]))] == ["answer to p3"]


def test_a_failed_start_removes_its_group(engines):
    # An engine that cannot be built (the actor's __init__ raises: a model that fails to load).
    with pytest.raises(EngineDeadError, match="failed to start"):
        start_llm_actor(LLMActorConfig("openai", None, num_gpus=2, num_cpus=0.25))
    assert not live_pgs()
    # The actor cannot even be created (its name is taken) after its group was placed.
    engines.append(start_llm_actor(gpu_engine(2, name="llm-0")))
    with pytest.raises(EngineDeadError, match="failed to start"):
        start_llm_actor(gpu_engine(2, name="llm-0"))
    assert set(live_pgs()) == {engines[0].placement_group.id.hex()}


def test_a_killed_actor_is_rebuilt_in_a_new_group_and_the_old_one_is_removed(engines):
    def build() -> RemoteEngine:
        # The whole node: a rebuild fits only if the dead engine's group was removed first.
        engine = start_llm_actor(gpu_engine(NODE_GPUS, timeout_s=10))
        engines.append(engine)
        return engine

    lazy = LazyEngine(build, model="scripted", supports_structured=False, max_restarts=2)
    assert [c.text for c in asyncio.run(lazy.generate([req("p1")]))] == ["answer to p1"]
    old_pg = engines[0].placement_group.id.hex()
    assert set(live_pgs()) == {old_pg}

    kill_and_wait_until_dead(engines[0].handle, "placement")  # the next call must meet a dead actor
    assert [c.text for c in asyncio.run(lazy.generate([req("p2")]))] == ["answer to p2"]
    assert lazy.restarts == 1 and len(engines) == 2
    assert engines[0].placement_group is None
    new_pg = engines[1].placement_group.id.hex()
    assert new_pg != old_pg and set(live_pgs()) == {new_pg}
    assert placement_group_table()[old_pg]["state"] == "REMOVED"
