"""Stateful, isolated SWI-Prolog sessions (the backend of the Prolog MCP server).

A :class:`PrologSession` is one ``swipl`` process with a private temporary
directory (its working directory) and one module, the *session module*, that
holds a knowledge base across calls: ``consult_text`` loads clauses, ``run_goal``
asks questions, ``replace_predicate`` / ``add_clauses`` edit the knowledge base,
``inspect_predicate`` / ``get_source`` / ``trace_goal`` / ``run_tests`` look at it.
:class:`symbolkg.solvers.prolog.session_registry.SessionRegistry` keeps many sessions (a cap
with LRU eviction, an idle TTL reaper, warm spare processes) and says why a ``load_id`` is gone.

Protocol. Python and the harness (``session_harness.pl`` and the files it includes, package
data beside this module, run from a saved state built from them once per user and ``swipl``
binary, see :func:`symbolkg.solvers.prolog.process.saved_state`) speak JSON lines over the process's
stdin/stdout: one header line per request, followed by the raw text of its large string fields
(source text, goals), whose lengths in characters the header gives. Texts and goals are therefore
*data*: the harness reads them with ``read_term/3`` from a string stream, never as part of a command
line or of Prolog source, so a goal string holding a newline, a ``. halt.`` or a quote that "closes"
an atom is one term or a syntax error, never a second command.

Isolation, inside the process:

* every goal (``run_goal``, ``next_answers``, ``trace_goal``, the goals of
  ``run_tests``) is checked with ``library(sandbox)``'s ``safe_goal/1`` in the
  session module before it runs, which also checks every clause the goal can
  reach: no files, processes, sockets, streams, flags, or clauses of other
  modules (so ``shell/1``, ``open/3``, ``consult/1``, ``halt/0``,
  ``assertz(user:foo)``, ``setenv/2``, ``format/3`` to a stream are refused
  as ``permission_error``). On top of the sandbox, loading a library from a
  goal or clause is limited to pure libraries (lists, apply, clpfd, ...);
* clauses are read term by term and stored with ``assertz/2`` into the session
  module only: heads qualified with another module (``user:foo``) and heads of
  built-in predicates are refused; each clause body is checked with the
  sandbox when it is loaded (a body that calls something unsafe is not
  loaded, a call to an undefined predicate is a warning);
* directives come from an allowlist: ``dynamic/1``, ``discontiguous/1``,
  ``table/1`` (not ``shared``), ``op/3`` (local to the session module),
  ``use_module``/``ensure_loaded`` of pure libraries, and plunit's
  ``begin_tests``/``end_tests``; anything else (``initialization/1``,
  ``set_prolog_flag/2``, ``shell/1``, ...) is a diagnostic, not run;
* each request runs in a fresh Prolog thread with its own stacks (capped), so
  ``abort/0`` or a stack overflow ends that request only. Output of a goal goes
  to a capture stream (capped at ``max_output_chars``), never to the protocol;
  its input is an empty string (reading is refused by the sandbox anyway).
  Prolog flags a goal may set (the sandbox allows a few harmless ones such as
  ``occurs_check``) are per thread, so they end with the request.

Isolation, outside: the process is started by :mod:`symbolkg.solvers.prolog.process` through
:func:`symbolkg.solvers.runtime.sandbox.spawn`: its own process group
(:meth:`PrologSession.close` kills the group), its own temporary directory as working
directory, a minimal environment (no secrets of the parent), and OS limits in force before
``swipl`` runs (set by ``prlimit`` before it ``exec``\\ s ``swipl``, safe from the server's
many threads): ``RLIMIT_AS`` (``memory_mb``, with ``--stack-limit`` at half of it),
``RLIMIT_CPU``, ``RLIMIT_FSIZE`` and ``RLIMIT_CORE``. If the parent dies, ``swipl`` reads the end of its
input, removes its (empty) working directory and exits at once, also in the
middle of a goal (a thread other than the one that runs goals reads the input).

Time limits, cancellation and death: the harness enforces ``time_limit`` from its runner thread,
which signals the goal's thread at the deadline (and every 0.1 s after it until the goal has
stopped), and ``max_depth`` with ``call_with_depth_limit``; the session module's own ``catch/3``,
cleanup predicates and ``call_with_depth_limit/3`` (``session_guard.pl``) keep both out of the
goal's reach, so an overrun is the outcome ``"timeout"`` / ``"depth_exceeded"`` (or
``"inference_limit"`` for a cleanup of a cut that runs too long with signals blocked) whatever the
goal catches, and the session stays usable (docs/MCP.md, "The limit guarantee", says why this is
complete). :meth:`PrologSession.cancel` (from another thread) sends a cancel
line that the harness's reader thread turns into a signal to the goal's thread:
outcome ``"cancelled"``. If no reply comes within ``time_limit + kill_grace_s``
(or ``kill_grace_s`` after a cancel), the process is killed and the call raises
``PrologToolError("session_lost")``, as does any call on a session whose
process died (killed, out of memory); other sessions are not affected.

Answers are typed JSON: integers and floats are numbers, atoms are strings,
SWI strings are ``{"string": s}``, lists are arrays, compound terms are
``{"functor": name, "args": [...]}``, unbound variables ``{"var": "_G1"}``
(the same name for the same variable within an answer), and anything else
(cyclic or very large terms, dicts, rationals, infinite floats) is
``{"term": text}``. Residual constraints (clpfd, dif) are in ``residuals``.

Paging: a truncated ``run_goal`` returns a cursor naming (goal, answers already
returned, knowledge-base generation). :meth:`PrologSession.next_answers`
re-runs the goal and skips the answers already returned (so a goal with side
effects repeats them: a run that changed the knowledge base gets no cursor). Any
change of the knowledge base (consult, add, replace, or a goal that asserted or
retracted) moves the generation on; an older cursor is ``cursor_invalid``.

Set ``SYMBOLKG_SWIPL`` to use a ``swipl`` other than the one on ``PATH``.

(Over 1,000 lines, long because it is one concept: the process protocol (``_Process``),
the session (:class:`PrologSession`) and a goal in flight (:class:`PendingRun`) share one
lock discipline, which a split would spread over modules.)
"""

