"""Stateful, isolated SWI-Prolog sessions (the backend of the Prolog MCP server).

A :class:`PrologSession` is one ``swipl`` process with a private temporary
directory (its working directory) and one module, the *session module*, that
holds a knowledge base across calls: ``consult_text`` loads clauses, ``run_goal``
asks questions, ``replace_predicate`` / ``add_clauses`` edit the knowledge base,
``inspect_predicate`` / ``get_source`` / ``trace_goal`` / ``run_tests`` look at it.
A :class:`SessionRegistry` keeps many sessions (a cap with LRU eviction, an idle
TTL reaper, warm spare processes) and says why a ``load_id`` is gone.

Protocol. Python and the harness (:data:`HARNESS`, a Prolog program, run from
a saved state built from it once per user and ``swipl`` binary, see
:class:`_Artifacts`) speak JSON lines over the process's stdin/stdout: one header line per request,
followed by the raw text of its large string fields (source text, goals), whose
lengths in characters the header gives. Texts and goals are therefore *data*:
the harness reads them with ``read_term/3`` from a string stream, never as part
of a command line or of Prolog source, so a goal string holding a newline, a
``. halt.`` or a quote that "closes" an atom is one term or a syntax error,
never a second command.

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

Isolation, outside: the process gets its own process group
(``start_new_session``; :meth:`PrologSession.close` kills the group), its own
temporary directory as working directory, a minimal environment (no secrets of
the parent), and OS limits set with ``prlimit(2)`` right after it starts and
before it receives any client text: ``RLIMIT_AS`` (``memory_mb``, with
``--stack-limit`` at half of it), ``RLIMIT_CPU``, ``RLIMIT_FSIZE`` and
``RLIMIT_CORE``. (``prlimit`` on the child's pid instead of ``preexec_fn``:
``preexec_fn`` is not safe in a multi-threaded parent, and the server creates
sessions from many threads.) If the parent dies, ``swipl`` reads the end of its
input, removes its (empty) working directory and exits at once, also in the
middle of a goal (a thread other than the one that runs goals reads the input).

Time limits, cancellation and death: the harness enforces ``time_limit``
(``call_with_time_limit``) and ``max_depth`` (``call_with_depth_limit``);
an overrun is the outcome ``"timeout"`` / ``"depth_exceeded"`` and the session
stays usable. :meth:`PrologSession.cancel` (from another thread) sends a cancel
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
"""

from __future__ import annotations

import atexit
import collections
import hashlib
import json
import os
import re
import resource
import secrets
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from symbolkg.solvers.prolog.language import PURE_LIBRARIES, SAFE_OUTPUT_PRIMITIVES

__all__ = [
    "ERROR_KINDS",
    "HARNESS",
    "SEVERITIES",
    "PrologSession",
    "PrologToolError",
    "SessionLimits",
    "SessionRegistry",
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

#: Seconds allowed for ``swipl`` to start and load the harness (or to build the saved state).
STARTUP_TIMEOUT_S = 60.0

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
        prolog_term: the Prolog error term printed with ``writeq``, when there is one.
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


def _swipl_path() -> str:
    path = os.environ.get("SYMBOLKG_SWIPL") or shutil.which("swipl")
    if not path:
        raise PrologToolError("resource_error", "SWI-Prolog not found: install swi-prolog-nox or set SYMBOLKG_SWIPL")
    return path


class _Artifacts:
    """The harness file and a saved state of it, built once and shared by processes.

    A saved state starts in ~30 ms instead of ~160 ms (the libraries the harness
    needs are compiled into it). Both live in a cache directory private to the
    user (``$SYMBOLKG_PROLOG_CACHE``, default ``<tmp>/symbolkg-prolog-<uid>``,
    mode 0700, refused if another user owns it or others can write it), named
    by a hash of the harness and of the ``swipl`` binary, and are written
    atomically, so concurrent processes can build them at once. If the state
    cannot be built, sessions load the harness source.
    """

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _cache: ClassVar[dict[str, tuple[str, str | None]]] = {}

    @classmethod
    def get(cls, swipl: str) -> tuple[str, str | None]:
        """``(harness_path, state_path or None)`` for ``swipl``."""
        with cls._lock:
            found = cls._cache.get(swipl)
            if found is not None and os.path.exists(found[0]) and (found[1] is None or os.path.exists(found[1])):
                return found
            root = _cache_dir()
            real = os.path.realpath(swipl)
            try:
                st = os.stat(real)
                binary = f"{real}:{st.st_size}:{st.st_mtime_ns}"
            except OSError:
                binary = real
            key = hashlib.sha256((HARNESS + "\0" + binary).encode()).hexdigest()[:16]
            harness = os.path.join(root, f"harness-{key}.pl")
            state: str | None = os.path.join(root, f"harness-{key}.state")
            if not os.path.exists(harness):
                _write_atomic(harness, HARNESS.encode())
            assert state is not None
            if not os.path.exists(state):
                tmp = f"{state}.{os.getpid()}.{threading.get_ident()}.tmp"
                try:
                    done = subprocess.run(
                        [swipl, "-f", "none", "--no-packs", "-q", "-o", tmp, "-c", harness],
                        check=False,
                        cwd=root,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        timeout=STARTUP_TIMEOUT_S,
                        env=_child_env(root),
                    )
                    if done.returncode == 0 and os.path.exists(tmp):
                        os.replace(tmp, state)
                    else:
                        state = None
                except (OSError, subprocess.TimeoutExpired):
                    state = None
                finally:
                    if os.path.exists(tmp):
                        os.unlink(tmp)
            cls._cache[swipl] = (harness, state)
            return harness, state


def _cache_dir() -> str:
    """The per-user cache directory (a private temporary one if that is unsafe)."""
    root = os.environ.get("SYMBOLKG_PROLOG_CACHE") or os.path.join(
        tempfile.gettempdir(), f"symbolkg-prolog-{os.getuid()}"
    )
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        st = os.lstat(root)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022:
            return root
    except OSError:
        pass
    private = tempfile.mkdtemp(prefix="symbolkg-prolog-")
    atexit.register(shutil.rmtree, private, True)
    return private


def _write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _child_env(home: str) -> dict[str, str]:
    """A minimal environment: nothing of the parent's (tokens, credentials) reaches Prolog."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": home,
        "TMPDIR": home,
        "MALLOC_ARENA_MAX": "2",  # per-thread malloc arenas would eat the address-space limit
    }


class _Process:
    """One ``swipl`` running the harness, and the JSON-lines protocol with it.

    Not thread-safe for requests (the owning session serialises them), except
    :meth:`cancel`, which may be called from any thread.
    """

    def __init__(self, limits: SessionLimits, swipl: str | None = None) -> None:
        self.limits = limits
        swipl = swipl or _swipl_path()
        harness, state = _Artifacts.get(swipl)
        self.dir = tempfile.mkdtemp(prefix="symbolkg-prolog-session-")
        stack = f"--stack-limit={limits.stack_limit_mb}m"
        if state is not None:
            cmd = [swipl, "-x", state, "-f", "none", "--no-tty", "-q", stack, "-g", "skg_session:main", "-t", "halt(1)"]
        else:
            cmd = [
                swipl,
                "-f",
                "none",
                "--no-packs",
                "--no-tty",
                "-q",
                stack,
                "-g",
                "skg_session:main",
                "-t",
                "halt(1)",
                harness,
            ]
        self._buffer = b""
        self._next_id = 0
        self._io_lock = threading.RLock()  # guards writes to stdin and the in-flight id (kill() retakes it)
        self._inflight: int | None = None
        self._inflight_thread: int | None = None  # threading.get_ident() of the caller in flight
        self._cancel_deadline: float | None = None
        self._reading = False  # a thread is reading stdout: only it may close it
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # never read: a full pipe would block swipl
                cwd=self.dir,
                env=_child_env(self.dir),
                start_new_session=True,  # own process group: close() kills it whole
                close_fds=True,  # so that every session sees EOF when we die
            )
        except OSError as exc:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise PrologToolError("resource_error", f"cannot start SWI-Prolog ({cmd[0]}): {exc}") from exc
        self.pid = self.proc.pid
        # A process whose owner forgot to close it dies with it (not only when Python exits).
        self._finalizer = weakref.finalize(self, _kill_quietly, self.proc, self.dir)
        try:
            self._apply_rlimits()
            hello = self._read_reply(time.monotonic() + STARTUP_TIMEOUT_S)
        except PrologToolError:
            self.kill()
            raise
        if not hello.get("ready"):
            self.kill()
            raise PrologToolError("resource_error", f"the SWI-Prolog harness did not start: {hello!r}")
        self.version = str(hello.get("version", ""))

    def _apply_rlimits(self) -> None:
        mem = self.limits.memory_mb * 1024 * 1024
        cpu = self.limits.cpu_s
        try:
            resource.prlimit(self.pid, resource.RLIMIT_AS, (mem, mem))
            resource.prlimit(self.pid, resource.RLIMIT_CPU, (cpu, cpu + 5))
            resource.prlimit(self.pid, resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
            resource.prlimit(self.pid, resource.RLIMIT_CORE, (0, 0))
        except (OSError, ValueError) as exc:
            raise PrologToolError("resource_error", f"cannot set the limits of the SWI-Prolog process: {exc}") from exc

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, header: dict[str, Any], raw: dict[str, str] | None, wait_s: float) -> dict[str, Any]:
        """Send one request and return its reply (the caller serialises calls).

        Raises:
            PrologToolError: ``session_lost`` if the process died or did not answer
                within ``wait_s`` (it is then killed).
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
            data = json.dumps(payload, ensure_ascii=True).encode() + b"\n"
            try:
                data += b"".join(text.encode("utf-8") for text in raw.values())
            except UnicodeEncodeError as exc:
                raise PrologToolError("bad_argument", f"the text is not valid Unicode: {exc}") from None
            self._cancel_deadline = None
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                self.kill()
                raise PrologToolError("session_lost", "the SWI-Prolog process died (its input is closed)") from None
            self._inflight = rid
            self._inflight_thread = threading.get_ident()
            self._reading = True
        try:
            reply = self._read_reply(time.monotonic() + wait_s)
        finally:
            with self._io_lock:
                self._inflight = None
                self._inflight_thread = None
                self._cancel_deadline = None
                self._reading = False
                dead = self.proc.poll() is not None
            if dead:
                self.kill()  # another thread killed it while we read: close what it left open
        if reply.get("id") != rid:
            self.kill()
            raise PrologToolError(
                "session_lost", f"the SWI-Prolog harness answered out of turn ({reply.get('id')!r} != {rid})"
            )
        return reply

    def cancel(self, thread_ident: int | None = None) -> bool:
        """Ask the harness to stop the request in flight (only one sent by ``thread_ident``, if given)."""
        with self._io_lock:
            if self._inflight is None or not self.alive():
                return False
            if thread_ident is not None and thread_ident != self._inflight_thread:
                return False
            self._cancel_deadline = time.monotonic() + self.limits.kill_grace_s
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"op": "cancel", "target": self._inflight}).encode() + b"\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                return False
            return True

    def _read_reply(self, deadline: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                cancel_deadline = self._cancel_deadline
                end = min(deadline, cancel_deadline) if cancel_deadline is not None else deadline
                left = end - time.monotonic()
                if left <= 0:
                    self.kill()
                    why = (
                        "after it was cancelled"
                        if cancel_deadline is not None and cancel_deadline <= deadline
                        else "in time"
                    )
                    raise PrologToolError("session_lost", f"SWI-Prolog did not answer {why} and was killed")
                try:
                    if not sel.select(min(left, 0.25)):
                        continue
                    chunk = os.read(fd, 1 << 20)
                except OSError:
                    chunk = b""
                if not chunk:
                    code = self._exit_code()
                    self.kill()
                    raise PrologToolError("session_lost", f"the SWI-Prolog process died (exit status {code})")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            self.kill()
            raise PrologToolError("session_lost", f"the SWI-Prolog harness sent an unreadable reply: {line[:200]!r}")
        return reply

    def _exit_code(self) -> int | None:
        try:
            return self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """Kill the process group and remove the temporary directory (idempotent, any thread).

        The pipe a reading thread waits on is left to that thread (it sees the
        end of file, raises ``session_lost`` and closes it): closing it here
        could let its descriptor be reused under the reader.
        """
        if self.proc.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass  # a zombie we cannot reap now; the OS reaps it with us
        with self._io_lock:
            streams = [self.proc.stdin] if self._reading else [self.proc.stdin, self.proc.stdout]
            for stream in streams:
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)


