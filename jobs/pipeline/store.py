"""Results store: streams result rows to Parquet, survives a kill, resumes without duplicates, shards.

Layout while a run is in progress (``RUN.parquet`` is the user's ``--out``)::

    RUN.parquet.parts/part-<session>-<seq>.parquet   # each flush: one complete file, renamed into place
    RUN.parquet                                      # written by finalize(): all rows, one per problem

A part file appears atomically (written to a temporary name, then
``os.replace``), so a kill at any moment leaves only complete files: at most
the rows buffered since the last flush are lost, and those problems are simply
run again by the next session. ``done_ids()`` reads the finished file and all
parts, so a rerun skips every problem already recorded; ``finalize()`` merges,
keeps the first row per problem, writes ``RUN.parquet`` atomically and only
then removes the parts (a kill between the two is harmless: the rows are
deduplicated again next time).

Shards (``--shard i/n``, :class:`~symbolkg.jobs.core.ids.Shard`): a job split over ``n``
drivers, each running the problems of its shard, writes into the same run under names of its
own, so concurrent shards never touch one another's files::

    RUN.shard-<i>-of-<n>.parquet.parts/part-<session>-<seq>.parquet
    RUN.shard-<i>-of-<n>.parquet                     # shard i's finalize(): its rows

Each shard resumes and finalizes on its own. The run is the union of its members (``RUN.parquet``
and every ``RUN.shard-*-of-*.parquet``, finished or still in parts): :func:`run_files` lists them,
and :func:`read_run` (so ``report``, ``verify``, ``explain``, ``profile``) reads them as one table,
first row per problem. A session skips every problem the run holds in any member.

Memory: nothing here grows with the rows already written. The buffer holds at most
``flush_rows`` rows; the ids appended in this session are kept as 8-byte hashes
(:class:`~symbolkg.jobs.core.ids.IdHashes`, checked exactly against the files on a hit);
``finalize()`` streams the files into ``RUN.parquet`` one row group (at most 8,192 rows or
16 MB) at a time, with one 8-byte hash per row while it runs when several sessions wrote (to find
a problem recorded twice). Parquet's own metadata is the one part that grows: ~31 KB a row group
in the writer (4 MB at 10^6 rows of ~2 KB), so the long text columns carry no min/max
statistics. :meth:`ResultStore.done_index` is the exact, compact set of the problems a resumed
session skips. Finalize hands the memory of each row group back to the allocator
(``release_unused``); a ``symbolkg`` process allocates Arrow's memory with malloc, which returns
it, rather than Arrow's default mimalloc, which keeps it (:mod:`symbolkg.jobs.cli`).

Run-level facts (wall time of each session, sessions, command) travel in the
Parquet key-value metadata under ``b"symbolkg"``; the wall time of a killed
session is kept too because every part records its session's elapsed time.
``symbolkg solve`` stores there the run's whole config and its provenance (package version, git
commit, model and its files' hash, prompt template ids, sampling, input fingerprint:
:mod:`symbolkg.jobs.pipeline.provenance`); :func:`read_run_meta` reads them without the rows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from symbolkg.jobs.core.ids import DoneIds, IdHashes, Shard, id_hash, id_hashes
from symbolkg.jobs.core.rows import ResultRow
from symbolkg.jobs.core.tables import RESULT_SCHEMA, conform_results, result_table
from symbolkg.jobs.pipeline.provenance import build_info

T = TypeVar("T")
_META_KEY = b"symbolkg"
# Rows per row group of a finalized file, and the most rows finalize holds at once (or fewer, when they
# are this many bytes). The writer keeps ~31 KB of metadata a row group until it closes, and a reader
# ~15 KB (measured with pyarrow 26), so a run of N rows costs N / rows-per-group x 31 KB beside the
# batch held: with 8,192 rows of ~2 KB, 4 MB at 10^6 rows and a 16 MB batch; rows of 10 KB make
# groups of ~1,600 rows (the byte bound), 19 MB at 10^6.
_MERGE_ROWS = 8192
_MERGE_BYTES = 16 << 20
_LONG_TEXT = frozenset({"program", "proof", "error_message", "attempts_log", "trace", "certificate", "stage_seconds"})
#: Columns with min/max statistics in the row-group metadata: not the long texts, whose min and max
#: would be whole programs and logs (at 10^6 rows the footer grew to 32 MB, ~130 MB once parsed).
STATISTICS_COLUMNS = [name for name in RESULT_SCHEMA.names if name not in _LONG_TEXT]


def shard_path(run: str | os.PathLike[str], shard: Shard | None) -> Path:
    """The file a shard of ``run`` finalizes into (``run`` itself without a shard)."""
    run = Path(run)
    return run if shard is None else run.with_name(f"{run.stem}.{shard.name}.parquet")


def _parts_dir(path: Path) -> Path:
    return path.with_name(path.name + ".parts")


def run_members(run: str | os.PathLike[str]) -> list[Path]:
    """The final paths of the run's members that exist as a file or as parts: ``RUN.parquet``, then its shards."""
    run = Path(run)
    members = [run] if run.exists() or _parts_dir(run).is_dir() else []
    pattern = re.compile(re.escape(run.stem) + r"\.shard-(\d+)-of-(\d+)\.parquet(\.parts)?")
    shards: dict[tuple[int, int], Path] = {}
    if run.parent.is_dir():
        for p in run.parent.iterdir():
            m = pattern.fullmatch(p.name)
            if m:
                key = (int(m.group(2)), int(m.group(1)))
                shards[key] = p.with_name(p.name.removesuffix(".parts"))
    return members + [shards[k] for k in sorted(shards)]


