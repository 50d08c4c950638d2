"""Input as a stream (jobs/datasets/stream.py): read once and lazily, limit, shards, skip-bad, repeated ids.

Each test pins down one thing a user of a big input would notice: reading stops at ``--limit``
(a bad line past it is never met), a bad record in the middle is listed with its file, line and
field as the stream reaches it, a shard yields exactly the problems the job's shard takes and
passes over the other shards' lines unparsed, a repeated id is caught however far apart the
copies are (and two ids sharing a hash are not), and memory does not follow the file.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.core.ids import Shard
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.core.tables import PROBLEM_SCHEMA
from symbolkg.jobs.datasets import stream as stream_module
from symbolkg.jobs.datasets.files import JsonLines, peek_id
from symbolkg.jobs.datasets.records import InputError, Where
from symbolkg.jobs.datasets.registry import load_problems, open_dataset, open_problems
from symbolkg.jobs.datasets.stream import ProblemStream, ReadOptions, Sink
from symbolkg.jobs.datasets.user import load_generic, open_generic, open_records
from tests.conftest import DATA

needs_data = pytest.mark.skipif(not (DATA / "logiclm").is_dir(), reason=f"shared data not found at {DATA}")


def record(i: int, **overrides: Any) -> dict[str, Any]:
    return {
        "id": f"p{i:06d}",
        "context": "Tom is a cat.",
        "question": f"Is cat {i} an animal?",
        "options": ["A) True", "B) False"],
        "answer": "A",
        **overrides,
    }


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def jsonl(path: Path, n: int, bad: dict[int, str] | None = None) -> Path:
    """``n`` good records, one a line, but line ``k`` is ``bad[k]`` (raw text) for each ``k`` of ``bad``."""
    bad = bad or {}
    return write_lines(path, [bad.get(k, json.dumps(record(k))) for k in range(1, n + 1)])


class ExplodingSource:
    """A record source whose records past ``good`` raise: a reader that looks past the limit fails."""

    def __init__(self, good: int) -> None:
        self.path = Path("generated.jsonl")
        self.good = good
        self.read = 0

    def records(self, passes_over: Callable[[str], bool] | None = None) -> Iterator[tuple[Where, Any]]:
        for i in range(1, 10**9):
            if i > self.good:
                raise AssertionError(f"record {i} was read past the limit")
            self.read += 1
            yield Where(str(self.path), i, "line"), record(i)

    def reread(self, position: int) -> tuple[Where, Any]:
        return Where(str(self.path), position, "line"), record(position)


# ----------------------------------------------------------------------------- limit


def test_reading_stops_at_the_limit_and_never_looks_past_it() -> None:
    source = ExplodingSource(good=25)
    stream = open_records(source, dataset="custom", options=ReadOptions(limit=25))
    assert [p.id for p in stream] == [f"p{i:06d}" for i in range(1, 26)]
    assert source.read == 25
    with pytest.raises(AssertionError, match="record 26 was read past the limit"):
        list(open_records(ExplodingSource(good=25), dataset="custom", options=ReadOptions(limit=26)))


def test_a_malformed_line_past_the_limit_is_never_met(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "big.jsonl", 10_000, bad={10_000: '{"id": "p010000", "question": '})
    assert [p.id for p in load_generic(path, limit=10).problems] == [f"p{i:06d}" for i in range(1, 11)]
    # Without a limit the same line stops the stream, but only when it is reached: problems come first.
    stream = open_generic(path)
    problems = iter(stream)
    assert next(problems).id == "p000001"
    with pytest.raises(InputError) as info:
        for _ in problems:
            pass
    assert (info.value.path, info.value.line) == (str(path), 10_000) and "invalid JSON" in str(info.value)


def test_the_solve_command_with_limit_never_reads_the_bad_line(tmp_path: Path, capsys) -> None:
    from symbolkg.jobs.cli import main

    lines = lp_lines(9_999) + ["{not json"]
    path = write_lines(tmp_path / "big.jsonl", lines)
    out = tmp_path / "run.parquet"
    assert (
        main(
            [
                "solve",
                "--programs",
                str(path),
                "--limit",
                "10",
                "--out",
                str(out),
                "--executor",
                "local",
                "--workers",
                "1",
                "--no-progress",
            ]
        )
        == 0
    )
    assert pq.read_table(out).num_rows == 10
    assert "bad input" not in capsys.readouterr().err


# ----------------------------------------------------------------------------- skip-bad


def test_skip_bad_lists_bad_lines_from_the_middle_as_the_stream_reaches_them(tmp_path: Path) -> None:
    bad = {5: "{not json", 500: json.dumps(record(500, question=7)), 1_500: json.dumps(record(3))}
    path = jsonl(tmp_path / "p.jsonl", 2_000, bad=bad)
    stream = open_generic(path, options=ReadOptions(skip_bad=True))
    problems = iter(stream)
    for _ in range(600):
        next(problems)
    assert [(e.line, e.field) for e in stream.errors] == [(5, None), (500, "question")]
    rest = list(problems)
    assert 600 + len(rest) == 2_000 - 3
    assert [(e.path, e.line, e.field) for e in stream.errors] == [
        (str(path), 5, None),
        (str(path), 500, "question"),
        (str(path), 1_500, "id"),
    ]
    assert str(stream.errors[2]).endswith("field 'id': duplicate id 'p000003' (first at line 3)")


def test_the_solve_command_lists_skipped_rows_after_the_job(tmp_path: Path, capsys) -> None:
    from symbolkg.jobs.cli import main

    lines = lp_lines(30)
    lines[11] = json.dumps({**json.loads(lines[11]), "question": 12})
    lines[21] = "{not json"
    path = write_lines(tmp_path / "p.jsonl", lines)
    out = tmp_path / "run.parquet"
    assert (
        main(
            [
                "solve",
                "--programs",
                str(path),
                "--skip-bad",
                "--out",
                str(out),
                "--executor",
                "local",
                "--workers",
                "1",
                "--no-progress",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err.splitlines()
    skipped = [line for line in err if line.startswith("skipped bad row: ")]
    assert skipped == [
        f"skipped bad row: {path}:12 (id 'q12'): field 'question': expected a string, got int",
        f"skipped bad row: {path}:22: invalid JSON: Expecting property name enclosed in double quotes at column 2",
    ]
    assert pq.read_table(out).num_rows == 28


def lp_lines(n: int) -> list[str]:
    """``n`` JSON lines of the fixture's LP problem (with its program), ids q1..qn."""
    good = json.loads(
        (Path(__file__).resolve().parents[2] / "fixtures" / "custom_problems.jsonl").read_text().splitlines()[0]
    )
    return [json.dumps({**good, "id": f"q{i}"}) for i in range(1, n + 1)]


