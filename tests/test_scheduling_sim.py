"""benchmarks/scheduling_sim.py's engine model on cases small enough to count by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "scheduling_sim", Path(__file__).resolve().parents[1] / "benchmarks" / "scheduling_sim.py"
)
sim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sim)


def request_log(tmp_path: Path, rows: list[tuple[str, int, float]]) -> Path:
    """A run's request log with ``(problem_id, completion_tokens, submitted)`` rows, none cached."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    requests = tmp_path / "run.parquet.requests"
    requests.mkdir()
    columns = {
        "problem_id": [r[0] for r in rows],
        "completion_tokens": [r[1] for r in rows],
        "submitted": [r[2] for r in rows],
        "cached": [False] * len(rows),
    }
    pq.write_table(pa.table(columns), requests / "part-0.parquet")
    return requests


def test_step_seconds_interpolates_tokens_per_second():
    seconds = sim.step_seconds([(1, 10.0), (3, 20.0)])
    assert seconds(1) == pytest.approx(0.1) and seconds(3) == pytest.approx(0.15)
    assert seconds(2) == pytest.approx(0.125) and seconds(5) == pytest.approx(0.2)  # beyond: the last slope


def test_a_chain_costs_the_job_its_rounds_in_sequence():
    def flat(b: int) -> float:  # a step costs the same at any batch size
        return 1.0

    # one problem, two rounds of 2 tokens: the job decodes them one after the other (4 steps), the
    # ceiling both at once (2 steps)
    assert sim.simulate([[2, 2]], 4, 4, "fcfs", flat, True) == pytest.approx(1.0)
    assert sim.simulate([[2, 2]], 4, 4, "fcfs", flat, False) == pytest.approx(2.0)
    # independent problems: the same either way; a batch of one serialises them
    assert sim.simulate([[3], [3]], 2, 2, "priority", flat, True) == pytest.approx(2.0)
    assert sim.simulate([[3], [3]], 1, 2, "priority", flat, True) == pytest.approx(1.0)
    # one in flight admits the second problem only when the first is done
    assert sim.simulate([[3], [3]], 2, 1, "fcfs", flat, True) == pytest.approx(1.0)


def test_longest_first_admits_the_long_chain_before_the_short_ones():
    def flat(b: int) -> float:
        return 1.0

    job = [[1], [1], [4]]
    assert sim.in_order(job, "drawn") == job
    assert sim.in_order(job, "longest-first") == [[4], [1], [1]]
    # two in flight: drawn, the short pair ends at step 1 and the long chain then runs alone (5 steps);
    # longest first, the short ones ride beside it (4 steps); 6 tokens either way
    assert sim.simulate(job, 2, 2, "fcfs", flat, True) == pytest.approx(6 / 5)
    assert sim.simulate(sim.in_order(job, "longest-first"), 2, 2, "fcfs", flat, True) == pytest.approx(6 / 4)


def test_settings_parse_and_bad_ones_say_the_form():
    assert sim.parse_settings("64:all:fcfs,32:48:priority") == [(64, None, "fcfs"), (32, 48, "priority")]
    for bad in ("64:all", "64:all:lifo", "0:all:fcfs", "x:1:fcfs"):
        with pytest.raises(SystemExit, match="--settings"):
            sim.parse_settings(bad)


def test_a_run_records_its_order_settings_and_command(tmp_path):
    import json

    requests = request_log(
        tmp_path, [("ProntoQA_1", 3, 0.0), ("ProntoQA_2", 5, 1.0), ("ProntoQA_2", 2, 2.0), ("FOLIO_1", 9, 3.0)]
    )
    out = tmp_path / "sim.json"
    argv = ["--requests", str(requests), "--sizes", "4", "--seeds", "2", "--step-rates", "1:1,2:2"]
    argv += ["--settings", "2:all:fcfs", "--order", "longest-first", "--out", str(out)]
    assert sim.main(argv) == 0
    result = json.loads(out.read_text())
    assert result["command"] == "python benchmarks/scheduling_sim.py " + " ".join(argv)
    [row] = result["results"]
    assert row["setting"] == "batch 2, all in flight, fcfs, longest first" and row["order"] == "longest-first"
    assert row["max_in_flight"] == 4 and 0 < row["ratio_min"] <= row["ratio_mean"] <= row["ratio_max"]
    assert out.with_suffix(".png").exists()


def test_depth_serves_a_repair_before_a_waiting_first_program():
    def flat(b: int) -> float:
        return 1.0

    # batch 2, three in flight: problem 0's first program (1 token) ends at step 1, and its repair (2)
    # waits beside problem 2's first program (3). fcfs serves problem 2 first: {1, 2} to step 3, then
    # {2, repair} to step 4 and the repair alone at step 5. depth serves the repair: {1, repair} to step
    # 3, then problem 2 alone for three steps, 6 in all. 9 tokens either way.
    job = [[1, 2], [3], [3]]
    assert sim.simulate(job, 2, 3, "fcfs", flat, True) == pytest.approx(9 / 5)
    assert sim.simulate(job, 2, 3, "depth", flat, True) == pytest.approx(9 / 6)
    assert sim.rank("depth", 5, 2) < sim.rank("depth", 0, 0) and sim.rank("priority", 1, 0) < sim.rank("priority", 2, 0)


def test_repair_cap_cuts_repairs_only(tmp_path):
    import json

    requests = request_log(tmp_path, [("ProntoQA_1", 900, 0.0), ("ProntoQA_1", 1024, 1.0), ("ProntoQA_1", 100, 2.0)])
    out = tmp_path / "sim.json"
    base = ["--requests", str(requests), "--sizes", "1", "--seeds", "1", "--step-rates", "1:1,2:1"]
    base += ["--settings", "1:all:fcfs", "--out", str(out)]
    sim.main([*base, "--repair-cap", "300"])
    got = json.loads(out.read_text())
    assert got["repair_cap"] == 300 and "repairs cut to 300" in got["results"][0]["setting"]
    assert sim.cut_repairs([[900, 1024, 100], [2000]], 300) == [[900, 300, 100], [2000]]
    with pytest.raises(SystemExit, match="--repair-cap"):
        sim.main([*base, "--repair-cap", "0"])
