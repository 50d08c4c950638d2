"""Problems as a stream: read once and lazily, with the skip-bad policy, the limit, the shard and repeated ids.

A job starts on its first problem while the rest of its input is still on disk, and the driver's
memory follows the problems in flight, not the file: a 10^6-line JSON Lines file of problems with
programs is ~2 GB as Python objects, and none of it needs to be held at once. Every family's
reader is a generator behind a :class:`Sink`, and :class:`ProblemStream` is what a caller gets:

* the problems, one at a time, in file order (iterate once);
* ``errors``: the bad records skipped so far (``skip_bad``), each naming its file, line or record
  and field; complete once the stream is exhausted. Without ``skip_bad`` a bad record raises
  :class:`~symbolkg.jobs.datasets.records.InputError` when the stream reaches it;
* ``notes``: what the user should know that is not an error (Logic-LM problems without a
  recorded program), some known when the stream opens, some at its end.

What needed the whole input before, and what it costs now:

* **limit**: reading stops once ``limit`` problems are taken; nothing after them is read (a bad
  line past them is never seen).
* **repeated ids**: each id taken is kept as its 8-byte hash with the position of its record
  (:class:`FirstPositions`, ~16 bytes an id); a hash hit rereads that record from its source to
  compare exactly, so a repeat is reported as before ("first at line 3") and two ids that share a
  hash are both kept.
* **shard** (``--shard i/n``): the stream yields only the shard's problems
  (:meth:`~symbolkg.jobs.core.ids.Shard.takes`, the hash of the problem id, the same
  assignment as the job's). Without a limit, another shard's record is passed over without being
  converted (nor checked for repeats: every copy of an id is in one shard) when its problem ids
  can be read without converting it, and a JSON Lines line whose id can be read off its first
  bytes is not even parsed (:func:`~symbolkg.jobs.datasets.files.peek_id`); so each bad record is
  reported by the shard its ids belong to, and a record without a readable id by every shard.
  With a limit, the limit counts the file's problems before the split (as it always has), so
  every record up to it is converted and checked as without a shard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from symbolkg.jobs.core.ids import Shard, id_hash
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.files import RecordSource
from symbolkg.jobs.datasets.records import InputError, LoadResult, Where, check_limit

#: A record -> its problems (raises InputError on a bad record).
Convert = Callable[[Any, Where], list[Problem]]

#: A record -> the ids of the problems it would give, when they can be read without converting it; else None.
ProblemIds = Callable[[Any], "list[str] | None"]


@dataclass(frozen=True)
class ReadOptions:
    """How a stream reads its input.

    Attributes:
        skip_bad: collect bad records in the stream's ``errors`` instead of raising.
        limit: take only the first ``limit`` problems of the input (counted before the shard's
            split, as the job always has); None: all.
        shard: yield only this shard's problems; None: all.
    """

    skip_bad: bool = False
    limit: int | None = None
    shard: Shard | None = None

    def __post_init__(self) -> None:
        check_limit(self.limit)


def record_id(record: Any) -> list[str] | None:
    """The ids of a record whose own ``"id"`` (a non-blank string) is its one problem's id; None when it has none."""
    value = record.get("id") if isinstance(record, dict) else None
    return [value] if isinstance(value, str) and value.strip() else None


class FirstPositions:
    """Hash of an id -> the position of its first record, in ~16 bytes an id.

    Sorted runs of (hash, position) pairs, at most one of each size, merged as they double (a
    binary counter, like :class:`~symbolkg.jobs.core.ids.IdHashes`), plus a dict of up to
    4,096 recent ones. A lookup is a dict probe and a binary search per run.
    """

    TAIL = 4096

    def __init__(self) -> None:
        self._tail: dict[int, int] = {}
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []

    def get(self, key: int) -> int | None:
        """The position stored under ``key``, or None."""
        position = self._tail.get(key)
        if position is not None:
            return position
        probe = np.uint64(key)
        for keys, positions in self._runs:
            i = int(np.searchsorted(keys, probe))
            if i < len(keys) and keys[i] == probe:
                return int(positions[i])
        return None

    def add(self, key: int, position: int) -> None:
        """Store ``position`` under ``key`` (not stored yet)."""
        self._tail[key] = position
        if len(self._tail) >= self.TAIL:
            self._seal()

    def _seal(self) -> None:
        keys = np.fromiter(self._tail.keys(), dtype=np.uint64, count=len(self._tail))
        positions = np.fromiter(self._tail.values(), dtype=np.int64, count=len(self._tail))
        self._tail = {}
        while self._runs and len(self._runs[-1][0]) <= len(keys):
            older_keys, older_positions = self._runs.pop()
            keys, positions = np.concatenate((older_keys, keys)), np.concatenate((older_positions, positions))
        order = np.argsort(keys, kind="stable")
        self._runs.append((keys[order], positions[order]))


