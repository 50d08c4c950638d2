"""Retrieval off the event loop: index hosts in a worker thread or in Ray actors, a shared embedder actor.

A query's search (query embedding, FAISS per node type, name matching, the logical hull) is CPU
(or GPU) work of 10-40 ms. Run inline in the orchestrator's event loop it would stall every other
problem in flight for that long, so the retrieve stage awaits a :class:`RetrievalService` instead::

    problems in flight --await search(key, graph, question, entities)--> RetrievalService
        one lane per host, chosen by the context key (its indexes are built once, on that host)
        --> host: a RetrievalHost in a worker thread (default), or in a Ray actor (--retrieval-actors N)
            runs everything that queued while it was busy as one batch: one embedding call for
            all the queries, then FAISS + hull per context (one HybridRetriever per key, LRU)
        query embedder: inside the host, or one EmbedderActor (a GPU for BGE-M3) that every host
            reaches through RemoteEmbedder (--embedder-actor)

Batching is continuous, as in vLLM: a lane sends what is queued the moment its host is free, so
batches grow with the load and a lone query waits for nobody. The host code is plain Python (the
same class runs in the thread and in the actor); actors only host it.

Faults: an actor that dies (node loss, OOM, ``ray.kill``) is replaced and its batch sent again,
at most ``restarts`` times per lane; past that, or when the host raises, the queries of that batch
fail with :class:`RetrievalError`. The stage records the error and formalizes the whole context,
so no problem is lost.

Example:
    >>> import asyncio
    >>> from symbolkg.retrieval.hull import HullConfig
    >>> from symbolkg.retrieval.lkg.schema import Edge, Entity, Graph, Rule
    >>> ann, rule = Entity.create("Ann"), Rule.create("teacher(x) -> kind(x)", "every teacher is kind")
    >>> graph = Graph("ctx", (ann, rule), (Edge(rule.id, ann.id, "MENTIONS"),))
    >>> service = RetrievalService.local(HostConfig(EmbedderSpec("hashing"), hull=HullConfig(k=1)))
    >>> result = asyncio.run(service.search("ctx", graph, "Is Ann kind?", ["Ann"]))
    >>> rule.id in result.hull.distances, service.stats.batches
    (True, 1)
    >>> service.close()
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import zlib
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from symbolkg.retrieval.anchors import AnchorConfig
from symbolkg.retrieval.embed import Embedder, make_embedder, set_cpu_threads
from symbolkg.retrieval.embed_cache import EmbeddingCache
from symbolkg.retrieval.hull import HullConfig
from symbolkg.retrieval.hybrid import HybridRetriever, Retrieval
from symbolkg.retrieval.lkg.schema import Graph


class RetrievalError(RuntimeError):
    """A search could not be answered (its host raised, or died more often than it may be restarted)."""


@dataclass(frozen=True)
class EmbedderSpec:
    """How a host (or the embedder actor) builds its embedder: what crosses to another process.

    Attributes:
        name: ``minilm`` / ``bge-m3`` / ``hashing`` (:func:`~symbolkg.retrieval.embed.make_embedder`).
        path: local model folder (``bge-m3``: required).
        device: overrides the model's default device.
    """

    name: str = "minilm"
    path: str | None = None
    device: str | None = None

    def build(self) -> Embedder:
        """The embedder (loads the weights; nothing is downloaded)."""
        return make_embedder(self.name, self.path, device=self.device)


@dataclass(frozen=True)
class HostConfig:
    """What every retrieval host is built from.

    Attributes:
        embedder: the query and node embedder.
        cache_path: embedding cache folder (an LKG store's ``STORE/embeddings``); None = no cache.
            Hosts on other machines need it on a shared file system.
        hull: hull settings of every retriever.
        anchors: anchor settings (None = defaults).
        max_retrievers: retrievers (one context's indexes each) kept per host, least recently used dropped.
        max_batch: most queries a lane sends in one call.
        cpu_threads: torch / FAISS threads inside the host (process-global there); None = leave as is.
    """

    embedder: EmbedderSpec = field(default_factory=EmbedderSpec)
    cache_path: str | None = None
    hull: HullConfig = field(default_factory=HullConfig)
    anchors: AnchorConfig | None = None
    max_retrievers: int = 256
    max_batch: int = 64
    cpu_threads: int | None = None

    def __post_init__(self) -> None:
        if self.max_retrievers < 1:
            raise ValueError(f"max_retrievers must be >= 1, got {self.max_retrievers}")
        if self.max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {self.max_batch}")
        if self.cpu_threads is not None and self.cpu_threads < 1:
            raise ValueError(f"cpu_threads must be >= 1 or None, got {self.cpu_threads}")


@dataclass(frozen=True)
class SearchRequest:
    """One query against one context's graph.

    Attributes:
        key: the context's cache key: which retriever answers (built from ``graph`` on first use).
        graph: the context's LKG.
        question: the query text.
        entities: query entities (from the LLM); None = lexical extraction.
    """

    key: str
    graph: Graph
    question: str
    entities: tuple[str, ...] | None = None


class RetrievalHost:
    """Answers batches of :class:`SearchRequest`; the body of the worker thread and of :class:`RetrievalActor`.

    Args:
        config: the host's settings.
        embedder: an embedder to use instead of building ``config.embedder`` (a :class:`RemoteEmbedder`,
            or one the caller has loaded already); it must be the embedder ``config.embedder`` names.
    """

    def __init__(self, config: HostConfig, embedder: Embedder | None = None) -> None:
        if config.cpu_threads is not None:
            set_cpu_threads(config.cpu_threads)
        self.config = config
        self.embedder = embedder if embedder is not None else config.embedder.build()
        self._cache = EmbeddingCache(os.fspath(config.cache_path), self.embedder) if config.cache_path else None
        self._retrievers: OrderedDict[str, HybridRetriever] = OrderedDict()
        self.built = 0

    def pid(self) -> int:
        """The host's process id (tests: which process answered)."""
        return os.getpid()

    def hosted(self) -> list[str]:
        """Context keys whose retrievers this host holds, least recently used first."""
        return list(self._retrievers)

    def _retriever(self, key: str, graph: Graph) -> HybridRetriever:
        found = self._retrievers.get(key)
        if found is not None:
            self._retrievers.move_to_end(key)
            return found
        found = HybridRetriever.from_graphs(
            [graph], self.embedder, cache=self._cache, anchor_config=self.config.anchors, hull_config=self.config.hull
        )
        self.built += 1
        self._retrievers[key] = found
        if len(self._retrievers) > self.config.max_retrievers:  # questions on one story arrive close together
            self._retrievers.popitem(last=False)
        return found

    def search_batch(self, requests: Sequence[SearchRequest]) -> list[Retrieval]:
        """One :class:`~symbolkg.retrieval.hybrid.Retrieval` per request, in order; every query embedded in one call."""
        if not requests:
            return []
        vectors = self.embedder.embed([r.question for r in requests])
        out: list[Retrieval | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.key, []).append(i)
        for key, positions in groups.items():
            retriever = self._retriever(key, requests[positions[0]].graph)
            results = retriever.retrieve_batch(
                [requests[i].question for i in positions],
                [requests[i].entities for i in positions],
                vectors=vectors[positions],
            )
            for i, result in zip(positions, results, strict=True):
                out[i] = result
        return out  # type: ignore[return-value]


class EmbedderHost:
    """The body of the embedder actor: one embedder (BGE-M3 on a GPU, usually) shared by every host."""

    def __init__(self, spec: EmbedderSpec) -> None:
        self.embedder = spec.build()

    def describe(self) -> tuple[str, int]:
        """The embedder's ``name`` and ``dim``."""
        return self.embedder.name, int(self.embedder.dim)

    def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """The embedder's ``embed``."""
        return self.embedder.embed(texts, batch_size=batch_size)


class RemoteEmbedder:
    """An :class:`~symbolkg.retrieval.embed.Embedder` that asks an :class:`EmbedderHost` actor (blocking, for hosts).

    Args:
        handle: the embedder actor's handle.
    """

    def __init__(self, handle: Any) -> None:
        import ray

        self.handle = handle
        self.name, self.dim = ray.get(handle.describe.remote())

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed ``texts`` in the actor."""
        import ray

        return ray.get(self.handle.embed.remote(list(texts), batch_size))


@dataclass
class RetrievalStats:
    """What the service did: ``batches`` sent, ``queries`` answered, ``failed`` queries, host ``restarts``,
    ``busy_seconds`` summed over lanes, ``largest_batch``."""

    batches: int = 0
    queries: int = 0
    failed: int = 0
    restarts: int = 0
    busy_seconds: float = 0.0
    largest_batch: int = 0

    @property
    def mean_batch(self) -> float:
        """Queries per batch."""
        return self.queries / self.batches if self.batches else 0.0


class _ThreadBackend:
    """A host in one worker thread of this process: off the event loop, one batch at a time."""

    def __init__(self, host: RetrievalHost) -> None:
        self.host = host
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="retrieval")

    async def call(self, batch: list[SearchRequest], stats: RetrievalStats) -> list[Retrieval]:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.host.search_batch, batch)

    def close(self) -> None:
        self._executor.shutdown(wait=True)


class _ActorBackend:
    """A host in a Ray actor, replaced when it dies (at most ``restarts`` times)."""

    def __init__(self, start: Callable[[], Any], restarts: int) -> None:
        self._start = start
        self.restarts_left = restarts
        self.handle = start()

    async def call(self, batch: list[SearchRequest], stats: RetrievalStats) -> list[Retrieval]:
        from ray.exceptions import RayActorError, RayTaskError

        while True:
            try:
                return await self.handle.search_batch.remote(batch)
            except RayActorError as exc:  # its lane sends one batch at a time: no other call saw this death
                if self.restarts_left <= 0:
                    raise RetrievalError(f"retrieval actor died and may not be restarted again: {exc}") from exc
                self.restarts_left -= 1
                stats.restarts += 1
                self.handle = self._start()
            except RayTaskError as exc:
                raise RetrievalError(f"retrieval actor failed: {exc}") from exc

    def close(self) -> None:
        import ray

        ray.kill(self.handle, no_restart=True)


class _Lane:
    """One host's queue: sends everything waiting as one batch whenever the host is free."""

    def __init__(self, backend: Any, max_batch: int, stats: RetrievalStats) -> None:
        self.backend = backend
        self.max_batch = max_batch
        self.stats = stats
        self._queue: deque[tuple[SearchRequest, asyncio.Future]] = deque()
        self._sender: asyncio.Task | None = None

    def submit(self, request: SearchRequest) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        self._queue.append((request, future))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.ensure_future(self._send())
        return future

    async def _send(self) -> None:
        while self._queue:
            batch = [self._queue.popleft() for _ in range(min(self.max_batch, len(self._queue)))]
            live = [(r, f) for r, f in batch if not f.done()]  # a cancelled waiter needs no answer
            if not live:
                continue
            t0 = time.perf_counter()
            try:
                results = await self.backend.call([r for r, _ in live], self.stats)
            except Exception as exc:  # noqa: BLE001 - every waiter gets the error, the lane goes on
                error = exc if isinstance(exc, RetrievalError) else RetrievalError(f"{type(exc).__name__}: {exc}")
                self.stats.failed += len(live)
                for _, f in live:
                    if not f.done():
                        f.set_exception(error)
                continue
            finally:
                self.stats.busy_seconds += time.perf_counter() - t0
            self.stats.batches += 1
            self.stats.queries += len(live)
            self.stats.largest_batch = max(self.stats.largest_batch, len(live))
            for (_, f), result in zip(live, results, strict=True):
                if not f.done():
                    f.set_result(result)


class RetrievalService:
    """The retrieve stage's search, off the event loop (module docstring).

    Build with :meth:`local` (one host in a worker thread) or :meth:`actors` (hosts in Ray actors).

    Args:
        backends: one per host; queries go to ``backends[crc32(key) % n]``.
        max_batch: most queries per call.
        embedder_handle: the shared embedder actor, killed by :meth:`close`.
    """

    def __init__(self, backends: Sequence[Any], max_batch: int = 64, *, embedder_handle: Any = None) -> None:
        if not backends:
            raise ValueError("a retrieval service needs at least one host")
        self.stats = RetrievalStats()
        self._backends = list(backends)
        self._lanes = [_Lane(b, max_batch, self.stats) for b in self._backends]
        self._embedder_handle = embedder_handle

    @classmethod
    def local(cls, config: HostConfig, embedder: Embedder | None = None) -> RetrievalService:
        """One host in a worker thread of this process (``embedder``: an already loaded one to share)."""
        return cls([_ThreadBackend(RetrievalHost(config, embedder))], config.max_batch)

    @classmethod
    def actors(
        cls,
        config: HostConfig,
        n: int = 1,
        *,
        num_cpus: float = 1.0,
        embedder_actor: bool = False,
        embedder_gpus: float = 0.0,
        restarts: int = 2,
        address: str | None = None,
    ) -> RetrievalService:
        """``n`` hosts in Ray actors (Ray is started here when it is not running).

        Args:
            config: the hosts' settings.
            n: number of index actors.
            num_cpus: CPUs reserved per index actor (``cpu_threads`` defaults to it).
            embedder_actor: embed queries in one shared :class:`EmbedderHost` actor instead of in each host.
            embedder_gpus: GPUs reserved for the embedder actor (BGE-M3: 1).
            restarts: replacements per index actor after deaths.
            address: Ray address when Ray is not running yet.
        """
        import ray

        from symbolkg.actors.ray_runtime import ensure_ray  # lazy: ray loads only when an actor is started

        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        ensure_ray(address)
        if config.cpu_threads is None:
            config = dataclasses.replace(config, cpu_threads=max(1, int(num_cpus)))
        embedder_handle = None
        if embedder_actor:
            embedder_handle = (
                ray.remote(EmbedderHost)
                .options(num_cpus=num_cpus, num_gpus=embedder_gpus, max_restarts=-1)
                .remote(config.embedder)
            )

        def start() -> Any:
            return ray.remote(RetrievalActor).options(num_cpus=num_cpus, max_restarts=0).remote(config, embedder_handle)

        return cls(
            [_ActorBackend(start, restarts) for _ in range(n)], config.max_batch, embedder_handle=embedder_handle
        )

    async def search(self, key: str, graph: Graph, question: str, entities: Sequence[str] | None = None) -> Retrieval:
        """Anchors and hull for ``question`` over ``graph`` (whose retriever is cached under ``key``).

        Raises:
            RetrievalError: the host failed (or died past its restarts) on the batch holding this query.
        """
        request = SearchRequest(key, graph, question, None if entities is None else tuple(entities))
        return await self._lanes[self.lane_of(key)].submit(request)

    def host_pids(self) -> list[int]:
        """Process id of each host, in lane order (tests)."""
        import ray

        return [
            b.host.pid() if isinstance(b, _ThreadBackend) else ray.get(b.handle.pid.remote()) for b in self._backends
        ]

    def lane_of(self, key: str) -> int:
        """Which host answers ``key``."""
        return zlib.crc32(key.encode("utf-8")) % len(self._lanes)

    def close(self) -> None:
        """Stop the hosts (and the embedder actor). Idempotent."""
        for backend in self._backends:
            backend.close()
        self._backends = []
        if self._embedder_handle is not None:
            import ray

            ray.kill(self._embedder_handle, no_restart=True)
            self._embedder_handle = None


class RetrievalActor(RetrievalHost):
    """The Ray actor body of an index host: builds its embedder, or uses the shared embedder actor."""

    def __init__(self, config: HostConfig, embedder_handle: Any = None) -> None:
        super().__init__(config, RemoteEmbedder(embedder_handle) if embedder_handle is not None else None)