def _kill_quietly(proc: subprocess.Popen[bytes], directory: str) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    shutil.rmtree(directory, ignore_errors=True)


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
        self._lock = threading.RLock()
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
        for text in (raw or {}).values():
            if len(text) > self.limits.max_source_chars:
                raise PrologToolError(
                    "resource_error",
                    f"the text has {len(text)} characters; the limit is {self.limits.max_source_chars}",
                )
        with self._lock:
            if self._closed is not None:
                raise self._gone_error()
            self._busy += 1
            self.last_used = time.monotonic()
            try:
                reply = self._proc.request(header, raw, wait_s if wait_s is not None else self.limits.request_timeout_s)
            except PrologToolError as exc:
                if exc.kind == "session_lost":
                    if self._closed not in (None, "lost"):
                        raise self._gone_error() from None
                    self._closed = "lost"
                raise
            finally:
                self._busy -= 1
                self.last_used = time.monotonic()
            if "kb_clauses" in reply:
                self._clause_count = int(reply["kb_clauses"])
            if reply.get("kb_modified"):
                self._generation += 1
            if not reply.get("ok"):
                err = reply.get("error") or {}
                raise PrologToolError(
                    str(err.get("kind", "execution_exception")),
                    str(err.get("message", "SWI-Prolog reported an error")),
                    err.get("prolog_term"),
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
            reply = self._call({"op": op, "include_predicates": bool(include_predicates)}, {"text": source_text})
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
            reply = self._call({"op": "replace", "name": name, "arity": arity}, {"text": source_text})
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
            ``"failure"``, ``"timeout"``, ``"depth_exceeded"`` or ``"cancelled"``;
            ``answers`` are ``{variable: typed JSON}`` (module docstring); ``truncated``
            is True when more answers may exist (``cursor`` then fetches them with
            :meth:`next_answers`, unless the run changed the knowledge base).

        Raises:
            PrologToolError: ``syntax_error`` (the goal text), ``permission_error`` (refused
                by the sandbox), ``existence_error`` (an unknown predicate), ``type_error``,
                ``instantiation_error``, ``resource_error``, ``execution_exception`` (other
                exceptions of the goal), ``session_lost``.
        """
        return self._run(goal, 0, max_answers, time_limit, max_depth)

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
            return self._run(state.goal, state.returned, max_answers, state.time_limit, state.max_depth)

    def _run(self, goal: str, skip: int, max_answers: int, time_limit: float, max_depth: int) -> dict[str, Any]:
        _require_str("goal", goal)
        if not isinstance(max_answers, int) or isinstance(max_answers, bool) or max_answers < 1:
            raise PrologToolError("bad_argument", f"max_answers={max_answers!r}: must be an integer >= 1")
        if not isinstance(max_depth, int) or isinstance(max_depth, bool) or max_depth < 1:
            raise PrologToolError("bad_argument", f"max_depth={max_depth!r}: must be an integer >= 1")
        time_limit = _require_time_limit(time_limit)
        header = {
            "op": "run",
            "skip": skip,
            "max_answers": max_answers,
            "time_limit": time_limit,
            "max_depth": max_depth,
            "max_output_chars": self.limits.max_output_chars,
        }
        with self._lock:
            start = time.monotonic()
            generation = self._generation
            reply = self._call(header, {"goal": goal}, time_limit + self.limits.kill_grace_s)
            elapsed = time.monotonic() - start
            answers = list(reply.get("answers", []))
            cursor = None
            if reply.get("truncated") and reply.get("outcome") == "success" and not reply.get("kb_modified"):
                cursor = "c-" + secrets.token_hex(8)
                self._cursors[cursor] = _Cursor(goal, skip + len(answers), generation, time_limit, max_depth)
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
            reply = self._call(
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


# --------------------------------------------------------------------------- registry


class SessionRegistry:
    """Many sessions by ``load_id``: a cap with LRU eviction, an idle TTL, warm spares.

    Thread-safe. :meth:`get` says why an id is gone: ``session_not_found``
    (never existed, or closed), ``session_evicted`` (LRU), ``session_expired``
    (idle TTL) or ``session_lost`` (its process died); it remembers the last
    ``remember_gone`` such ids. A daemon thread calls :meth:`reap` every
    ``reap_interval_s`` and keeps ``prestart`` processes warm, so that
    :meth:`create` (the start of every ``consult_text``) does not wait for ``swipl``.

    Args:
        max_sessions: most live sessions; creating one more evicts the least
            recently used idle one (a busy one only if all are busy).
        idle_ttl_s: seconds a session may stay unused before the reaper closes it.
        limits: the limits of every session process.
        reap_interval_s: seconds between reaper runs.
        prestart: warm processes kept ready (0 disables).
        remember_gone: how many evicted/expired/lost/closed ids are remembered.
        swipl: the ``swipl`` executable.
    """

    def __init__(
        self,
        *,
        max_sessions: int = 64,
        idle_ttl_s: float = 1800.0,
        limits: SessionLimits = SessionLimits(),
        reap_interval_s: float = 5.0,
        prestart: int = 1,
        remember_gone: int = 10_000,
        swipl: str | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions={max_sessions}: must be at least 1")
        if idle_ttl_s <= 0 or reap_interval_s <= 0:
            raise ValueError("idle_ttl_s and reap_interval_s must be positive")
        if prestart < 0 or remember_gone < 1:
            raise ValueError("prestart must be >= 0 and remember_gone >= 1")
        self.max_sessions = max_sessions
        self.idle_ttl_s = idle_ttl_s
        self.limits = limits
        self.reap_interval_s = reap_interval_s
        self.prestart = prestart
        self._swipl = swipl
        self._lock = threading.RLock()
        self._sessions: collections.OrderedDict[str, PrologSession] = collections.OrderedDict()
        self._gone: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._remember = remember_gone
        self.reaper_errors = 0  # counted, not swallowed: reap() failures the reaper thread survived
        self.last_reaper_error: str | None = None
        self._spares: list[_Process] = []
        self._refilling = False
        self._stop = threading.Event()
        self._closed = False
        ref = weakref.ref(self)
        self._reaper = threading.Thread(
            target=_reaper_loop, args=(ref, self._stop, reap_interval_s), name="prolog-session-reaper", daemon=True
        )
        self._reaper.start()
        if prestart:
            self._refill_async()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_all()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _forget(self, load_id: str, why: str) -> None:
        self._gone[load_id] = why
        self._gone.move_to_end(load_id)
        while len(self._gone) > self._remember:
            self._gone.popitem(last=False)

    def _take_spare(self) -> _Process | None:
        with self._lock:
            while self._spares:
                proc = self._spares.pop()
                if proc.alive():
                    return proc
                proc.kill()
        return None

    def _refill_async(self) -> None:
        with self._lock:
            if self._refilling or self._closed or len(self._spares) >= self.prestart:
                return
            self._refilling = True
        threading.Thread(target=self._refill, name="prolog-session-prestart", daemon=True).start()

    def _refill(self) -> None:
        try:
            while True:
                with self._lock:
                    if self._closed or len(self._spares) >= self.prestart:
                        return
                try:
                    proc = _Process(self.limits, self._swipl)
                except PrologToolError:
                    return  # create() starts its own and reports the error
                with self._lock:
                    if self._closed:
                        proc.kill()
                        return
                    self._spares.append(proc)
        finally:
            with self._lock:
                self._refilling = False

    def create(self, *, module_name: str | None = None) -> PrologSession:
        """Start a session (from a warm spare when there is one); evict the LRU one at the cap.

        Raises:
            PrologToolError: ``bad_argument`` (module name), ``resource_error`` (swipl cannot start).
        """
        if self._closed:
            raise PrologToolError("resource_error", "the session registry is closed")
        if module_name is not None:
            check_module_name(module_name)
        proc = self._take_spare()
        try:
            session = PrologSession(module_name, self.limits, swipl=self._swipl, _process=proc)
        finally:
            if self.prestart:
                self._refill_async()
        victims: list[PrologSession] = []
        with self._lock:
            if self._closed:
                session.close()
                raise PrologToolError("resource_error", "the session registry is closed")
            while len(self._sessions) >= self.max_sessions:
                victim_id = next((sid for sid, s in self._sessions.items() if not s.busy), next(iter(self._sessions)))
                victim = self._sessions.pop(victim_id)
                self._forget(victim_id, "evicted")
                victims.append(victim)
            self._sessions[session.load_id] = session
        for victim in victims:
            victim.close("evicted")
        return session

    def get(self, load_id: str) -> PrologSession:
        """The live session ``load_id`` (marks it most recently used).

        Raises:
            PrologToolError: ``session_not_found``, ``session_evicted``, ``session_expired``
                or ``session_lost`` (its process died; the session is dropped).
        """
        if not isinstance(load_id, str):
            raise PrologToolError("bad_argument", f"load_id must be a string, not {type(load_id).__name__}")
        dead: PrologSession | None = None
        with self._lock:
            session = self._sessions.get(load_id)
            if session is not None and session.alive():
                self._sessions.move_to_end(load_id)
                session.last_used = time.monotonic()
                return session
            if session is not None:  # its process died
                self._sessions.pop(load_id)
                self._forget(load_id, "lost")
                dead = session
            why = self._gone.get(load_id)
        if dead is not None:
            dead.close("lost")
        if why == "evicted":
            raise PrologToolError(
                "session_evicted",
                f"session {load_id} was evicted (least recently used) to make room for newer sessions",
            )
        if why == "expired":
            raise PrologToolError(
                "session_expired", f"session {load_id} expired after {self.idle_ttl_s:g} s without use"
            )
        if why == "lost":
            raise PrologToolError(
                "session_lost", f"session {load_id} lost its SWI-Prolog process (killed or out of memory)"
            )
        if why == "closed":
            raise PrologToolError("session_not_found", f"session {load_id} was closed")
        raise PrologToolError("session_not_found", f"no session {load_id!r}: call consult_text to create one")

    def close(self, load_id: str) -> bool:
        """Close a session; False if there was no live session ``load_id``."""
        with self._lock:
            session = self._sessions.pop(load_id, None)
            if session is None:
                return False
            self._forget(load_id, "closed")
        session.close("closed")
        return True

    def list(self) -> list[dict[str, Any]]:
        """The live sessions, least recently used first."""
        now = time.monotonic()
        with self._lock:
            sessions = list(self._sessions.values())
        return [
            {
                "load_id": s.load_id,
                "module_name": s.module_name,
                "pid": s.pid,
                "clause_count": s.clause_count,
                "idle_s": round(0.0 if s.busy else now - s.last_used, 3),
                "age_s": round(now - s.created, 3),
                "busy": s.busy,
                "alive": s.alive(),
            }
            for s in sessions
        ]

    def reap(self) -> list[str]:
        """Close sessions idle for ``idle_ttl_s`` or more, and drop dead ones; returns the expired ids."""
        now = time.monotonic()
        expired: list[PrologSession] = []
        dead: list[PrologSession] = []
        with self._lock:
            for sid, s in list(self._sessions.items()):
                if not s.alive() and not s.busy:
                    self._sessions.pop(sid)
                    self._forget(sid, "lost")
                    dead.append(s)
                elif not s.busy and now - s.last_used >= self.idle_ttl_s:
                    self._sessions.pop(sid)
                    self._forget(sid, "expired")
                    expired.append(s)
        for s in expired:
            s.close("expired")
        for s in dead:
            s.close("lost")
        return [s.load_id for s in expired]

    def close_all(self) -> None:
        """Close every session and spare, and stop the reaper (idempotent)."""
        with self._lock:
            self._closed = True
            sessions = list(self._sessions.items())
            self._sessions.clear()
            for sid, _ in sessions:
                self._forget(sid, "closed")
            spares, self._spares = self._spares, []
        self._stop.set()
        for _, s in sessions:
            s.close("closed")
        for proc in spares:
            proc.kill()


def _reaper_loop(ref: weakref.ref[SessionRegistry], stop: threading.Event, interval: float) -> None:
    while not stop.wait(interval):
        registry = ref()
        if registry is None:
            return
        try:
            registry.reap()
            if registry.prestart:
                registry._refill_async()
        except Exception as exc:  # noqa: BLE001 - the reaper must survive a bad session; the next run retries
            registry.reaper_errors += 1
            registry.last_reaper_error = repr(exc)
        del registry


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


# --------------------------------------------------------------------------- harness

#: The Prolog side: a reader thread (stdin, cancel), a runner thread (one request at a time,
#: each in a fresh thread with capped stacks), replies as JSON lines on stdout.
HARNESS = r"""
% SymbolKG Prolog session harness (symbolkg.solvers.prolog.session): see the Python module docstring.
:- module(skg_session, []).
:- use_module(library(http/json)).
:- use_module(library(sandbox)).
:- use_module(library(time)).
:- use_module(library(solution_sequences)).
:- use_module(library(error)).
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(listing)).
:- use_module(library(prolog_stream)).
:- use_module(library(aggregate)).
:- use_module(library(pairs)).
:- use_module(library(readutil)).
:- use_module(library(process), [process_kill/2]).   % for client_gone/0 only; never visible to sessions

