"""The ``openai`` backend against real HTTP servers.

Fast tests: small stdlib HTTP servers on 127.0.0.1 (ephemeral ports, background threads) that
answer, return garbage, stall, fail with 503/429/400/401/404, or are not there at all; they
count what arrives so retries, concurrency and rate limits are checked from the server side.

Slow tests (``-m slow``): a real ``vllm serve`` of the embedded SmolLM2-135M on loopback,
then the same server killed.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from symbolkg.actors.engines.base import (
    ChatRequest,
    Completion,
    EngineDeadError,
    EngineError,
    Message,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.actors.engines.openai_engine import OpenAIConfig, OpenAIEngine
from tests.llm_server import SERVED_NAME, VLLMServer

MODEL = "fake-model"


def run(coro):
    return asyncio.run(coro)


def req(text: str = "hi", **kw: Any) -> ChatRequest:
    return ChatRequest(messages=(Message("user", text),), **kw)


def ok_body(text: str = "ok", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "cmpl-1",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
    body.update(extra)
    return body


# ---------------------------------------------------------------------------------------------
# A scriptable HTTP server


@dataclass
class Reply:
    """What the fake server answers to one request."""

    status: int = 200
    body: bytes | dict[str, Any] = field(default_factory=ok_body)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Seen:
    """One request as the fake server saw it."""

    index: int
    arrived_s: float
    body: dict[str, Any]
    headers: dict[str, str]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops SYNs of a burst of connections; the client then
    # retransmits a second later, which would blur the concurrency counts.
    request_queue_size = 128


class FakeServer:
    """A ThreadingHTTPServer whose answer to request ``i`` is ``script(i, body)``.

    Counts requests and the most that were in progress at once. Delays wait on an event, so
    closing the server does not wait for stalled handlers.
    """

    def __init__(self, script: Callable[[int, dict[str, Any]], Reply]) -> None:
        self.script = script
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"_unparsed": raw.decode(errors="replace")}
                with server._lock:
                    index = len(server.seen)
                    server.seen.append(Seen(index, time.monotonic(), body, dict(self.headers)))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server.script(index, body)
                    if reply.delay_s:
                        server._stop.wait(reply.delay_s)
                    payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                    self.send_response(reply.status)
                    content_type = "application/json" if not isinstance(reply.body, bytes) else "text/plain"
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on us (timeout test)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.url = f"{self.base_url}/chat/completions"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def count(self) -> int:
        return len(self.seen)

    def close(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def fake_server() -> Iterator[Callable[[Callable[[int, dict[str, Any]], Reply]], FakeServer]]:
    servers: list[FakeServer] = []

    def start(script: Callable[[int, dict[str, Any]], Reply]) -> FakeServer:
        s = FakeServer(script)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


def config(base_url: str, **kw: Any) -> OpenAIConfig:
    """A config with fast retries: tests must not wait seconds for back-off."""
    defaults: dict[str, Any] = dict(
        model=MODEL,
        api_key_env=None,
        timeout_s=5.0,
        max_retries=3,
        backoff_initial_s=0.02,
        backoff_max_s=0.1,
        trust_env=False,
    )
    defaults.update(kw)
    return OpenAIConfig(base_url=base_url, **defaults)


async def generate_once(cfg: OpenAIConfig, requests: list[ChatRequest]) -> tuple[list[Completion], OpenAIEngine]:
    engine = OpenAIEngine(cfg)
    try:
        return await engine.generate(requests), engine
    finally:
        await engine.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# Config


@pytest.mark.parametrize(
    "kw, fragment",
    [
        (dict(base_url="127.0.0.1:8000/v1"), "http://"),
        (dict(base_url="http://h/v1/chat/completions"), "'http://h/v1'"),
        (dict(model=" "), "model"),
        (dict(timeout_s=0), "timeout_s"),
        (dict(timeout_s=float("inf")), "timeout_s"),
        (dict(max_retries=-1), "max_retries"),
        (dict(backoff_initial_s=-1), "backoff_initial_s"),
        (dict(backoff_initial_s=2.0, backoff_max_s=1.0), "backoff_max_s"),
        (dict(max_concurrency=0), "max_concurrency"),
        (dict(requests_per_second=0), "requests_per_second"),
        (dict(structured="guided"), "structured"),
        (dict(extra_body={"model": "x"}), "extra_body"),
        (dict(api_key_env=""), "api_key_env"),
    ],
)
def test_config_rejects_bad_values(kw: dict[str, Any], fragment: str) -> None:
    args: dict[str, Any] = dict(base_url="http://127.0.0.1:8000/v1", model="m")
    args.update(kw)
    with pytest.raises(ValueError, match=None) as info:
        OpenAIConfig(**args)
    assert fragment in str(info.value)


def test_config_normalises_base_url() -> None:
    cfg = OpenAIConfig(base_url=" http://127.0.0.1:8000/v1/ ", model="m")
    assert cfg.chat_url == "http://127.0.0.1:8000/v1/chat/completions"


# ---------------------------------------------------------------------------------------------
# Happy path and request bodies


def test_answers_in_order_with_usage_and_body(fake_server) -> None:
    server = fake_server(lambda i, body: Reply(body=ok_body(text="echo:" + body["messages"][-1]["content"])))
    requests = [
        req("a", params=SamplingParams(max_tokens=9, temperature=0.5, top_p=0.9, stop=("END",), seed=3)),
        req("b"),
        req("c"),
    ]
    out, engine = run(generate_once(config(server.base_url), requests))
    assert [c.text for c in out] == ["echo:a", "echo:b", "echo:c"]
    assert all(c.prompt_tokens == 7 and c.completion_tokens == 3 for c in out)
    assert all(c.model == MODEL and c.finish_reason == "stop" and not c.structured for c in out)
    assert all(c.latency_s > 0 for c in out)
    first = next(s.body for s in server.seen if s.body["messages"][-1]["content"] == "a")
    assert first["model"] == MODEL
    assert first["messages"] == [{"role": "user", "content": "a"}]
    assert (first["max_tokens"], first["temperature"], first["top_p"], first["stop"], first["seed"]) == (
        9,
        0.5,
        0.9,
        ["END"],
        3,
    )
    other = next(s.body for s in server.seen if s.body["messages"][-1]["content"] == "b")
    assert "stop" not in other and "seed" not in other
    assert engine.stats.attempts == 3 and engine.stats.retries == 0 and engine.stats.completed == 3


def test_missing_usage_counts_zero_and_finish_reason_passes_through(fake_server) -> None:
    body = ok_body("cut")
    del body["usage"]
    body["choices"][0]["finish_reason"] = "length"
    body["choices"][0]["message"]["content"] = None  # a reasoning model cut off before answering
    server = fake_server(lambda i, b: Reply(body=body))
    [c], _ = run(generate_once(config(server.base_url), [req()]))
    assert (c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason) == ("", 0, 0, "length")


def test_empty_batch_sends_nothing(fake_server) -> None:
    server = fake_server(lambda i, b: Reply())
    out, _ = run(generate_once(config(server.base_url), []))
    assert out == [] and server.count == 0


SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


@pytest.mark.parametrize(
    "mode, so, expected_fields, structured",
    [
        ("vllm", StructuredOutput(choice=("x", "y")), {"structured_outputs": {"choice": ["x", "y"]}}, True),
        ("vllm", StructuredOutput(json_schema=SCHEMA), {"structured_outputs": {"json": SCHEMA}}, True),
        ("vllm", StructuredOutput(regex="[0-9]+"), {"structured_outputs": {"regex": "[0-9]+"}}, True),
        ("vllm", StructuredOutput(grammar='root ::= "a"'), {"structured_outputs": {"grammar": 'root ::= "a"'}}, True),
        ("vllm_legacy", StructuredOutput(choice=("x",)), {"guided_choice": ["x"]}, True),
        ("vllm_legacy", StructuredOutput(json_schema=SCHEMA), {"guided_json": SCHEMA}, True),
        (
            "response_format",
            StructuredOutput(json_schema=SCHEMA),
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": SCHEMA, "strict": True},
                }
            },
            True,
        ),
        ("response_format", StructuredOutput(regex="a"), {}, False),
        ("none", StructuredOutput(choice=("x",)), {}, False),
    ],
)
def test_structured_output_body(
    fake_server, mode: str, so: StructuredOutput, expected_fields: dict, structured: bool
) -> None:
    server = fake_server(lambda i, b: Reply())
    [c], engine = run(generate_once(config(server.base_url, structured=mode), [req(structured=so)]))
    body = server.seen[0].body
    constraint_keys = {"structured_outputs", "response_format"} | {k for k in body if k.startswith("guided_")}
    assert {k: body[k] for k in constraint_keys if k in body} == expected_fields
    assert c.structured is structured
    assert engine.supports_structured is (mode in ("vllm", "vllm_legacy"))


def test_extra_body_is_merged(fake_server) -> None:
    server = fake_server(lambda i, b: Reply())
    extra = {"chat_template_kwargs": {"enable_thinking": False}, "top_k": 20}
    run(generate_once(config(server.base_url, extra_body=extra), [req()]))
    assert server.seen[0].body["chat_template_kwargs"] == {"enable_thinking": False}
    assert server.seen[0].body["top_k"] == 20


def test_api_key_from_env_is_sent_but_never_shown(fake_server, monkeypatch) -> None:
    monkeypatch.setenv("SYMBOLKG_TEST_KEY", "sk-secret-123")
    server = fake_server(lambda i, b: Reply(status=400, body={"error": {"message": "nope"}}))
    engine = OpenAIEngine(config(server.base_url, api_key_env="SYMBOLKG_TEST_KEY"))

    async def go() -> EngineError:
        try:
            with pytest.raises(EngineError) as info:
                await engine.generate([req()])
            return info.value
        finally:
            await engine.close()

    error = run(go())
    assert server.seen[0].headers.get("Authorization") == "Bearer sk-secret-123"
    assert "sk-secret" not in str(error) and "sk-secret" not in repr(engine)
    assert "sk-secret" not in repr(engine.config)


def test_no_key_no_authorization_header(fake_server, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = fake_server(lambda i, b: Reply())
    run(generate_once(config(server.base_url, api_key_env="OPENAI_API_KEY"), [req()]))
    assert "Authorization" not in server.seen[0].headers


# ---------------------------------------------------------------------------------------------
# Garbage


@pytest.mark.parametrize(
    "reply, fragment",
    [
        (Reply(body=b"<html>502 from a proxy</html>"), "body is not JSON"),
        (Reply(body={"id": "x", "object": "chat.completion"}), "no 'choices'"),
        (Reply(body={"choices": []}), "no 'choices'"),
        (Reply(body=[1, 2]), "expected a JSON object"),
        (Reply(body={"choices": [{"message": {"content": 42}}]}), "content is int"),
        (Reply(body={"choices": [{"text": "legacy completion shape"}]}), "no 'message'"),
        (Reply(body=ok_body(usage={"prompt_tokens": "many"})), "usage.prompt_tokens"),
        (Reply(body=b"not gzip at all", headers={"Content-Encoding": "gzip"}), "decompressing"),
    ],
)
def test_garbage_is_retried_then_fails_clearly(fake_server, reply: Reply, fragment: str) -> None:
    server = fake_server(lambda i, b: reply)
    t0 = time.monotonic()
    with pytest.raises(EngineError) as info:
        run(generate_once(config(server.base_url, max_retries=2), [req()]))
    message = str(info.value)
    assert not isinstance(info.value, EngineDeadError)
    assert message.startswith(f"malformed response from {server.url}: ")
    assert fragment in message and "3 attempt(s)" in message
    assert server.count == 3  # 1 + max_retries, no more
    assert time.monotonic() - t0 < 3.0


def test_garbage_once_then_fine_succeeds(fake_server) -> None:
    server = fake_server(lambda i, b: Reply(body=b"not json") if i == 0 else Reply(body=ok_body("fine")))
    [c], engine = run(generate_once(config(server.base_url), [req()]))
    assert c.text == "fine" and server.count == 2 and engine.stats.retries == 1


# ---------------------------------------------------------------------------------------------
# Slow, failing, overloaded


def test_slow_attempt_is_abandoned_and_retried(fake_server) -> None:
    # The first attempt stalls for a minute (released at teardown: the fixture's close sets the
    # event the stall waits on), far beyond the bound below.
    server = fake_server(lambda i, b: Reply(delay_s=60.0) if i == 0 else Reply(body=ok_body("late but fine")))
    t0 = time.monotonic()
    [c], engine = run(generate_once(config(server.base_url, timeout_s=0.4), [req()]))
    wall_s = time.monotonic() - t0
    assert c.text == "late but fine" and server.count == 2 and engine.stats.retries == 1
    # Waited for the timeout, not for the stalled handler. Measured idle: 0.46 s.
    assert 0.4 <= wall_s < 5.0
    assert c.latency_s >= 0.4  # latency counts the abandoned attempt


def test_always_slow_fails_with_timeout_after_bounded_time(fake_server) -> None:
    server = fake_server(lambda i, b: Reply(delay_s=60.0))  # stalls past the bound; released at teardown
    t0 = time.monotonic()
    with pytest.raises(EngineError, match=r"no answer from .* within timeout_s=0.3") as info:
        run(generate_once(config(server.base_url, timeout_s=0.3, max_retries=2), [req()]))
    wall_s = time.monotonic() - t0
    assert server.url in str(info.value) and "3 attempt(s)" in str(info.value)
    assert server.count == 3
    # 3 timeouts of 0.3 s + 2 back-offs of at most 0.1 s, never the 60 s stall. Measured idle: 0.98 s.
    assert 0.9 <= wall_s < 10.5


def test_503_twice_then_success(fake_server) -> None:
    server = fake_server(
        lambda i, b: (
            Reply(status=503, body={"error": {"message": "warming up"}}) if i < 2 else Reply(body=ok_body("up"))
        )
    )
    [c], engine = run(generate_once(config(server.base_url, max_retries=3), [req()]))
    assert c.text == "up"
    assert server.count == 3
    assert (engine.stats.attempts, engine.stats.retries, engine.stats.failed) == (3, 2, 0)


def test_503_forever_gives_up_with_the_servers_message(fake_server) -> None:
    server = fake_server(lambda i, b: Reply(status=503, body={"error": {"message": "overloaded"}}))
    with pytest.raises(EngineError, match="HTTP 503: overloaded") as info:
        run(generate_once(config(server.base_url, max_retries=2), [req()]))
    assert "3 attempt(s)" in str(info.value) and server.count == 3


def test_retry_after_is_honoured(fake_server) -> None:
    server = fake_server(
        lambda i, b: (
            Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "1"})
            if i == 0
            else Reply()
        )
    )
    run(generate_once(config(server.base_url, backoff_initial_s=0.01, backoff_max_s=5.0), [req()]))
    assert server.count == 2
    gap_s = server.seen[1].arrived_s - server.seen[0].arrived_s
    # Waited the server's 1 s, not backoff_initial_s (0.01 s). Measured idle: 1.00 s.
    assert 0.95 <= gap_s < 10.0


def test_retry_after_is_capped_by_backoff_max(fake_server) -> None:
    server = fake_server(lambda i, b: Reply(status=429, headers={"Retry-After": "3600"}) if i == 0 else Reply())
    t0 = time.monotonic()
    run(generate_once(config(server.base_url, backoff_max_s=0.2), [req()]))
    # Waited backoff_max_s (0.2 s), not the 3600 s asked for. Measured idle: 0.25 s.
    assert server.count == 2 and time.monotonic() - t0 < 5.0


def test_400_is_not_retried_and_says_why(fake_server) -> None:
    message = "max_tokens=4000 cannot be greater than max_model_len=2048."
    server = fake_server(lambda i, b: Reply(status=400, body={"error": {"message": message, "code": 400}}))
    with pytest.raises(EngineError) as info:
        run(generate_once(config(server.base_url, max_retries=5), [req()]))
    assert not isinstance(info.value, EngineDeadError)
    assert str(info.value) == f"{server.url} answered HTTP 400: {message}"
    assert server.count == 1


@pytest.mark.parametrize("status", [401, 403, 404])
def test_config_errors_are_dead(fake_server, status: int) -> None:
    error = {"error": {"message": "The model `x` does not exist."}}
    server = fake_server(lambda i, b: Reply(status=status, body=error))
    with pytest.raises(EngineDeadError, match=f"HTTP {status}: The model `x` does not exist"):
        run(generate_once(config(server.base_url, max_retries=5), [req()]))
    assert server.count == 1


def test_plain_text_error_body_is_reported(fake_server) -> None:
    server = fake_server(lambda i, b: Reply(status=422, body=b"Unprocessable: bad field"))
    with pytest.raises(EngineError, match="HTTP 422: Unprocessable: bad field"):
        run(generate_once(config(server.base_url), [req()]))


def test_nothing_listening_fails_after_retries_naming_the_url() -> None:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    t0 = time.monotonic()
    with pytest.raises(EngineError) as info:
        run(generate_once(config(base_url, max_retries=3, backoff_initial_s=0.05, backoff_max_s=0.2), [req()]))
    wall_s = time.monotonic() - t0
    message = str(info.value)
    assert not isinstance(info.value, EngineDeadError)
    assert f"cannot reach {base_url}/chat/completions: ConnectError" in message
    assert "4 attempt(s)" in message
    # back-offs: 0.05, 0.1, 0.2 with jitter in [50%, 100%]; a refused connection fails at once (no
    # wait for timeout_s=5 per attempt, which would take 20 s). Measured idle: 0.28 s.
    assert 0.17 <= wall_s < 5.0


# ---------------------------------------------------------------------------------------------
# Batches, concurrency, rate


def test_one_failure_fails_the_batch_after_all_finished(fake_server) -> None:
    def script(i: int, body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["content"] == "bad":
            return Reply(status=400, body={"error": {"message": "bad prompt"}})
        return Reply(delay_s=0.2)

    server = fake_server(script)
    with pytest.raises(EngineError, match=r"HTTP 400: bad prompt \(1 of 3 requests in this batch failed\)"):
        run(generate_once(config(server.base_url), [req("a"), req("bad"), req("c")]))
    assert server.count == 3


def test_dead_error_wins_over_plain_error_in_a_batch(fake_server) -> None:
    def script(i: int, body: dict[str, Any]) -> Reply:
        content = body["messages"][-1]["content"]
        return Reply(status=400 if content == "bad" else 401, body={"error": {"message": content}})

    server = fake_server(script)
    with pytest.raises(EngineDeadError, match="HTTP 401"):
        run(generate_once(config(server.base_url), [req("bad"), req("key")]))


@pytest.mark.parametrize("one_call", [True, False], ids=["one-batch", "many-callers"])
def test_concurrency_limit_is_respected(fake_server, one_call: bool) -> None:
    server = fake_server(lambda i, b: Reply(delay_s=0.15))
    cfg = config(server.base_url, max_concurrency=3)

    async def go() -> None:
        engine = OpenAIEngine(cfg)
        try:
            if one_call:
                await engine.generate([req(str(i)) for i in range(12)])
            else:
                await asyncio.gather(*(engine.generate([req(str(i))]) for i in range(12)))
        finally:
            await engine.close()

    t0 = time.monotonic()
    run(go())
    wall_s = time.monotonic() - t0
    assert server.count == 12
    assert server.max_in_flight == 3
    assert wall_s >= 4 * 0.15 - 0.02  # 12 requests, 3 at a time


def test_waiting_for_a_slot_does_not_count_against_timeout(fake_server) -> None:
    # One attempt takes 0.2 s at the server (measured idle: 0.25 s at the client), 12x inside
    # timeout_s; 17 requests one at a time make the last one wait at least 16 * 0.2 = 3.2 s for its
    # slot, longer than timeout_s (a busy machine only makes that wait longer).
    delay_s, n, timeout_s = 0.2, 17, 3.0
    server = fake_server(lambda i, b: Reply(delay_s=delay_s))
    cfg = config(server.base_url, max_concurrency=1, timeout_s=timeout_s, max_retries=0)
    out, engine = run(generate_once(cfg, [req()] * n))
    assert len(out) == n and server.count == n and engine.stats.retries == 0
    assert server.max_in_flight == 1
    slowest_s = max(c.latency_s for c in out)
    assert slowest_s >= n * delay_s - 0.05 and slowest_s > timeout_s


def test_rate_limit_is_respected(fake_server) -> None:
    server = fake_server(lambda i, b: Reply())
    rate = 20.0
    t0 = time.monotonic()  # the server threads share this process's monotonic clock
    run(generate_once(config(server.base_url, requests_per_second=rate, max_concurrency=10), [req()] * 10))
    wall_s = time.monotonic() - t0
    arrivals = sorted(s.arrived_s - t0 for s in server.seen)
    # The k-th request cannot reach the server before the k-th token (no burst); a loaded
    # machine can only make arrivals later, so these bounds hold under load too.
    assert all(arrival >= k / rate - 0.005 for k, arrival in enumerate(arrivals)), arrivals
    assert wall_s < 9 / rate + 1.5


def test_without_rate_limit_requests_go_together(fake_server) -> None:
    server = fake_server(lambda i, b: Reply(delay_s=0.5))
    run(generate_once(config(server.base_url, max_concurrency=10), [req()] * 10))
    assert server.max_in_flight == 10


# ---------------------------------------------------------------------------------------------
# Lifecycle


def test_closed_engine_is_dead_and_close_is_idempotent(fake_server) -> None:
    server = fake_server(lambda i, b: Reply())

    async def go() -> None:
        engine = OpenAIEngine(config(server.base_url))
        await engine.generate([req()])
        await engine.close()
        await engine.close()
        with pytest.raises(EngineDeadError, match="closed"):
            await engine.generate([req()])

    run(go())
    assert server.count == 1


def test_close_during_backoff_stops_the_retries(fake_server) -> None:
    server = fake_server(lambda i, b: Reply(status=503))

    async def go() -> int:
        # A back-off of 1-2 s (jitter), far longer than this loop takes to notice the engine is in
        # it (measured idle: 0.004 s after the 503 reached the server): the close lands during it.
        engine = OpenAIEngine(config(server.base_url, max_retries=10, backoff_initial_s=2.0, backoff_max_s=2.0))
        task = asyncio.create_task(engine.generate([req()]))
        deadline = time.monotonic() + 30.0
        # The first attempt got its 503 and the engine sleeps before the retry (stats.retries is
        # counted just before that sleep).
        while engine.stats.retries < 1:
            assert not task.done() and time.monotonic() < deadline, "the first attempt never failed"
            await asyncio.sleep(0.01)
        attempts_at_close = engine.stats.attempts
        await engine.close()
        with pytest.raises(EngineDeadError, match="closed"):
            await task
        return attempts_at_close

    assert run(go()) == 1  # closed during the first back-off
    assert server.count == 1


def test_engine_is_bound_to_one_event_loop(fake_server) -> None:
    server = fake_server(lambda i, b: Reply())
    engine = OpenAIEngine(config(server.base_url))
    run(engine.generate([req()]))
    with pytest.raises(RuntimeError, match="event loop"):
        run(engine.generate([req()]))
    run(engine.close())


# ---------------------------------------------------------------------------------------------
# A real vLLM server (slow)

# The session's shared real server (tests/llm_server.py, the `vllm_server` fixture of conftest.py).


def real_config(server: VLLMServer, **kw: Any) -> OpenAIConfig:
    defaults: dict[str, Any] = dict(
        model=SERVED_NAME,
        api_key_env=None,
        timeout_s=60.0,
        max_retries=1,
        backoff_initial_s=0.1,
        backoff_max_s=0.5,
        trust_env=False,
    )
    defaults.update(kw)
    return OpenAIConfig(base_url=server.base_url, **defaults)


@pytest.mark.slow
def test_real_server_chat_completion(vllm_server: VLLMServer) -> None:
    request = req("What is the capital of France? Answer in one word.", params=SamplingParams(max_tokens=16))
    [c], engine = run(generate_once(real_config(vllm_server), [request]))
    assert c.text.strip()
    assert c.prompt_tokens > 5 and 0 < c.completion_tokens <= 16
    assert c.finish_reason in ("stop", "length") and c.model == SERVED_NAME
    assert engine.stats.attempts == 1


@pytest.mark.slow
def test_real_server_structured_outputs_in_one_batch(vllm_server: VLLMServer) -> None:
    question = "Is the sky blue? Answer."
    params = SamplingParams(max_tokens=24)
    requests = [
        req(question, params=params, structured=StructuredOutput(choice=("yes", "no"))),
        req(question, params=params, structured=StructuredOutput(choice=("True", "False", "Unknown"))),
        req(question, params=params, structured=StructuredOutput(regex="[0-9]{3}")),
        req(
            question,
            params=params,
            structured=StructuredOutput(
                json_schema={
                    "type": "object",
                    "properties": {"answer": {"type": "boolean"}},
                    "required": ["answer"],
                    "additionalProperties": False,
                }
            ),
        ),
    ]
    out, _ = run(generate_once(real_config(vllm_server), requests))
    assert out[0].text in ("yes", "no")
    assert out[1].text in ("True", "False", "Unknown")
    assert len(out[2].text) == 3 and out[2].text.isdigit()
    assert isinstance(json.loads(out[3].text)["answer"], bool)
    assert all(c.structured for c in out)


@pytest.mark.slow
def test_real_server_rejects_bad_requests_clearly(vllm_server: VLLMServer) -> None:
    with pytest.raises(EngineDeadError, match="HTTP 404: The model `no-such-model` does not exist"):
        run(generate_once(real_config(vllm_server, model="no-such-model"), [req()]))

    engine = OpenAIEngine(real_config(vllm_server, max_retries=3))

    async def too_long() -> None:
        try:
            await engine.generate([req(params=SamplingParams(max_tokens=100_000))])  # > max-model-len
        finally:
            await engine.close()

    with pytest.raises(EngineError, match="HTTP 400: .*max_tokens"):
        run(too_long())
    assert engine.stats.attempts == 1  # a bad request is not retried


def test_server_gone_fails_after_retries() -> None:
    """Nothing listens on the port (as after a server died): bounded retries, then a clear error."""
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    cfg = OpenAIConfig(
        base_url=base_url,
        model=SERVED_NAME,
        api_key_env=None,
        timeout_s=5.0,
        max_retries=2,
        backoff_initial_s=0.1,
        backoff_max_s=0.2,
        trust_env=False,
    )
    with pytest.raises(EngineError) as info:
        run(generate_once(cfg, [req()]))
    assert not isinstance(info.value, EngineDeadError)
    assert f"cannot reach {base_url}/chat/completions" in str(info.value)
    assert "3 attempt(s)" in str(info.value)