def _member_files(path: Path) -> list[Path]:
    files = [path] if path.exists() else []
    parts = _parts_dir(path)
    if parts.is_dir():
        files += sorted(parts.glob("part-*.parquet"))
    return files


def _reread(read: Callable[[], T], tries: int = 5) -> T:
    """``read()``, again when a file it listed vanished before it was read.

    Another process may finalize a member meanwhile. A finalize replaces the member's file before
    it deletes the parts, so a part that vanished is in the final file now: listing again finds it.
    """
    for _ in range(tries - 1):
        try:
            return read()
        except FileNotFoundError:
            continue
    return read()


def _read_member(member: Path, columns: list[str] | None = None) -> list[tuple[Path, pa.Table]]:
    """Each file of ``member`` with its table (``columns`` only), read while another process may finalize it."""
    return _reread(lambda: [(f, pq.read_table(f, columns=columns)) for f in _member_files(member)])


def run_files(run: str | os.PathLike[str]) -> list[Path]:
    """Every results file of the run, union of its members: each member's final file, then its parts."""
    return [f for member in run_members(run) for f in _member_files(member)]


def run_exists(run: str | os.PathLike[str]) -> bool:
    """Whether the run has any results (a finished file, parts, or a shard's)."""
    return bool(run_members(run))


def remove_run(run: str | os.PathLike[str], shard: Shard | None = None) -> None:
    """Delete the run's results (``--overwrite``): all members, or with ``shard`` that shard's files only."""
    members = [shard_path(run, shard)] if shard is not None else run_members(run)
    for member in members:
        member.unlink(missing_ok=True)
        shutil.rmtree(_parts_dir(member), ignore_errors=True)


