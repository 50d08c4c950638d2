"""The solver pool interface, and a Ray-free local implementation of it.

A pool runs :class:`SolveRequest`s on isolated worker processes and yields one
:class:`PoolResult` per request, in completion order, pulling requests lazily
so that at most ``max_in_flight`` are queued at once (a job over a million
problems never materialises them all).

Two implementations share this contract:

* :class:`symbolkg.actors.solver_pool.RaySolverPool` — the real one: Ray actors, each
  owning one worker process, on one machine or a cluster;
* :class:`LocalSolverPool` — threads in this process, each owning one worker
  process; for laptops without Ray, and for fast tests of job logic.

Both retry a request whose worker crashed (not one that timed out: a timeout
is the program's fault and is recorded) up to ``max_attempts`` times, and then
record ``ErrorKind.WORKER_CRASH``: a problem is never lost.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from symbolkg.solvers.outcomes import ErrorKind, Outcome, SolveRequest, Status
from symbolkg.solvers.runtime.worker import SolverProcess


@dataclass(frozen=True)
class PoolResult:
    """What the pool returns for one request.

    Attributes:
        request: the request as submitted.
        outcome: the solver outcome (or the pool's record of a crash).
        worker: ``name/pid`` of the worker process that produced it.
        attempts: how many times the request was run (> 1 after a crash).
        latency_s: seconds from first submission to result (includes queueing).
    """

    request: SolveRequest
    outcome: Outcome
    worker: str
    attempts: int
    latency_s: float


class SolverPool(Protocol):
    """Runs solver requests on isolated workers; see the module docstring.

    Two ways in: ``imap_unordered`` for a batch job that streams requests, and
    ``await solve(request)`` for asynchronous stage code (the LLM methods) that
    has many problems in flight, each waiting on its own solver call.
    """

    workers: int

    def imap_unordered(self, requests: Iterable[SolveRequest]) -> Iterator[PoolResult]: ...

    async def solve(self, request: SolveRequest) -> PoolResult: ...

    def close(self) -> None: ...


def should_retry(outcome: Outcome, attempts: int, max_attempts: int) -> bool:
    """A crashed worker may be the machine's fault (OOM killer, a kill -9): run once more."""
    return outcome.error_kind == ErrorKind.WORKER_CRASH.value and attempts < max_attempts


def crash_outcome(message: str) -> Outcome:
    return Outcome.error(Status.RUNTIME_ERROR, ErrorKind.WORKER_CRASH, message, backend="pool")


class LocalSolverPool:
    """Threads, each driving one :class:`SolverProcess`. Same contract as the Ray pool.

    Args:
        workers: number of worker processes.
        memory_mb: address-space limit per worker.
        max_in_flight: requests queued at once (default ``2 * workers``).
        max_attempts: runs per request before a crash is recorded.
    """

    def __init__(
        self, workers: int = 1, *, memory_mb: int = 2048, max_in_flight: int | None = None, max_attempts: int = 2
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.max_in_flight = max_in_flight or 2 * workers
        self.max_attempts = max_attempts
        self._procs = [SolverProcess(memory_mb=memory_mb, name=f"local-{i}") for i in range(workers)]
        self._idle: queue.Queue[SolverProcess] = queue.Queue()  # workers free for solve()
        for p in self._procs:
            self._idle.put(p)

    @property
    def processes(self) -> list[SolverProcess]:
        return list(self._procs)

    def imap_unordered(self, requests: Iterable[SolveRequest]) -> Iterator[PoolResult]:
        todo: queue.Queue[tuple[SolveRequest, float] | None] = queue.Queue(maxsize=self.max_in_flight)
        done: queue.Queue[PoolResult | BaseException] = queue.Queue()

        def work(proc: SolverProcess) -> None:
            while (item := todo.get()) is not None:
                request, t0 = item
                try:
                    done.put(self._run(proc, request, t0))
                except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer thread
                    done.put(exc)

        threads = [threading.Thread(target=work, args=(p,), daemon=True) for p in self._procs]
        for t in threads:
            t.start()
        submitted = received = 0
        it = iter(requests)
        exhausted = False
        try:
            while True:
                while not exhausted and submitted - received < self.max_in_flight:
                    try:
                        request = next(it)
                    except StopIteration:
                        exhausted = True
                        break
                    todo.put((request, time.monotonic()))
                    submitted += 1
                if exhausted and received == submitted:
                    return
                item = done.get()
                received += 1
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            for _ in threads:
                # Drain so that sentinels fit even if the consumer stopped early.
                while True:
                    try:
                        todo.put_nowait(None)
                        break
                    except queue.Full:
                        try:
                            todo.get_nowait()
                        except queue.Empty:
                            pass

    async def solve(self, request: SolveRequest) -> PoolResult:
        """Run one request on the next idle worker (waits while all are busy).

        The wait, the call and the release all happen in one thread: a cancelled caller
        cannot hand a worker back while its call is still running, and no asyncio
        object ties the pool to one event loop.
        """
        return await asyncio.to_thread(self._solve_blocking, request)

    def _solve_blocking(self, request: SolveRequest) -> PoolResult:
        t0 = time.monotonic()
        proc = self._idle.get()
        try:
            return self._run(proc, request, t0)
        finally:
            self._idle.put(proc)

    def _run(self, proc: SolverProcess, request: SolveRequest, t0: float) -> PoolResult:
        """``request`` on ``proc``, run again after a worker crash (at most ``max_attempts`` runs)."""
        attempts = 0
        while True:
            attempts += 1
            outcome = proc.solve(request)
            if not should_retry(outcome, attempts, self.max_attempts):
                return PoolResult(request, outcome, f"{proc.name}/{proc.last_pid}", attempts, time.monotonic() - t0)

    def close(self) -> None:
        for p in self._procs:
            p.kill()

    def __enter__(self) -> LocalSolverPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
