"""An MCP client of ``symbolkg mcp serve`` for the methods: one connection per job, Prolog sessions by program.

:class:`McpConnection` spawns the server (``python -m symbolkg.jobs.cli mcp serve`` over stdio) and
holds one MCP client session to it on a thread with its own event loop: the method reaches the
server exactly as any MCP client does, through the SDK's :class:`mcp.Client`, and never imports the
server (tests/test_layering.py). :class:`SessionCache` consults each distinct program once and
shares its session among the problems that wrote it (see :mod:`symbolkg.jobs.methods.prolog_agent`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

#: tool errors meaning the session is gone (consult again), not that the program is wrong.
_SESSION_GONE = frozenset({"session_not_found", "session_evicted", "session_expired", "session_lost"})


# -- the connection ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One MCP tool call as the agent saw it.

    Attributes:
        tool: the tool's name.
        ok: the result's ``ok`` (False also when the call itself failed).
        seconds: round trip, client side.
        data: the result's ``structuredContent`` (``{}`` when the call failed).
        error: ``{kind, message, prolog_term}`` when not ok.
    """

    tool: str
    ok: bool
    seconds: float
    data: dict[str, Any]
    error: dict[str, Any] | None

    def log(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"tool": self.tool, "ok": self.ok, "seconds": round(self.seconds, 4)}
        if self.error:
            entry["error"] = self.error.get("kind")
        return entry


