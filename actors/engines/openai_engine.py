"""The ``openai`` backend: any OpenAI-compatible ``/chat/completions`` server.

Works against ``vllm serve`` (with vLLM's structured-output extension) and hosted APIs
(``response_format`` JSON schema only). The HTTP client is ``httpx`` (async); it is imported
here and nowhere in stage code.

Request path, per :class:`~symbolkg.actors.engines.base.ChatRequest`::

    semaphore (max_concurrency) -> rate limiter (requests_per_second) -> POST /chat/completions
        -> 2xx + well-formed body ........ Completion
        -> connection error / timeout / 408 / 429 / 5xx / malformed 2xx body
                                     ...... release the slot, back off, retry (max_retries)
        -> 401 / 403 / 404 ............... EngineDeadError (wrong key, URL or model: no request can succeed)
        -> any other 4xx ................. EngineError with the server's message, no retry

The slot is released during the back-off sleep, so a failing request does not hold one of
the ``max_concurrency`` slots while it waits. Every attempt (retries included) takes a
rate-limiter token: the limit is on what the server sees.

Example (needs a server, hence not a doctest)::

    engine = OpenAIEngine(OpenAIConfig(base_url="http://127.0.0.1:8000/v1", model="smollm2-135m"))
    [c] = await engine.generate([ChatRequest(messages=(Message("user", "Hi"),))])
    await engine.close()
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import httpx

from symbolkg.actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError

log = logging.getLogger(__name__)

StructuredMode = Literal["vllm", "vllm_legacy", "response_format", "none"]
_STRUCTURED_MODES: tuple[str, ...] = ("vllm", "vllm_legacy", "response_format", "none")

# Statuses worth another attempt: the server is overloaded, restarting or briefly broken.
_RETRY_STATUSES = frozenset({408, 429})
# Statuses that mean the configuration is wrong (key, URL, model name): every request would fail.
_DEAD_STATUSES = frozenset({401, 403, 404})
# Body keys the engine owns; ``extra_body`` may not override them.
_RESERVED_BODY_KEYS = frozenset({"model", "messages"})
# How much of an unparseable body goes into an error message.
_BODY_EXCERPT_CHARS = 300


@dataclass(frozen=True)
class OpenAIConfig:
    """Where the server is and how hard to try.

    Attributes:
        base_url: the API root, up to and including ``/v1`` (``http://127.0.0.1:8000/v1``);
            the engine appends ``/chat/completions``.
        model: the model name the server serves (``--served-model-name`` for vLLM). It is
            also ``engine.model``, part of every replay-cache key.
        api_key_env: name of the environment variable holding the API key, read once when the
            engine is built; ``None`` or an unset variable sends no ``Authorization`` header
            (a local ``vllm serve`` needs none). The key itself is never stored in the config
            and never logged.
        timeout_s: wall-clock limit of one attempt (connect + send + the whole generation).
            Size it for ``max_tokens`` at the server's slowest decode speed; an attempt that
            runs over is abandoned and retried.
        max_retries: further attempts after the first one (0 = try once).
        backoff_initial_s: back-off before the first retry; doubles per retry.
        backoff_max_s: ceiling of one back-off, and of a server's ``Retry-After`` (a server
            asking for longer is retried after ``backoff_max_s``), so the worst-case time of
            one request is ``(1 + max_retries) * timeout_s + max_retries * backoff_max_s``.
        max_concurrency: most requests in flight to the server at once (an HTTP connection
            each). For vLLM, about its ``--max-num-seqs``; more only queues on the server.
        requests_per_second: most attempts started per second, evenly spaced (a token bucket
            of depth 1); ``None`` = unlimited. For hosted APIs with a rate limit.
        structured: how :class:`~symbolkg.actors.engines.base.StructuredOutput` is sent:
            ``"vllm"`` — vLLM's ``structured_outputs`` body field (json/regex/grammar/choice;
            vLLM >= 0.10, including 0.32); ``"vllm_legacy"`` — the older ``guided_json``/
            ``guided_regex``/``guided_grammar``/``guided_choice`` fields (newer vLLM ignores
            them with a warning in its log!); ``"response_format"`` — OpenAI's
            ``response_format: json_schema`` (hosted APIs): only ``json_schema`` constraints
            are sent, the others are dropped and the completion says ``structured=False``;
            ``"none"`` — never send a constraint.
        extra_body: extra fields merged into every request body (vLLM: ``{"chat_template_kwargs":
            {"enable_thinking": False}}``, ``{"top_k": 20}``, ...). May not set ``model`` or ``messages``.
        trust_env: let httpx read ``HTTP(S)_PROXY``/``NO_PROXY``/``SSL_CERT_FILE`` from the
            environment. Turn off for a loopback server on a host with a proxy configured.
    """

    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout_s: float = 300.0
    max_retries: int = 4
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 30.0
    max_concurrency: int = 32
    requests_per_second: float | None = None
    structured: StructuredMode = "vllm"
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    trust_env: bool = True

    def __post_init__(self) -> None:
        url = self.base_url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        if url.endswith("/chat/completions"):
            raise ValueError(
                f"base_url is the API root, not the endpoint: use {url[: -len('/chat/completions')]!r} "
                f"instead of {self.base_url!r}"
            )
        object.__setattr__(self, "base_url", url)
        if not self.model.strip():
            raise ValueError("model must be a non-empty model name (what the server serves)")
        if self.api_key_env is not None and not self.api_key_env.strip():
            raise ValueError("api_key_env must be an environment variable name or None, got ''")
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(f"timeout_s must be a positive number of seconds, got {self.timeout_s}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if not (math.isfinite(self.backoff_initial_s) and self.backoff_initial_s >= 0):
            raise ValueError(f"backoff_initial_s must be >= 0, got {self.backoff_initial_s}")
        if not (math.isfinite(self.backoff_max_s) and self.backoff_max_s >= self.backoff_initial_s):
            raise ValueError(
                f"backoff_max_s must be >= backoff_initial_s ({self.backoff_initial_s}), got {self.backoff_max_s}"
            )
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.requests_per_second is not None and not (
            math.isfinite(self.requests_per_second) and self.requests_per_second > 0
        ):
            raise ValueError(f"requests_per_second must be > 0 or None (unlimited), got {self.requests_per_second}")
        if self.structured not in _STRUCTURED_MODES:
            raise ValueError(f"structured must be one of {_STRUCTURED_MODES}, got {self.structured!r}")
        reserved = _RESERVED_BODY_KEYS.intersection(self.extra_body)
        if reserved:
            raise ValueError(f"extra_body may not set {sorted(reserved)}: the engine owns them")
        object.__setattr__(self, "extra_body", dict(self.extra_body))

    @property
    def chat_url(self) -> str:
        return f"{self.base_url}/chat/completions"


@dataclass
class OpenAIEngineStats:
    """Counters since the engine was built (for logs and tests; not thread-safe, one event loop).

    Attributes:
        requests: requests submitted.
        attempts: HTTP attempts made (first tries and retries).
        retries: attempts after a retryable failure.
        completed: requests answered.
        failed: requests that raised (EngineError or EngineDeadError).
    """

    requests: int = 0
    attempts: int = 0
    retries: int = 0
    completed: int = 0
    failed: int = 0


class _RateLimiter:
    """Spaces attempt starts at least ``1 / rate`` seconds apart (a token bucket of depth 1).

    No lock needed: ``acquire`` does its bookkeeping before its only ``await``, and one event
    loop runs one coroutine at a time.
    """

    def __init__(self, requests_per_second: float) -> None:
        self._interval_s = 1.0 / requests_per_second
        self._next_start = 0.0

    async def acquire(self) -> None:
        now = time.monotonic()
        start = max(now, self._next_start)
        self._next_start = start + self._interval_s
        if start > now:
            await asyncio.sleep(start - now)


class _Retryable(Exception):
    """One attempt failed in a way that another attempt may fix (internal)."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class OpenAIEngine:
    """:class:`~symbolkg.actors.engines.base.LLMEngine` over an OpenAI-compatible HTTP server.

    The HTTP client, semaphore and rate limiter are created on the first ``generate`` call,
    in the event loop that makes it (a Ray async actor builds the engine in ``__init__`` and
    calls it from its own loop); calling it later from another event loop is a RuntimeError.

    Attributes:
        model: ``config.model``.
        supports_structured: True for the ``"vllm"``/``"vllm_legacy"`` modes (every kind of
            constraint is enforced); False for ``"response_format"`` (only JSON schemas are)
            and ``"none"``. ``Completion.structured`` says per completion whether a
            constraint was sent.
        stats: :class:`OpenAIEngineStats`.
    """

    def __init__(self, config: OpenAIConfig) -> None:
        self.config = config
        self.model = config.model
        self.supports_structured = config.structured in ("vllm", "vllm_legacy")
        self.stats = OpenAIEngineStats()
        self._headers = {"Content-Type": "application/json"}
        api_key = os.environ.get(config.api_key_env) if config.api_key_env else None
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._limiter: _RateLimiter | None = None
        self._closed = False
        self._rng = random.Random()

    def __repr__(self) -> str:  # no headers: they hold the API key
        cfg = self.config
        return f"OpenAIEngine(url={cfg.chat_url!r}, model={self.model!r}, structured={cfg.structured!r})"

    # ----------------------------------------------------------------------------- public API

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Send ``requests`` concurrently (at most ``max_concurrency`` in flight); results in order.

        All requests run to the end even when one fails; then, if any failed, the first
        failure in request order is raised — an :class:`EngineDeadError` in preference to an
        :class:`EngineError` — and the other completions of the call are discarded. Callers
        that want per-request errors call ``generate`` with one request at a time, from many
        coroutines at once (the semaphore batches them).

        Raises:
            EngineError: a request failed (a non-retryable 4xx, or retryable failures —
                connection errors, timeouts, 408/429/5xx, malformed bodies — on every attempt).
                The message names the URL, the last failure and the attempts made.
            EngineDeadError: the server rejected the key, URL or model (401/403/404), or the
                engine was closed.
        """
        if self._closed:
            raise EngineDeadError(f"{self!r} is closed")
        if not requests:
            return []
        self._ensure_started()
        self.stats.requests += len(requests)
        submitted = time.monotonic()
        results = await asyncio.gather(*(self._complete(r, submitted) for r in requests), return_exceptions=True)
        completions: list[Completion] = []
        errors: list[BaseException] = []
        for result in results:
            if isinstance(result, BaseException):
                errors.append(result)
            else:
                completions.append(result)
        self.stats.completed += len(completions)
        self.stats.failed += len(errors)
        if not errors:
            return completions
        for error in errors:  # not EngineError (a bug, a cancellation): re-raise as is
            if not isinstance(error, EngineError):
                raise error
        first = next((e for e in errors if isinstance(e, EngineDeadError)), errors[0])
        if len(requests) > 1:
            raise type(first)(f"{first} ({len(errors)} of {len(requests)} requests in this batch failed)") from first
        raise first

    async def close(self) -> None:
        """Close the HTTP client. Idempotent; ``generate`` afterwards raises EngineDeadError."""
        self._closed = True
        client, self._client = self._client, None
        if client is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is self._loop:
            await client.aclose()
        # else: the client's connections belong to another (likely finished) loop; closing them
        # from here would fail. Dropping the client lets the sockets be collected.

    # -------------------------------------------------------------------------------- internals

    def _ensure_started(self) -> None:
        loop = asyncio.get_running_loop()
        if self._client is not None:
            if loop is not self._loop:
                raise RuntimeError(
                    "OpenAIEngine is bound to the event loop of its first generate() call; "
                    "build one engine per event loop"
                )
            return
        cfg = self.config
        self._loop = loop
        self._client = httpx.AsyncClient(
            headers=self._headers,
            # The total per-attempt limit is enforced with asyncio.timeout; httpx's own limits
            # (per phase) are only a backstop.
            timeout=httpx.Timeout(cfg.timeout_s),
            limits=httpx.Limits(max_connections=cfg.max_concurrency, max_keepalive_connections=cfg.max_concurrency),
            trust_env=cfg.trust_env,
        )
        self._semaphore = asyncio.Semaphore(cfg.max_concurrency)
        self._limiter = _RateLimiter(cfg.requests_per_second) if cfg.requests_per_second else None

    def _body(self, request: ChatRequest) -> tuple[dict[str, Any], bool]:
        """The JSON body for ``request`` and whether it carries an output constraint."""
        p = request.params
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "top_p": p.top_p,
        }
        if p.stop:
            body["stop"] = list(p.stop)
        if p.seed is not None:
            body["seed"] = p.seed
        structured = False
        so = request.structured
        mode = self.config.structured
        if so is not None and mode != "none":
            if mode == "vllm":
                key = {"json_schema": "json"}.get(so.kind, so.kind)
                value = list(so.choice) if so.choice is not None else getattr(so, so.kind)
                body["structured_outputs"] = {key: value}
                structured = True
            elif mode == "vllm_legacy":
                value = list(so.choice) if so.choice is not None else getattr(so, so.kind)
                key = {"json_schema": "guided_json"}.get(so.kind, f"guided_{so.kind}")
                body[key] = value
                structured = True
            elif so.json_schema is not None:  # response_format: JSON schemas only
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": so.json_schema, "strict": True},
                }
                structured = True
        body.update(self.config.extra_body)
        return body, structured

    async def _complete(self, request: ChatRequest, submitted: float) -> Completion:
        """One request with retries. ``latency_s`` counts from ``submitted`` (queueing and retries included)."""
        cfg = self.config
        url = cfg.chat_url
        body, structured = self._body(request)
        payload = json.dumps(body, ensure_ascii=False).encode()
        attempts = 0
        last = ""
        while True:
            if self._closed:
                raise EngineDeadError(f"{self!r} was closed while request {request.request_id!r} was pending")
            attempts += 1
            self.stats.attempts += 1
            try:
                data = await self._attempt(url, payload)
                return self._parse(url, data, submitted, structured)
            except _Retryable as exc:
                last = str(exc)
                retry_after_s = exc.retry_after_s
            if attempts > cfg.max_retries:
                raise EngineError(
                    f"{last} [gave up on {url} after {attempts} attempt(s) in "
                    f"{time.monotonic() - submitted:.1f}s; request {request.request_id!r}]"
                )
            delay_s = self._backoff_s(attempts, retry_after_s)
            log.debug("retrying %s in %.2fs after attempt %d: %s", url, delay_s, attempts, last)
            self.stats.retries += 1
            await asyncio.sleep(delay_s)

    def _backoff_s(self, attempts: int, retry_after_s: float | None) -> float:
        """Seconds to wait after ``attempts`` failed attempts: exponential with jitter, or Retry-After."""
        cfg = self.config
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), cfg.backoff_max_s)
        base_s = min(cfg.backoff_max_s, cfg.backoff_initial_s * 2 ** (attempts - 1))
        return base_s * (0.5 + 0.5 * self._rng.random())  # "equal jitter": spreads a thundering herd

    async def _attempt(self, url: str, payload: bytes) -> Any:
        """One POST. Returns the decoded JSON body of a 2xx; raises _Retryable or Engine(Dead)Error."""
        assert self._semaphore is not None and self._client is not None  # set by _ensure_started
        client = self._client
        async with self._semaphore:
            if self._limiter is not None:
                await self._limiter.acquire()
            try:
                async with asyncio.timeout(self.config.timeout_s):
                    response = await client.post(url, content=payload)
            except (TimeoutError, httpx.TimeoutException) as exc:
                raise _Retryable(f"no answer from {url} within timeout_s={self.config.timeout_s}") from exc
            except httpx.DecodingError as exc:  # a body its Content-Encoding cannot decode
                raise _Retryable(f"malformed response from {url}: {exc}") from exc
            except httpx.RequestError as exc:  # connection refused/reset, protocol errors
                raise _Retryable(f"cannot reach {url}: {type(exc).__name__}: {exc}") from exc
            except RuntimeError as exc:  # httpx: "the client has been closed"
                if self._closed:
                    raise EngineDeadError(f"{self!r} was closed during a request") from exc
                raise
        status = response.status_code
        if 200 <= status < 300:
            try:
                return response.json()
            except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
                raise _Retryable(
                    f"malformed response from {url}: body is not JSON: {_excerpt(response.text)!r}"
                ) from exc
        message = _server_message(response)
        if status in _RETRY_STATUSES or status >= 500:
            raise _Retryable(f"{url} answered HTTP {status}: {message}", retry_after_s=_retry_after_s(response))
        if status in _DEAD_STATUSES:
            raise EngineDeadError(
                f"{url} answered HTTP {status}: {message} (check base_url, model={self.model!r} and the API key)"
            )
        raise EngineError(f"{url} answered HTTP {status}: {message}")

    def _parse(self, url: str, data: Any, submitted: float, structured: bool) -> Completion:
        """A Completion from a /chat/completions body; _Retryable("malformed response ...") if it is not one."""

        def malformed(why: str) -> _Retryable:
            return _Retryable(f"malformed response from {url}: {why}")

        if not isinstance(data, dict):
            raise malformed(f"expected a JSON object, got {type(data).__name__}")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise malformed(f"no 'choices' list in {_excerpt(json.dumps(data))!r}")
        choice = choices[0]
        if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
            raise malformed("choices[0] has no 'message' object")
        text = choice["message"].get("content")
        if text is None:
            text = ""  # e.g. a reasoning model cut off by max_tokens before it answered
        if not isinstance(text, str):
            raise malformed(f"choices[0].message.content is {type(text).__name__}, not a string")
        finish_reason = choice.get("finish_reason")
        if finish_reason is not None and not isinstance(finish_reason, str):
            raise malformed(f"choices[0].finish_reason is {type(finish_reason).__name__}, not a string")
        usage = data.get("usage")
        if usage is None:
            usage = {}
        if not isinstance(usage, dict):
            raise malformed(f"'usage' is {type(usage).__name__}, not an object")
        tokens: dict[str, int] = {}
        for key in ("prompt_tokens", "completion_tokens"):
            value = usage.get(key)
            if value is None:
                value = 0
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise malformed(f"usage.{key} is {value!r}, not a token count")
            tokens[key] = value
        model = data.get("model")
        return Completion(
            text=text,
            prompt_tokens=tokens["prompt_tokens"],
            completion_tokens=tokens["completion_tokens"],
            latency_s=time.monotonic() - submitted,
            finish_reason=finish_reason or "unknown",
            model=model if isinstance(model, str) and model else self.model,
            structured=structured,
            cached_prompt_tokens=_cached_tokens(usage),
        )


def _cached_tokens(usage: dict[str, Any]) -> int | None:
    """``usage.prompt_tokens_details.cached_tokens``: the prompt tokens the server's prefix cache served.

    OpenAI's API and vLLM's server (started with ``--enable-prompt-tokens-details``) report it;
    None when the server does not (the hit rate is then unknown, not zero).
    """
    details = usage.get("prompt_tokens_details")
    if not isinstance(details, dict):
        return None
    value = details.get("cached_tokens")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _excerpt(text: str) -> str:
    return text if len(text) <= _BODY_EXCERPT_CHARS else text[:_BODY_EXCERPT_CHARS] + "..."


def _server_message(response: httpx.Response) -> str:
    """The error message of an error response: OpenAI's ``{"error": {"message"}}``, else the body."""
    try:
        data = response.json()
    except ValueError:
        return _excerpt(response.text.strip()) or response.reason_phrase
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
        for key in ("message", "detail", "error"):
            if isinstance(data.get(key), str):
                return data[key]
    return _excerpt(json.dumps(data))


def _retry_after_s(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (delta-seconds or an HTTP date), None if absent or unreadable."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
