"""Per-stage gates: a FIFO bound on the problems inside each backend, and a log of who waited where.

A method job (:func:`symbolkg.jobs.pipeline.method_job.run_method_job`) keeps ``max_in_flight`` problem coroutines
running, and each calls the LLM engine and the solver pool directly. Without a gate every one of
them can pile into one backend's internal queue (the solver pool's worker queue, a Ray actor's
mailbox, an HTTP client's connection pool), where nothing bounds it and nothing records the wait.
A :class:`StageGate` sits in front of one stage:

* at most ``limit`` slots are held at once; a call that finds the gate full waits in a FIFO
  queue (first come, first served: no problem starves behind later arrivals);
* it keeps live counters (waiting now, running now, their peaks, passes, total and longest
  wait) and, with a :class:`GateLog`, one event per change of its queue, which the job writes
  beside the run (``RUN.parquet.gates/``) for ``symbolkg profile``.

:class:`GatedEngine` and :class:`GatedSolver` put a gate in front of an LLM engine (stage
``llm``: each request of a ``generate`` call holds one slot while it is in the engine) and a
solver pool (stage ``solve``: one slot per call).

Backpressure: a problem waiting at a gate keeps its in-flight slot. When the slowest stage is
full, the problems reaching it queue there; once all ``max_in_flight`` problems wait at (or run
in) that stage, no coroutine is free to take the next problem from the input, so the reader
stops until the stage lets one through. The input is consumed at the pace of the slowest stage,
and the work in front of each backend is bounded by its gate, not by ``max_in_flight``.

Defaults (:class:`StageLimits`): ``llm`` unlimited (vLLM batches every request it is given,
and its ``max_num_seqs`` bounds the batch on its own; a gate below the engine's batch would
starve it), ``solve`` = ``2 x`` the pool's workers (one call running and one queued behind it
per worker: workers never idle between calls, and the rest wait visibly at the gate instead of
blocking threads or filling actor mailboxes).

Example:
    >>> import asyncio
    >>> async def demo():
    ...     gate = StageGate("solve", 1)
    ...     async def work(i):
    ...         async with gate.slot():
    ...             await asyncio.sleep(0.01)
    ...     await asyncio.gather(*(work(i) for i in range(3)))
    ...     return gate.stats()
    >>> s = asyncio.run(demo())
    >>> (s.passes, s.peak_running, s.peak_waiting, s.waiting, s.running)
    (3, 1, 2, 0, 0)
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import random
import time
from array import array
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from symbolkg.actors.engines.base import ChatRequest, Completion, LLMEngine
from symbolkg.solvers.outcomes import SolveRequest
from symbolkg.solvers.runtime.local_pool import PoolResult, SolverPool

STAGES = ("llm", "solve")
"""The gated stages of a method job, in request-path order."""

SOLVE_SLOTS_PER_WORKER = 2
"""Default ``solve`` limit per solver worker: one call running and one queued behind it."""

EVENTS = ("enter", "wait", "leave", "cancel")
"""Gate event kinds: a pass got its slots (``wait_s`` says after how long), a pass queued, a pass
gave its slots back, a queued pass was cancelled before it got any."""
_ENTER, _WAIT, _LEAVE, _CANCEL = range(4)


def _check_limit(name: str, value: object, *, auto: bool) -> None:
    if value is None or (auto and value == "auto"):
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        allowed = "an int >= 1, 'auto' or None" if auto else "an int >= 1 or None (unlimited)"
        raise ValueError(f"stage limit {name} must be {allowed}, got {value!r}")


@dataclass(frozen=True)
class StageLimits:
    """How many slots each stage of a method job may hold at once.

    Attributes:
        llm: LLM requests inside the engine at once; None = unlimited (the default: vLLM batches
            everything it is given and its ``max_num_seqs`` is its own bound; set it for a server
            that degrades under load, e.g. an OpenAI-compatible endpoint with a rate limit).
        solve: solver calls inside the pool at once; ``"auto"`` (the default) =
            :data:`SOLVE_SLOTS_PER_WORKER` x the pool's ``workers`` (unlimited when the pool does
            not say how many it has); None = unlimited.

    Raises:
        ValueError: a limit that is not an int >= 1 (or None, or ``"auto"`` for ``solve``).
    """

    llm: int | None = None
    solve: int | Literal["auto"] | None = "auto"

    def __post_init__(self) -> None:
        _check_limit("llm", self.llm, auto=False)
        _check_limit("solve", self.solve, auto=True)

    def resolve(self, solver: SolverPool | None) -> StageLimits:
        """These limits with ``"auto"`` replaced by a number for ``solver`` (or None: unlimited)."""
        if self.solve != "auto":
            return self
        workers = getattr(solver, "workers", None)
        ok = isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1
        return replace(self, solve=SOLVE_SLOTS_PER_WORKER * workers if ok else None)  # type: ignore[operator]

    @classmethod
    def parse(cls, text: str) -> StageLimits:
        """Limits from ``"llm=N,solve=M"`` (a CLI flag); a value may be ``none``, ``solve`` may be ``auto``.

        Stages not named keep their defaults.

        Example:
            >>> StageLimits.parse("llm=16,solve=none")
            StageLimits(llm=16, solve=None)

        Raises:
            ValueError: an unknown stage, a stage named twice, or a bad value; the message says
                what is accepted.
        """
        values: dict[str, int | str | None] = {}
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            stage, sep, value = (s.strip() for s in part.partition("="))
            if not sep or stage not in STAGES:
                raise ValueError(f"stage limits look like 'llm=16,solve=8' (stages: {', '.join(STAGES)}), got {part!r}")
            if stage in values:
                raise ValueError(f"stage {stage!r} is limited twice in {text!r}")
            low = value.lower()
            if low in ("none", "unlimited"):
                values[stage] = None
            elif low == "auto":
                values[stage] = "auto"
            else:
                try:
                    values[stage] = int(value)
                except ValueError:
                    raise ValueError(
                        f"stage limit {stage}={value!r} must be an int >= 1, 'none' or (solve) 'auto'"
                    ) from None
        return cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GateStats:
    """A snapshot of one gate.

    Attributes:
        stage: the gate's name.
        limit: slots it grants at once (None: unlimited).
        waiting, running: passes queued now, slots held now.
        peak_waiting, peak_running: their maxima so far.
        passes: calls that got their slots (waits below are over these).
        cancelled: queued calls cancelled before they got a slot.
        total_wait_s, mean_wait_s, p95_wait_s, max_wait_s: seconds passes waited for their slots.
    """

    stage: str
    limit: int | None
    waiting: int
    running: int
    peak_waiting: int
    peak_running: int
    passes: int
    cancelled: int
    total_wait_s: float
    mean_wait_s: float
    p95_wait_s: float
    max_wait_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GateEvent:
    """One change of a gate's queue, as written to the gate log.

    Attributes:
        time: UNIX time of the change.
        stage: the gate's name.
        event: one of :data:`EVENTS`.
        waiting, running: passes queued and slots held after the change.
        limit: the gate's limit (None: unlimited).
        wait_s: for ``enter``, seconds the pass waited; None otherwise.
    """

    time: float
    stage: str
    event: str
    waiting: int
    running: int
    limit: int | None = None
    wait_s: float | None = None


GATE_LOG_SCHEMA = pa.schema(
    [
        pa.field("time", pa.float64(), nullable=False),
        pa.field("stage", pa.string(), nullable=False),
        pa.field("event", pa.string(), nullable=False),
        pa.field("waiting", pa.int64(), nullable=False),
        pa.field("running", pa.int64(), nullable=False),
        pa.field("limit", pa.int64()),
        pa.field("wait_s", pa.float64()),
    ]
)


GATE_LOG_FLUSH_EVENTS = 65_536
"""Events a :class:`GateLog` with a run to spill to holds before it writes them out (~2.3 MB)."""


class GateLog:
    """The events of the gates that write to it, kept in typed columns (about 35 bytes an event).

    Gates register under their name; each change of a gate's queue appends one event. With
    ``spill_to`` (the run's results path) the log writes its events beside the run
    (:func:`gate_log_dir`) every ``flush_events`` events and on :meth:`close`, so a job of any
    length holds at most ``flush_events`` of them; without it, every event stays in memory
    (:func:`write_gate_log` writes them at once).

    Args:
        spill_to: the run whose gate-log folder receives this session's files, or None.
        flush_events: events held before a spill (>= 1).
    """

    def __init__(
        self, spill_to: str | os.PathLike[str] | None = None, *, flush_events: int = GATE_LOG_FLUSH_EVENTS
    ) -> None:
        if flush_events < 1:
            raise ValueError(f"flush_events must be >= 1, got {flush_events}")
        self._stages: list[str] = []
        self._limits: list[int | None] = []
        self._spill_to = Path(spill_to) if spill_to is not None else None
        self._flush_events = flush_events
        self._file_stem = f"session-{int(time.time() * 1000)}-{os.getpid()}"
        self._files = 0
        self.written = 0  # events already written out
        self._reset()

    def _reset(self) -> None:
        self._time = array("d")
        self._stage = array("H")
        self._event = array("B")
        self._waiting = array("q")
        self._running = array("q")
        self._wait = array("d")  # NaN: not an enter event

    def spill(self) -> Path | None:
        """Write the events held to the next file of this session (None: nothing held, or no run)."""
        if self._spill_to is None or not len(self):
            return None
        folder = gate_log_dir(self._spill_to)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self._file_stem}-{self._files:06d}.parquet"
        _write_atomically(self.to_table(), path)
        self._files += 1
        self.written += len(self)
        self._reset()
        return path

    def close(self) -> None:
        """Write what is held (with ``spill_to``); the log stays usable."""
        self.spill()

    def register(self, stage: str, limit: int | None) -> int:
        """The code under which a gate records (called by :class:`StageGate`).

        Raises:
            ValueError: a gate of that name is already registered (its events would mix).
        """
        if stage in self._stages:
            raise ValueError(f"a gate named {stage!r} already writes to this log")
        self._stages.append(stage)
        self._limits.append(limit)
        return len(self._stages) - 1

    def record(self, code: int, event: int, waiting: int, running: int, wait_s: float = math.nan) -> None:
        """Append one event now (``code`` from :meth:`register`, ``event`` an index into :data:`EVENTS`)."""
        self._time.append(time.time())
        self._stage.append(code)
        self._event.append(event)
        self._waiting.append(waiting)
        self._running.append(running)
        self._wait.append(wait_s)
        if self._spill_to is not None and len(self._time) >= self._flush_events:
            self.spill()

    def __len__(self) -> int:
        """Events held now (those written out by a spill are in :attr:`written`)."""
        return len(self._time)

    def to_table(self) -> pa.Table:
        """The events as a table of :data:`GATE_LOG_SCHEMA` (vectorised)."""

        def column(values: array, dtype: type) -> np.ndarray:
            return np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype)

        stage = column(self._stage, np.uint16).astype(np.int32)
        limits = np.array([0 if x is None else x for x in self._limits], dtype=np.int64)
        unlimited = np.array([x is None for x in self._limits], dtype=bool)
        wait = column(self._wait, np.float64)
        return pa.table(
            {
                "time": pa.array(column(self._time, np.float64)),
                "stage": pa.array(self._stages, pa.string()).take(pa.array(stage)),
                "event": pa.array(EVENTS, pa.string()).take(pa.array(column(self._event, np.uint8).astype(np.int32))),
                "waiting": pa.array(column(self._waiting, np.int64)),
                "running": pa.array(column(self._running, np.int64)),
                "limit": pa.array(limits[stage], pa.int64(), mask=unlimited[stage])
                if len(limits)
                else pa.array([], pa.int64()),
                "wait_s": pa.array(wait, pa.float64(), mask=np.isnan(wait)),
            },
            schema=GATE_LOG_SCHEMA,
        )

    def events(self) -> list[GateEvent]:
        """The events as records (for tests and small logs; the writer uses :meth:`to_table`)."""
        return [GateEvent(**row) for row in self.to_table().to_pylist()]


class StageGate:
    """A FIFO gate that lets at most ``limit`` slots be held at once (see the module docstring).

    Use ``async with gate.slot(n):`` around the stage's call. A call asking for more slots than
    the limit takes the whole gate (``limit`` slots). Not thread-safe: one gate belongs to one
    event loop, like the job that owns it.

    Args:
        name: the stage's name (``llm``, ``solve``, ...); non-empty.
        limit: slots granted at once, >= 1; None = unlimited (the gate then only counts).
        sink: a :class:`GateLog` to record every change of the queue to.

    Raises:
        ValueError: an empty name, a limit that is not an int >= 1 or None, or a sink that
            already has a gate of this name.
    """

    def __init__(self, name: str, limit: int | None, *, sink: GateLog | None = None) -> None:
        if not name:
            raise ValueError("a stage gate needs a non-empty name")
        _check_limit(name, limit, auto=False)
        self.name = name
        self.limit = limit
        self._sink = sink
        self._code = sink.register(name, limit) if sink is not None else 0
        self._queue: deque[tuple[asyncio.Future[None], int, float]] = deque()
        self._running = 0
        self._peak_waiting = 0
        self._peak_running = 0
        self._cancelled = 0
        self._waits = _Sample()  # the waits, for the p95: exact up to 65,536 passes, then a uniform sample
        self._total_wait = 0.0
        self._max_wait = 0.0

    @property
    def waiting(self) -> int:
        """Calls queued at the gate now (including ones cancelled but not yet unwound)."""
        return len(self._queue)

    @property
    def running(self) -> int:
        """Slots held now."""
        return self._running

    def _slots(self, n: int) -> int:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"a gate slot request needs n >= 1 slots, got {n!r}")
        return n if self.limit is None else min(n, self.limit)

    def _fits(self, n: int) -> bool:
        return self.limit is None or self._running + n <= self.limit

    def _emit(self, event: int, wait_s: float = math.nan) -> None:
        if self._sink is not None:
            self._sink.record(self._code, event, len(self._queue), self._running, wait_s)

    def _enter(self, n: int, wait_s: float) -> None:
        self._running += n
        if self._running > self._peak_running:
            self._peak_running = self._running
        self._waits.append(wait_s)
        self._total_wait += wait_s
        if wait_s > self._max_wait:
            self._max_wait = wait_s
        self._emit(_ENTER, wait_s)

    async def acquire(self, n: int = 1) -> int:
        """Wait (FIFO) until ``n`` slots are free and take them; returns how many were taken.

        Raises:
            ValueError: ``n`` < 1.
            asyncio.CancelledError: cancelled while queued; the caller then holds nothing.
        """
        n = self._slots(n)
        if not self._queue and self._fits(n):
            self._enter(n, 0.0)
            return n
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (fut, n, time.monotonic())
        self._queue.append(entry)
        if len(self._queue) > self._peak_waiting:
            self._peak_waiting = len(self._queue)
        self._emit(_WAIT)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(n)  # the slots were granted just as the caller was cancelled: hand them on
            elif entry in self._queue:
                self._queue.remove(entry)
                self._cancelled += 1
                self._emit(_CANCEL)
                self._grant()  # a cancelled head may have been holding back calls behind it
            raise
        return n

    def release(self, n: int = 1) -> None:
        """Give back ``n`` slots (what :meth:`acquire` returned) and admit the calls that now fit.

        Raises:
            RuntimeError: more slots given back than are held (a caller bug).
        """
        if n > self._running:
            raise RuntimeError(f"gate {self.name!r}: releasing {n} slots but only {self._running} are held")
        self._running -= n
        self._emit(_LEAVE)
        self._grant()

    def _grant(self) -> None:
        now = time.monotonic()
        while self._queue:
            fut, n, since = self._queue[0]
            if fut.cancelled():  # its caller is unwinding; account for it here
                self._queue.popleft()
                self._cancelled += 1
                self._emit(_CANCEL)
                continue
            if not self._fits(n):
                return
            self._queue.popleft()
            self._enter(n, now - since)
            fut.set_result(None)

    @contextlib.asynccontextmanager
    async def slot(self, n: int = 1) -> AsyncIterator[None]:
        """Hold ``n`` slots for the body of an ``async with`` (released however it ends)."""
        taken = await self.acquire(n)
        try:
            yield
        finally:
            self.release(taken)

    def stats(self) -> GateStats:
        """The counters now (p95 sorts the waits: call it at the end, not per event; beyond 65,536
        passes it is the p95 of a uniform sample of 65,536 of them)."""
        passes = self._waits.count
        return GateStats(
            stage=self.name,
            limit=self.limit,
            waiting=len(self._queue),
            running=self._running,
            peak_waiting=self._peak_waiting,
            peak_running=self._peak_running,
            passes=passes,
            cancelled=self._cancelled,
            total_wait_s=round(self._total_wait, 6),
            mean_wait_s=round(self._total_wait / passes, 6) if passes else 0.0,
            p95_wait_s=round(_quantile(sorted(self._waits.values), 0.95), 6),
            max_wait_s=round(self._max_wait, 6),
        )


class _Sample:
    """Values seen, for quantiles in constant space: all of them up to ``size``, then a uniform
    sample of ``size`` (Vitter's algorithm R, seeded: the same waits give the same sample)."""

    def __init__(self, size: int = 65_536) -> None:
        self.size = size
        self.count = 0
        self.values = array("d")
        self._rng = random.Random(0)

    def append(self, value: float) -> None:
        self.count += 1
        if len(self.values) < self.size:
            self.values.append(value)
        else:
            j = self._rng.randrange(self.count)
            if j < self.size:
                self.values[j] = value


def _quantile(s: Sequence[float], p: float) -> float:
    """Linear-interpolated quantile of sorted ``s`` (0 when empty), as symbolkg.jobs.inspection.profile.distribution."""
    if not s:
        return 0.0
    k = (len(s) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


class GatedEngine:
    """An LLM engine behind a :class:`StageGate`: each request of a call holds one slot while in the engine.

    A call waits until the gate has a slot for every one of its requests and sends them together,
    so the engine sees the same batches as without the gate. ``model`` and
    ``supports_structured`` are the wrapped engine's own.

    Args:
        engine: the engine doing the work.
        gate: the ``llm`` stage's gate.
    """

    def __init__(self, engine: LLMEngine, gate: StageGate) -> None:
        self.engine = engine
        self.gate = gate
        self.model = engine.model
        self.supports_structured = engine.supports_structured

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if not requests:
            return await self.engine.generate(requests)
        async with self.gate.slot(len(requests)):
            return await self.engine.generate(requests)

    async def close(self) -> None:
        await self.engine.close()


class GatedSolver:
    """A solver pool whose ``solve`` calls pass a :class:`StageGate` (one slot per call).

    ``imap_unordered`` is passed through ungated: it is the batch path, bounded by the pool's
    own ``max_in_flight``. A ``solve`` cancelled inside the pool gives its slot back at once, even
    though a thread-based pool (:class:`~symbolkg.solvers.runtime.local_pool.LocalSolverPool`) finishes the call in the
    background: for that moment the pool may run more calls than the limit (never more than
    its workers).

    Args:
        pool: the pool doing the work.
        gate: the ``solve`` stage's gate.
    """

    def __init__(self, pool: SolverPool, gate: StageGate) -> None:
        self.pool = pool
        self.gate = gate

    @property
    def workers(self) -> int:
        return self.pool.workers

    def imap_unordered(self, requests: Iterable[SolveRequest]) -> Iterator[PoolResult]:
        return self.pool.imap_unordered(requests)

    async def solve(self, request: SolveRequest) -> PoolResult:
        async with self.gate.slot():
            return await self.pool.solve(request)

    def close(self) -> None:
        self.pool.close()


def gate_log_dir(run: str | os.PathLike[str]) -> Path:
    """Where a run's gate logs live: ``RUN.parquet.gates/``, one file per job session."""
    run = Path(run)
    return run.with_name(run.name + ".gates")


def write_gate_log(run: str | os.PathLike[str], log: GateLog) -> Path | None:
    """Write one session's in-memory gate log beside the run at once; None when there is nothing to write."""
    if not len(log):
        return None
    folder = gate_log_dir(run)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"session-{int(time.time() * 1000)}-{os.getpid()}.parquet"
    _write_atomically(log.to_table(), path)
    return path


def _write_atomically(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def read_gate_log(run: str | os.PathLike[str]) -> list[GateEvent]:
    """Every session's gate events of a run, session after session (empty when the run has none)."""
    folder = gate_log_dir(run)
    if not folder.is_dir():
        return []
    out: list[GateEvent] = []
    for path in sorted(folder.glob("*.parquet")):
        out.extend(GateEvent(**row) for row in pq.read_table(path).to_pylist())
    return out
