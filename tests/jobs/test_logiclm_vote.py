"""``--logiclm-samples K``: K sampled formulate -> solve -> refine loops per problem and a certified vote.

The scripted LLM answers by the request's seed, so each sample writes the program the test gives
it; the programs run in real solver workers with their formalization checks. What a user would
notice: the majority answer with a certificate that a single run of that program also has; a tie
or nothing certified left unanswered, saying why; flagged and failing samples not counted; every
sample in the row and on `symbolkg view`'s problem page; and with K=1, today's requests, so old
completion caches still replay.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from symbolkg.actors.engines.base import EngineDeadError
from symbolkg.actors.engines.replay import CachingEngine, CompletionCache
from symbolkg.actors.engines.scripted import ScriptedEngine, prompt_word_count, word_count
from symbolkg.jobs.cli import build_parser
from symbolkg.jobs.commands.solve import schema
from symbolkg.jobs.methods import MethodConfig, MethodContext, run_problem
from symbolkg.jobs.methods.logiclm import LogicLM
from symbolkg.jobs.methods.vote import NO_CLEAN_SAMPLE, SAMPLES_DISAGREE, vote
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.run_config import Source, resolve
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers import prompts
from symbolkg.solvers.runtime.local_pool import LocalSolverPool
from tests.jobs.test_checks_refine import RIGHT, SPLIT, problem

# RIGHT answers B (Max is not sour: False). WRONG states the rule the other way round: it runs
# clean and answers A. SPLIT (test_checks_refine) runs and answers B with a `one_name` error the
# text does not resolve. BAD never parses.
WRONG = RIGHT.replace("Tumpus($x, True) >>> Sour($x, False)", "Tumpus($x, True) >>> Sour($x, True)")
BAD = "Facts:\nSour(Max,"


@pytest.fixture(scope="module")
def pool():
    with LocalSolverPool(1) as p:
        yield p


def by_seed(programs: dict) -> ScriptedEngine:
    """A scripted LLM writing ``programs[seed]`` for every request of sample ``seed`` (its repairs too)."""
    return ScriptedEngine(lambda request: programs[request.params.seed])


def solve(programs: dict, pool, *, rounds: int = 0, temperature: float = 0.7):
    engine = by_seed(programs)
    method = LogicLM(samples=len(programs), temperature=temperature)
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm", max_refine_rounds=rounds), engine, pool, method))
    return row, engine, json.loads(row.trace)


# --------------------------------------------------------------------------- the rule


def test_the_vote_is_a_strict_plurality_of_the_counted_samples():
    assert vote(["A", "B", "A"]).winner == "A" and vote(["A", "B", "A"]).agreement == 0.6667
    assert vote(["A", "B", "C"]).winner is None  # three-way tie: no guess
    assert vote(["A", "B", "C"]).reason == "samples disagree: A x1, B x1, C x1"
    alone = vote([None, None, "C"])
    assert (alone.winner, alone.agreement, alone.counted, alone.samples, alone.first) == ("C", 1.0, 1, 3, 2)
    assert (vote([None]).winner, vote([None]).error_kind) == (None, NO_CLEAN_SAMPLE)
    assert vote(["A", "B"]).error_kind == SAMPLES_DISAGREE and vote(["A"]).error_kind is None
    with pytest.raises(ValueError, match="at least one sample"):
        vote([])
    with pytest.raises(ValueError, match="sample 1's answer .* got ''"):
        vote(["A", ""])


# --------------------------------------------------------------------------- the method


def test_the_majority_wins_and_the_row_reports_the_first_winning_samples_program_and_certificate(pool):
    row, engine, trace = solve({1: WRONG, 2: RIGHT, 3: RIGHT}, pool)
    assert (row.predicted, row.correct, row.program, row.success_round) == ("B", True, RIGHT, 1)
    assert trace["vote"] == {
        "winner": "B",
        "counts": {"B": 2, "A": 1},
        "counted": 3,
        "samples": 3,
        "agreement": 0.6667,
        "reason": "",
        "seed": 2,
    }
    assert [(s["seed"], s["answer"], s["counted"]) for s in trace["samples"]] == [
        (1, "A", True),
        (2, "B", True),
        (3, "B", True),
    ]
    assert [s["program"] for s in trace["samples"]] == [WRONG, RIGHT, RIGHT]
    # the certificate is the one a single greedy run of that program gets: real, not assembled by the vote
    single = asyncio.run(
        run_problem(problem(), MethodConfig("logiclm", max_refine_rounds=0), ScriptedEngine(lambda r: RIGHT), pool)
    )
    assert row.certificate is not None and json.loads(row.certificate) == json.loads(single.certificate)
    assert (row.status, row.answer, row.backend) == (single.status, single.answer, single.backend)


def test_a_tie_stays_unanswered_and_says_why(pool):
    row, _, trace = solve({1: RIGHT, 2: WRONG, 3: WRONG, 4: RIGHT}, pool)
    assert row.predicted is None and not row.correct and row.program is None and row.certificate is None
    assert (row.status, row.error_kind) == ("unknown", SAMPLES_DISAGREE)
    assert row.error_message == "samples disagree: B x2, A x2"
    assert trace["vote"]["winner"] is None and trace["vote"]["counted"] == 4 and trace["vote"]["seed"] is None


def test_a_sample_with_a_check_error_casts_no_vote(pool):
    # counted as the single run counts them, the two SPLIT samples would outvote WRONG 2-1; their
    # repair (one round) writes SPLIT again
    row, engine, trace = solve({1: SPLIT, 2: SPLIT, 3: WRONG}, pool, rounds=1)
    assert row.predicted == "A" and row.program == WRONG
    flagged = trace["samples"][0]
    assert (flagged["answer"], flagged["executed"], flagged["rank"], flagged["counted"]) == (
        "B",
        True,
        "flagged",
        False,
    )
    assert flagged["excluded"] == "check errors (one_name)" and flagged["rounds"] == 2
    assert [f["check"] for f in flagged["checks"] if f["severity"] == "error"] == ["one_name"]
    assert trace["vote"]["counts"] == {"A": 1} and trace["vote"]["counted"] == 1
    assert sorted((r.params.seed, r.purpose) for r in engine.requests) == [
        (1, "formulate"),
        (1, "refine"),
        (2, "formulate"),
        (2, "refine"),
        (3, "formulate"),
    ]


def test_a_sample_that_never_executes_casts_no_vote(pool):
    row, _, trace = solve({1: BAD, 2: RIGHT, 3: BAD}, pool, rounds=1)
    assert row.predicted == "B" and row.correct and trace["vote"]["counts"] == {"B": 1}
    assert [s["rank"] for s in trace["samples"]] == ["failed", "clean", "failed"]
    assert trace["samples"][0]["excluded"].startswith("not executed (") and trace["samples"][0]["program"] == BAD
    # every sample's attempts, sample by sample, tagged with the seed
    log = json.loads(row.attempts_log)
    assert [(a["seed"], a["round"]) for a in log] == [(1, 1), (1, 2), (2, 1), (3, 1), (3, 2)]
    assert row.rounds == 5 and row.success_round == 1


def test_nothing_certified_leaves_the_problem_unanswered(pool):
    row, _, trace = solve({1: BAD, 2: BAD}, pool)
    assert row.predicted is None and not row.executed and row.status == "parse_error"
    assert row.error_kind == NO_CLEAN_SAMPLE
    assert row.error_message.startswith("no sample executed cleanly: not executed (")
    assert row.error_message.endswith(" x2") and trace["vote"]["counted"] == 0
    row, _, _ = solve({1: SPLIT, 2: BAD}, pool)  # one ran, with a check error: unknown, not a parse error
    assert (row.status, row.predicted, row.error_kind) == ("unknown", None, NO_CLEAN_SAMPLE)
    assert "check errors (one_name) x1" in row.error_message


def test_tokens_and_calls_cover_every_sample(pool):
    row, engine, trace = solve({1: BAD, 2: RIGHT, 3: WRONG}, pool, rounds=1)
    assert row.llm_calls == len(engine.requests) == 4  # the failing sample asked for one repair
    assert row.prompt_tokens == sum(prompt_word_count(r) for r in engine.requests)
    programs = {1: BAD, 2: RIGHT, 3: WRONG}
    assert row.completion_tokens == sum(word_count(programs[r.params.seed]) for r in engine.requests)
    assert sum(s["prompt_tokens"] for s in trace["samples"]) == row.prompt_tokens
    assert sum(s["completion_tokens"] for s in trace["samples"]) == row.completion_tokens


def test_each_sample_is_its_own_cached_completion_and_a_rerun_replays_them(tmp_path, pool):
    row, engine, _ = solve({1: RIGHT, 2: WRONG, 3: RIGHT}, pool)
    formulate = [r for r in engine.requests if r.purpose == "formulate"]
    assert sorted((r.params.seed, r.params.temperature) for r in formulate) == [(1, 0.7), (2, 0.7), (3, 0.7)]
    assert len({r.cache_key("scripted") for r in formulate}) == 3
    assert len({r.messages for r in formulate}) == 1  # one shared prompt: the engine's prefix cache serves it
    assert sorted(r.request_id for r in formulate) == [f"p1/formulate/1/seed{i}" for i in (1, 2, 3)]
    cache, cfg = CompletionCache(tmp_path / "cache"), MethodConfig("logiclm", max_refine_rounds=0)
    method = LogicLM(samples=3)
    first = asyncio.run(
        run_problem(problem(), cfg, CachingEngine(by_seed({1: RIGHT, 2: WRONG, 3: RIGHT}), cache), pool, method)
    )
    never = ScriptedEngine(lambda r: pytest.fail("the cache should have answered"))
    again = asyncio.run(run_problem(problem(), cfg, CachingEngine(never, cache), pool, method))
    assert again.cached_calls == again.llm_calls == 3 and again.completion_tokens == 0
    assert (again.predicted, json.loads(again.trace)["vote"]) == (first.predicted, json.loads(first.trace)["vote"])


def test_one_sample_sends_exactly_the_requests_of_the_single_greedy_loop(pool):
    engine = ScriptedEngine(lambda r: BAD if r.purpose == "formulate" else RIGHT)
    cfg = MethodConfig("logiclm", max_refine_rounds=1)
    row = asyncio.run(run_problem(problem(), cfg, engine, pool, LogicLM(samples=1, temperature=1.3)))
    assert [r.request_id for r in engine.requests] == ["p1/formulate/1", "p1/refine/2"]
    assert all(
        r.params == cfg.formulate_params and r.params.temperature == 0.0 and r.params.seed is None
        for r in engine.requests
    )
    # the first request as the loop built it before samples existed: same messages, params, constraint
    p = problem()
    old = MethodContext(engine, pool, cfg).chat(
        p,
        "formulate",
        prompts.formulation_messages("logiclm-lp", p.context, p.question, p.options, ""),
        params=cfg.formulate_params,
        request_id="p1/formulate/1",
    )
    assert engine.requests[0] == old and engine.requests[0].cache_key("m") == old.cache_key("m")
    assert "samples" not in json.loads(row.trace) and "seed" not in json.loads(row.attempts_log)[0]
    assert row.correct and (row.rounds, row.success_round) == (2, 2)


def test_a_dead_engine_in_one_sample_stops_the_problem(pool):
    def script(request):
        return EngineDeadError("gone") if request.params.seed == 2 else RIGHT

    with pytest.raises(EngineDeadError):
        asyncio.run(
            run_problem(
                problem(),
                MethodConfig("logiclm", max_refine_rounds=0),
                ScriptedEngine(script),
                pool,
                LogicLM(samples=3),
            )
        )


def test_the_flags_their_config_keys_and_their_checks():
    parser = build_parser()
    method = LogicLM.from_args(
        parser.parse_args(["solve", "--method", "logiclm", "--logiclm-samples", "5", "--logiclm-temperature", "0.9"])
    )
    assert method.run_info() == {
        "grammar": "skeleton",
        "samples": 5,
        "temperature": 0.9,
        "feedback": "checks",
        "sample_on": "always",
    }
    assert LogicLM.from_args(parser.parse_args(["solve", "--method", "logiclm"])).run_info()["samples"] == 1
    config = resolve(schema(), {}, file=Source("run.yaml", {"method": "logiclm", "logiclm": {"samples": 3}}))
    expected = {"grammar": "skeleton", "samples": 3, "temperature": 0.7, "feedback": "checks", "sample_on": "always"}
    assert config.document()["logiclm"] == expected
    assert LogicLM.from_args(config.namespace()).config.samples == 3
    with pytest.raises(ValueError, match="--logiclm-samples must be an integer >= 1, got 0"):
        LogicLM(samples=0)
    with pytest.raises(ValueError, match="--logiclm-temperature 0 with --logiclm-samples 3"):
        LogicLM(samples=3, temperature=0.0)
    LogicLM(samples=1, temperature=0.0)  # unused with one sample: allowed
    with pytest.raises(ValueError, match="--logiclm-sample-on failure needs --logiclm-samples K > 1"):
        LogicLM(sample_on="failure")
    with pytest.raises(ValueError, match="--logiclm-sample-on must be one of always, failure"):
        LogicLM(samples=3, sample_on="sometimes")
    on_failure = ["solve", "--method", "logiclm", "--logiclm-samples", "3", "--logiclm-sample-on", "failure"]
    assert LogicLM.from_args(parser.parse_args(on_failure)).config.sample_on == "failure"


# --------------------------------------------------------------------------- samples only on failure


def solve_on_failure(programs: dict, pool, *, rounds: int = 0):
    """``--logiclm-samples K --logiclm-sample-on failure``; ``programs[None]`` is the greedy loop's."""
    engine = by_seed(programs)
    method = LogicLM(samples=len(programs) - 1, sample_on="failure")
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm", max_refine_rounds=rounds), engine, pool, method))
    return row, engine, json.loads(row.trace)


