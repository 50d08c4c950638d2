"""Formalization checks in the jobs: the refine loop sends their errors back to the LLM (scripted
engine), and the recorded path (run_solve) records them and solves the corrected program."""

from __future__ import annotations

import asyncio
import json

import pytest

from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.core.rows import Problem, Program
from symbolkg.jobs.methods import MethodConfig, run_problem
from symbolkg.jobs.methods.logiclm import LogicLM
from symbolkg.jobs.pipeline.programs_job import run_solve
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.runtime.local_pool import LocalSolverPool

RIGHT = """Predicates:
Tumpus($x, bool) ::: Is x a tumpus?
Sour($x, bool) ::: Is x sour?
Facts:
Tumpus(Max, True) ::: Max is a tumpus.
Rules:
Tumpus($x, True) >>> Sour($x, False) ::: Tumpuses are not sour.
Query:
Sour(Max, True) ::: Max is sour."""
# The query states the negation of the question: it runs, and answers the opposite.
FLIPPED = RIGHT.replace("Sour(Max, True) ::: Max is sour.", "Sour(Max, False) ::: Max is sour.")
# A second predicate `Sours` of another arity: it runs and answers B, but the `one_name` check flags
# it as an error with no text-resolved correction.
SPLIT = RIGHT.replace(
    "Sour($x, bool) ::: Is x sour?", "Sour($x, bool) ::: Is x sour?\nSours($x, $y, bool) ::: x sours y"
).replace("Facts:\n", "Facts:\nSours(Max, Max, True) ::: Max sours Max.\n")


def problem(pid: str = "p1") -> Problem:
    return Problem(
        pid,
        "logiclm/prontoqa",
        "Max is a tumpus. Tumpuses are not sour.",
        "Is the following statement true or false? Max is sour.",
        ("A) True", "B) False"),
        "B",
    )


@pytest.fixture(scope="module")
def pool():
    with LocalSolverPool(1) as p:
        yield p


def test_a_check_error_the_text_does_not_resolve_is_sent_back_and_round_two_fixes_it(pool):
    def script(request):
        prompt = "\n".join(m.content for m in request.messages)
        # the scripted LLM drops the second name only when the prompt tells it what is wrong
        return RIGHT if "[one_name]" in prompt and "Sours" in prompt else SPLIT

    engine = ScriptedEngine(script)
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm"), engine, pool))
    assert row.correct and row.predicted == "B"
    assert (row.rounds, row.success_round) == (2, 2)
    log = json.loads(row.attempts_log)
    assert log[0]["outcome"]["status"] in ("proved", "disproved") and log[0]["program"] == SPLIT
    assert [f["check"] for f in log[0]["checks"] if f["severity"] == "error"] == ["one_name"]
    assert not any(f["corrects"] for f in log[0]["checks"])
    refine = "\n".join(m.content for m in engine.requests[1].messages)
    assert engine.requests[1].purpose == "refine"
    message = next(f["message"] for f in log[0]["checks"] if f["check"] == "one_name")
    assert message in refine and "does not say what the problem says" in refine
    assert json.loads(row.trace)["checks"] == log[1]["checks"]  # the last program's findings (none are errors)


def test_a_check_error_the_checks_correct_is_not_sent_back_but_corrected(pool):
    # the text resolves a flipped query: a repair request would only risk the rest of the program
    engine = ScriptedEngine(lambda request: FLIPPED)
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm"), engine, pool))
    assert (row.rounds, len(engine.requests), row.success_round) == (1, 1, 1)
    assert row.program == RIGHT and row.correct and row.predicted == "B"
    trace = json.loads(row.trace)
    assert (trace["corrected"], trace["corrections"], trace["original_program"]) == (True, ["query_polarity"], FLIPPED)


