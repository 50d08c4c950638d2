"""The profile's steps on hand-made rows and request records (jobs/inspection/profile.py)."""

from __future__ import annotations

import json

import pytest

from symbolkg.actors.engines.metered import RequestRecord
from symbolkg.jobs.inspection.profile import llm_report, stage_waits


def _row(stages: dict[str, float], latency: float, attempts: list[dict] | None = None) -> dict:
    return {
        "stage_seconds": json.dumps(stages),
        "latency_seconds": latency,
        "attempts_log": json.dumps(attempts or []),
        "solve_seconds": 0.0,
    }


def test_stage_waits_split_the_solve_stage_into_solver_and_queue_seconds():
    rows = [
        _row({"formalize": 1.0, "solve": 2.0}, 4.0, [{"outcome": {"seconds": 0.5}}, {"outcome": {"seconds": 1.0}}]),
        _row({}, 1.0),
    ]
    stages, queue, overhead = stage_waits(rows)
    assert stages == {"formalize": [1.0], "solve": [2.0]}
    assert queue == [pytest.approx(0.5)] and overhead == [pytest.approx(1.0)]  # the stage-less row counts in neither


def test_llm_report_counts_requests_errors_and_purposes():
    records = [
        RequestRecord("a", "p", "formulate", 0.0, 2.0, prompt_tokens=5, completion_tokens=10),
        RequestRecord("b", "p", "refine", 1.0, 4.0, completion_tokens=30, cached=True),
        RequestRecord("c", "q", "refine", 1.0, 2.0, error="EngineError: down"),
    ]
    report = llm_report(records, [1.0, 3.0], 1.0)
    assert (report["requests"], report["errors"], report["cached"]) == (3, 1, 1)
    assert (report["prompt_tokens"], report["completion_tokens"], report["tokens_per_second"]) == (5, 40, 10.0)
    assert report["mean_in_flight"] == 1.5 and report["max_in_flight"] == 3.0
    assert sorted(report["request_latency"]) == ["formulate", "refine"] == sorted(report["prefix_cache_by_purpose"])
