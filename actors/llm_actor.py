"""The LLM as a Ray actor, and the engine that talks to it.

:class:`LLMActor` owns one engine (vLLM on a GPU node, usually) inside an async Ray actor, so
many driver-side coroutines can keep requests in flight at once and vLLM batches them all.
:class:`RemoteEngine` is an :class:`~symbolkg.actors.engines.base.LLMEngine` that awaits the actor, so
stage code takes an engine and never knows whether it is local or remote::

    engine = start_llm_actor(LLMActorConfig("vllm", VLLMConfig(model=..., tensor_parallel_size=4)))
    completions = await engine.generate(requests)
    await engine.close()

Requests and completions cross the process boundary as the plain dataclasses of
:mod:`symbolkg.actors.engines.base` (pickled by Ray). An :class:`EngineError` raised in the actor
reaches the caller as an :class:`EngineError` (Ray re-raises the original class); a dead
actor becomes :class:`EngineDeadError`.

Placement: an engine of one GPU (or none) is a plain actor reserving ``num_gpus``. An engine of
several GPUs (vLLM with ``tensor_parallel_size`` > 1 on a GPU cluster, or an explicit
``num_gpus`` > 1) runs inside its own Ray placement group, one ``{"GPU": 1}`` bundle per GPU
(the first also holds the actor's CPUs), ``STRICT_PACK`` by default so tensor parallelism stays
on one node. The actor itself reserves no GPU: it is scheduled into bundle 0 with
``placement_group_capture_child_tasks=True`` and vLLM's Ray executor (chosen for it) finds the
group (``ray.util.get_current_placement_group``) and puts one worker on each GPU bundle, as Ray
Data LLM does. The group lives exactly as long as the actor: it is removed when the actor fails
to start, when :meth:`RemoteEngine.close` runs, and as soon as a call finds the actor dead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from symbolkg.actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError, LLMEngine

ENGINE_KINDS = ("vllm", "openai", "scripted")
PLACEMENT_STRATEGIES = ("STRICT_PACK", "PACK", "SPREAD", "STRICT_SPREAD")


@dataclass(frozen=True)
class LLMActorConfig:
    """What the actor runs and what it reserves.

    Attributes:
        kind: ``"vllm"`` (``config`` is a :class:`~symbolkg.actors.engines.vllm_engine.VLLMConfig`),
            ``"openai"`` (an ``OpenAIConfig``) or ``"scripted"`` (``config`` is the script of a
            :class:`~symbolkg.actors.engines.scripted.ScriptedEngine`, or a :class:`ScriptedActorConfig`:
            tests).
        config: the engine's configuration (must pickle; Ray uses cloudpickle, so a scripted
            engine's lambda is fine).
        num_gpus: GPUs reserved for the engine; None = the engine's ``tensor_parallel_size``
            when the cluster has GPUs, else 0 (the CPU build). Above 1 it must be a whole
            number: the engine then runs in a placement group of one bundle per GPU.
        num_cpus: CPUs reserved for the actor (the vLLM CPU build uses the cores of its node
            whatever this says; it only guides Ray's placement). In a placement group they are
            part of the first bundle.
        max_concurrency: ``generate`` calls the actor runs at once (each awaits the engine;
            vLLM batches across them). Keep it above the callers' total in-flight calls.
        name: optional Ray actor name (to find it from another driver with ``ray.get_actor``).
        placement_strategy: how a multi-GPU engine's bundles may be spread over nodes (Ray's
            strategies). ``STRICT_PACK`` (default): all on one node, what tensor parallelism
            wants (NVLink, no cross-node all-reduce); ``PACK``: one node if possible, else
            several; ``SPREAD``/``STRICT_SPREAD``: across nodes (pipeline parallelism only).
        placement_timeout_s: seconds to wait for a multi-GPU engine's placement group to be
            placed (an autoscaler may need minutes to add a GPU node) before giving up with
            :class:`EngineDeadError`.
    """

    kind: Literal["vllm", "openai", "scripted"]
    config: Any = None
    num_gpus: float | None = None
    num_cpus: float = 1.0
    max_concurrency: int = 1000
    name: str | None = None
    placement_strategy: Literal["STRICT_PACK", "PACK", "SPREAD", "STRICT_SPREAD"] = "STRICT_PACK"
    placement_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if self.kind not in ENGINE_KINDS:
            raise ValueError(f"kind must be one of {', '.join(ENGINE_KINDS)}, got {self.kind!r}")
        if self.num_gpus is not None and self.num_gpus < 0:
            raise ValueError(f"num_gpus must be >= 0 or None, got {self.num_gpus}")
        if self.num_gpus is not None and self.num_gpus > 1 and self.num_gpus != int(self.num_gpus):
            raise ValueError(
                f"num_gpus above 1 must be a whole number (one placement-group bundle per GPU), got {self.num_gpus}"
            )
        if self.num_cpus < 0:
            raise ValueError(f"num_cpus must be >= 0, got {self.num_cpus}")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.kind == "scripted" and self.config is None:
            raise ValueError("kind='scripted' needs config=<the script>")
        if self.placement_strategy not in PLACEMENT_STRATEGIES:
            raise ValueError(
                f"placement_strategy must be one of {', '.join(PLACEMENT_STRATEGIES)}, got {self.placement_strategy!r}"
            )
        if not self.placement_timeout_s > 0:
            raise ValueError(f"placement_timeout_s must be > 0, got {self.placement_timeout_s}")

    def resolved_num_gpus(self, cluster_gpus: float) -> float:
        """GPUs to reserve on a cluster with ``cluster_gpus`` GPUs in all."""
        if self.num_gpus is not None:
            return self.num_gpus
        if self.kind != "vllm" or cluster_gpus <= 0:
            return 0.0
        return float(getattr(self.config, "tensor_parallel_size", 1) or 1)

    def placement(self, cluster_gpus: float) -> EnginePlacement:
        """How the actor is placed on a cluster with ``cluster_gpus`` GPUs in all (no Ray needed).

        More than one GPU means a placement group, except for a vLLM engine whose config asks for
        ``distributed_executor_backend="mp"``: its multiprocessing workers can only use GPUs the
        actor itself holds, so that actor keeps all of them (one node, no placement group). A
        vLLM engine in a placement group gets ``distributed_executor_backend="ray"`` when its
        config leaves the backend to vLLM.
        """
        num_gpus = self.resolved_num_gpus(cluster_gpus)
        backend = getattr(self.config, "distributed_executor_backend", None) if self.kind == "vllm" else None
        if num_gpus <= 1 or backend == "mp":
            return EnginePlacement(num_gpus=num_gpus, engine_config=self.config)
        first = {"GPU": 1.0, "CPU": float(self.num_cpus)} if self.num_cpus > 0 else {"GPU": 1.0}
        bundles = (first, *({"GPU": 1.0} for _ in range(int(num_gpus) - 1)))
        engine_config = self.config
        if self.kind == "vllm" and backend is None and dataclasses.is_dataclass(self.config):
            engine_config = dataclasses.replace(self.config, distributed_executor_backend="ray")
        return EnginePlacement(
            num_gpus=num_gpus, engine_config=engine_config, bundles=bundles, strategy=self.placement_strategy
        )


@dataclass(frozen=True)
class EnginePlacement:
    """Where an engine actor runs: a plain actor, or an actor inside a placement group.

    Made by :meth:`LLMActorConfig.placement`; :func:`start_llm_actor` acts on it.

    Attributes:
        num_gpus: GPUs the engine gets in all.
        engine_config: the config the actor builds its engine from (a vLLM config in a placement
            group has the Ray executor set).
        bundles: the placement group's bundles, one per GPU, the first with the actor's CPUs;
            empty = no placement group (the actor reserves ``num_gpus`` itself).
        strategy: the placement group's strategy (ignored without bundles).
    """

    num_gpus: float
    engine_config: Any = None
    bundles: tuple[dict[str, float], ...] = ()
    strategy: str = "STRICT_PACK"

    @property
    def uses_placement_group(self) -> bool:
        """Whether the actor runs inside a placement group of its own."""
        return bool(self.bundles)


@dataclass(frozen=True)
class ScriptedActorConfig:
    """The ``scripted`` engine's options, when a bare script is not enough (tests).

    Attributes:
        script: the :class:`~symbolkg.actors.engines.scripted.ScriptedEngine` script.
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
        # lazy: vllm / httpx / ray load only in the actor that uses them
        from symbolkg.actors.engines.vllm_engine import VLLMConfig, VLLMEngine

        return VLLMEngine(config if config is not None else VLLMConfig())
    if kind == "openai":
        # lazy: vllm / httpx / ray load only in the actor that uses them
        from symbolkg.actors.engines.openai_engine import OpenAIEngine

        return OpenAIEngine(config)
    if kind == "scripted":
        # lazy: vllm / httpx / ray load only in the actor that uses them
        from symbolkg.actors.engines.scripted import ScriptedEngine

        if isinstance(config, ScriptedActorConfig):
            return ScriptedEngine(
                config.script,
                model=config.model,
                supports_structured=config.supports_structured,
                latency_s=config.latency_s,
            )
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

    def placement(self) -> dict[str, Any]:
        """Where this actor runs, as Ray sees it from inside (tests, ``symbolkg`` diagnostics).

        Returns:
            ``placement_group_id`` (hex; None outside a placement group), ``captured`` (the id
            of ``ray.util.get_current_placement_group()``, the group vLLM's Ray executor will put
            its workers in; None when there is none), ``bundles`` (the group's bundle specs),
            ``assigned`` (the resources the actor itself holds) and ``node_id``.
        """
        import ray

        ctx = ray.get_runtime_context()
        current = ray.util.get_current_placement_group()
        return {
            "placement_group_id": ctx.get_placement_group_id(),
            "captured": current.id.hex() if current is not None else None,
            "bundles": list(current.bundle_specs) if current is not None else [],
            "assigned": ctx.get_assigned_resources(),
            "node_id": ctx.get_node_id(),
        }


