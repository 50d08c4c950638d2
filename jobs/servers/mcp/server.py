"""The Prolog MCP server: the :data:`~.tools.TOOLS` over the session layer, results as structured data.

See the package's docstring (:mod:`symbolkg.jobs.servers.mcp`) for the layers of one call."""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Self, TypeVar

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server

from symbolkg.jobs.servers.mcp.start import (
    INSTRUCTIONS,
    SERVER_NAME,
    SERVER_TITLE,
    SERVER_VERSION,
    ServerConfig,
)
from symbolkg.solvers.outcomes import Limits, SolveRequest
from symbolkg.solvers.prolog.session import (
    PendingRun,
    PrologSession,
    PrologToolError,
    SessionLimits,
)
from symbolkg.solvers.prolog.session_registry import SessionRegistry

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from symbolkg.solvers.runtime.local_pool import LocalSolverPool
from symbolkg.jobs.servers.mcp.tools import (
    CONSULT_RESULT,
    GOAL_RESULT,
    SESSION_ROW,
    TOOL_NAMES,
    TOOLS,
    ToolSpec,
    quick_check,
)

log = logging.getLogger(__name__)
T = TypeVar("T")


#: Longest goal sent from the event loop (a longer one is written to the pipe from a worker thread,
#: so that a full pipe never blocks the loop).
INLINE_GOAL_CHARS = 16_384


# ------------------------------------------------------------------------------------------- results


def ok_result(data: dict[str, Any]) -> types.CallToolResult:
    """A successful tool result: ``{"ok": true, ...}`` as structuredContent and as JSON text."""
    payload = {"ok": True, **data}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload))], structured_content=payload
    )


def error_result(kind: str, message: str, prolog_term: str | None = None) -> types.CallToolResult:
    """A failed tool result: ``isError`` with ``{"ok": false, "error": {...}}`` (structured and as text)."""
    payload = {"ok": False, "error": {"kind": kind, "message": message, "prolog_term": prolog_term}}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(payload))], structured_content=payload, is_error=True
    )


def _pick(d: dict[str, Any], keys: dict[str, Any]) -> dict[str, Any]:
    """The fields of a session result that the tool publishes (drops anything else the layer adds)."""
    return {k: d[k] for k in keys if k in d}


# -------------------------------------------------------------------------------------------- server


