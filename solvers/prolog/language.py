"""The "prolog" language and the SWI-Prolog backend ("swipl").

Program format: SWI-Prolog clauses plus exactly one query line::

    parent(tom, bob).
    parent(bob, ann).
    :- table ancestor/2.
    ancestor(X, Y) :- parent(X, Y).
    ancestor(X, Y) :- ancestor(X, Z), parent(Z, Y).
    % query: ancestor(tom, Who)

The ``% query: Goal`` line is a comment to Prolog, so the text stays a valid
Prolog file; a trailing ``.`` after the goal is optional. Answers are closed
world (negation as failure): ``"True"`` (``Status.PROVED``) if the goal has a
solution, ``proof`` holding the bindings of the first one (``Who = bob``);
``"False"`` (``Status.DISPROVED``) if the search finishes without one. A search
cut short by ``Limits.max_depth`` (recursion depth) before any solution was found
proves nothing and comes back as ``Status.TIMEOUT``, as does one that runs out of
``Limits.timeout_s``; ``Limits.max_answers`` bounds the solutions enumerated.

Errors: syntax errors are ``PARSE_ERROR``/``syntax`` with the 1-based line (a light
check in :func:`parse`, the full one in SWI-Prolog's reader); calls to predicates
without clauses are ``RUNTIME_ERROR``/``undeclared`` naming ``name/arity``;
exhausted stacks or tables are ``MEMORY``; other exceptions are
``RUNTIME_ERROR``/``solver`` with SWI-Prolog's message.

Sandboxing: each request runs in its own Prolog thread (own stacks, global
variables and tables; ``abort/0`` ends only that thread) and loads the program
into a fresh temporary module, destroyed afterwards, so programs do not see
each other. Before the query
runs, ``library(sandbox)`` checks it and every clause it can reach: no files,
processes, streams, flags or clauses of other modules (so ``shell('touch /tmp/x')``
is refused as ``RUNTIME_ERROR``/``unsupported``). Directives are limited to
``table/1``, ``dynamic/1``, ``discontiguous/1``, ``op/3`` and ``use_module`` of a
few pure libraries (lists, apply, aggregate, clpfd, ...); ``initialization`` and
``?-`` lines are refused (use ``% query:``). ``write/1``, ``format/2`` and friends
print to a buffer, returned in :attr:`QueryResult.output`.

Process model: one persistent ``swipl`` per Python process (:func:`default_session`,
started on first use, restarted if it dies or has to be killed), speaking JSON
lines over stdin/stdout with ``query_harness.pl`` (package data beside this module,
loaded from its installed path; started and limited by :mod:`symbolkg.solvers.prolog.process`).
The harness enforces ``timeout_s`` itself (``call_with_time_limit``); if it does not answer
within ``timeout_s + kill_grace_s / 2`` (before the worker pool's own hard kill at
``timeout_s + kill_grace_s``) the process is killed and the call is a ``TIMEOUT``.
Stacks and tables are capped at ``memory_mb`` each. If the Python process dies,
``swipl`` sees the end of its input after the request in flight and halts.

Set ``SYMBOLKG_SWIPL`` to use a ``swipl`` other than the one on ``PATH``.
"""

from __future__ import annotations

import atexit
import os
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch
from symbolkg.solvers.prolog.process import (
    BASE_FLAGS,
    STARTUP_TIMEOUT_S,
    ProcessEnded,
    PrologUnavailable,
    ReplyTimeout,
    SwiplProcess,
    harness_path,
    read_reply,
    request_line,
)
from symbolkg.solvers.runtime.sandbox import ChildLimits

BACKEND = "swipl"

#: Largest file the ``swipl`` process may write (``RLIMIT_FSIZE``; it writes none).
_FILE_BYTES = 1 << 20

_QUERY_RE = re.compile(r"^\s*%+\s*query\s*:(?P<goal>.*)$", re.IGNORECASE)
# The harness's temporary module names ('tmp-1-8461...':p) mean nothing to the program's author.
_TMP_MODULE_RE = re.compile(r"'?tmp-\d+-\d+'?:")


