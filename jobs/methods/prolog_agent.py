"""The formalizer agent of PrologMCP (arXiv 2606.14935): a model writes Prolog, an MCP server runs it.

Per problem (one PARARULE-Plus question, say), up to ``--prolog-agent-max-attempts`` times:

1. the model answers the prompt of :mod:`symbolkg.solvers.prolog.pararule` with
   ``<prolog>`` (the knowledge base of the context) and ``<goal_true>`` (a goal that succeeds
   iff the statement is true);
2. the agent loads the program with the ``consult_text`` tool and runs the goal with
   ``run_goal`` through a real MCP client session against ``symbolkg mcp serve``
   (:mod:`symbolkg.jobs.mcp_server`);
3. success -> "true" (option A), failure -> "false" (option B); a malformed answer, a program
   whose consult reports an error, a goal that raises (``syntax_error``, ``existence_error``,
   ...) or does not finish (``timeout``, ``depth_exceeded``) goes back to the model, the
   structured error in the next user turn, and the next attempt begins. The repair request is
   the first request, the model's last answer and its error (not the whole history), so five
   attempts fit a small model's context.

**One MCP connection per job.** The client (and, with the default ``inprocess`` transport,
the server) runs on a thread of its own with its own event loop, started on the first problem
and stopped by :meth:`PrologAgent.close`; every problem in flight sends its tool calls through
it (MCP requests are multiplexed on the one session). ``inprocess`` speaks JSON-RPC over the
SDK's in-memory streams to a :class:`~symbolkg.jobs.mcp_server.PrologMCPServer` in this
process; ``stdio`` spawns ``python -m symbolkg.jobs.cli mcp serve`` and speaks over its pipes.
Both are the SDK's own :class:`mcp.Client`, so the agent sees exactly what any MCP client sees.

**One Prolog session per distinct program.** The questions of a context share its program
(the translator writes the same text for each; a model at temperature 0 mostly does too), so a
program text that is already consulted is reused instead of consulted again: concurrent
questions with the same program wait for one ``consult_text``, and up to
``--prolog-agent-idle-sessions`` consulted programs nobody uses are kept open (least recently
used closed first with ``close_session``; all closed when the job ends). A session the server
evicted or expired meanwhile is consulted again, transparently (not an attempt).
``--prolog-agent-no-reuse`` gives every attempt its own session, closed after it. Reuse assumes
a goal does not change the knowledge base (an ``assert`` in a model's goal would leak into the
next question's run on that session; PARARULE-Plus goals are plain queries).

**Plain SLDNF beside it** (the paper's Sample B). When the translator reads the problem (a
PARARULE-Plus question), the agent also runs the translator's *closure* encoding (negation over
everything derivable in rule bodies too, no tabling) through the same MCP connection, in a
session of its own (shared per context like the others), with a short time and depth limit,
and records ``sldnf_closure`` in the row's trace: ``same`` (it gives the gold label),
``different`` (it answers the other way) or ``loops`` (it ran out of its inference budget, or of
time);
``None`` when the translator cannot read the problem. It is a property of the question, not
of the model's program, so it is the same whichever engine runs.

**Certificates.** SWI-Prolog through MCP gives a verdict, not a proof. When the job has a
solver pool (``symbolkg solve`` starts one for this method), the program that ran (knowledge
base and goal) is rewritten into the ``symba`` language (:func:`symbolkg.solvers.symba.syntax.from_prolog`:
declarations dropped, a conjunctive goal named by a clause; text only, in the orchestrator) and
solved by SymBa's prover in a worker. If it gives the same answer, its proof-tree certificate
goes into the row (``symbolkg verify`` re-checks it with a bottom-up evaluator: neither SWI-Prolog
nor SymBa's search); if it cannot read the program (cuts, lists, ``;``) or answers otherwise, the
row keeps SWI-Prolog's answer without a certificate and ``trace.rederived`` says why.

Rows: ``program`` is the last program the model wrote with its goal as a final ``?- goal.`` line
(what ran), ``attempts_log`` one object per attempt
(completion, program, goal, stage reached, tool error, outcome), ``trace`` the agent's MCP calls
(``mcp_calls``: tool, ok, seconds, error kind), how many attempts reused a consulted session, and
the SLDNF comparison (``sldnf_closure``, with its own MCP calls under ``sldnf``), ``stage_seconds``
LLM / MCP / SLDNF time; tokens and LLM seconds come from the ledger as in every method.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, TypeVar

from symbolkg.actors.engines.base import EngineDeadError, EngineError, SamplingParams
from symbolkg.jobs.methods.base import Method, MethodContext
from symbolkg.jobs.pipeline.answers import interpret
from symbolkg.jobs.pipeline.rows import Problem, ResultRow
from symbolkg.solvers.outcomes import ErrorKind, Outcome, ProgramError, SolveRequest, Status
from symbolkg.solvers.prolog import pararule as P
from symbolkg.solvers.symba import syntax as symba

T = TypeVar("T")
LANGUAGE = "prolog"
BACKEND = "swipl-mcp"
Transport = Literal["inprocess", "stdio"]

#: run_goal outcomes that are a verdict; the others (timeout, depth_exceeded, cancelled) are not.
_VERDICTS = {"success": "True", "failure": "False"}
#: most characters of the model's previous answer repeated in a repair request.
_ECHO_CHARS = 6000
#: tool errors meaning the session is gone (consult again), not that the program is wrong.
_SESSION_GONE = frozenset({"session_not_found", "session_evicted", "session_expired", "session_lost"})


@dataclass(frozen=True)
class PrologAgentConfig:
    """The method's own settings (its ``--prolog-agent-*`` flags).

    Attributes:
        max_attempts: programs the model may write per problem (the first and its repairs).
        transport: ``inprocess`` (an MCP server in this process, JSON-RPC over memory streams)
            or ``stdio`` (spawn ``python -m symbolkg.jobs.cli mcp serve``).
        max_tokens: most tokens of one answer of the model.
        time_limit_s: ``run_goal``'s time limit for the model's goal.
        max_depth: ``run_goal``'s recursion depth limit for the model's goal.
        sldnf: also run the plain SLDNF encoding of the question and report how it differs.
        sldnf_inferences: inferences the plain SLDNF goal may use; past them it "loops" (a loop
            uses a million in ~0.1 s; no proof of a PARARULE-Plus question needs a thousandth of it).
        sldnf_time_limit_s, sldnf_max_depth: backstops of that run, set above what the inference
            limit allows (a depth limit alone would hide a loop under a negation).
        reuse_sessions: share one Prolog session among the problems whose program text is identical.
        idle_sessions: consulted programs kept open for reuse while no problem uses them.
        max_sessions: the in-process server's session cap (LRU eviction beyond it).
    """

    max_attempts: int = 5
    transport: Transport = "inprocess"
    max_tokens: int = 2048
    time_limit_s: float = 10.0
    max_depth: int = 1_000_000
    sldnf: bool = True
    sldnf_time_limit_s: float = 10.0
    sldnf_inferences: int = 1_000_000
    sldnf_max_depth: int = 100_000_000
    reuse_sessions: bool = True
    idle_sessions: int = 16
    max_sessions: int = 256

    def __post_init__(self) -> None:
        if self.transport not in ("inprocess", "stdio"):
            raise ValueError(f"--prolog-agent-transport must be 'inprocess' or 'stdio', got {self.transport!r}")
        for name in ("max_attempts", "max_tokens", "max_depth", "sldnf_inferences", "sldnf_max_depth", "max_sessions"):
            if getattr(self, name) < 1:
                raise ValueError(f"--prolog-agent-{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        if self.idle_sessions < 0:
            raise ValueError(f"--prolog-agent-idle-sessions must be >= 0, got {self.idle_sessions}")
        for name in ("time_limit_s", "sldnf_time_limit_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"--prolog-agent-{name.replace('_s', '').replace('_', '-')} must be > 0 seconds")


# -- the MCP connection ---------------------------------------------------------------------------


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
    """An MCP client session (and, in-process, its server) on a thread with its own event loop.

    Callers on any event loop ``await connection.call(tool, arguments)``; the calls are sent
    concurrently over the one session. :meth:`close` (synchronous, idempotent) closes the
    session, stops the server and joins the thread.

    Args:
        transport: ``inprocess`` or ``stdio`` (see :class:`PrologAgentConfig`).
        max_sessions: the in-process server's session cap.
        startup_timeout_s: seconds allowed for the server to start and the handshake to end.
    """

    def __init__(
        self, transport: Transport = "inprocess", *, max_sessions: int = 256, startup_timeout_s: float = 60.0
    ) -> None:
        self.transport = transport
        self.max_sessions = max_sessions
        self._loop = asyncio.new_event_loop()
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._client: Any = None
        self._server: Any = None
        self._closed = False
        self._thread = threading.Thread(target=self._main, name=f"mcp-client-{transport}", daemon=True)
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

        self._stop = asyncio.Event()
        try:
            if self.transport == "inprocess":
                # the server (MCP SDK): this transport only
                from symbolkg.jobs.mcp_server import PrologMCPServer, ServerConfig

                self._server = PrologMCPServer(ServerConfig(max_sessions=self.max_sessions))
                # legacy mode: the initialize handshake and JSON-RPC over the SDK's in-memory streams
                client = Client(self._server.server, mode="legacy")
            else:
                from mcp.client.stdio import StdioServerParameters

                params = StdioServerParameters(command=sys.executable, args=["-m", "symbolkg.jobs.cli", "mcp", "serve"])
                client = Client(params)
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
            if self._server is not None:
                await asyncio.to_thread(self._server.close)

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

    async def close_all(self) -> None:
        for entry in list(self._entries.values()):
            if entry.load_id is not None:
                await self.connection.call_here("close_session", {"load_id": entry.load_id})
        self._entries.clear()
        self._idle.clear()


# -- the method -----------------------------------------------------------------------------------


def _consult_errors(call: ToolCall) -> dict[str, Any] | None:
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


class PrologAgent(Method):
    """The model writes a Prolog knowledge base and a goal; an MCP server's Prolog sessions run them."""

    name = "prolog-agent"
    summary = "the PrologMCP formalizer: the model writes <prolog> and <goal_true>, run through an MCP server"
    needs_solver = False
    wants_solver = True  # re-derives each verdict with SymBa for a certificate (module docstring)

    def __init__(self, config: PrologAgentConfig | None = None) -> None:
        self.config = config or PrologAgentConfig()
        self._connection: McpConnection | None = None
        self._sessions: SessionCache | None = None
        self._start_lock = threading.Lock()
        self._closed = False

    @classmethod
    def add_arguments(cls, g: argparse._ArgumentGroup) -> None:
        d = PrologAgentConfig()
        g.add_argument(
            "--prolog-agent-max-attempts",
            type=int,
            default=d.max_attempts,
            help=f"programs the model may write per problem, repairs included (default {d.max_attempts})",
        )
        g.add_argument(
            "--prolog-agent-transport",
            choices=("inprocess", "stdio"),
            default=d.transport,
            help="inprocess: an MCP server in this process over the SDK's memory streams (default); "
            "stdio: spawn `python -m symbolkg.jobs.cli mcp serve`",
        )
        g.add_argument(
            "--prolog-agent-max-tokens",
            type=int,
            default=d.max_tokens,
            help=f"most tokens of one answer of the model (default {d.max_tokens})",
        )
        g.add_argument(
            "--prolog-agent-time-limit",
            type=float,
            default=d.time_limit_s,
            help=f"seconds run_goal may take for the model's goal (default {d.time_limit_s:g})",
        )
        g.add_argument(
            "--prolog-agent-no-sldnf",
            action="store_true",
            help="do not run the plain SLDNF encoding beside (no sldnf_closure in the rows)",
        )
        g.add_argument(
            "--prolog-agent-no-reuse",
            action="store_true",
            help="a Prolog session per attempt instead of one per distinct program",
        )
        g.add_argument(
            "--prolog-agent-idle-sessions",
            type=int,
            default=d.idle_sessions,
            help=f"consulted programs kept open for reuse (default {d.idle_sessions})",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PrologAgent:
        return cls(
            PrologAgentConfig(
                max_attempts=args.prolog_agent_max_attempts,
                transport=args.prolog_agent_transport,
                max_tokens=args.prolog_agent_max_tokens,
                time_limit_s=args.prolog_agent_time_limit,
                sldnf=not args.prolog_agent_no_sldnf,
                reuse_sessions=not args.prolog_agent_no_reuse,
                idle_sessions=args.prolog_agent_idle_sessions,
            )
        )

    def run_info(self) -> dict[str, Any]:
        return asdict(self.config)

    # -- lifetime ---------------------------------------------------------------------------------

    def _open(self) -> tuple[McpConnection, SessionCache]:
        with self._start_lock:
            if self._closed:
                raise RuntimeError("the prolog-agent method is closed")
            if self._connection is None:
                self._connection = McpConnection(self.config.transport, max_sessions=self.config.max_sessions)
                self._sessions = SessionCache(
                    self._connection, reuse=self.config.reuse_sessions, idle=self.config.idle_sessions
                )
            return self._connection, self._sessions  # type: ignore[return-value]

    @property
    def stats(self) -> dict[str, int]:
        """Consults made and reuses of a consulted program so far (this job)."""
        s = self._sessions
        return {"consults": s.consults if s else 0, "reused": s.hits if s else 0}

    def close(self) -> None:
        with self._start_lock:
            if self._closed:
                return
            self._closed = True
            connection, sessions = self._connection, self._sessions
        if connection is None:
            return
        try:
            if sessions is not None:
                connection.submit(sessions.close_all).result(timeout=60)
        except Exception as exc:  # noqa: BLE001 - the server closes every session when it stops anyway
            print(f"[prolog-agent] closing the sessions failed: {exc!r}", file=sys.stderr)
        finally:
            connection.close()

    # -- one problem ------------------------------------------------------------------------------

    async def run(self, problem: Problem, ctx: MethodContext) -> ResultRow:
        t0 = time.monotonic()
        connection, sessions = self._open() if self._connection is not None else await asyncio.to_thread(self._open)
        calls: list[ToolCall] = []
        attempts: list[dict[str, Any]] = []
        seconds = {"llm": 0.0, "mcp": 0.0, "sldnf": 0.0}
        outcome, program, success_round, reused = await self._attempts(
            problem, ctx, connection, sessions, calls, attempts, seconds
        )
        sldnf = await self._sldnf_closure(connection, sessions, problem, seconds) if self.config.sldnf else None
        rederived = None
        if ctx.solver is not None and success_round is not None and program is not None:
            t = time.perf_counter()
            outcome, rederived = await self._rederive(problem, program, outcome, ctx)
            seconds["rederive"] = time.perf_counter() - t
        predicted = interpret(problem, outcome.answer) if outcome.executed else None
        trace = {
            "mcp_transport": self.config.transport,
            "mcp_calls": [c.log() for c in calls],
            "reused_sessions": reused,
            "sldnf_closure": sldnf["verdict"] if sldnf else None,
            "sldnf": sldnf,
            "rederived": rederived,
        }
        return ctx.row(
            problem,
            outcome,
            predicted=predicted,
            program=program,
            language=LANGUAGE,
            rounds=len(attempts),
            success_round=success_round,
            attempts=attempts,
            latency_s=time.monotonic() - t0,
            trace=trace,
            stage_seconds=seconds,
        )

    async def _attempts(
        self,
        problem: Problem,
        ctx: MethodContext,
        connection: McpConnection,
        sessions: SessionCache,
        calls: list[ToolCall],
        attempts: list[dict[str, Any]],
        seconds: dict[str, float],
    ) -> tuple[Outcome, str | None, int | None, int]:
        """Formalize, then repair after each failed consult or goal, up to ``max_attempts`` times.

        Appends each attempt to ``attempts`` and each MCP call to ``calls``, adds the LLM and MCP time to
        ``seconds``. Returns the last outcome, the program that ran last, the attempt that succeeded
        (None if none did) and how many attempts reused a loaded session.
        """
        base = P.formalize_messages(problem.context, problem.question)
        messages = list(base)
        params = SamplingParams(max_tokens=self.config.max_tokens)
        outcome: Outcome | None = None
        program: str | None = None
        success_round: int | None = None
        reused = 0
        for number in range(1, self.config.max_attempts + 1):
            attempt: dict[str, Any] = {"attempt": number}
            attempts.append(attempt)
            request = ctx.chat(
                problem,
                "formalize" if number == 1 else "repair",
                messages,
                params=params,
                request_id=f"{problem.id}/prolog-agent/{number}",
            )
            t = time.perf_counter()
            try:
                completion = await ctx.ask(request)
            except EngineDeadError:
                raise
            except EngineError as exc:
                seconds["llm"] += time.perf_counter() - t
                attempt.update(stage="llm", error={"kind": ErrorKind.LLM.value, "message": str(exc)})
                outcome = Outcome.error(Status.RUNTIME_ERROR, ErrorKind.LLM, str(exc), backend=BACKEND)
                break
            seconds["llm"] += time.perf_counter() - t
            attempt["completion"] = completion.text
            # a repair shows the model its last answer and that answer's error only (not every earlier
            # attempt): the conversation stays within a small model's context
            messages = [*base, ("assistant", completion.text[:_ECHO_CHARS])]
            try:
                form = P.parse_response(completion.text)
            except P.FormatError as exc:
                error = {"kind": "format_error", "message": str(exc), "prolog_term": None}
                attempt.update(stage="format", error=error)
                outcome = Outcome.error(Status.PARSE_ERROR, ErrorKind.NO_ANSWER, str(exc), backend=BACKEND)
                messages.append(("user", P.repair_message("format", error)))
                continue
            program = f"{form.program.rstrip()}\n?- {form.goal.strip().removesuffix('.')}.\n"  # what ran: KB and goal
            attempt.update(program=form.program, goal=form.goal)
            t = time.perf_counter()
            stage, error, result, was_reused = await connection.run(
                lambda form=form: self._consult_and_run(sessions, form, calls)
            )
            seconds["mcp"] += time.perf_counter() - t
            reused += was_reused
            attempt["stage"] = stage
            attempt["reused_session"] = was_reused
            if error is None:
                verdict = _VERDICTS[result["outcome"]]
                attempt["outcome"] = result["outcome"]
                outcome = Outcome(
                    Status.PROVED if verdict == "True" else Status.DISPROVED,
                    answer=verdict,
                    proof=json.dumps(result.get("answers", [])[:1]),
                    seconds=float(result.get("elapsed_s") or 0.0),
                    backend=BACKEND,
                )
                success_round = number
                break
            attempt["error"] = error
            outcome = self._failed(stage, error)
            messages.append(("user", P.repair_message(stage, error)))
        assert outcome is not None  # max_attempts >= 1
        return outcome, program, success_round, reused

    async def _sldnf_closure(
        self, connection: McpConnection, sessions: SessionCache, problem: Problem, seconds: dict[str, float]
    ) -> dict[str, Any] | None:
        """The plain SLDNF run (:meth:`_sldnf`; off with ``--prolog-agent-no-sldnf``), its MCP calls logged.

        Its time goes into ``seconds["sldnf"]``.
        """
        t = time.perf_counter()
        sldnf_calls: list[ToolCall] = []
        sldnf = await connection.run(lambda: self._sldnf(sessions, problem, sldnf_calls))
        if sldnf is not None:
            sldnf["mcp_calls"] = [c.log() for c in sldnf_calls]
        seconds["sldnf"] += time.perf_counter() - t
        return sldnf

    @staticmethod
    async def _rederive(
        problem: Problem, program: str, outcome: Outcome, ctx: MethodContext
    ) -> tuple[Outcome, dict[str, Any]]:
        """SWI-Prolog's verdict re-derived by SymBa's prover in a solver worker, for a certificate.

        The program (knowledge base and ``?- goal.``) is rewritten into the ``symba`` language
        (:func:`symbolkg.solvers.symba.syntax.from_prolog`, text only) and solved in the pool. When SymBa
        gives the same answer, its proof-tree certificate (checked by ``symbolkg verify``'s bottom-up
        evaluator: a third engine) goes into the row; otherwise the row keeps SWI's answer without
        one and the trace says why.
        """
        assert ctx.solver is not None
        try:
            text = symba.from_prolog(program)
        except ProgramError as exc:
            return outcome, {"status": "not_rewritten", "reason": exc.message}
        result = await ctx.solver.solve(SolveRequest(problem.id, "symba", text, ctx.config.limits))
        other = result.outcome
        found = {"status": other.status.value, "answer": other.answer, "seconds": round(other.seconds, 4)}
        if not other.executed:
            return outcome, {**found, "reason": other.error_message or other.status.value}
        if other.answer != outcome.answer:
            return outcome, {**found, "reason": f"SymBa answers {other.answer}, SWI-Prolog {outcome.answer}"}
        return replace(outcome, certificate=other.certificate), found

    @staticmethod
    def _failed(stage: str, error: dict[str, Any]) -> Outcome:
        kind = str(error.get("kind"))
        message = f"{stage}: {kind}: {error.get('message')}"
        if kind in ("timeout", "depth_exceeded"):
            return Outcome.error(Status.TIMEOUT, ErrorKind.TIMEOUT, message, backend=BACKEND)
        if kind == "resource_error":
            return Outcome.error(Status.MEMORY, ErrorKind.MEMORY, message, backend=BACKEND)
        if kind == "syntax_error":
            return Outcome.error(Status.PARSE_ERROR, ErrorKind.SYNTAX, message, backend=BACKEND)
        if kind == "existence_error":
            return Outcome.error(Status.RUNTIME_ERROR, ErrorKind.UNDECLARED, message, backend=BACKEND)
        return Outcome.error(Status.RUNTIME_ERROR, ErrorKind.SOLVER, message, backend=BACKEND)

    async def _consult_and_run(
        self, sessions: SessionCache, form: P.Formalization, calls: list[ToolCall]
    ) -> tuple[str, dict[str, Any] | None, dict[str, Any], bool]:
        """Consult (or reuse) the program and run the goal, on the connection's loop.

        Returns:
            (stage reached, its error or None, run_goal's result, whether the session was reused).
        """
        for _ in range(2):  # a second time only when the server dropped a reused session
            entry, reused = await sessions.acquire(form.program, calls)
            try:
                assert entry.consult is not None
                error = _consult_errors(entry.consult)
                if error is not None:
                    return "consult", error, {}, reused
                call = await sessions.connection.call_here(
                    "run_goal",
                    {
                        "load_id": entry.load_id,
                        "goal": form.goal,
                        "max_answers": 1,
                        "time_limit": self.config.time_limit_s,
                        "max_depth": self.config.max_depth,
                    },
                )
                calls.append(call)
                if not call.ok and call.error and call.error.get("kind") in _SESSION_GONE and reused:
                    await sessions.invalidate(form.program, entry)
                    continue
                if not call.ok:
                    return (
                        "goal",
                        call.error or {"kind": "execution_exception", "message": "no error record"},
                        {},
                        reused,
                    )
                outcome = call.data.get("outcome")
                if outcome not in _VERDICTS:
                    what = {
                        "timeout": f"the goal ran past its time limit of {self.config.time_limit_s:g} s",
                        "depth_exceeded": f"the goal went deeper than {self.config.max_depth} calls (a loop? "
                        "table recursive predicates)",
                    }.get(str(outcome), f"outcome {outcome}")
                    return "goal", {"kind": str(outcome), "message": what, "prolog_term": None}, call.data, reused
                return "goal", None, call.data, reused
            finally:
                await sessions.release(form.program, entry, calls)
        return (
            "goal",
            {"kind": "session_lost", "message": "the session was dropped twice", "prolog_term": None},
            {},
            True,
        )

    async def _sldnf(self, sessions: SessionCache, problem: Problem, calls: list[ToolCall]) -> dict[str, Any] | None:
        """Run the plain SLDNF encoding of the question; None when the translator cannot read it.

        The goal runs under an inference limit (:func:`~symbolkg.solvers.prolog.pararule.sldnf_probe`):
        a depth limit would let a loop under ``\\+`` pass for a verdict.
        """
        try:
            t = P.translate(problem.context, problem.question)
        except P.TranslationError:
            return None
        goal = P.sldnf_probe(t.sldnf_goal, self.config.sldnf_inferences)
        for _ in range(2):
            entry, reused = await sessions.acquire(t.sldnf_program, calls)
            try:
                error = _consult_errors(entry.consult) if entry.consult else {"kind": "no_consult"}
                if error is not None:
                    return {"verdict": "error", "error": error}
                call = await sessions.connection.call_here(
                    "run_goal",
                    {
                        "load_id": entry.load_id,
                        "goal": goal,
                        "max_answers": 1,
                        "time_limit": self.config.sldnf_time_limit_s,
                        "max_depth": self.config.sldnf_max_depth,
                    },
                )
                calls.append(call)
                if not call.ok and call.error and call.error.get("kind") in _SESSION_GONE and reused:
                    await sessions.invalidate(t.sldnf_program, entry)
                    continue
            finally:
                await sessions.release(t.sldnf_program, entry, calls)
            if not call.ok:
                kind = (call.error or {}).get("kind")
                return {"verdict": "loops" if kind == "resource_error" else "error", "error": call.error}
            outcome = call.data.get("outcome")
            answers = call.data.get("answers") or []
            if outcome == "success" and P.LOOP_MARK in json.dumps(answers[:1]):
                return {"verdict": "loops", "outcome": "inference_limit_exceeded"}
            if outcome not in _VERDICTS:  # timeout / depth_exceeded: no verdict within the limits either
                return {"verdict": "loops", "outcome": outcome}
            if problem.answer is None:
                return {"verdict": None, "outcome": outcome}
            answer = "A" if outcome == "success" else "B"
            return {"verdict": "same" if answer == problem.answer else "different", "outcome": outcome}
        return {"verdict": "error", "error": {"kind": "session_lost"}}