class McpConnection:
    """An MCP client session to a ``symbolkg mcp serve`` child, on a thread with its own event loop.

    Callers on any event loop ``await connection.call(tool, arguments)``; the calls are sent
    concurrently over the one session. :meth:`close` (synchronous, idempotent) closes the
    session, which ends the server, and joins the thread.

    Args:
        max_sessions: the server's session cap (its ``--max-sessions``; LRU eviction beyond it).
        startup_timeout_s: seconds allowed for the server to start and the handshake to end.
    """

    transport = "stdio"

    def __init__(self, *, max_sessions: int = 256, startup_timeout_s: float = 60.0) -> None:
        self.max_sessions = max_sessions
        self._loop = asyncio.new_event_loop()
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._client: Any = None
        self._closed = False
        self._thread = threading.Thread(target=self._main, name="mcp-client", daemon=True)
        self._thread.start()
        try:
            self._ready.result(timeout=startup_timeout_s)
        except BaseException:
            self.close()
            raise

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        self._stop = asyncio.Event()
        try:
            serve = ["-m", "symbolkg.jobs.cli", "mcp", "serve", "--max-sessions", str(self.max_sessions)]
            client = Client(StdioServerParameters(command=sys.executable, args=serve))
            async with client:
                self._client = client
                self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to the starting thread, or logged at close
            if not self._ready.done():
                self._ready.set_exception(exc)
            elif not isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
                print(f"[prolog-agent] the MCP connection ended with an error: {exc!r}", file=sys.stderr)
        finally:
            self._client = None

    def submit(self, coro_fn: Callable[[], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Run ``coro_fn()`` on the connection's loop; a concurrent future of its result."""
        if self._closed:
            raise RuntimeError("the MCP connection is closed")
        return asyncio.run_coroutine_threadsafe(coro_fn(), self._loop)  # type: ignore[arg-type]

    async def run(self, coro_fn: Callable[[], Awaitable[T]]) -> T:
        """Await ``coro_fn()`` run on the connection's loop, from any loop."""
        return await asyncio.wrap_future(self.submit(coro_fn))

    async def call_here(self, tool: str, arguments: dict[str, Any]) -> ToolCall:
        """One tool call; must run on the connection's loop (see :meth:`call`)."""
        t0 = time.perf_counter()
        try:
            if self._client is None:
                raise RuntimeError("the MCP connection is not open")
            result = await self._client.call_tool(tool, arguments)
        except Exception as exc:  # noqa: BLE001 - a failed call is data for the row, the session may live on
            return ToolCall(
                tool,
                False,
                time.perf_counter() - t0,
                {},
                {"kind": "transport_error", "message": f"{type(exc).__name__}: {exc}", "prolog_term": None},
            )
        seconds = time.perf_counter() - t0
        data = result.structured_content
        if data is None:  # a server that sends JSON text only
            text = "".join(getattr(c, "text", "") for c in result.content)
            try:
                data = json.loads(text)
            except ValueError:
                data = {"ok": not result.is_error, "error": {"kind": "execution_exception", "message": text}}
        ok = bool(data.get("ok", not result.is_error)) and not result.is_error
        error = None if ok else dict(data.get("error") or {"kind": "execution_exception", "message": str(data)})
        return ToolCall(tool, ok, seconds, data, error)

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolCall:
        """One tool call from any loop."""
        return await self.run(lambda: self.call_here(tool, arguments))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._stop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)


# -- consulted programs, shared -------------------------------------------------------------------


@dataclass
class _Entry:
    """A consulted program: its session, once ``ready`` is set; ``users`` problems use it now."""

    ready: asyncio.Event = field(default_factory=asyncio.Event)
    load_id: str | None = None
    consult: ToolCall | None = None
    users: int = 0


@dataclass(frozen=True)
class GoalRun:
    """A goal run on a program's session (:meth:`SessionCache.run_goal`).

    Attributes:
        consult_error: the consult's structured error (then the goal did not run).
        call: the ``run_goal`` call; None after a consult error, or when the session was dropped twice.
        reused: whether the session was consulted before.
    """

    consult_error: dict[str, Any] | None
    call: ToolCall | None
    reused: bool


class SessionCache:
    """Prolog sessions keyed by program text, on the connection's loop (every method runs there).

    :meth:`acquire` consults a program once and hands its ``load_id`` to everyone asking for the
    same text; :meth:`release` returns it, and when nobody uses it, it joins the idle list
    (bounded, least recently used closed first). With ``reuse`` off, every acquire consults
    afresh and release closes.
    """

    def __init__(self, connection: McpConnection, *, reuse: bool, idle: int) -> None:
        self.connection = connection
        self.reuse = reuse
        self.idle_cap = idle
        self._entries: dict[str, _Entry] = {}
        self._idle: OrderedDict[str, None] = OrderedDict()
        self.consults = 0
        self.hits = 0

    async def acquire(self, program: str, calls: list[ToolCall]) -> tuple[_Entry, bool]:
        """The session of ``program`` (consulted now or before) and whether it was reused."""
        if not self.reuse:
            entry = _Entry(users=1)
            await self._consult(program, entry, calls)
            return entry, False
        entry = self._entries.get(program)
        if entry is not None:
            entry.users += 1
            self._idle.pop(program, None)
            await entry.ready.wait()
            self.hits += 1
            return entry, True
        entry = _Entry(users=1)
        self._entries[program] = entry
        await self._consult(program, entry, calls)
        return entry, False

    async def _consult(self, program: str, entry: _Entry, calls: list[ToolCall]) -> None:
        try:
            call = await self.connection.call_here("consult_text", {"source_text": program})
            calls.append(call)
            self.consults += 1
            entry.consult = call
            entry.load_id = call.data.get("load_id") if call.ok else None
        finally:
            entry.ready.set()

    async def invalidate(self, program: str, entry: _Entry) -> None:
        """Forget a session the server no longer has (evicted, expired, lost)."""
        if self._entries.get(program) is entry:
            del self._entries[program]
        self._idle.pop(program, None)

    async def release(self, program: str, entry: _Entry, calls: list[ToolCall]) -> None:
        entry.users -= 1
        if not self.reuse or self._entries.get(program) is not entry:
            if entry.users <= 0 and entry.load_id is not None:
                calls.append(await self.connection.call_here("close_session", {"load_id": entry.load_id}))
            return
        if entry.users > 0:
            return
        self._idle[program] = None
        self._idle.move_to_end(program)
        while len(self._idle) > self.idle_cap:
            old, _ = self._idle.popitem(last=False)
            stale = self._entries.pop(old, None)
            if stale is not None and stale.load_id is not None:
                calls.append(await self.connection.call_here("close_session", {"load_id": stale.load_id}))

    async def run_goal(self, program: str, arguments: dict[str, Any], calls: list[ToolCall]) -> GoalRun:
        """``run_goal`` with ``arguments`` on the session of ``program`` (consulted now or before).

        A session the server dropped meanwhile (evicted, expired, lost) is consulted again once,
        transparently; the session is released after the call.
        """
        for _ in range(2):  # a second time only when the server dropped a reused session
            entry, reused = await self.acquire(program, calls)
            try:
                error = consult_errors(entry.consult) if entry.consult else {"kind": "no_consult"}
                if error is not None:
                    return GoalRun(error, None, reused)
                call = await self.connection.call_here("run_goal", {"load_id": entry.load_id, **arguments})
                calls.append(call)
                if not call.ok and call.error and call.error.get("kind") in _SESSION_GONE and reused:
                    await self.invalidate(program, entry)
                    continue
                return GoalRun(None, call, reused)
            finally:
                await self.release(program, entry, calls)
        return GoalRun(None, None, True)

    async def close_all(self) -> None:
        for entry in list(self._entries.values()):
            if entry.load_id is not None:
                await self.connection.call_here("close_session", {"load_id": entry.load_id})
        self._entries.clear()
        self._idle.clear()


def consult_errors(call: ToolCall) -> dict[str, Any] | None:
    """The structured error of a consult: the call's, or its error-severity messages (None if clean)."""
    if not call.ok:
        return call.error
    errors = [m for m in call.data.get("messages", []) if m.get("severity") == "error"]
    if not errors:
        return None
    text = "; ".join(
        f"line {m.get('line')}: {m.get('message')}" if m.get("line") else str(m.get("message")) for m in errors[:5]
    )
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return {"kind": errors[0].get("kind") or "syntax_error", "message": text + more, "prolog_term": None}
