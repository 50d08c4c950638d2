"""Issue 27: a parser's reading of a program (an AR-LSAT name bound nowhere read as "some c of its
sort") is recorded in the result row's trace, and heads its proof."""

from __future__ import annotations

import json

from symbolkg.jobs.core.rows import Problem, Program
from symbolkg.jobs.pipeline.programs_job import run_solve
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.runtime.local_pool import LocalSolverPool
from tests.solvers.smt.test_lsat_recovery import courses


def solved_row(tmp_path, constraint: str) -> dict:
    """The result row of one AR-LSAT program with ``constraint`` among its constraints, solved by the job."""
    problem = Problem(
        "p1",
        "custom",
        "",
        "Which one must be true?",
        ("A) Taj takes chem", "B) Vu takes chem"),
        "A",
        Program("logiclm-smt", courses(constraint)),
    )
    with LocalSolverPool(1) as pool:
        run_solve([problem], ResultStore(tmp_path / "run.parquet"), pool, progress=False)
    return read_run(tmp_path / "run.parquet")[0].to_pylist()[0]


def test_the_reading_reaches_the_result_rows_trace(tmp_path):
    row = solved_row(tmp_path, "And(assigned(Smith, c), assigned(Taj, c)) ::: Smith and Taj take the same course")
    assert json.loads(row["trace"])["readings"][0].startswith("line 12: c is bound nowhere")
    assert row["proof"].startswith("reading: line 12")
    assert row["predicted"] == "A" and row["correct"]


def test_rows_without_readings_have_none_in_their_trace(tmp_path):
    row = solved_row(tmp_path, "Exists([c:courses], And(assigned(Smith, c), assigned(Taj, c)))")
    assert "readings" not in json.loads(row["trace"])
    assert row["predicted"] == "A"
