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
lines over stdin/stdout with a harness written to a private temp dir. The harness
enforces ``timeout_s`` itself (``call_with_time_limit``); if it does not answer
within ``timeout_s + kill_grace_s / 2`` (before the worker pool's own hard kill at
``timeout_s + kill_grace_s``) the process is killed and the call is a ``TIMEOUT``.
Stacks and tables are capped at ``memory_mb`` each. If the Python process dies,
``swipl`` sees the end of its input after the request in flight and halts.

Set ``SYMBOLKG_SWIPL`` to use a ``swipl`` other than the one on ``PATH``.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

BACKEND = "swipl"

#: Seconds allowed for ``swipl`` to start and load the harness.
STARTUP_TIMEOUT_S = 30.0

_QUERY_RE = re.compile(r"^\s*%+\s*query\s*:(?P<goal>.*)$", re.IGNORECASE)
# The harness's temporary module names ('tmp-1-8461...':p) mean nothing to the program's author.
_TMP_MODULE_RE = re.compile(r"'?tmp-\d+-\d+'?:")


class PrologUnavailable(RuntimeError):
    """SWI-Prolog cannot be started (not installed, or the harness fails to load)."""


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


def _swipl_path() -> str:
    path = os.environ.get("SYMBOLKG_SWIPL") or shutil.which("swipl")
    if not path:
        raise PrologUnavailable("SWI-Prolog not found: install swi-prolog-nox or set SYMBOLKG_SWIPL")
    return path


class SwiplSession:
    """One ``swipl`` process running the JSON-lines harness.

    Thread-safe (requests are serialised). Started on the first request; if the
    process dies or is killed after a missed deadline, the next request starts a
    new one. Call :meth:`close` (or use it as a context manager) to stop it.
    """

    def __init__(self, swipl: str | None = None) -> None:
        self._swipl = swipl
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._buffer = b""
        self.starts = 0  # how many processes this session has started (tests check restarts)

    def __enter__(self) -> "SwiplSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """Process id of the running ``swipl``, if any."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _start(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="symbolkg-swipl-")
        harness = os.path.join(self._dir.name, "harness.pl")
        with open(harness, "w", encoding="utf-8") as f:
            f.write(HARNESS)
        cmd = [self._swipl or _swipl_path(), "-f", "none", "--no-packs", "--no-tty", "-q", "--on-warning=print", harness]
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                # stderr is not read: a full pipe would block swipl, so discard it.
                stderr=subprocess.DEVNULL,
                cwd=self._dir.name,
                start_new_session=True,  # keeps terminal signals of the parent away from it
            )
        except OSError as exc:
            self._cleanup()
            raise PrologUnavailable(f"cannot start SWI-Prolog ({cmd[0]}): {exc}") from exc
        self._buffer = b""
        self.starts += 1
        hello = self._read_line(time.monotonic() + STARTUP_TIMEOUT_S)
        if isinstance(hello, str) or json.loads(hello).get("status") != "ready":
            self._kill()
            raise PrologUnavailable(f"SWI-Prolog harness did not start: {hello!r}")

    def _read_line(self, deadline: float) -> bytes | str:
        """Read one reply line, or return why not: ``"killed"`` (deadline) or ``"crashed"`` (EOF)."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return "killed"
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return "crashed"
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _kill(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass  # a zombie we cannot reap; the OS reaps it with this process
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    stream.close()
        self._proc = None
        self._cleanup()

    def _cleanup(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

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
            if self._proc is None or self._proc.poll() is not None:
                self._kill()
                self._start()
            assert self._proc is not None and self._proc.stdin is not None
            try:
                self._proc.stdin.write(json.dumps(payload).encode("utf-8") + b"\n")
                self._proc.stdin.flush()
            except BrokenPipeError:
                line: bytes | str = "crashed"
            else:
                line = self._read_line(time.monotonic() + wait_s)
            if isinstance(line, str):
                code: int | None = None
                if line == "crashed":
                    try:
                        code = self._proc.wait(timeout=1)  # end of output comes just before the exit
                    except subprocess.TimeoutExpired:
                        code = None
                self._kill()
                if line == "killed":
                    return {"status": "killed", "message": f"SWI-Prolog did not answer within {wait_s:g} s and was killed"}
                return {"status": "crashed", "message": f"the SWI-Prolog process died (exit status {code})"}
            try:
                reply = json.loads(line)
            except ValueError:
                reply = None
            if not isinstance(reply, dict):
                # Nothing but the harness writes to this pipe; garbage means a broken process.
                self._kill()
                return {"status": "crashed", "message": f"SWI-Prolog sent an unreadable reply: {line[:200]!r}"}
            return reply

    def close(self) -> None:
        """Stop the process (idempotent)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None and self._proc.stdin is not None:
                try:
                    self._proc.stdin.close()  # the harness halts at end of input
                    self._proc.wait(timeout=2)
                except (OSError, subprocess.TimeoutExpired):
                    pass  # _kill below forces it
            self._kill()