def test_an_inconsistent_program_resting_on_an_unstated_fact_is_revised_after_the_loop(pool):
    # the model states the question as a fact: the rules derive the opposite, so no answer as written
    invented = RIGHT.replace("Facts:\n", "Facts:\nSour(Max, True) ::: Max is sour.\n")
    engine = ScriptedEngine(lambda request: invented)
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm"), engine, pool))
    assert len(engine.requests) == 1  # an inconsistent program ran: it is revised, not sent back
    assert row.correct and row.predicted == "B" and row.status == "disproved"
    assert row.program.count("Sour(Max, True) ::: Max is sour.") == 1 and row.certificate is not None  # the query
    log = json.loads(row.attempts_log)
    assert log[0]["outcome"]["error_kind"] == "inconsistent"
    assert log[-1]["purpose"] == "correct" and log[-1]["corrections"] == ["unstated_facts"]
    trace = json.loads(row.trace)
    assert trace["corrections"] == ["unstated_facts"] and trace["original_program"] == invented
    assert "Sour(Max, True)" in next(f["message"] for f in trace["checks"] if f["check"] == "unstated_facts")


def test_a_repair_that_makes_things_worse_does_not_replace_the_better_round(pool):
    # Round 1 runs (with a check error the text does not resolve); the repair comes back
    # unparseable: round 1 is kept, as written.
    engine = ScriptedEngine(lambda request: SPLIT if request.purpose == "formulate" else "Facts:\nSour(Max, ")
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm", max_refine_rounds=1), engine, pool))
    log = json.loads(row.attempts_log)
    assert row.rounds == 2 and log[1]["outcome"]["status"] == "parse_error" and len(log) == 2
    assert row.program == SPLIT and row.success_round == 1 and row.status in ("proved", "disproved")
    assert row.correct and row.predicted == "B"
    trace = json.loads(row.trace)
    assert "one_name" in [f["check"] for f in trace["checks"]] and not trace["corrected"]


def test_logiclm_feedback_solver_sends_back_only_programs_that_did_not_execute(pool):
    # Logic-LM's refiner: FLIPPED runs (with a check error), so it is not sent back; the text-resolved
    # correction is still applied after the loop, as with every program
    engine = ScriptedEngine(lambda request: FLIPPED)
    method = LogicLM(feedback="solver")
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm"), engine, pool, method))
    assert row.rounds == 1 and len(engine.requests) == 1 and row.program == RIGHT and row.correct


def test_logiclm_feedback_solver_gives_the_solvers_message_without_the_line(pool):
    bad = RIGHT.replace("Sour(Max, True) ::: Max is sour.", "Sour(Max True) ::: Max is sour.")
    engine = ScriptedEngine(lambda request: bad if request.purpose == "formulate" else RIGHT)
    for feedback, quoted in (("solver", False), ("checks", True)):
        engine.requests.clear()
        row = asyncio.run(run_problem(problem(), MethodConfig("logiclm"), engine, pool, LogicLM(feedback=feedback)))
        assert (row.rounds, row.success_round, row.correct) == (2, 2, True)
        first = json.loads(row.attempts_log)[0]["outcome"]
        refine = engine.requests[1].messages[-1].content
        assert first["error_message"].strip()[:40] in refine
        assert ("\nLine " in refine) is quoted, refine


def test_a_repair_budget_bounds_only_the_repairs(pool):
    # every repair writes a different broken program, so the loop runs all its rounds
    def answer(request):
        return (
            RIGHT.replace("Sour(Max, True)", "Sour(Max True")
            if request.purpose == "formulate"
            else f"Facts:\n{request.request_id}("
        )

    engine = ScriptedEngine(answer)
    cfg = MethodConfig("logiclm", max_refine_rounds=2, repair_max_tokens=64)
    row = asyncio.run(run_problem(problem(), cfg, engine, pool))
    assert row.rounds == 3
    budgets = [(r.purpose, r.params.max_tokens) for r in engine.requests]
    assert budgets == [("formulate", 1024), ("refine", 64), ("refine", 64)]
    # by default a repair has the program's budget (Logic-LM); a bound above it changes nothing
    for bound in (None, 4096):
        engine.requests.clear()
        asyncio.run(
            run_problem(problem(), MethodConfig("logiclm", max_refine_rounds=1, repair_max_tokens=bound), engine, pool)
        )
        assert [r.params.max_tokens for r in engine.requests] == [1024, 1024]
    with pytest.raises(ValueError, match="--repair-max-tokens must be >= 1, got 0"):
        MethodConfig("logiclm", repair_max_tokens=0)