class ResultStore:
    """Append-only, resumable Parquet results of one run (or of one shard of it).

    Args:
        path: the run's Parquet file (``--out``).
        flush_rows: flush after this many buffered rows.
        flush_seconds: ... or when the oldest buffered row is this old.
        run_info: JSON-serialisable facts stored with the run (command, workers, ...); its
            ``provenance`` object gets the package version and git commit
            (:func:`~symbolkg.jobs.pipeline.provenance.build_info`).
        shard: write as this shard of the run (its own files; see the module docstring).

    Attributes:
        path: the file :meth:`finalize` writes: ``RUN.parquet``, or the shard's.
        run_path: the run's file (``--out``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        flush_rows: int = 64,
        flush_seconds: float = 5.0,
        run_info: dict[str, Any] | None = None,
        shard: Shard | None = None,
    ) -> None:
        if flush_rows < 1 or flush_seconds <= 0:
            raise ValueError("flush_rows must be >= 1 and flush_seconds > 0")
        self.run_path = Path(path)
        if self.run_path.suffix != ".parquet":
            raise ValueError(f"results path must end in .parquet, got {self.run_path}")
        self.shard = shard
        self.path = shard_path(self.run_path, shard)
        self.parts_dir = _parts_dir(self.path)
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        info = dict(run_info or {})
        info["provenance"] = {**build_info(), **(info.get("provenance") or {})}  # version and commit, in every file
        self.run_info = {**info, **({"shard": shard.name} if shard else {})}
        self.session = f"{int(time.time())}-{uuid.uuid4().hex[:8]}"
        self._t0 = time.monotonic()
        self._buffer: list[ResultRow] = []
        self._buffer_since: float | None = None
        self._seq = 0
        self._seen = IdHashes()  # ids appended in this session (their rows are in the buffer or our parts)

    # -- reading ---------------------------------------------------------
    def _files(self) -> list[Path]:
        """This store's own files (its final file, then its parts)."""
        return _member_files(self.path)

    def _recorded_ids(self) -> Iterator[pa.Array]:
        """The ``problem_id`` columns of every file of the run (all members), this shard's ids only."""
        for member in run_members(self.run_path):
            for _, table in _read_member(member, columns=["problem_id"]):
                ids = table.column("problem_id").combine_chunks()
                if self.shard is not None and len(ids):
                    keep = id_hashes(ids.to_pylist()) % np.uint64(self.shard.count) == np.uint64(self.shard.index)
                    ids = ids.filter(pa.array(keep))
                yield ids

    def done_ids(self) -> set[str]:
        """Problem ids already recorded: in any file of the run (of this shard) or appended in this session.

        A Python set (~100 bytes an id): for tests and small runs; a job uses :meth:`done_index`.
        """
        done: set[str] = set()
        for ids in self._recorded_ids():
            done.update(ids.to_pylist())
        return done | {r.problem_id for r in self._buffer}

    def done_index(self) -> DoneIds:
        """:meth:`done_ids` as an exact, compact set (~20-25 bytes an id): what a resumed job skips."""
        columns = list(self._recorded_ids())
        if self._buffer:
            columns.append(pa.array([r.problem_id for r in self._buffer], pa.string()))
        return DoneIds.build(pa.chunked_array(columns, pa.string()))

    def recorded(self, problem_id: str) -> bool:
        """Whether this session appended a row for ``problem_id`` (exact; cheap unless it did)."""
        return problem_id in self._seen and self._recorded_exactly(problem_id)

    def _recorded_exactly(self, problem_id: str) -> bool:
        """The exact check behind a hash hit: the buffer, then this session's part files."""
        if any(r.problem_id == problem_id for r in self._buffer):
            return True
        for f in sorted(self.parts_dir.glob(f"part-{self.session}-*.parquet")) if self.parts_dir.is_dir() else ():
            ids = pq.read_table(f, columns=["problem_id"]).column("problem_id")
            if pc.any(pc.equal(ids, problem_id)).as_py():
                return True
        return False

    # -- writing ---------------------------------------------------------
    def append(self, row: ResultRow) -> None:
        """Buffer one row; a second row for the same problem in this session is a bug and raises."""
        if self._seen.add(row.problem_id) and self._recorded_exactly(row.problem_id):
            raise ValueError(f"duplicate result for problem {row.problem_id!r}")
        self._buffer.append(row)
        if self._buffer_since is None:
            self._buffer_since = time.monotonic()
        if len(self._buffer) >= self.flush_rows or time.monotonic() - self._buffer_since >= self.flush_seconds:
            self.flush()

    def extend(self, rows: Iterable[ResultRow]) -> None:
        for row in rows:
            self.append(row)

    def flush(self) -> None:
        if not self._buffer:
            return
        self.parts_dir.mkdir(parents=True, exist_ok=True)
        table = result_table(self._buffer)
        meta = {"session": self.session, "session_elapsed_s": time.monotonic() - self._t0, **self.run_info}
        table = table.replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})
        final = self.parts_dir / f"part-{self.session}-{self._seq:06d}.parquet"
        tmp = final.with_suffix(".tmp")
        pq.write_table(table, tmp, write_statistics=STATISTICS_COLUMNS)
        os.replace(tmp, final)
        self._seq += 1
        self._buffer = []
        self._buffer_since = None

    def finalize(self) -> int:
        """Merge this store's files into :attr:`path` (first row per problem), remove its parts; the rows written.

        Streams: a few thousand rows at a time (plus, when rows of several sessions are merged, one
        8-byte hash per row to find a problem recorded twice).
        """
        self.flush()
        self._seen = IdHashes()  # every row of this session is in a part now
        files = self._files()
        sessions: dict[str, float] = {}
        for f in files:
            _merge_sessions(sessions, _read_meta(pq.read_schema(f)), final=f == self.path)
        twice = self._repeated_ids(files, sessions)
        meta = {"sessions": sessions, "wall_seconds": sum(sessions.values()), **self.run_info}
        schema = RESULT_SCHEMA.with_metadata({_META_KEY: json.dumps(meta).encode()})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        rows = 0
        pool = pa.default_memory_pool()
        with pq.ParquetWriter(tmp, schema, write_statistics=STATISTICS_COLUMNS) as writer:
            for table in _batched(_first_rows(files, twice)):
                writer.write_table(table.replace_schema_metadata(schema.metadata))
                rows += table.num_rows
                del table
                pool.release_unused()  # malloc_trim under malloc; mimalloc would keep the pages (module docstring)
        os.replace(tmp, self.path)
        if self.parts_dir.is_dir():
            for p in self.parts_dir.iterdir():
                p.unlink()
            self.parts_dir.rmdir()
        return rows

    def _repeated_ids(self, files: list[Path], sessions: dict[str, float]) -> set[int]:
        """The hashes of ids in more than one row of ``files`` (and of two ids with one hash).

        Only rows of two sessions can share a problem (one session refuses a second row, and a
        resumed one skips what is recorded), or a finished file and parts left by a kill during
        :meth:`finalize`: so with one session and no finished file nothing is read. Otherwise
        one 8-byte hash per row, for the time of the merge.
        """
        if not self.path.exists() and len(sessions) <= 1:
            return set()
        hashes = [
            id_hashes(b.column(0).to_pylist())
            for f in files
            for b in pq.ParquetFile(f).iter_batches(65_536, columns=["problem_id"])
        ]
        return _repeated(hashes)


