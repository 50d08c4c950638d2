"""`symbolkg solve --cross-check`: logiclm-fol programs are solved by Z3 too; disagreements are recorded."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from symbolkg.jobs.cli import main
from symbolkg.jobs.pipeline.programs_job import cross_check_entry
from symbolkg.solvers.outcomes import ErrorKind, Outcome, Status
from tests.solvers.certificates.test_certificates_entailment import FALSE, TRUE, UNKNOWN

OPTIONS = ["A) True", "B) False", "C) Uncertain"]


def folio_file(tmp_path):
    rows = [
        {
            "id": f"FOLIO_dev_{i}",
            "context": "",
            "question": "Is the statement true, false, or uncertain?",
            "answer": gold,
            "options": OPTIONS,
            "raw_logic_programs": [program],
        }
        for i, (program, gold) in enumerate(((TRUE, "A"), (FALSE, "B"), (UNKNOWN, "C")))
    ]
    path = tmp_path / "FOLIO_dev_gpt-4.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_cross_check_records_z3_answers_and_counts_disagreements(tmp_path, capsys):
    out = tmp_path / "run.parquet"
    rc = main(
        [
            "solve",
            "--programs",
            str(folio_file(tmp_path)),
            "--out",
            str(out),
            "--executor",
            "local",
            "--workers",
            "1",
            "--no-progress",
            "--cross-check",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "cross-check (Z3): 3 FOL rows, 0 disagreements" in printed
    rows = {r["problem_id"]: r for r in pq.read_table(out).to_pylist()}
    # True and False are Prover9's proofs; Unknown is the finite-model search's two models (backend z3).
    for pid, answer, backend in (
        ("FOLIO_dev_0", "True", "prover9"),
        ("FOLIO_dev_1", "False", "prover9"),
        ("FOLIO_dev_2", "Unknown", "z3"),
    ):
        assert rows[pid]["answer"] == answer and rows[pid]["backend"] == backend
        assert json.loads(rows[pid]["trace"])["cross_check"] == {"backend": "z3", "answer": answer, "agrees": True}


def test_without_the_flag_nothing_is_cross_checked(tmp_path, capsys):
    out = tmp_path / "run.parquet"
    assert (
        main(
            [
                "solve",
                "--programs",
                str(folio_file(tmp_path)),
                "--out",
                str(out),
                "--executor",
                "local",
                "--workers",
                "1",
                "--no-progress",
                "--limit",
                "1",
            ]
        )
        == 0
    )
    assert "cross-check" not in capsys.readouterr().out
    assert "cross_check" not in json.loads(pq.read_table(out).to_pylist()[0]["trace"])


def test_a_disagreement_and_a_z3_timeout_are_told_apart():
    prover9_true = Outcome(Status.PROVED, answer="True", backend="prover9")
    z3_unknown = Outcome(Status.UNKNOWN, answer="Unknown", backend="z3")
    z3_timeout = Outcome.error(Status.TIMEOUT, ErrorKind.TIMEOUT, "Z3 could not decide", backend="z3")
    assert cross_check_entry(prover9_true, z3_unknown) == {"backend": "z3", "answer": "Unknown", "agrees": False}
    assert cross_check_entry(prover9_true, z3_timeout) == {
        "backend": "z3",
        "answer": None,
        "agrees": None,
        "status": "timeout",
    }
