"""Results store: streaming, kill safety, resume without duplicates, readable by pandas/duckdb."""

from __future__ import annotations

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.pipeline.rows import RESULT_SCHEMA, ResultRow
from symbolkg.jobs.pipeline.store import ResultStore, read_run


def row(pid: str, correct: bool = True) -> ResultRow:
    return ResultRow(problem_id=pid, dataset="d", method="recorded", language="logiclm-lp", program="p",
                     status="proved", executed=True, answer="True", predicted="A", gold="A" if correct else "B",
                     correct=correct, error_kind=None, error_message=None, error_line=None, proof=None,
                     backend="forward-chainer", solve_seconds=0.01, latency_seconds=0.02, worker="w/1", attempts=1,
                     finished_at=0.0)


def test_flushes_parts_atomically_and_finalizes(tmp_path):
    out = tmp_path / "run.parquet"
    store = ResultStore(out, flush_rows=3)
    for i in range(7):
        store.append(row(f"p{i}"))
    # two flushes of 3 happened; one row still buffered (a kill now would lose only it)
    parts = sorted(store.parts_dir.glob("part-*.parquet"))
    assert len(parts) == 2
    assert not list(store.parts_dir.glob("*.tmp"))
    assert store.done_ids() >= {f"p{i}" for i in range(6)}
    table = store.finalize()
    assert table.num_rows == 7
    assert not store.parts_dir.exists()
    assert pq.read_schema(out).remove_metadata() == RESULT_SCHEMA


def test_killed_session_resumes_without_duplicates(tmp_path):
    out = tmp_path / "run.parquet"
    first = ResultStore(out, flush_rows=2)
    for i in range(5):
        first.append(row(f"p{i}"))
    # simulate a kill: no finalize, buffered p4 is lost
    second = ResultStore(out, flush_rows=2)
    done = second.done_ids()
    assert done == {"p0", "p1", "p2", "p3"}
    for i in range(10):
        if f"p{i}" not in done:
            second.append(row(f"p{i}"))
    table = second.finalize()
    ids = table.column("problem_id").to_pylist()
    assert sorted(ids) == sorted(f"p{i}" for i in range(10))
    _, meta = read_run(out)
    assert meta["finished"] and len(meta["sessions"]) == 2


def test_duplicate_in_one_session_raises(tmp_path):
    store = ResultStore(tmp_path / "r.parquet")
    store.append(row("a"))
    with pytest.raises(ValueError, match="duplicate"):
        store.append(row("a"))


def test_merge_keeps_first_row_when_a_crash_left_both_final_and_parts(tmp_path):
    out = tmp_path / "run.parquet"
    s1 = ResultStore(out, flush_rows=1)
    s1.append(row("a", correct=True))
    s1.finalize()
    # a part file left behind with the same problem (kill between rename and cleanup)
    s2 = ResultStore(out, flush_rows=1)
    s2._seen.clear()
    s2.append(row("a", correct=False))
    table = ResultStore(out).finalize()
    assert table.num_rows == 1 and table.column("correct").to_pylist() == [True]


def test_readable_by_pandas_and_duckdb(tmp_path):
    out = tmp_path / "run.parquet"
    store = ResultStore(out)
    store.extend(row(f"p{i}", correct=i % 2 == 0) for i in range(4))
    store.finalize()
    assert pd.read_parquet(out)["correct"].sum() == 2
    assert duckdb.sql(f"select count(*) from '{out}' where correct").fetchall() == [(2,)]


def test_rejects_non_parquet_path(tmp_path):
    with pytest.raises(ValueError, match="parquet"):
        ResultStore(tmp_path / "out.csv")


def test_a_run_written_before_the_symbolkg_columns_reads_and_resumes(tmp_path):
    out = tmp_path / "old.parquet"
    store = ResultStore(out)
    store.append(row("p0"))
    table = store.finalize()
    old = table.drop(["route", "trace", "stage_seconds", "certificate"])  # the schema of earlier versions
    pq.write_table(old.replace_schema_metadata(table.schema.metadata), out)
    read, _ = read_run(out)
    assert read.schema == RESULT_SCHEMA and read.to_pylist()[0]["trace"] == "{}" and read.column("route")[0].as_py() is None
    resumed = ResultStore(out)
    assert resumed.done_ids() == {"p0"}
    resumed.append(row("p1"))
    assert resumed.finalize().num_rows == 2