@dataclass(frozen=True)
class PrologProgram:
    """A program of the "prolog" language.

    Attributes:
        text: the whole program text (the query line is a comment to Prolog).
        query: the goal of the ``% query:`` line, without a trailing period.
        query_line: 1-based line of the ``% query:`` line.
    """

    text: str
    query: str
    query_line: int


@dataclass(frozen=True)
class Solution:
    """One answer of a query.

    Attributes:
        bindings: ``(variable, value)`` pairs in the order the variables appear
            in the goal, values written as Prolog terms (quoted where needed).
        residual: residual constraints (e.g. clpfd domains), or ``""``.
    """

    bindings: tuple[tuple[str, str], ...]
    residual: str = ""

    def __str__(self) -> str:
        text = ", ".join(f"{name} = {value}" for name, value in self.bindings) or "true"
        return f"{text}  % residual: {self.residual}" if self.residual else text


@dataclass(frozen=True)
class QueryResult:
    """What the harness reported for one request.

    Attributes:
        status: ``ok``, ``syntax_error``, ``query_syntax_error``, ``load_error``,
            ``unsafe``, ``undeclared``, ``timeout``, ``memory``, ``error``, or
            ``killed`` (no answer in time: the process was killed) or
            ``crashed`` (the process died).
        solutions: the solutions found (also those found before a timeout).
        complete: False when ``max_answers`` cut the enumeration short.
        depth_limited: True when some branch hit the depth limit (so "no more
            solutions" is not certain).
        output: what the program printed (at most 10,000 characters).
        message: error text, for statuses other than ``ok``.
        line: 1-based program line of a load-time error, if known.
        predicate: ``name/arity`` of an unknown procedure (status ``undeclared``).
        seconds: wall time of the request.
    """

    status: str
    solutions: tuple[Solution, ...] = ()
    complete: bool = True
    depth_limited: bool = False
    output: str = ""
    message: str = ""
    line: int | None = None
    predicate: str = ""
    seconds: float = 0.0


class QueryHarness:
    """One ``swipl`` process running the JSON-lines query harness (``query_harness.pl``): the ``prolog``
    language's stateless queries (the MCP server's stateful sessions are :mod:`.session`'s ``PrologSession``).

    Thread-safe (requests are serialised). Started on the first request; if the
    process dies or is killed after a missed deadline, the next request starts a
    new one. Call :meth:`close` (or use it as a context manager) to stop it.
    """

    def __init__(self, swipl: str | None = None) -> None:
        self._swipl = swipl
        self._lock = threading.Lock()
        self._proc: SwiplProcess | None = None
        self.starts = 0  # how many processes this session has started (tests check restarts)

    def __enter__(self) -> QueryHarness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """Process id of the running ``swipl``, if any."""
        return self._proc.pid if self._proc is not None and self._proc.alive() else None

    def _start(self) -> None:
        args = [*BASE_FLAGS, "--on-warning=print", harness_path("query_harness.pl")]
        self._proc = SwiplProcess(args, ChildLimits(file_bytes=_FILE_BYTES), swipl=self._swipl)
        self.starts += 1
        try:
            hello: bytes | str = self._proc.read_line(time.monotonic() + STARTUP_TIMEOUT_S)
        except (ReplyTimeout, ProcessEnded) as exc:
            hello = str(exc)
        if isinstance(hello, str) or (read_reply(hello) or {}).get("status") != "ready":
            self._kill()
            raise PrologUnavailable(f"SWI-Prolog harness did not start: {hello!r}")

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
        self._proc = None

    def request(self, payload: dict[str, Any], wait_s: float) -> dict[str, Any]:
        """Send one request and wait for its reply.

        Args:
            payload: the JSON request.
            wait_s: seconds to wait for the reply before killing the process.

        Returns:
            The reply; ``{"status": "killed"}`` if it did not come within
            ``wait_s`` (the process is killed), ``{"status": "crashed"}`` if the
            process died. Either way the next request starts a fresh process.

        Raises:
            PrologUnavailable: swipl cannot be started.
        """
        with self._lock:
            if self._proc is None or not self._proc.alive():
                self._kill()
                self._start()
            assert self._proc is not None
            try:
                self._proc.send(request_line(payload))
                line = self._proc.read_line(time.monotonic() + wait_s)
            except ReplyTimeout:
                self._kill()
                return {"status": "killed", "message": f"SWI-Prolog did not answer within {wait_s:g} s and was killed"}
            except (ProcessEnded, OSError) as exc:
                code = exc.code if isinstance(exc, ProcessEnded) else self._proc.exit_code()
                self._kill()
                return {"status": "crashed", "message": f"the SWI-Prolog process died (exit status {code})"}
            reply = read_reply(line)
            if reply is None:
                # Nothing but the harness writes to this pipe; garbage means a broken process.
                self._kill()
                return {"status": "crashed", "message": f"SWI-Prolog sent an unreadable reply: {line[:200]!r}"}
            return reply

    def close(self) -> None:
        """Stop the process (idempotent)."""
        with self._lock:
            if self._proc is not None and self._proc.alive():
                self._proc.close_input()  # the harness halts at end of input
            self._kill()