def test_on_failure_a_greedy_program_that_runs_is_the_answer_and_nothing_is_sampled(pool):
    row, engine, trace = solve_on_failure({None: WRONG, 1: RIGHT, 2: RIGHT, 3: RIGHT}, pool, rounds=1)
    assert [r.request_id for r in engine.requests] == ["p1/formulate/1"]
    assert (row.predicted, row.program) == ("A", WRONG) and "samples" not in trace


def test_on_failure_the_samples_vote_and_the_greedy_loop_is_sample_0(pool):
    row, engine, trace = solve_on_failure({None: BAD, 1: RIGHT, 2: WRONG, 3: RIGHT}, pool, rounds=1)
    # the greedy loop's requests are those of one greedy loop (a cache of it replays), then the samples'
    assert [r.request_id for r in engine.requests[:2]] == ["p1/formulate/1", "p1/refine/2"]
    assert {r.request_id for r in engine.requests[2:]} == {f"p1/formulate/1/seed{i}" for i in (1, 2, 3)}
    assert (row.predicted, row.correct, row.program) == ("B", True, RIGHT)
    assert [(s["seed"], s["counted"]) for s in trace["samples"]] == [(0, False), (1, True), (2, True), (3, True)]
    assert trace["samples"][0]["excluded"] == "not executed (syntax)"
    assert trace["vote"]["counts"] == {"B": 2, "A": 1} and trace["vote"]["samples"] == 4
    assert [a["seed"] for a in json.loads(row.attempts_log)][:2] == [0, 0]