% Output of goals goes to a per-request capture stream, so writing to the
% current output is as harmless as writeln/1, which the sandbox allows.
%SAFE_OUTPUT%
% While one clause body is checked at load time, calls to predicates of the
% session module count as safe: each body is checked one level deep (the
% bodies of those predicates are checked on their own). Only the thread doing
% that check sees checking_module/1.
:- multifile sandbox:safe_meta/2.
sandbox:safe_meta(M:G, []) :-
    checking_module(M), callable(G), local_predicate(M, G).

:- thread_local checking_module/1, extra_local/2, msg/6, answer/2, out_chunk/1, body_check/3,
    current_unit/2, undefined_seen/1.
:- dynamic limit_flag/2, session_module/1, pred_seq/3, display/2, directive_src/2, declared_dynamic/2,
    test_case/7, unit_options/2, current_exec/2, pending_cancel/1, last_done/1.

%ALLOWED_LIBRARIES%
allowed_library(random).
allowed_library(dcg/basics).
allowed_library(dcg/high_order).

% ---------------------------------------------------------------- protocol

main :-
    prompt(_, ''),
    set_prolog_flag(autoload, true),       % a state built with -c has it off
    set_prolog_flag(on_error, print),
    set_stream(user_input, encoding(utf8)),
    set_stream(user_input, newline(posix)),
    set_stream(user_output, encoding(utf8)),
    set_stream(user_output, newline(posix)),
    stream_property(In, alias(user_input)),
    stream_property(Out, alias(user_output)),
    current_prolog_flag(version, V),
    reply(Out, _{id:0, ok:true, ready:true, version:V}),
    thread_create(runner(Out), _, [alias(skg_runner)]),
    assertz(last_done(0)),
    read_loop(In).

% The reader: requests go to the runner; a cancel line is handled here, while
% the runner waits for the request it is about to stop.
read_loop(In) :-
    repeat,
    read_line_to_string(In, Line),
    (   Line == end_of_file
    ->  client_gone
    ;   catch(read_request(In, Line, Req), E, protocol_error(E)),
        dispatch(Req),
        fail
    ).

% Our client closed our input or died: so do we. The working directory is
% the session's own (empty) one; remove it, as nobody else may be left to.
% Exit at once, without cleanup (there is nothing to save): halt(0) waits
% for the other threads to stop, and a request thread in a tight loop, or
% one the runner is just starting, may never do so; halt(abort) runs the
% crash handler, which can hang with threads about. SIGKILL cannot.
client_gone :-
    catch(( working_directory(D, D), delete_directory(D) ), _, true),
    current_prolog_flag(pid, Pid),
    catch(process_kill(Pid, kill), _, true),
    halt(abort).

protocol_error(E) :-
    print_message(error, E),
    halt(2).

read_request(In, Line, Req) :-
    atom_json_dict(Line, Req0, [value_string_as(string)]),
    (   get_dict(raw, Req0, Raw)
    ->  read_raw(Raw, In, Req0, Req)
    ;   Req = Req0
    ).

read_raw([], _, Req, Req).
read_raw([[Name, Len]|T], In, Req0, Req) :-
    atom_string(Key, Name),
    (   Len =:= 0 -> S = "" ; read_string(In, Len, S) ),
    put_dict(Key, Req0, S, Req1),
    read_raw(T, In, Req1, Req).

dispatch(Req) :-
    Req.op == "cancel", !,
    cancel_request(Req.target).
dispatch(Req) :-
    thread_send_message(skg_runner, req(Req)).

cancel_request(Id) :-
    with_mutex(skg_exec,
        (   current_exec(Id, Tid)
        ->  catch(thread_signal(Tid, skg_session:cancel_signal), _, true)
        ;   last_done(Done), Id > Done
        ->  assertz(pending_cancel(Id))
        ;   true
        )).

cancel_signal :-
    (   nb_current(skg_cancellable, true)
    ->  throw(skg_cancelled)
    ;   nb_setval(skg_cancel_pending, true)
    ).

% Enter the part of a request that runs client code: a cancel that came
% earlier takes effect now.
cancellable_on(Id) :-
    with_mutex(skg_exec,
        (   (   retract(pending_cancel(Id)) ; nb_current(skg_cancel_pending, true) )
        ->  Cancel = true
        ;   nb_setval(skg_cancellable, true)
        )),
    (   Cancel == true -> throw(skg_cancelled) ; true ).

cancellable_off :-
    nb_setval(skg_cancellable, false).

runner(Out) :-
    thread_self(Me),
    repeat,
    thread_get_message(Me, req(Req)),
    serve(Me, Req, Reply),
    catch(reply(Out, Reply), E, reply_error(Out, Req, E)),
    fail.

reply_error(Out, Req, E) :-
    error_dict(E, Err),
    catch(reply(Out, _{id:Req.id, ok:false, error:Err}), _, halt(3)).

serve(Me, Req, Reply) :-
    Id = Req.id,
    (   limit_flag(stack_limit, Bytes) -> true ; current_prolog_flag(stack_limit, Bytes) ),
    with_mutex(skg_exec,
        (   thread_create(exec(Me, Req), Tid, [stack_limit(Bytes)]),
            assertz(current_exec(Id, Tid))
        )),
    thread_join(Tid, Status),
    with_mutex(skg_exec,
        (   retractall(current_exec(Id, _)),
            retractall(pending_cancel(Id)),
            retractall(last_done(_)),
            assertz(last_done(Id))
        )),
    (   thread_get_message(Me, skg_reply(Reply0), [timeout(0)])
    ->  true
    ;   Status = exception('$aborted')
    ->  Reply0 = _{ok:false, error:_{kind:"execution_exception", message:"the goal called abort/0 (the session is intact)", prolog_term:"'$aborted'"}}
    ;   format(string(Msg), "internal: the request thread ended with ~q", [Status]),
        Reply0 = _{ok:false, error:_{kind:"execution_exception", message:Msg, prolog_term:null}}
    ),
    put_dict(id, Reply0, Id, Reply).

reply(Out, Dict) :-
    json_write_dict(Out, Dict, [width(0)]),
    nl(Out),
    flush_output(Out).

exec(Parent, Req) :-
    open_string("", Empty),
    set_input(Empty),                      % client code never sees the protocol's input
    nb_setval(skg_cancellable, false),
    nb_setval(skg_cancel_pending, false),
    forall(limit_flag(Flag, Value), catch(set_prolog_flag(Flag, Value), _, true)),
    catch(( handle(Req, Reply) -> true ; Reply = _{ok:false, error:_{kind:"execution_exception", message:"internal: the request failed", prolog_term:null}} ),
          E,
          ( error_dict(E, Err), Reply = _{ok:false, error:Err} )),
    thread_send_message(Parent, skg_reply(Reply)).

sm(M) :- session_module(M), !.
sm(_) :- throw(skg_error(execution_exception, "internal: the session module is not set", none)).

% ---------------------------------------------------------------- requests

handle(Req, Reply) :-
    atom_string(Op, Req.op),
    op_reply(Op, Req, Reply).

op_reply(ping, _, _{ok:true}) :- !.
op_reply(init, Req, _{ok:true, module:M}) :- !,
    atom_string(M, Req.module),
    (   session_module(_)
    ->  throw(skg_error(bad_argument, "the session module is already set", none))
    ;   current_module(M)
    ->  throw(skg_error(bad_argument, "the module name is in use by a library", none))
    ;   true
    ),
    set_module(M:class(user)),
    set_module(M:base(system)),
    % Prolog flags are per thread: every request thread gets these (serve/3, exec/2).
    (   get_dict(table_space, Req, TS), integer(TS), TS > 0 -> assertz(limit_flag(table_space, TS)) ; true ),
    (   get_dict(stack_limit, Req, SL), integer(SL), SL > 0 -> assertz(limit_flag(stack_limit, SL)) ; true ),
    assertz(session_module(M)).
op_reply(consult, Req, Reply) :- !,
    sm(M),
    wipe(M),
    load_reply(M, Req, Reply).
op_reply(add, Req, Reply) :- !,
    sm(M),
    load_reply(M, Req, Reply).
op_reply(replace, Req, Reply) :- !,
    sm(M),
    replace(M, Req, Reply).
op_reply(run, Req, Reply) :- !,
    sm(M),
    run(M, Req, Reply).
op_reply(trace, Req, Reply) :- !,
    sm(M),
    trace_request(M, Req, Reply).
op_reply(inspect, Req, Reply) :- !,
    sm(M),
    inspect(M, Req, Reply).