class Sink:
    """One source's way into a stream: the ``skip_bad`` policy, the limit, the shard, and repeated ids.

    A family's reader hands its records and its converter to :meth:`take_all` and returns the
    generator it gets; nothing is read until the stream is.

    Attributes:
        options: the stream's options.
        errors: bad records skipped so far (``skip_bad``), in the order met.
        notes: things the user should know, as the reader finds them.
        taken: problems taken so far (what the limit counts).
    """

    def __init__(self, options: ReadOptions = ReadOptions()) -> None:
        self.options = options
        self.errors: list[InputError] = []
        self.notes: list[str] = []
        self.taken = 0
        self._first = FirstPositions()
        self._exact: dict[str, int] = {}  # ids that share their hash with an earlier, different id
        self._source: RecordSource | None = None
        self._convert: Convert | None = None

    @property
    def full(self) -> bool:
        """Whether the limit is reached (nothing more is read)."""
        return self.options.limit is not None and self.taken >= self.options.limit

    def bad(self, error: InputError) -> None:
        """A bad record: raised, or with ``skip_bad`` collected."""
        if not self.options.skip_bad:
            raise error
        self.errors.append(error)

    def _passes_over(self, ids: list[str] | None) -> bool:
        """Whether a record with these problem ids is another shard's, left unconverted (never under a limit)."""
        shard = self.options.shard
        return shard is not None and self.options.limit is None and bool(ids) and not any(shard.takes(i) for i in ids)  # type: ignore[union-attr]

    def take_all(self, source: RecordSource, convert: Convert, ids: ProblemIds | None = record_id) -> Iterator[Problem]:
        """The problems of ``source``'s records, lazily: bad ones through :meth:`bad`, until the limit.

        Args:
            source: the records (one source per sink: repeats are reread from it).
            convert: a record -> its problems; raises InputError on a bad record.
            ids: a record -> its problems' ids without converting it (to pass over another shard's
                records), or None when they cannot be told. :func:`record_id` (the default) says a
                record's own id is its problem's, which lets a JSON Lines source pass over a line
                without parsing it.
        """
        if self._source is not None and self._source is not source:
            raise ValueError("a Sink takes the records of one source")
        self._source, self._convert = source, convert
        unlimited_shard = self.options.shard is not None and self.options.limit is None
        records = iter(source.records(self._other_shard if ids is record_id and unlimited_shard else None))
        try:
            while not self.full:
                item = next(records, None)
                if item is None:
                    return
                where, record = item
                if isinstance(record, InputError):
                    self.bad(record)
                    continue
                if ids is not None and self._passes_over(ids(record)):
                    continue
                try:
                    problems = convert(record, where)
                except InputError as error:
                    self.bad(error)
                    continue
                yield from self._accept(problems, where)
        finally:
            close = getattr(records, "close", None)
            if close is not None:
                close()  # the file, now: not when the collector finds the generator

    def _other_shard(self, problem_id: str) -> bool:
        return bool(problem_id.strip()) and not self.options.shard.takes(problem_id)  # type: ignore[union-attr]

    def _accept(self, problems: list[Problem], where: Where) -> Iterator[Problem]:
        """A record's problems that are not repeats, counted; those of the shard yielded."""
        shard, counted = self.options.shard, self.options.limit is not None
        accepted: list[str] = []
        for problem in problems:
            if self.full:
                return
            mine = shard is None or shard.takes(problem.id)
            if not mine and not counted:
                continue  # another shard's: not this driver's to check
            first = self._first_position(problem.id, where, accepted)
            if first is not None:
                at = f"{where.unit} {first}" if first >= 0 else "earlier"
                self.bad(where.with_id(problem.id).error("id", f"duplicate id {problem.id!r} (first at {at})"))
                continue
            accepted.append(problem.id)
            self.taken += 1
            if mine:
                yield problem

    def _first_position(self, problem_id: str, where: Where, accepted: list[str]) -> int | None:
        """Where ``problem_id`` was taken before (its record's position, -1 if unknown); None: new (noted now)."""
        if problem_id in self._exact:
            return self._exact[problem_id]
        position = where.line if where.line is not None else -1
        key = id_hash(problem_id)
        first = self._first.get(key)
        if first is None:
            self._first.add(key, position)
            return None
        # A hash hit: compare exactly with the ids of the first record (this one: its problems so far).
        earlier = accepted if first == position else self._ids_at(first)
        if problem_id in earlier:
            return first
        self._exact[problem_id] = position
        return None

    def _ids_at(self, position: int) -> list[str]:
        """The problem ids of the record at ``position`` of this sink's source, read and converted again."""
        if position < 0 or self._source is None or self._convert is None:
            return []
        where, record = self._source.reread(position)
        if isinstance(record, InputError):
            return []
        try:
            return [p.id for p in self._convert(record, where)]
        except InputError:
            return []

    def offer(self, problems: Iterable[Problem]) -> Iterator[Problem]:
        """Problems built and checked elsewhere (a program file's, say), through the limit and the shard."""
        shard, counted = self.options.shard, self.options.limit is not None
        for problem in problems:
            if self.full:
                return
            mine = shard is None or shard.takes(problem.id)
            if not mine and not counted:
                continue
            self.taken += 1
            if mine:
                yield problem


