"""Results store: streaming, kill safety, resume without duplicates, readable by pandas/duckdb."""

from __future__ import annotations

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.core.rows import ResultRow
from symbolkg.jobs.core.tables import RESULT_SCHEMA
from symbolkg.jobs.pipeline.store import ResultStore, read_run


def row(pid: str, correct: bool = True) -> ResultRow:
    return ResultRow(
        problem_id=pid,
        dataset="d",
        method="recorded",
        language="logiclm-lp",
        program="p",
        status="proved",
        executed=True,
        answer="True",
        predicted="A",
        gold="A" if correct else "B",
        correct=correct,
        error_kind=None,
        error_message=None,
        error_line=None,
        proof=None,
        backend="forward-chainer",
        solve_seconds=0.01,
        latency_seconds=0.02,
        worker="w/1",
        attempts=1,
        finished_at=0.0,
    )


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
    assert store.finalize() == 7
    assert pq.read_table(out).num_rows == 7
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
    second.finalize()
    ids = pq.read_table(out).column("problem_id").to_pylist()
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
    s2.append(row("a", correct=False))
    s2.append(row("b"))
    assert ResultStore(out).finalize() == 2
    table = pq.read_table(out)
    assert table.column("problem_id").to_pylist() == ["a", "b"] and table.column("correct").to_pylist() == [True, True]


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
    store.finalize()
    table = pq.read_table(out)
    old = table.drop(["route", "trace", "stage_seconds", "certificate"])  # the schema of earlier versions
    pq.write_table(old.replace_schema_metadata(table.schema.metadata), out)
    read, _ = read_run(out)
    assert (
        read.schema == RESULT_SCHEMA
        and read.to_pylist()[0]["trace"] == "{}"
        and read.column("route")[0].as_py() is None
    )
    resumed = ResultStore(out)
    assert resumed.done_ids() == {"p0"}
    resumed.append(row("p1"))
    assert resumed.finalize() == 2


def test_a_duplicate_is_found_after_its_row_was_flushed(tmp_path):
    store = ResultStore(tmp_path / "r.parquet", flush_rows=2)
    store.extend(row(f"p{i}") for i in range(5))  # p0..p3 in two part files, p4 buffered
    assert store.recorded("p1") and store.recorded("p4") and not store.recorded("p9")
    with pytest.raises(ValueError, match="duplicate result for problem 'p1'"):
        store.append(row("p1"))


def test_finalize_streams_many_parts_into_row_groups(tmp_path, monkeypatch):
    from symbolkg.jobs.pipeline import store as store_module

    monkeypatch.setattr(store_module, "_MERGE_ROWS", 10)
    out = tmp_path / "run.parquet"
    store = ResultStore(out, flush_rows=3)
    store.extend(row(f"p{i:02d}") for i in range(25))
    assert store.finalize() == 25
    pf = pq.ParquetFile(out)
    assert [pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)] == [12, 12, 1]
    assert pf.read().column("problem_id").to_pylist() == [f"p{i:02d}" for i in range(25)]


def test_done_index_is_exact_and_matches_done_ids(tmp_path):
    out = tmp_path / "run.parquet"
    first = ResultStore(out, flush_rows=4)
    first.extend(row(f"p{i}") for i in range(10))
    first.flush()
    second = ResultStore(out)
    second.append(row("q"))
    index = second.done_index()
    assert {f"p{i}" for i in range(10)} | {"q"} == second.done_ids()
    assert all(pid in index for pid in second.done_ids()) and len(index) == 11
    assert "p10" not in index and "x" not in index


