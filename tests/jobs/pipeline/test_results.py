"""The one result row, checks request and LLM ledger of every job (jobs/core/results.py), and the
steps of the two batch jobs built on them (run_solve's rows, run_method_job's summary)."""

from __future__ import annotations

import asyncio
import json

from symbolkg.actors.engines.base import Completion, EngineError
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.core.results import Ledger, check_spec, result_row
from symbolkg.jobs.core.rows import Problem, Program
from symbolkg.jobs.methods.base import MethodConfig, MethodContext
from symbolkg.jobs.pipeline.intake import progress_total
from symbolkg.jobs.pipeline.method_job import _Tally
from symbolkg.jobs.pipeline.programs_job import NO_PROGRAM, _recorded_row
from symbolkg.solvers.outcomes import Outcome, Status

PROBLEM = Problem(id="p1", dataset="custom", context="", question="A or B?", options=("A) yes", "B) no"), answer="A")


def _completion(text: str, *, cached: bool = False, model: str = "m") -> Completion:
    return Completion(text, prompt_tokens=3, completion_tokens=2, latency_s=0.5, cached=cached, model=model)


def test_check_spec_asks_about_the_question_and_options():
    spec = check_spec(PROBLEM, corrections=True)
    assert (spec.question, spec.options, spec.corrections) == ("A or B?", ("A) yes", "B) no"), True)


def test_a_ledger_counts_failed_calls_and_merges_counts_but_not_the_model():
    ledger = Ledger()
    ledger.add(_completion("x", cached=True, model="writer"))
    ledger.failed()
    stage = Ledger()
    stage.add(_completion("y", model="retriever"))
    ledger.merge(stage)
    assert (ledger.calls, ledger.cached, ledger.prompt_tokens, ledger.completion_tokens) == (3, 1, 6, 4)
    assert (ledger.seconds, ledger.model) == (1.0, "writer")


def test_a_method_row_is_the_shared_row_with_the_methods_name_and_ledger():
    ctx = MethodContext(ScriptedEngine(lambda r: "A"), None, MethodConfig(method="echo"))
    ctx.ledger.add(_completion("A"))
    outcome = Outcome(Status.PROVED, answer="A", backend="z3", readings=["r"])
    row = ctx.row(PROBLEM, outcome, predicted="A", rounds=1, stage_seconds={"solve": 0.123456})
    shared = result_row(
        PROBLEM, outcome, method="echo", predicted="A", ledger=ctx.ledger, rounds=1, stage_seconds={"solve": 0.123456}
    )
    assert {**row.to_row(), "finished_at": 0} == {**shared.to_row(), "finished_at": 0}
    assert (row.llm_calls, row.model, row.correct) == (1, "m", True)
    assert json.loads(row.trace) == {"readings": ["r"]} and json.loads(row.stage_seconds) == {"solve": 0.1235}


def test_try_ask_gives_a_failed_request_back_as_data_and_counts_it():
    def script(request):
        return EngineError("overloaded")

    ctx = MethodContext(ScriptedEngine(script), None, MethodConfig(method="echo"))
    reply = asyncio.run(ctx.try_ask(ctx.chat(PROBLEM, "answer", [("user", "?")])))
    assert (reply.completion, reply.error, ctx.ledger.calls) == (None, "overloaded", 1)
    assert reply.seconds >= 0.0


def test_a_recorded_row_without_a_program_has_no_round():
    row = _recorded_row(PROBLEM, NO_PROGRAM, method="recorded")
    assert (row.rounds, row.success_round, row.program, row.language, row.worker, row.attempts) == (
        0,
        None,
        None,
        None,
        "-",
        0,
    )
    assert (row.status, row.predicted, row.correct, row.llm_calls) == ("parse_error", None, False, 0)


def test_a_recorded_row_of_a_program_that_ran_is_its_first_round():
    problem = PROBLEM.with_program(Program(language="logiclm-lp", text="Query: a"))
    row = _recorded_row(problem, Outcome(Status.PROVED, answer="A", backend="lp"), method="recorded")
    assert (row.rounds, row.success_round, row.language, row.program, row.predicted) == (
        1,
        1,
        "logiclm-lp",
        "Query: a",
        "A",
    )


class _Store:
    shard = None


def test_progress_total_is_the_inputs_length_only_when_it_has_one():
    assert progress_total([PROBLEM, PROBLEM], _Store()) == 2
    assert progress_total(iter([PROBLEM]), _Store()) is None
    sharded = _Store()
    sharded.shard = object()
    assert progress_total([PROBLEM], sharded) is None


def test_the_method_jobs_summary_counts_what_the_intake_read():
    class Intake:
        seen, skipped = 5, 2

    tally = _Tally(None, t0=0.0)
    tally.solved = 3
    summary = tally.summary(Intake(), [])
    assert (summary.total, summary.skipped_done, summary.solved, summary.gates) == (5, 2, 3, ())
    assert summary.wall_seconds > 0
