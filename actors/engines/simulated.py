"""A simulated LLM engine for capacity planning (the ``simulated`` backend).

:class:`SimulatedEngine` answers every request from a *responder* (a scripted answer, or a
replay-cache lookup: :func:`cache_responder`) after the delay that a :class:`LatencyModel`
of a real vLLM deployment gives for it, with continuous batching modelled honestly:

* at most ``LatencyModel.max_batch`` sequences are in service at once; the others wait in
  a FIFO queue (vLLM's ``max_num_seqs``);
* a sequence in service first spends ``prompt_tokens / prefill_tokens_per_s`` seconds in
  prefill (only its tokens after a prefix-cache hit, see below), then generates its
  completion one token per decode step;
* the decode step takes longer the more sequences are in service
  (:meth:`LatencyModel.step_s`), and the engine recomputes every sequence's progress each
  time a sequence enters or leaves, so a sequence's speed follows the batch it is in.

Time. The engine really waits (``asyncio`` timers), so the orchestrator above it runs for
real and its overheads show; a :class:`SimClock` maps real seconds to simulated seconds
(``time_scale`` real seconds per simulated second, e.g. 0.1: a 20 s LLM call takes 2 s).
Everything the engine reports (``Completion.latency_s``, :class:`RequestStats`, busy and
slot seconds) is in simulated seconds. Engines and a simulated solver pool of one run
share one clock. Nothing is random: given the same responder and the same arrivals, every
completion and token count is the same (timings vary only with the real scheduling jitter).

Token counts are estimates, not a tokenizer's: :func:`estimate_tokens` is ``ceil(chars / 4)``
(the usual rule of thumb for English with BPE vocabularies such as Llama 3's), and a prompt
adds :data:`CHAT_TEMPLATE_TOKENS_PER_MESSAGE` per message for the chat template. A completion
longer than ``SamplingParams.max_tokens`` is cut to ``4 * max_tokens`` characters and finishes
with ``"length"``.

Prefix caching (vLLM's automatic prefix caching), when the engine is given a
:class:`PrefixCacheConfig` with ``capacity_tokens > 0`` (:class:`PrefixCache`):

* a prompt is its messages rendered in order to one text (:func:`render_prompt`: a
  12-character role header and a 4-character end-of-turn marker around each message's
  content, i.e. :data:`CHAT_TEMPLATE_TOKENS_PER_MESSAGE` tokens), cut into blocks of
  ``block_tokens`` tokens (``block_tokens * CHARS_PER_TOKEN`` characters; 16 tokens, vLLM's
  block size, by default); only full blocks count, as in vLLM;
* a block's key is the hash of the whole prompt up to and including it (chained: the key of
  the block before, and the block's text), so a block hits only if everything before it matches;
* when a sequence enters service, its prompt's longest leading run of cached blocks is its
  hit, and its prefill is charged only for the tokens after that run (at least one token is
  always computed, as vLLM recomputes the last one to get logits); then all of its full blocks
  are put in the cache, so a request admitted after it (even at the same instant) can hit them:
  vLLM V1 hashes a request's full blocks when it schedules them;
* the cache holds ``capacity_tokens // block_tokens`` blocks and evicts the least recently
  used; a prompt's blocks are touched tail first, so its leading blocks, the ones other
  prompts share, are the last of it to go (vLLM frees a finished request's blocks in reverse
  order for the same reason).

The engine counts the prompt tokens and cached prompt tokens of the requests it admitted
(:attr:`SimulatedEngine.prefix_cache_hit_rate`, :attr:`SimulatedEngine.prefill_seconds_saved`);
:class:`RequestStats` has each request's ``cached_prompt_tokens``.

What is not modelled: prefill contention (one sequence's prefill does not slow the others'
decode, as with vLLM's chunked prefill when prefill work is small next to decode), so a
cache hit saves that sequence's prefill time and nothing else; the KV cache as one pool
(the prefix cache is a separate store of ``capacity_tokens``: the running sequences' own KV
blocks neither take room from it nor are protected by it, KV-cache exhaustion and preemption
are not modelled); caching of generated tokens' blocks (vLLM caches those too; a refine
prompt quotes the earlier program inside a new user turn, so it could not reuse them anyway);
network time.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice

from symbolkg.actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError
from symbolkg.actors.engines.replay import CompletionCache

CHARS_PER_TOKEN = 4
"""Characters per token of :func:`estimate_tokens`."""

CHAT_TEMPLATE_TOKENS_PER_MESSAGE = 4
"""Tokens the chat template adds around each message (role header and end-of-turn)."""

_DONE_EPS_S = 1e-6  # a sequence this close to its end (simulated s) is finished: float rounding


@dataclass(frozen=True)
class LatencyModel:
    """How long one vLLM deployment (one engine) takes to serve requests.

    The decode step time grows linearly with the number ``b`` of sequences in service::

        step_s(b) = (1 / decode_tokens_per_s) * (1 + batch_slowdown * (b - 1) / (max_batch - 1))

    so one sequence alone decodes at ``decode_tokens_per_s`` and a full batch at
    ``decode_tokens_per_s / (1 + batch_slowdown)`` per sequence, i.e. the engine's total
    decode throughput at full batch is ``max_batch * decode_tokens_per_s / (1 + batch_slowdown)``.
    One request's service time in a batch of ``b`` is :meth:`service_s`.

    Attributes:
        name: what the model describes (reported with every result).
        prefill_tokens_per_s: prompt tokens per second of one sequence's prefill.
        decode_tokens_per_s: generated tokens per second of a sequence running alone.
        batch_slowdown: how much slower a decode step is at ``max_batch`` than at batch 1
            (0 = batching is free; 1.5 = a full-batch step takes 2.5 times as long).
        max_batch: sequences one engine serves at once (vLLM ``max_num_seqs``); more queue.
    """

    name: str
    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    batch_slowdown: float
    max_batch: int

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a LatencyModel needs a name")
        if not self.prefill_tokens_per_s > 0 or not self.decode_tokens_per_s > 0:
            raise ValueError(
                f"prefill_tokens_per_s and decode_tokens_per_s must be > 0, got "
                f"{self.prefill_tokens_per_s} and {self.decode_tokens_per_s}"
            )
        if self.batch_slowdown < 0:
            raise ValueError(f"batch_slowdown must be >= 0, got {self.batch_slowdown}")
        if self.max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {self.max_batch}")

    def step_s(self, batch: int) -> float:
        """Seconds of one decode step with ``batch`` sequences in service.

        Raises:
            ValueError: ``batch`` outside ``1..max_batch``.
        """
        if not 1 <= batch <= self.max_batch:
            raise ValueError(f"batch must be in 1..{self.max_batch}, got {batch}")
        growth = 0.0 if self.max_batch == 1 else self.batch_slowdown * (batch - 1) / (self.max_batch - 1)
        return (1.0 + growth) / self.decode_tokens_per_s

    def prefill_s(self, prompt_tokens: int) -> float:
        """Seconds of the prefill of a ``prompt_tokens``-token prompt."""
        return prompt_tokens / self.prefill_tokens_per_s

    def service_s(self, prompt_tokens: int, completion_tokens: int, batch: int) -> float:
        """Seconds one request spends in service when ``batch`` sequences run the whole time.

        Raises:
            ValueError: ``batch`` outside ``1..max_batch``.
        """
        return self.prefill_s(prompt_tokens) + completion_tokens * self.step_s(batch)

    def decode_throughput(self, batch: int) -> float:
        """Generated tokens per second of the whole engine with ``batch`` sequences decoding."""
        return batch / self.step_s(batch)


LLAMA_3_3_70B_4XH100 = LatencyModel(
    name="llama-3.3-70b-instruct-bf16-4xh100-tp4-vllm (assumed)",
    prefill_tokens_per_s=10_000.0,
    decode_tokens_per_s=35.0,
    batch_slowdown=1.5,
    max_batch=64,
)
"""Llama-3.3-70B-Instruct (BF16) on 4xH100 80GB, tensor parallel 4, served by vLLM: an
*assumption* sized from public numbers, not a measurement of ours.