def start_llm_actor(config: LLMActorConfig, *, address: str | None = None) -> RemoteEngine:
    """Start an :class:`LLMActor` (initialising Ray if needed) and return its engine.

    Blocks until the engine inside the actor is ready (model loaded). The returned engine
    owns the actor: its ``close`` closes the engine and kills the actor. An engine of several
    GPUs first reserves a placement group (see the module docstring) and waits up to
    ``config.placement_timeout_s`` for it; the engine owns the group too and removes it with
    the actor.

    Args:
        config: what to run and what to reserve.
        address: Ray address when Ray is not initialised yet (None: ``RAY_ADDRESS`` or local).

    Raises:
        EngineDeadError: the placement group could not be placed in time (it is removed; the
            message says how many GPUs were asked for and what the cluster has), or the actor
            failed to start its engine (the cause is chained; the group is removed).
    """
    import ray
    from ray.util.placement_group import remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    from symbolkg.actors.ray_runtime import ensure_ray  # lazy: vllm / httpx / ray load only in the actor that uses them

    ensure_ray(address)
    plan = config.placement(ray.cluster_resources().get("GPU", 0.0))
    options: dict[str, Any] = {
        "num_gpus": plan.num_gpus,
        "num_cpus": config.num_cpus,
        "max_concurrency": config.max_concurrency,
        "max_restarts": 0,
    }
    if config.name:
        options["name"] = config.name
    pg = _reserve_placement_group(config, plan) if plan.uses_placement_group else None
    if pg is not None:
        # The GPUs are the group's, for vLLM's Ray workers (one per bundle); the actor holds CPUs only.
        options["num_gpus"] = 0
        options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
            pg, placement_group_bundle_index=0, placement_group_capture_child_tasks=True
        )
    handle = None
    try:
        handle = ray.remote(LLMActor).options(**options).remote(config.kind, plan.engine_config)
        info = ray.get(handle.describe.remote())
    except Exception as exc:
        if handle is not None:
            ray.kill(handle, no_restart=True)
        if pg is not None:
            remove_placement_group(pg)
        raise EngineDeadError(f"LLM actor ({config.kind}) failed to start: {exc}") from exc
    return RemoteEngine(
        handle,
        model=info["model"],
        supports_structured=info["supports_structured"],
        owns_actor=True,
        placement_group=pg,
    )