def _repeated(hashes: list[np.ndarray]) -> set[int]:
    """The hashes that occur more than once in ``hashes`` (an id in two files, or two ids with one hash)."""
    if not hashes:
        return set()
    flat = np.concatenate(hashes)
    flat.sort()
    return set(flat[1:][flat[1:] == flat[:-1]].tolist())


def _first_rows(files: list[Path], twice: set[int]) -> Iterator[pa.Table]:
    """The files' rows (conformed), each row group at a time, without a second row of a problem (exact)."""
    seen: set[str] = set()  # only ids whose hash occurs twice: almost always none
    for f in files:
        pf = pq.ParquetFile(f)
        for g in range(pf.num_row_groups):
            table = conform_results(pf.read_row_group(g, use_threads=False)).replace_schema_metadata(None)
            if twice:
                keep = []
                for pid in table.column("problem_id").to_pylist():
                    if id_hash(pid) not in twice:
                        keep.append(True)
                    else:
                        keep.append(pid not in seen)
                        seen.add(pid)
                table = table.filter(pa.array(keep))
            yield table


def _batched(tables: Iterable[pa.Table]) -> Iterator[pa.Table]:
    """``tables`` regrouped into tables of about :data:`_MERGE_ROWS` rows (or :data:`_MERGE_BYTES`)."""
    held: list[pa.Table] = []
    rows = size = 0
    for t in tables:
        if not t.num_rows:
            continue
        held.append(t)
        rows += t.num_rows
        size += t.nbytes
        if rows >= _MERGE_ROWS or size >= _MERGE_BYTES:
            yield pa.concat_tables(held)
            held, rows, size = [], 0, 0
    if held:
        yield pa.concat_tables(held)