class ProblemStream:
    """An input's problems, read lazily and once; its skipped records and notes fill in as it is read.

    Iterate it once (a job does), or :meth:`collect` it into a :class:`LoadResult`. ``errors`` and
    ``notes`` are complete when the iteration has ended.
    """

    def __init__(self, problems: Iterable[Problem], sinks: Sequence[Sink]) -> None:
        self._problems = iter(problems)
        self.sinks = tuple(sinks)
        self._started = False
        self._notes_taken = 0

    def __iter__(self) -> Iterator[Problem]:
        if self._started:
            raise RuntimeError("a ProblemStream is read once; open the input again to reread it")
        self._started = True
        return self._problems

    @property
    def errors(self) -> list[InputError]:
        """Bad records skipped so far (``skip_bad``), source by source."""
        return [e for sink in self.sinks for e in sink.errors]

    @property
    def notes(self) -> list[str]:
        """Notes so far, source by source."""
        return [n for sink in self.sinks for n in sink.notes]

    def new_notes(self) -> list[str]:
        """The notes not returned by an earlier call (to print those known at the start, then the rest)."""
        notes = self.notes
        fresh, self._notes_taken = notes[self._notes_taken :], len(notes)
        return fresh

    def collect(self) -> LoadResult:
        """Read the rest: every problem in a list, with the errors and notes (what the ``load_*`` functions return)."""
        problems = list(self)
        return LoadResult(problems, self.errors, self.notes)

    def close(self) -> None:
        """Stop reading (closes the file of a stream left part-read)."""
        close = getattr(self._problems, "close", None)
        if close is not None:
            close()

    @classmethod
    def round_robin(cls, streams: Sequence[ProblemStream]) -> ProblemStream:
        """One problem of each stream in turn until all are exhausted (a mixed stream)."""

        def interleaved() -> Iterator[Problem]:
            iterators = [iter(s) for s in streams]
            while iterators:
                for it in list(iterators):
                    problem = next(it, None)
                    if problem is None:
                        iterators.remove(it)
                    else:
                        yield problem

        return cls(interleaved(), [sink for s in streams for sink in s.sinks])


__all__ = ["FirstPositions", "ProblemStream", "ReadOptions", "Sink", "record_id"]
