"""Acceptance: Logic-LM's recorded GPT-4 programs through the real job beat Logic-LM's own solvers.

Logic-LM's numbers (execution rate, accuracy with unexecuted = wrong) were measured on
this machine on the same files. They are over the records of each program file; our
loader also adds the dev problems a file lacks (LogicalDeduction and AR-LSAT miss one
each) as unexecuted rows, so both views are checked: the file view against the targets,
and the dataset view for being exactly the file view plus those rows.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main
from tests.conftest import data_or_skip

pytestmark = pytest.mark.slow

# Per program. Measured idle: every program of the five files ends within 0.31 s except FOLIO_dev_119
# (1.7 s inside a two-worker job), 11x or more under it; only FOLIO_dev_120 never ends and times out.
# (The CLI's default, 10 s, is only 5.4x FOLIO_dev_119's cost.) As in tests/jobs/test_recorded_method.py.
TIMEOUT_S = 20

# dataset file -> (execution rate, accuracy) of Logic-LM's own solvers on it
LOGICLM = {
    "ProntoQA": (1.000, 0.832),
    "ProofWriter": (0.990, 0.788),
    "FOLIO": (0.799, 0.642),
    "LogicalDeduction": (1.000, 0.876),
    "AR-LSAT": (0.326, 0.196),
}


@pytest.mark.parametrize("name", list(LOGICLM))
def test_recorded_programs_meet_logiclm(name, tmp_path, capsys):
    programs = data_or_skip("logiclm", "programs", f"{name}_dev_gpt-4.json")
    file_ids = {r["id"] for r in json.loads(programs.read_text())}
    out = tmp_path / f"{name}.parquet"
    rc = main(
        [
            "solve",
            "--programs",
            str(programs),
            "--out",
            str(out),
            "--executor",
            "local",
            "--workers",
            "2",
            "--timeout-s",
            str(TIMEOUT_S),
            "--no-progress",
            "--data-dir",
            str(data_or_skip()),
        ]
    )
    assert rc == 0
    rows = pq.read_table(out).to_pylist()
    in_file = [r for r in rows if r["problem_id"] in file_ids]
    extra = [r for r in rows if r["problem_id"] not in file_ids]
    assert len(in_file) == len(file_ids)
    assert all(r["error_kind"] == "no_program" for r in extra)
    exec_rate = sum(r["executed"] for r in in_file) / len(in_file)
    accuracy = sum(r["correct"] for r in in_file) / len(in_file)
    want_exec, want_acc = LOGICLM[name]
    assert exec_rate >= want_exec - 1e-9, f"{name}: execution rate {exec_rate:.3f} < Logic-LM {want_exec:.3f}"
    assert accuracy >= want_acc - 5e-4, f"{name}: accuracy {accuracy:.4f} < Logic-LM {want_acc:.3f}"
    # Never a guess: every correct row executed and has the solver's own answer.
    assert all(r["executed"] and r["predicted"] is not None for r in rows if r["correct"])
    capsys.readouterr()
    assert main(["report", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["problems"] == len(rows)
    assert rep["accuracy"] == round(sum(r["correct"] for r in rows) / len(rows), 4)