op_reply(source, _, Reply) :- !,
    sm(M),
    source(M, Text),
    kb_clauses(M, N),
    Reply = _{ok:true, source_text:Text, clause_count:N, kb_clauses:N}.
op_reply(tests, Req, Reply) :- !,
    sm(M),
    tests_request(M, Req, Reply).
op_reply(Op, _, _) :-
    format(string(Msg), "unknown request ~q", [Op]),
    throw(skg_error(bad_argument, Msg, none)).

% ---------------------------------------------------------------- loading

wipe(M) :-
    catch(abolish_all_tables, _, true),
    findall(N/A, local_pi_all(M, N, A), PIs),
    forall(member(N/A, PIs), catch(abolish(M:N/A), _, true)),
    retractall(pred_seq(_, _, _)),
    retractall(display(_, _)),
    retractall(directive_src(_, _)),
    retractall(declared_dynamic(_, _)),
    retractall(test_case(_, _, _, _, _, _, _)),
    retractall(unit_options(_, _)).

% The predicates of the session module; names starting with '$' are
% internals (tabling adds '$tabled'/2, '$wrap$p'/N, ...) and are not listed.
local_pi(M, N, A) :-
    local_pi_all(M, N, A),
    \+ sub_atom(N, 0, _, _, '$').

local_pi_all(M, N, A) :-
    current_predicate(M:N/A),
    functor(H, N, A),
    \+ predicate_property(M:H, imported_from(_)).

local_predicate(M, G) :-
    functor(G, N, A),
    (   extra_local(N, A) -> true
    ;   current_predicate(M:N/A), \+ predicate_property(M:G, imported_from(_))
    ).

load_reply(M, Req, Reply) :-
    load_text(M, Req.text, Count),
    take_messages(Msgs),
    kb_clauses(M, K),
    Reply0 = _{ok:true, messages:Msgs, clause_count:Count, kb_clauses:K},
    (   Req.get(include_predicates) == true
    ->  predicate_list(M, Ps), put_dict(predicates, Reply0, Ps, Reply)
    ;   Reply = Reply0
    ).

kb_clauses(M, N) :-
    aggregate_all(sum(C), (local_pi(M, Nm, A), functor(H, Nm, A), predicate_property(M:H, number_of_clauses(C))), N).

predicate_list(M, Ps) :-
    findall(S-Seq, (local_pi(M, N, A), ( pred_seq(N, A, Seq) -> true ; Seq = inf ), format(string(S), "~w/~w", [N, A])), Pairs),
    sort(2, @=<, Pairs, Sorted),
    pairs_keys(Sorted, Ps).

%!  load_text(+M, +Text, -Count)
%   Loads the terms of Text into M one by one. Never throws for a bad term:
%   every problem becomes a message (msg/6).
load_text(M, Text, Count) :-
    retractall(body_check(_, _, _)),
    retractall(current_unit(_, _)),
    retractall(undefined_seen(_)),
    nb_setval(skg_loaded, 0),
    setup_call_cleanup(open_string(Text, S), load_stream(M, S), close(S)),
    (   current_unit(U, UL)
    ->  format(string(Msg), "begin_tests(~q) has no end_tests(~q)", [U, U]),
        add_msg(error, syntax_error, Msg, UL, 1, none),
        retractall(current_unit(_, _))
    ;   true
    ),
    check_bodies(M),
    nb_getval(skg_loaded, Count).

load_stream(M, S) :-
    nb_setval(skg_last_error_at, -1),
    repeat,
    catch(read_term(S, T, [module(M), syntax_errors(error), term_position(P), variable_names(Vs), singletons(Ss)]), E, true),
    (   nonvar(E)
    ->  read_error(E, S, Stop),
        Stop == true, !
    ;   T == end_of_file
    ->  !
    ;   term_pos(P, L, C),
        singleton_warning(T, Ss, L, C),
        catch(add_term(M, T, Vs, L, C), E2, term_message(E2, L, C)),
        fail
    ).

term_pos(P, L, C) :-
    stream_position_data(line_count, P, L),
    stream_position_data(line_position, P, C0),
    C is C0 + 1.

read_error(E, S, Stop) :-
    E = error(syntax_error(What), Ctx), !,
    (   Ctx = stream(_, L, LP, CharNo) -> C is LP + 1 ; L = 0, C = 0, CharNo = -1 ),
    syntax_text(What, Msg),
    add_msg(error, syntax_error, Msg, L, C, error(syntax_error(What), _)),
    nb_getval(skg_last_error_at, Prev),
    (   ( CharNo == Prev ; CharNo < 0 ; at_end_of_stream(S) ) -> Stop = true ; Stop = false ),
    nb_setval(skg_last_error_at, CharNo).
read_error(E, _, true) :-
    error_kind(E, Kind),
    error_message(E, Msg),
    add_msg(error, Kind, Msg, 0, 0, E).

syntax_text(What, Msg) :-
    (   catch(message_to_codes(error(syntax_error(What), _), Codes), _, fail)
    ->  string_codes(Msg0, Codes)
    ;   format(string(Msg0), "~w", [What])
    ),
    (   sub_string(Msg0, 0, _, _, "Syntax error") -> Msg = Msg0 ; string_concat("Syntax error: ", Msg0, Msg) ).

message_to_codes(E, Codes) :-
    message_lines(E, S),
    string_codes(S, Codes).

singleton_warning(_, [], _, _) :- !.
singleton_warning((:- _), _, _, _) :- !.
singleton_warning(_, Ss, L, C) :-
    findall(N, (member(N=_, Ss), \+ sub_atom(N, 0, _, _, '_')), Names),
    (   Names == []
    ->  true
    ;   atomic_list_concat(Names, ', ', NL),
        format(string(Msg), "Singleton variables: [~w] (a variable used once is usually a typo; write _~w if it is meant)", [NL, NL]),
        add_msg(warning, singleton, Msg, L, C, none)
    ).

add_msg(Sev, Kind, Msg, L, C, Term) :-
    (   aggregate_all(count, msg(_, _, _, _, _, _), N), N >= 500
    ->  true                               % a wall of errors says no more after 500
    ;   assertz(msg(Sev, Kind, Msg, L, C, Term))
    ).

take_messages(Msgs) :-
    findall((L-C)-_{severity:Sev, kind:Kind, message:Msg, line:L, column:C},
            ( retract(msg(Sev0, Kind0, Msg, L, C, _)), atom_string(Sev0, Sev), atom_string(Kind0, Kind) ),
            Keyed),
    keysort(Keyed, Sorted),                % by position; stable, so a term's messages keep their order
    pairs_values(Sorted, Msgs).

term_message(E, L, C) :-
    error_kind(E, Kind),
    error_message(E, Msg),
    add_msg(error, Kind, Msg, L, C, E).

add_term(_, T, _, _, _) :-
    var(T), !,
    throw(skg_error(instantiation_error, "a clause cannot be a variable", none)).
add_term(M, (:- D), Vs, L, C) :- !,
    directive(M, D, Vs, L, C).
add_term(_, (?- _), _, _, _) :- !,
    throw(skg_error(permission_error, "'?- Goal.' lines in source text are not run: call run_goal with the goal", none)).
add_term(_, T, Vs, L, _) :-
    current_unit(U, _),
    test_clause(T, Name, Opts, Body), !,
    add_test(U, Name, Opts, Body, Vs, L).
add_term(M, (H --> B), Vs, L, C) :- !,
    dcg_translate_rule((H --> B), Clause),
    add_clause(M, Clause, Vs, L, C).
add_term(M, T, Vs, L, C) :-
    add_clause(M, T, Vs, L, C).

add_clause(M, Clause, Vs, L, C) :-
    clause_parts(Clause, H, B),
    check_head(M, H),
    (   B == true -> true ; library_policy(B) ),
    catch(assertz(M:Clause, Ref), E, head_error(E)),
    note_predicate(H),
    (   Vs == [] -> true ; store_display(Ref, Clause, Vs) ),
    (   B == true -> true ; assertz(body_check(Ref, L, C)) ),
    nb_getval(skg_loaded, N0),
    N is N0 + 1,
    nb_setval(skg_loaded, N).

clause_parts(Clause, H, B) :-
    (   nonvar(Clause), Clause = (H :- B) -> true ; H = Clause, B = true ).

check_head(_, H) :-
    var(H), !,
    throw(skg_error(instantiation_error, "a clause head cannot be a variable", none)).
check_head(_, Mod:H) :- !,
    format(string(Msg), "clauses may only define predicates of the session module, not of module ~q (~q)", [Mod, Mod:H]),
    throw(skg_error(permission_error, Msg, Mod:H)).
check_head(_, H) :-
    \+ callable(H), !,
    format(string(Msg), "~q cannot be a clause head: it is not an atom or compound term", [H]),
    throw(skg_error(type_error, Msg, H)).
check_head(_, H) :-
    functor(H, N, A),
    pred_seq(N, A, _), !.                  % known: checked when its first clause came
check_head(_, H) :-
    functor(H, N, A),
    (   control(N/A) ; current_predicate(system:N/A) ), !,
    format(string(Msg), "~w/~w is a built-in predicate and cannot be redefined; give your predicate another name", [N, A]),
    throw(skg_error(permission_error, Msg, N/A)).
check_head(_, _).

control((',')/2). control((;)/2). control((->)/2). control((*->)/2). control((\+)/1). control((:-)/1). control((:-)/2).
control((?-)/1). control((!)/0). control(call/_). control((:)/2). control(('|')/2).

head_error(error(permission_error(modify, static_procedure, PI), _)) :- !,
    pi_text(PI, Name),
    format(string(Msg), "~w cannot be redefined (a built-in or imported library predicate); give your predicate another name", [Name]),
    throw(skg_error(permission_error, Msg, PI)).
head_error(E) :-
    throw(E).

note_predicate(H) :-
    functor(H, N, A),
    (   pred_seq(N, A, _)
    ->  true
    ;   flag(skg_seq, Seq, Seq + 1),
        assertz(pred_seq(N, A, Seq))
    ).

store_display(Ref, Clause, Vs) :-
    copy_term(Clause-Vs, Display-Vs2),
    maplist(bind_var_name, Vs2),
    assertz(display(Ref, Display)).

bind_var_name(Name = V) :-
    (   var(V) -> V = '$VAR'(Name) ; true ).

%!  library_policy(+Term)
%   The sandbox lets goals load any library; we allow only pure ones.
library_policy(T) :-
    forall(( sub_term(S, T), compound(S) ), library_ok(S)).

library_ok(use_module(Spec)) :- !, allowed_spec(Spec).
library_ok(use_module(Spec, _)) :- !, allowed_spec(Spec).
library_ok(ensure_loaded(Spec)) :- !, allowed_spec(Spec).
library_ok(load_files(Spec, _)) :- !, allowed_spec(Spec).
library_ok(autoload(Spec)) :- !, allowed_spec(Spec).
library_ok(autoload(Spec, _)) :- !, allowed_spec(Spec).
library_ok(_).

allowed_spec(Spec) :-
    (   nonvar(Spec), Spec = library(L), ground(L), allowed_library(L)
    ->  true
    ;   format(string(Msg), "loading ~q is not allowed: only library(L) for pure libraries L (lists, apply, aggregate, clpfd, ...)", [Spec]),
        throw(skg_error(permission_error, Msg, Spec))
    ).

