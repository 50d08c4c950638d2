"""Many Prolog sessions by ``load_id``: the registry behind the MCP server (:class:`SessionRegistry`)."""

from __future__ import annotations

import collections
import threading
import time
import weakref
from typing import Any, Self

from symbolkg.solvers.prolog.session import (
    PrologSession,
    PrologToolError,
    SessionLimits,
    _Process,
    check_module_name,
)

__all__ = ["SessionRegistry"]


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

    def peek(self, load_id: str) -> PrologSession | None:
        """The live session ``load_id`` without waiting (marks it most recently used), else None.

        None also when the registry is busy (another thread holds its lock): never blocks, so an
        event loop may call it; :meth:`get` (in a worker thread) then waits, or says why the id is gone.
        """
        if not isinstance(load_id, str) or not self._lock.acquire(blocking=False):
            return None
        try:
            session = self._sessions.get(load_id)
            if session is None or not session.alive():
                return None
            self._sessions.move_to_end(load_id)
            session.last_used = time.monotonic()
            return session
        finally:
            self._lock.release()

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