def _merge_sessions(sessions: dict[str, float], meta: dict[str, Any], *, final: bool) -> None:
    """Add one file's sessions: a finished file lists them; a part names its own and its elapsed time."""
    if final:
        sessions.update(meta.get("sessions", {}))
    elif "session" in meta:
        s = meta["session"]
        sessions[s] = max(sessions.get(s, 0.0), float(meta.get("session_elapsed_s", 0.0)))


def _first_per_problem(table: pa.Table) -> pa.Table:
    ids = table.column("problem_id").to_pylist()
    keep, seen = [], set()
    for i, pid in enumerate(ids):
        if pid not in seen:
            seen.add(pid)
            keep.append(i)
    return table.take(pa.array(keep, type=pa.int64())) if len(keep) != len(ids) else table


def _read_meta(schema: pa.Schema) -> dict[str, Any]:
    raw = (schema.metadata or {}).get(_META_KEY)
    return json.loads(raw) if raw else {}


def _finished(members: list[Path], run: Path) -> bool:
    """Every member finalized (no parts left), and for each shard count n seen, all n shards present."""
    if not members or any(not m.exists() or _parts_dir(m).is_dir() for m in members):
        return False
    counts: dict[int, set[int]] = {}
    for m in members:
        if m != run:
            i, n = (int(x) for x in re.findall(r"\.shard-(\d+)-of-(\d+)\.parquet$", m.name)[0])
            counts.setdefault(n, set()).add(i)
    return all(found == set(range(n)) for n, found in counts.items())


def read_run_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The run's metadata as its first file stores it (``RUN.parquet``, else a part or a shard's), no rows read.

    The run-level facts (``config``, ``provenance``, method, engine, model) are the same in every
    file of a run; the sessions and wall times are per file (:func:`read_run` sums them).

    Raises:
        FileNotFoundError: the run has no results.
    """
    if not run_files(path):
        raise FileNotFoundError(f"no results at {path} (nor {_parts_dir(Path(path))}, nor shards)")
    meta = _reread(lambda: _read_meta(pq.read_schema(run_files(path)[0])))
    return {k: v for k, v in meta.items() if k != "shard"}


def read_run(path: str | os.PathLike[str]) -> tuple[pa.Table, dict[str, Any]]:
    """A run: the union of its members as one table (first row per problem) and its metadata.

    Includes the unmerged parts of an unfinished run (or shard). ``meta["finished"]``: every
    member is finalized and, if shards wrote it, every shard of their count did; ``meta["shards"]``
    names the shards read (absent without shards); ``wall_seconds`` sums the sessions (driver-seconds:
    shards that ran at once count each).

    Raises:
        FileNotFoundError: the run has no results.
    """
    run = Path(path)
    members = run_members(run)
    if not members:
        raise FileNotFoundError(f"no results at {path} (nor {_parts_dir(run)}, nor shards {run.stem}.shard-*)")
    tables, meta, sessions = [], {}, {}
    for member in members:
        for f, t in _read_member(member):
            m = _read_meta(t.schema)
            if f == member and (not meta or member == run):
                meta = {k: v for k, v in m.items() if k != "shard"}
            _merge_sessions(sessions, m, final=f == member)
            tables.append(conform_results(t).replace_schema_metadata(None))
    table = _first_per_problem(pa.concat_tables(tables)) if tables else RESULT_SCHEMA.empty_table()
    meta = {**meta, "sessions": sessions, "wall_seconds": sum(sessions.values()), "finished": _finished(members, run)}
    shards = [m.name for m in members if m != run]
    if shards:
        meta["shards"] = shards
    return table, meta