_default: QueryHarness | None = None
_default_pid: int | None = None
_default_lock = threading.Lock()


def default_session() -> QueryHarness:
    """The session of this process (a forked child gets its own, never its parent's pipes)."""
    global _default, _default_pid
    with _default_lock:
        if _default is None or _default_pid != os.getpid():
            _default = QueryHarness()
            _default_pid = os.getpid()
        return _default


def close() -> None:
    """Stop this process's default ``swipl`` (also registered with :mod:`atexit`)."""
    with _default_lock:
        session = _default if _default_pid == os.getpid() else None
    if session is not None:
        session.close()


atexit.register(close)


def run_query(program: str, goal: str, limits: Limits, *, session: QueryHarness | None = None) -> QueryResult:
    """Load ``program`` into a fresh module and enumerate the solutions of ``goal``.

    Args:
        program: Prolog clauses and directives (see the module docstring).
        goal: the goal text, without a trailing period.
        limits: time, stack/table memory, depth and answer bounds.
        session: the ``swipl`` process to use (default: this process's own).

    Returns:
        The harness report (see :class:`QueryResult` for the statuses).

    Raises:
        PrologUnavailable: SWI-Prolog cannot be started.
    """
    payload = {
        "op": "run",
        "program": program,
        "goal": goal,
        "time_limit": limits.timeout_s,
        "stack_limit_mb": limits.memory_mb,
        "depth_limit": limits.max_depth,
        "max_answers": limits.max_answers,
    }
    session = session or default_session()
    with Stopwatch() as sw:
        # Half the grace: the harness's own time limit fires first, our kill before the pool's.
        reply = session.request(payload, limits.timeout_s + limits.kill_grace_s / 2)
    solutions = tuple(
        Solution(tuple((str(n), str(v)) for n, v in s.get("bindings", [])), str(s.get("residual", "")))
        for s in reply.get("solutions", [])
    )
    line = reply.get("line")
    return QueryResult(
        status=str(reply.get("status", "error")),
        solutions=solutions,
        complete=bool(reply.get("complete", True)),
        depth_limited=bool(reply.get("depth_limited", False)),
        output=str(reply.get("output", "")),
        message=_TMP_MODULE_RE.sub("", str(reply.get("message", ""))),
        line=int(line) if isinstance(line, int) and line > 0 else None,
        predicate=str(reply.get("predicate", "")),
        seconds=sw.seconds,
    )


# --------------------------------------------------------------------------- parse

_SYMBOL_CHARS = set("+-*/\\^<>=~:.?@#&$")
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _skip_quoted(text: str, i: int, line: int) -> tuple[int, int]:
    """Skip the quoted text opened at ``text[i]``; returns the index after it and the line there."""
    quote, n, start = text[i], len(text), line
    i += 1
    while True:
        if i >= n:
            raise ProgramError(f"unterminated quoted text: {quote} opened here is never closed", start)
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            if i + 1 < n and text[i + 1] == quote:  # doubled quote stands for itself
                i += 2
                continue
            return i + 1, line
        if ch == "\n":
            line += 1
        i += 1


