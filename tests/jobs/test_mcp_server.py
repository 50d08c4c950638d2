"""End-to-end tests of ``symbolkg mcp serve`` with the MCP SDK's own client.

Real servers in subprocesses (``python -m symbolkg.jobs.cli mcp serve``), real ``swipl``
sessions, the SDK's ``Client`` over stdio and over Streamable HTTP. Every tool result is
checked against the ``outputSchema`` the server published (with ``jsonschema``), errors
included. One HTTP server is shared by the module; the stdio tests start their own
(a stdio server lives as long as its client).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.skipif(
    not Path("/usr/bin/swipl").exists() and not os.environ.get("SYMBOLKG_SWIPL"), reason="SWI-Prolog is not installed"
)

REPO = Path(__file__).resolve().parents[2]
SERVER_CMD = [sys.executable, "-m", "symbolkg.jobs.cli", "mcp", "serve"]
TOKEN = "test-token-" + os.urandom(8).hex()
ALL_TOOLS = {
    "consult_text",
    "run_goal",
    "inspect_predicate",
    "get_source",
    "replace_predicate",
    "list_messages",
    "run_tests",
    "trace_goal",
    "close_session",
    "list_sessions",
    "next_answers",
    "add_clauses",
    "solve_program",
}
FAMILY = """parent(tom, bob).
parent(bob, ann).
ancestor(X, Y) :- parent(X, Y).
ancestor(X, Y) :- parent(X, Z), ancestor(Z, Y).
broken( :- .
"""
TESTS = """:- begin_tests(family).
test(tom_bob) :- parent(tom, bob).
test(wrong) :- parent(ann, tom).
:- end_tests(family).
"""


# ----------------------------------------------------------------------------------------- helpers


class Tools:
    """An MCP client plus the output schemas it listed; every call is validated against them."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.schemas: dict[str, dict[str, Any]] = {}
        self.tools: list[Any] = []

    async def list(self) -> list[Any]:
        self.tools = (await self.client.list_tools()).tools
        self.schemas = {t.name: t.output_schema for t in self.tools}
        return self.tools

    async def call(self, name: str, args: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        """The tool's structuredContent, validated; ``ok`` must agree with ``isError``."""
        if not self.schemas:
            await self.list()
        result = await self.client.call_tool(name, args or {}, **kw)
        content = result.structured_content
        assert isinstance(content, dict), f"{name} returned no structuredContent: {result}"
        jsonschema.validate(content, self.schemas[name])
        assert content["ok"] is (not result.is_error), content
        assert json.loads(result.content[0].text) == content  # the text block says the same
        return content

    async def error(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        content = await self.call(name, args)
        assert content["ok"] is False, f"{name}({args}) should have failed: {content}"
        return content["error"]


def answers_text(result: dict[str, Any]) -> str:
    """The answers as JSON text (the typed-JSON encoding of a value belongs to the session layer)."""
    return json.dumps(result["answers"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stdio_params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=SERVER_CMD[0], args=[*SERVER_CMD[1:], *extra], cwd=str(REPO))


@contextmanager
def http_server(*extra: str, token: str = TOKEN) -> Iterator[str]:
    """A server on a free loopback port; yields its URL; SIGTERM (sessions closed) at the end."""
    port = free_port()
    env = {**os.environ, "SYMBOLKG_MCP_TOKEN": token}
    with tempfile.TemporaryFile() as errlog:
        proc = subprocess.Popen(
            [*SERVER_CMD, "--transport", "http", "--port", str(port), *extra],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            cwd=REPO,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    errlog.seek(0)
                    raise RuntimeError(f"server exited with {proc.returncode}: {errlog.read().decode()}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class http_tools:
    """``async with http_tools(url) as t``: an SDK client over Streamable HTTP with the bearer token."""

    def __init__(self, url: str, token: str = TOKEN) -> None:
        self.url, self.token = url, token

    async def __aenter__(self) -> Tools:
        self._http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {self.token}"}, timeout=httpx2.Timeout(30, read=300)
        )
        await self._http.__aenter__()
        self._client = Client(streamable_http_client(self.url, http_client=self._http))
        await self._client.__aenter__()
        return Tools(self._client)

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._client.__aexit__(*exc)
        finally:
            await self._http.__aexit__(*exc)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with http_server("--max-sessions", "128") as url:
        yield url


# ------------------------------------------------------------------------------ every tool, both ways


async def exercise_all_tools(t: Tools) -> None:
    """List the tools, call every one (successes and errors), check the answers."""
    tools = await t.list()
    assert {x.name for x in tools} == ALL_TOOLS
    for tool in tools:
        assert tool.input_schema["type"] == "object" and tool.output_schema["type"] == "object", tool.name
        assert tool.annotations is not None and tool.annotations.read_only_hint is not None, tool.name
    by_name = {x.name: x for x in tools}
    assert by_name["get_source"].annotations.read_only_hint is True
    assert by_name["close_session"].annotations.destructive_hint is True
    assert by_name["replace_predicate"].annotations.destructive_hint is True
    assert by_name["run_goal"].input_schema["properties"]["max_answers"]["default"] == 10
    assert by_name["run_goal"].input_schema["properties"]["time_limit"]["default"] == 30.0
    assert by_name["run_goal"].input_schema["properties"]["max_depth"]["default"] == 1000000
    assert by_name["trace_goal"].input_schema["properties"]["max_nodes"]["default"] == 200

    # solve_program first: it starts a solver worker, the slowest call
    solved = await t.call("solve_program", {"language": "prolog", "program": "p(a).\nq(X) :- p(X).\n% query: q(a)\n"})
    assert solved["status"] == "proved" and solved["answer"] == "True", solved
    bad = await t.call("solve_program", {"language": "smtlib2", "program": "(declare-const x Int"})
    assert bad["ok"] is True and bad["status"] == "parse_error" and bad["error_kind"], bad  # a recorded outcome

    loaded = await t.call("consult_text", {"source_text": FAMILY, "include_predicates": True})
    lid = loaded["load_id"]
    assert loaded["dialect"] == "swi" and "ancestor/2" in loaded["predicates"], loaded
    errors = [m for m in loaded["messages"] if m["severity"] == "error"]
    assert errors and errors[0]["line"] == 5, loaded["messages"]  # non-fatal: the good clauses loaded

    got = await t.call("run_goal", {"load_id": lid, "goal": "ancestor(tom, X)"})
    assert got["outcome"] == "success" and len(got["answers"]) == 2, got
    assert "bob" in answers_text(got) and "ann" in answers_text(got)
    first = await t.call("run_goal", {"load_id": lid, "goal": "ancestor(tom, X)", "max_answers": 1})
    assert first["truncated"] is True and first["cursor"], first
    more = await t.call("next_answers", {"load_id": lid, "cursor": first["cursor"], "max_answers": 5})
    assert len(more["answers"]) == 1 and "ann" in answers_text(more) and "bob" not in answers_text(more), more
    out = await t.call("run_goal", {"load_id": lid, "goal": "format('hello ~w', [world])"})
    assert out["output"] == "hello world", out
    assert (await t.call("run_goal", {"load_id": lid, "goal": "parent(ann, _)"}))["outcome"] == "failure"

    found = await t.call("inspect_predicate", {"load_id": lid, "name": "ancestor", "arity": 2})
    assert found["found"] is True and found["clause_count"] == 2, found
    missing = await t.call("inspect_predicate", {"load_id": lid, "name": "ancestr", "arity": 2})
    assert missing["found"] is False and "ancestor/2" in missing["candidates"], missing
    source = await t.call("get_source", {"load_id": lid})
    assert "ancestor" in source["source"] and "parent(tom,bob)" in source["source"].replace(" ", ""), source

    patched = await t.call(
        "replace_predicate",
        {"load_id": lid, "name": "parent", "arity": 2, "source_text": "parent(tom, bob).\nparent(bob, eve).\n"},
    )
    assert patched["replaced"] is True and patched["predicate"] == "parent/2", patched
    failed_patch = await t.call(
        "replace_predicate",
        {"load_id": lid, "name": "parent", "arity": 2, "source_text": "parent(tom, zed).\nparent(bob\n"},
    )
    assert failed_patch.get("replaced") is not True, failed_patch  # atomic: the session kept eve
    eve = await t.call("run_goal", {"load_id": lid, "goal": "ancestor(tom, X)"})
    assert "eve" in answers_text(eve) and "ann" not in answers_text(eve) and "zed" not in answers_text(eve), eve

    added = await t.call("add_clauses", {"load_id": lid, "source_text": "parent(eve, joe).\n"})
    assert added["load_id"] == lid, added
    assert (await t.call("run_goal", {"load_id": lid, "goal": "ancestor(tom, joe)"}))["outcome"] == "success"

    msgs = await t.call("list_messages", {"load_id": lid, "min_severity": "error"})
    assert msgs["messages"] and all(m["severity"] == "error" for m in msgs["messages"]), msgs
    everything = await t.call("list_messages", {"load_id": lid})
    assert len(everything["messages"]) >= len(msgs["messages"])

    tests = await t.call("run_tests", {"load_id": lid, "test_source_text": TESTS})
    assert (tests["passed"], tests["failed"], tests["total"]) == (1, 1, 2), tests

    traced = await t.call("trace_goal", {"load_id": lid, "goal": "ancestor(tom, joe)"})
    assert traced["tree"] and "ancestor" in traced["tree"]["goal"] and traced["node_count"] >= 3, traced
    assert traced["truncated"] is False
    cut = await t.call("trace_goal", {"load_id": lid, "goal": "ancestor(tom, joe)", "max_nodes": 2})
    assert cut["node_cut"] is True and cut["truncated"] is True, cut

    listed = await t.call("list_sessions")
    assert lid in {s["load_id"] for s in listed["sessions"]}, listed

    # errors are results, with a kind; the session survives every one of them
    assert (await t.error("run_goal", {"load_id": lid, "goal": "no_such_pred(1)"}))["kind"] == "existence_error"
    assert (await t.error("run_goal", {"load_id": lid, "goal": "atom_length(X, Y)"}))["kind"] == "instantiation_error"
    assert (await t.error("run_goal", {"load_id": lid, "goal": "atom_length(1, a)"}))["kind"] == "type_error"
    assert (await t.error("run_goal", {"load_id": lid, "goal": "parent(tom,"}))["kind"] == "syntax_error"
    assert (await t.error("run_goal", {"load_id": lid}))["kind"] == "bad_argument"  # no goal
    assert (await t.error("run_goal", {"load_id": lid, "goal": "true", "max_answers": "ten"}))["kind"] == "bad_argument"
    assert (await t.error("solve_program", {"language": "cobol", "program": "x"}))["kind"] == "bad_argument"
    assert (await t.call("run_goal", {"load_id": lid, "goal": "parent(tom, bob)"}))["outcome"] == "success"

    closed = await t.call("close_session", {"load_id": lid})
    assert closed["closed"] is True
    assert (await t.error("run_goal", {"load_id": lid, "goal": "true"}))["kind"] == "session_not_found"
    assert (await t.error("get_source", {"load_id": "s-0000000000000000"}))["kind"] == "session_not_found"
    unknown = await t.client.call_tool("no_such_tool", {})
    assert unknown.is_error


def test_stdio_lists_and_calls_every_tool() -> None:
    async def main() -> None:
        async with Client(stdio_params()) as client:
            await exercise_all_tools(Tools(client))

    asyncio.run(main())


def test_http_lists_and_calls_every_tool(http_url: str) -> None:
    async def main() -> None:
        async with http_tools(http_url) as t:
            await exercise_all_tools(t)

    asyncio.run(main())


def test_in_process_client_and_argument_errors() -> None:
    """The transport an agent in this process uses: the SDK client on the SDK server object."""
    from symbolkg.jobs.servers.mcp.server import PrologMCPServer
    from symbolkg.jobs.servers.mcp.start import ServerConfig

    async def main(app: PrologMCPServer) -> None:
        async with Client(app.server) as client:
            t = Tools(client)
            lid = (await t.call("consult_text", {"source_text": "edge(a, b).\nedge(b, c).\n"}))["load_id"]
            got = await t.call("run_goal", {"load_id": lid, "goal": "edge(X, Y)", "max_answers": 5})
            assert got["answers"] == [{"X": "a", "Y": "b"}, {"X": "b", "Y": "c"}], got
            bad = await t.error("run_goal", {"load_id": lid, "goal": "edge(X, Y)", "max_answers": 0, "extra": 1})
            assert bad["kind"] == "bad_argument" and "max_answers" in bad["message"] and "extra" in bad["message"]
            assert (await t.error("consult_text", {"source_text": "", "module_name": "user"}))["kind"] == "bad_argument"
            assert (await t.error("consult_text", {"source_text": "", "dialect": "iso"}))["kind"] == "bad_argument"

    with PrologMCPServer(ServerConfig(max_sessions=4)) as app:
        asyncio.run(main(app))
        assert len(app.registry.list()) == 1
    assert app.registry.list() == []  # closed with the server


# ---------------------------------------------------------------------------------- HTTP security


def _post(url: str, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"content-type": "application/json", "accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_http_needs_the_bearer_token(http_url: str) -> None:
    assert _post(http_url, {}) == 401
    assert _post(http_url, {"authorization": "Bearer wrong-" + TOKEN}) == 401
    assert _post(http_url, {"authorization": TOKEN}) == 401  # no scheme
    assert _post(http_url, {"authorization": f"Bearer {TOKEN}"}) != 401

    async def main() -> None:  # the SDK client without the token cannot even connect
        async with httpx2.AsyncClient() as http:
            with pytest.raises(ExceptionGroup) as raised:
                async with Client(streamable_http_client(http_url, http_client=http)) as client:
                    await client.list_tools()
            assert raised.group_contains(MCPError), raised.value

    asyncio.run(main())


def test_http_refuses_to_start_on_a_public_host_without_a_token() -> None:
    env = {k: v for k, v in os.environ.items() if k != "SYMBOLKG_MCP_TOKEN"}
    proc = subprocess.run(
        [*SERVER_CMD, "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port())],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert proc.returncode == 2, proc
    assert "non-loopback" in proc.stderr and "token" in proc.stderr, proc.stderr


def test_token_file_and_middleware_units(tmp_path: Path) -> None:
    from symbolkg.jobs.servers.mcp.transport import check_http_options, is_loopback, read_token

    (tmp_path / "tok").write_text("abc123\n")
    assert read_token(str(tmp_path / "tok"), env={}) == "abc123"
    assert read_token(None, env={"SYMBOLKG_MCP_TOKEN": "xyz"}) == "xyz"
    assert read_token(None, env={}) is None
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError):
        read_token(str(tmp_path / "empty"), env={})
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3") and not is_loopback("example.org")
    check_http_options("10.1.2.3", "tok")  # with a token anything goes
    with pytest.raises(ValueError, match="non-loopback"):
        check_http_options("10.1.2.3", None)
    with pytest.raises(ValueError, match="needs a bearer token"):  # loopback too: any local process could connect
        check_http_options("127.0.0.1", None)


# ---------------------------------------------------------------------------- many sessions at once


def test_100_sessions_from_10_clients_are_isolated(http_url: str) -> None:
    async def client_work(c: int) -> list[tuple[int, str]]:
        async with http_tools(http_url) as t:
            await t.list()

            async def one(i: int) -> tuple[int, str]:
                n = c * 10 + i
                loaded = await t.call("consult_text", {"source_text": f"mine({n}).\nsecret_{n}(yes).\n"})
                assert not [m for m in loaded["messages"] if m["severity"] == "error"], loaded
                return n, loaded["load_id"]

            return await asyncio.gather(*(one(i) for i in range(10)))

    async def check(url: str, ids: dict[int, str], c: int) -> None:
        async with http_tools(url) as t:
            await t.list()

            async def one(n: int) -> None:
                lid = ids[n]
                got = await t.call("run_goal", {"load_id": lid, "goal": "mine(X)"})
                assert got["outcome"] == "success" and len(got["answers"]) == 1, got
                assert str(n) in answers_text(got), (n, got)
                other = (n + 37) % 100  # a predicate of another session is not visible here
                leak = await t.call("run_goal", {"load_id": lid, "goal": f"secret_{other}(X)"})
                assert leak["ok"] is False or leak["outcome"] == "failure", (n, other, leak)
                if not leak["ok"]:
                    assert leak["error"]["kind"] == "existence_error", leak
                await t.call("close_session", {"load_id": lid})

            await asyncio.gather(*(one(c * 10 + i) for i in range(10)))

    async def main() -> None:
        t0 = time.monotonic()
        created = await asyncio.gather(*(client_work(c) for c in range(10)))
        ids = dict(pair for rows in created for pair in rows)
        assert len(ids) == 100 and len(set(ids.values())) == 100
        await asyncio.gather(*(check(http_url, ids, c) for c in range(10)))
        print(f"100 sessions, 10 clients: {time.monotonic() - t0:.1f} s")

    asyncio.run(main())


def test_lru_and_ttl_eviction_as_configured() -> None:
    async def main() -> None:
        async with Client(stdio_params("--max-sessions", "2", "--idle-ttl", "3")) as client:
            t = Tools(client)
            a = (await t.call("consult_text", {"source_text": "v(a).\n"}))["load_id"]
            b = (await t.call("consult_text", {"source_text": "v(b).\n"}))["load_id"]
            assert (await t.call("run_goal", {"load_id": a, "goal": "v(a)"}))["outcome"] == "success"  # a is recent
            c = (await t.call("consult_text", {"source_text": "v(c).\n"}))["load_id"]  # cap 2: b goes (LRU)
            assert (await t.error("run_goal", {"load_id": b, "goal": "v(b)"}))["kind"] == "session_evicted"
            assert (await t.call("run_goal", {"load_id": a, "goal": "v(a)"}))["outcome"] == "success"
            assert (await t.call("run_goal", {"load_id": c, "goal": "v(c)"}))["outcome"] == "success"
            assert (await t.call("list_sessions"))["count"] == 2
            await asyncio.sleep(4.5)  # idle TTL 3 s (the reaper looks every 0.75 s)
            assert (await t.error("run_goal", {"load_id": a, "goal": "v(a)"}))["kind"] == "session_expired"
            assert (await t.error("close_session", {"load_id": c}))["kind"] == "session_expired"
            assert (await t.call("list_sessions"))["count"] == 0
            d = (await t.call("consult_text", {"source_text": "v(d).\n"}))["load_id"]
            assert (await t.call("run_goal", {"load_id": d, "goal": "v(d)"}))["outcome"] == "success"

    asyncio.run(main())


# ------------------------------------------------------------------------------- failures and escapes


def test_killed_session_is_lost_and_the_others_are_untouched(http_url: str) -> None:
    async def main() -> None:
        async with http_tools(http_url) as t:
            ids = [(await t.call("consult_text", {"source_text": f"k({i}).\n"}))["load_id"] for i in range(3)]
            pids = {s["load_id"]: s["pid"] for s in (await t.call("list_sessions"))["sessions"]}
            os.kill(pids[ids[1]], signal.SIGKILL)
            await asyncio.sleep(0.3)
            assert (await t.error("run_goal", {"load_id": ids[1], "goal": "k(X)"}))["kind"] == "session_lost"
            for i in (0, 2):
                got = await t.call("run_goal", {"load_id": ids[i], "goal": "k(X)"})
                assert got["outcome"] == "success" and str(i) in answers_text(got), got
                await t.call("close_session", {"load_id": ids[i]})

    asyncio.run(main())


async def cancel_then_ask(t: Tools, lid: str, after_s: float) -> None:
    """Cancel a running ``spin`` after ``after_s``: the session answers ``ok(X)`` long before the 60 s limit."""
    task = asyncio.create_task(t.client.call_tool("run_goal", {"load_id": lid, "goal": "spin", "time_limit": 60.0}))
    await asyncio.sleep(after_s)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    t0 = time.monotonic()
    after = await t.call("run_goal", {"load_id": lid, "goal": "ok(X)", "time_limit": 30.0})
    assert after["outcome"] == "success" and time.monotonic() - t0 < 15, (after, time.monotonic() - t0)


def test_long_goal_sends_progress_then_times_out_and_cancellation_stops_it(http_url: str) -> None:
    async def main() -> None:
        async with http_tools(http_url) as t:
            lid = (await t.call("consult_text", {"source_text": "spin :- repeat, fail.\nok(1).\n"}))["load_id"]
            seen: list[float] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append(progress)

            timed = await t.call(
                "run_goal", {"load_id": lid, "goal": "spin", "time_limit": 2.0}, progress_callback=on_progress
            )
            assert timed["outcome"] == "timeout", timed
            assert len(seen) >= 2 and seen == sorted(seen), seen  # every ~0.5 s while it ran
            assert (await t.call("run_goal", {"load_id": lid, "goal": "ok(X)"}))["outcome"] == "success"

            await cancel_then_ask(t, lid, after_s=1.5)
            await t.call("close_session", {"load_id": lid})

    asyncio.run(main())


def test_escape_attempts_are_refused_end_to_end(http_url: str, tmp_path: Path) -> None:
    target = tmp_path / "pwned.txt"

    async def main() -> None:
        async with http_tools(http_url) as t:
            # smuggled/1 is dynamic: a smuggled assertz(smuggled(1)) would succeed if it ever ran
            lid = (await t.call("consult_text", {"source_text": ":- dynamic smuggled/1.\nfact(1).\n"}))["load_id"]

            async def refused(goal: str) -> str:
                err = await t.error("run_goal", {"load_id": lid, "goal": goal})
                again = await t.call("run_goal", {"load_id": lid, "goal": "fact(X)"})  # still answers
                assert again["outcome"] == "success", (goal, again)
                return err["kind"]

            assert await refused(f"shell('touch {target}')") == "permission_error"
            assert await refused(f"open('{target}', write, S), format(S, 'x', []), close(S)") == "permission_error"
            assert await refused("halt") == "permission_error"
            assert await refused("assertz(user:owned(1))") == "permission_error"
            assert await refused("consult('/etc/passwd')") == "permission_error"
            # a second command smuggled after a newline, a full stop or a quoted-atom break-out is data:
            # the goal may be refused or may run alone, but the second command never runs
            for goal in (
                "fact(X).\nassertz(smuggled(1))",
                "fact(X). assertz(smuggled(1)).",
                "fact(X)'), assertz(smuggled(1)), ('",
                "fact(X).\nhalt.",
                f"fact(X).\nshell('touch {target}')",
            ):
                await t.call("run_goal", {"load_id": lid, "goal": goal})
                assert (await t.call("run_goal", {"load_id": lid, "goal": "fact(X)"}))["outcome"] == "success", goal
                probe = await t.call("run_goal", {"load_id": lid, "goal": "smuggled(_)"})
                assert probe["outcome"] == "failure", (goal, probe)
            # the control: the same command run as a goal of its own does change the session
            assert (await t.call("run_goal", {"load_id": lid, "goal": "assertz(smuggled(1))"}))["outcome"] == "success"
            assert (await t.call("run_goal", {"load_id": lid, "goal": "smuggled(_)"}))["outcome"] == "success"
            # the same through consulted text: the directive is refused, the clauses load
            loaded = await t.call(
                "consult_text", {"source_text": f"good(1).\n:- shell('touch {target}').\n:- halt.\nalso_good(2).\n"}
            )
            assert [m for m in loaded["messages"] if m["severity"] == "error"], loaded
            two = loaded["load_id"]
            for goal in ("good(X)", "also_good(X)"):
                assert (await t.call("run_goal", {"load_id": two, "goal": goal}))["outcome"] == "success", goal
            for x in (lid, two):
                await t.call("close_session", {"load_id": x})
        assert not target.exists()

    asyncio.run(main())


def test_goals_inline_and_in_worker_threads_share_one_session() -> None:
    """run_goal on an idle session answers from the event loop; a call meanwhile waits in a worker thread.

    The first goal catches its limit (it still times out at the limit, the session survives); the
    second arrives while the first runs, so it takes the worker-thread path and answers after it; a
    cancelled inline goal stops and frees the session for the next call.
    """
    source = "ok(1).\nr :- r0.\nr0 :- repeat, fail.\nspin :- repeat, fail.\n"

    async def main() -> None:
        async with Client(stdio_params()) as client:
            t = Tools(client)
            lid = (await t.call("consult_text", {"source_text": source}))["load_id"]
            before = (await t.call("get_source", {"load_id": lid}))["source"]
            caught = asyncio.create_task(
                t.call("run_goal", {"load_id": lid, "goal": "catch(r, _, r)", "time_limit": 1})
            )
            await asyncio.sleep(0.3)
            second = await t.call("run_goal", {"load_id": lid, "goal": "ok(X)"})
            first = await caught
            assert first["outcome"] == "timeout" and first["elapsed_s"] < 1.5, first
            assert second["outcome"] == "success" and second["answers"] == [{"X": 1}], second
            await cancel_then_ask(t, lid, after_s=0.5)
            assert (await t.call("get_source", {"load_id": lid}))["source"] == before

    asyncio.run(main())


def test_quick_argument_check_never_accepts_what_the_schema_refuses() -> None:
    import random

    from symbolkg.jobs.servers.mcp.tools import TOOLS, quick_check

    values = [
        None,
        True,
        False,
        0,
        1,
        -1,
        1.0,
        0.5,
        3600,
        3601,
        10_001,
        float("inf"),
        float("nan"),
        "",
        "x",
        "swi",
        "info",
        "s_1",
        "Ab",
        "a" * 70,
        "1a",
        "ok\n",
        [],
        {},
        "prolog",
    ]
    rng = random.Random(30)
    accepted = 0
    for tool in TOOLS:
        full = jsonschema.Draft202012Validator(tool.input_schema)
        quick = quick_check(tool.input_schema)
        names = [*tool.input_schema["properties"], "unknown"]
        for _ in range(2000):
            args = {k: rng.choice(values) for k in rng.sample(names, rng.randint(0, len(names)))}
            if quick(args):
                accepted += 1
                assert full.is_valid(args), (tool.name, args)
    assert accepted > 100  # the quick check does accept the common case
    run_goal = quick_check(next(t for t in TOOLS if t.name == "run_goal").input_schema)
    assert run_goal({"load_id": "s-1", "goal": "p(X)", "max_answers": 1, "time_limit": 2.0})
    assert not run_goal({"load_id": "s-1", "goal": "p(X)", "time_limit": 0})  # the full validator words the error


# ---------------------------------------------------------------------------------- start-up


def _initialize(version: str, **params: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
            **params,
        },
    }


def _handshake(request: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """Start ``symbolkg mcp serve``, send ``request``, ``initialized`` and ``tools/list``: its replies and stderr."""
    proc = subprocess.Popen(
        SERVER_CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, text=True
    )
    try:
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}) + "\n")
        proc.stdin.flush()
        listed = json.loads(proc.stdout.readline())  # before closing stdin: at EOF the SDK drops what is in flight
        proc.stdin.close()
        rest = [listed, *(json.loads(line) for line in proc.stdout)]
        return first, rest, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_initialize_is_answered_early_exactly_as_the_sdk_answers_it() -> None:
    """Over stdio the server answers ``initialize`` before it imports the SDK (:mod:`symbolkg.jobs.servers.mcp.start`).

    The SDK then gets the same request: its own reply is compared with the early one (a difference
    is logged on stderr) and dropped, so the client sees one reply, and the connection works on.
    Every handshake version the early path answers is checked against the SDK's reply to the same
    request with an empty ``_meta``, which the early path leaves to the SDK.
    """
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from symbolkg.jobs.servers.mcp.start import HANDSHAKE_VERSIONS

    assert set(HANDSHAKE_VERSIONS) <= set(HANDSHAKE_PROTOCOL_VERSIONS)
    for version in HANDSHAKE_VERSIONS:
        early, rest, stderr = _handshake(_initialize(version))
        by_sdk, _, _ = _handshake(_initialize(version, _meta={}))
        assert early == by_sdk and early["result"]["protocolVersion"] == version, (early, by_sdk)
        assert [r.get("id") for r in rest] == [8] and len(rest[0]["result"]["tools"]) == len(ALL_TOOLS), rest
        assert "answers" not in stderr, stderr  # the early reply and the SDK's agreed
    unknown, rest, _ = _handshake(_initialize("1999-01-01"))  # the SDK negotiates: its latest version
    assert unknown["result"]["protocolVersion"] == HANDSHAKE_PROTOCOL_VERSIONS[-1] and [r["id"] for r in rest] == [8]


def test_early_initialize_is_declined_where_it_could_differ_and_the_sdks_reply_is_dropped_once() -> None:
    import logging

    import anyio

    from symbolkg.jobs.servers.mcp.start import PipeWriter, initialize_result

    good = _initialize("2025-06-18")
    assert initialize_result(good)["protocolVersion"] == "2025-06-18"
    declined = [
        _initialize("2026-07-28"),
        _initialize("2025-06-18", _meta={}),
        [good],
        {**good, "id": True},
        {**good, "params": {**good["params"], "clientInfo": {"name": "t"}}},
        {**good, "method": "ping"},
    ]
    assert [initialize_result(m) for m in declined] == [None] * len(declined)

    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    writer = PipeWriter(write_fd)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger("symbolkg.jobs.servers.mcp").addHandler(handler)
    try:

        async def main() -> None:
            writer.expect_reply(7, {"a": 1})
            await writer.write('{"jsonrpc":"2.0","method":"notifications/message","params":{}}\n')  # not it: written
            await writer.write('{"jsonrpc":"2.0","id":7,"result":{"a":2}}\n')  # the SDK's: dropped, with a warning
            await writer.write('{"jsonrpc":"2.0","id":7,"result":{"a":2}}\n')  # once only: written

        anyio.run(main)
    finally:
        logging.getLogger("symbolkg.jobs.servers.mcp").removeHandler(handler)
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        lines = f.read().splitlines()
    assert [json.loads(line).get("id") for line in lines] == [None, 7]
    assert len(records) == 1 and "answers" in records[0].getMessage()