_default: SwiplSession | None = None
_default_pid: int | None = None
_default_lock = threading.Lock()


def default_session() -> SwiplSession:
    """The session of this process (a forked child gets its own, never its parent's pipes)."""
    global _default, _default_pid
    with _default_lock:
        if _default is None or _default_pid != os.getpid():
            _default = SwiplSession()
            _default_pid = os.getpid()
        return _default


def close() -> None:
    """Stop this process's default ``swipl`` (also registered with :mod:`atexit`)."""
    with _default_lock:
        session = _default if _default_pid == os.getpid() else None
    if session is not None:
        session.close()


atexit.register(close)


def run_query(program: str, goal: str, limits: Limits, *, session: SwiplSession | None = None) -> QueryResult:
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
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if c == "%":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ProgramError("unterminated block comment: '/*' without a closing '*/'", line)
            line += text.count("\n", i, end)
            i = end + 2
            continue
        if clause_line is None:
            clause_line = line
        if c in "'\"`":
            start = line
            i += 1
            while True:
                if i >= n:
                    raise ProgramError(f"unterminated quoted text: {c} opened here is never closed", start)
                ch = text[i]
                if ch == "\\":
                    i += 2
                    continue
                if ch == c:
                    if i + 1 < n and text[i + 1] == c:  # doubled quote stands for itself
                        i += 2
                        continue
                    i += 1
                    break
                if ch == "\n":
                    line += 1
                i += 1
            continue
        if c.isdigit():
            j = i
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
            i = j
            continue
        if c in "([{":
            stack.append((c, line))
            i += 1
            continue
        if c in ")]}":
            if not stack:
                raise ProgramError(f"unexpected '{c}': there is no open bracket to close", line)
            opener, opened = stack.pop()
            if opener != _CLOSERS[c]:
                raise ProgramError(f"'{c}' closes the '{opener}' opened on line {opened}", line)
            i += 1
            continue
        if c in _SYMBOL_CHARS:
            j = i
            while j < n and text[j] in _SYMBOL_CHARS:
                j += 1
            token = text[i:j]
            if token == "." and (j >= n or text[j].isspace() or text[j] == "%"):
                if stack:
                    opener, opened = stack[-1]
                    raise ProgramError(f"the clause ends here but the '{opener}' opened on line {opened} is not closed", line)
                clause_line = None
            i = j
            continue
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
    queries = [(no, m.group("goal").strip()) for no, raw in enumerate(text.splitlines(), start=1) if (m := _QUERY_RE.match(raw))]
    if not queries:
        raise ProgramError("the program has no query: add one line '% query: Goal' (e.g. '% query: ancestor(tom, X)')", None, ErrorKind.NO_ANSWER)
    if len(queries) > 1:
        lines = ", ".join(str(no) for no, _ in queries)
        raise ProgramError(f"the program has {len(queries)} '% query:' lines (lines {lines}); keep exactly one", queries[1][0], ErrorKind.NO_ANSWER)
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
        return Outcome(status=Status.DISPROVED, answer="False", proof=f"{program.query} has no solution (closed world)", seconds=seconds, backend=BACKEND)
    if result.status == "timeout":
        return error(Status.TIMEOUT, ErrorKind.TIMEOUT, f"the query did not finish within {limits.timeout_s:g} s", program.query_line)
    if result.status == "killed":
        return error(Status.TIMEOUT, ErrorKind.TIMEOUT, result.message, program.query_line)
    if result.status == "memory":
        return error(Status.MEMORY, ErrorKind.MEMORY, f"{result.message} (limit {limits.memory_mb} MB)", program.query_line)
    if result.status == "syntax_error":
        return error(Status.PARSE_ERROR, ErrorKind.SYNTAX, result.message, result.line)
    if result.status == "query_syntax_error":
        return error(Status.PARSE_ERROR, ErrorKind.SYNTAX, f"in the query {program.query!r}: {result.message}", program.query_line)
    if result.status == "undeclared":
        return error(Status.RUNTIME_ERROR, ErrorKind.UNDECLARED, result.message)
    if result.status == "unsafe":
        return error(Status.RUNTIME_ERROR, ErrorKind.UNSUPPORTED, result.message, result.line)
    return error(Status.RUNTIME_ERROR, ErrorKind.SOLVER, result.message or f"SWI-Prolog reported {result.status}", result.line)