def _skip_number(text: str, i: int) -> int:
    """Skip the number starting at ``text[i]`` (also ``0'c`` character codes and ``16'FF`` radix numbers)."""
    n, j = len(text), i
    while j < n and (text[j].isalnum() or text[j] == "_"):
        j += 1
    if j < n and text[j] == "'" and text[i:j] == "0":
        # 0'c is a character code: skip the character (and an escape or doubled quote).
        j += 1
        if j < n and text[j] == "\\":
            j += 2
        elif j + 1 < n and text[j] == "'" and text[j + 1] == "'":
            j += 2
        else:
            j += 1
    elif j < n and text[j] == "'":
        # radix notation such as 16'FF
        j += 1
        while j < n and text[j].isalnum():
            j += 1
    elif j + 1 < n and text[j] == "." and text[j + 1].isdigit():
        j += 1
        while j < n and (text[j].isalnum() or text[j] in "_+-" and text[j - 1] in "eE"):
            j += 1
    return j


def _skip_layout(text: str, i: int, line: int) -> tuple[int, int] | None:
    """Skip white space or a comment at ``text[i]``: ``(index after it, line there)``, or None if there is none."""
    c = text[i]
    if c == "\n":
        return i + 1, line + 1
    if c.isspace():
        return i + 1, line
    if c == "%":
        end = text.find("\n", i)
        return (len(text) if end < 0 else end), line
    if c == "/" and text.startswith("/*", i):
        end = text.find("*/", i + 2)
        if end < 0:
            raise ProgramError("unterminated block comment: '/*' without a closing '*/'", line)
        return end + 2, line + text.count("\n", i, end)
    return None


def _check_lexical(text: str) -> None:
    """Raise ProgramError for errors SWI-Prolog's reader surely reports.

    Only certain errors: unbalanced brackets, an unterminated quote or block
    comment, a clause without its final period. Everything subtler is left to
    SWI-Prolog, which reports it with a line number at solve time.
    """
    i, n, line = 0, len(text), 1
    stack: list[tuple[str, int]] = []
    clause_line: int | None = None  # line where the current clause started
    while i < n:
        skipped = _skip_layout(text, i, line)
        if skipped is not None:
            i, line = skipped
            continue
        c = text[i]
        if clause_line is None:
            clause_line = line
        if c in "'\"`":
            i, line = _skip_quoted(text, i, line)
        elif c.isdigit():
            i = _skip_number(text, i)
        elif c in "([{":
            stack.append((c, line))
            i += 1
        elif c in ")]}":
            if not stack:
                raise ProgramError(f"unexpected '{c}': there is no open bracket to close", line)
            opener, opened = stack.pop()
            if opener != _CLOSERS[c]:
                raise ProgramError(f"'{c}' closes the '{opener}' opened on line {opened}", line)
            i += 1
        elif c in _SYMBOL_CHARS:
            j = i
            while j < n and text[j] in _SYMBOL_CHARS:
                j += 1
            if text[i:j] == "." and (j >= n or text[j].isspace() or text[j] == "%"):
                if stack:
                    opener, opened = stack[-1]
                    raise ProgramError(
                        f"the clause ends here but the '{opener}' opened on line {opened} is not closed", line
                    )
                clause_line = None
            i = j
        else:
            i += 1
    if stack:
        opener, opened = stack[-1]
        raise ProgramError(f"the '{opener}' opened here is never closed", opened)
    if clause_line is not None:
        raise ProgramError("the clause starting here does not end with a period ('.')", clause_line)


def parse(text: str) -> PrologProgram:
    """Split a program into its clauses and its ``% query:`` goal.

    The clause text gets a light lexical check here (no process is started);
    SWI-Prolog's reader checks it fully in :func:`solve`.

    Args:
        text: the program.

    Returns:
        The program with its query.

    Raises:
        ProgramError: no query line or several (``no_answer``), an empty query, or
            a lexical error (``syntax``), with its line.
    """
    queries = [
        (no, m.group("goal").strip())
        for no, raw in enumerate(text.splitlines(), start=1)
        if (m := _QUERY_RE.match(raw))
    ]
    if not queries:
        raise ProgramError(
            "the program has no query: add one line '% query: Goal' (e.g. '% query: ancestor(tom, X)')",
            None,
            ErrorKind.NO_ANSWER,
        )
    if len(queries) > 1:
        lines = ", ".join(str(no) for no, _ in queries)
        raise ProgramError(
            f"the program has {len(queries)} '% query:' lines (lines {lines}); keep exactly one",
            queries[1][0],
            ErrorKind.NO_ANSWER,
        )
    line, goal = queries[0]
    goal = goal[:-1].rstrip() if goal.endswith(".") else goal
    if not goal:
        raise ProgramError("the '% query:' line has no goal after the colon", line, ErrorKind.NO_ANSWER)
    _check_lexical(text)
    return PrologProgram(text, goal, line)


