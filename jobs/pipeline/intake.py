"""A job's input, read once and lazily: the problems of a store's shard not yet done, ids unique.

Both batch jobs (:func:`symbolkg.jobs.pipeline.programs_job.run_solve` and
:func:`symbolkg.jobs.pipeline.method_job.run_method_job`) take their problems through :class:`Intake`
and refuse a repeated id with :class:`UniqueIds`, so neither holds the job's problem list: memory
follows the problems in flight (plus the exact set of the problems done before, read once when a
job resumes, and the store's 8-byte hash of each id written).

The command line hands them a :class:`~symbolkg.jobs.datasets.stream.ProblemStream`, which reads
the input file as they take problems, yields only a ``--shard``'s problems and checks repeats as it
reads; the shard test here stays, so that any iterable (a generator, a list) runs the same split.
A stream has no length, so the jobs' progress bars count without a total.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from contextlib import contextmanager
from typing import Any

from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.pipeline.store import ResultStore


class Intake:
    """The problems of ``store``'s shard not yet recorded in it, counted as they pass.

    The exact set of the problems already recorded (:meth:`ResultStore.done_index`) is read once.
    ``bar`` (a tqdm bar, or None) advances by one for each problem skipped as done.
    """

    def __init__(self, store: ResultStore, bar: Any = None) -> None:
        self.done = store.done_index()
        self.shard = store.shard
        self.seen = 0  # problems (of this shard) read so far
        self.skipped = 0  # ... of them already done
        self.bar = bar

    def todo(self, problems: Iterable[Problem]) -> Iterator[Problem]:
        for p in problems:
            if self.shard is not None and not self.shard.takes(p.id):
                continue
            self.seen += 1
            if p.id in self.done:
                self.skipped += 1
                if self.bar is not None:
                    self.bar.update(1)
                continue
            yield p


def progress_total(problems: Iterable[Problem], store: ResultStore) -> int | None:
    """What a job's progress bar counts to: the input's length when it has one and ``store`` no shard
    (a shard's share is unknown until read), else None (the bar counts without a total)."""
    return len(problems) if isinstance(problems, Sized) and store.shard is None else None


class UniqueIds:
    """Refuses a problem id met again while its first copy is in flight or recorded by this session (exact)."""

    def __init__(self, store: ResultStore) -> None:
        self.store = store
        self.in_flight: set[str] = set()

    def enter(self, problem_id: str) -> None:
        """``problem_id`` starts. Raises ValueError when it is in flight or recorded already."""
        if problem_id in self.in_flight or self.store.recorded(problem_id):
            raise ValueError(f"duplicate problem id {problem_id!r} in the input")
        self.in_flight.add(problem_id)

    def leave(self, problem_id: str) -> None:
        """``problem_id`` is no longer in flight (recorded, or given up)."""
        self.in_flight.discard(problem_id)

    @contextmanager
    def running(self, problem_id: str) -> Iterator[None]:
        self.enter(problem_id)
        try:
            yield
        finally:
            self.leave(problem_id)
