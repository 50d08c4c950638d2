"""Build an engine from its name and options (what ``symbolkg solve --engine`` means).

Backend modules are imported only when chosen: picking ``recorded`` never imports vLLM.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from symbolkg.actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError, LLMEngine

ENGINES: tuple[str, ...] = ("vllm", "openai", "recorded", "replay", "gold", "pararule-template")


@dataclass(frozen=True)
class EngineOptions:
    """Options of :func:`make_engine`.

    Attributes:
        kind: one of :data:`ENGINES` (``scripted`` is for tests and built in code).
        model: model name or path (vllm: a registry name, HF folder or repo id, default the
            embedded SmolLM2-135M-Instruct; openai: the served model name; replay: the model
            the cached completions came from).
        recorded: Logic-LM program file for the ``recorded`` engine.
        cache_dir: the replay cache; with any engine but ``replay`` it is written through.
        openai_url: base URL of an OpenAI-compatible server.
        tensor_parallel_size, gpu_memory_utilization, max_model_len, max_num_seqs: vLLM
            options (GPU clusters: e.g. TP 2-8 and 0.9 for a 70B model).
        actor: vllm only: host the engine in a Ray :class:`~symbolkg.actors.llm_actor.LLMActor` (on a
            GPU node of the cluster) instead of in this process; the driver then needs no GPU.
        ray_address: the Ray cluster for ``actor`` (None: ``RAY_ADDRESS`` or a local Ray).
        restarts: vllm: how many times a dead engine (its actor or process gone) is rebuilt and the
            requests it took down are retried (:class:`LazyEngine`); 0 = a death ends the job.
        actors: with ``actor``: how many LLM actors (engine replicas, one per GPU group) serve the
            job, behind a least-outstanding :class:`~symbolkg.actors.engines.balanced.BalancedEngine`.
        placement_strategy: with ``actor`` and ``tensor_parallel_size`` > 1: how each engine's
            placement group (one GPU bundle per TP rank) may spread over nodes; ``STRICT_PACK`` =
            one node (see :class:`~symbolkg.actors.llm_actor.LLMActorConfig`).
        placement_timeout_s: with ``actor`` and ``tensor_parallel_size`` > 1: seconds to wait for
            an engine's GPUs to be placed before the build fails.
        scheduling_policy: vllm: how requests waiting for a batch slot are served (``"fcfs"`` or
            ``"priority"``: :attr:`~symbolkg.actors.engines.vllm_engine.VLLMConfig.scheduling_policy`).
        repeat_stop: vllm: stop a completion that ends in one block repeated (a loop) instead of
            decoding it to ``max_tokens`` (:mod:`symbolkg.actors.engines.repeats`); False: decode every
            completion to its end.
        data_dir: gold: the benchmark data folder whose SymBa gold programs answer the calls.
            (``pararule-template`` needs nothing: it translates the prompt's own text.)
    """

    kind: str
    model: str | None = None
    recorded: str | None = None
    cache_dir: str | None = None
    openai_url: str | None = None
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    scheduling_policy: str = "fcfs"
    actor: bool = False
    ray_address: str | None = None
    restarts: int = 2
    repeat_stop: bool = True
    actors: int = 1
    placement_strategy: str = "STRICT_PACK"
    placement_timeout_s: float = 300.0
    data_dir: str | None = None

    def __post_init__(self) -> None:
        if self.actors < 1:
            raise ValueError(f"--llm-actors must be >= 1, got {self.actors}")
        if self.actors > 1 and not self.actor:
            raise ValueError("--llm-actors N needs --llm-actor (replicas are Ray actors)")
        if self.restarts < 0:
            raise ValueError(f"--llm-restarts must be >= 0, got {self.restarts}")
        if self.kind not in ENGINES:
            raise ValueError(f"unknown engine {self.kind!r}; choose one of {', '.join(ENGINES)}")
        if self.kind == "recorded" and not self.recorded:
            raise ValueError("--engine recorded needs --recorded FILE (a Logic-LM program file)")
        if self.kind == "replay" and not (self.cache_dir and self.model):
            raise ValueError(
                "--engine replay needs a completion cache (--cache DIR; --llm-cache DIR where the LLM "
                "step is optional) and --model NAME (the model the cache was filled by)"
            )
        if self.kind == "gold" and not self.data_dir:
            raise ValueError("--engine gold needs the data folder holding SymBa's sets (--data-dir)")
        if self.kind == "openai" and not (self.openai_url and self.model):
            raise ValueError("--engine openai needs --openai-url URL and --model NAME")
        if self.actor and self.kind != "vllm":
            raise ValueError(
                f"--llm-actor hosts a vLLM engine in a Ray actor; it does not apply to --engine {self.kind}"
            )


class LazyEngine:
    """Builds its engine on the first ``generate``, and rebuilds it when it dies (bounded).

    Lazy: a rerun fully served by the cache never loads a model. Restarting: when the engine
    raises :class:`~symbolkg.actors.engines.base.EngineDeadError` (its Ray actor or process died), the
    engine is closed and built again, at most ``max_restarts`` times per job, and the requests it
    took down are sent again. Concurrent requests that saw the same death cause one rebuild. A
    request that has now been in flight on ``max_request_attempts`` engines that died is not sent
    again: it fails with a plain :class:`~symbolkg.actors.engines.base.EngineError`, which the method
    records for that problem (quarantined), so one poisonous prompt cannot take the job down.

    Args:
        build: makes the engine (e.g. loads vLLM; may take tens of seconds); runs in a worker
            thread so the event loop keeps serving.
        model: the model name, known before the engine exists (it keys the cache).
        supports_structured: what the engine will support.
        prepare: runs on the event loop's thread just before each build, for what must not happen
            in a worker thread (starting Ray: :func:`symbolkg.actors.ray_runtime.ensure_ray`).
        max_restarts: rebuilds allowed after deaths (0: a death ends the job, as before).
        max_request_attempts: engines a request may see die before it is quarantined (>= 1).

    Attributes:
        restarts: rebuilds so far; ``events``: one line per death (time and cause).
        quarantined: request ids failed after too many engine deaths.
    """

    def __init__(
        self,
        build: Callable[[], LLMEngine],
        *,
        model: str,
        supports_structured: bool,
        prepare: Callable[[], None] | None = None,
        max_restarts: int = 0,
        max_request_attempts: int = 2,
    ) -> None:
        if max_restarts < 0 or max_request_attempts < 1:
            raise ValueError(
                f"need max_restarts >= 0 and max_request_attempts >= 1, got {max_restarts}, {max_request_attempts}"
            )
        self._build = build
        self._prepare = prepare
        self._engine: LLMEngine | None = None
        self._generation = 0
        self._lock = asyncio.Lock()
        self.model = model
        self.supports_structured = supports_structured
        self.max_restarts = max_restarts
        self.max_request_attempts = max_request_attempts
        self.restarts = 0
        self.events: list[str] = []
        self.quarantined: list[str] = []

    @property
    def started(self) -> bool:
        return self._engine is not None

    async def _current(self) -> tuple[LLMEngine, int]:
        if self._engine is None:
            async with self._lock:
                if self._engine is None:
                    if self._prepare is not None:
                        self._prepare()
                    self._engine = await asyncio.to_thread(self._build)
        return self._engine, self._generation

    async def _retire(self, generation: int, cause: EngineDeadError) -> None:
        """Drop the engine of ``generation`` (once, whoever sees its death first)."""
        async with self._lock:
            if generation != self._generation or self._engine is None:
                return  # another request already retired it
            if self.restarts >= self.max_restarts:
                raise EngineDeadError(f"the engine died and {self.restarts} restart(s) are used up: {cause}") from cause
            dead, self._engine = self._engine, None
            self._generation += 1
            self.restarts += 1
            self.events.append(f"{time.strftime('%H:%M:%S')} engine died ({cause}); restart {self.restarts}")
            print(
                f"[symbolkg] the LLM engine died ({cause}); rebuilding it ({self.restarts}/{self.max_restarts}) "
                "and retrying its requests",
                file=sys.stderr,
            )
            try:
                await dead.close()
            except Exception:  # noqa: BLE001 - a dead engine may fail to close; it is gone either way
                pass

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        attempts = 0
        while True:
            engine, generation = await self._current()
            try:
                return await engine.generate(requests)
            except EngineDeadError as exc:
                if self.max_restarts == 0:
                    raise
                attempts += 1
                if attempts >= self.max_request_attempts:
                    ids = [r.request_id or r.problem_id for r in requests]
                    self.quarantined.extend(ids)
                    await self._retire(generation, exc)
                    raise EngineError(f"quarantined: in flight on {attempts} engines that died ({exc})") from exc
                await self._retire(generation, exc)

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.close()


def vllm_model_name(config) -> str:
    """The name a VLLMEngine built from ``config`` will have, without loading anything."""
    # lazy: a backend loads only when chosen (vllm, httpx, ray, data files)
    from symbolkg.actors.engines.models import resolve_model

    return config.served_model_name or resolve_model(config.model, prepare_embedded=False).name


def make_engine(opts: EngineOptions) -> LLMEngine:
    """The engine ``opts`` describes, wrapped in the write-through cache if ``cache_dir`` is set."""
    engine: LLMEngine
    if opts.kind == "gold":
        # lazy: a backend loads only when chosen (vllm, httpx, ray, data files)
        from symbolkg.actors.engines.gold import GoldEngine

        engine = GoldEngine(opts.data_dir)  # type: ignore[arg-type]
    elif opts.kind == "pararule-template":
        # lazy: a backend loads only when chosen (vllm, httpx, ray, data files)
        from symbolkg.actors.engines.pararule_template import PararuleTemplateEngine

        engine = PararuleTemplateEngine()
    elif opts.kind == "recorded":
        # lazy: a backend loads only when chosen (vllm, httpx, ray, data files)
        from symbolkg.actors.engines.recorded import RecordedEngine

        engine = RecordedEngine.from_logiclm_file(opts.recorded)  # type: ignore[arg-type]
    elif opts.kind == "replay":
        # lazy: a backend loads only when chosen (vllm, httpx, ray, data files)
        from symbolkg.actors.engines.replay import CompletionCache, ReplayEngine

        return ReplayEngine(CompletionCache(Path(opts.cache_dir)), opts.model)  # type: ignore[arg-type]
    elif opts.kind == "openai":
        # lazy: a backend loads only when chosen (vllm, httpx, ray, data files)
        from symbolkg.actors.engines.openai_engine import OpenAIConfig, OpenAIEngine

        engine = OpenAIEngine(OpenAIConfig(base_url=opts.openai_url, model=opts.model))  # type: ignore[arg-type]
    else:
        engine = _vllm_engine(opts)
    if opts.cache_dir:
        # lazy: a backend loads only when chosen (vllm, httpx, ray, data files)
        from symbolkg.actors.engines.replay import CachingEngine, CompletionCache

        engine = CachingEngine(engine, CompletionCache(Path(opts.cache_dir)))
    return engine


def _vllm_engine(opts: EngineOptions) -> LLMEngine:
    """vLLM in this process, or in ``opts.actors`` Ray actors (balanced) when ``opts.actor`` is set."""
    # lazy: a backend loads only when chosen (vllm, httpx, ray, data files)
    from symbolkg.actors.engines.vllm_engine import VLLMConfig, VLLMEngine

    kwargs = {
        k: v
        for k, v in {
            "tensor_parallel_size": opts.tensor_parallel_size,
            "gpu_memory_utilization": opts.gpu_memory_utilization,
            "max_model_len": opts.max_model_len,
            "max_num_seqs": opts.max_num_seqs,
        }.items()
        if v is not None
    }
    if opts.model:
        kwargs["model"] = opts.model
    if not opts.repeat_stop:
        kwargs["repeat_stop"] = None
    config = VLLMConfig(**kwargs, scheduling_policy=opts.scheduling_policy)
    if not opts.actor:
        return LazyEngine(
            lambda: VLLMEngine(config),
            model=vllm_model_name(config),
            supports_structured=True,
            max_restarts=opts.restarts,
        )
    from symbolkg.actors.engines.balanced import BalancedEngine  # lazy, as above
    from symbolkg.actors.llm_actor import LLMActorConfig, start_llm_actor  # lazy, as above
    from symbolkg.actors.ray_runtime import ensure_ray  # lazy, as above

    actor_config = LLMActorConfig(
        "vllm",
        config,
        placement_strategy=opts.placement_strategy,  # type: ignore[arg-type]
        placement_timeout_s=opts.placement_timeout_s,
    )
    replicas = [
        LazyEngine(
            lambda: start_llm_actor(actor_config, address=opts.ray_address),
            model=vllm_model_name(config),
            supports_structured=True,
            prepare=lambda: ensure_ray(opts.ray_address),
            max_restarts=opts.restarts,
        )
        for _ in range(opts.actors)
    ]
    return replicas[0] if len(replicas) == 1 else BalancedEngine(replicas)
