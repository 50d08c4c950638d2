"""The LLM methods with fake and recorded engines, real solver workers and real Parquet."""

from __future__ import annotations

import asyncio
import json

import pyarrow.parquet as pq
import pytest

from symbolkg.actors.engines.base import EngineDeadError, EngineError, SamplingParams
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.inspection.report import summarize
from symbolkg.jobs.methods import MethodConfig, run_problem
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.runtime.local_pool import LocalSolverPool

GOOD_LP = """Predicates:
Big($x, bool) ::: Is x big?
Red($x, bool) ::: Is x red?
Facts:
Big(Bob, True) ::: Bob is big.
Rules:
Big($x, True) >>> Red($x, True) ::: Big things are red.
Query:
Red(Bob, True) ::: Bob is red."""
# line 7 is broken: a rule without its conclusion
BAD_LP = GOOD_LP.replace("Big($x, True) >>> Red($x, True)", "Big($x, True) >>>")

OPTS = ("A) True", "B) False", "C) Unknown")


def problem(pid: str = "p1", dataset: str = "logiclm/proofwriter") -> Problem:
    return Problem(pid, dataset, "Bob is big. Big things are red.", "Is Bob red?", OPTS, "A")


@pytest.fixture(scope="module")
def pool():
    with LocalSolverPool(2) as p:
        yield p


def test_refine_loop_fixes_a_syntax_error_in_round_two(pool):
    engine = ScriptedEngine({"p1": [BAD_LP, GOOD_LP]})
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm"), engine, pool))
    assert row.correct and row.predicted == "A"
    assert (row.rounds, row.success_round) == (2, 2)
    log = json.loads(row.attempts_log)
    assert [a["round"] for a in log] == [1, 2]
    assert log[0]["outcome"]["status"] == "parse_error" and log[0]["program"] == BAD_LP
    assert log[1]["outcome"]["status"] == "proved"
    # the repair request carried the solver's error: its line and message
    refine = engine.requests[1]
    assert refine.purpose == "refine"
    text = "\n".join(m.content for m in refine.messages)
    assert log[0]["outcome"]["error_message"] in text
    assert str(log[0]["outcome"]["error_line"]) in text
    assert row.llm_calls == 2 and row.prompt_tokens > 0 and row.completion_tokens > 0


def test_refine_rounds_are_bounded_and_no_answer_is_guessed(pool):
    asked: list[int] = []

    def script(req):  # a new broken program every round (its comment differs), so no round repeats one
        asked.append(1)
        return BAD_LP.replace("Bob is big.", f"Bob is big (try {len(asked)}).")

    engine = ScriptedEngine(script)
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm", max_refine_rounds=2), engine, pool))
    assert row.rounds == 3 and row.success_round is None and len(engine.requests) == 3
    assert not row.executed and row.predicted is None and not row.correct
    assert row.status == "parse_error" and row.error_line is not None
    assert "refine_fixed_point" not in json.loads(row.trace)


def test_a_repair_that_returns_its_program_unchanged_ends_the_greedy_loop(pool):
    # Round 2 writes round 1's program again and it fails the same way: round 3 would be round 2's
    # request word for word, which greedy decoding answers the same way. The loop stops after round 2,
    # and its row is what the full four rounds would have given.
    engine = ScriptedEngine(lambda req: BAD_LP)
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm"), engine, pool))
    assert len(engine.requests) == 2 and row.rounds == 2 and row.llm_calls == 2
    assert engine.requests[0].messages != engine.requests[1].messages  # round 2 was a real repair
    assert json.loads(row.trace)["refine_fixed_point"] == 2
    assert row.program == BAD_LP and row.status == "parse_error" and row.predicted is None


def test_a_sampled_loop_goes_on_past_a_repeated_program(pool):
    # Sampled at temperature > 0, the same request may get another program: every round is asked.
    engine = ScriptedEngine(lambda req: BAD_LP)
    config = MethodConfig("logiclm", formulate_params=SamplingParams(max_tokens=256, temperature=0.7))
    row = asyncio.run(run_problem(problem(), config, engine, pool))
    assert len(engine.requests) == 4 and row.rounds == 4
    assert "refine_fixed_point" not in json.loads(row.trace)


def test_engine_error_keeps_the_last_outcome(pool):
    engine = ScriptedEngine({"p1": [BAD_LP, EngineError("server said no")]})
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm"), engine, pool))
    log = json.loads(row.attempts_log)
    assert log[-1]["engine_error"] == "server said no"
    assert row.rounds == 1 and row.status == "parse_error"


def test_fallback_is_counted_separately(pool):
    def script(req):
        return "The answer is A." if req.purpose == "answer" else BAD_LP

    cfg = MethodConfig("logiclm", max_refine_rounds=0, fallback="direct")
    row = asyncio.run(run_problem(problem(), cfg, ScriptedEngine(script), pool))
    assert not row.correct and row.predicted is None
    assert (row.fallback_method, row.fallback_predicted, row.fallback_correct) == ("direct", "A", True)


