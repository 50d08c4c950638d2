"""A deterministic fake LLM engine for unit tests (the ``scripted`` backend).

The engine answers from a *script* written by the test:

* a callable ``(ChatRequest) -> str | Completion | BaseException``, or
* a mapping from a request id or problem id to the responses for that key, consumed in
  order, one per request (``{"p1": ["first program", "repaired program"]}``).

A returned exception is *raised* from :meth:`ScriptedEngine.generate`, so a test can make
the engine fail the way a real one does (:class:`EngineError` for one request,
:class:`EngineDeadError` for the whole engine).

Token counts are whitespace-separated words (``len(text.split())``): the prompt count is the
sum over every message's content, the completion count is that of the returned text. They are
not the tokens of any tokenizer; they only make accounting tests see non-zero, predictable
numbers.

Example:
    >>> import asyncio
    >>> from symbolkg.actors.engines.base import ChatRequest, Message
    >>> engine = ScriptedEngine({"p1": ["Facts: a"]})
    >>> request = ChatRequest((Message("user", "write a program"),), problem_id="p1")
    >>> [c.text for c in asyncio.run(engine.generate([request]))]
    ['Facts: a']
    >>> asyncio.run(engine.generate([request]))
    Traceback (most recent call last):
    ...
    symbolkg.actors.engines.base.EngineError: scripted engine: the script for problem 'p1' has no response left (1 used)
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from symbolkg.actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError

ScriptResponse = str | Completion | BaseException
"""One scripted answer: the text, a full :class:`Completion`, or an exception to raise."""

Script = Callable[[ChatRequest], ScriptResponse] | Mapping[str, Sequence[ScriptResponse]]
"""A callable from request to response, or per-key response lists (see the module docstring)."""


def word_count(text: str) -> int:
    """The fake token count: whitespace-separated words of ``text``."""
    return len(text.split())


def prompt_word_count(request: ChatRequest) -> int:
    """The fake prompt token count: words over the contents of every message of ``request``."""
    return sum(word_count(m.content) for m in request.messages)


class ScriptedEngine:
    """An :class:`~symbolkg.actors.engines.base.LLMEngine` that answers from a test's script.

    With a mapping script, a request's key is its ``request_id`` when the mapping has that
    key, else its ``problem_id``. Each request consumes the next response of its key;
    a request with no key in the mapping, or whose key has no response left, raises
    :class:`EngineError` naming it.

    A batch is resolved request by request in order, every request consuming its response,
    and only then is the first scripted exception (if any) raised. So a batch fails as a
    whole, the way a real engine call does, and the script position does not depend on
    where in the batch the failure sits.

    Attributes:
        model: the model name put on every completion (and into cache keys).
        supports_structured: what the engine claims; the script is responsible for
            producing text that matches ``ChatRequest.structured`` (nothing is enforced).
            ``Completion.structured`` is True when this is set and the request had a constraint.
        latency_s: simulated seconds per ``generate`` call (one ``asyncio.sleep``; concurrent
            calls overlap, as they would on a batching server).
        requests: every request seen, in arrival order (also those of failed batches).
        batches: the requests of each ``generate`` call, one tuple per call.
    """

    def __init__(
        self,
        script: Script,
        *,
        model: str = "scripted",
        supports_structured: bool = False,
        latency_s: float = 0.0,
    ) -> None:
        """Build the engine.

        Args:
            script: see the class docstring.
            model: the model name.
            supports_structured: whether to claim structured decoding.
            latency_s: simulated seconds per ``generate`` call, >= 0.

        Raises:
            ValueError: negative ``latency_s``, an empty ``model``, or a mapping value that is
                a bare string (it would be consumed character by character).
            TypeError: ``script`` is neither callable nor a mapping.
        """
        if latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s}")
        if not model:
            raise ValueError("model must be a non-empty name (it is part of every cache key)")
        self.model = model
        self.supports_structured = supports_structured
        self.latency_s = latency_s
        self.requests: list[ChatRequest] = []
        self.batches: list[tuple[ChatRequest, ...]] = []
        self._fn: Callable[[ChatRequest], ScriptResponse] | None = None
        self._queues: dict[str, list[ScriptResponse]] = {}
        self._used: dict[str, int] = {}
        if callable(script):
            self._fn = script
        elif isinstance(script, Mapping):
            for key, responses in script.items():
                if isinstance(responses, (str, bytes)) or not isinstance(responses, Sequence):
                    raise ValueError(
                        f"script[{key!r}] must be a list of responses, got {type(responses).__name__}; "
                        f"write [{responses!r}] for a single response"
                    )
                self._queues[key] = list(responses)
                self._used[key] = 0
        else:
            raise TypeError(f"script must be a callable or a mapping, got {type(script).__name__}")
        # A lock, not just the event loop, so that engines shared by threads (several
        # event loops, or a sync test calling asyncio.run from workers) stay consistent.
        self._lock = threading.RLock()  # re-entrant: a script function may call remaining()
        self._closed = False

    @property
    def calls(self) -> int:
        """How many times ``generate`` was called (one per batch)."""
        return len(self.batches)

    def remaining(self, key: str) -> int:
        """Responses left for ``key`` in a mapping script (0 for a callable script or unknown key)."""
        with self._lock:
            return len(self._queues.get(key, ()))

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Answer ``requests`` from the script, in order.

        Raises:
            EngineDeadError: the engine was closed, or the script says so.
            EngineError: no scripted response for a request, or the script says so.
            TypeError: the script produced something that is not a response.
        """
        if self._closed:
            raise EngineDeadError(f"scripted engine {self.model!r} is closed")
        requests = tuple(requests)
        started = time.perf_counter()
        with self._lock:
            self.batches.append(requests)
            self.requests.extend(requests)
            responses = [self._next_response(r) for r in requests]
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        for response in responses:
            if isinstance(response, BaseException):
                raise response
        latency_s = time.perf_counter() - started
        # No exception is left in responses here.
        return [self._to_completion(r, resp, latency_s) for r, resp in zip(requests, responses, strict=True)]

    async def close(self) -> None:
        """Mark the engine closed; later ``generate`` calls raise EngineDeadError. Idempotent."""
        self._closed = True

    def _next_response(self, request: ChatRequest) -> ScriptResponse:
        """The script's response to ``request`` (called with the lock held)."""
        if self._fn is not None:
            return self._fn(request)
        if request.request_id and request.request_id in self._queues:
            key, what = request.request_id, "request"
        elif request.problem_id in self._queues:
            key, what = request.problem_id, "problem"
        else:
            return EngineError(
                f"scripted engine: no script for problem {request.problem_id!r} "
                f"(request {request.request_id!r}, purpose {request.purpose!r})"
            )
        queue = self._queues[key]
        if not queue:
            return EngineError(
                f"scripted engine: the script for {what} {key!r} has no response left ({self._used[key]} used)"
            )
        self._used[key] += 1
        return queue.pop(0)

    def _to_completion(self, request: ChatRequest, response: ScriptResponse, latency_s: float) -> Completion:
        structured = self.supports_structured and request.structured is not None
        if isinstance(response, Completion):
            # A scripted Completion is taken as written; only a missing model name is filled in.
            return response if response.model else dataclasses.replace(response, model=self.model)
        if isinstance(response, str):
            return Completion(
                text=response,
                prompt_tokens=prompt_word_count(request),
                completion_tokens=word_count(response),
                latency_s=latency_s,
                finish_reason="stop",
                model=self.model,
                cached=False,
                structured=structured,
            )
        raise TypeError(
            f"scripted engine: the script answered request {request.request_id or request.problem_id!r} with a "
            f"{type(response).__name__}; expected str, Completion or an exception"
        )
