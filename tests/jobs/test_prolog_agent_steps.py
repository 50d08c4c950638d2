"""The prolog agent's steps without an MCP server: an answer that does not parse, a verdict, the row."""

from __future__ import annotations

import asyncio
import json

from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.methods.base import MethodConfig, MethodContext
from symbolkg.jobs.methods.prolog_agent import Attempts, PrologAgent, verdict_outcome
from symbolkg.solvers.outcomes import Status

PROBLEM = Problem("p1", "custom", "Anne is big.", "Anne is big.", ("A) True", "B) False"), "A")


def test_an_answer_without_its_tags_is_sent_back_for_repair_and_never_reaches_the_server():
    tries = Attempts(log=[{"attempt": 1}])
    repair = asyncio.run(PrologAgent()._try_answer("no tags here", None, None, tries))  # type: ignore[arg-type]
    assert repair is not None and tries.log[0]["stage"] == "format"
    assert tries.outcome is not None and tries.outcome.status is Status.PARSE_ERROR
    assert (tries.program, tries.success_round, tries.calls) == (None, None, [])


def test_a_run_goal_success_is_a_true_verdict_with_its_first_answer():
    outcome = verdict_outcome({"outcome": "success", "answers": [{"X": "a"}, {"X": "b"}], "elapsed_s": 0.25})
    assert (outcome.status, outcome.answer, outcome.seconds) == (Status.PROVED, "True", 0.25)
    assert json.loads(outcome.proof) == [{"X": "a"}]
    assert verdict_outcome({"outcome": "failure"}).status is Status.DISPROVED


def test_the_row_reports_every_attempt_and_the_last_program():
    ctx = MethodContext(ScriptedEngine(lambda r: ""), None, MethodConfig(method="prolog-agent"))
    tries = Attempts(log=[{"attempt": 1}, {"attempt": 2}], program="big(anne).\n?- big(anne).\n", success_round=2)
    tries.outcome = verdict_outcome({"outcome": "success"})
    row = tries.row(PROBLEM, ctx, latency_s=1.0, trace={"mcp_calls": []})
    assert (row.rounds, row.success_round, row.predicted, row.correct, row.language) == (2, 2, "A", True, "prolog")
    assert set(json.loads(row.stage_seconds)) == {"llm", "mcp", "sldnf"}
