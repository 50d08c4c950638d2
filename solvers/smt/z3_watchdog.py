"""A wall-clock deadline for Z3 calls: a thread that interrupts a ``z3.Context`` once it passes.

Not :class:`symbolkg.solvers.outcomes.Deadline` (a limit that a Python loop polls): Z3's C code
runs without returning to Python, so only ``Context.interrupt()`` from another thread ends it.
Used by the SMT-LIB2 interpreter (:mod:`symbolkg.solvers.smt.smtlib`) and the CSP engine
(:mod:`symbolkg.solvers.csp.engine`).

One watchdog thread per process serves every :class:`Z3Watchdog` (started on first use, a daemon):
starting and joining a thread per solver call cost a scheduler hand-off each, milliseconds of wall
time per program on a loaded machine. The thread sleeps until the earliest armed deadline (or until
something is armed), so an idle process pays nothing.
"""

from __future__ import annotations

import os
import threading
import time

import z3

#: Z3 resource units (``rlimit``: a count of solver work, not of time) one check of a constraint
#: program may use (the CSP engine, the AR-LSAT engine): the deterministic budget that makes a check
#: end the same way on a fast and on a loaded machine, so that an answer never depends on load; the
#: wall clock (this module's watchdog, Z3's ``timeout``) stays a safety net. Over every recorded
#: LogicalDeduction and AR-LSAT program of three models (7,829 checks) the largest check used
#: 1,311,037 units (0.1 s here); 20 million is about 1.5 s of one core.
CHECK_RLIMIT = 20_000_000


def out_of_budget(reason: str) -> bool:
    """Whether Z3's ``reason_unknown()`` says a check ran out of its deterministic budget (``rlimit``)."""
    return "resource limit" in reason or "rlimit" in reason


class Z3Watchdog:
    """Interrupts the running Z3 call of one context once a deadline passes.

    Z3's own ``timeout`` parameter is per check and is a process-global setting
    in the SMT-LIB2 interpreter; the watchdog enforces a wall-clock budget for
    the whole call instead. It keeps interrupting (every ``poll_s``) while a
    guarded call is past its deadline, because an interrupt that lands just
    before Z3 starts a check is cleared when the check starts.

    Use as ``with Z3Watchdog(ctx) as dog: with dog.guard(deadline): solver.check()``.

    Args:
        ctx: the context to interrupt.
        poll_s: how often the thread interrupts again while a guarded call is past its deadline.
    """

    def __init__(self, ctx: z3.Context, poll_s: float = 0.01) -> None:
        self._ctx = ctx
        self._poll_s = poll_s

    def __enter__(self) -> Z3Watchdog:
        return self

    def __exit__(self, *exc: object) -> None:
        _THREAD.disarm(self)

    def guard(self, deadline: float) -> _Guard:
        """Context manager around one Z3 call that must end by ``deadline`` (``time.monotonic()``)."""
        return _Guard(self, deadline)


class _Guard:
    def __init__(self, dog: Z3Watchdog, deadline: float) -> None:
        self._dog = dog
        self._deadline = deadline

    def __enter__(self) -> None:
        _THREAD.arm(self._dog, self._deadline)

    def __exit__(self, *exc: object) -> None:
        _THREAD.disarm(self._dog)


class _Thread:
    """The process's watchdog thread and the guarded calls it watches (a watchdog -> its deadline)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._armed: dict[Z3Watchdog, float] = {}
        self._wake_at: float | None = None  # when the sleeping thread wakes; None: not until notified
        self._thread: threading.Thread | None = None

    def arm(self, dog: Z3Watchdog, deadline: float) -> None:
        with self._cond:
            self._armed[dog] = deadline
            if self._thread is None:  # first use
                self._thread = threading.Thread(target=self._run, name="z3-watchdog", daemon=True)
                self._wake_at = None
                self._thread.start()
            elif self._wake_at is None or deadline < self._wake_at:
                self._cond.notify()

    def disarm(self, dog: Z3Watchdog) -> None:
        with self._cond:
            self._armed.pop(dog, None)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                wake: float | None = None
                for dog, deadline in self._armed.items():
                    if now >= deadline:
                        dog._ctx.interrupt()
                        deadline = now + dog._poll_s
                    wake = deadline if wake is None else min(wake, deadline)
                self._wake_at = wake
                self._cond.wait(None if wake is None else max(0.0, wake - now))


_THREAD = _Thread()


def _after_fork_in_child() -> None:
    # The child has no watchdog thread, and the parent's lock may have been held at the fork.
    global _THREAD
    _THREAD = _Thread()


os.register_at_fork(after_in_child=_after_fork_in_child)