def test_on_failure_a_greedy_loop_stuck_on_one_program_stops_before_the_samples(pool):
    # The greedy repair writes the same broken program again: round 3 would be round 2's request word
    # for word, so the greedy loop stops at round 2 of 4 (recorded in sample 0), and the samples run.
    row, engine, trace = solve_on_failure({None: BAD, 1: RIGHT, 2: WRONG, 3: RIGHT}, pool, rounds=3)
    assert [r.request_id for r in engine.requests[:2]] == ["p1/formulate/1", "p1/refine/2"]
    assert {r.request_id for r in engine.requests[2:]} == {f"p1/formulate/1/seed{i}" for i in (1, 2, 3)}
    greedy = trace["samples"][0]
    assert (greedy["rounds"], greedy["fixed_point"]) == (2, 2)
    assert [s["fixed_point"] for s in trace["samples"][1:]] == [None, None, None]
    assert (row.predicted, row.correct) == ("B", True)


# --------------------------------------------------------------------------- symbolkg view


def test_the_problem_page_shows_every_sample_and_the_vote(tmp_path, pool):
    from tests.jobs.test_view import text_of

    out = tmp_path / "runs" / "vote.parquet"
    out.parent.mkdir()
    method = LogicLM(samples=3)
    store = ResultStore(
        out, run_info={"source": "custom", "method": "logiclm", "engine": "scripted", "logiclm": method.run_info()}
    )
    engine = by_seed({1: SPLIT, 2: RIGHT, 3: RIGHT})
    asyncio.run(
        run_method_job(
            [problem()],
            store,
            MethodConfig("logiclm", max_refine_rounds=0),
            engine,
            pool,
            progress=False,
            method=method,
        )
    )
    [row] = read_run(out)[0].to_pylist()
    assert row["predicted"] == "B"
    html = problem_page(out, "p1")
    vote_line = text_of(html.split('id="vote"')[1].split("</p>")[0])
    assert "answer B : 2 of 2 counted sample(s) agree (agreement 1.0; 3 sampled)" in vote_line
    assert "seed 2's" in vote_line
    table = html.split('id="samples"')[1].split("</tbody></table>")[0]
    assert table.count('<tr id="sample-') == 3
    first = text_of(table.split('id="sample-1"')[1].split("</tr>")[0])
    assert "one_name" in first and "check errors (one_name)" in first and "fail" in first
    assert "reported" in text_of(table.split('id="sample-2"')[1].split("</tr>")[0])
    # each sample's attempt has its own anchor, and the table links to it
    assert all(f'id="attempt-s{seed}-1"' in html and f'href="#attempt-s{seed}-1"' in html for seed in (1, 2, 3))
    assert "sample 3 #1 formulate" in text_of(html)