from __future__ import annotations

import collections
import re
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Self

from symbolkg.solvers.prolog.process import (
    BASE_FLAGS,
    STARTUP_TIMEOUT_S,
    ProcessEnded,
    PrologUnavailable,
    ReplyTimeout,
    SwiplProcess,
    child_env,
    harness_path,
    kill_quietly,
    read_reply,
    request_line,
    saved_state,
    swipl_path,
)
from symbolkg.solvers.runtime.sandbox import ChildLimits

__all__ = [
    "ERROR_KINDS",
    "SEVERITIES",
    "PendingRun",
    "PrologSession",
    "PrologToolError",
    "SessionLimits",
    "check_module_name",
]

#: Error kinds a :class:`PrologToolError` can carry.
ERROR_KINDS = (
    "syntax_error",
    "existence_error",
    "type_error",
    "instantiation_error",
    "permission_error",
    "resource_error",
    "session_not_found",
    "session_evicted",
    "session_expired",
    "session_lost",
    "execution_exception",
    "cursor_invalid",
    "bad_argument",
)

#: Message severities, most severe first; ``list_messages(min_severity)`` keeps this one and those before it.
SEVERITIES = ("error", "warning", "informational")
_SEVERITY_RANK = {"error": 0, "warning": 1, "informational": 2, "info": 2}

_MODULE_RE = re.compile(r"^[a-z][A-Za-z0-9_]{0,62}$")
_RESERVED_MODULES = frozenset(
    {"user", "system", "prolog", "lists", "apply", "sandbox", "error", "skg_session", "time", "json", "clpfd", "plunit"}
)
_MAX_MESSAGES = 1000  # kept per session for list_messages
_MAX_CURSORS = 256  # live cursors per session


class PrologToolError(Exception):
    """A structured error of a session call (the MCP tools' ``error`` object).

    Attributes:
        kind: one of :data:`ERROR_KINDS`.
        message: human-readable text (for the model that wrote the goal).
        prolog_term: the Prolog error term printed with ``writeq``, when there is one, without the
            session module's own qualifier (``heavy(_)``, not ``s_3f…:heavy(_)``): that name is new in
            every session, and a term that names it would read differently each run (a repair prompt
            built from it could never be replayed from a completion cache).
    """

    def __init__(self, kind: str, message: str, prolog_term: str | None = None) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.prolog_term = prolog_term

    def to_dict(self) -> dict[str, Any]:
        """The error as ``{"kind", "message", "prolog_term"}``."""
        return {"kind": self.kind, "message": self.message, "prolog_term": self.prolog_term}