class PrologMCPServer:
    """The tools of :data:`TOOLS` over a :class:`SessionRegistry`; :attr:`server` is the SDK server.

    One instance serves any number of MCP connections (stdio: one; HTTP: many); they
    share its sessions. Call :meth:`close` when done (kills every session and the
    solver pool), or use it as a context manager. In process, the SDK's client takes
    the SDK server directly::

        with PrologMCPServer(ServerConfig(max_sessions=8)) as app:
            async with mcp.Client(app.server) as client:
                await client.call_tool("consult_text", {"source_text": "p(1)."})

    Args:
        config: limits and intervals, see :class:`ServerConfig`.
        registry: an existing registry (tests); by default one is built from ``config``.
    """

    def __init__(self, config: ServerConfig = ServerConfig(), *, registry: SessionRegistry | None = None) -> None:
        self.config = config
        self.registry = registry or SessionRegistry(
            max_sessions=config.max_sessions,
            idle_ttl_s=config.idle_ttl_s,
            limits=SessionLimits(memory_mb=config.memory_mb),
            reap_interval_s=config.reap_interval_s,
        )
        self._specs = {t.name: t for t in TOOLS}
        self._tools = [t.to_tool() for t in TOOLS]
        self._defaults = {t.name: t.defaults() for t in TOOLS}
        self._validators: dict[str, Any] = {}  # built on first need (_validator): most calls pass the quick check
        self._quick_checks = {t.name: quick_check(t.input_schema) for t in TOOLS}
        self._handlers: dict[str, Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]]] = {
            "consult_text": self._consult_text,
            "run_goal": self._run_goal,
            "next_answers": self._next_answers,
            "inspect_predicate": self._inspect_predicate,
            "get_source": self._get_source,
            "replace_predicate": self._replace_predicate,
            "add_clauses": self._add_clauses,
            "list_messages": self._list_messages,
            "run_tests": self._run_tests,
            "trace_goal": self._trace_goal,
            "close_session": self._close_session,
            "list_sessions": self._list_sessions,
            "solve_program": self._solve_program,
        }
        if set(self._handlers) != set(self._specs):
            raise RuntimeError("every tool needs a handler")  # a bug of ours, caught at start
        # Enough threads for every session to run at once, plus room for list/solve calls.
        self._limiter = anyio.CapacityLimiter(config.max_sessions + 8)
        self._pool: LocalSolverPool | None = None
        self._pool_lock = threading.Lock()
        self._solve_ids = itertools.count(1)
        self._closed = False
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=SERVER_VERSION,
            title=SERVER_TITLE,
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=lambda name: self._specs[name].input_schema if name in self._specs else None,
        )

    # ----------------------------------------------------------------------------- MCP handlers

    async def _list_tools(
        self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools)

    async def _call_tool(self, ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = self._specs.get(params.name)
        if spec is None:
            return error_result("bad_argument", f"unknown tool {params.name!r}; known: {', '.join(TOOL_NAMES)}")
        args = dict(params.arguments or {})
        if not self._quick_checks[spec.name](args) and not (validator := self._validator(spec)).is_valid(args):
            problems = sorted(validator.iter_errors(args), key=lambda e: list(e.path))
            return error_result(
                "bad_argument",
                f"{spec.name}: "
                + "; ".join(f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in problems[:5]),
            )
        args = {**self._defaults[spec.name], **args}
        try:
            data = await self._handlers[spec.name](ctx, args)
        except PrologToolError as exc:
            return error_result(exc.kind, exc.message, exc.prolog_term)
        except Exception as exc:
            log.exception("tool %s failed", spec.name)
            return error_result("internal_error", f"{type(exc).__name__}: {exc}")
        return ok_result(data)

    # ----------------------------------------------------------------------------- plumbing

    def _validator(self, spec: ToolSpec) -> Any:
        """The full ``jsonschema`` validator of a tool's arguments, for what :func:`quick_check` is not sure of."""
        if spec.name not in self._validators:
            import jsonschema  # ~0.1 s to import: not at start, where it would delay the first answer (mcp_start)

            self._validators[spec.name] = jsonschema.Draft202012Validator(spec.input_schema)
        return self._validators[spec.name]

    async def _long(
        self,
        ctx: ServerRequestContext | None,
        call: Callable[[], Awaitable[T]],
        *,
        on_cancel: Callable[[], None] | None = None,
        total_s: float | None = None,
        label: str = "",
    ) -> T:
        """Await ``call()`` while sending progress, and run ``on_cancel`` if the request is cancelled.

        A progress notification (elapsed seconds, of ``total_s`` when known) goes out every
        ``progress_interval_s`` while the call runs, if the request carried a progress token.
        (Without one no reporter task is started: it would cost ~0.3 ms per call for nothing.
        An in-process SDK client passes its progress callback without a token, so it gets
        no progress.)
        """
        wants_progress = ctx is not None and "progress_token" in (ctx.meta or {})
        t0 = time.monotonic()

        async def report() -> None:
            while True:
                await anyio.sleep(self.config.progress_interval_s)
                elapsed = time.monotonic() - t0
                try:
                    await ctx.session.report_progress(elapsed, total_s, f"{label} running for {elapsed:.1f} s")
                except Exception:  # noqa: BLE001 - a client gone mid-call must not fail the call
                    return

        if not wants_progress:
            try:
                return await call()
            except anyio.get_cancelled_exc_class():
                if on_cancel is not None:
                    on_cancel()
                raise
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(report)
            try:
                result = await call()
            except anyio.get_cancelled_exc_class():
                if on_cancel is not None:
                    on_cancel()
                raise
            except Exception as exc:  # noqa: BLE001 - re-raised below, outside the task group (no ExceptionGroup)
                failure = exc
            finally:
                tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return result

    async def _blocking(
        self,
        ctx: ServerRequestContext | None,
        fn: Callable[[], T],
        *,
        on_cancel: Callable[[], None] | None = None,
        total_s: float | None = None,
        label: str = "",
    ) -> T:
        """Run a blocking call in a worker thread (see :meth:`_long` for progress and cancellation).

        A cancelled request abandons the thread at once; ``on_cancel`` makes the thread's call
        end soon (its result then goes to nobody).
        """
        return await self._long(
            ctx,
            lambda: anyio.to_thread.run_sync(fn, abandon_on_cancel=True, limiter=self._limiter),
            on_cancel=on_cancel,
            total_s=total_s,
            label=label,
        )

    async def _on_session(
        self,
        ctx: ServerRequestContext,
        load_id: str,
        method: Callable[[PrologSession], dict[str, Any]],
        *,
        total_s: float | None = None,
        label: str = "",
    ) -> dict[str, Any]:
        """``method(session)`` for the session ``load_id``, in one worker thread.

        The registry lookup happens in the thread too (it may wait for the registry lock
        while another thread starts a session). A cancelled request cancels the session's
        running goal: calls on one session are serialized, so that goal is this call's.
        """
        found: list[tuple[PrologSession, int]] = []
        cancelled = threading.Event()

        def work() -> dict[str, Any]:
            session = self.registry.get(load_id)
            found.append((session, threading.get_ident()))
            if cancelled.is_set():  # cancelled before the thread got here: run nothing (nobody waits for it)
                raise PrologToolError("execution_exception", "the request was cancelled before it ran")
            return method(session)

        def cancel() -> None:
            # only this request's call: one that still waits for the session's lock must not
            # stop the goal of another request that happens to run on the session first
            cancelled.set()
            if found:
                session, ident = found[0]
                session.cancel(thread_ident=ident)

        return await self._blocking(ctx, work, on_cancel=cancel, total_s=total_s, label=label)

    # ----------------------------------------------------------------------------- tools

    async def _consult_text(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        session = await anyio.to_thread.run_sync(
            lambda: self.registry.create(module_name=a.get("module_name")), limiter=self._limiter
        )
        try:
            out = await self._blocking(
                ctx,
                lambda: session.consult_text(a["source_text"], include_predicates=a["include_predicates"]),
                on_cancel=session.cancel,
                label="consult_text",
            )
        except BaseException:
            # The caller never learns this load_id: do not leave the session behind.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.registry.close, session.load_id)
            raise
        return {
            **_pick(out, CONSULT_RESULT),
            "load_id": session.load_id,
            "module_name": session.module_name,
            "dialect": "swi",
        }

    async def _run_goal(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        run = {"max_answers": a["max_answers"], "time_limit": a["time_limit"], "max_depth": a["max_depth"]}
        pending = self._start_inline(a["load_id"], a["goal"], run)
        if pending is not None:
            out = await self._long(ctx, lambda: await_reply(pending), total_s=a["time_limit"], label="run_goal")
        else:
            out = await self._on_session(
                ctx, a["load_id"], lambda s: s.run_goal(a["goal"], **run), total_s=a["time_limit"], label="run_goal"
            )
        return _pick(out, GOAL_RESULT)

    def _start_inline(self, load_id: str, goal: str, run: dict[str, Any]) -> PendingRun | None:
        """Start ``goal`` from the event loop if its session is live and idle, else None (nothing sent)."""
        if len(goal) > INLINE_GOAL_CHARS:
            return None
        session = self.registry.peek(load_id)
        return None if session is None else session.start_run_goal(goal, **run)

    async def _next_answers(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        out = await self._on_session(
            ctx, a["load_id"], lambda s: s.next_answers(a["cursor"], max_answers=a["max_answers"]), label="next_answers"
        )
        return _pick(out, GOAL_RESULT)

    async def _inspect_predicate(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        out = await self._on_session(ctx, a["load_id"], lambda s: s.inspect_predicate(a["name"], a["arity"]))
        return _pick(out, self._specs["inspect_predicate"].result)

    async def _get_source(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        out = await self._on_session(ctx, a["load_id"], lambda s: s.get_source())
        return {
            "source": out.get("source_text", out.get("source", "")),
            **({"clause_count": out["clause_count"]} if "clause_count" in out else {}),
        }

    async def _replace_predicate(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        out = await self._on_session(
            ctx, a["load_id"], lambda s: s.replace_predicate(a["name"], a["arity"], a["source_text"])
        )
        return {**_pick(out, self._specs["replace_predicate"].result), "predicate": f"{a['name']}/{a['arity']}"}

    async def _add_clauses(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        out = await self._on_session(
            ctx, a["load_id"], lambda s: {**s.add_clauses(a["source_text"]), "module_name": s.module_name}
        )
        return {**_pick(out, self._specs["add_clauses"].result), "load_id": a["load_id"]}

    async def _list_messages(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        return _pick(
            await self._on_session(ctx, a["load_id"], lambda s: s.list_messages(a["min_severity"])),
            self._specs["list_messages"].result,
        )

    async def _run_tests(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        out = await self._on_session(
            ctx,
            a["load_id"],
            lambda s: s.run_tests(a.get("test_source_text"), time_limit=a["time_limit"]),
            total_s=a["time_limit"],
            label="run_tests",
        )
        out = _pick(out, self._specs["run_tests"].result)
        out.setdefault("total", out["passed"] + out["failed"] + out["skipped"])
        return out

    async def _trace_goal(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        out = await self._on_session(
            ctx,
            a["load_id"],
            lambda s: s.trace_goal(
                a["goal"], max_depth=a["max_depth"], max_nodes=a["max_nodes"], time_limit=a["time_limit"]
            ),
            total_s=a["time_limit"],
            label="trace_goal",
        )
        out = _pick(out, self._specs["trace_goal"].result)
        out["truncated"] = bool(out.get("depth_cut")) or bool(out.get("node_cut"))
        return out

    async def _close_session(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        def close() -> bool:
            self.registry.get(a["load_id"])  # an evicted / expired / lost session says so, like every tool
            return self.registry.close(a["load_id"])

        return {"closed": bool(await anyio.to_thread.run_sync(close, limiter=self._limiter))}

    async def _list_sessions(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        rows = await anyio.to_thread.run_sync(self.registry.list, limiter=self._limiter)
        rows = [_pick(r, SESSION_ROW["properties"]) for r in rows]
        return {
            "sessions": rows,
            "count": len(rows),
            "max_sessions": self.config.max_sessions,
            "idle_ttl_s": self.config.idle_ttl_s,
        }

    async def _solve_program(self, ctx: ServerRequestContext, a: dict[str, Any]) -> dict[str, Any]:
        pool = await anyio.to_thread.run_sync(self._solver_pool, limiter=self._limiter)
        request = SolveRequest(
            problem_id=f"mcp-{next(self._solve_ids)}",
            language=a["language"],
            text=a["program"],
            limits=Limits(timeout_s=float(a["time_limit"]), memory_mb=self.config.solver_memory_mb),
        )
        result = await self._long(ctx, lambda: pool.solve(request), total_s=a["time_limit"], label="solve_program")
        return {**_pick(result.outcome.to_dict(), self._specs["solve_program"].result), "language": a["language"]}

    def _solver_pool(self) -> LocalSolverPool:
        # lazy: the worker pool starts with the first solve_program call, not with every server
        from symbolkg.solvers.runtime.local_pool import LocalSolverPool

        with self._pool_lock:
            if self._closed:
                raise PrologToolError("resource_error", "the server is shutting down", None)
            if self._pool is None:
                self._pool = LocalSolverPool(self.config.solver_workers, memory_mb=self.config.solver_memory_mb)
            return self._pool

    # ----------------------------------------------------------------------------- lifetime

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every session and the solver pool. Idempotent."""
        with self._pool_lock:
            self._closed = True
            pool, self._pool = self._pool, None
        self.registry.close_all()
        if pool is not None:
            pool.close()


async def await_reply(pending: PendingRun) -> dict[str, Any]:
    """The result of a goal started from the event loop, read when the session's pipe is readable.

    Same limits as the worker-thread path: at the pending run's deadline (its ``time_limit`` plus
    the kill grace) the process is killed (``session_lost``). If the request is cancelled (or this
    coroutine ends any other way before the reply), the goal is told to stop and a daemon thread
    reads its reply (outcome ``cancelled``), which frees the session for the next call.
    """
    try:
        while (out := pending.poll()) is None:
            left = pending.deadline - time.monotonic()
            if left <= 0:
                raise pending.expire()
            with anyio.move_on_after(left):
                await anyio.wait_readable(pending.fileno())
        return out
    except BaseException:
        if not pending.done:
            pending.cancel()
            threading.Thread(target=_drain, args=(pending,), name="prolog-cancelled-goal", daemon=True).start()
        raise


def _drain(pending: PendingRun) -> None:
    try:
        pending.wait()
    except PrologToolError:
        pass  # the reply of a cancelled request goes to nobody