% Clause bodies are checked with the sandbox after the whole text is loaded
% (so that predicates defined further down are known). A body that calls
% something unsafe is removed; a call of an undefined predicate is a warning.
check_bodies(M) :-
    findall(Ref-L-C, retract(body_check(Ref, L, C)), Checks),
    (   Checks == []
    ->  true
    ;   setup_call_cleanup(assertz(checking_module(M)),
                           forall(member(Ref-L-C, Checks), check_body(M, Ref, L, C)),
                           retractall(checking_module(_)))
    ).

check_body(M, Ref, L, C) :-
    (   catch(clause(M:H, B, Ref), _, fail)
    ->  catch(safe_goal(M:B), E, true),
        (   var(E)
        ->  true
        ;   E = error(existence_error(procedure, G), _)
        ->  undefined_warning(G, L, C)
        ;   E = error(instantiation_error, _)
        ->  add_msg(warning, instantiation_error,
                    "the clause calls a goal held in a variable, which the sandbox cannot check: goals that reach it will be refused", L, C, E)
        ;   erase(Ref),
            retractall(display(Ref, _)),
            forget_if_empty(M, H),
            nb_getval(skg_loaded, N0), N is N0 - 1, nb_setval(skg_loaded, N),
            error_kind(E, Kind),
            error_message(E, Msg0),
            string_concat("clause not loaded: ", Msg0, Msg),
            add_msg(error, Kind, Msg, L, C, E)
        )
    ;   true
    ).

% A predicate whose only clauses were refused is not left behind, empty.
forget_if_empty(M, H) :-
    functor(H, N, A),
    (   \+ clause(M:H, _), \+ declared_dynamic(N, A)
    ->  catch(abolish(M:N/A), _, true),
        retractall(pred_seq(N, A, _))
    ;   true
    ).

undefined_warning(G, L, C) :-
    pi_text(G, Name),
    (   undefined_seen(Name)
    ->  true
    ;   assertz(undefined_seen(Name)),
        format(string(Msg), "~w is called but has no clauses: define it, fix its name or arity, or declare it with ':- dynamic ~w.'", [Name, Name]),
        add_msg(warning, existence_error, Msg, L, C, none)
    ).

% ---------------------------------------------------------------- directives

directive(_, D, _, _, _) :-
    var(D), !,
    throw(skg_error(instantiation_error, "a directive cannot be a variable", none)).
directive(M, dynamic(Specs), _, _, _) :- !,
    pi_specs(Specs, PIs),
    dynamic(M:Specs),
    forall(member(N/A, PIs), ( declared_dynamic(N, A) -> true ; assertz(declared_dynamic(N, A)) )),
    forall(member(N/A, PIs), ( functor(H, N, A), note_predicate(H) )),
    record_directive(dynamic(Specs)).
directive(_, discontiguous(Specs), _, _, _) :- !,
    pi_specs(Specs, _),                    % clauses are added one by one: nothing to do
    record_directive(discontiguous(Specs)).
directive(M, table(Specs), _, _, _) :- !,
    table_specs(Specs),
    table(M:Specs),
    record_directive(table(Specs)).
directive(M, op(P, T, Names), _, _, _) :- !,
    op_directive(M, P, T, Names),
    record_directive(op(P, T, Names)).
directive(M, use_module(Spec), _, _, _) :- !,
    allowed_spec(Spec),
    M:use_module(Spec),
    record_directive(use_module(Spec)).
directive(M, use_module(Spec, Imports), _, _, _) :- !,
    allowed_spec(Spec),
    M:use_module(Spec, Imports),
    record_directive(use_module(Spec, Imports)).
directive(M, ensure_loaded(Spec), _, _, _) :- !,
    allowed_spec(Spec),
    M:use_module(Spec),
    record_directive(use_module(Spec)).
directive(_, begin_tests(U), _, L, _) :- !,
    begin_unit(U, [], L).
directive(_, begin_tests(U, Opts), _, L, _) :- !,
    begin_unit(U, Opts, L).
directive(_, end_tests(U), _, _, _) :- !,
    (   retract(current_unit(U, _))
    ->  true
    ;   format(string(Msg), "end_tests(~q) without begin_tests(~q)", [U, U]),
        throw(skg_error(syntax_error, Msg, none))
    ).
directive(_, module(_, _), _, L, C) :- !,
    add_msg(warning, permission_error, "module/2 ignored: the session has a module of its own", L, C, none).
directive(_, style_check(_), _, L, C) :- !,
    add_msg(informational, permission_error, "style_check/1 ignored", L, C, none).
directive(_, set_prolog_flag(F, V), _, _, _) :- !,
    format(string(Msg), "set_prolog_flag(~q, ~q) is not allowed in a session", [F, V]),
    throw(skg_error(permission_error, Msg, set_prolog_flag(F, V))).
directive(_, D, _, _, _) :-
    (   callable(D), functor(D, initialization, _)
    ->  throw(skg_error(permission_error, "initialization directives are not run: call run_goal with the goal", D))
    ;   callable(D)
    ->  functor(D, N, A),
        format(string(Msg), "the directive ~q/~w is not allowed: allowed are dynamic/1, discontiguous/1, table/1, op/3, use_module(library(L)) of pure libraries (lists, apply, aggregate, clpfd, ...) and begin_tests/end_tests; run other goals with run_goal", [N, A]),
        throw(skg_error(permission_error, Msg, D))
    ;   format(string(Msg), "~q is not a directive", [D]),
        throw(skg_error(type_error, Msg, D))
    ).

record_directive(D) :-
    flag(skg_seq, Seq, Seq + 1),
    assertz(directive_src(Seq, D)).

pi_specs(S, _) :- var(S), !, throw(skg_error(instantiation_error, "a predicate indicator cannot be a variable", none)).
pi_specs(S, PIs) :- phrase(pi_list(S), PIs), !.
pi_specs(S, _) :-
    format(string(Msg), "~q is not a list of predicate indicators Name/Arity of the session module", [S]),
    throw(skg_error(type_error, Msg, S)).

