"""The LLM as a Ray actor, and the engine that talks to it.

:class:`LLMActor` owns one engine (vLLM on a GPU node, usually) inside an async Ray actor, so
many driver-side coroutines can keep requests in flight at once and vLLM batches them all.
:class:`RemoteEngine` is an :class:`~actors.engines.base.LLMEngine` that awaits the actor, so
stage code takes an engine and never knows whether it is local or remote::

    engine = start_llm_actor(LLMActorConfig("vllm", VLLMConfig(model=..., tensor_parallel_size=4)))
    completions = await engine.generate(requests)
    await engine.close()

Requests and completions cross the process boundary as the plain dataclasses of
:mod:`actors.engines.base` (pickled by Ray). An :class:`EngineError` raised in the actor
reaches the caller as an :class:`EngineError` (Ray re-raises the original class); a dead
actor becomes :class:`EngineDeadError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

from actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError, LLMEngine

ENGINE_KINDS = ("vllm", "openai", "scripted")


@dataclass(frozen=True)
class LLMActorConfig:
    """What the actor runs and what it reserves.

    Attributes:
        kind: ``"vllm"`` (``config`` is a :class:`~actors.engines.vllm_engine.VLLMConfig`),
            ``"openai"`` (an ``OpenAIConfig``) or ``"scripted"`` (``config`` is the script of a
            :class:`~actors.engines.scripted.ScriptedEngine`, or a :class:`ScriptedActorConfig`:
            tests).
        config: the engine's configuration (must pickle; Ray uses cloudpickle, so a scripted
            engine's lambda is fine).
        num_gpus: GPUs reserved for the actor; None = the engine's ``tensor_parallel_size``
            when the cluster has GPUs, else 0 (the CPU build).
        num_cpus: CPUs reserved for the actor (the vLLM CPU build uses the cores of its node
            whatever this says; it only guides Ray's placement).
        max_concurrency: ``generate`` calls the actor runs at once (each awaits the engine;
            vLLM batches across them). Keep it above the callers' total in-flight calls.
        name: optional Ray actor name (to find it from another driver with ``ray.get_actor``).
    """

    kind: Literal["vllm", "openai", "scripted"]
    config: Any = None
    num_gpus: float | None = None
    num_cpus: float = 1.0
    max_concurrency: int = 1000
    name: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ENGINE_KINDS:
            raise ValueError(f"kind must be one of {', '.join(ENGINE_KINDS)}, got {self.kind!r}")
        if self.num_gpus is not None and self.num_gpus < 0:
            raise ValueError(f"num_gpus must be >= 0 or None, got {self.num_gpus}")
        if self.num_cpus < 0:
            raise ValueError(f"num_cpus must be >= 0, got {self.num_cpus}")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.kind == "scripted" and self.config is None:
            raise ValueError("kind='scripted' needs config=<the script>")

    def resolved_num_gpus(self, cluster_gpus: float) -> float:
        """GPUs to reserve on a cluster with ``cluster_gpus`` GPUs in all."""
        if self.num_gpus is not None:
            return self.num_gpus
        if self.kind != "vllm" or cluster_gpus <= 0:
            return 0.0
        return float(getattr(self.config, "tensor_parallel_size", 1) or 1)


@dataclass(frozen=True)
class ScriptedActorConfig:
    """The ``scripted`` engine's options, when a bare script is not enough (tests).

    Attributes:
        script: the :class:`~actors.engines.scripted.ScriptedEngine` script.
        model: the model name it reports.
        supports_structured: what it claims.
        latency_s: simulated seconds per ``generate`` call.
    """

    script: Any
    model: str = "scripted"
    supports_structured: bool = False
    latency_s: float = 0.0


def build_engine(kind: str, config: Any) -> LLMEngine:
    """The engine of ``kind`` built from ``config`` (backend modules imported only here)."""
    if kind == "vllm":
        from actors.engines.vllm_engine import VLLMConfig, VLLMEngine

        return VLLMEngine(config if config is not None else VLLMConfig())
    if kind == "openai":
        from actors.engines.openai_engine import OpenAIEngine

        return OpenAIEngine(config)
    if kind == "scripted":
        from actors.engines.scripted import ScriptedEngine

        if isinstance(config, ScriptedActorConfig):
            return ScriptedEngine(config.script, model=config.model, supports_structured=config.supports_structured,
                                  latency_s=config.latency_s)
        return ScriptedEngine(config)
    raise ValueError(f"unknown engine kind {kind!r}; choose one of {', '.join(ENGINE_KINDS)}")


class LLMActor:
    """Ray actor body (made remote in :func:`start_llm_actor`): one engine, many calls at once."""

    def __init__(self, kind: str, config: Any) -> None:
        self._engine = build_engine(kind, config)

    def describe(self) -> dict[str, Any]:
        """The engine's ``model`` and ``supports_structured``, for :class:`RemoteEngine`."""
        return {"model": self._engine.model, "supports_structured": self._engine.supports_structured}

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """The engine's ``generate``; errors propagate with their class."""
        return await self._engine.generate(list(requests))

    async def close(self) -> None:
        """Close the engine (the actor stays until killed)."""
        await self._engine.close()


def start_llm_actor(config: LLMActorConfig, *, address: str | None = None) -> "RemoteEngine":
    """Start an :class:`LLMActor` (initialising Ray if needed) and return its engine.

    Blocks until the engine inside the actor is ready (model loaded). The returned engine
    owns the actor: its ``close`` closes the engine and kills the actor.

    Args:
        config: what to run and what to reserve.
        address: Ray address when Ray is not initialised yet (None: ``RAY_ADDRESS`` or local).

    Raises:
        EngineDeadError: the actor failed to start its engine (the cause is chained).
    """
    import ray

    from actors.ray_runtime import ensure_ray

    ensure_ray(address)
    num_gpus = config.resolved_num_gpus(ray.cluster_resources().get("GPU", 0.0))
    options: dict[str, Any] = {
        "num_gpus": num_gpus,
        "num_cpus": config.num_cpus,
        "max_concurrency": config.max_concurrency,
        "max_restarts": 0,
    }
    if config.name:
        options["name"] = config.name
    handle = ray.remote(LLMActor).options(**options).remote(config.kind, config.config)
    try:
        info = ray.get(handle.describe.remote())
    except Exception as exc:
        ray.kill(handle, no_restart=True)
        raise EngineDeadError(f"LLM actor ({config.kind}) failed to start: {exc}") from exc
    return RemoteEngine(handle, model=info["model"], supports_structured=info["supports_structured"], owns_actor=True)


class RemoteEngine:
    """An :class:`~actors.engines.base.LLMEngine` backed by an :class:`LLMActor` handle.

    Attributes:
        model: the actor's model name.
        supports_structured: whether the actor's engine enforces structured outputs.
        handle: the Ray actor handle.
    """

    def __init__(
        self,
        handle: Any,
        *,
        model: str | None = None,
        supports_structured: bool | None = None,
        owns_actor: bool = False,
    ) -> None:
        """Wrap ``handle``; ``model``/``supports_structured`` are asked of the actor when not given.

        Args:
            handle: an :class:`LLMActor` handle.
            model: the model name (skips a blocking round trip when given).
            supports_structured: likewise.
            owns_actor: ``close`` also kills the actor (True when this engine started it).
        """
        if model is None or supports_structured is None:
            import ray

            info = ray.get(handle.describe.remote())
            model = info["model"] if model is None else model
            supports_structured = info["supports_structured"] if supports_structured is None else supports_structured
        self.handle = handle
        self.model: str = model
        self.supports_structured: bool = bool(supports_structured)
        self._owns_actor = owns_actor
        self._closed = False

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Await the actor's ``generate``.

        Raises:
            EngineDeadError: the actor is gone (or this engine was closed), or its engine died.
            EngineError: the actor's engine could not answer a request.
        """
        from ray.exceptions import RayActorError, RayTaskError

        if self._closed:
            raise EngineDeadError(f"remote engine {self.model!r} is closed")
        try:
            return await self.handle.generate.remote(list(requests))
        except EngineError:  # Ray re-raises the actor's EngineError/EngineDeadError as that class
            raise
        except RayActorError as exc:
            raise EngineDeadError(f"LLM actor for {self.model!r} died: {exc}") from exc
        except RayTaskError as exc:
            raise EngineError(f"LLM actor for {self.model!r} failed: {exc}") from exc

    async def close(self) -> None:
        """Close the actor's engine, and kill the actor when this engine owns it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        import ray
        from ray.exceptions import RayActorError

        try:
            await self.handle.close.remote()
        except RayActorError:
            pass  # already gone: nothing left to release
        finally:
            if self._owns_actor:
                ray.kill(self.handle, no_restart=True)