* decode at batch 1: 35 tokens/s (28.6 ms per step). Each step streams ~35 GB of weights
  per GPU (140 GB / 4) at ~3.35 TB/s, ~10.5 ms, plus all-reduces and kernel overheads;
  public vLLM reports for 70B at TP4 on H100 fall around 30-40 tokens/s per request.
* full batch: 64 sequences (vLLM's ``max_num_seqs`` chosen for ~1k-token prompts and
  ~300-token programs), each step 2.5x as long (``batch_slowdown=1.5``, 71 ms), so ~900
  generated tokens/s per engine. That matches the NVIDIA NIM benchmark quoted in DESIGN.md
  (Llama-3.3-70B FP8 on 2xH100 TP2: ~52 tokens/s alone, saturating at ~920 tokens/s with
  ~93 ms per step near 100 concurrent requests).
* prefill: 10,000 prompt tokens/s (NIM: ~0.4 s to first token for a 5,000-token prompt on
  2xH100 FP8, i.e. ~12,500 tokens/s; a little less assumed for BF16).
"""

PRESETS: dict[str, LatencyModel] = {"llama-3.3-70b-4xh100": LLAMA_3_3_70B_4XH100}
"""Named latency models (CLI choices)."""


@dataclass(frozen=True)
class PrefixCacheConfig:
    """The prefix cache of one simulated engine (vLLM's automatic prefix caching; see the module docstring).

    Attributes:
        capacity_tokens: tokens of prompt blocks the cache holds (``capacity_tokens //
            block_tokens`` blocks, least recently used evicted first); 0 turns caching off.
        block_tokens: tokens per cache block (vLLM's ``block_size``, 16 by default on GPUs):
            only whole blocks are cached and matched, so a prompt's last partial block is
            always prefilled.
    """

    capacity_tokens: int
    block_tokens: int = 16

    def __post_init__(self) -> None:
        if self.capacity_tokens < 0:
            raise ValueError(f"capacity_tokens must be >= 0 (0 turns prefix caching off), got {self.capacity_tokens}")
        if self.block_tokens < 1:
            raise ValueError(f"block_tokens must be >= 1, got {self.block_tokens}")

    @property
    def enabled(self) -> bool:
        """Whether the cache holds at least one block."""
        return self.capacity_blocks > 0

    @property
    def capacity_blocks(self) -> int:
        """Blocks the cache holds."""
        return self.capacity_tokens // self.block_tokens

    @property
    def block_chars(self) -> int:
        """Characters of rendered prompt per block (``block_tokens * CHARS_PER_TOKEN``)."""
        return self.block_tokens * CHARS_PER_TOKEN


NO_PREFIX_CACHE = PrefixCacheConfig(capacity_tokens=0)
"""Prefix caching off (every prompt is prefilled in full)."""

LLAMA_3_3_70B_4XH100_PREFIX_CACHE = PrefixCacheConfig(capacity_tokens=320_000)
"""The prefix cache of :data:`LLAMA_3_3_70B_4XH100`: an *assumption* sized from the KV cache such
an engine would have, not a measurement.

* KV pool: 4 x 80 GB x ``gpu_memory_utilization`` 0.9 = 288 GB, less ~141 GB of BF16 weights and
  ~10 GB of activations and CUDA graphs, leaves ~137 GB;
* one token's KV: 80 layers x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes = 320 KiB, so the
  pool holds ~418k tokens;
* a full batch in service holds ~64 x 1,100 = ~70k of them (prompt ~780 + program ~300 tokens),
  which leaves ~350k tokens for cached blocks; 320,000 (20,000 blocks of 16) is taken.
"""

PREFIX_CACHE_PRESETS: dict[str, PrefixCacheConfig] = {"llama-3.3-70b-4xh100": LLAMA_3_3_70B_4XH100_PREFIX_CACHE}
"""The prefix cache of each of :data:`PRESETS` (same keys)."""


class SimClock:
    """Simulated time: ``time_scale`` real seconds per simulated second, from the clock's creation.

    Args:
        time_scale: real seconds per simulated second, > 0 (0.1: ten times faster than real).

    Raises:
        ValueError: ``time_scale`` is not positive (or not finite).
    """

    def __init__(self, time_scale: float) -> None:
        if not (time_scale > 0 and math.isfinite(time_scale)):
            raise ValueError(f"time_scale must be a finite number > 0, got {time_scale}")
        self.time_scale = time_scale
        self._t0 = time.monotonic()

    def now(self) -> float:
        """Simulated seconds since the clock was made."""
        return (time.monotonic() - self._t0) / self.time_scale

    def to_real(self, sim_s: float) -> float:
        """Real seconds of ``sim_s`` simulated seconds."""
        return sim_s * self.time_scale

    async def sleep(self, sim_s: float) -> None:
        """Wait ``sim_s`` simulated seconds."""
        await asyncio.sleep(max(sim_s, 0.0) * self.time_scale)


Responder = Callable[[ChatRequest], str]
"""Gives the text that answers a request; may raise :class:`EngineError` to fail it."""


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ``ceil(len(text) / 4)`` (see the module docstring).

    >>> estimate_tokens(""), estimate_tokens("abcd"), estimate_tokens("abcde")
    (0, 1, 2)
    """
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate_prompt_tokens(request: ChatRequest) -> int:
    """Estimated prompt tokens of ``request``: every message's content plus the chat template."""
    return sum(estimate_tokens(m.content) + CHAT_TEMPLATE_TOKENS_PER_MESSAGE for m in request.messages)


def render_prompt(request: ChatRequest) -> str:
    """The text a prefix cache blocks: every message's role header, content and end-of-turn marker, in order.

    Each message adds ``CHAT_TEMPLATE_TOKENS_PER_MESSAGE * CHARS_PER_TOKEN`` (16) characters
    around its content, so ``len(render_prompt(r)) / CHARS_PER_TOKEN`` is at most
    :func:`estimate_prompt_tokens` ``(r)``.

    >>> from symbolkg.actors.engines.base import Message
    >>> render_prompt(ChatRequest((Message("system", "Be brief."), Message("user", "Hi"))))
    '<system>    Be brief.<|>\\n<user>      Hi<|>\\n'
    """
    return "".join(f"<{m.role}>".ljust(12) + m.content + "<|>\n" for m in request.messages)


class PrefixCache:
    """An LRU set of prompt blocks keyed by chained hashes: vLLM's automatic prefix caching, without the KV.

    Keys are Python's ``hash`` of (the previous block's key, the block's text), as vLLM's
    default block hashing was: stable within a process, which is all one engine's cache needs.

    Attributes:
        config: its size and block size (must be enabled).
        evictions: blocks evicted so far.
    """

    def __init__(self, config: PrefixCacheConfig) -> None:
        """Build an empty cache.

        Raises:
            ValueError: ``config`` holds no block (use no cache instead).
        """
        if not config.enabled:
            raise ValueError(f"a PrefixCache needs capacity for at least one block, got {config}")
        self.config = config
        self.evictions = 0
        # Oldest first: a plain dict keeps insertion order, and a block used again is taken out and put
        # back at the end. (An OrderedDict costs 108 bytes a block against 68: 35 against 21 MiB for
        # the 16 engines of the scale benchmark once their caches are full.)
        self._blocks: dict[int, None] = {}

    def __len__(self) -> int:
        return len(self._blocks)

    def block_hashes(self, text: str) -> list[int]:
        """The chained keys of ``text``'s full blocks, first block first."""
        size = self.config.block_chars
        keys, key = [], 0
        for start in range(0, len(text) - size + 1, size):
            key = hash((key, text[start : start + size]))
            keys.append(key)
        return keys

    def match(self, keys: Sequence[int]) -> int:
        """How many of ``keys``, from the first, are cached (the length of the leading run)."""
        n = 0
        for key in keys:
            if key not in self._blocks:
                break
            n += 1
        return n

    def insert(self, keys: Sequence[int]) -> None:
        """Cache ``keys`` or mark them used (the first most recently), then evict beyond capacity."""
        blocks = self._blocks
        for key in reversed(keys):
            blocks.pop(key, None)
            blocks[key] = None
        excess = len(blocks) - self.config.capacity_blocks
        if excess > 0:
            for key in list(islice(blocks, excess)):
                del blocks[key]
            self.evictions += excess


def cache_responder(cache: CompletionCache, model: str) -> Responder:
    """A responder that answers from a replay cache, as :class:`~symbolkg.actors.engines.replay.ReplayEngine` would.

    Args:
        cache: the completion cache (stays the caller's).
        model: the model name the cache was filled under (part of every key).

    Returns:
        A responder giving the cached text of a request; a request without a cached
        completion raises :class:`EngineError` naming its key.
    """

    def respond(request: ChatRequest) -> str:
        key = request.cache_key(model)
        record = cache.get(key)
        if record is None:
            raise EngineError(
                f"simulated engine: no cached completion of model {model!r} for problem "
                f"{request.problem_id!r}, request {request.request_id!r} (key {key}) in {str(cache.path)!r}"
            )
        return record.text

    return respond


@dataclass(frozen=True)
class RequestStats:
    """What happened to one request in a simulated engine (times in simulated seconds).

    Attributes:
        engine: the engine's name.
        request_id, problem_id: from the request.
        prompt_tokens, completion_tokens: the estimated token counts it was served with.
        queued_at_s: when it arrived; ``started_at_s``: when it entered service;
            ``finished_at_s``: when its last token was generated.
        batch_at_start: sequences in service just after it entered (itself included).
        late_s: how long after its modelled end the engine noticed it had finished (its
            timer fired late because the event loop was busy): slot time the simulation
            wasted, which real-time overheads cause and a faster time scale magnifies.
        cached_prompt_tokens: prompt tokens served from the prefix cache (its prefill was
            charged for ``prompt_tokens - cached_prompt_tokens``); 0 without a cache.
    """

    engine: str
    request_id: str
    problem_id: str
    prompt_tokens: int
    completion_tokens: int
    queued_at_s: float
    started_at_s: float
    finished_at_s: float
    batch_at_start: int
    late_s: float = 0.0
    cached_prompt_tokens: int = 0

    @property
    def queue_s(self) -> float:
        """Seconds waiting for a batch slot."""
        return self.started_at_s - self.queued_at_s

    @property
    def service_s(self) -> float:
        """Seconds in service (prefill and decode)."""
        return self.finished_at_s - self.started_at_s


class _Sequence:
    """One request inside the engine (mutable progress)."""

    __slots__ = (
        "request",
        "text",
        "finish_reason",
        "prompt_tokens",
        "completion_tokens",
        "future",
        "queued_at",
        "started_at",
        "batch_at_start",
        "prefill_left_s",
        "decode_left",
        "cached_prompt_tokens",
    )

    def __init__(
        self,
        request: ChatRequest,
        text: str,
        finish_reason: str,
        prompt_tokens: int,
        completion_tokens: int,
        future: asyncio.Future[Completion],
        queued_at: float,
    ) -> None:
        self.request = request
        self.text = text
        self.finish_reason = finish_reason
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.future = future
        self.queued_at = queued_at
        self.started_at = 0.0
        self.batch_at_start = 0
        self.prefill_left_s = 0.0  # set when it enters service (the prefix cache decides it then)
        self.cached_prompt_tokens = 0
        self.decode_left = float(completion_tokens)

    def remaining_s(self, step_s: float) -> float:
        return self.prefill_left_s + max(self.decode_left, 0.0) * step_s


class SimulatedEngine:
    """An :class:`~symbolkg.actors.engines.base.LLMEngine` whose answers take as long as a modelled vLLM engine's.

    See the module docstring for the model. Each request of a ``generate`` call is one
    sequence; the call returns when all of them have finished.

    Attributes:
        model: the model name put on every completion.
        supports_structured: what the engine claims (the responder is responsible for
            text that matches a constraint; nothing is enforced).
        name: the engine's name in stats (e.g. ``sim-0``).
        latency: the latency model.
        clock: the simulated clock.
        stats: one :class:`RequestStats` per finished request, in finishing order.
        requests: requests submitted so far.
        max_in_service: the most sequences ever in service at once (never above ``max_batch``).
        busy_seconds: simulated seconds with at least one sequence in service.
        slot_seconds: the integral over simulated time of the sequences in service.
        prefix_cache: the engine's prefix cache; None when caching is off.
        prompt_tokens, cached_prompt_tokens: prompt tokens of the requests that entered
            service so far, and those of them served from the prefix cache.
    """

    def __init__(
        self,
        responder: Responder,
        latency: LatencyModel,
        clock: SimClock,
        *,
        name: str = "sim-0",
        model: str = "simulated",
        supports_structured: bool = False,
        prefix_cache: PrefixCacheConfig = NO_PREFIX_CACHE,
    ) -> None:
        """Build the engine.

        Args:
            responder: gives each request's text (see :data:`Responder`).
            latency: the deployment's latency model.
            clock: the simulated clock (shared by every backend of one run).
            name: the engine's name in stats.
            model: the model name (part of cache keys).
            supports_structured: whether to claim structured decoding.
            prefix_cache: the prefix cache's size (default: off; see the module docstring).

        Raises:
            ValueError: an empty ``model`` or ``name``.
        """
        if not model or not name:
            raise ValueError("model and name must be non-empty")
        self.model = model
        self.supports_structured = supports_structured
        self.name = name
        self.latency = latency
        self.clock = clock
        self.stats: list[RequestStats] = []
        self.requests = 0
        self.max_in_service = 0
        self.busy_seconds = 0.0
        self.slot_seconds = 0.0
        self.prefix_cache = PrefixCache(prefix_cache) if prefix_cache.enabled else None
        self.prompt_tokens = 0
        self.cached_prompt_tokens = 0
        self._responder = responder
        self._queue: deque[_Sequence] = deque()
        self._running: list[_Sequence] = []
        self._last_s = clock.now()
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @property
    def in_service(self) -> int:
        """Sequences being served now."""
        return len(self._running)

    @property
    def queued(self) -> int:
        """Sequences waiting for a batch slot now."""
        return len(self._queue)

    @property
    def prefix_cache_hit_rate(self) -> float:
        """``cached_prompt_tokens / prompt_tokens`` so far (0.0 before any request)."""
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def prefill_seconds_saved(self) -> float:
        """Simulated seconds of prefill the cache spared so far (cached tokens / ``prefill_tokens_per_s``).

        Sequence-seconds: with prefill not contending with decode (module docstring), each
        saved second is one batch slot freed one second earlier.
        """
        return self.latency.prefill_s(self.cached_prompt_tokens)

    def utilization(self, window_s: float) -> float:
        """Mean fraction of the ``max_batch`` slots in use over ``window_s`` simulated seconds.

        Args:
            window_s: the length of a window that holds all of this engine's work so far
                (e.g. the run's simulated duration).

        Raises:
            ValueError: ``window_s`` is not positive.
        """
        if window_s <= 0:
            raise ValueError(f"window_s must be > 0, got {window_s}")
        self._advance(self.clock.now())
        return self.slot_seconds / (self.latency.max_batch * window_s)

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Answer ``requests`` after their simulated queueing and service, in order.

        Raises:
            EngineDeadError: the engine is (or gets) closed.
            EngineError: from the responder (the whole call fails; nothing is queued).
            TypeError: the responder gave something that is not a string.
        """
        if self._closed:
            raise EngineDeadError(f"simulated engine {self.name!r} is closed")
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            if self._running or self._queue:
                raise RuntimeError(f"simulated engine {self.name!r} is busy in another event loop")
            self._loop = loop
        answers = []
        for request in requests:
            text = self._responder(request)
            if not isinstance(text, str):
                raise TypeError(
                    f"the responder answered request {request.request_id!r} with a {type(text).__name__}; expected str"
                )
            answers.append((request, text))
        now = self.clock.now()
        seqs = [self._sequence(request, text, loop, now) for request, text in answers]
        self.requests += len(seqs)
        self._queue.extend(seqs)
        self._update()
        try:
            return list(await asyncio.gather(*(s.future for s in seqs)))
        except asyncio.CancelledError:
            self._abort(seqs)
            raise

    async def close(self) -> None:
        """Fail every queued and running request with EngineDeadError; later calls raise it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        error = EngineDeadError(f"simulated engine {self.name!r} was closed")
        for seq in [*self._running, *self._queue]:
            if not seq.future.done():
                seq.future.set_exception(error)
        self._running.clear()
        self._queue.clear()

    def _sequence(self, request: ChatRequest, text: str, loop: asyncio.AbstractEventLoop, now: float) -> _Sequence:
        max_tokens = request.params.max_tokens
        tokens = max(1, estimate_tokens(text))  # an empty answer still costs its end-of-sequence token
        finish_reason = "stop"
        if tokens > max_tokens:
            text, tokens, finish_reason = text[: max_tokens * CHARS_PER_TOKEN], max_tokens, "length"
        prompt_tokens = estimate_prompt_tokens(request)
        return _Sequence(request, text, finish_reason, prompt_tokens, tokens, loop.create_future(), now)

    def _start_prefill(self, seq: _Sequence) -> None:
        """Look the sequence's prompt up in the prefix cache, charge its prefill for the rest, cache its blocks."""
        cached = 0
        if self.prefix_cache is not None:
            keys = self.prefix_cache.block_hashes(render_prompt(seq.request))
            hit_blocks = self.prefix_cache.match(keys)
            # At least one token is computed (vLLM recomputes the last to get the next token's logits).
            cached = max(0, min(hit_blocks * self.prefix_cache.config.block_tokens, seq.prompt_tokens - 1))
            self.prefix_cache.insert(keys)
        seq.cached_prompt_tokens = cached
        seq.prefill_left_s = self.latency.prefill_s(seq.prompt_tokens - cached)
        self.prompt_tokens += seq.prompt_tokens
        self.cached_prompt_tokens += cached

    def _update(self) -> None:
        """Bring every sequence to now, retire the finished, admit from the queue, set the next timer."""
        now = self.clock.now()
        self._advance(now)
        self._retire(now)
        self._admit(now)
        self._schedule()

    def _advance(self, now: float) -> None:
        """Progress the sequences in service from the last update to ``now`` (the batch was constant)."""
        dt = now - self._last_s
        if dt <= 0:
            return
        self._last_s = now
        batch = len(self._running)
        if not batch:
            return
        self.busy_seconds += dt
        self.slot_seconds += batch * dt
        step_s = self.latency.step_s(batch)
        for seq in self._running:
            prefill = min(dt, seq.prefill_left_s)
            seq.prefill_left_s -= prefill
            seq.decode_left -= (dt - prefill) / step_s

    def _retire(self, now: float) -> None:
        if not self._running:
            return
        step_s = self.latency.step_s(len(self._running))
        still: list[_Sequence] = []
        for seq in self._running:
            if seq.remaining_s(step_s) > _DONE_EPS_S:
                still.append(seq)
                continue
            r = seq.request
            late_s = max(0.0, -seq.decode_left) * step_s  # decoded "past the end" during the last interval
            self.stats.append(
                RequestStats(
                    self.name,
                    r.request_id,
                    r.problem_id,
                    seq.prompt_tokens,
                    seq.completion_tokens,
                    seq.queued_at,
                    seq.started_at,
                    now,
                    seq.batch_at_start,
                    late_s,
                    seq.cached_prompt_tokens,
                )
            )
            if not seq.future.done():
                seq.future.set_result(
                    Completion(
                        text=seq.text,
                        prompt_tokens=seq.prompt_tokens,
                        completion_tokens=seq.completion_tokens,
                        latency_s=now - seq.queued_at,
                        finish_reason=seq.finish_reason,
                        model=self.model,
                        cached=False,
                        structured=self.supports_structured and r.structured is not None,
                        cached_prompt_tokens=seq.cached_prompt_tokens,
                    )
                )
        self._running = still

    def _admit(self, now: float) -> None:
        while self._queue and len(self._running) < self.latency.max_batch:
            seq = self._queue.popleft()
            seq.started_at = now
            self._start_prefill(seq)
            self._running.append(seq)
            seq.batch_at_start = len(self._running)
        self.max_in_service = max(self.max_in_service, len(self._running))

    def _schedule(self) -> None:
        """Wake up when the first sequence in service will have finished at the current batch size."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._running or self._loop is None:
            return
        step_s = self.latency.step_s(len(self._running))
        next_s = min(seq.remaining_s(step_s) for seq in self._running)
        self._timer = self._loop.call_later(self.clock.to_real(next_s), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if not self._closed:
            self._update()

    def _abort(self, seqs: list[_Sequence]) -> None:
        """Drop a cancelled caller's sequences, as a server aborts a disconnected request."""
        self._advance(self.clock.now())
        gone = {id(s) for s in seqs}
        self._queue = deque(s for s in self._queue if id(s) not in gone)
        self._running = [s for s in self._running if id(s) not in gone]
        if not self._closed:
            self._update()