# --------------------------------------------------------------------------- solve


def to_outcome(result: QueryResult, program: PrologProgram, limits: Limits, seconds: float) -> Outcome:
    """Map a harness report onto an Outcome (see the module docstring).

    Args:
        result: what :func:`run_query` returned.
        program: the program it ran (for the query and its line).
        limits: the limits it ran under (quoted in messages).
        seconds: wall time to record.

    Returns:
        The outcome.
    """

    def error(status: Status, kind: ErrorKind, message: str, line: int | None = None) -> Outcome:
        return Outcome.error(status, kind, message, line=line, seconds=seconds, backend=BACKEND)

    if result.status in ("ok", "timeout") and result.solutions:
        proof = str(result.solutions[0])
        if len(result.solutions) > 1:
            more = "" if result.complete and result.status == "ok" else "+"
            proof += f"\n% {len(result.solutions)}{more} solutions"
        if result.status == "timeout":
            proof += f"\n% search stopped by the {limits.timeout_s:g} s time limit"
        return Outcome(status=Status.PROVED, answer="True", proof=proof, seconds=seconds, backend=BACKEND)
    if result.status == "ok":
        if result.depth_limited:
            return error(
                Status.TIMEOUT,
                ErrorKind.TIMEOUT,
                f"no solution found within the recursion depth limit ({limits.max_depth}); the program probably "
                "recurses without end: add a base case, or ':- table name/arity.' for left-recursive predicates",
                program.query_line,
            )
        return Outcome(
            status=Status.DISPROVED,
            answer="False",
            proof=f"{program.query} has no solution (closed world)",
            seconds=seconds,
            backend=BACKEND,
        )
    if result.status == "timeout":
        return error(
            Status.TIMEOUT,
            ErrorKind.TIMEOUT,
            f"the query did not finish within {limits.timeout_s:g} s",
            program.query_line,
        )
    if result.status == "killed":
        return error(Status.TIMEOUT, ErrorKind.TIMEOUT, result.message, program.query_line)
    if result.status == "memory":
        return error(
            Status.MEMORY, ErrorKind.MEMORY, f"{result.message} (limit {limits.memory_mb} MB)", program.query_line
        )
    if result.status == "syntax_error":
        return error(Status.PARSE_ERROR, ErrorKind.SYNTAX, result.message, result.line)
    if result.status == "query_syntax_error":
        return error(
            Status.PARSE_ERROR,
            ErrorKind.SYNTAX,
            f"in the query {program.query!r}: {result.message}",
            program.query_line,
        )
    if result.status == "undeclared":
        return error(Status.RUNTIME_ERROR, ErrorKind.UNDECLARED, result.message)
    if result.status == "unsafe":
        return error(Status.RUNTIME_ERROR, ErrorKind.UNSUPPORTED, result.message, result.line)
    return error(
        Status.RUNTIME_ERROR, ErrorKind.SOLVER, result.message or f"SWI-Prolog reported {result.status}", result.line
    )


def solve(text: str, limits: Limits, *, session: QueryHarness | None = None) -> Outcome:
    """Run a "prolog" program. Never raises for a bad program.

    Args:
        text: clauses plus one ``% query: Goal`` line.
        limits: see :func:`run_query`.
        session: the ``swipl`` process to use (default: this process's own).

    Returns:
        The outcome (module docstring for the mapping).

    Raises:
        PrologUnavailable: SWI-Prolog cannot be started (an installation problem,
            not a program problem).
    """
    with Stopwatch() as sw:
        try:
            program = parse(text)
        except ProgramError as exc:
            return exc.to_outcome(seconds=sw.elapsed(), backend=BACKEND)
        result = run_query(program.text, program.query, limits, session=session)
    return to_outcome(result, program, limits, sw.seconds)