def solve(text: str, limits: Limits, *, session: SwiplSession | None = None) -> Outcome:
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


# --------------------------------------------------------------------------- harness

#: The Prolog side of the protocol: one JSON request per stdin line, one reply per stdout line.
#: The libraries a program may load (``use_module(library(L))``): pure ones, no I/O, no processes.
PURE_LIBRARIES: tuple[str, ...] = (
    "lists", "apply", "aggregate", "clpfd", "clpb", "pairs", "ordsets", "assoc", "yall", "dif", "between",
    "solution_sequences", "apply_macros", "dicts", "strings", "occurs", "ugraphs", "tabling",
)
#: Harness text shared with solvers/prolog/session.py: output goes to a per-request capture
#: stream, so the plain output predicates are as harmless as writeln/1, which the sandbox allows.
SAFE_OUTPUT_PRIMITIVES = """\
:- multifile sandbox:safe_primitive/1.
sandbox:safe_primitive(system:write(_)).
sandbox:safe_primitive(system:print(_)).
sandbox:safe_primitive(system:writeq(_)).
sandbox:safe_primitive(system:write_canonical(_)).
sandbox:safe_primitive(system:write_term(_, _)).
sandbox:safe_primitive(system:nl).
sandbox:safe_primitive(system:tab(_)).
sandbox:safe_primitive(system:put_char(_)).
"""