def test_the_problem_page_says_where_a_greedy_loop_stopped_on_a_repeat(tmp_path, pool):
    from tests.jobs.test_view import text_of

    out = tmp_path / "runs" / "stuck.parquet"
    out.parent.mkdir()
    store = ResultStore(out, run_info={"source": "custom", "method": "logiclm", "engine": "scripted"})
    engine = ScriptedEngine(lambda request: BAD)  # every repair writes the same broken program back
    asyncio.run(run_method_job([problem()], store, MethodConfig("logiclm"), engine, pool, progress=False))
    [row] = read_run(out)[0].to_pylist()
    assert row["rounds"] == 2 and json.loads(row["trace"])["refine_fixed_point"] == 2
    html = problem_page(out, "p1")
    assert "The loop stopped after round 2: its program came back unchanged with the same error" in text_of(html)


def problem_page(run: Path, problem_id: str) -> str:
    """``symbolkg view``'s page of one problem of the run at ``run`` (served from its folder)."""
    from tests.jobs.test_view import Server

    server = Server([run.parent])
    try:
        status, html = server.get(f"/run/{run.stem}/problem/{problem_id}")
    finally:
        server.close()
    assert status == 200, html
    return html


def test_the_problem_page_says_what_a_cached_call_cost_the_model(tmp_path, pool):
    from tests.jobs.test_view import text_of

    cache = CompletionCache(tmp_path / "cache")
    engine = CachingEngine(ScriptedEngine(lambda request: RIGHT), cache)
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("first", "again"):  # the second run's one call is the first run's, from the cache
        store = ResultStore(runs / f"{name}.parquet", run_info={"source": "custom", "method": "logiclm"})
        asyncio.run(run_method_job([problem()], store, MethodConfig("logiclm"), engine, pool, progress=False))
    [first] = json.loads(read_run(runs / "first.parquet")[0].to_pylist()[0]["attempts_log"])
    [again] = json.loads(read_run(runs / "again.parquet")[0].to_pylist()[0]["attempts_log"])
    paid = [first["prompt_tokens"], first["completion_tokens"]]
    assert again["cached"] and again["stored_tokens"] == paid and min(paid) > 0
    line = f"0 + 0 tokens, {again['llm_seconds']} s, from cache (the model spent {paid[0]} + {paid[1]})"
    assert line in text_of(problem_page(runs / "again.parquet", "p1"))