def _reserve_placement_group(config: LLMActorConfig, plan: EnginePlacement) -> Any:
    """Create the placement group of ``plan`` and wait for it; remove it and raise if it is not placed in time."""
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    pg = placement_group(list(plan.bundles), strategy=plan.strategy)
    try:
        placed = pg.wait(config.placement_timeout_s)
    except BaseException:
        remove_placement_group(pg)
        raise
    if placed:
        return pg
    remove_placement_group(pg)
    node_gpus = [node.get("Resources", {}).get("GPU", 0.0) for node in ray.nodes() if node.get("Alive")]
    raise EngineDeadError(
        f"LLM actor ({config.kind}): its placement group of {plan.num_gpus:g} GPUs ({len(plan.bundles)} bundles, "
        f"{plan.strategy}) could not be placed within {config.placement_timeout_s:g} s; the cluster has "
        f"{sum(node_gpus):g} GPUs ({ray.available_resources().get('GPU', 0.0):g} free now) on {len(node_gpus)} "
        f"node(s), at most {max(node_gpus, default=0.0):g} on one node. Free GPUs (close other engines), add a node "
        "with enough GPUs, use fewer GPUs per engine, or raise placement_timeout_s (an autoscaler may need longer)"
    )


class RemoteEngine:
    """An :class:`~symbolkg.actors.engines.base.LLMEngine` backed by an :class:`LLMActor` handle.

    Attributes:
        model: the actor's model name.
        supports_structured: whether the actor's engine enforces structured outputs.
        handle: the Ray actor handle.
        placement_group: the actor's placement group while this engine owns it (None: none, or
            already removed).
    """

    def __init__(
        self,
        handle: Any,
        *,
        model: str | None = None,
        supports_structured: bool | None = None,
        owns_actor: bool = False,
        placement_group: Any = None,
    ) -> None:
        """Wrap ``handle``; ``model``/``supports_structured`` are asked of the actor when not given.

        Args:
            handle: an :class:`LLMActor` handle.
            model: the model name (skips a blocking round trip when given).
            supports_structured: likewise.
            owns_actor: ``close`` also kills the actor (True when this engine started it).
            placement_group: the actor's placement group, owned by this engine: removed by
                ``close`` and as soon as a call finds the actor dead (its GPUs are then free
                for the engine that replaces it).
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
        self.placement_group = placement_group
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
            self._release_placement_group()  # the actor is gone (max_restarts=0): free its GPUs now
            raise EngineDeadError(f"LLM actor for {self.model!r} died: {exc}") from exc
        except RayTaskError as exc:
            raise EngineError(f"LLM actor for {self.model!r} failed: {exc}") from exc

    async def close(self) -> None:
        """Close the actor's engine, kill the actor when this engine owns it, remove its placement group.

        Idempotent.
        """
        if self._closed:
            return
        self._closed = True
        import ray
        from ray.exceptions import RayActorError

        try:
            await self.handle.close.remote()
        except RayActorError:
            pass  # already gone: only its placement group may be left to release
        finally:
            if self._owns_actor:
                ray.kill(self.handle, no_restart=True)
            self._release_placement_group()

    def _release_placement_group(self) -> None:
        """Remove the actor's placement group, once (removing it also ends any actor still in it)."""
        pg, self.placement_group = self.placement_group, None
        if pg is not None:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(pg)