@pytest.mark.parametrize(
    "method,text,expected",
    [("direct", "B", "B"), ("cot", "Bob is big, so red. The answer is A.", "A"), ("cot", "I cannot tell.", None)],
)
def test_direct_and_cot(method, text, expected):
    row = asyncio.run(run_problem(problem(), MethodConfig(method), ScriptedEngine(lambda r: text), None))
    assert row.predicted == expected and row.executed == (expected is not None)
    assert row.correct == (expected == "A")
    assert row.method == method and row.backend == "llm"


def test_many_problems_in_flight_and_resume_after_engine_death(tmp_path, pool):
    problems = [problem(f"p{i}") for i in range(30)]
    dead_after = 12
    calls = 0

    def script(req):
        nonlocal calls
        calls += 1
        return EngineDeadError("engine process died") if calls > dead_after else GOOD_LP

    engine = ScriptedEngine(script, latency_s=0.01)
    out = tmp_path / "run.parquet"
    with pytest.raises(EngineDeadError):
        asyncio.run(
            run_method_job(
                problems, ResultStore(out), MethodConfig("logiclm"), engine, pool, max_in_flight=8, progress=False
            )
        )
    parts = out.with_name(out.name + ".parts")
    saved = sum(pq.read_table(p).num_rows for p in parts.glob("*.parquet"))
    assert 0 < saved <= dead_after
    # the engine saw many requests concurrently, not one at a time
    assert max(len(b) for b in engine.batches) == 1 and len(engine.requests) > dead_after
    engine2 = ScriptedEngine(lambda req: GOOD_LP)
    summary = asyncio.run(
        run_method_job(
            problems, ResultStore(out), MethodConfig("logiclm"), engine2, pool, max_in_flight=8, progress=False
        )
    )
    assert summary.skipped_done == saved and summary.solved == 30 - saved
    table, meta = read_run(out)
    ids = table.column("problem_id").to_pylist()
    assert sorted(ids) == sorted(p.id for p in problems)
    rep = summarize(table, meta)
    assert rep["accuracy"] == 1.0 and rep["rounds_histogram"] == {"1": 30}
    assert {
        "prompt_tokens",
        "completion_tokens",
        "tokens_per_second",
        "problems_per_second",
        "rounds_histogram",
    } <= rep.keys()


def test_cached_rerun_costs_zero_tokens_and_gives_the_same_answers(tmp_path, pool):
    from symbolkg.actors.engines.replay import CachingEngine, CompletionCache, ReplayEngine

    problems = [problem(f"q{i}") for i in range(6)]
    cache = CompletionCache(tmp_path / "cache")
    inner = ScriptedEngine(lambda req: GOOD_LP if req.problem_id != "q3" else BAD_LP)
    cfg = MethodConfig("logiclm", max_refine_rounds=1)
    first = tmp_path / "first.parquet"
    asyncio.run(run_method_job(problems, ResultStore(first), cfg, CachingEngine(inner, cache), pool, progress=False))
    second = tmp_path / "second.parquet"
    inner2 = ScriptedEngine(lambda req: pytest.fail("the cache should have answered"))
    asyncio.run(run_method_job(problems, ResultStore(second), cfg, CachingEngine(inner2, cache), pool, progress=False))
    third = tmp_path / "third.parquet"
    asyncio.run(
        run_method_job(problems, ResultStore(third), cfg, ReplayEngine(cache, inner.model), pool, progress=False)
    )
    a, b, c = (summarize(*read_run(p)) for p in (first, second, third))
    assert a["completion_tokens"] > 0 and b["completion_tokens"] == 0 == c["completion_tokens"]
    assert b["cached_calls"] == b["llm_calls"] == a["llm_calls"]
    answers = [
        sorted((r["problem_id"], r["predicted"]) for r in read_run(p)[0].to_pylist()) for p in (first, second, third)
    ]
    assert answers[0] == answers[1] == answers[2]
    # every replayed call keeps what the model spent on it, so a replayed row costs what the first run's did
    spent = {
        p: {r["problem_id"]: json.loads(r["attempts_log"]) for r in read_run(p)[0].to_pylist()} for p in (first, third)
    }
    for pid, attempts in spent[first].items():
        paid = [
            a.get("stored_tokens", [a["prompt_tokens"], a["completion_tokens"]]) for a in attempts if "completion" in a
        ]
        assert paid and all(p > 0 and c > 0 for p, c in paid)
        assert [a["stored_tokens"] for a in spent[third][pid] if "completion" in a] == paid


def test_unsupported_dataset_for_logiclm_is_recorded(pool):
    row = asyncio.run(
        run_problem(problem(dataset="multihop/hotpotqa"), MethodConfig("logiclm"), ScriptedEngine(lambda r: "x"), pool)
    )
    assert row.error_kind == "unsupported" and not row.executed
