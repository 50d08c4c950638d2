"""Starting, limiting, talking to and killing ``swipl`` processes: the one place that does it.

Both SWI-Prolog backends run a harness (a Prolog program shipped beside this module as package
data) in a ``swipl`` child and speak JSON lines with it over stdin/stdout:

* :mod:`symbolkg.solvers.prolog.language` (the ``prolog`` language and the LP backend's
  ``run_query``) runs ``query_harness.pl``, one persistent process per Python process;
* :mod:`symbolkg.solvers.prolog.session` (the MCP server's sessions) runs ``session_harness.pl``
  (which includes ``session_load.pl``, ``session_goals.pl``, ``session_tools.pl`` and loads
  ``session_guard.pl``), one process per session, from a saved state of it (:func:`saved_state`).

Both include ``policy.pl`` (what the sandbox allows on top of ``library(sandbox)``). The harness
files are loaded from their installed path (:func:`harness_path`); nothing is written into them
or generated at run time, so they are linted and tested as Prolog (``tests/solvers/test_prolog_harness.py``).

Every process is started by :class:`SwiplProcess` through :func:`symbolkg.solvers.runtime.sandbox.spawn`:
OS limits in force before ``swipl`` runs its first instruction, its own process group (killing
the group reaches everything it started), no inherited file descriptors. Set ``SYMBOLKG_SWIPL``
to use a ``swipl`` other than the one on ``PATH``.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import select
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from symbolkg.solvers.runtime.sandbox import ChildLimits, SandboxError, spawn

#: Seconds allowed for ``swipl`` to start and load a harness (or to build a saved state).
STARTUP_TIMEOUT_S = 60.0

#: The folder holding the harness files (package data of ``symbolkg.solvers.prolog``).
HARNESS_DIR = Path(__file__).resolve().parent

#: Common command-line flags: no init file, no packs, no terminal, quiet.
BASE_FLAGS = ("-f", "none", "--no-packs", "--no-tty", "-q")


class PrologUnavailable(RuntimeError):
    """SWI-Prolog cannot be started (not installed, the sandbox is missing, or the harness fails to load)."""


class ReplyTimeout(Exception):
    """No reply line before the deadline (``cancelled``: the cancel deadline was the one that passed)."""

    def __init__(self, cancelled: bool = False) -> None:
        super().__init__("no reply in time")
        self.cancelled = cancelled


class ProcessEnded(Exception):
    """The process closed its output (it died); ``code`` is its exit status when known."""

    def __init__(self, code: int | None) -> None:
        super().__init__(f"the SWI-Prolog process died (exit status {code})")
        self.code = code


def swipl_path(swipl: str | None = None) -> str:
    """The ``swipl`` to run: ``swipl`` if given, else ``$SYMBOLKG_SWIPL``, else the one on ``PATH``.

    Raises:
        PrologUnavailable: none is found.
    """
    path = swipl or os.environ.get("SYMBOLKG_SWIPL") or shutil.which("swipl")
    if not path:
        raise PrologUnavailable("SWI-Prolog not found: install swi-prolog-nox or set SYMBOLKG_SWIPL")
    return path


def harness_path(name: str) -> str:
    """The installed path of the harness file ``name`` (e.g. ``"query_harness.pl"``)."""
    path = HARNESS_DIR / name
    if not path.is_file():
        raise PrologUnavailable(f"the SWI-Prolog harness {path} is missing: reinstall symbolkg (package data)")
    return str(path)


def harness_digest() -> str:
    """A hash of every harness file (names a saved state built from them)."""
    digest = hashlib.sha256()
    for path in sorted(HARNESS_DIR.glob("*.pl")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def request_line(payload: dict[str, Any]) -> bytes:
    """One JSON-lines request header, ASCII-escaped, with its newline (what both harnesses read)."""
    return json.dumps(payload, ensure_ascii=True).encode() + b"\n"


def read_reply(line: bytes) -> dict[str, Any] | None:
    """The JSON object a harness wrote on one line, or None when the line is not one (nothing but the
    harness writes to its pipe, so the caller treats None as a broken process)."""
    try:
        reply = json.loads(line)
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


class SwiplProcess:
    """One ``swipl`` started under OS limits, and the line protocol on its stdin/stdout.

    Not thread-safe for reading (one reader at a time, which the owner ensures); :meth:`send`
    may be called from any thread; :meth:`kill` from any thread, and it leaves the output pipe
    to a thread that is reading it (that thread sees the end of file and closes it).

    Args:
        args: the arguments after ``swipl`` (flags, ``-x state``, the harness file, ...).
        limits: OS limits of the process.
        swipl: the executable (:func:`swipl_path`).
        cwd: working directory.
        env: environment (None: the parent's).

    Raises:
        PrologUnavailable: the process cannot be started.
    """

    def __init__(
        self,
        args: list[str],
        limits: ChildLimits,
        *,
        swipl: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        argv = [swipl_path(swipl), *args]
        try:
            self.proc: subprocess.Popen[bytes] = spawn(
                argv,
                limits,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # never read: a full pipe would block swipl
                cwd=cwd,
                env=env,
            )
        except (OSError, SandboxError) as exc:
            raise PrologUnavailable(f"cannot start SWI-Prolog ({argv[0]}): {exc}") from exc
        self.pid = self.proc.pid
        self._buffer = b""
        self._lock = threading.RLock()  # guards writes to stdin and the reading flag
        self._reading = False

    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc.poll() is None

    def send(self, data: bytes) -> None:
        """Write ``data`` to the process's input and flush it.

        Raises:
            OSError: the input is closed (the process died); ``BrokenPipeError`` among them.
        """
        with self._lock:
            if self.proc.stdin is None or self.proc.stdin.closed:
                raise BrokenPipeError("the SWI-Prolog input is closed")
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def read_line(self, deadline: float, cancel_deadline: Callable[[], float | None] | None = None) -> bytes:
        """The next line of output (without its newline).

        Args:
            deadline: ``time.monotonic()`` by which the line must have come.
            cancel_deadline: returns an earlier deadline when one is set meanwhile (a cancel).

        Raises:
            ReplyTimeout: a deadline passed (the process is left running: the caller decides).
            ProcessEnded: the output ended.
        """
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with self._lock:
            self._reading = True
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                while b"\n" not in self._buffer:
                    extra = cancel_deadline() if cancel_deadline is not None else None
                    end = min(deadline, extra) if extra is not None else deadline
                    left = end - time.monotonic()
                    if left <= 0:
                        raise ReplyTimeout(cancelled=extra is not None and extra <= deadline)
                    try:
                        ready = sel.select(min(left, 0.25))
                    except OSError:  # the descriptor is gone: the output ended
                        raise ProcessEnded(self.exit_code()) from None
                    if ready:
                        self._take_output(fd)
        finally:
            with self._lock:
                self._reading = False
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _take_output(self, fd: int) -> None:
        """Append what the readable output ``fd`` holds to the buffer. Raises ProcessEnded at its end."""
        try:
            chunk = os.read(fd, 1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            raise ProcessEnded(self.exit_code())
        self._buffer += chunk

    def output_fd(self) -> int:
        """The descriptor of the process's output, for an event loop to wait on (see :meth:`poll_line`)."""
        assert self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def hold_output(self, held: bool) -> None:
        """Say that a reader uses the output between reads (``True``) or no longer does (``False``).

        While it is held, :meth:`kill` leaves the output open: a reader waiting for it to become
        readable (an event loop) then sees the end of file, never a closed or reused descriptor.
        """
        with self._lock:
            self._reading = held

    def poll_line(self) -> bytes | None:
        """The next line of output if it has come, else None; never blocks (reads at most once).

        For a reader that waits for :meth:`output_fd` to become readable itself (an event loop)
        instead of blocking a thread in :meth:`read_line`.

        Raises:
            ProcessEnded: the output ended.
        """
        if b"\n" not in self._buffer:
            fd = self.output_fd()
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if poller.poll(0):
                self._take_output(fd)
            if b"\n" not in self._buffer:
                return None
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def exit_code(self, wait_s: float = 1.0) -> int | None:
        """The exit status, waiting up to ``wait_s`` for it (end of output comes just before the exit)."""
        try:
            return self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None

    def close_input(self, wait_s: float = 2.0) -> None:
        """Close the input (the harnesses halt at its end) and wait up to ``wait_s`` for the exit."""
        with self._lock:
            try:
                if self.proc.stdin is not None and not self.proc.stdin.closed:
                    self.proc.stdin.close()
            except OSError:
                pass
        self.exit_code(wait_s)

    def kill(self) -> None:
        """Kill the process group and close the pipes not in use by a reader (idempotent, any thread)."""
        _kill_group(self.proc)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass  # a zombie we cannot reap now; the OS reaps it with us
        with self._lock:
            streams = [self.proc.stdin] if self._reading else [self.proc.stdin, self.proc.stdout]
            for stream in streams:
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_quietly(proc: subprocess.Popen[bytes], directory: str | None = None) -> None:
    """Kill ``proc``'s group and remove ``directory`` (for finalizers: never raises)."""
    _kill_group(proc)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


# --------------------------------------------------------------------------- saved states

_state_lock = threading.Lock()
_states: dict[tuple[str, str], str | None] = {}


def saved_state(swipl: str, harness: str, limits: ChildLimits) -> str | None:
    """A saved state of ``harness`` for ``swipl``, built once and shared by processes (None if it cannot be built).

    A saved state starts in ~30 ms instead of ~160 ms (the libraries the harness needs are
    compiled into it). It lives in a cache directory private to the user
    (``$SYMBOLKG_PROLOG_CACHE``, default ``<tmp>/symbolkg-prolog-<uid>``, mode 0700, refused if
    another user owns it or others can write it), named by a hash of the harness files and of
    the ``swipl`` binary, and is written atomically, so concurrent processes can build it at once.
    """
    real = os.path.realpath(swipl)
    try:
        st = os.stat(real)
        binary = f"{real}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        binary = real
    key = hashlib.sha256(f"{harness}\0{harness_digest()}\0{binary}".encode()).hexdigest()[:16]
    with _state_lock:
        if (swipl, key) in _states and (_states[(swipl, key)] is None or os.path.exists(_states[(swipl, key)] or "")):
            return _states[(swipl, key)]
        root = cache_dir()
        state: str | None = os.path.join(root, f"{Path(harness).stem}-{key}.state")
        assert state is not None
        if not os.path.exists(state):
            state = _build_state(swipl, harness, state, root, limits)
        _states[(swipl, key)] = state
        return state


def _build_state(swipl: str, harness: str, state: str, root: str, limits: ChildLimits) -> str | None:
    tmp = f"{state}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        proc = spawn(
            [swipl, "-f", "none", "--no-packs", "-q", "-o", tmp, "-c", harness],
            limits,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=root,
            env=child_env(root),
        )
        try:
            code = proc.wait(timeout=STARTUP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            kill_quietly(proc)
            proc.wait()
            return None
        if code == 0 and os.path.exists(tmp):
            os.replace(tmp, state)
            return state
        return None
    except (OSError, SandboxError):
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def cache_dir() -> str:
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


def child_env(home: str) -> dict[str, str]:
    """A minimal environment: nothing of the parent's (tokens, credentials) reaches Prolog."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": home,
        "TMPDIR": home,
        "MALLOC_ARENA_MAX": "2",  # per-thread malloc arenas would eat the address-space limit
    }
