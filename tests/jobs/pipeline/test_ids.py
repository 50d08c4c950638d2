"""Compact id sets and shards: no false "no", exact where it says so, the same split everywhere."""

from __future__ import annotations

import subprocess
import sys

import pytest

from symbolkg.jobs.core import ids as ids_module
from symbolkg.jobs.core.ids import DoneIds, IdHashes, Shard, id_hash
from symbolkg.jobs.core.rows import ResultRow
from symbolkg.jobs.pipeline.store import ResultStore


def test_id_hashes_never_forget_and_stay_near_8_bytes_an_id():
    s = IdHashes()
    n = 50_000  # a dozen sealed runs merged as a binary counter
    assert not any(s.add(f"sim-{i:06d}") for i in range(n))
    assert len(s) == n and all(f"sim-{i:06d}" in s for i in range(0, n, 7))
    assert all(s.add(f"sim-{i:06d}") for i in range(0, n, 97))  # a second add is a (maybe-)duplicate
    misses = sum(f"other-{i}" in s for i in range(20_000))
    assert misses == 0  # a hit would need a 64-bit collision
    assert s.nbytes <= 8 * n and len(s._runs) <= 4  # 50,000 = 12 x 4096 + tail: runs 8 + 4 x 4096


def test_done_ids_are_exact_even_when_hashes_collide(monkeypatch):
    monkeypatch.setattr(ids_module, "id_hash", lambda pid: len(pid))  # every id of one length collides
    done = DoneIds.build(["ab", "cd", "xyz"])
    assert "ab" in done and "cd" in done and "xyz" in done
    assert "ef" not in done and "q" not in done and 7 not in done
    both = DoneIds.concat([done, DoneIds.build(["ef"]), DoneIds.build([])])
    assert "ef" in both and "ab" in both and "gh" not in both and len(both) == 4


def test_a_store_tells_a_hash_collision_from_a_duplicate(monkeypatch, tmp_path):
    monkeypatch.setattr(ids_module, "id_hash", lambda pid: 7)  # every id collides
    store = ResultStore(tmp_path / "r.parquet", flush_rows=2)
    rows = [
        ResultRow(
            problem_id=f"p{i}",
            dataset="d",
            method="m",
            language=None,
            program=None,
            status="proved",
            executed=True,
            answer="A",
            predicted="A",
            gold="A",
            correct=True,
            error_kind=None,
            error_message=None,
            error_line=None,
            proof=None,
            backend="b",
            solve_seconds=0.0,
            latency_seconds=0.0,
            worker="w",
            attempts=1,
            finished_at=0.0,
        )
        for i in range(5)
    ]
    store.extend(rows)  # distinct ids: no error, though each hash is "there"
    assert store.recorded("p0") and store.recorded("p4") and not store.recorded("p5")
    with pytest.raises(ValueError, match="duplicate"):
        store.append(rows[1])


def test_shards_split_every_id_once_the_same_way_in_every_process():
    shards = [Shard(i, 4) for i in range(4)]
    ids = [f"FOLIO_dev_{i}" for i in range(2000)]
    owners = [[s.index for s in shards if s.takes(pid)] for pid in ids]
    assert all(len(o) == 1 for o in owners)
    sizes = [sum(o == [i] for o in owners) for i in range(4)]
    assert min(sizes) > 400  # ~500 each
    code = "from symbolkg.jobs.core.ids import id_hash; print(id_hash('FOLIO_dev_7'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(other.stdout) == id_hash("FOLIO_dev_7")  # not Python's salted hash()


@pytest.mark.parametrize(
    "text, message",
    [
        ("4/4", "0 <= i < n"),
        ("1/0", "0 <= i < n"),
        ("1", "looks like 0/4"),
        ("a/b", "looks like 0/4"),
        ("-1/4", "looks like 0/4"),
    ],
)
def test_bad_shards_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        Shard.parse(text)


def test_shard_parse_and_name():
    assert Shard.parse(" 2 / 8 ") == Shard(2, 8) and Shard(2, 8).name == "shard-2-of-8"
    assert Shard(0, 1).takes("anything")
