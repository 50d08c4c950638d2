"""The formalizer agent of PrologMCP (arXiv 2606.14935): a model writes Prolog, an MCP server runs it.

Per problem (one PARARULE-Plus question, say), up to ``--prolog-agent-max-attempts`` times:

1. the model answers the prompt of :mod:`symbolkg.solvers.prolog.pararule` with
   ``<prolog>`` (the knowledge base of the context) and ``<goal_true>`` (a goal that succeeds
   iff the statement is true);
2. the agent loads the program with the ``consult_text`` tool and runs the goal with
   ``run_goal`` through a real MCP client session against ``symbolkg mcp serve``
   (:mod:`symbolkg.jobs.servers.mcp`);
3. success -> "true" (option A), failure -> "false" (option B); a malformed answer, a program
   whose consult reports an error, a goal that raises (``syntax_error``, ``existence_error``,
   ...) or does not finish (``timeout``, ``depth_exceeded``) goes back to the model, the
   structured error in the next user turn, and the next attempt begins. The repair request is
   the first request, the model's last answer and its error (not the whole history), so five
   attempts fit a small model's context.

**One MCP connection per job** (:class:`~symbolkg.jobs.methods.mcp_client.McpConnection`): the
agent spawns ``python -m symbolkg.jobs.cli mcp serve`` and speaks MCP over its pipes with the
SDK's own :class:`mcp.Client`, so it sees exactly what any MCP client sees, and never imports the
server. The client runs on a thread of its own with its own event loop, started on the first
problem and stopped by :meth:`PrologAgent.close`; every problem in flight sends its tool calls
through it (MCP requests are multiplexed on the one session). (Until 2026-12 a default
``inprocess`` transport built the server inside the job's process; it is gone: a method is a
client of the server, never its host.)

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
import json
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from symbolkg.actors.engines.base import Completion, SamplingParams
from symbolkg.jobs.core.answers import interpret
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.methods.base import Method, MethodContext
from symbolkg.jobs.methods.mcp_client import McpConnection, SessionCache, ToolCall
from symbolkg.solvers.outcomes import ErrorKind, Outcome, ProgramError, SolveRequest, Status
from symbolkg.solvers.prolog import pararule as P
from symbolkg.solvers.symba import syntax as symba

LANGUAGE = "prolog"
BACKEND = "swipl-mcp"

#: run_goal outcomes that are a verdict; the others (timeout, depth_exceeded, cancelled) are not.
_VERDICTS = {"success": "True", "failure": "False"}
#: most characters of the model's previous answer repeated in a repair request.
_ECHO_CHARS = 6000


@dataclass(frozen=True)
class PrologAgentConfig:
    """The method's own settings (its ``--prolog-agent-*`` flags).

    Attributes:
        max_attempts: programs the model may write per problem (the first and its repairs).
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
        max_sessions: the server's session cap (LRU eviction beyond it).
    """

    max_attempts: int = 5
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
        for name in ("max_attempts", "max_tokens", "max_depth", "sldnf_inferences", "sldnf_max_depth", "max_sessions"):
            if getattr(self, name) < 1:
                raise ValueError(f"--prolog-agent-{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        if self.idle_sessions < 0:
            raise ValueError(f"--prolog-agent-idle-sessions must be >= 0, got {self.idle_sessions}")
        for name in ("time_limit_s", "sldnf_time_limit_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"--prolog-agent-{name.replace('_s', '').replace('_', '-')} must be > 0 seconds")


# -- the method -----------------------------------------------------------------------------------


def verdict_outcome(result: dict[str, Any]) -> Outcome:
    """The outcome of a ``run_goal`` result with a verdict (``success`` -> True, ``failure`` -> False)."""
    verdict = _VERDICTS[result["outcome"]]
    return Outcome(
        Status.PROVED if verdict == "True" else Status.DISPROVED,
        answer=verdict,
        proof=json.dumps(result.get("answers", [])[:1]),
        seconds=float(result.get("elapsed_s") or 0.0),
        backend=BACKEND,
    )


@dataclass
class Attempts:
    """One problem's attempts so far, and what the last of them left.

    Attributes:
        log: one object per attempt (the row's ``attempts_log``).
        calls: the MCP calls of the attempts, in order.
        seconds: LLM, MCP and SLDNF seconds (the row's ``stage_seconds``; ``rederive`` when it ran).
        outcome: the last attempt's outcome (None before the first).
        program: the last program that ran, with its goal as a final ``?- goal.`` line.
        success_round: the attempt that reached a verdict (None if none did).
        reused: attempts that reused a consulted session.
        fixed_point: the attempt after which the repairs stopped because the next repair request
            would have been this attempt's request again, word for word (the model wrote back the
            answer it was shown, which failed the same way): greedy decoding would answer it the
            same way until the attempts ran out. None when it did not happen.
    """

    log: list[dict[str, Any]] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=lambda: {"llm": 0.0, "mcp": 0.0, "sldnf": 0.0})
    outcome: Outcome | None = None
    program: str | None = None
    success_round: int | None = None
    reused: int = 0
    fixed_point: int | None = None

    def row(self, problem: Problem, ctx: MethodContext, *, latency_s: float, trace: dict[str, Any]) -> ResultRow:
        """The problem's row: the last outcome interpreted, the last program, every attempt."""
        outcome = self.outcome
        assert outcome is not None  # at least one attempt ran
        return ctx.row(
            problem,
            outcome,
            predicted=interpret(problem, outcome.answer) if outcome.executed else None,
            program=self.program,
            language=LANGUAGE,
            rounds=len(self.log),
            success_round=self.success_round,
            attempts=self.log,
            latency_s=latency_s,
            trace=trace,
            stage_seconds=self.seconds,
        )


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
                self._connection = McpConnection(max_sessions=self.config.max_sessions)
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
        tries = await self._attempts(problem, ctx, connection, sessions)
        sldnf = await self._sldnf_closure(connection, sessions, problem, tries.seconds) if self.config.sldnf else None
        rederived = None
        if ctx.solver is not None and tries.success_round is not None and tries.program is not None:
            t = time.perf_counter()
            tries.outcome, rederived = await self._rederive(problem, tries.program, tries.outcome, ctx)
            tries.seconds["rederive"] = time.perf_counter() - t
        trace = {
            "mcp_transport": McpConnection.transport,
            "mcp_calls": [c.log() for c in tries.calls],
            "reused_sessions": tries.reused,
            "sldnf_closure": sldnf["verdict"] if sldnf else None,
            "sldnf": sldnf,
            "rederived": rederived,
        }
        if tries.fixed_point is not None:
            trace["refine_fixed_point"] = tries.fixed_point
        return tries.row(problem, ctx, latency_s=time.monotonic() - t0, trace=trace)

    async def _attempts(
        self, problem: Problem, ctx: MethodContext, connection: McpConnection, sessions: SessionCache
    ) -> Attempts:
        """Formalize, then repair after each failed consult or goal, up to ``max_attempts`` times.

        A repair request is the first request, the model's last answer and that answer's error; when it
        would be the request just asked, the attempts stop (:attr:`Attempts.fixed_point`).
        """
        base = P.formalize_messages(problem.context, problem.question)
        messages = list(base)
        tries = Attempts()
        for number in range(1, self.config.max_attempts + 1):
            attempt: dict[str, Any] = {"attempt": number}
            tries.log.append(attempt)
            completion = await self._ask(problem, ctx, messages, tries)
            if completion is None:
                break
            repair = await self._try_answer(completion.text, connection, sessions, tries)
            if repair is None:
                break
            # a repair shows the model its last answer and that answer's error only (not every earlier
            # attempt): the conversation stays within a small model's context
            following = [*base, ("assistant", completion.text[:_ECHO_CHARS]), ("user", repair)]
            if following == messages:  # greedy decoding would write this attempt's answer again
                tries.fixed_point = number
                break
            messages = following
        assert tries.outcome is not None  # max_attempts >= 1
        return tries

    async def _ask(
        self, problem: Problem, ctx: MethodContext, messages: list[tuple[str, str]], tries: Attempts
    ) -> Completion | None:
        """The model's answer for the current attempt; None when the engine failed it (recorded in ``tries``)."""
        number = len(tries.log)
        request = ctx.chat(
            problem,
            "formalize" if number == 1 else "repair",
            messages,
            params=SamplingParams(max_tokens=self.config.max_tokens),
            request_id=f"{problem.id}/prolog-agent/{number}",
        )
        reply = await ctx.try_ask(request)
        tries.seconds["llm"] += reply.seconds
        if reply.completion is None:
            tries.log[-1].update(stage="llm", error={"kind": ErrorKind.LLM.value, "message": reply.error})
            tries.outcome = Outcome.error(Status.RUNTIME_ERROR, ErrorKind.LLM, reply.error or "", backend=BACKEND)
            return None
        tries.log[-1]["completion"] = reply.completion.text
        if reply.completion.stored_tokens is not None:  # a cache hit: what the model spent on it
            tries.log[-1]["stored_tokens"] = list(reply.completion.stored_tokens)
        return reply.completion

    async def _try_answer(
        self, text: str, connection: McpConnection, sessions: SessionCache, tries: Attempts
    ) -> str | None:
        """Parse the model's answer, consult its program and run its goal: None for a verdict (the attempt
        succeeded), else the repair message of what failed (the attempt's outcome and error recorded)."""
        attempt = tries.log[-1]
        try:
            form = P.parse_response(text)
        except P.FormatError as exc:
            error = {"kind": "format_error", "message": str(exc), "prolog_term": None}
            attempt.update(stage="format", error=error)
            tries.outcome = Outcome.error(Status.PARSE_ERROR, ErrorKind.NO_ANSWER, str(exc), backend=BACKEND)
            return P.repair_message("format", error)
        tries.program = f"{form.program.rstrip()}\n?- {form.goal.strip().removesuffix('.')}.\n"  # what ran: KB and goal
        attempt.update(program=form.program, goal=form.goal)
        t = time.perf_counter()
        stage, error, result, was_reused = await connection.run(
            lambda: self._consult_and_run(sessions, form, tries.calls)
        )
        tries.seconds["mcp"] += time.perf_counter() - t
        tries.reused += was_reused
        attempt["stage"] = stage
        attempt["reused_session"] = was_reused
        if error is None:
            attempt["outcome"] = result["outcome"]
            tries.outcome = verdict_outcome(result)
            tries.success_round = len(tries.log)
            return None
        attempt["error"] = error
        tries.outcome = self._failed(stage, error)
        return P.repair_message(stage, error)

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
        arguments = {
            "goal": form.goal,
            "max_answers": 1,
            "time_limit": self.config.time_limit_s,
            "max_depth": self.config.max_depth,
        }
        run = await sessions.run_goal(form.program, arguments, calls)
        if run.consult_error is not None:
            return "consult", run.consult_error, {}, run.reused
        call = run.call
        if call is None:
            return (
                "goal",
                {"kind": "session_lost", "message": "the session was dropped twice", "prolog_term": None},
                {},
                True,
            )
        if not call.ok:
            return "goal", call.error or {"kind": "execution_exception", "message": "no error record"}, {}, run.reused
        outcome = call.data.get("outcome")
        if outcome not in _VERDICTS:
            what = {
                "timeout": f"the goal ran past its time limit of {self.config.time_limit_s:g} s",
                "depth_exceeded": f"the goal went deeper than {self.config.max_depth} calls (a loop? "
                "table recursive predicates)",
            }.get(str(outcome), f"outcome {outcome}")
            return "goal", {"kind": str(outcome), "message": what, "prolog_term": None}, call.data, run.reused
        return "goal", None, call.data, run.reused

    async def _sldnf(self, sessions: SessionCache, problem: Problem, calls: list[ToolCall]) -> dict[str, Any] | None:
        """Run the plain SLDNF encoding of the question; None when the translator cannot read it.

        The goal runs under an inference limit (:func:`~symbolkg.solvers.prolog.pararule.sldnf_probe`):
        a depth limit would let a loop under ``\\+`` pass for a verdict.
        """
        try:
            t = P.translate(problem.context, problem.question)
        except P.TranslationError:
            return None
        arguments = {
            "goal": P.sldnf_probe(t.sldnf_goal, self.config.sldnf_inferences),
            "max_answers": 1,
            "time_limit": self.config.sldnf_time_limit_s,
            "max_depth": self.config.sldnf_max_depth,
        }
        run = await sessions.run_goal(t.sldnf_program, arguments, calls)
        if run.consult_error is not None:
            return {"verdict": "error", "error": run.consult_error}
        call = run.call
        if call is None:
            return {"verdict": "error", "error": {"kind": "session_lost"}}
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