def test_shards_write_their_own_files_and_the_run_reads_the_union(tmp_path):
    from symbolkg.jobs.core.ids import Shard
    from symbolkg.jobs.pipeline.store import remove_run, run_exists, run_members

    out = tmp_path / "run.parquet"
    ids = [f"p{i}" for i in range(40)]
    shards = [Shard(i, 3) for i in range(3)]
    stores = [ResultStore(out, flush_rows=5, shard=s) for s in shards]
    assert [s.path.name for s in stores] == [f"run.shard-{i}-of-3.parquet" for i in range(3)]
    for store in stores:  # each shard takes its own problems (a stable split: every id in exactly one)
        store.extend(row(pid) for pid in ids if store.shard.takes(pid))
    assert sum(sum(s.shard.takes(pid) for s in stores) for pid in ids) == 40
    stores[0].finalize()
    stores[1].flush()  # shard 1 is still running (parts only); shard 2 was killed with rows buffered
    table, meta = read_run(out)
    third = [pid for pid in ids if shards[2].takes(pid)]
    flushed = third[: 5 * (len(third) // 5)]  # the rest was in shard 2's buffer
    assert sorted(table.column("problem_id").to_pylist()) == sorted(
        [pid for pid in ids if not shards[2].takes(pid)] + flushed
    )
    assert not meta["finished"] and meta["shards"] == [f"run.shard-{i}-of-3.parquet" for i in range(3)]
    # A resumed shard skips what the run holds, of its own shard only.
    assert ResultStore(out, shard=shards[1]).done_ids() == {pid for pid in ids if shards[1].takes(pid)}
    assert ResultStore(out, shard=shards[2]).done_ids() == set(flushed)
    stores[1].finalize()
    stores[2].finalize()
    table, meta = read_run(out)
    assert sorted(table.column("problem_id").to_pylist()) == sorted(ids) and meta["finished"]
    assert len(meta["sessions"]) == 3
    assert [m.name for m in run_members(out)] == [f"run.shard-{i}-of-3.parquet" for i in range(3)]
    remove_run(out, shards[0])
    assert [m.name for m in run_members(out)] == [f"run.shard-{i}-of-3.parquet" for i in (1, 2)]
    assert not read_run(out)[1]["finished"]  # shard 0 of 3 is missing
    remove_run(out)
    assert not run_exists(out)


def test_two_sessions_that_both_wrote_a_problem_merge_to_its_first_row(tmp_path):
    out = tmp_path / "run.parquet"
    first, second = ResultStore(out, flush_rows=1), ResultStore(out, flush_rows=1)  # e.g. two drivers on one shard
    first.append(row("a", correct=True))
    second.append(row("a", correct=False))
    second.append(row("b"))
    assert second.finalize() == 2
    table = pq.read_table(out)
    assert sorted(table.column("problem_id").to_pylist()) == ["a", "b"]
    assert len(read_run(out)[1]["sessions"]) == 2


def _finalized_between_listing_and_reading(tmp_path, monkeypatch, shards: int):
    """A run of ``shards`` shards, all flushed; the last finalizes right after a reader lists its parts."""
    from symbolkg.jobs.core.ids import Shard
    from symbolkg.jobs.pipeline import store as store_module

    out = tmp_path / "run.parquet"
    ids = [f"p{i}" for i in range(30)]
    stores = [ResultStore(out, flush_rows=4, shard=Shard(i, shards)) for i in range(shards)]
    for s in stores:
        s.extend(row(pid) for pid in ids if s.shard.takes(pid))
        s.flush()
    for s in stores[:-1]:
        s.finalize()
    listed, pending = store_module._member_files, [stores[-1]]

    def list_then_finalize(member):
        files = listed(member)
        if pending and member == pending[0].path:
            pending.pop().finalize()  # the other driver finishes between the listing and the read
        return files

    monkeypatch.setattr(store_module, "_member_files", list_then_finalize)
    return out, ids


def test_a_reader_sees_every_row_while_another_shard_finalizes(tmp_path, monkeypatch):
    """The race a driver's closing report met in CI: it listed shard 1's parts, shard 1's driver
    merged them into its file and deleted them, then the report read a part that was gone."""
    out, ids = _finalized_between_listing_and_reading(tmp_path, monkeypatch, shards=2)
    table, meta = read_run(out)
    assert sorted(table.column("problem_id").to_pylist()) == sorted(ids) and meta["finished"]


def test_the_run_meta_reads_while_its_only_shard_finalizes(tmp_path, monkeypatch):
    from symbolkg.jobs.pipeline.store import read_run_meta

    out, _ = _finalized_between_listing_and_reading(tmp_path, monkeypatch, shards=1)
    assert read_run_meta(out) == {k: v for k, v in read_run(out)[1].items() if k in read_run_meta(out)}


def test_a_resumed_shard_counts_its_rows_while_another_shard_finalizes(tmp_path, monkeypatch):
    from symbolkg.jobs.core.ids import Shard

    out, ids = _finalized_between_listing_and_reading(tmp_path, monkeypatch, shards=2)
    assert ResultStore(out, shard=Shard(0, 2)).done_ids() == {pid for pid in ids if Shard(0, 2).takes(pid)}
