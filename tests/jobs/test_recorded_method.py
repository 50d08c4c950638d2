"""Acceptance: the logiclm method with the recorded engine answers exactly what solving the same programs does.

The method path is real (prompts, extraction, solver pool, refine logic, the text-resolved
corrections, interpretation); only the engine is recorded: it answers each formulation request
with Logic-LM's GPT-4 program for that problem and declines repair requests. The direct path is
``symbolkg solve --programs FILE`` with its default, corrections on. A correction that the text
resolves is applied on both paths the same way (:func:`symbolkg.jobs.methods.refine.formalize_solve_refine`
applies it to its kept round when the model's repairs do not fix the finding), so the two agree per
problem: answer, correctness, the program that ran and the checks' trace.

Both runs use the same per-program time limit, ``TIMEOUT_S``, which no program's answer depends
on, so the two runs agree on a loaded machine as on an idle one. Measured idle, one program at a
time: every program of the five files ends within 0.31 s except FOLIO_dev_119 (1.1-1.8 s; 1.7 s
inside a two-worker job), 11x or more under the limit. (FOLIO_dev_120, on which Prover9 never ends,
is now decided in milliseconds by the finite-model search, so no program times out.) The test checks
that rule on both runs: a timeout means a program came near the limit. (The CLI's
default limit, 10 s, is only 5.4x FOLIO_dev_119's cost: the likely cause of a failure seen under load.)

The whole-file comparison is slow (marked ``slow``); ``benchmarks/logiclm_paths.py`` runs it and
writes the per-set numbers. The slice test runs in seconds on the programs that a correction changes.
"""

from __future__ import annotations

import asyncio
import json

import pyarrow.parquet as pq
import pytest

from symbolkg.actors.engines.recorded import RecordedEngine
from symbolkg.jobs.cli import main
from symbolkg.jobs.datasets.logiclm import load_logiclm_programs
from symbolkg.jobs.methods import MethodConfig, run_problem
from symbolkg.jobs.pipeline.programs_job import run_solve
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers import checks
from symbolkg.solvers.outcomes import Limits
from symbolkg.solvers.runtime.local_pool import LocalSolverPool
from tests.conftest import data_or_skip

TIMEOUT_S = 20  # per program, in both runs; see the module docstring
# programs that time out in every run (FOLIO_dev_120 was one until the finite-model search decided it)
UNBOUNDED: set[str] = set()

FILES = {
    "logiclm/prontoqa": "ProntoQA",
    "logiclm/proofwriter": "ProofWriter",
    "logiclm/folio": "FOLIO",
    "logiclm/logicaldeduction": "LogicalDeduction",
    "logiclm/ar-lsat": "AR-LSAT",
}
COMPARED = ("correct", "executed", "predicted", "program")


@pytest.fixture(scope="module")
def pool():
    with LocalSolverPool(2) as p:
        yield p


@pytest.mark.parametrize("dataset", list(FILES))
def test_a_slice_where_corrections_fire_answers_alike_on_both_paths(dataset, tmp_path, pool):
    """The first programs of each file that a text-resolved correction changes, and two it does not."""
    path = data_or_skip("logiclm", "programs", f"{FILES[dataset]}_dev_gpt-4.json")
    problems = [p for p in load_logiclm_programs(path, data_dir=data_or_skip()).problems if p.program is not None]
    fired = [p for p in problems if checks.correct_program(p.program.language, p.program.text, p).corrected]
    calm = [p for p in problems if p not in fired and p.id not in UNBOUNDED]
    chosen = fired[:4] + calm[:2]
    run_solve(
        chosen, ResultStore(tmp_path / "direct.parquet"), pool, limits=Limits(timeout_s=TIMEOUT_S), progress=False
    )
    direct = {r["problem_id"]: r for r in read_run(tmp_path / "direct.parquet")[0].to_pylist()}
    engine = RecordedEngine.from_logiclm_file(path)
    cfg = MethodConfig("logiclm", limits=Limits(timeout_s=TIMEOUT_S))
    for problem in chosen:
        row = asyncio.run(run_problem(problem.with_program(None), cfg, engine, pool))
        assert {k: getattr(row, k) for k in COMPARED} == {k: direct[problem.id][k] for k in COMPARED}, problem.id
        assert json.loads(row.trace) == json.loads(direct[problem.id]["trace"]), problem.id
    assert len(fired) >= (0 if dataset in ("logiclm/proofwriter", "logiclm/folio") else 4)  # the slice has corrections


@pytest.mark.slow
@pytest.mark.parametrize("dataset", list(FILES))
def test_recorded_engine_reproduces_the_solver_slice(dataset, tmp_path):
    programs = data_or_skip("logiclm", "programs", f"{FILES[dataset]}_dev_gpt-4.json")
    data = str(data_or_skip())
    common = [
        "--executor",
        "local",
        "--workers",
        "2",
        "--timeout-s",
        str(TIMEOUT_S),
        "--no-progress",
        "--data-dir",
        data,
    ]
    slice_out, method_out = tmp_path / "slice.parquet", tmp_path / "method.parquet"
    assert main(["solve", "--programs", str(programs), "--out", str(slice_out), *common]) == 0
    assert (
        main(
            [
                "solve",
                "--method",
                "logiclm",
                "--engine",
                "recorded",
                "--recorded",
                str(programs),
                "--dataset",
                dataset,
                "--out",
                str(method_out),
                *common,
            ]
        )
        == 0
    )
    a = {r["problem_id"]: r for r in pq.read_table(slice_out).to_pylist()}
    b = {r["problem_id"]: r for r in pq.read_table(method_out).to_pylist()}
    assert a.keys() == b.keys()
    for run in (a, b):
        timed_out = {pid for pid, r in run.items() if r["status"] == "timeout"}
        assert timed_out == UNBOUNDED & run.keys(), (
            f"programs at the {TIMEOUT_S} s limit: {sorted(timed_out - UNBOUNDED)}"
        )
    for pid in a:
        if a[pid]["error_kind"] == "no_program":  # no recorded program: the method has nothing to run either
            assert not b[pid]["executed"] and b[pid]["predicted"] is None
            continue
        assert {k: a[pid][k] for k in COMPARED} == {k: b[pid][k] for k in COMPARED}, pid
    assert sum(r["correct"] for r in a.values()) == sum(r["correct"] for r in b.values())
    assert all(r["method"] == "logiclm" and r["model"] for r in b.values() if r["rounds"])
