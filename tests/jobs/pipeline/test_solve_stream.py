"""The solve job reads its input once and lazily: a generator, shards, a repeated id refused when it comes up."""

from __future__ import annotations

import pytest

from symbolkg.jobs.core.ids import Shard
from symbolkg.jobs.core.rows import Problem, Program
from symbolkg.jobs.pipeline.programs_job import run_solve
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.runtime.local_pool import LocalSolverPool
from tests.conftest import lp_problem


def problems(ids: list[int]):
    """Generated LP problems (answers known by construction), as a generator: nothing can take len() of it."""
    for i in ids:
        d = lp_problem(i)
        yield Problem(
            d["id"], "test", d["context"], d["question"], tuple(d["options"]), d["answer"], Program(**d["program"])
        )


@pytest.fixture(scope="module")
def pool():
    with LocalSolverPool(1) as p:
        yield p


def test_a_generator_and_two_shards_make_the_whole_run(tmp_path, pool):
    out = tmp_path / "run.parquet"
    summaries = [
        run_solve(problems(range(40)), ResultStore(out, shard=Shard(i, 2)), pool, progress=False) for i in range(2)
    ]
    assert sum(s.solved for s in summaries) == 40 and all(0 < s.total == s.solved < 40 for s in summaries)
    table, meta = read_run(out)
    assert sorted(table.column("problem_id").to_pylist()) == [f"gen-{i:05d}" for i in range(40)]
    assert all(table.column("correct").to_pylist()) and meta["finished"]
    again = run_solve(problems(range(40)), ResultStore(out, shard=Shard(0, 2)), pool, progress=False)
    assert (again.solved, again.skipped_done) == (0, summaries[0].total)


def test_a_repeated_id_is_refused_when_it_comes_up_and_what_ran_before_is_kept(tmp_path, pool):
    out = tmp_path / "run.parquet"
    no_program = Problem("bare", "test", "c", "q?", ("A) True", "B) False"), "A")
    stream = [*problems([0, 1, 2]), no_program, *problems([3, 1, 4])]
    with pytest.raises(ValueError, match="duplicate problem id 'gen-00001'"):
        run_solve(iter(stream), ResultStore(out, flush_rows=1), pool, progress=False)
    done = {r["problem_id"]: r for r in read_run(out)[0].to_pylist()}
    assert {"gen-00000", "gen-00001", "gen-00002", "bare"} <= set(done) and "gen-00004" not in done
    assert done["bare"]["error_kind"] == "no_program"
    # The rerun without the repeat resumes: only what was not recorded runs.
    again = run_solve(
        iter([*problems([0, 1, 2]), no_program, *problems([3, 4])]), ResultStore(out), pool, progress=False
    )
    assert again.skipped_done == len(done) and again.solved == 6 - len(done)
    assert len(read_run(out)[0]) == 6
