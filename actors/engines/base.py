"""The LLM engine interface: async, batched, per-request sampling and structured output.

Stage code (``jobs/``) receives an engine object and awaits ``engine.generate(requests)``.
It never imports ``vllm`` or an HTTP client; a backend does, inside its own module.

Backends (one module each, in this package):

* ``vllm``     — :mod:`symbolkg.actors.engines.vllm_engine`: vLLM in-process (GPU build or CPU build).
* ``openai``   — :mod:`symbolkg.actors.engines.openai_engine`: any OpenAI-compatible server.
* ``scripted`` — :mod:`symbolkg.actors.engines.scripted`: deterministic fake for unit tests.
* ``recorded`` — :mod:`symbolkg.actors.engines.recorded`: answers formulation requests with a
  recorded program for the request's problem id (Logic-LM's program files).
* ``replay``   — :mod:`symbolkg.actors.engines.replay`: a content-addressed cache of completions;
  also the write-through wrapper any other backend can be put behind.

Concurrency contract: ``generate`` may be called concurrently from many coroutines, each
with a few requests; a backend batches across calls (vLLM's continuous batching, an HTTP
concurrency limit). Callers should therefore keep many problems in flight instead of
sending one big batch and waiting for it.

Errors: a request the engine could not answer raises :class:`EngineError` (recoverable:
the caller records it for that problem and goes on); an engine that cannot serve any more
requests raises :class:`EngineDeadError` (the job stops, results so far are kept).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol


@dataclass(frozen=True)
class SamplingParams:
    """Per-request sampling parameters.

    Attributes:
        max_tokens: most tokens to generate.
        temperature: 0 means greedy (reproducible).
        top_p: nucleus sampling mass.
        stop: strings that end generation (not included in the text).
        seed: sampling seed (only meaningful with temperature > 0).
    """

    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not 0.0 <= self.temperature <= 5.0:
            raise ValueError(f"temperature must be in [0, 5], got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        object.__setattr__(self, "stop", tuple(self.stop))


@dataclass(frozen=True)
class StructuredOutput:
    """A constraint on the shape of the output, for backends that support it.

    Exactly one of the fields is set. Backends without structured decoding ignore it
    (``Completion.structured`` then says False) and callers parse plain text.

    Attributes:
        json_schema: a JSON schema the output must match.
        regex: a regular expression the output must match.
        grammar: an EBNF/Lark grammar (vLLM ``grammar``).
        choice: the output must be one of these strings.
    """

    json_schema: dict[str, Any] | None = None
    regex: str | None = None
    grammar: str | None = None
    choice: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        set_fields = [f for f in ("json_schema", "regex", "grammar", "choice") if getattr(self, f) is not None]
        if len(set_fields) != 1:
            raise ValueError(
                f"StructuredOutput needs exactly one of json_schema/regex/grammar/choice, got {set_fields}"
            )
        if self.choice is not None:
            object.__setattr__(self, "choice", tuple(self.choice))

    @property
    def kind(self) -> Literal["json_schema", "regex", "grammar", "choice"]:
        for f in ("json_schema", "regex", "grammar", "choice"):
            if getattr(self, f) is not None:
                return f  # type: ignore[return-value]
        raise AssertionError("unreachable")


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion request.

    Attributes:
        messages: the conversation so far.
        params: sampling parameters.
        structured: optional output constraint.
        problem_id: the problem this request serves (accounting; the recorded engine keys on it).
        purpose: what the caller asks for: ``"formulate"``, ``"refine"``, ``"answer"``, ...
            (the recorded engine only answers ``"formulate"``).
        request_id: unique within a run (problem id + purpose + round).
        priority: the engine's order when requests wait for a batch slot: lower first, equal by
            arrival (a method job gives every request of a problem the problem's admission number:
            :class:`Prioritized`). Only a vLLM engine with ``scheduling_policy="priority"`` reads
            it; it changes when a request is decoded, never what is decoded, so it is not part
            of the cache key.
    """

    messages: tuple[Message, ...]
    params: SamplingParams = field(default_factory=SamplingParams)
    structured: StructuredOutput | None = None
    problem_id: str = ""
    purpose: str = "answer"
    request_id: str = ""
    priority: int = 0

    def __post_init__(self) -> None:
        if not self.messages:
            raise ValueError("a ChatRequest needs at least one message")
        object.__setattr__(self, "messages", tuple(self.messages))

    def cache_key(self, model: str) -> str:
        """Content address of (model, messages, params, structured): what the replay cache keys on.

        ``problem_id``/``purpose``/``request_id``/``priority`` are deliberately not part of it: the
        same prompt gives the same completion whoever asks, and whenever.
        """
        payload = {
            "model": model,
            "messages": [asdict(m) for m in self.messages],
            "params": asdict(self.params),
            "structured": asdict(self.structured) if self.structured else None,
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class Completion:
    """What an engine returns for one request.

    Attributes:
        text: the generated text.
        prompt_tokens: tokens in the prompt (0 when the backend cannot tell).
        completion_tokens: generated tokens (0 for cache hits: they cost nothing).
        latency_s: seconds from submission to completion as seen by the backend.
        finish_reason: ``"stop"``, ``"length"``, ...
        model: the model that produced it.
        cached: served from the replay cache.
        structured: the output was constrained by ``ChatRequest.structured``.
        cached_prompt_tokens: prompt tokens the engine served from its prefix cache (vLLM's
            automatic prefix caching: the KV blocks of a prompt beginning it has seen), as the
            engine counted them; None when the backend cannot tell (and for replay-cache hits,
            which reach no engine).
        stored_tokens: for a cache hit, the (prompt, completion) tokens the model spent when it
            answered this request first (the cache's record of that call); None for a fresh
            completion, whose own counts are what it cost.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str = "stop"
    model: str = ""
    cached: bool = False
    structured: bool = False
    cached_prompt_tokens: int | None = None
    stored_tokens: tuple[int, int] | None = None


class EngineError(RuntimeError):
    """A request could not be answered (bad request, server error after retries, ...)."""


class EngineDeadError(EngineError):
    """The engine cannot serve any further request (process died, server gone for good)."""


class LLMEngine(Protocol):
    """An LLM backend. Implementations: see the module docstring.

    Attributes:
        model: the model's name (part of every cache key).
        supports_structured: whether ``ChatRequest.structured`` is enforced.
    """

    model: str
    supports_structured: bool

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Complete ``requests``; the result is in the same order. Raises EngineError."""
        ...

    async def close(self) -> None:
        """Release the engine (GPU memory, HTTP sessions). Idempotent."""
        ...


class CodeEngine:
    """Base of the engines that answer with code, not a model (``gold``, ``pararule-template``).

    A subclass sets ``model`` and implements :meth:`answer`; each request is answered in turn,
    at no token cost (0 prompt and completion tokens), and there is nothing to release.
    """

    model: str = "code"
    supports_structured = False

    def answer(self, request: ChatRequest) -> str:
        """The completion text for ``request``. Raises EngineError for a request it cannot answer."""
        raise NotImplementedError

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = []
        for request in requests:
            t0 = time.perf_counter()
            text = self.answer(request)
            out.append(Completion(text, latency_s=time.perf_counter() - t0, model=self.model))
        return out

    async def close(self) -> None:
        return None


class Prioritized:
    """``engine`` with every request given one ``priority`` (:attr:`ChatRequest.priority`).

    A method job wraps its engine in one per problem, numbered in the order the problems are
    admitted. With a vLLM engine scheduling by priority, when more requests are in flight than it
    batches, a started problem's next round (a repair waiting on its program) goes before a later
    problem's first request, so problems finish in about the order they started.
    ``model`` and ``supports_structured`` are the wrapped engine's own.
    """

    def __init__(self, engine: LLMEngine, priority: int) -> None:
        self.engine = engine
        self.priority = priority
        self.model = engine.model
        self.supports_structured = engine.supports_structured

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return await self.engine.generate([replace(r, priority=self.priority) for r in requests])

    async def close(self) -> None:
        """Nothing: the engine is shared by every problem; the job closes it."""