pi_list(V) --> { var(V) }, !, { fail }.
pi_list((A, B)) --> !, pi_list(A), pi_list(B).
pi_list([]) --> !.
pi_list([H|T]) --> !, pi_list(H), pi_list(T).
pi_list(N/A) --> { atom(N), integer(A), A >= 0 }, !, [N/A].
pi_list(N//A) --> { atom(N), integer(A), A >= 0 }, !, { A2 is A + 2 }, [N/A2].

table_specs(S) :- var(S), !, throw(skg_error(instantiation_error, "a table specification cannot be a variable", none)).
table_specs((A, B)) :- !, table_specs(A), table_specs(B).
table_specs([]) :- !.
table_specs([H|T]) :- !, table_specs(H), table_specs(T).
table_specs(S as Opts) :- !,
    (   sub_term(X, Opts), X == shared
    ->  throw(skg_error(permission_error, "shared tables are not allowed in a session", S as Opts))
    ;   table_specs(S)
    ).
table_specs(_:_) :- !,
    throw(skg_error(permission_error, "tables may only be declared for predicates of the session module", none)).
table_specs(N/A) :- atom(N), integer(A), !.
table_specs(N//A) :- atom(N), integer(A), !.
table_specs(S) :- callable(S), \+ sub_term(_:_, S), !.   % mode-directed: path(_,_,min)
table_specs(S) :-
    format(string(Msg), "~q is not a table specification", [S]),
    throw(skg_error(type_error, Msg, S)).

op_directive(M, P, T, Names) :-
    (   integer(P), between(0, 1200, P) -> true
    ;   throw(skg_error(type_error, "op/3: the priority must be an integer 0..1200", P)) ),
    (   atom(T), memberchk(T, [xfx, xfy, yfx, fy, fx, xf, yf]) -> true
    ;   throw(skg_error(type_error, "op/3: the type must be one of xfx, xfy, yfx, fy, fx, xf, yf", T)) ),
    (   is_list(Names) -> List = Names ; List = [Names] ),
    forall(member(N, List),
           (   atom(N) -> true
           ;   throw(skg_error(type_error, "op/3: operator names must be atoms of the session module", N)) )),
    forall(member(N, List),
           (   protected_op(N)
           ->  format(string(Msg), "op/3 may not change the operator ~q", [N]),
               throw(skg_error(permission_error, Msg, N))
           ;   true )),
    forall(member(N, List), op(P, T, M:N)).

protected_op((:-)). protected_op((-->)). protected_op((?-)). protected_op((',')). protected_op(('|')).
protected_op((:)). protected_op(('.')). protected_op((dynamic)). protected_op((table)). protected_op((initialization)).

% ---------------------------------------------------------------- tests (load side)

test_clause((H :- B), Name, Opts, B) :- nonvar(H), test_head(H, Name, Opts).
test_clause(H, Name, Opts, true) :- test_head(H, Name, Opts).

test_head(test(Name), Name, []).
test_head(test(Name, Opts), Name, Opts).

begin_unit(U, Opts, L) :-
    (   atom(U) -> true ; throw(skg_error(type_error, "begin_tests/1: the unit name must be an atom", U)) ),
    (   current_unit(Open, _)
    ->  format(string(Msg), "begin_tests(~q) inside the unit ~q: units do not nest", [U, Open]),
        throw(skg_error(syntax_error, Msg, none))
    ;   true
    ),
    retractall(test_case(U, _, _, _, _, _, _)),
    retractall(unit_options(U, _)),
    assertz(unit_options(U, Opts)),
    assertz(current_unit(U, L)).

add_test(U, Name, Opts, Body, Vs, L) :-
    library_policy(Opts-Body),
    flag(skg_seq, Seq, Seq + 1),
    (   Vs == [] -> Display = test(Name, Opts) - Body
    ;   copy_term(test(Name, Opts)-Body-Vs, Display0-Vs2), maplist(bind_var_name, Vs2), Display = Display0
    ),
    assertz(test_case(U, Seq, Name, Opts, Body, L, Display)).

% ---------------------------------------------------------------- replace

replace(M, Req, Reply) :-
    atom_string(N, Req.name),
    A = Req.arity,
    functor(H, N, A),
    retractall(msg(_, _, _, _, _, _)),
    catch(check_head(M, H), E0, (term_message(E0, 0, 0))),
    (   msg(error, _, _, _, _, _)
    ->  true
    ;   predicate_property(M:H, imported_from(Lib))
    ->  format(string(Msg), "~w/~w is imported from library ~w; it cannot be replaced", [N, A, Lib]),
        add_msg(error, permission_error, Msg, 0, 0, none)
    ;   setup_call_cleanup(open_string(Req.text, S), collect_terms(M, S, Items), close(S)),
        maplist(check_replacement(M, N, A), Items)
    ),
    (   msg(error, _, _, _, _, _)
    ->  take_messages(Msgs),
        kb_clauses(M, K),
        Reply = _{ok:true, replaced:false, clause_count:0, messages:Msgs, kb_clauses:K}
    ;   findall(Old, clause(M:H, _, Old), Olds),
        transaction(( retractall(M:H),
                      forall(member(Old, Olds), retractall(display(Old, _))),
                      forall(member(item(T, Vs, _, _), Items), add_replacement(M, T, Vs)) )),
        ( local_pi(M, N, A) -> true ; dynamic(M:N/A) ),
        note_predicate(H),
        take_messages(Msgs),
        length(Items, Count),
        kb_clauses(M, K),
        Reply = _{ok:true, replaced:true, clause_count:Count, messages:Msgs, kb_clauses:K, kb_modified:true}
    ).

collect_terms(M, S, Items) :-
    nb_setval(skg_last_error_at, -1),
    collect_terms_(M, S, Items).

collect_terms_(M, S, Items) :-
    catch(read_term(S, T, [module(M), syntax_errors(error), term_position(P), variable_names(Vs), singletons(Ss)]), E, true),
    (   nonvar(E)
    ->  read_error(E, S, Stop),
        (   Stop == true -> Items = [] ; collect_terms_(M, S, Items) )
    ;   T == end_of_file
    ->  Items = []
    ;   term_pos(P, L, C),
        singleton_warning(T, Ss, L, C),
        Items = [item(T, Vs, L, C)|Rest],
        collect_terms_(M, S, Rest)
    ).

check_replacement(M, N, A, item(T, _, L, C)) :-
    catch(check_replacement_(M, N, A, T), E, term_message(E, L, C)).

check_replacement_(_, _, _, T) :-
    var(T), !,
    throw(skg_error(instantiation_error, "a clause cannot be a variable", none)).
check_replacement_(_, _, _, (:- _)) :- !,
    throw(skg_error(permission_error, "directives are not allowed in replace_predicate: only clauses of the predicate", none)).
check_replacement_(M, N, A, T0) :-
    (   T0 = (_ --> _) -> dcg_translate_rule(T0, T) ; T = T0 ),
    clause_parts(T, H, B),
    (   var(H) -> throw(skg_error(instantiation_error, "a clause head cannot be a variable", none)) ; true ),
    (   callable(H), functor(H, N, A)
    ->  true
    ;   format(string(Msg), "the clause for ~q is not a clause of ~w/~w: replace_predicate takes only clauses of that predicate", [H, N, A]),
        throw(skg_error(permission_error, Msg, H))
    ),
    (   B == true
    ->  true
    ;   library_policy(B),
        setup_call_cleanup(( assertz(checking_module(M)), assertz(extra_local(N, A)) ),
                           catch(safe_goal(M:B), E, true),
                           ( retractall(checking_module(_)), retractall(extra_local(_, _)) )),
        (   var(E) -> true
        ;   E = error(existence_error(procedure, G), _) -> term_pos_warning(G)
        ;   E = error(instantiation_error, _) -> true
        ;   throw(E)
        )
    ).

term_pos_warning(G) :-
    pi_text(G, Name),
    format(string(Msg), "~w is called but has no clauses", [Name]),
    add_msg(warning, existence_error, Msg, 0, 0, none).

add_replacement(M, T0, Vs) :-
    (   T0 = (_ --> _) -> dcg_translate_rule(T0, T) ; T = T0 ),
    assertz(M:T, Ref),
    (   Vs == [] -> true ; store_display(Ref, T, Vs) ).

% ---------------------------------------------------------------- goals

%!  parse_goal(+M, +Text, -Goal, -Bindings)
%   Exactly one term: a missing final '.' is supplied, and any text after the
%   term (a second goal, '. halt.') is a syntax error.
parse_goal(M, Text, Goal, Vs) :-
    (   catch(read_one(M, Text, Goal0, Vs0), error(syntax_error(end_of_file), _), fail)
    ->  true
    ;   string_concat(Text, "\n.", Text1),
        read_one(M, Text1, Goal0, Vs0)
    ),
    (   Goal0 == end_of_file, \+ sub_string(Text, _, _, _, "end_of_file")
    ->  throw(skg_error(syntax_error, "the goal is empty", none))
    ;   true
    ),
    Goal = Goal0, Vs = Vs0.

read_one(M, Text, T, Vs) :-
    setup_call_cleanup(open_string(Text, S),
        (   catch(read_term(S, T, [module(M), variable_names(Vs), syntax_errors(error)]), E, goal_syntax(E)),
            catch(read_term(S, T2, [module(M), syntax_errors(error)]), E2, true),
            (   nonvar(E2), E2 = error(syntax_error(end_of_file), _)
            ->  throw(E2)                  % more text without a final '.': parse_goal adds one
            ;   nonvar(E2)
            ->  throw(skg_error(syntax_error, "the goal text holds more than one term: give one goal (join goals with ',')", none))
            ;   T2 \== end_of_file
            ->  throw(skg_error(syntax_error, "the goal text holds more than one term: give one goal (join goals with ',')", none))
            ;   true
            )
        ),
        close(S)).

goal_syntax(error(syntax_error(end_of_file), Ctx)) :- !,
    throw(error(syntax_error(end_of_file), Ctx)).
goal_syntax(error(syntax_error(What), Ctx)) :- !,
    syntax_text(What, Msg0),
    (   Ctx = stream(_, L, LP, _) -> C is LP + 1, format(string(Msg), "~w (goal line ~w, column ~w)", [Msg0, L, C]) ; Msg = Msg0 ),
    format(string(T), "~q", [syntax_error(What)]),
    throw(skg_error(syntax_error, Msg, T)).
goal_syntax(E) :- throw(E).

check_goal(M, Goal) :-
    (   var(Goal) -> throw(error(instantiation_error, goal)) ; true ),
    (   callable(Goal) -> true ; throw(error(type_error(callable, Goal), _)) ),
    library_policy(Goal),
    safe_goal(M:Goal).

run(M, Req, Reply) :-
    parse_goal(M, Req.goal, Goal, Vs0),
    exclude(hidden_var, Vs0, Vs),
    check_goal(M, Goal),
    kb_stamp(M, S0),
    retractall(answer(_, _)),
    nb_setval(skg_count, 0),
    nb_setval(skg_more, false),
    nb_setval(skg_depth_hit, false),
    Skip = Req.skip, Max = Req.max_answers, Depth = Req.max_depth, Id = Req.id, Limit = Req.time_limit,
    with_capture(Req.max_output_chars,
                 catch(call_with_time_limit(Limit, collect(Id, M, Goal, Vs, Skip, Max, Depth)), E, true),
                 Output, OutTrunc),
    findall(A, answer(A, _), Answers),
    findall(R, answer(_, R), Residuals),
    retractall(answer(_, _)),
    kb_stamp(M, S1),
    ( S0 == S1 -> Modified = false ; Modified = true ),
    nb_getval(skg_more, More),
    nb_getval(skg_depth_hit, DepthHit),
    length(Answers, NA),
    (   var(E)
    ->  (   NA > 0 -> Outcome = "success"
        ;   DepthHit == true -> Outcome = "depth_exceeded"
        ;   Outcome = "failure"
        ),
        ( ( More == true ; DepthHit == true, NA > 0 ) -> Truncated = true ; Truncated = false )
    ;   E == time_limit_exceeded
    ->  Outcome = "timeout", Truncated = true
    ;   E == skg_cancelled
    ->  Outcome = "cancelled", Truncated = true
    ;   throw(E)
    ),
    kb_clauses(M, K),
    Reply = _{ok:true, outcome:Outcome, answers:Answers, residuals:Residuals, output:Output,
              output_truncated:OutTrunc, truncated:Truncated, depth_limited:DepthHit,
              kb_modified:Modified, kb_clauses:K}.

hidden_var(Name = _) :- sub_atom(Name, 0, _, _, '_').

collect(Id, M, Goal, Vs, Skip, Max, Depth) :-
    Stop is Skip + Max,
    cancellable_on(Id),
    (   call_with_depth_limit(call_cleanup(M:Goal, Det = true), Depth, R),
        (   R == depth_limit_exceeded
        ->  nb_setval(skg_depth_hit, true), fail
        ;   true
        ),
        nb_getval(skg_count, N0), N is N0 + 1, nb_setval(skg_count, N),
        (   N > Skip -> record_answer(M, Vs) ; true ),
        N >= Stop,
        (   var(Det) -> nb_setval(skg_more, true) ; true )   % before the cut below binds Det
    ->  true
    ;   true
    ),
    cancellable_off.

% Stamp of the knowledge base: it changes when a goal asserts or retracts.
kb_stamp(M, Max-Count) :-
    aggregate_all(max(G)-count,
                  ( local_pi(M, N, A), functor(H, N, A), predicate_property(M:H, last_modified_generation(G)) ),
                  Max-Count), !.
kb_stamp(_, 0-0).

%!  with_capture(+MaxChars, :Goal, -Output, -Truncated)
%   Runs Goal with current_output sent to a capture stream that keeps at most
%   MaxChars characters (the rest is counted and dropped).
:- meta_predicate with_capture(+, 0, -, -).
with_capture(Max, Goal, Output, Truncated) :-
    retractall(out_chunk(_)),
    nb_setval(skg_out_len, 0),
    nb_setval(skg_out_cap, Max),
    nb_setval(skg_out_trunc, false),
    current_output(Old),
    open_prolog_stream(skg_session, write, S, []),
    set_stream(S, buffer(full)),
    setup_call_cleanup(set_output(S), once(Goal), ( set_output(Old), catch(close(S), _, true) )),
    findall(C, retract(out_chunk(C)), Cs),
    atomics_to_string(Cs, Output0),
    string_length(Output0, Len),
    (   Len > Max -> sub_string(Output0, 0, Max, _, Output), Truncated = true
    ;   Output = Output0, nb_getval(skg_out_trunc, Truncated)
    ).

stream_write(_, String) :-
    nb_getval(skg_out_len, N0),
    nb_getval(skg_out_cap, Cap),
    (   N0 >= Cap
    ->  nb_setval(skg_out_trunc, true)
    ;   string_length(String, L),
        N is N0 + L,
        nb_setval(skg_out_len, N),
        assertz(out_chunk(String))
    ).

stream_close(_).

% ---------------------------------------------------------------- typed answers

record_answer(M, Vs) :-
    copy_term(Vs, Vs2, Residual0),
    maplist(strip_module_goal, Residual0, Residual),
    term_variables(Vs2-Residual, Free),
    name_free(Free, 1),
    findall(Name-J, ( member(Name=V, Vs2), json_value(V, J) ), Pairs),
    dict_pairs(Answer, _, Pairs),
    (   Residual == []
    ->  RText = ""
    ;   residual_text(M, Residual, RText)
    ),
    assertz(answer(Answer, RText)).

strip_module_goal(_:G, G) :- !.
strip_module_goal(G, G).

name_free([], _).
name_free([V|Vs], I) :-
    atom_concat('_G', I, N),
    V = '$VAR'(N),
    I1 is I + 1,
    name_free(Vs, I1).

residual_text(M, Goals, Text) :-
    with_output_to(string(Text),
        forall(nth1(I, Goals, G),
               (   ( I > 1 -> write(', ') ; true ),
                   write_term(G, [quoted(true), numbervars(true), module(M), max_depth(50), portray(false)])
               ))).

json_value(V, J) :-
    (   cyclic_term(V)
    ->  format(string(T0), "~W", [V, [quoted(true), numbervars(true), cycles(true), portray(false)]]),
        cap_string(T0, 20000, T),
        J = _{term:T}
    ;   term_size(V, Size), Size > 200000
    ->  term_text(V, T), J = _{term:T}
    ;   json_term(V, J)
    ).

json_term(V, J) :- var(V), !, J = _{var:"_"}.
json_term('$VAR'(N), J) :- atom(N), sub_atom(N, 0, _, _, '_G'), !, atom_string(N, S), J = _{var:S}.
json_term(V, V) :- integer(V), !.
json_term(V, J) :- float(V), !,
    (   float_class(V, C), memberchk(C, [nan, infinite]) -> term_text(V, T), J = _{term:T} ; J = V ).
json_term(V, J) :- number(V), !, term_text(V, T), J = _{term:T}.     % rationals
json_term(V, J) :- string(V), !, J = _{string:V}.
json_term([], []) :- !.
json_term(V, J) :- atom(V), !, atom_string(V, J).
json_term(V, J) :- is_list(V), !, maplist(json_term, V, J).
json_term(V, J) :- is_dict(V), !, term_text(V, T), J = _{term:T}.
json_term(V, J) :- compound(V), !,
    compound_name_arguments(V, F, Args),
    atom_string(F, FS),
    maplist(json_term, Args, JArgs),
    J = _{functor:FS, args:JArgs}.
json_term(V, J) :- term_text(V, T), J = _{term:T}.                    % blobs

term_text(V, T) :-
    format(string(T0), "~W", [V, [quoted(true), numbervars(true), max_depth(200), cycles(true), portray(false)]]),
    cap_string(T0, 20000, T).

cap_string(S, Max, Out) :-
    string_length(S, L),
    (   L =< Max -> Out = S ; sub_string(S, 0, Max, _, S1), string_concat(S1, "...", Out) ).

% ---------------------------------------------------------------- errors

error_dict(E, _{kind:K, message:Msg, prolog_term:T}) :-
    error_kind(E, K0), atom_string(K0, K),
    error_term(E, T),
    copy_term(E, E2),                      % printing the message may bind its variables
    error_message(E2, Msg0), cap_string(Msg0, 4000, Msg).

error_term(skg_error(_, _, none), null) :- !.
error_term(skg_error(_, _, T), S) :- !, ( string(T) -> S = T ; term_text_short(T, S) ).
error_term(E, S) :- term_text_short(E, S).

term_text_short(T, S) :-
    format(string(S0), "~W", [T, [quoted(true), max_depth(30), portray(false), cycles(true)]]),
    cap_string(S0, 2000, S).

error_kind(skg_error(K, _, _), K) :- !.
error_kind(error(Formal, _), K) :- nonvar(Formal), formal_kind(Formal, K), !.
error_kind(_, execution_exception).

formal_kind(syntax_error(_), syntax_error).
formal_kind(existence_error(_, _), existence_error).
formal_kind(existence_error(_, _, _), existence_error).
formal_kind(type_error(_, _), type_error).
formal_kind(instantiation_error, instantiation_error).
formal_kind(permission_error(_, _, _), permission_error).
formal_kind(resource_error(_), resource_error).

error_message(skg_error(_, Msg, _), Msg) :- !.
error_message(error(existence_error(procedure, G), sandbox(_, _)), Msg) :- !,
    pi_text(G, Name),
    format(string(Msg), "Unknown procedure: ~w (it is called but has no clauses: define it, fix its name or arity, or declare it with ':- dynamic ~w.')", [Name, Name]).
error_message(error(permission_error(call, sandboxed, G), sandbox(_, Parents)), Msg) :- !,
    pi_text(G, Name),
    (   Parents = [P|_] -> pi_text(P, PN), format(string(Via), " (reached from ~w)", [PN]) ; Via = "" ),
    format(string(Msg), "refused by the sandbox: ~w may not be called in a session~w; sessions cannot read or write files, start processes, open streams or sockets, change flags, or touch other modules", [Name, Via]).
error_message(error(instantiation_error, sandbox(_, _)), Msg) :- !,
    Msg = "refused by the sandbox: a goal is called through a variable (call/N of an unbound goal), which cannot be checked".
error_message(error(syntax_error(What), _), Msg) :- !,
    syntax_text(What, Msg).
error_message(error(resource_error(R), _), Msg) :- !,
    (   R == stack -> current_prolog_flag(stack_limit, B), MB is B // (1024 * 1024),
        format(string(Msg), "resource error: the Prolog stacks are full (limit ~w MB); the goal builds too large a term or recurses too deep", [MB])
    ;   R == table_space -> format(string(Msg), "resource error: the table space is full", [])
    ;   format(string(Msg), "resource error: ~w", [R])
    ).
error_message(E, Msg) :-
    E \= error(_, _), !,
    format(string(Msg), "the goal raised the exception ~W (uncaught)", [E, [quoted(true), max_depth(20), portray(false)]]).
error_message(E, Msg) :-
    message_lines(E, Msg), !.
error_message(E, Msg) :-
    format(string(Msg), "~q", [E]).

message_lines(E, S) :-
    catch(( phrase('$messages':translate_message(E), Lines),
            with_output_to(string(S0), print_message_lines(current_output, '', Lines)),
            split_string(S0, "", " \n", [S]) ), _, fail).

pi_text(V, "_") :- var(V), !.
pi_text(_:PI, S) :- !, pi_text(PI, S).
pi_text(N/A, S) :- !, format(string(S), "~w/~w", [N, A]).
pi_text(N//A, S) :- !, format(string(S), "~w//~w", [N, A]).
pi_text(G, S) :- callable(G), !, functor(G, N, A), format(string(S), "~w/~w", [N, A]).
pi_text(X, S) :- format(string(S), "~w", [X]).

% ---------------------------------------------------------------- inspect / source

inspect(M, Req, Reply) :-
    atom_string(N, Req.name),
    A = Req.arity,
    functor(H, N, A),
    (   local_pi(M, N, A)
    ->  (   ( declared_dynamic(N, A) ; \+ pred_seq(N, A, _) ) -> Type = "dynamic" ; Type = "user" ),
        ( predicate_property(M:H, number_of_clauses(Count)) -> true ; Count = 0 ),
        findall(Ref, clause(M:H, _, Ref), Refs),
        ( length(Refs, L), L > 1000 -> length(Shown, 1000), append(Shown, _, Refs) ; Shown = Refs ),
        maplist(clause_text(M), Shown, Texts),
        ( predicate_property(M:H, tabled) -> Tabled = true ; Tabled = false ),
        ( predicate_property(M:H, dynamic) -> Dyn = true ; Dyn = false ),
        Reply = _{ok:true, found:true, type:Type, exported:false, clause_count:Count, clauses:Texts, tabled:Tabled, dynamic:Dyn}
    ;   current_predicate(system:N/A)
    ->  Reply = _{ok:true, found:true, type:"builtin", exported:true, clause_count:0, clauses:[], tabled:false, dynamic:false}
    ;   current_predicate(M:N/A), predicate_property(M:H, imported_from(_))
    ->  library_reply(M:H, Reply)
    ;   catch('$find_library'(M, N, A, _, _), _, fail)
    ->  Reply = _{ok:true, found:true, type:"library", exported:true, clause_count:0, clauses:[], tabled:false, dynamic:false}
    ;   findall(S, ( local_pi(M, N2, A2), format(string(S), "~w/~w", [N2, A2]) ), Ps),
        findall(S, ( between(0, 8, A2), A2 =\= A, functor(H2, N, A2),
                     ( current_predicate(system:N/A2) ; catch('$find_library'(M, N, A2, _, _), _, fail) ),
                     format(string(S), "~w/~w", [N, A2]) ), Same),
        Reply = _{ok:true, found:false, type:null, exported:false, clause_count:0, clauses:[], tabled:false, dynamic:false,
                  predicates:Ps, same_name:Same}
    ).

library_reply(MH, Reply) :-
    ( predicate_property(MH, number_of_clauses(C)) -> true ; C = 0 ),
    Reply = _{ok:true, found:true, type:"library", exported:true, clause_count:C, clauses:[], tabled:false, dynamic:false}.

clause_text(M, Ref, Text) :-
    (   display(Ref, T)
    ->  true
    ;   clause(M:H, B, Ref),
        ( B == true -> T = H ; T = (H :- B) )
    ),
    portray_text(M, T, Text).

% Printed with the operators of the session module (clpfd's #=, user ops).
portray_text(M, T, Text) :-
    with_output_to(string(Text0), portray_clause(current_output, T, [portray(false), module(M)])),
    split_string(Text0, "", "\n", [Text]).

source(M, Text) :-
    with_output_to(string(Text0), source_(M)),
    Text = Text0.

source_(M) :-
    forall(directive_src(_, D), format(":- ~W.~n", [D, [quoted(true), portray(false), spacing(next_argument), module(M)]])),
    ( directive_src(_, _) -> nl ; true ),
    findall(Seq-(N/A), ( pred_seq(N, A, Seq), local_pi(M, N, A) ), Known),
    findall(N/A, ( local_pi(M, N, A), \+ pred_seq(N, A, _) ), Others0),
    sort(Others0, Others),
    sort(Known, KnownSorted),
    pairs_values(KnownSorted, KnownPIs),
    forall(member(N/A, Others), format(":- dynamic ~q.~n", [N/A])),
    ( Others == [] -> true ; nl ),
    append(KnownPIs, Others, All),
    forall(member(N/A, All),
           (   functor(H, N, A),
               (   \+ \+ clause(M:H, _, _)
               ->  forall(clause(M:H, _, Ref), ( clause_text(M, Ref, T), write(T), nl )),
                   nl
               ;   true
               )
           )),
    findall(U, unit_options(U, _), Units),
    forall(member(U, Units), unit_source(M, U)).

unit_source(M, U) :-
    unit_options(U, Opts),
    (   Opts == [] -> portray_clause((:- begin_tests(U))) ; portray_clause((:- begin_tests(U, Opts))) ),
    forall(test_case(U, _, _, _, _, _, Display),
           (   Display = test(Name, TOpts) - Body,
               ( TOpts == [] -> Head = test(Name) ; Head = test(Name, TOpts) ),
               ( Body == true -> C = Head ; C = (Head :- Body) ),
               portray_clause(current_output, C, [portray(false), module(M)])
           )),
    portray_clause((:- end_tests(U))),
    nl.

% ---------------------------------------------------------------- trace

trace_request(M, Req, Reply) :-
    parse_goal(M, Req.goal, Goal, Vs0),
    exclude(hidden_var, Vs0, Vs),
    check_goal(M, Goal),
    nb_setval(skg_nodes, 0),
    nb_setval(skg_depth_cut, false),
    nb_setval(skg_node_cut, false),
    Ctx = ctx(M, Req.max_depth, Req.max_nodes),
    Id = Req.id, Limit = Req.time_limit,
    with_capture(Req.max_output_chars,
                 catch(call_with_time_limit(Limit,
                                            ( cancellable_on(Id),
                                              ( mi(Ctx, Goal, 1, Nodes) -> Outcome = "success" ; Outcome = "failure" ),
                                              cancellable_off )),
                       E, true),
                 Output, _),
    (   var(E) -> true
    ;   E == time_limit_exceeded -> Outcome = "timeout"
    ;   E == skg_cancelled -> Outcome = "cancelled"
    ;   throw(E)
    ),
    (   Outcome == "success"
    ->  (   Nodes = [Root0], Root0 = node(G0, _, _, _), G0 =@= Goal -> Root = Root0
        ;   Root = node(Goal, none, Nodes, false)
        ),
        maplist(bind_var_name, Vs),
        term_variables(Root, Free), name_free(Free, 1),
        nb_setval(skg_tree_nodes, 0),
        tree_json(M, Root, Tree),
        nb_getval(skg_tree_nodes, Count)
    ;   Tree = null, Count = 0
    ),
    nb_getval(skg_depth_cut, DC),
    nb_getval(skg_node_cut, NC),
    Reply = _{ok:true, outcome:Outcome, tree:Tree, node_count:Count, depth_cut:DC, node_cut:NC, output:Output}.

%!  mi(+Ctx, +Goal, +Depth, -Nodes)
%   A meta-interpreter over the session's clauses. Nodes are
%   node(Goal, Rule, Children, Truncated): Rule is a clause reference, or
%   none for built-in, library and tabled predicates (leaves).
mi(_, G, _, _) :- var(G), !, throw(error(instantiation_error, _)).
mi(_, true, _, []) :- !.
mi(Ctx, (A, B), D, Ns) :- !,
    mi(Ctx, A, D, N1), mi(Ctx, B, D, N2), append(N1, N2, Ns).
mi(Ctx, (C -> T ; E), D, Ns) :- !,
    (   mi(Ctx, C, D, Nc) -> mi(Ctx, T, D, Nt), append(Nc, Nt, Ns) ; mi(Ctx, E, D, Ns) ).
mi(Ctx, (C *-> T ; E), D, Ns) :- !,
    (   mi(Ctx, C, D, Nc) *-> mi(Ctx, T, D, Nt), append(Nc, Nt, Ns) ; mi(Ctx, E, D, Ns) ).
mi(Ctx, (A ; B), D, Ns) :- !,
    (   mi(Ctx, A, D, Ns) ; mi(Ctx, B, D, Ns) ).
mi(Ctx, (C -> T), D, Ns) :- !,
    (   mi(Ctx, C, D, Nc) -> mi(Ctx, T, D, Nt), append(Nc, Nt, Ns) ).
mi(_, !, _, []) :- !.
mi(Ctx, G, D, Ns) :-
    G =.. [call, G0 | Extra], Extra \== [], !,
    (   callable(G0) -> true ; throw(error(type_error(callable, G0), _)) ),
    G0 =.. L0, append(L0, Extra, L1), G1 =.. L1,
    mi(Ctx, G1, D, Ns).
mi(Ctx, call(G), D, Ns) :- !,
    mi(Ctx, G, D, Ns).
mi(Ctx, G, D, Ns) :-
    Ctx = ctx(M, MaxD, MaxN),
    nb_getval(skg_nodes, K),
    (   K >= MaxN
    ->  nb_setval(skg_node_cut, true),
        call(M:G),
        Ns = []
    ;   K1 is K + 1,
        nb_setval(skg_nodes, K1),
        (   G \= _:_, local_predicate(M, G), \+ predicate_property(M:G, tabled)
        ->  (   D > MaxD
            ->  nb_setval(skg_depth_cut, true),
                call(M:G),
                Ns = [node(G, none, [], true)]
            ;   D1 is D + 1,
                mi_clause(Ctx, G, D1, Ref, Children),
                Ns = [node(G, Ref, Children, false)]
            )
        ;   call(M:G),
            Ns = [node(G, none, [], false)]
        )
    ).

mi_clause(Ctx, G, D, Ref, Children) :-
    Ctx = ctx(M, _, _),
    clause(M:G, Body, Ref),
    (   split_cut(Body, Pre, Post)
    ->  mi(Ctx, Pre, D, C1), !,
        mi(Ctx, Post, D, C2),
        append(C1, C2, Children)
    ;   mi(Ctx, Body, D, Children)
    ).

split_cut(!, true, true) :- !.
split_cut((!, B), true, B) :- !.
split_cut((A, B), (A, P), Q) :- split_cut(B, P, Q).

tree_json(M, node(G, Ref, Children, Trunc), _{goal:GS, rule:Rule, children:JC, truncated:Trunc}) :-
    nb_getval(skg_tree_nodes, K), K1 is K + 1, nb_setval(skg_tree_nodes, K1),
    format(string(GS0), "~W", [G, [quoted(true), numbervars(true), module(M), max_depth(30), portray(false)]]),
    cap_string(GS0, 2000, GS),
    (   Ref == none -> Rule = null ; clause_text(M, Ref, Rule) ),
    maplist(tree_json(M), Children, JC).

% ---------------------------------------------------------------- tests (run side)

tests_request(M, Req, Reply) :-
    retractall(msg(_, _, _, _, _, _)),
    (   get_dict(text, Req, Text)
    ->  load_text(M, Text, _)
    ;   true
    ),
    take_messages(Msgs),
    get_time(T0),
    Deadline is T0 + Req.time_limit,
    findall(U-Seq, test_case(U, Seq, _, _, _, _, _), Keys0),
    sort(2, @<, Keys0, Keys),
    cancellable_on(Req.id),
    catch(run_tests_(M, Keys, Deadline, Results), skg_cancelled, Results = []),
    cancellable_off,
    kb_clauses(M, K),
    Reply = _{ok:true, results:Results, messages:Msgs, kb_clauses:K, kb_modified:true}.

run_tests_(_, [], _, []).
run_tests_(M, [U-Seq|T], Deadline, [R|Rs]) :-
    (   test_case(U, Seq, Name, Opts, Body, Line, _)
    ->  format(string(NameS), "~w", [Name]),
        ( unit_options(U, UO0) -> options_list(UO0, UO) ; UO = [] ),
        run_test(M, UO, Name, Opts, Body, Deadline, Status, Msg),
        atom_string(U, US),
        R = _{unit:US, test:NameS, status:Status, message:Msg, line:Line}
    ;   R = _{unit:"", test:"", status:"skipped", message:"removed", line:0}
    ),
    run_tests_(M, T, Deadline, Rs).

options_list(O, L) :- is_list(O), !, L = O.
options_list(O, [O]).

run_test(M, UnitOpts, _, Opts0, Body, Deadline, Status, Msg) :-
    options_list(Opts0, Opts),
    get_time(Now),
    Left is Deadline - Now,
    (   member(blocked(R), UnitOpts) -> Status = "skipped", format(string(Msg), "unit blocked: ~w", [R])
    ;   member(blocked(R), Opts) -> Status = "skipped", format(string(Msg), "blocked: ~w", [R])
    ;   member(fixme(R), Opts) -> Status = "skipped", format(string(Msg), "fixme: ~w", [R])
    ;   Left =< 0 -> Status = "skipped", Msg = "no time left (run_tests time_limit)"
    ;   catch(test_goals_safe(M, UnitOpts, Opts, Body), E, true), nonvar(E)
    ->  Status = "failed", error_message(E, Msg)
    ;   ( member(condition(C), UnitOpts) ; member(condition(C), Opts) ), \+ catch(once(M:C), _, fail)
    ->  Status = "skipped", Msg = "condition is false"
    ;   member(timeout(TO), Opts), number(TO), TO < Left
    ->  run_checked(M, Opts, Body, TO, Status, Msg)
    ;   run_checked(M, Opts, Body, Left, Status, Msg)
    ).

test_goals_safe(M, UnitOpts, Opts, Body) :-
    findall(O, ( member(O, UnitOpts) ; member(O, Opts) ), OptList),
    maplist(option_goal, OptList, Gs),
    foldl(conj, Gs, Body, Conj),
    library_policy(Conj),
    safe_goal(M:Conj).

conj(G, A, (G, A)).

option_goal(setup(G), G) :- !.
option_goal(cleanup(G), G) :- !.
option_goal(condition(G), G) :- !.
option_goal(true(G), G) :- !.
option_goal(O, O) :- comparison(O), !.
option_goal(all(C), C) :- comparison(C), !.
option_goal(set(C), C) :- comparison(C), !.
option_goal(_, true).

comparison(C) :- compound(C), compound_name_arity(C, N, 2), memberchk(N, [==, =, =@=, =:=, \==, \=, =\=, <, >, =<, >=, @<, @>, @=<, @>=]).

run_checked(M, Opts, Body, Limit, Status, Msg) :-
    (   member(O, Opts), \+ known_option(O)
    ->  Status = "failed", format(string(Msg), "unsupported test option ~q", [O])
    ;   catch(call_with_time_limit(Limit, run_expect(M, Opts, Body, Status, Msg)), E, true),
        (   var(E) -> true
        ;   E == time_limit_exceeded -> Status = "failed", Msg = "time limit exceeded"
        ;   E == skg_cancelled -> throw(E)
        ;   Status = "failed", error_message(E, Msg0), string_concat("error: ", Msg0, Msg)
        )
    ).

known_option(O) :- comparison(O), !.
known_option(O) :- memberchk(O, [true, fail, false, nondet, det]), !.
known_option(O) :- compound(O), compound_name_arity(O, N, 1),
    memberchk(N, [true, throws, error, all, set, blocked, fixme, condition, setup, cleanup, timeout, occurs_check]).

run_expect(M, Opts, Body, Status, Msg) :-
    ( member(setup(S), Opts) -> Setup = S ; Setup = true ),
    ( member(cleanup(Cl), Opts) -> Cleanup = Cl ; Cleanup = true ),
    (   catch(once(M:Setup), E, ( error_message(E, EM), format(string(SetupErr), "setup raised: ~w", [EM]) ))
    ->  (   nonvar(SetupErr) -> Status = "failed", Msg = SetupErr
        ;   catch(expect(M, Opts, Body, Status, Msg), E2, ( catch(once(M:Cleanup), _, true), throw(E2) )),
            catch(once(M:Cleanup), _, true)
        )
    ;   Status = "failed", Msg = "setup failed"
    ).

expect(M, Opts, Body, Status, Msg) :-
    (   ( memberchk(fail, Opts) ; memberchk(false, Opts) )
    ->  ( \+ M:Body -> pass(Status, Msg) ; fail_msg("the test succeeded, but it should fail", Status, Msg) )
    ;   ( member(throws(Exp), Opts) -> true ; member(error(F), Opts), Exp = error(F, _) )
    ->  catch(( once(M:Body) -> Got = none ; Got = failed ), Ex, Got = thrown(Ex)),
        (   Got = thrown(Ex), subsumes_term(Exp, Ex) -> pass(Status, Msg)
        ;   Got = thrown(Ex) -> format(string(Msg), "wrong exception: expected ~q, got ~q", [Exp, Ex]), Status = "failed"
        ;   format(string(Msg), "no exception: expected ~q", [Exp]), Status = "failed"
        )
    ;   ( member(all(C), Opts), AllSet = all ; member(set(C), Opts), AllSet = set )
    ->  C =.. [Cmp, Templ, Expected],
        findall(Templ, M:Body, Got0),
        ( AllSet == set -> sort(Got0, Got) ; Got = Got0 ),
        G =.. [Cmp, Got, Expected],
        (   catch(M:G, _, fail) -> pass(Status, Msg)
        ;   format(string(Msg), "~w: got ~q, expected ~q", [AllSet, Got, Expected]), Status = "failed"
        )
    ;   (   once(M:Body)
        ->  findall(Cond, ( member(O, Opts), ( O = true(Cond) ; comparison(O), Cond = O ) ), Conds),
            (   member(Cond, Conds), \+ catch(M:Cond, _, fail)
            ->  format(string(Msg), "the test succeeded but ~q does not hold", [Cond]), Status = "failed"
            ;   pass(Status, Msg)
            )
        ;   fail_msg("the test body failed", Status, Msg)
        )
    ).

pass("passed", "").
fail_msg(M, "failed", M).
"""
HARNESS = HARNESS.replace("%SAFE_OUTPUT%\n", SAFE_OUTPUT_PRIMITIVES).replace(
    "%ALLOWED_LIBRARIES%\n", "".join(f"allowed_library({name}).\n" for name in (*PURE_LIBRARIES, "nb_set", "rbtrees")))
