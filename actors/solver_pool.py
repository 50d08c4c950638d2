"""The solver pool on Ray, and :func:`make_solver_pool`, which picks it or the local one.

:class:`RaySolverPool`: one actor per worker process, bounded in-flight work, crash recovery.

Each :class:`SolverActor` owns one :class:`symbolkg.solvers.runtime.worker.SolverProcess` (so one
Z3 context, one SWI-Prolog session) and runs one call at a time. The driver
keeps at most ``queue_per_actor`` calls queued on each actor, so an actor
never idles waiting for the driver, while a crash costs at most that many
retries. When an actor dies (its node went away, someone killed it), its
queued requests are resubmitted to a freshly started replacement; a request
that has crashed workers ``max_attempts`` times is recorded as
``ErrorKind.WORKER_CRASH`` instead of being lost.

The pool interface (:class:`~symbolkg.solvers.runtime.local_pool.SolverPool`) and its Ray-free
implementation (:class:`~symbolkg.solvers.runtime.local_pool.LocalSolverPool`, threads in this
process) live in ``solvers/runtime/local_pool.py``; a job asks :func:`make_solver_pool` for the
one its ``--executor`` names.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import RayActorError

from symbolkg.actors.ray_runtime import ensure_ray
from symbolkg.solvers.outcomes import Outcome, SolveRequest
from symbolkg.solvers.runtime.local_pool import LocalSolverPool, PoolResult, SolverPool, crash_outcome, should_retry
from symbolkg.solvers.runtime.worker import SolverProcess


class SolverActor:
    """Ray actor body (decorated in :func:`_actor_class`). Thin: checks input, keeps identity."""

    def __init__(self, memory_mb: int, name: str) -> None:
        self._proc = SolverProcess(memory_mb=memory_mb, name=name)
        self._proc.start()
        self._name = name

    def solve(self, request: SolveRequest) -> tuple[Outcome, str]:
        """Run one request on this actor's worker: the outcome and the worker's ``name/pid@host``.

        Requests and outcomes travel as the typed records (Ray serialises them); the only conversion
        is at the worker's pipe (:meth:`SolveRequest.to_wire`, :meth:`Outcome.from_wire`).
        """
        if not isinstance(request, SolveRequest):
            raise TypeError(f"SolverActor.solve takes a SolveRequest, got {type(request).__name__}")
        outcome = self._proc.solve(request)
        return outcome, f"{self._name}/{self._proc.last_pid}@{socket.gethostname()}"

    def solve_batch(self, requests: list[SolveRequest]) -> list[tuple[Outcome, str]]:
        """Several requests in one round trip, one after another on this actor's worker (a crashed
        worker is restarted between them by :class:`SolverProcess`, as for single calls)."""
        return [self.solve(r) for r in requests]

    def close(self) -> None:
        """Kill the worker process (and what it started); the actor itself ends with Ray's ``kill``."""
        self._proc.kill()

    def worker_pid(self) -> int | None:
        """PID of the solver process (tests kill it to simulate a crash)."""
        return self._proc.pid

    def actor_pid(self) -> int:
        return os.getpid()


def _actor_class(num_cpus: float) -> Any:
    return ray.remote(num_cpus=num_cpus, max_restarts=0, max_concurrency=1)(SolverActor)


@dataclass
class _Pending:
    request: SolveRequest
    slot: int
    attempts: int
    t0: float
    actor: Any = None


class _BatchSizer:
    """How many requests to send in one round trip: cheap programs go together.

    Keeps a running mean of the solver seconds per language (from the outcomes) and fills a batch
    while its estimated work stays under ``target_s`` (at most ``max_size`` requests). A language
    never seen yet is estimated at ``target_s`` (it goes alone until its cost is known), so a slow
    program is never held back behind others, and ProntoQA's 1 ms programs travel 16 at a time.
    """

    def __init__(self, target_s: float, max_size: int) -> None:
        self.target_s = target_s
        self.max_size = max_size
        self._mean: dict[str, float] = {}

    def estimate(self, language: str) -> float:
        return self._mean.get(language, self.target_s)

    def observe(self, language: str, seconds: float) -> None:
        mean = self._mean.get(language)
        self._mean[language] = seconds if mean is None else 0.9 * mean + 0.1 * seconds

    def fits(self, batch: list[SolveRequest], request: SolveRequest) -> bool:
        if not batch:
            return True
        work = sum(self.estimate(r.language) for r in batch) + self.estimate(request.language)
        return len(batch) < self.max_size and work <= self.target_s


