"""Retrieval hosts (actors/retrieval_actor.py): batching, the event loop, failures, Ray index and embedder actors."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from symbolkg.actors.retrieval_actor import (
    EmbedderSpec,
    HostConfig,
    RemoteEmbedder,
    RetrievalError,
    RetrievalHost,
    RetrievalService,
    SearchRequest,
)
from symbolkg.jobs.methods.symbolkg_retrieve import retrieve
from symbolkg.retrieval.anchors import AnchorConfig
from symbolkg.retrieval.embed import HashingEmbedder
from symbolkg.retrieval.hull import HullConfig
from symbolkg.retrieval.hybrid import HybridRetriever
from symbolkg.retrieval.lkg.schema import Concept, Edge, Entity, Graph, Rule
from tests.actors.ray_wait import kill_and_wait_until_dead, wait_until_dead

ANN, BOB, TEACHER, KIND = Entity.create("Ann"), Entity.create("Bob"), Concept.create("teacher"), Concept.create("kind")
RULE = Rule.create("teacher(x) -> kind(x)", "every teacher is kind")
G1 = Graph(
    "ctx-1",
    (ANN, TEACHER, KIND, RULE),
    (Edge(ANN.id, TEACHER.id, "IS_A"), Edge(RULE.id, TEACHER.id, "MENTIONS"), Edge(RULE.id, KIND.id, "MENTIONS")),
)
G2 = Graph("ctx-4", (BOB, KIND), (Edge(BOB.id, KIND.id, "IS_A"),))
CONFIG = HostConfig(EmbedderSpec("hashing"), hull=HullConfig(k=2), anchors=AnchorConfig(dense_threshold=0.99))
QUERIES = [
    ("ctx-1", G1, "Is Ann kind?", ("Ann",)),
    ("ctx-4", G2, "Is Bob kind?", ("Bob",)),
    ("ctx-1", G1, "Is Ann a teacher?", None),
    ("ctx-4", G2, "Who is kind?", ()),
]


def summary(result) -> tuple:
    return result.query, tuple(a.node_id for a in result.anchors), tuple(sorted(result.hull.distances.items()))


def expected() -> list[tuple]:
    out = []
    for _key, graph, question, entities in QUERIES:
        alone = HybridRetriever.from_graphs(
            [graph], HashingEmbedder(), anchor_config=CONFIG.anchors, hull_config=CONFIG.hull
        )
        out.append(summary(alone.retrieve(question, entities)))
    return out


class SlowEmbedder(HashingEmbedder):
    """The hashing embedder, ``delay_s`` per call; raises on a text containing "poison".

    With a ``gate``, every call also waits until the test opens it (at most ``patience_s``), so a
    test keeps the host busy exactly as long as it needs to instead of guessing a sleep.
    ``started`` is set when the first call begins: the host is then busy with a batch.
    """

    def __init__(self, delay_s: float, gate: threading.Event | None = None, patience_s: float = 30.0) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.gate = gate
        self.patience_s = patience_s
        self.started = threading.Event()
        self.calls: list[int] = []

    def embed(self, texts, batch_size: int = 64) -> np.ndarray:
        self.calls.append(len(texts))
        self.started.set()
        if self.gate is not None:
            self.gate.wait(self.patience_s)
        time.sleep(self.delay_s)
        if any("poison" in t for t in texts):
            raise RuntimeError("the embedder choked")
        return super().embed(texts, batch_size)


async def search_all(service: RetrievalService, queries=QUERIES) -> list:
    return await asyncio.gather(*(service.search(k, g, q, e) for k, g, q, e in queries))


def test_a_host_batch_answers_like_one_retriever_per_context():
    host = RetrievalHost(CONFIG)
    results = host.search_batch([SearchRequest(*q) for q in QUERIES])
    assert [summary(r) for r in results] == expected()
    assert host.built == 2 and host.search_batch([]) == []
    assert ANN.id in results[0].hull.distances and RULE.id in results[0].hull.distances


async def _until(condition: Callable[[], bool], patience_s: float = 30.0) -> None:
    """Poll ``condition`` until it holds; fail after ``patience_s`` (generous: it takes milliseconds)."""
    deadline = time.monotonic() + patience_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.005)


async def _turns(n: int = 5) -> None:
    """Let every ready task run until it blocks (loop turns, not wall time)."""
    for _ in range(n):
        await asyncio.sleep(0)


def test_what_queues_while_the_host_is_busy_goes_as_one_batch_in_order():
    gate = threading.Event()
    embedder = SlowEmbedder(0.0, gate)
    service = RetrievalService.local(CONFIG, embedder)

    async def main():
        first = asyncio.ensure_future(service.search(*QUERIES[0]))
        await _until(embedder.started.is_set)  # the host is busy with it now, held at the gate
        rest = asyncio.ensure_future(search_all(service, (QUERIES * 3)[1:]))
        await _turns()  # the 11 queries queue behind it
        assert service.stats.batches == 0  # the first batch is still in the host
        gate.set()
        return [await first, *await rest]

    try:
        results = asyncio.run(main())
    finally:
        service.close()
    assert [summary(r) for r in results] == expected() * 3
    # the first query alone, then the 11 that queued meanwhile as one batch
    assert (service.stats.batches, service.stats.queries, service.stats.largest_batch) == (2, 12, 11)


def test_the_event_loop_keeps_running_while_a_search_does():
    gate = threading.Event()
    service = RetrievalService.local(CONFIG, SlowEmbedder(0.0, gate, patience_s=10.0))
    ticks = 0

    async def main():
        nonlocal ticks
        search = asyncio.ensure_future(service.search(*QUERIES[0]))
        while not search.done():
            ticks += 1
            if ticks == 20:
                gate.set()  # the loop has turned 20 times while the search was held in the host
            await asyncio.sleep(0.01)
        return await search

    try:
        result = asyncio.run(main())
    finally:
        service.close()
    assert summary(result) == expected()[0]
    # Off the loop, the search ends only after the 20th tick opened the gate. Run inline, it would
    # block the loop in the embedder until the gate's patience (10 s) ran out: 1 tick.
    assert ticks >= 20


def test_a_failing_batch_fails_its_queries_and_the_lane_goes_on():
    service = RetrievalService.local(CONFIG, SlowEmbedder(0.0))

    async def main():
        with pytest.raises(RetrievalError, match="RuntimeError: the embedder choked"):
            await service.search("ctx-1", G1, "poison?")
        return await service.search(*QUERIES[0])

    try:
        result = asyncio.run(main())
    finally:
        service.close()
    assert summary(result) == expected()[0] and service.stats.failed == 1


def test_the_retrieve_stage_records_a_failed_search_and_keeps_nothing():
    async def failing(question, entities):
        raise RetrievalError("host gone")

    out = asyncio.run(retrieve(None, failing, G1, "Is Ann kind?", problem_id="p1"))
    assert out.search_error == "host gone" and out.errors == ["search: host gone"]
    assert (out.anchors, out.hull, out.pruned, out.prune_source) == ((), (), (), "empty")


def test_config_validation():
    with pytest.raises(ValueError, match="max_batch"):
        HostConfig(max_batch=0)
    with pytest.raises(ValueError, match="cpu_threads"):
        HostConfig(cpu_threads=0)
    with pytest.raises(ValueError, match="at least one host"):
        RetrievalService([])


# --------------------------------------------------------------------------- Ray actors


@pytest.fixture(scope="module")
def ray_session():
    ray = pytest.importorskip("ray")
    from symbolkg.actors.ray_runtime import ensure_ray

    ensure_ray()
    yield ray
    ray.shutdown()


def test_index_actors_answer_like_the_thread_host_each_context_on_one_actor(ray_session):
    ray = ray_session
    service = RetrievalService.actors(CONFIG, 2, num_cpus=0.5)
    try:
        results = asyncio.run(search_all(service, QUERIES * 2))
        pids = service.host_pids()
        hosted = [ray.get(b.handle.hosted.remote()) for b in service._backends]
    finally:
        service.close()
    assert [summary(r) for r in results] == expected() * 2
    assert len(set(pids)) == 2 and os.getpid() not in pids
    # each context's indexes were built once, on the actor its key maps to
    assert hosted[service.lane_of("ctx-1")] == ["ctx-1"] and hosted[service.lane_of("ctx-4")] == ["ctx-4"]


def test_a_killed_index_actor_is_replaced_and_its_batch_sent_again(ray_session):
    service = RetrievalService.actors(CONFIG, 1, num_cpus=0.5, restarts=1)
    backend = service._backends[0]
    try:
        first = asyncio.run(search_all(service))
        kill_and_wait_until_dead(backend.handle, "pid")
        again = asyncio.run(search_all(service))  # lands on the dead actor, is resent to its replacement
        assert [summary(r) for r in again] == [summary(r) for r in first] == expected()
        assert service.stats.restarts == 1 and service.stats.failed == 0
        kill_and_wait_until_dead(backend.handle, "pid")  # no restarts left: the batch fails, recorded
        with pytest.raises(RetrievalError, match="may not be restarted"):
            asyncio.run(service.search(*QUERIES[0]))
    finally:
        service.close()


def test_one_embedder_actor_serves_every_index_actor(ray_session):
    service = RetrievalService.actors(CONFIG, 2, num_cpus=0.5, embedder_actor=True)
    handle = service._embedder_handle
    try:
        results = asyncio.run(search_all(service))
        remote = RemoteEmbedder(handle)
        texts = ["Is Ann kind?", "every teacher is kind"]
        assert (remote.name, remote.dim) == (HashingEmbedder().name, HashingEmbedder().dim)
        assert np.array_equal(remote.embed(texts), HashingEmbedder().embed(texts))
    finally:
        service.close()
    assert [summary(r) for r in results] == expected()
    wait_until_dead(handle, "describe")  # closed with the service (ray.kill returns before it is gone)
