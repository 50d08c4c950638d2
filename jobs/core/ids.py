"""Problem ids at scale: a stable 8-byte hash, shards of a job, and sets of ids in ~8 bytes an id.

A driver that keeps a Python ``set`` of the ids it has seen spends ~100 bytes a problem (the
string object and the set's slot): 100 MB at 10^6 problems, for nothing but a membership test.
The structures here keep what membership needs:

* :class:`IdHashes`: a growing set of 8-byte hashes (sorted numpy runs, merged as they double,
  plus a small unsorted tail): ~8 bytes an id. Its answer is "certainly not" or "maybe": a hit
  may be another id with the same hash (about ``n^2 / 2^65`` for ``n`` ids: 3e-8 at 10^6), so a
  caller that acts on a hit checks it exactly against the ground truth (the results store).
* :class:`DoneIds`: a fixed, exact set (the hashes, sorted, beside the ids' text in one Arrow
  array in the same order): ~20-25 bytes an id, built once from the results store when a job
  resumes, and never grown.
* :class:`Shard`: ``--shard i/n`` takes the problems whose :func:`id_hash` is ``i`` modulo
  ``n``: the same split in every process and on every machine (Python's ``hash()`` of a str is
  salted per process; this is not).

Example:
    >>> s = IdHashes()
    >>> s.add("p1"), s.add("p1"), "p1" in s, "p2" in s
    (False, True, True, False)
    >>> done = DoneIds.build(["a", "b"])
    >>> "a" in done, "c" in done, len(done)
    (True, False, 2)
    >>> Shard.parse("1/4").name, Shard.parse("1/4").takes("sim-00001") in (True, False)
    ('shard-1-of-4', True)
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

_TAIL = 4096  # ids kept unsorted before they become a sorted run


def id_hash(problem_id: str) -> int:
    """The id's stable 64-bit hash (BLAKE2b, 8 bytes, big-endian), the same in every process."""
    return int.from_bytes(hashlib.blake2b(problem_id.encode(), digest_size=8).digest(), "big")


def id_hashes(ids: Iterable[str]) -> np.ndarray:
    """:func:`id_hash` of each id, as a ``uint64`` array."""
    return np.fromiter((id_hash(i) for i in ids), dtype=np.uint64)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count``: the problems whose :func:`id_hash` is ``index`` modulo ``count``.

    Raises:
        ValueError: ``count`` < 1 or ``index`` outside ``0..count-1``.
    """

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"a shard is i/n with 0 <= i < n, got {self.index}/{self.count}")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"i/n"`` (a CLI flag) -> the shard.

        Raises:
            ValueError: not of that form, or out of range; the message says what is accepted.
        """
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not m:
            raise ValueError(f"a shard looks like 0/4 (shard index / number of shards), got {text!r}")
        return cls(int(m.group(1)), int(m.group(2)))

    @property
    def name(self) -> str:
        """The shard's part of file names: ``shard-i-of-n``."""
        return f"shard-{self.index}-of-{self.count}"

    def takes(self, problem_id: str) -> bool:
        """Whether this shard runs ``problem_id``."""
        return id_hash(problem_id) % self.count == self.index


class IdHashes:
    """A growing set of ids kept as their 8-byte hashes (see the module docstring): "no" is exact, "yes" is maybe.

    Sorted runs of 4,096 x 2^k hashes, at most one of each size (a binary counter: each hash is
    merged O(log n) times), plus an unsorted tail of up to 4,096 hashes. A lookup is a set probe
    and one binary search per run (at most ~log2(n / 4096) runs: 8 at 10^6 ids).
    """

    def __init__(self) -> None:
        self._tail: set[int] = set()
        self._runs: list[np.ndarray] = []
        self._len = 0

    def __len__(self) -> int:
        """Hashes added (an id added twice counts once; two ids with one hash count once)."""
        return self._len

    @property
    def nbytes(self) -> int:
        """Bytes of the sorted runs (the tail is at most 4,096 Python ints)."""
        return sum(r.nbytes for r in self._runs)

    def _has(self, h: int) -> bool:
        if h in self._tail:
            return True
        key = np.uint64(h)
        for run in self._runs:
            i = int(np.searchsorted(run, key))
            if i < len(run) and run[i] == key:
                return True
        return False

    def __contains__(self, problem_id: object) -> bool:
        """Maybe: False is exact; True may be another id with the same hash."""
        return isinstance(problem_id, str) and self._has(id_hash(problem_id))

    def add(self, problem_id: str) -> bool:
        """Add the id; returns whether its hash was there already (a maybe-duplicate)."""
        h = id_hash(problem_id)
        if self._has(h):
            return True
        self._tail.add(h)
        self._len += 1
        if len(self._tail) >= _TAIL:
            self._seal()
        return False

    def _seal(self) -> None:
        run = np.fromiter(self._tail, dtype=np.uint64, count=len(self._tail))
        run.sort()
        self._tail = set()
        while self._runs and len(self._runs[-1]) <= len(run):
            run = np.concatenate((self._runs.pop(), run))
            run.sort(kind="stable")  # two sorted halves: a merge
        self._runs.append(run)


class DoneIds:
    """A fixed, exact set of ids: hashes sorted, and the ids' text in the same order (one Arrow array).

    Build it with :meth:`build` (e.g. from the results store's ``problem_id`` columns); a lookup
    binary-searches the hash and compares the text of the (one, or few) ids with that hash.
    """

    def __init__(self, hashes: np.ndarray, ids: pa.Array) -> None:
        self._hashes = hashes
        self._ids = ids

    @classmethod
    def build(cls, ids: Iterable[str] | pa.Array | pa.ChunkedArray) -> DoneIds:
        """The set of ``ids`` (duplicates are kept once)."""
        import pyarrow as pa  # only a resuming job builds one: Shard and id_hash, which readers use, need none

        if isinstance(ids, pa.ChunkedArray):
            ids = ids.combine_chunks() if ids.num_chunks else pa.array([], pa.string())
        arr = ids if isinstance(ids, pa.Array) else pa.array(list(ids), pa.string())
        step = 65_536  # a slice's ids become Python strings at a time, not all of them
        hashes = np.concatenate(
            [id_hashes(arr.slice(i, step).to_pylist()) for i in range(0, len(arr), step)] or [np.zeros(0, np.uint64)]
        )
        order = np.argsort(hashes, kind="stable")
        return cls(hashes[order], arr.take(pa.array(order)) if len(arr) else arr)

    @classmethod
    def concat(cls, parts: list[DoneIds]) -> DoneIds:
        """One set of several (each built from a file, say)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.build([])
        if len(parts) == 1:
            return parts[0]
        import pyarrow as pa  # as in build()

        hashes = np.concatenate([p._hashes for p in parts])
        ids = pa.concat_arrays([p._ids for p in parts])
        order = np.argsort(hashes, kind="stable")
        return cls(hashes[order], ids.take(pa.array(order)))

    def __len__(self) -> int:
        """Entries (an id present in several sources counts once per source)."""
        return len(self._hashes)

    @property
    def nbytes(self) -> int:
        return self._hashes.nbytes + self._ids.nbytes

    def __contains__(self, problem_id: object) -> bool:
        if not isinstance(problem_id, str) or not len(self._hashes):
            return False
        key = np.uint64(id_hash(problem_id))
        i = int(np.searchsorted(self._hashes, key))
        while i < len(self._hashes) and self._hashes[i] == key:
            if self._ids[i].as_py() == problem_id:
                return True
            i += 1
        return False


__all__ = ["DoneIds", "IdHashes", "Shard", "id_hash", "id_hashes"]
