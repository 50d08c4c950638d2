"""`symbolkg verify` end to end: recorded GPT-4 programs of the five Logic-LM sets solved by the real
solvers, every certificate re-checked in a worker by another engine; a corrupted certificate of each
kind fails, and the command says so in its exit code and `--json`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main as cli
from symbolkg.jobs.inspection.certificates import SUMMARY_KEYS, verdicts_path
from tests.conftest import data_or_skip

SETS = ("ProntoQA", "ProofWriter", "FOLIO", "LogicalDeduction", "AR-LSAT")
LIMIT = {"AR-LSAT": 10}  # problems per set (default 4): AR-LSAT's first programs leave no single option


def solve(name: str, out: Path) -> None:
    programs = data_or_skip("logiclm", "programs", f"{name}_dev_gpt-4.json")
    assert (
        cli(
            [
                "solve",
                "--programs",
                str(programs),
                "--out",
                str(out),
                "--limit",
                str(LIMIT.get(name, 4)),
                "--executor",
                "local",
                "--workers",
                "2",
                "--no-progress",
            ]
        )
        == 0
    )


def verify(run: Path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    rc = cli(["verify", str(run), "--executor", "local", "--workers", "2", "--json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verify")
    out = {}
    for name in SETS:
        out[name] = tmp / f"{name}.parquet"
        solve(name, out[name])
    return out


@pytest.mark.parametrize("name", SETS)
def test_every_executed_answer_has_a_certificate_that_another_engine_verifies(runs, name, capsys):
    rc, summary = verify(runs[name], capsys)
    assert rc == 0 and set(SUMMARY_KEYS) <= summary.keys()
    executed = [r for r in pq.read_table(runs[name]).to_pylist() if r["executed"]]
    answered = [r for r in executed if r["answer"] is not None]
    assert summary["answered"] == summary["with_certificate"] >= len(answered) > 0
    assert summary["failed"] == 0 and summary["verified"] == summary["with_certificate"], summary["problems"]
    assert verdicts_path(runs[name]).exists()
    cli(["report", str(runs[name])])
    assert f"verified {summary['verified']}, failed 0" in capsys.readouterr().out


def corrupt(run: Path, tmp: Path, change) -> Path:
    """A copy of ``run`` whose first certified row's certificate is passed through ``change``."""
    table = pq.read_table(run)
    rows = table.to_pylist()
    for row in rows:
        if row["certificate"]:
            cert = json.loads(row["certificate"])
            if change(cert):
                row["certificate"] = json.dumps(cert)
                break
    else:
        pytest.fail("no certificate this corruption applies to")
    out = tmp / f"bad-{run.name}"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), out)
    return out


def drop_premise(cert: dict) -> bool:
    if cert.get("kind") == "entailment" and len(cert.get("premises", [])) > 1:
        cert["premises"] = cert["premises"][1:]
        return True
    return False


def wrong_binding(cert: dict) -> bool:
    for step in cert.get("steps") or []:
        if step.get("binding"):
            var = next(iter(step["binding"]))
            step["binding"][var] = step["binding"][var] + "Other"
            return True
    return False


def break_a_constraint(cert: dict) -> bool:
    """Give one variable of the model another's value: the all-different constraint no longer holds."""
    model = cert.get("model")
    if cert.get("kind") != "constraint" or not isinstance(model, dict) or len(model) < 2:
        return False
    a, b = list(model)[:2]
    model[a] = model[b]
    return True


@pytest.mark.parametrize(
    "name, change", [("FOLIO", drop_premise), ("ProntoQA", wrong_binding), ("LogicalDeduction", break_a_constraint)]
)
def test_a_corrupted_certificate_fails_and_the_command_says_so(runs, name, change, tmp_path, capsys):
    bad = corrupt(runs[name], tmp_path, change)
    rc, summary = verify(bad, capsys)
    assert rc == 1 and summary["failed"] == 1
    (problem,) = summary["problems"]
    assert problem["verdict"] == "failed" and problem["reason"]