class RaySolverPool:
    """Solver pool on Ray actors. Starts Ray locally if it is not initialised.

    Args:
        workers: number of solver actors (each owns one worker process).
        memory_mb: address-space limit per worker process.
        num_cpus: CPUs reserved per actor (fractions allowed, e.g. 0.5 to oversubscribe).
        queue_per_actor: calls queued on each actor at once (>= 1; 2 hides round trips).
        max_attempts: runs per request before a crash is recorded.
        address: Ray cluster address (``"auto"``, ``"ray://..."``); None starts or
            joins according to ``RAY_ADDRESS``.
        batch_target_s: :meth:`imap_unordered` sends requests whose estimated solver time adds up
            to at most this in one round trip (see :class:`_BatchSizer`); 0 sends one at a time.
        max_batch: most requests in one round trip.
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        memory_mb: int = 2048,
        num_cpus: float = 1.0,
        queue_per_actor: int = 2,
        max_attempts: int = 2,
        address: str | None = None,
        batch_target_s: float = 0.02,
        max_batch: int = 16,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        if queue_per_actor < 1:
            raise ValueError(f"queue_per_actor must be >= 1, got {queue_per_actor}")
        ensure_ray(address)
        self.workers = workers
        self.memory_mb = memory_mb
        self.queue_per_actor = queue_per_actor
        self.max_attempts = max_attempts
        self.batch_target_s = batch_target_s
        self.max_batch = max_batch
        self._cls = _actor_class(num_cpus)
        self._generation = 0
        self.actors: list[Any] = [self._new_actor(i) for i in range(workers)]
        self.replaced = 0
        self._async_load = [0] * workers  # calls in flight per slot from solve()

    def _new_actor(self, slot: int) -> Any:
        self._generation += 1
        return self._cls.remote(self.memory_mb, f"solver-{slot}.{self._generation}")

    def _replace(self, slot: int, dead: Any) -> None:
        if self.actors[slot] is dead:
            ray.kill(dead, no_restart=True)
            self.actors[slot] = self._new_actor(slot)
            self.replaced += 1

    def imap_unordered(self, requests: Iterable[SolveRequest]) -> Iterator[PoolResult]:
        """Stream ``requests`` through the actors; results in completion order.

        Cheap requests share a round trip (:class:`_BatchSizer`); at most ``queue_per_actor``
        round trips are queued on each actor. When an actor dies, every request of its round
        trips is retried alone on a replacement (a crash costs at most one attempt each)."""
        it = iter(requests)
        sizer = _BatchSizer(self.batch_target_s, self.max_batch if self.batch_target_s > 0 else 1)
        pending: dict[Any, list[_Pending]] = {}
        load = [0] * self.workers
        retry: list[_Pending] = []
        carry: list[SolveRequest] = []  # pulled but not yet sent (did not fit the last batch)

        def submit(batch: list[_Pending]) -> None:
            slot = min(range(self.workers), key=load.__getitem__)
            for p in batch:
                p.slot, p.actor = slot, self.actors[slot]
            ref = self.actors[slot].solve_batch.remote([p.request for p in batch])
            pending[ref] = batch
            load[slot] += 1

        def next_batch() -> list[_Pending]:
            if retry:
                return [retry.pop()]
            batch: list[SolveRequest] = []
            while True:
                request = carry.pop() if carry else next(it, None)
                if request is None:
                    break
                if not sizer.fits(batch, request):
                    carry.append(request)
                    break
                batch.append(request)
            now = time.monotonic()
            return [_Pending(r, -1, 1, now) for r in batch]

        while True:
            while sum(load) < self.workers * self.queue_per_actor and (batch := next_batch()):
                submit(batch)
            if not pending:
                return
            ready, _ = ray.wait(list(pending), num_returns=1)
            batch = pending.pop(ready[0])
            load[batch[0].slot] -= 1
            yield from self._results(ready[0], batch, sizer, retry)

    def _results(
        self, ref: Any, batch: list[_Pending], sizer: _BatchSizer, retry: list[_Pending]
    ) -> Iterator[PoolResult]:
        """The results of one finished round trip; crashed requests go back to ``retry``."""
        try:
            answers = ray.get(ref)
        except RayActorError as exc:
            self._replace(batch[0].slot, batch[0].actor)
            dead = f"solver-{batch[0].slot}/dead"
            answers = [(crash_outcome(f"solver actor died: {type(exc).__name__}"), dead)] * len(batch)
        for p, (outcome, worker) in zip(batch, answers, strict=True):
            sizer.observe(p.request.language, outcome.seconds)
            if should_retry(outcome, p.attempts, self.max_attempts):
                retry.append(_Pending(p.request, -1, p.attempts + 1, p.t0))
                continue
            yield PoolResult(p.request, outcome, worker, p.attempts, time.monotonic() - p.t0)

    async def solve(self, request: SolveRequest) -> PoolResult:
        """Run one request on the least-loaded actor; replaces a dead actor and retries."""
        t0 = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            slot = min(range(self.workers), key=self._async_load.__getitem__)
            actor = self.actors[slot]
            self._async_load[slot] += 1
            try:
                outcome, worker = await actor.solve.remote(request)
            except RayActorError as exc:
                self._replace(slot, actor)
                outcome = crash_outcome(f"solver actor died: {type(exc).__name__}")
                worker = f"solver-{slot}/dead"
            finally:
                self._async_load[slot] -= 1
            if not should_retry(outcome, attempts, self.max_attempts):
                return PoolResult(request, outcome, worker, attempts, time.monotonic() - t0)

    def close(self) -> None:
        for a in self.actors:
            ray.kill(a, no_restart=True)
        self.actors = []

    def __enter__(self) -> RaySolverPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: ``--executor`` choices of the commands that run solvers.
EXECUTORS = ("ray", "local")


def make_solver_pool(
    executor: str, workers: int, *, memory_mb: int = 2048, cpus_per_worker: float = 1.0, ray_address: str | None = None
) -> SolverPool:
    """The solver pool a job's ``--executor`` names.

    Args:
        executor: ``"local"``: a :class:`LocalSolverPool` (threads in this process, no Ray);
            ``"ray"``: a :class:`RaySolverPool` (actors; starts or joins Ray).
        workers: worker processes (each owns one solver process).
        memory_mb: address-space limit per worker process.
        cpus_per_worker: Ray CPUs reserved per actor (``"ray"`` only).
        ray_address: Ray cluster to join (``"ray"`` only; None: ``RAY_ADDRESS`` or a local Ray).

    Raises:
        ValueError: an unknown executor, or ``workers`` < 1.
    """
    if executor == "local":
        return LocalSolverPool(workers, memory_mb=memory_mb)
    if executor == "ray":
        return RaySolverPool(workers, memory_mb=memory_mb, num_cpus=cpus_per_worker, address=ray_address)
    raise ValueError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
