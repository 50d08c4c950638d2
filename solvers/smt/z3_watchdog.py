"""A wall-clock deadline for Z3 calls: a thread that interrupts a ``z3.Context`` once it passes.

Not :class:`symbolkg.solvers.outcomes.Deadline` (a limit that a Python loop polls): Z3's C code
runs without returning to Python, so only ``Context.interrupt()`` from another thread ends it.
Used by the SMT-LIB2 interpreter (:mod:`symbolkg.solvers.smt.smtlib`) and the CSP engine
(:mod:`symbolkg.solvers.csp.engine`).
"""

from __future__ import annotations

import threading
import time

import z3


class Z3Watchdog:
    """Interrupts the running Z3 call of one context once a deadline passes.

    Z3's own ``timeout`` parameter is per check and is a process-global setting
    in the SMT-LIB2 interpreter; this thread enforces a wall-clock budget for
    the whole call instead. It keeps interrupting (every ``poll_s``) while a
    guarded call is past its deadline, because an interrupt that lands just
    before Z3 starts a check is cleared when the check starts.

    Use as ``with Z3Watchdog(ctx) as dog: with dog.guard(deadline): solver.check()``.

    Args:
        ctx: the context to interrupt.
        poll_s: how often the thread looks at the clock.
    """

    def __init__(self, ctx: z3.Context, poll_s: float = 0.01) -> None:
        self._ctx = ctx
        self._poll_s = poll_s
        self._lock = threading.Lock()
        self._deadline: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="z3-watchdog", daemon=True)

    def __enter__(self) -> "Z3Watchdog":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def guard(self, deadline: float) -> "_Guard":
        """Context manager around one Z3 call that must end by ``deadline`` (``time.monotonic()``)."""
        return _Guard(self, deadline)

    def _set(self, deadline: float | None) -> None:
        with self._lock:
            self._deadline = deadline

    def _run(self) -> None:
        while not self._stop.wait(self._poll_s):
            with self._lock:
                if self._deadline is not None and time.monotonic() >= self._deadline:
                    self._ctx.interrupt()


class _Guard:
    def __init__(self, dog: Z3Watchdog, deadline: float) -> None:
        self._dog = dog
        self._deadline = deadline

    def __enter__(self) -> None:
        self._dog._set(self._deadline)

    def __exit__(self, *exc: object) -> None:
        self._dog._set(None)
