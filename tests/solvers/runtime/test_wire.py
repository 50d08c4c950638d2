"""Requests and outcomes cross the worker's pipe as one JSON line each, converted once on each side, and
the formalization checks' findings come back typed (CheckReport / CheckFinding), never as loose dicts."""

from __future__ import annotations

import pytest

from symbolkg.solvers.outcomes import (
    CheckFinding,
    CheckReport,
    CheckSpec,
    Limits,
    Outcome,
    SolveRequest,
    Status,
)
from symbolkg.solvers.runtime.worker import SolverProcess
from tests.jobs.test_checks_refine import FLIPPED, RIGHT, problem


def _spec(corrections: bool = True) -> CheckSpec:
    p = problem()
    return CheckSpec(p.question, tuple(p.options), corrections)


def test_a_request_and_an_outcome_survive_the_wire_unchanged():
    request = SolveRequest("p–1", "logiclm-lp", "Facts:\nÄ(Max, True)", Limits(timeout_s=3.5, memory_mb=512), _spec())
    assert SolveRequest.from_wire(request.to_wire()) == request
    assert SolveRequest.from_wire(request.to_wire().encode()) == request
    bare = SolveRequest("p2", "prolog", "p.\n% query: p")
    assert SolveRequest.from_wire(bare.to_wire()) == bare and "\n" not in bare.to_wire()
    assert request.to_wire().isascii()  # whatever the pipe's encoding
    finding = CheckFinding("query_polarity", "error", "the query says the opposite", 9, True)
    report = CheckReport((finding,), True, ("query_polarity",), FLIPPED, RIGHT, ())
    outcome = Outcome(
        Status.DISPROVED,
        answer="False",
        proof="step 1",
        seconds=0.25,
        backend="forward-chainer",
        certificate={"kind": "derivation", "steps": [{"rule": 1}]},
        checks=report,
        readings=["x read as some x"],
    )
    back = Outcome.from_wire(outcome.to_wire())
    assert back == outcome and isinstance(back.checks.findings[0], CheckFinding)
    assert Outcome.from_wire(Outcome(Status.UNKNOWN).to_wire()).checks is None


def test_a_malformed_request_is_a_value_error_that_says_so():
    for line in ("{}", '{"problem_id": "p", "language": "x", "text": "", "limits": {"nope": 1}}', "[1]"):
        with pytest.raises(ValueError, match="not a solve request"):
            SolveRequest.from_wire(line)


def test_the_report_keeps_the_row_form_of_the_findings():
    finding = CheckFinding("one_name", "warning", "two names", None, False)
    report = CheckReport((finding,), True, ("one_name",), "a", "b", (finding,))
    assert report.trace() == {
        "checks": [
            {"check": "one_name", "severity": "warning", "message": "two names", "line": None, "corrects": False}
        ],
        "corrected": True,
        "corrections": ["one_name"],
        "original_program": "a",
        "remaining": [report.trace()["checks"][0]],
    }
    assert report.to_dict() == {**report.trace(), "program": "b"}  # the wire form has the solved program
    assert CheckReport.from_dict(report.to_dict()) == report
    assert CheckReport((finding,)).trace() == {"checks": [finding.to_dict()], "corrected": False}


@pytest.mark.parametrize("corrections", [True, False])
def test_the_worker_returns_the_checks_typed_and_converts_once_each_way(monkeypatch, corrections):
    calls = {"to_wire": 0, "from_wire": 0}
    to_wire, from_wire = SolveRequest.to_wire, Outcome.from_wire.__func__

    def counted_to_wire(self):
        calls["to_wire"] += 1
        return to_wire(self)

    def counted_from_wire(cls, line):
        calls["from_wire"] += 1
        return from_wire(cls, line)

    monkeypatch.setattr(SolveRequest, "to_wire", counted_to_wire)
    monkeypatch.setattr(Outcome, "from_wire", classmethod(counted_from_wire))
    with SolverProcess(memory_mb=1024, name="wire") as proc:
        outcome = proc.solve(SolveRequest("p1", "logiclm-lp", FLIPPED, Limits(timeout_s=20), _spec(corrections)))
    assert calls == {"to_wire": 1, "from_wire": 1}
    report = outcome.checks
    assert isinstance(report, CheckReport) and all(isinstance(f, CheckFinding) for f in report.findings)
    polarity = next(f for f in report.findings if f.check == "query_polarity")
    assert (polarity.severity, polarity.corrects) == ("error", True)
    assert report.corrected is corrections
    if corrections:
        assert report.original_program == FLIPPED and report.program.split("Query:")[1].strip().startswith(
            "Sour(Max, True)"
        )
    else:
        assert (report.program, report.original_program, report.corrections) == (None, None, ())
    assert outcome.answer == ("False" if corrections else "True")