def test_a_bad_line_met_by_the_job_stops_it_keeping_what_ran_and_a_rerun_resumes(tmp_path: Path, capsys) -> None:
    from symbolkg.jobs.cli import main

    lines = lp_lines(30)
    lines[19] = json.dumps({**json.loads(lines[19]), "question": 20})
    path = write_lines(tmp_path / "p.jsonl", lines)
    out = tmp_path / "run.parquet"
    args = [
        "solve",
        "--programs",
        str(path),
        "--out",
        str(out),
        "--executor",
        "local",
        "--workers",
        "1",
        "--no-progress",
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"symbolkg solve: bad input: {path}:20 (id 'q20'): field 'question'" in err
    assert "rows finished before it are saved" in err and "--skip-bad" in err
    assert main([*args, "--skip-bad"]) == 0
    err = capsys.readouterr().err
    done = int(err.split(" already done")[0].rsplit(" ", 1)[-1])
    assert 0 < done < 29 and f"{29 - done} solved this session" in err
    assert pq.read_table(out).num_rows == 29


def test_the_recorded_path_asks_a_dataset_for_programs_up_to_its_first(tmp_path: Path, capsys) -> None:
    from symbolkg.jobs.cli import main

    data = tmp_path / "data"
    (data / "custom").mkdir(parents=True)
    bare = [json.dumps({k: v for k, v in json.loads(line).items() if k != "program"}) for line in lp_lines(5)]
    write_lines(data / "custom" / "bare.jsonl", bare)
    write_lines(data / "custom" / "later.jsonl", bare[:2] + lp_lines(5)[2:])
    common = ["--data-dir", str(data), "--executor", "local", "--workers", "1", "--no-progress"]
    assert main(["solve", "--dataset", "custom/bare", "--out", str(tmp_path / "a.parquet"), *common]) == 2
    assert "dataset custom/bare has no programs" in capsys.readouterr().err
    # the first 2 have none
    assert (
        main(["solve", "--dataset", "custom/later", "--limit", "2", "--out", str(tmp_path / "b.parquet"), *common]) == 2
    )
    assert main(["solve", "--dataset", "custom/later", "--out", str(tmp_path / "c.parquet"), *common]) == 0
    rows = {r["problem_id"]: r for r in pq.read_table(tmp_path / "c.parquet").to_pylist()}
    assert [rows[f"q{i}"]["error_kind"] == "no_program" for i in range(1, 6)] == [True, True, False, False, False]


# ----------------------------------------------------------------------------- shards


def test_a_shard_yields_exactly_the_jobs_split_and_the_union_is_everything(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "p.jsonl", 3_000)
    every = [p.id for p in load_generic(path).problems]
    parts = [[p.id for p in open_generic(path, options=ReadOptions(shard=Shard(i, 3)))] for i in range(3)]
    for i, part in enumerate(parts):
        assert part == [pid for pid in every if Shard(i, 3).takes(pid)]  # file order, the job's assignment
    assert sorted(pid for part in parts for pid in part) == sorted(every)


def test_another_shards_lines_are_passed_over_unparsed_and_reported_by_their_own(tmp_path: Path) -> None:
    ids = [f"p{i:06d}" for i in range(1, 41)]
    theirs = next(pid for pid in ids if Shard(1, 2).takes(pid))
    lines = [json.dumps(record(i)) for i in range(1, 41)]
    k = ids.index(theirs)
    lines[k] = lines[k][:-1] + ', "question": '  # bad JSON after a readable id: shard 1's line
    lines.append('{"question": "no id here"')  # no readable id: every shard's
    path = write_lines(tmp_path / "p.jsonl", lines)
    mine = open_generic(path, options=ReadOptions(skip_bad=True, shard=Shard(0, 2)))
    assert [p.id for p in mine] == [pid for pid in ids if Shard(0, 2).takes(pid)]
    assert [e.line for e in mine.errors] == [41]
    other = open_generic(path, options=ReadOptions(skip_bad=True, shard=Shard(1, 2)))
    assert [p.id for p in other] == [pid for pid in ids if Shard(1, 2).takes(pid) and pid != theirs]
    assert [e.line for e in other.errors] == [k + 1, 41]


def test_the_limit_counts_the_files_problems_before_the_split(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "p.jsonl", 200)
    first = [p.id for p in load_generic(path, limit=30).problems]
    for i in range(3):
        shard = Shard(i, 3)
        assert [p.id for p in open_generic(path, options=ReadOptions(limit=30, shard=shard))] == [
            pid for pid in first if shard.takes(pid)
        ]


def test_a_pararule_line_is_passed_over_when_none_of_its_questions_is_the_shards(tmp_path: Path) -> None:
    root = tmp_path / "data"
    path = root / "pararule_plus" / "PARARULE_Plus_Depth2_mine.jsonl"
    path.parent.mkdir(parents=True)
    q = {"text": "X is big.", "label": "true", "meta": {"QDep": "2", "QCat": "c"}}
    lines = [
        json.dumps({"id": f"C-{c}", "context": "X is big.", "questions": [{**q, "id": f"C-{c}-{j}"} for j in range(3)]})
        for c in range(60)
    ]
    broken = json.loads(lines[7])
    broken["context"] = 5  # a bad record: converting it fails
    lines[7] = json.dumps(broken)
    write_lines(path, lines)
    owners = {Shard(i, 4) for i in range(4) for j in range(3) if Shard(i, 4).takes(f"C-7-{j}")}
    for i in range(4):
        shard = Shard(i, 4)
        got = open_dataset("pararule_plus/depth2", root, options=ReadOptions(skip_bad=True, shard=shard))
        want = [f"C-{c}-{j}" for c in range(60) if c != 7 for j in range(3) if shard.takes(f"C-{c}-{j}")]
        assert [p.id for p in got] == want
        assert [e.line for e in got.errors] == ([8] if shard in owners else [])


@needs_data
def test_a_logiclm_program_file_splits_as_the_job_would_with_or_without_a_limit() -> None:
    path = str(DATA / "logiclm" / "programs" / "LogicalDeduction_dev_gpt-4.json")
    whole = load_problems(path, DATA).problems
    for limit in (None, 50):
        first = whole if limit is None else whole[:limit]
        parts = []
        for i in range(3):
            stream = open_problems(path, DATA, options=ReadOptions(limit=limit, shard=Shard(i, 3)))
            parts.append(list(stream))
            assert parts[-1] == [p for p in first if Shard(i, 3).takes(p.id)]
        assert sorted(p.id for part in parts for p in part) == sorted(p.id for p in first)


# ----------------------------------------------------------------------------- repeated ids


def test_a_repeat_far_apart_is_found_and_named_by_its_first_line(tmp_path: Path) -> None:
    n = 3 * stream_module.FirstPositions.TAIL  # past the dict: the sorted runs hold the first copy
    path = jsonl(tmp_path / "p.jsonl", n, bad={n - 1: json.dumps(record(3, context="again"))})
    with pytest.raises(InputError) as info:
        load_generic(path)
    assert (info.value.line, info.value.field) == (n - 1, "id")
    assert "duplicate id 'p000003' (first at line 3)" in str(info.value)


def test_two_ids_that_share_a_hash_are_both_kept_and_a_real_repeat_still_caught(tmp_path, monkeypatch) -> None:
    real = stream_module.id_hash
    monkeypatch.setattr(stream_module, "id_hash", lambda pid: 7 if pid in ("p000002", "p000009") else real(pid))
    path = jsonl(tmp_path / "p.jsonl", 10_000, bad={9_000: json.dumps(record(9, context="copy"))})
    result = load_generic(path, skip_bad=True)
    assert len(result.problems) == 9_999 and {"p000002", "p000009"} <= {p.id for p in result.problems}
    assert [(e.line, e.field) for e in result.errors] == [(9_000, "id")]
    assert "first at line 9)" in str(result.errors[0])


def test_a_repeat_in_a_parquet_file_is_reread_from_its_row_group(tmp_path: Path) -> None:
    problems = [Problem(f"p{i}", "custom", "c", "q?", ("A) True", "B) False"), "A") for i in range(3_000)]
    problems.append(Problem("p1234", "custom", "other", "q?", ("A) True", "B) False"), "B"))
    path = tmp_path / "p.parquet"
    pq.write_table(
        pa.Table.from_pylist([p.to_row() for p in problems], schema=PROBLEM_SCHEMA), path, row_group_size=500
    )
    result = load_generic(path, skip_bad=True)
    assert len(result.problems) == 3_000
    assert [str(e) for e in result.errors] == [
        f"{path}: row 3001 (id 'p1234'): field 'id': duplicate id 'p1234' (first at row 1235)"
    ]


def test_a_repeat_inside_one_pararule_line_is_found(tmp_path: Path) -> None:
    root = tmp_path / "data"
    path = root / "pararule_plus" / "PARARULE_Plus_Depth3_x.jsonl"
    path.parent.mkdir(parents=True)
    q = {"id": "Q1", "text": "X is big.", "label": "true", "meta": {"QDep": "3", "QCat": "c"}}
    write_lines(path, [json.dumps({"id": "C1", "context": "X.", "questions": [q, {**q, "label": "false"}]})])
    result = open_dataset("pararule_plus/depth3", root, options=ReadOptions(skip_bad=True)).collect()
    assert [p.answer for p in result.problems] == ["A"]
    assert [str(e) for e in result.errors] == [f"{path}:1 (id 'Q1'): field 'id': duplicate id 'Q1' (first at line 1)"]


# ----------------------------------------------------------------------------- pieces


@pytest.mark.parametrize(
    "raw",
    [
        b'{"id": "p1", "q": 1}',
        b'  {  "id"  :  "p\\"x"  }',
        b'{"id": "a\\u00e9\\ud83d\\ude00"}',
        b'{"id": "p1", "meta": {"id": "inner"}}',
        b'{"id": "p1", "id": "p2"}',
        b'{"id": "p1", "\\u0069d": "p2"}',
        b'{"id": "p1", "text": "id"}',
        b'{"q": 1, "id": "p1"}',
        b'{"id": 7}',
        b'{"id": "p1"',
        b'["id", "x"]',
        b'{"id": "bad\\x"}',
        b'{"id": "\xff"}',
        b'{"id": ""}',
    ],
)
def test_peek_id_says_what_the_parser_would_or_nothing(raw: bytes) -> None:
    peeked = peek_id(raw)
    if peeked is not None:
        assert peeked == json.loads(raw)["id"]


def test_peek_id_reads_the_usual_lines() -> None:
    assert peek_id(json.dumps(record(1)).encode()) == "p000001"
    assert peek_id(json.dumps({"id": "é", "x": "y"}).encode()) == "é"  # ensure_ascii escapes it
    assert peek_id(b'{"id": "p1", "meta": {"id": "inner"}}') is None  # two ids: left to the parser


def test_a_jsonl_source_rereads_any_line_it_has_read(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "p.jsonl",
        ["\ufeff" + json.dumps(record(1))] + [json.dumps(record(i)) if i % 7 else "" for i in range(2, 300)],
    )
    source = JsonLines(path)
    seen = {where.line: rec for where, rec in source.records()}
    for line in (1, 2, 64, 65, 66, 128, 129, 299):
        where, rec = source.reread(line)
        assert where.line == line and rec == seen[line]


def test_a_stream_is_read_once(tmp_path: Path) -> None:
    stream = open_generic(jsonl(tmp_path / "p.jsonl", 3))
    assert len(list(stream)) == 3
    with pytest.raises(RuntimeError, match="read once"):
        iter(stream)


def test_round_robin_takes_one_of_each_in_turn() -> None:
    def of(ids: list[str]) -> ProblemStream:
        return ProblemStream((Problem(i, "d", "c", "q?") for i in ids), [Sink()])

    mixed = ProblemStream.round_robin([of(["a1", "a2", "a3"]), of(["b1"]), of(["c1", "c2"])])
    assert [p.id for p in mixed] == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_memory_does_not_follow_the_file(tmp_path: Path) -> None:
    def traced_peak_mb(n: int) -> float:
        path = jsonl(tmp_path / f"p{n}.jsonl", n)
        tracemalloc.start()
        try:
            count = sum(1 for _ in open_generic(path))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert count == n
        return peak / 2**20

    traced_peak_mb(100)  # first-use caches
    small, large = traced_peak_mb(5_000), traced_peak_mb(50_000)
    # Held per problem: 16 bytes (its id's hash and line) = 0.7 MB for the 45,000 more; a list of the
    # problems would be ~60 MB more.
    assert large - small < 3.0, f"peak {small:.2f} MB at 5,000 lines, {large:.2f} MB at 50,000"


def test_a_parquet_file_is_read_a_batch_at_a_time_and_only_up_to_the_limit(tmp_path: Path, monkeypatch) -> None:
    from symbolkg.jobs.datasets import user

    rows = [Problem(f"p{i}", "custom", "c", "q?", ("A) True", "B) False"), "A").to_row() for i in range(100)]
    rows[57]["question"] = ""  # a bad row in the 15th batch of 4
    path = tmp_path / "p.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=PROBLEM_SCHEMA), path, row_group_size=25)
    monkeypatch.setattr(user.ParquetRows, "BATCH_ROWS", 4)
    pulled = []
    real = pq.ParquetFile.iter_batches

    def counted(self, *args, **kwargs):
        for batch in real(self, *args, **kwargs):
            pulled.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", counted)
    assert [p.id for p in load_generic(path, limit=6).problems] == [f"p{i}" for i in range(6)]
    assert pulled == [4, 4]  # never the bad row's batch
    result = load_generic(path, skip_bad=True)
    assert len(result.problems) == 99 and [(e.unit, e.line, e.field) for e in result.errors] == [
        ("row", 58, "question")
    ]