def test_logiclm_feedback_is_validated():
    with pytest.raises(ValueError, match="--logiclm-feedback must be one of checks, solver, got 'hints'"):
        LogicLM(feedback="hints")


def test_without_rounds_left_the_text_resolved_correction_is_applied(pool):
    engine = ScriptedEngine(lambda request: FLIPPED)
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm", max_refine_rounds=0), engine, pool))
    assert row.rounds == 1 and row.correct and row.program == RIGHT
    assert [f["check"] for f in json.loads(row.trace)["checks"]] == ["query_polarity"]


def test_a_program_from_a_model_and_from_a_file_get_one_answer_and_one_trace(tmp_path, pool):
    """One path for corrections: the method's row and the direct solve's row of one program agree."""
    engine = ScriptedEngine(lambda request: FLIPPED)  # never repairs
    method = asyncio.run(run_problem(problem("flipped"), MethodConfig("logiclm"), engine, pool))
    out = tmp_path / "direct.parquet"
    run_solve([problem("flipped").with_program(Program("logiclm-lp", FLIPPED))], ResultStore(out), pool, progress=False)
    [direct] = read_run(out)[0].to_pylist()
    assert (method.predicted, method.correct, method.program) == (
        direct["predicted"],
        direct["correct"],
        direct["program"],
    )
    assert json.loads(method.trace) == json.loads(direct["trace"])


@pytest.mark.parametrize("corrections", [True, False])
def test_recorded_path_records_checks_and_solves_the_corrected_program(tmp_path, pool, corrections):
    problems = [
        problem("flipped").with_program(Program("logiclm-lp", FLIPPED)),
        problem("right").with_program(Program("logiclm-lp", RIGHT)),
    ]
    out = tmp_path / "run.parquet"
    run_solve(problems, ResultStore(out), pool, progress=False, corrections=corrections)
    rows = {r["problem_id"]: r for r in read_run(out)[0].to_pylist()}
    flipped, right = json.loads(rows["flipped"]["trace"]), json.loads(rows["right"]["trace"])
    assert [f["check"] for f in flipped["checks"]] == ["query_polarity"] and flipped["checks"][0]["corrects"]
    assert right == {"checks": [], "corrected": False}
    assert rows["right"]["correct"]
    assert flipped["corrected"] is corrections
    assert rows["flipped"]["correct"] is corrections
    if corrections:
        assert flipped["original_program"] == FLIPPED and flipped["corrections"] == ["query_polarity"]
        assert rows["flipped"]["program"] == RIGHT
    else:
        assert rows["flipped"]["program"] == FLIPPED and "original_program" not in flipped


@pytest.mark.parametrize("flag", [[], ["--no-corrections"]])
def test_cli_flag_turns_corrections_off(tmp_path, flag):
    from symbolkg.jobs.cli import main

    record = {
        "id": "flipped",
        "dataset": "custom",
        "context": "Max is a tumpus. Tumpuses are not sour.",
        "question": problem().question,
        "options": list(problem().options),
        "answer": "B",
        "program": {"language": "logiclm-lp", "text": FLIPPED},
    }
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(record) + "\n")
    out = tmp_path / "run.parquet"
    assert (
        main(
            [
                "solve",
                "--programs",
                str(src),
                "--out",
                str(out),
                "--executor",
                "local",
                "--workers",
                "1",
                "--no-progress",
                *flag,
            ]
        )
        == 0
    )
    [row] = read_run(out)[0].to_pylist()
    assert json.loads(row["trace"])["corrected"] is (not flag)
    assert row["correct"] is (not flag)
