"""Results store: streams result rows to Parquet, survives a kill, resumes without duplicates.

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

Run-level facts (wall time of each session, sessions, command) travel in the
Parquet key-value metadata under ``b"symbolkg"``; the wall time of a killed
session is kept too because every part records its session's elapsed time.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from symbolkg.jobs.pipeline.rows import RESULT_SCHEMA, ResultRow, conform_results, result_table

_META_KEY = b"symbolkg"


class ResultStore:
    """Append-only, resumable Parquet results of one run.

    Args:
        path: the final Parquet file (``--out``).
        flush_rows: flush after this many buffered rows.
        flush_seconds: ... or when the oldest buffered row is this old.
        run_info: JSON-serialisable facts stored with the run (command, workers, ...).
    """

    def __init__(self, path: str | os.PathLike[str], *, flush_rows: int = 64, flush_seconds: float = 5.0,
                 run_info: dict[str, Any] | None = None) -> None:
        if flush_rows < 1 or flush_seconds <= 0:
            raise ValueError("flush_rows must be >= 1 and flush_seconds > 0")
        self.path = Path(path)
        if self.path.suffix != ".parquet":
            raise ValueError(f"results path must end in .parquet, got {self.path}")
        self.parts_dir = self.path.with_name(self.path.name + ".parts")
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self.run_info = run_info or {}
        self.session = f"{int(time.time())}-{uuid.uuid4().hex[:8]}"
        self._t0 = time.monotonic()
        self._buffer: list[ResultRow] = []
        self._buffer_since: float | None = None
        self._seq = 0
        self._seen: set[str] = set()

    # -- reading ---------------------------------------------------------
    def _files(self) -> list[Path]:
        files = [self.path] if self.path.exists() else []
        if self.parts_dir.is_dir():
            files += sorted(self.parts_dir.glob("part-*.parquet"))
        return files

    def done_ids(self) -> set[str]:
        """Problem ids already recorded (finished file and parts of earlier sessions)."""
        done: set[str] = set()
        for f in self._files():
            done.update(pq.read_table(f, columns=["problem_id"]).column("problem_id").to_pylist())
        return done | self._seen

    # -- writing ---------------------------------------------------------
    def append(self, row: ResultRow) -> None:
        """Buffer one row; a second row for the same problem in this session is a bug and raises."""
        if row.problem_id in self._seen:
            raise ValueError(f"duplicate result for problem {row.problem_id!r}")
        self._seen.add(row.problem_id)
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
        pq.write_table(table, tmp)
        os.replace(tmp, final)
        self._seq += 1
        self._buffer = []
        self._buffer_since = None

    def finalize(self) -> pa.Table:
        """Merge everything into ``path`` (one row per problem) and remove the parts."""
        self.flush()
        tables, sessions = [], {}
        for f in self._files():
            t = pq.read_table(f)
            meta = _read_meta(t.schema)
            if f == self.path:
                sessions.update(meta.get("sessions", {}))
            elif "session" in meta:
                s = meta["session"]
                sessions[s] = max(sessions.get(s, 0.0), float(meta.get("session_elapsed_s", 0.0)))
            tables.append(conform_results(t).replace_schema_metadata(None))
        merged = pa.concat_tables(tables) if tables else RESULT_SCHEMA.empty_table()
        merged = _first_per_problem(merged)
        meta = {"sessions": sessions, "wall_seconds": sum(sessions.values()), **self.run_info}
        merged = merged.replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        pq.write_table(merged, tmp)
        os.replace(tmp, self.path)
        if self.parts_dir.is_dir():
            for p in self.parts_dir.iterdir():
                p.unlink()
            self.parts_dir.rmdir()
        return merged


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


def read_run(path: str | os.PathLike[str]) -> tuple[pa.Table, dict[str, Any]]:
    """A finished run: its table and run metadata. Includes unmerged parts of an unfinished run."""
    store = ResultStore(path)
    files = store._files()
    if not files:
        raise FileNotFoundError(f"no results at {path} (nor {store.parts_dir})")
    tables, meta, sessions = [], {}, {}
    for f in files:
        t = pq.read_table(f)
        m = _read_meta(t.schema)
        if f == store.path:
            meta = m
            sessions.update(m.get("sessions", {}))
        elif "session" in m:
            sessions[m["session"]] = max(sessions.get(m["session"], 0.0), float(m.get("session_elapsed_s", 0.0)))
        tables.append(conform_results(t).replace_schema_metadata(None))
    table = _first_per_problem(pa.concat_tables(tables))
    meta = {**meta, "sessions": sessions, "wall_seconds": sum(sessions.values()), "finished": store.path.exists() and len(files) == 1}
    return table, meta