@dataclass(frozen=True)
class SessionLimits:
    """Resource limits of one session process.

    Attributes:
        memory_mb: address-space limit (``RLIMIT_AS``) of the ``swipl`` process.
            Prolog stacks are capped at half of it (``--stack-limit`` and each
            request thread's ``stack_limit``), tables at a quarter, so that an
            overflowing goal gets a ``resource_error`` before the OS limit hits.
        cpu_s: ``RLIMIT_CPU`` of the process, a last resort over its whole life
            (goals have their own ``time_limit``).
        max_source_chars: longest source text or goal accepted.
        max_output_chars: most characters of a goal's output kept (the rest is
            dropped and ``output_truncated`` is set).
        kill_grace_s: seconds to wait beyond a goal's ``time_limit`` (or after a
            :meth:`PrologSession.cancel`) before the process is killed.
        request_timeout_s: reply deadline of requests that run no goal
            (consult, inspect, ...), after which the process is killed.
    """

    memory_mb: int = 1024
    cpu_s: int = 3600
    max_source_chars: int = 2_000_000
    max_output_chars: int = 65_536
    kill_grace_s: float = 5.0
    request_timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if self.memory_mb < 128:
            raise ValueError(f"memory_mb={self.memory_mb}: swipl needs at least 128 MB; use 128 or more")
        if self.cpu_s < 1:
            raise ValueError(f"cpu_s={self.cpu_s}: must be at least 1")
        if self.max_source_chars < 1 or self.max_output_chars < 0:
            raise ValueError("max_source_chars must be >= 1 and max_output_chars >= 0")
        if self.kill_grace_s <= 0 or self.request_timeout_s <= 0:
            raise ValueError("kill_grace_s and request_timeout_s must be positive")

    @property
    def stack_limit_mb(self) -> int:
        """Prolog stack limit (MB) of every thread of the session."""
        return max(64, self.memory_mb // 2)


# --------------------------------------------------------------------------- process


class _Process:
    """One ``swipl`` running the session harness, and the JSON-lines protocol with it.

    Not thread-safe for requests (the owning session serialises them), except
    :meth:`cancel`, which may be called from any thread.
    """

    def __init__(self, limits: SessionLimits, swipl: str | None = None) -> None:
        self.limits = limits
        try:
            swipl = swipl_path(swipl)
        except PrologUnavailable as exc:
            raise PrologToolError("resource_error", str(exc)) from None
        child_limits = ChildLimits(memory_mb=limits.memory_mb, cpu_s=limits.cpu_s, file_bytes=1 << 20)
        harness = harness_path("session_harness.pl")
        state = saved_state(swipl, harness, child_limits)
        self.dir = tempfile.mkdtemp(prefix="symbolkg-prolog-session-")
        flags = [*BASE_FLAGS, f"--stack-limit={limits.stack_limit_mb}m", "-g", "skg_session:main", "-t", "halt(1)"]
        args = ["-x", state, *flags] if state is not None else [*flags, harness]
        self._next_id = 0
        self._io_lock = threading.RLock()  # guards the in-flight id
        self._inflight: int | None = None
        self._inflight_owner: object = None  # who waits for the reply (a thread ident, or a token)
        self._cancel_deadline: float | None = None
        try:
            self.swipl = SwiplProcess(args, child_limits, swipl=swipl, cwd=self.dir, env=child_env(self.dir))
        except PrologUnavailable as exc:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise PrologToolError("resource_error", str(exc)) from None
        self.proc = self.swipl.proc
        self.pid = self.swipl.pid
        # A process whose owner forgot to close it dies with it (not only when Python exits).
        self._finalizer = weakref.finalize(self, kill_quietly, self.proc, self.dir)
        try:
            hello = self._parse(self._read_line(time.monotonic() + STARTUP_TIMEOUT_S))
        except PrologToolError:
            self.kill()
            raise
        if not hello.get("ready"):
            self.kill()
            raise PrologToolError("resource_error", f"the SWI-Prolog harness did not start: {hello!r}")
        self.version = str(hello.get("version", ""))

    def alive(self) -> bool:
        return self.swipl.alive()

    def request(self, header: dict[str, Any], raw: dict[str, str] | None, wait_s: float) -> dict[str, Any]:
        """Send one request and return its reply (the caller serialises calls).

        Raises:
            PrologToolError: ``session_lost`` if the process died or did not answer
                within ``wait_s`` (it is then killed).
        """
        rid = self.send(header, raw)
        return self.receive(rid, time.monotonic() + wait_s)

    def send(self, header: dict[str, Any], raw: dict[str, str] | None, owner: object = None) -> int:
        """Send one request without waiting for its reply; returns its id (the caller serialises calls).

        Args:
            owner: who waits for the reply, for :meth:`cancel` (default: this thread's ident).

        Raises:
            PrologToolError: ``session_lost`` if the process died; ``bad_argument`` for text
                that is not valid Unicode.
        """
        if not self.alive():
            raise PrologToolError("session_lost", f"the SWI-Prolog process died (exit status {self.proc.returncode})")
        raw = raw or {}
        with self._io_lock:
            self._next_id += 1
            rid = self._next_id
            payload = dict(header, id=rid)
            if raw:
                payload["raw"] = [[name, len(text)] for name, text in raw.items()]
            data = request_line(payload)
            try:
                data += b"".join(text.encode("utf-8") for text in raw.values())
            except UnicodeEncodeError as exc:
                raise PrologToolError("bad_argument", f"the text is not valid Unicode: {exc}") from None
            self._cancel_deadline = None
            try:
                self.swipl.send(data)
            except (OSError, ValueError):
                self.kill()
                raise PrologToolError("session_lost", "the SWI-Prolog process died (its input is closed)") from None
            self._inflight = rid
            self._inflight_owner = threading.get_ident() if owner is None else owner
            self.swipl.hold_output(True)
        return rid

    def receive(self, rid: int, deadline: float) -> dict[str, Any]:
        """Wait (blocking) for the reply of request ``rid`` until ``time.monotonic()`` passes ``deadline``.

        Raises:
            PrologToolError: ``session_lost`` if the process died or did not answer in time
                (it is then killed).
        """
        try:
            line = self._read_line(deadline)
        finally:
            self._end_request()
        return self._reply_of(line, rid)

    def poll(self, rid: int) -> dict[str, Any] | None:
        """The reply of request ``rid`` if it has come, else None; never blocks.

        For a caller that waits for :meth:`output_fd` to become readable itself (an event loop);
        :meth:`receive` or :meth:`expire` end the wait the other ways.

        Raises:
            PrologToolError: ``session_lost`` if the process died.
        """
        try:
            line = self.swipl.poll_line()
        except ProcessEnded as exc:
            self._end_request()
            self.kill()
            raise PrologToolError("session_lost", f"the SWI-Prolog process died (exit status {exc.code})") from None
        if line is None:
            return None
        self._end_request()
        return self._reply_of(line, rid)

    def expire(self) -> PrologToolError:
        """The request in flight had no reply by its deadline: kill the process; returns the error to raise."""
        self._end_request()
        self.kill()
        return PrologToolError("session_lost", "SWI-Prolog did not answer in time and was killed")

    def output_fd(self) -> int:
        """The descriptor the replies come on (readable when :meth:`poll` may have one)."""
        return self.swipl.output_fd()

    def _end_request(self) -> None:
        with self._io_lock:
            self._inflight = None
            self._inflight_owner = None
            self._cancel_deadline = None
            self.swipl.hold_output(False)
            dead = not self.alive()
        if dead:
            self.kill()  # another thread killed it while we read: close what it left open

    def _reply_of(self, line: bytes, rid: int) -> dict[str, Any]:
        reply = self._parse(line)
        if reply.get("id") != rid:
            self.kill()
            raise PrologToolError(
                "session_lost", f"the SWI-Prolog harness answered out of turn ({reply.get('id')!r} != {rid})"
            )
        return reply

    def _parse(self, line: bytes) -> dict[str, Any]:
        reply = read_reply(line)
        if reply is None:
            self.kill()
            raise PrologToolError("session_lost", f"the SWI-Prolog harness sent an unreadable reply: {line[:200]!r}")
        return reply

    def cancel(self, owner: object = None) -> bool:
        """Ask the harness to stop the request in flight (only one sent by ``owner``, if given)."""
        with self._io_lock:
            if self._inflight is None or not self.alive():
                return False
            if owner is not None and owner != self._inflight_owner:
                return False
            self._cancel_deadline = time.monotonic() + self.limits.kill_grace_s
            try:
                self.swipl.send(request_line({"op": "cancel", "target": self._inflight}))
            except (OSError, ValueError):
                return False
            return True

    def _read_line(self, deadline: float) -> bytes:
        try:
            return self.swipl.read_line(deadline, lambda: self._cancel_deadline)
        except ReplyTimeout as exc:
            self.kill()
            why = "after it was cancelled" if exc.cancelled else "in time"
            raise PrologToolError("session_lost", f"SWI-Prolog did not answer {why} and was killed") from None
        except ProcessEnded as exc:
            self.kill()
            raise PrologToolError("session_lost", f"the SWI-Prolog process died (exit status {exc.code})") from None

    def kill(self) -> None:
        """Kill the process group and remove the temporary directory (idempotent, any thread).

        The pipe a reading thread waits on is left to that thread (it sees the
        end of file, raises ``session_lost`` and closes it): closing it here
        could let its descriptor be reused under the reader.
        """
        self.swipl.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


# --------------------------------------------------------------------------- session


@dataclass
class _Cursor:
    goal: str
    returned: int
    generation: int
    time_limit: float
    max_depth: int


class PrologSession:
    """One stateful, isolated SWI-Prolog knowledge base (module docstring for the design).

    All methods are thread-safe: calls are serialised by a lock; :meth:`cancel`
    and :meth:`close` work while another thread is inside a call. Results are
    plain JSON-able dicts; errors are raised as :class:`PrologToolError`.

    Args:
        module_name: the session module (default ``"s_" + load_id hex``); a
            lowercase identifier that is not a system or library module.
        limits: the process's resource limits.
        swipl: the ``swipl`` executable (default: ``$SYMBOLKG_SWIPL`` or ``PATH``).

    Raises:
        PrologToolError: ``bad_argument`` for a bad module name, ``resource_error``
            if SWI-Prolog cannot be started.
    """

    def __init__(
        self,
        module_name: str | None = None,
        limits: SessionLimits = SessionLimits(),
        *,
        swipl: str | None = None,
        _process: _Process | None = None,
    ) -> None:
        self.load_id = "s-" + secrets.token_hex(8)
        name = module_name or "s_" + self.load_id[2:]
        try:
            check_module_name(name)
        except PrologToolError:
            if _process is not None:
                _process.kill()
            raise
        self.module_name = name
        self.limits = limits
        self._proc = _process or _Process(limits, swipl)
        self.pid = self._proc.pid
        self.created = time.monotonic()
        self.last_used = self.created
        # One request at a time. Not re-entrant, and released by whichever thread ends the request:
        # a request started by an event loop (start_run_goal) may be finished by a worker thread.
        self._lock = threading.Lock()
        self._closed: str | None = None  # why: "closed" / "evicted" / "expired" / "lost"
        self._busy = 0
        self._generation = 0
        self._clause_count = 0
        self._messages: collections.deque[dict[str, Any]] = collections.deque(maxlen=_MAX_MESSAGES)
        self._cursors: collections.OrderedDict[str, _Cursor] = collections.OrderedDict()
        try:
            self._call(
                {
                    "op": "init",
                    "module": name,
                    "table_space": limits.memory_mb // 4 * 1024 * 1024,
                    "stack_limit": limits.stack_limit_mb * 1024 * 1024,
                }
            )
        except PrologToolError:
            self._proc.kill()
            raise

    # ------------------------------------------------------------------ plumbing

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PrologSession(load_id={self.load_id!r}, module_name={self.module_name!r}, pid={self.pid})"

    @property
    def busy(self) -> bool:
        """True while a call is in progress."""
        return self._busy > 0

    @property
    def clause_count(self) -> int:
        """Clauses in the knowledge base after the last call that changed it."""
        return self._clause_count

    @property
    def generation(self) -> int:
        """Knowledge-base generation: moves on with every change (cursors of older ones are invalid)."""
        return self._generation

    def alive(self) -> bool:
        """True if the session is open and its process runs."""
        return self._closed is None and self._proc.alive()

    def _gone_error(self) -> PrologToolError:
        why = self._closed or "lost"
        kind = {"evicted": "session_evicted", "expired": "session_expired", "closed": "session_not_found"}.get(
            why, "session_lost"
        )
        text = {
            "evicted": "was evicted (least recently used) to make room for newer sessions",
            "expired": "expired after being idle too long",
            "closed": "was closed",
        }.get(why, "lost its SWI-Prolog process")
        return PrologToolError(kind, f"session {self.load_id} {text}")

    def _call(
        self, header: dict[str, Any], raw: dict[str, str] | None = None, wait_s: float | None = None
    ) -> dict[str, Any]:
        """One request under the session lock; raises the reply's error."""
        self._check_sizes(raw)
        with self._lock:
            return self._exchange(header, raw, wait_s)

    def _check_sizes(self, raw: dict[str, str] | None) -> None:
        for text in (raw or {}).values():
            if len(text) > self.limits.max_source_chars:
                raise PrologToolError(
                    "resource_error",
                    f"the text has {len(text)} characters; the limit is {self.limits.max_source_chars}",
                )

    def _exchange(
        self, header: dict[str, Any], raw: dict[str, str] | None = None, wait_s: float | None = None
    ) -> dict[str, Any]:
        """One request; the caller holds the session lock. Raises the reply's error."""
        self._check_sizes(raw)
        if self._closed is not None:
            raise self._gone_error()
        self._busy += 1
        self.last_used = time.monotonic()
        try:
            reply = self._proc.request(header, raw, wait_s if wait_s is not None else self.limits.request_timeout_s)
        except PrologToolError as exc:
            raise self._lost(exc) from None
        finally:
            self._busy -= 1
            self.last_used = time.monotonic()
        return self._absorb(reply)

    def _lost(self, exc: PrologToolError) -> PrologToolError:
        """The error to raise for a failed request: a lost process marks the session lost (unless closed)."""
        if exc.kind == "session_lost":
            if self._closed not in (None, "lost"):
                return self._gone_error()
            self._closed = "lost"
        return exc

    def _absorb(self, reply: dict[str, Any]) -> dict[str, Any]:
        """Take a reply's knowledge-base news (under the session lock); raise its error."""
        if "kb_clauses" in reply:
            self._clause_count = int(reply["kb_clauses"])
        if reply.get("kb_modified"):
            self._generation += 1
        if not reply.get("ok"):
            err = reply.get("error") or {}
            term = err.get("prolog_term")
            raise PrologToolError(
                str(err.get("kind", "execution_exception")),
                str(err.get("message", "SWI-Prolog reported an error")),
                re.sub(rf"(?<![A-Za-z0-9_]){re.escape(self.module_name)}:", "", term) if term else term,
            )
        return reply

    def _keep_messages(self, messages: list[dict[str, Any]]) -> None:
        self._messages.extend(messages)

    # ------------------------------------------------------------------ knowledge base

    def consult_text(self, source_text: str, *, include_predicates: bool = False) -> dict[str, Any]:
        """Replace the knowledge base with the clauses of ``source_text`` (non-fatal).

        Like reconsulting a file: the predicates, directives and tests loaded
        before are removed first (operators and imported libraries stay). Clauses
        that compile are loaded; syntax errors, refused directives and refused
        clauses become messages, and the session exists either way.

        Args:
            source_text: Prolog clauses and allowed directives.
            include_predicates: also return the session's predicates.

        Returns:
            ``{"load_id", "module_name", "messages", "clause_count", ("predicates")}``;
            ``messages`` are ``{"severity", "kind", "message", "line", "column"}``
            (1-based) and are also kept for :meth:`list_messages`.
        """
        return self._load("consult", source_text, include_predicates)

    def add_clauses(self, source_text: str, *, include_predicates: bool = False) -> dict[str, Any]:
        """Add the clauses of ``source_text`` to the knowledge base (same result as :meth:`consult_text`)."""
        return self._load("add", source_text, include_predicates)

    def _load(self, op: str, source_text: str, include_predicates: bool) -> dict[str, Any]:
        _require_str("source_text", source_text)
        with self._lock:
            reply = self._exchange({"op": op, "include_predicates": bool(include_predicates)}, {"text": source_text})
            self._generation += 1
            self._cursors.clear()
        messages = reply.get("messages", [])
        self._keep_messages(messages)
        result: dict[str, Any] = {
            "load_id": self.load_id,
            "module_name": self.module_name,
            "messages": messages,
            "clause_count": int(reply.get("clause_count", 0)),
        }
        if include_predicates:
            result["predicates"] = reply.get("predicates", [])
        return result

    def replace_predicate(self, name: str, arity: int, source_text: str) -> dict[str, Any]:
        """Replace all clauses of ``name/arity`` with those of ``source_text``, atomically.

        Every term of ``source_text`` must be a clause of ``name/arity`` that
        compiles and passes the sandbox check; otherwise nothing changes and
        ``replaced`` is False (the messages say why, with line and column in
        ``source_text``). An empty text leaves the predicate defined with no clauses.

        Returns:
            ``{"replaced", "clause_count", "messages", "predicate"}``.
        """
        _require_str("name", name)
        _require_arity(arity)
        _require_str("source_text", source_text)
        with self._lock:
            reply = self._exchange({"op": "replace", "name": name, "arity": arity}, {"text": source_text})
            if reply.get("replaced"):
                self._generation += 1
                self._cursors.clear()
        messages = reply.get("messages", [])
        self._keep_messages(messages)
        return {
            "replaced": bool(reply.get("replaced")),
            "clause_count": int(reply.get("clause_count", 0)),
            "messages": messages,
            "predicate": f"{name}/{arity}",
        }

    def inspect_predicate(self, name: str, arity: int) -> dict[str, Any]:
        """Describe ``name/arity`` as the session sees it.

        Returns:
            ``{"found", "type", "exported", "clause_count", "clauses", "candidates", "dynamic", "tabled"}``:
            ``type`` is ``"user"`` (loaded from source), ``"dynamic"`` (declared
            dynamic, or created by a goal's assert), ``"builtin"``, ``"library"``,
            or None when not found; ``clauses`` are the session's own clauses as
            ``portray_clause`` text (at most 1,000); ``candidates`` (when not found)
            are close names: the same name with another arity, or a small edit distance.
        """
        _require_str("name", name)
        _require_arity(arity)
        reply = self._call({"op": "inspect", "name": name, "arity": arity})
        result = {
            "found": bool(reply.get("found")),
            "type": reply.get("type"),
            "exported": bool(reply.get("exported")),
            "clause_count": int(reply.get("clause_count", 0)),
            "clauses": list(reply.get("clauses", [])),
            "candidates": [],
            "dynamic": bool(reply.get("dynamic")),
            "tabled": bool(reply.get("tabled")),
        }
        if not result["found"]:
            result["candidates"] = _candidates(name, arity, reply.get("predicates", []), reply.get("same_name", []))
        return result

    def get_source(self) -> dict[str, Any]:
        """The knowledge base as source text: directives, then clauses in definition order, then tests.

        Returns:
            ``{"source_text", "clause_count"}``. Variable names are those of the
            source where it had them.
        """
        reply = self._call({"op": "source"})
        return {"source_text": str(reply.get("source_text", "")), "clause_count": int(reply.get("clause_count", 0))}

    def list_messages(self, min_severity: str = "informational") -> dict[str, Any]:
        """Diagnostics of every load in this session (the last 1,000), oldest first.

        Args:
            min_severity: ``"error"``, ``"warning"`` or ``"informational"`` (alias ``"info"``).
        """
        if min_severity not in _SEVERITY_RANK:
            raise PrologToolError(
                "bad_argument", f"min_severity {min_severity!r}: use one of {', '.join(SEVERITIES)} (or 'info')"
            )
        if self._closed is not None:
            raise self._gone_error()
        limit = _SEVERITY_RANK[min_severity]
        with self._lock:
            messages = [m for m in self._messages if _SEVERITY_RANK.get(m.get("severity", "error"), 0) <= limit]
        return {"messages": messages}

    # ------------------------------------------------------------------ goals

    def run_goal(
        self, goal: str, *, max_answers: int = 10, time_limit: float = 30.0, max_depth: int = 1_000_000
    ) -> dict[str, Any]:
        """Run ``goal`` (one Prolog term, trailing ``.`` optional) and collect up to ``max_answers`` answers.

        Args:
            goal: the goal text; its variables (not those starting with ``_``) are reported.
            max_answers: most answers returned (1 or more).
            time_limit: seconds before the goal is stopped (outcome ``"timeout"``, with
                the answers found so far; the session survives).
            max_depth: recursion depth limit (``call_with_depth_limit``): outcome
                ``"depth_exceeded"`` when no answer was found within it.

        Returns:
            ``{"outcome", "answers", "residuals", "output", "output_truncated", "truncated",
            "cursor", "depth_limited", "elapsed_s"}``: ``outcome`` is ``"success"``,
            ``"failure"``, ``"timeout"``, ``"depth_exceeded"``, ``"inference_limit"`` or ``"cancelled"``;
            ``answers`` are ``{variable: typed JSON}`` (module docstring); ``truncated``
            is True when more answers may exist (``cursor`` then fetches them with
            :meth:`next_answers`, unless the run changed the knowledge base).

        Raises:
            PrologToolError: ``syntax_error`` (the goal text), ``permission_error`` (refused
                by the sandbox), ``existence_error`` (an unknown predicate), ``type_error``,
                ``instantiation_error``, ``resource_error``, ``execution_exception`` (other
                exceptions of the goal), ``session_lost``.
        """
        header = self._run_header(goal, 0, max_answers, time_limit, max_depth)
        self._check_sizes({"goal": goal})
        with self._lock:
            return self._run_locked(goal, header)

    def start_run_goal(
        self, goal: str, *, max_answers: int = 10, time_limit: float = 30.0, max_depth: int = 1_000_000
    ) -> PendingRun | None:
        """:meth:`run_goal` for an event loop: send the goal now, read the reply when it comes.

        Returns None, having sent nothing, when the session is busy with another call (then call
        :meth:`run_goal` from a worker thread, which waits for its turn). Otherwise the goal is
        running and the session is held until the returned :class:`PendingRun` has its reply
        (:meth:`PendingRun.poll`, :meth:`PendingRun.wait`) or is given up (:meth:`PendingRun.expire`).
        Same arguments, result and errors as :meth:`run_goal`; the same limits hold.
        """
        header = self._run_header(goal, 0, max_answers, time_limit, max_depth)
        self._check_sizes({"goal": goal})
        if not self._lock.acquire(blocking=False):
            return None
        try:
            if self._closed is not None:
                raise self._gone_error()
            self._busy += 1
            self.last_used = start = time.monotonic()
            owner = object()
            try:
                rid = self._proc.send(header, {"goal": goal}, owner)
            except PrologToolError as exc:
                self._busy -= 1
                raise self._lost(exc) from None
        except BaseException:
            self._lock.release()
            raise
        return PendingRun(self, rid, owner, goal, header, self._generation, start)

    def next_answers(self, cursor: str, *, max_answers: int = 10) -> dict[str, Any]:
        """The next answers of a truncated :meth:`run_goal` (same result shape).

        The goal is run again and the answers already returned are skipped, with
        the time limit and depth of the original call (``output`` is that of the
        whole re-run, skipped answers included).

        Raises:
            PrologToolError: ``cursor_invalid`` for an unknown cursor or one whose
                knowledge-base generation is older than the session's.
        """
        _require_str("cursor", cursor)
        with self._lock:
            state = self._cursors.get(cursor)
            if state is None:
                raise PrologToolError(
                    "cursor_invalid", f"unknown cursor {cursor!r} (cursors live until the knowledge base changes)"
                )
            if state.generation != self._generation:
                self._cursors.pop(cursor, None)
                raise PrologToolError(
                    "cursor_invalid", "the knowledge base changed since this cursor was made; run the goal again"
                )
            header = self._run_header(state.goal, state.returned, max_answers, state.time_limit, state.max_depth)
            return self._run_locked(state.goal, header)

    def _run_header(self, goal: str, skip: int, max_answers: int, time_limit: float, max_depth: int) -> dict[str, Any]:
        _require_str("goal", goal)
        if not isinstance(max_answers, int) or isinstance(max_answers, bool) or max_answers < 1:
            raise PrologToolError("bad_argument", f"max_answers={max_answers!r}: must be an integer >= 1")
        if not isinstance(max_depth, int) or isinstance(max_depth, bool) or max_depth < 1:
            raise PrologToolError("bad_argument", f"max_depth={max_depth!r}: must be an integer >= 1")
        return {
            "op": "run",
            "skip": skip,
            "max_answers": max_answers,
            "time_limit": _require_time_limit(time_limit),
            "max_depth": max_depth,
            "max_output_chars": self.limits.max_output_chars,
        }

    def _run_locked(self, goal: str, header: dict[str, Any]) -> dict[str, Any]:
        start = time.monotonic()
        generation = self._generation
        reply = self._exchange(header, {"goal": goal}, header["time_limit"] + self.limits.kill_grace_s)
        return self._run_result(reply, goal, header, generation, time.monotonic() - start)

    def _run_result(
        self, reply: dict[str, Any], goal: str, header: dict[str, Any], generation: int, elapsed: float
    ) -> dict[str, Any]:
        """The result of a ``run`` request (under the session lock: it makes the cursor)."""
        answers = list(reply.get("answers", []))
        cursor = None
        if reply.get("truncated") and reply.get("outcome") == "success" and not reply.get("kb_modified"):
            cursor = "c-" + secrets.token_hex(8)
            self._cursors[cursor] = _Cursor(
                goal, header["skip"] + len(answers), generation, header["time_limit"], header["max_depth"]
            )
            while len(self._cursors) > _MAX_CURSORS:
                self._cursors.popitem(last=False)
        if reply.get("kb_modified"):
            self._cursors.clear()
        return {
            "outcome": reply.get("outcome", "failure"),
            "answers": answers,
            "residuals": list(reply.get("residuals", [])),
            "output": str(reply.get("output", "")),
            "output_truncated": bool(reply.get("output_truncated")),
            "truncated": bool(reply.get("truncated")),
            "cursor": cursor,
            "depth_limited": bool(reply.get("depth_limited")),
            "elapsed_s": round(elapsed, 6),
        }

    def trace_goal(
        self, goal: str, *, max_depth: int = 10, max_nodes: int = 200, time_limit: float = 30.0
    ) -> dict[str, Any]:
        """Prove ``goal`` with a bounded meta-interpreter and return the proof tree of its first answer.

        Clauses of the session are expanded (a node per call: ``goal`` as proved,
        ``rule`` the clause used); built-in, library and tabled predicates,
        negation and aggregation are leaves (``rule`` None). Below ``max_depth``
        a call is still proved, without expanding it (``truncated`` on its node,
        ``depth_cut``); after ``max_nodes`` nodes the rest of the proof runs
        without nodes (``node_cut``). A cut (``!``) at the top level of a clause
        body prunes as in Prolog; cuts nested inside control constructs act as ``true``.

        Returns:
            ``{"outcome", "tree", "node_count", "depth_cut", "node_cut", "output"}``;
            ``tree`` is ``{"goal", "rule", "children", "truncated"}`` or None when the goal fails.
        """
        _require_str("goal", goal)
        for label, value in (("max_depth", max_depth), ("max_nodes", max_nodes)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise PrologToolError("bad_argument", f"{label}={value!r}: must be an integer >= 1")
        time_limit = _require_time_limit(time_limit)
        header = {
            "op": "trace",
            "max_depth": max_depth,
            "max_nodes": max_nodes,
            "time_limit": time_limit,
            "max_output_chars": self.limits.max_output_chars,
        }
        reply = self._call(header, {"goal": goal}, time_limit + self.limits.kill_grace_s)
        return {
            "outcome": reply.get("outcome", "failure"),
            "tree": reply.get("tree"),
            "node_count": int(reply.get("node_count", 0)),
            "depth_cut": bool(reply.get("depth_cut")),
            "node_cut": bool(reply.get("node_cut")),
            "output": str(reply.get("output", "")),
        }

    def run_tests(self, test_source_text: str | None = None, *, time_limit: float = 30.0) -> dict[str, Any]:
        """Run the plunit tests of the session, after loading ``test_source_text`` if given.

        Tests use plunit's syntax (``:- begin_tests(U).`` ... ``test(Name, Options) :- Body.``
        ... ``:- end_tests(U).``) and run in a sandboxed runner of the harness (each
        test body is checked like a goal). Supported options: ``true``/``true(Cond)``
        or a bare comparison (``X == 3``), ``fail``/``false``, ``throws(E)``,
        ``error(E)``, ``all(T Cmp L)``, ``set(T Cmp L)``, ``nondet``, ``blocked(R)``,
        ``fixme(R)`` (skipped), ``condition(G)`` (skipped when false), ``setup(G)``,
        ``cleanup(G)``, ``timeout(S)``. Loading a unit replaces a unit of the same name.

        Args:
            test_source_text: test units (and helper clauses) to load first; tests
                already in the knowledge base (from :meth:`consult_text`) run too.
            time_limit: seconds for all tests together; tests left when it runs out are skipped.

        Returns:
            ``{"passed", "failed", "skipped", "total", "results", "messages"}``; ``results`` are
            ``{"unit", "test", "status", "message", "line"}`` (status passed/failed/skipped);
            ``messages`` are the diagnostics of loading ``test_source_text``.
        """
        time_limit = _require_time_limit(time_limit)
        raw = None
        if test_source_text is not None:
            _require_str("test_source_text", test_source_text)
            raw = {"text": test_source_text}
        with self._lock:
            reply = self._exchange(
                {"op": "tests", "time_limit": time_limit}, raw, time_limit + self.limits.kill_grace_s + 5
            )
            self._cursors.clear()  # tests may assert and retract (the reply moved the generation on)
        messages = reply.get("messages", [])
        self._keep_messages(messages)
        results = list(reply.get("results", []))
        counts = collections.Counter(r.get("status") for r in results)
        return {
            "passed": counts["passed"],
            "failed": counts["failed"],
            "skipped": counts["skipped"],
            "total": len(results),
            "results": results,
            "messages": messages,
        }

    def cancel(self, thread_ident: int | None = None) -> bool:
        """Stop the goal running now (from another thread): its call returns outcome ``"cancelled"``.

        Does nothing when no call is in progress. If the harness does not answer
        within ``kill_grace_s``, the process is killed and the call raises ``session_lost``.
        (A :class:`PendingRun` is cancelled with :meth:`PendingRun.cancel`.)

        Args:
            thread_ident: cancel only a call made by this thread (``threading.get_ident()``
                of the caller), so that cancelling one client's request never stops
                another client's call on the same session that happens to run first.

        Returns:
            True if a cancel was sent.
        """
        return self._proc.cancel(thread_ident)

    def close(self, _reason: str = "closed") -> None:
        """Kill the process group and remove the temporary directory (idempotent).

        A call in progress in another thread raises ``session_not_found``
        (``session_evicted`` / ``session_expired`` when the registry closed it).
        """
        if self._closed is None:
            self._closed = _reason
        self._proc.kill()

    @property
    def temp_dir(self) -> str:
        """The session's private working directory (removed by :meth:`close`)."""
        return self._proc.dir


class PendingRun:
    """A ``run_goal`` sent by :meth:`PrologSession.start_run_goal` whose reply is still to come.

    The session is held (no other call runs on it) until the reply is read or the wait is given
    up, whichever way: :meth:`poll` never blocks (for an event loop that waits for :meth:`fileno`
    to become readable, so a short goal is answered without a thread hand-off), :meth:`wait` blocks
    until the reply or :attr:`deadline` (like :meth:`PrologSession.run_goal`; it may run in any
    thread), :meth:`expire` gives up at the deadline (the process is killed: ``session_lost``).
    :meth:`cancel` asks the goal to stop (outcome ``"cancelled"``); its reply must still be read
    (by :meth:`wait`, which then waits at most ``kill_grace_s``). One reader at a time.

    Attributes:
        deadline: ``time.monotonic()`` by which the reply must have come: the goal's
            ``time_limit`` plus ``kill_grace_s``, as for :meth:`PrologSession.run_goal`.
    """

    def __init__(
        self,
        session: PrologSession,
        rid: int,
        owner: object,
        goal: str,
        header: dict[str, Any],
        generation: int,
        start: float,
    ) -> None:
        self._session = session
        self._rid = rid
        self._owner = owner
        self._goal = goal
        self._header = header
        self._generation = generation
        self._start = start
        self._done = False
        self.deadline = start + header["time_limit"] + session.limits.kill_grace_s

    @property
    def done(self) -> bool:
        """True once the reply was read or the wait given up (the session is free again)."""
        return self._done

    def fileno(self) -> int:
        """The descriptor the reply comes on: :meth:`poll` after it becomes readable."""
        return self._session._proc.output_fd()

    def poll(self) -> dict[str, Any] | None:
        """The result (as :meth:`PrologSession.run_goal`'s) if the reply has come, else None; never blocks.

        Raises:
            PrologToolError: the goal's error, or ``session_lost`` (the process died).
        """
        try:
            reply = self._session._proc.poll(self._rid)
        except PrologToolError as exc:
            raise self._fail(exc) from None
        return None if reply is None else self._finish(reply)

    def wait(self) -> dict[str, Any]:
        """The result, blocking until the reply comes or :attr:`deadline` (or the cancel's grace) passes.

        Raises:
            PrologToolError: the goal's error, or ``session_lost`` (no reply in time: the process is killed).
        """
        try:
            reply = self._session._proc.receive(self._rid, self.deadline)
        except PrologToolError as exc:
            raise self._fail(exc) from None
        return self._finish(reply)

    def expire(self) -> PrologToolError:
        """No reply by :attr:`deadline`: kill the process and free the session; returns the error to raise."""
        return self._fail(self._session._proc.expire())

    def cancel(self) -> bool:
        """Ask the goal to stop (any thread); True if a cancel was sent."""
        return self._session._proc.cancel(self._owner)

    def _fail(self, exc: PrologToolError) -> PrologToolError:
        try:
            return self._session._lost(exc)
        finally:
            self._release()

    def _finish(self, reply: dict[str, Any]) -> dict[str, Any]:
        session = self._session
        try:
            reply = session._absorb(reply)
            return session._run_result(
                reply, self._goal, self._header, self._generation, time.monotonic() - self._start
            )
        finally:
            self._release()

    def _release(self) -> None:
        if not self._done:
            self._done = True
            self._session._busy -= 1
            self._session.last_used = time.monotonic()
            self._session._lock.release()


# --------------------------------------------------------------------------- helpers


def check_module_name(name: object) -> None:
    """Raise ``bad_argument`` unless ``name`` can name a session module."""
    if not isinstance(name, str) or not _MODULE_RE.match(name) or name in _RESERVED_MODULES:
        raise PrologToolError(
            "bad_argument",
            f"module_name {name!r} is not allowed: use a lowercase identifier (letters, digits, '_'; at most 63 "
            "characters) that is not a system or library module",
        )


def _require_str(label: str, value: object) -> None:
    if not isinstance(value, str):
        raise PrologToolError("bad_argument", f"{label} must be a string, not {type(value).__name__}")


def _require_arity(arity: object) -> None:
    if not isinstance(arity, int) or isinstance(arity, bool) or not 0 <= arity <= 1024:
        raise PrologToolError("bad_argument", f"arity={arity!r}: must be an integer between 0 and 1024")


def _require_time_limit(time_limit: object) -> float:
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) or not 0 < time_limit <= 86_400:
        raise PrologToolError("bad_argument", f"time_limit={time_limit!r}: must be a number of seconds in (0, 86400]")
    return float(time_limit)


def _edit_distance(a: str, b: str, cap: int) -> int:
    """Levenshtein distance of ``a`` and ``b`` (``cap + 1`` once it exceeds ``cap``)."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        if min(cur) > cap:
            return cap + 1
        prev = cur
    return prev[-1]


def _candidates(name: str, arity: int, predicates: list[str], same_name: list[str]) -> list[str]:
    """Close names for a missing ``name/arity``: same name other arity first, then by edit distance."""
    cap = 1 if len(name) <= 4 else 2 if len(name) <= 8 else 3
    scored: list[tuple[int, int, str]] = []
    for pi in list(predicates) + list(same_name):
        other, _, ar = pi.rpartition("/")
        if not ar.isdigit() or (other == name and int(ar) == arity):
            continue
        if other == name:
            score = 0
        else:
            dist = _edit_distance(name.lower(), other.lower(), cap)
            contained = min(len(name), len(other)) >= 3 and (
                name.lower() in other.lower() or other.lower() in name.lower()
            )
            if dist > cap and not contained:
                continue
            score = min(dist, cap) if dist <= cap else cap + 1
        scored.append((score, abs(int(ar) - arity), pi))
    seen: set[str] = set()
    out: list[str] = []
    for _, _, pi in sorted(scored):
        if pi not in seen:
            seen.add(pi)
            out.append(pi)
    return out[:10]
