"""Acceptance: the logiclm method with the recorded engine reproduces the solver slice exactly.

The method path is real (prompts, extraction, solver pool, refine logic, interpretation);
only the engine is recorded: it answers each formulation request with Logic-LM's GPT-4
program for that problem and declines repair requests.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main
from tests.conftest import data_or_skip

pytestmark = pytest.mark.slow

FILES = {
    "logiclm/prontoqa": "ProntoQA",
    "logiclm/proofwriter": "ProofWriter",
    "logiclm/folio": "FOLIO",
    "logiclm/logicaldeduction": "LogicalDeduction",
    "logiclm/ar-lsat": "AR-LSAT",
}


@pytest.mark.parametrize("dataset", list(FILES))
def test_recorded_engine_reproduces_the_solver_slice(dataset, tmp_path):
    programs = data_or_skip("logiclm", "programs", f"{FILES[dataset]}_dev_gpt-4.json")
    data = str(data_or_skip())
    common = ["--executor", "local", "--workers", "2", "--no-progress", "--data-dir", data]
    slice_out, method_out = tmp_path / "slice.parquet", tmp_path / "method.parquet"
    assert main(["solve", "--programs", str(programs), "--out", str(slice_out), *common]) == 0
    assert main(["solve", "--method", "logiclm", "--engine", "recorded", "--recorded", str(programs),
                 "--dataset", dataset, "--out", str(method_out), *common]) == 0
    a = {r["problem_id"]: r for r in pq.read_table(slice_out).to_pylist()}
    b = {r["problem_id"]: r for r in pq.read_table(method_out).to_pylist()}
    assert a.keys() == b.keys()
    for pid in a:
        assert (a[pid]["correct"], a[pid]["executed"], a[pid]["predicted"]) == \
               (b[pid]["correct"], b[pid]["executed"], b[pid]["predicted"]), pid
    assert sum(r["correct"] for r in a.values()) == sum(r["correct"] for r in b.values())
    assert all(r["method"] == "logiclm" and r["model"] for r in b.values() if r["rounds"])