HARNESS = r'''
% SymbolKG SWI-Prolog harness: one JSON request per line on stdin, one reply per line on stdout.
:- use_module(library(http/json)).
:- use_module(library(sandbox)).
:- use_module(library(time)).
:- use_module(library(solution_sequences)).
:- use_module(library(error)).

% Output to the current output stream is captured per request (with_output_to/2),
% so the plain output predicates are as harmless as writeln/1, which the sandbox allows.
%SAFE_OUTPUT%

%ALLOWED_LIBRARIES%

main :-
    prompt(_, ''),
    set_stream(user_input, encoding(utf8)),
    set_stream(user_output, encoding(utf8)),
    stream_property(In, alias(user_input)),
    stream_property(Out, alias(user_output)),
    current_prolog_flag(version, V),
    reply(Out, _{status:"ready", version:V}),
    serve(In, Out).

serve(In, Out) :-
    repeat,
    catch(json_read_dict(In, Req, [end_of_file(eof), value_string_as(string)]), E,
          (Req = bad(E))),
    (   Req == eof
    ->  !
    ;   handle_safely(Req, Reply),
        reply(Out, Reply),
        fail
    ).

reply(Out, Dict) :-
    json_write_dict(Out, Dict, [width(0)]),
    nl(Out),
    flush_output(Out).

handle_safely(bad(E), _{status:"error", message:M}) :- !,
    message_string(E, M).
handle_safely(Req, Reply) :-
    catch(handle(Req, Reply), E, (message_string(E, M), Reply = _{status:"error", message:M})),
    !.
handle_safely(_, _{status:"error", message:"internal: request handler failed"}).

handle(Req, Reply) :-
    Req.get(op) == "ping", !,
    Reply = _{status:"ok"}.
%   Each request runs in its own thread: it gets its own stacks (capped at
%   stack_limit_mb), global variables and tables, and abort/0 (which the sandbox
%   allows and catch/3 cannot stop) ends only that thread.
handle(Req, Reply) :-
    StackBytes is Req.stack_limit_mb * 1024 * 1024,
    set_prolog_flag(table_space, StackBytes),
    thread_self(Me),
    thread_create(worker(Me, Req), Id, [stack_limit(StackBytes)]),
    thread_join(Id, Status),
    (   thread_get_message(Me, skg_reply(Reply0), [timeout(0)])
    ->  Reply = Reply0
    ;   Status = exception('$aborted')
    ->  Reply = _{status:"error", message:"the program called abort/0"}
    ;   Status = exception(E)
    ->  error_reply(E, Reply)
    ;   format(string(Msg), "request thread ended with ~q", [Status]),
        Reply = _{status:"error", message:Msg}
    ),
    garbage_collect_atoms.

worker(Parent, Req) :-
    nb_setval(skg_depth_hit, false),
    nb_setval(skg_solutions, []),
    catch(call_with_time_limit(Req.time_limit,
              in_temporary_module(M, true, run(M, Req, Reply0))),
          E, error_reply(E, Reply0)),
    thread_send_message(Parent, skg_reply(Reply0)).

%!  run(+Module, +Request, -Reply)
run(M, Req, Reply) :-
    catch(load_program(M, Req.program), load_error(Kind, Line, E), true),
    (   nonvar(Kind)
    ->  load_reply(Kind, Line, E, Reply)
    ;   Req.get(goal, "") == ""
    ->  Reply = _{status:"loaded"}
    ;   catch(term_string(Goal, Req.goal, [variable_names(Vs), module(M), syntax_errors(error)]), QE, true),
        (   nonvar(QE)
        ->  message_string(QE, Msg), Reply = _{status:"query_syntax_error", message:Msg}
        ;   \+ callable(Goal)
        ->  format(string(Msg), "the query ~q is not a callable goal", [Goal]),
            Reply = _{status:"query_syntax_error", message:Msg}
        ;   check_safe(M, Goal, Unsafe),
            (   Unsafe \== none
            ->  Reply = Unsafe
            ;   run_goal(M, Goal, Vs, Req, Reply)
            )
        )
    ).

load_reply(syntax, Line, error(syntax_error(What), Where), _{status:"syntax_error", line:Line, message:Msg}) :- !,
    message_string(error(syntax_error(What), _), Msg0),
    (   Where = stream(_, _, LinePos, _)
    ->  Col is LinePos + 1, format(string(Msg), "~w (line ~w, column ~w)", [Msg0, Line, Col])
    ;   Msg = Msg0
    ).
load_reply(Kind, Line, E, _{status:S, line:Line, message:Msg}) :-
    atom_string(Kind, S),
    message_string(E, Msg).

%!  load_program(+Module, +Text)
%   Reads the program term by term, so that every error carries its line,
%   directives pass a whitelist and clauses stay inside Module.
load_program(M, Text) :-
    setup_call_cleanup(open_string(Text, S), load_terms(M, S), close(S)).

load_terms(M, S) :-
    repeat,
    catch(read_term(S, T, [module(M), term_position(P), syntax_errors(error), variable_names(_)]), E,
          syntax_error_line(E)),
    (   T == end_of_file
    ->  !
    ;   stream_position_data(line_count, P, Line),
        add_term(M, T, Line),
        fail
    ).

syntax_error_line(E) :-
    (   E = error(_, stream(_, Line, _, _)) -> true
    ;   E = error(_, string(_, _)) -> Line = 0
    ;   Line = 0
    ),
    throw(load_error(syntax, Line, E)).

add_term(_, T, Line) :-
    var(T), !,
    throw(load_error(load_error, Line, format("a clause cannot be a variable", []))).
add_term(M, (:- D), Line) :- !,
    directive(M, D, Line).
add_term(_, (?- _), Line) :- !,
    throw(load_error(load_error, Line, format("'?- Goal.' lines are not run; put the goal on a '% query: Goal' line", []))).
add_term(M, T, Line) :-
    catch(expand_term(T, X), E, throw(load_error(load_error, Line, E))),
    (   is_list(X) -> Clauses = X ; Clauses = [X] ),
    forall(member(C, Clauses), add_clause(M, C, Line)).

add_clause(M, C, Line) :-
    (   C = (H :- _) -> true ; H = C ),
    (   var(H)
    ->  throw(load_error(load_error, Line, format("a clause head cannot be a variable", [])))
    ;   H = _:_
    ->  throw(load_error(load_error, Line, format("clauses for other modules (~q) are not allowed", [H])))
    ;   \+ callable(H)
    ->  throw(load_error(load_error, Line, format("~q cannot be a clause head", [H])))
    ;   catch(assertz(M:C), E, clause_error(E, Line))
    ).

clause_error(error(permission_error(modify, static_procedure, PI), _), Line) :- !,
    unqualify(_, PI, Name),
    throw(load_error(load_error, Line, format("~w is a built-in predicate and cannot be redefined; give your predicate another name", [Name]))).
clause_error(E, Line) :-
    throw(load_error(load_error, Line, E)).

directive(M, D, Line) :-
    (   allowed_directive(D)
    ->  catch(M:D, E, throw(load_error(load_error, Line, E)))
    ;   callable(D), functor(D, initialization, _)
    ->  throw(load_error(unsafe, Line, format("initialization directives are not run; put the goal on a '% query: Goal' line", [])))
    ;   callable(D)
    ->  functor(D, N, A),
        throw(load_error(unsafe, Line, format("directive ~q/~w is not allowed; allowed: table/1, dynamic/1, discontiguous/1, op/3, use_module(library(L)) for L in lists, apply, aggregate, clpfd, ...", [N, A])))
    ;   throw(load_error(unsafe, Line, format("a directive must be a goal", [])))
    ).

allowed_directive(D) :- var(D), !, fail.
allowed_directive(table(Specs)) :- local_specs(Specs).
allowed_directive(dynamic(Specs)) :- local_specs(Specs).
allowed_directive(discontiguous(Specs)) :- local_specs(Specs).
allowed_directive(op(P, T, Names)) :- integer(P), P >= 0, P =< 1200, atom(T), local_specs(Names).
allowed_directive(use_module(library(L))) :- atom(L), allowed_library(L).
allowed_directive(use_module(library(L), _)) :- atom(L), allowed_library(L).
allowed_directive(ensure_loaded(library(L))) :- atom(L), allowed_library(L).

local_specs(S) :- var(S), !, fail.
local_specs(_:_) :- !, fail.
local_specs((A, B)) :- !, local_specs(A), local_specs(B).
local_specs([]) :- !.
local_specs([H|T]) :- !, local_specs(H), local_specs(T).
local_specs(S) :- \+ sub_term(_:_, S).

%!  check_safe(+M, +Goal, -Reply)
%   Reply is none if library(sandbox) accepts Goal (and everything it can reach).
check_safe(M, Goal, Reply) :-
    catch((safe_goal(M:Goal), Reply = none), E, unsafe_reply(M, E, Reply)).

unsafe_reply(M, error(existence_error(procedure, PI), _), Reply) :- !,
    unqualify(M, PI, Name),
    format(string(Msg), "unknown procedure ~w: it is called but has no clauses; define it, fix its name or number of arguments, or declare it with ':- dynamic ~w.'", [Name, Name]),
    Reply = _{status:"undeclared", message:Msg, predicate:Name}.
unsafe_reply(M, error(permission_error(call, sandboxed, G), _), Reply) :-
    callable(G), strip_module(G, GM, P), GM == M, !,
    functor(P, N, A),
    format(string(Name), "~w/~w", [N, A]),
    format(string(Msg), "unknown procedure ~w: it is called but has no clauses; define it, fix its name or number of arguments, or declare it with ':- dynamic ~w.'", [Name, Name]),
    Reply = _{status:"undeclared", message:Msg, predicate:Name}.
unsafe_reply(_, error(instantiation_error, _), Reply) :- !,
    Reply = _{status:"unsafe", message:"a goal is called through a variable (call/N on an unbound goal); the sandbox only allows calls it can check"}.
unsafe_reply(_, E, _{status:"unsafe", message:Msg}) :-
    message_string(E, Msg0),
    string_concat("refused by the sandbox (no files, processes, streams or global state): ", Msg0, Msg).

unqualify(_, _:PI, S) :- !, pi_string(PI, S).
unqualify(_, PI, S) :- pi_string(PI, S).

pi_string(N/A, S) :- !, format(string(S), "~w/~w", [N, A]).
pi_string(N//A, S) :- !, format(string(S), "~w//~w", [N, A]).
pi_string(G, S) :- callable(G), !, functor(G, N, A), format(string(S), "~w/~w", [N, A]).
pi_string(X, S) :- format(string(S), "~w", [X]).

%!  run_goal(+M, +Goal, +VarNames, +Req, -Reply)
run_goal(M, Goal, Vs, Req, Reply) :-
    Max = Req.max_answers,
    Depth = Req.depth_limit,
    with_output_to(string(Output),
        forall(limit(Max, solve_once(M, Goal, Depth, Vs)), true)),
    nb_getval(skg_depth_hit, Hit),
    found_solutions(Sols),
    length(Sols, N),
    ( N >= Max -> Complete = false ; Complete = true ),
    sub_string_max(Output, 10000, Out),
    Reply = _{status:"ok", solutions:Sols, depth_limited:Hit, complete:Complete, output:Out}.

solve_once(M, Goal, Depth, Vs) :-
    call_with_depth_limit(M:Goal, Depth, R),
    (   R == depth_limit_exceeded
    ->  nb_setval(skg_depth_hit, true), fail
    ;   format_bindings(Vs, Sol),
        nb_getval(skg_solutions, Sols0),
        nb_setval(skg_solutions, [Sol|Sols0])
    ).

found_solutions(Sols) :-
    nb_getval(skg_solutions, Rev),
    reverse(Rev, Sols).

format_bindings(Vs, Sol) :-
    copy_term(Vs, Vs2, Residual),
    term_variables(Vs2-Residual, Free),
    name_free(Free, 1),
    findall([Name, Text], (member(Name=Value, Vs2), \+ sub_atom(Name, 0, _, _, '_'), value_text(Value, Text)), Pairs),
    (   Residual == []
    ->  Sol = _{bindings:Pairs}
    ;   value_text(Residual, RT), Sol = _{bindings:Pairs, residual:RT}
    ).

name_free([], _).
name_free([V|Vs], I) :- atom_concat('_', I, N), V = '$VAR'(N), I1 is I + 1, name_free(Vs, I1).

value_text(V, Text) :-
    format(string(Text), "~W", [V, [quoted(true), numbervars(true), max_depth(50), cycles(true), portray(false)]]).

sub_string_max(S, Max, Out) :-
    string_length(S, L),
    ( L =< Max -> Out = S ; sub_string(S, 0, Max, _, Out) ).

error_reply(time_limit_exceeded, _{status:"timeout", message:"time limit exceeded", solutions:Sols}) :- !,
    found_solutions(Sols).
error_reply(error(resource_error(R), _), _{status:"memory", message:Msg}) :- !,
    format(string(Msg), "resource limit exceeded (~w)", [R]).
error_reply(error(existence_error(procedure, PI), _), Reply) :- !,
    unqualify(_, PI, Name),
    format(string(Msg), "unknown procedure ~w", [Name]),
    Reply = _{status:"undeclared", message:Msg, predicate:Name}.
error_reply(E, _{status:"error", message:Msg}) :-
    message_string(E, Msg).

message_string(format(F, A), S) :- !, format(string(S), F, A).
message_string(E, S) :-
    catch(( phrase('$messages':translate_message(E), Lines),
            with_output_to(string(S0), print_message_lines(current_output, '', Lines)),
            split_string(S0, "", " \n", [S]) ), _, fail), !.
message_string(E, S) :- format(string(S), "~q", [E]).

:- initialization(main, main).
'''
HARNESS = HARNESS.replace("%SAFE_OUTPUT%\n", SAFE_OUTPUT_PRIMITIVES).replace(
    "%ALLOWED_LIBRARIES%\n", "".join(f"allowed_library({name}).\n" for name in PURE_LIBRARIES))
