"""Build an engine from its name and options (what ``symbolkg solve --engine`` means).

Backend modules are imported only when chosen: picking ``recorded`` never imports vLLM.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from actors.engines.base import ChatRequest, Completion, LLMEngine

ENGINES: tuple[str, ...] = ("vllm", "openai", "recorded", "replay")


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
        actor: vllm only: host the engine in a Ray :class:`~actors.llm_actor.LLMActor` (on a
            GPU node of the cluster) instead of in this process; the driver then needs no GPU.
        ray_address: the Ray cluster for ``actor`` (None: ``RAY_ADDRESS`` or a local Ray).
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
    actor: bool = False
    ray_address: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ENGINES:
            raise ValueError(f"unknown engine {self.kind!r}; choose one of {', '.join(ENGINES)}")
        if self.kind == "recorded" and not self.recorded:
            raise ValueError("--engine recorded needs --recorded FILE (a Logic-LM program file)")
        if self.kind == "replay" and not (self.cache_dir and self.model):
            raise ValueError("--engine replay needs a completion cache (--cache DIR; --llm-cache DIR where the LLM "
                             "step is optional) and --model NAME (the model the cache was filled by)")
        if self.kind == "openai" and not (self.openai_url and self.model):
            raise ValueError("--engine openai needs --openai-url URL and --model NAME")
        if self.actor and self.kind != "vllm":
            raise ValueError(f"--llm-actor hosts a vLLM engine in a Ray actor; it does not apply to --engine {self.kind}")


class LazyEngine:
    """Builds its engine on the first ``generate``: a rerun fully served by the cache never loads a model.

    Args:
        build: makes the engine (e.g. loads vLLM; may take tens of seconds); runs in a worker
            thread so the event loop keeps serving.
        model: the model name, known before the engine exists (it keys the cache).
        supports_structured: what the engine will support.
        prepare: runs on the event loop's thread just before ``build``, for what must not happen
            in a worker thread (starting Ray: :func:`actors.ray_runtime.ensure_ray`).
    """

    def __init__(self, build: Callable[[], LLMEngine], *, model: str, supports_structured: bool,
                 prepare: Callable[[], None] | None = None) -> None:
        self._build = build
        self._prepare = prepare
        self._engine: LLMEngine | None = None
        self._lock = asyncio.Lock()
        self.model = model
        self.supports_structured = supports_structured

    @property
    def started(self) -> bool:
        return self._engine is not None

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if self._engine is None:
            async with self._lock:
                if self._engine is None:
                    if self._prepare is not None:
                        self._prepare()
                    self._engine = await asyncio.to_thread(self._build)
        return await self._engine.generate(requests)

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.close()


def vllm_model_name(config) -> str:  # noqa: ANN001 - a VLLMConfig; vllm_engine is imported lazily
    """The name a VLLMEngine built from ``config`` will have, without loading anything."""
    from actors.engines.models import resolve_model

    return config.served_model_name or resolve_model(config.model, prepare_embedded=False).name


def make_engine(opts: EngineOptions) -> LLMEngine:
    """The engine ``opts`` describes, wrapped in the write-through cache if ``cache_dir`` is set."""
    engine: LLMEngine
    if opts.kind == "recorded":
        from actors.engines.recorded import RecordedEngine

        engine = RecordedEngine.from_logiclm_file(opts.recorded)  # type: ignore[arg-type]
    elif opts.kind == "replay":
        from actors.engines.replay import CompletionCache, ReplayEngine

        return ReplayEngine(CompletionCache(Path(opts.cache_dir)), opts.model)  # type: ignore[arg-type]
    elif opts.kind == "openai":
        from actors.engines.openai_engine import OpenAIConfig, OpenAIEngine

        engine = OpenAIEngine(OpenAIConfig(base_url=opts.openai_url, model=opts.model))  # type: ignore[arg-type]
    else:
        from actors.engines.vllm_engine import VLLMConfig, VLLMEngine

        kwargs = {k: v for k, v in {
            "tensor_parallel_size": opts.tensor_parallel_size,
            "gpu_memory_utilization": opts.gpu_memory_utilization,
            "max_model_len": opts.max_model_len,
            "max_num_seqs": opts.max_num_seqs,
        }.items() if v is not None}
        if opts.model:
            kwargs["model"] = opts.model
        config = VLLMConfig(**kwargs)
        if opts.actor:
            from actors.llm_actor import LLMActorConfig, start_llm_actor
            from actors.ray_runtime import ensure_ray

            actor_config = LLMActorConfig("vllm", config)
            engine = LazyEngine(lambda: start_llm_actor(actor_config, address=opts.ray_address),
                                model=vllm_model_name(config), supports_structured=True,
                                prepare=lambda: ensure_ray(opts.ray_address))
        else:
            engine = LazyEngine(lambda: VLLMEngine(config), model=vllm_model_name(config), supports_structured=True)
    if opts.cache_dir:
        from actors.engines.replay import CachingEngine, CompletionCache

        engine = CachingEngine(engine, CompletionCache(Path(opts.cache_dir)))
    return engine
