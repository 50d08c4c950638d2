"""``--method prolog-agent``: the formalizer loop through a real MCP client, server and swipl sessions.

The ``pararule-template`` engine stands in for a model that formalizes perfectly, so a slice of
each depth must come out 100% correct through the whole loop (engine -> agent -> MCP client ->
in-process server -> Prolog session); the scripted engine plays a model that first gets it wrong,
to check the repair loop (the tool's error reaches the next prompt) and the attempt cap. One test
spawns the server over stdio; every 50th question of the three depths is ``slow`` (all 8,106:
benchmarks/prolog_agent.py, numbers in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import asyncio
import json
import time

import pyarrow.parquet as pq
import pytest

from symbolkg.actors.engines.pararule_template import PararuleTemplateEngine
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.records import TRUE_FALSE_OPTIONS
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.methods.prolog_agent import PrologAgent, PrologAgentConfig
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore
from symbolkg.solvers.prolog import pararule as P
from tests.conftest import DATA

pytestmark = pytest.mark.timeout(300)
CFG = MethodConfig(method="prolog-agent")
HAVE_DATA = all((DATA / "pararule_plus" / f"PARARULE_Plus_Depth{d}_shuffled_test.jsonl").exists() for d in (2, 3, 4))
needs_data = pytest.mark.skipif(not HAVE_DATA, reason=f"PARARULE-Plus not found under {DATA}")

CONTEXT = "Anne is big. If someone is big then they are rough. If someone is not rough then they are smart."


def problem(pid: str, question: str, answer: str, context: str = CONTEXT) -> Problem:
    return Problem(
        id=pid,
        dataset="custom",
        context=context,
        question=question,
        options=TRUE_FALSE_OPTIONS,
        answer=answer,
        meta={"context_id": "c1"},
    )


def run_job(problems, engine, out, config: PrologAgentConfig | None = None, in_flight: int = 16):
    method = PrologAgent(config or PrologAgentConfig())
    summary = asyncio.run(
        run_method_job(
            problems, ResultStore(out), CFG, engine, None, max_in_flight=in_flight, progress=False, method=method
        )
    )
    return summary, method, pq.read_table(out).to_pylist()


def good_answer(question: str, context: str = CONTEXT) -> str:
    t = P.translate(context, question)
    return P.render_response(t.program, t.goal)


# -- the template engine ---------------------------------------------------------------------------------


def test_the_template_engine_answers_formalization_requests_only():
    from symbolkg.actors.engines.base import ChatRequest, EngineError, Message
    from symbolkg.actors.engines.factory import EngineOptions, make_engine

    engine = make_engine(EngineOptions(kind="pararule-template"))
    assert isinstance(engine, PararuleTemplateEngine)
    pairs = P.formalize_messages(CONTEXT, "Anne is not smart.")
    request = ChatRequest(tuple(Message(r, c) for r, c in pairs), problem_id="p1", purpose="formalize")
    [completion] = asyncio.run(engine.generate([request]))
    form = P.parse_response(completion.text)
    assert form.goal == "\\+ smart(anne)" and "initially(big, anne)." in form.program
    assert completion.prompt_tokens == completion.completion_tokens == 0
    with pytest.raises(EngineError, match="CONTEXT"):
        asyncio.run(engine.generate([ChatRequest((Message("user", "What is 2 + 2?"),))]))
    odd = P.formalize_messages("Anne may be kind.", "Anne is kind.")
    with pytest.raises(EngineError, match="may be kind"):
        asyncio.run(engine.generate([ChatRequest(tuple(Message(r, c) for r, c in odd))]))


# -- the template engine through the MCP server (stdio) -------------------------------------------------


@needs_data
def test_a_slice_of_each_depth_is_all_correct_and_a_rerun_resumes(tmp_path):
    problems = [p for d in (2, 3, 4) for p in load_dataset(f"pararule_plus/depth{d}", limit=20).problems]
    out = tmp_path / "run.parquet"
    summary, method, rows = run_job(problems, PararuleTemplateEngine(), out)
    assert summary.solved == 60 and len(rows) == 60
    assert all(r["correct"] for r in rows), [(r["problem_id"], r["error_message"]) for r in rows if not r["correct"]]
    for row in rows:
        trace = json.loads(row["trace"])
        attempts = json.loads(row["attempts_log"])
        assert row["method"] == "prolog-agent" and row["language"] == "prolog" and row["backend"] == "swipl-mcp"
        assert row["rounds"] == row["success_round"] == 1 and len(attempts) == 1
        assert "initially(" in row["program"] and attempts[0]["goal"] and attempts[0]["stage"] == "goal"
        tools = [c["tool"] for c in trace["mcp_calls"]]
        assert "run_goal" in tools and all(c["ok"] for c in trace["mcp_calls"])
        assert trace["mcp_transport"] == "stdio" and trace["sldnf_closure"] in ("same", "different")
        assert row["llm_calls"] == 1 and row["predicted"] in ("A", "B")
    # the questions of a context share one consulted program (and one for the SLDNF variant)
    contexts = {p.meta["context_id"] for p in problems}
    assert method.stats["consults"] == 2 * len(contexts)
    assert method.stats["reused"] == 2 * (60 - len(contexts))

    again, _, rows2 = run_job(problems, PararuleTemplateEngine(), out)
    assert (again.solved, again.skipped_done) == (0, 60)
    assert len(rows2) == 60 and len({r["problem_id"] for r in rows2}) == 60


def test_sessions_are_closed_when_unused_and_each_attempt_can_have_its_own(tmp_path):
    problems = [problem("p1", "Anne is smart.", "A"), problem("p2", "Anne is not rough.", "B")]
    _, method, rows = run_job(
        problems,
        PararuleTemplateEngine(),
        tmp_path / "a.parquet",
        PrologAgentConfig(idle_sessions=0, sldnf=False),
        in_flight=1,
    )
    tools = [c["tool"] for r in rows for c in json.loads(r["trace"])["mcp_calls"]]
    assert tools.count("consult_text") == tools.count("close_session") == 2  # one program, consulted per question
    assert all(r["correct"] for r in rows) and all(json.loads(r["trace"])["sldnf_closure"] is None for r in rows)

    _, method, rows = run_job(
        problems, PararuleTemplateEngine(), tmp_path / "b.parquet", PrologAgentConfig(reuse_sessions=False, sldnf=False)
    )
    assert method.stats == {"consults": 2, "reused": 0}
    assert all(r["correct"] for r in rows)


def test_the_sldnf_comparison_tells_different_and_loops(tmp_path):
    loop_ctx = "The bear is tired. If something is big then it is heavy. If something is heavy then it is big."
    problems = [
        problem("diff", "Anne is smart.", "A"),  # plain SLDNF: rough is derived, so not smart
        problem("same", "Anne is rough.", "A"),
        problem("loop", "The bear is not big.", "A", loop_ctx),
    ]
    t0 = time.monotonic()
    _, _, rows = run_job(problems, PararuleTemplateEngine(), tmp_path / "s.parquet")
    by_id = {r["problem_id"]: r for r in rows}
    assert all(r["correct"] for r in rows)
    assert {k: json.loads(r["trace"])["sldnf_closure"] for k, r in by_id.items()} == {
        "diff": "different",
        "same": "same",
        "loop": "loops",
    }
    assert time.monotonic() - t0 < 30  # the loop is cut by the inference budget, not a long time limit


# -- the repair loop with a scripted model ---------------------------------------------------------------


def test_a_broken_program_then_a_good_one_and_the_error_reaches_the_second_prompt(tmp_path):
    broken = "<prolog>\nbig(anne.\nrough(X) :- big(X).\n</prolog>\n<goal_true>rough(anne)</goal_true>"
    bad_goal = "<prolog>\nbig(anne).\n</prolog>\n<goal_true>smart(anne</goal_true>"
    no_tags = "I think Anne is rough."
    engine = ScriptedEngine(
        {"p1": [broken, good_answer("Anne is rough.")], "p2": [bad_goal, no_tags, good_answer("Anne is smart.")]}
    )
    _, _, rows = run_job(
        [problem("p1", "Anne is rough.", "A"), problem("p2", "Anne is smart.", "A")], engine, tmp_path / "r.parquet"
    )
    by_id = {r["problem_id"]: r for r in rows}
    p1, p2 = by_id["p1"], by_id["p2"]
    assert p1["correct"] and p1["rounds"] == p1["success_round"] == 2 and p1["llm_calls"] == 2
    first = json.loads(p1["attempts_log"])[0]
    assert first["stage"] == "consult" and first["error"]["kind"] == "syntax_error"
    second_prompt = [r for r in engine.requests if r.problem_id == "p1"][1]
    assert second_prompt.purpose == "repair"
    assert [m.role for m in second_prompt.messages] == ["system", "user", "assistant", "user"]
    assert second_prompt.messages[2].content == broken and "syntax_error" in second_prompt.messages[3].content

    assert p2["correct"] and p2["rounds"] == 3
    log = json.loads(p2["attempts_log"])
    assert log[0]["stage"] == "goal" and log[0]["error"]["kind"] == "syntax_error"
    assert log[1]["stage"] == "format" and "no <prolog>" in log[1]["error"]["message"]
    third_prompt = [r for r in engine.requests if r.problem_id == "p2"][2]
    assert "no <prolog>" in third_prompt.messages[-1].content


def test_an_unknown_predicate_in_the_goal_is_an_existence_error_sent_back(tmp_path):
    undefined = "<prolog>\nbig(anne).\n</prolog>\n<goal_true>rough(anne)</goal_true>"
    engine = ScriptedEngine({"p1": [undefined, good_answer("Anne is rough.")]})
    _, _, rows = run_job([problem("p1", "Anne is rough.", "A")], engine, tmp_path / "e.parquet")
    log = json.loads(rows[0]["attempts_log"])
    assert rows[0]["correct"] and log[0]["error"]["kind"] == "existence_error"
    assert "existence_error" in engine.requests[1].messages[-1].content


def test_attempts_are_capped(tmp_path):
    asked: list[int] = []

    def broken(request):  # a new broken program each attempt (a fact more each time), so none repeats one
        asked.append(1)
        facts = "".join(f"small(b{i}).\n" for i in range(len(asked)))
        return f"<prolog>\n{facts}big(anne.\n</prolog>\n<goal_true>big(anne)</goal_true>"

    engine = ScriptedEngine(broken)
    _, _, rows = run_job([problem("p1", "Anne is big.", "A")], engine, tmp_path / "c.parquet")
    row = rows[0]
    assert len(engine.requests) == 5 and row["rounds"] == 5 and row["llm_calls"] == 5
    assert row["predicted"] is None and not row["correct"] and row["success_round"] is None
    assert row["status"] == "parse_error" and "syntax_error" in row["error_message"]
    assert "refine_fixed_point" not in json.loads(row["trace"])

    engine = ScriptedEngine(lambda request: "no tags")
    _, _, rows = run_job(
        [problem("p1", "Anne is big.", "A")], engine, tmp_path / "d.parquet", PrologAgentConfig(max_attempts=2)
    )
    assert len(engine.requests) == 2 and rows[0]["rounds"] == 2 and rows[0]["predicted"] is None


def test_an_answer_written_back_unchanged_ends_the_attempts(tmp_path):
    # Attempt 2 writes attempt 1's answer again, and it fails the same way: attempt 3 would be
    # attempt 2's request word for word, which greedy decoding answers the same way.
    engine = ScriptedEngine(lambda request: "<prolog>\nbig(anne.\n</prolog>\n<goal_true>big(anne)</goal_true>")
    _, _, rows = run_job([problem("p1", "Anne is big.", "A")], engine, tmp_path / "f.parquet")
    row = rows[0]
    assert len(engine.requests) == 2 and row["rounds"] == 2 and row["llm_calls"] == 2
    assert engine.requests[0].messages != engine.requests[1].messages  # attempt 2 was a real repair
    assert json.loads(row["trace"])["refine_fixed_point"] == 2
    assert row["status"] == "parse_error" and "syntax_error" in row["error_message"] and row["predicted"] is None


def test_config_is_validated():
    with pytest.raises(TypeError, match="transport"):  # the in-process server is gone: a method is a client
        PrologAgentConfig(transport="inprocess")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="max-attempts"):
        PrologAgentConfig(max_attempts=0)


# -- stdio -----------------------------------------------------------------------------------------------


def test_the_server_is_a_child_process_and_ends_with_the_job(tmp_path):
    problems = [
        problem("p1", "Anne is smart.", "A"),
        problem("p2", "Anne is not rough.", "B"),
        problem("p3", "Anne is not smart.", "B"),
    ]
    _, method, rows = run_job(problems, PararuleTemplateEngine(), tmp_path / "io.parquet", PrologAgentConfig())
    assert all(r["correct"] for r in rows) and len(rows) == 3
    assert {json.loads(r["trace"])["mcp_transport"] for r in rows} == {"stdio"}
    assert method._connection is not None and not method._connection._thread.is_alive()  # closed with the job


# -- the CLI ---------------------------------------------------------------------------------------------


@needs_data
def test_symbolkg_solve_with_the_template_engine(tmp_path, capsys):
    from symbolkg.jobs.cli import main

    out = tmp_path / "cli.parquet"
    assert (
        main(
            [
                "solve",
                "--method",
                "prolog-agent",
                "--engine",
                "pararule-template",
                "--dataset",
                "pararule_plus/depth3",
                "--limit",
                "12",
                "--out",
                str(out),
                "--no-progress",
                "--prolog-agent-max-attempts",
                "3",
                "--executor",
                "local",
                "--workers",
                "1",
            ]
        )
        == 0
    )
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == 12 and all(r["correct"] for r in rows)
    # the CLI gives the agent a solver pool: SymBa re-derives each SWI-Prolog verdict for a certificate
    for row in rows:
        assert row["program"].rstrip().splitlines()[-1].startswith("?- ")  # what ran: the goal too
        assert json.loads(row["trace"])["rederived"]["answer"] == row["answer"] and row["certificate"]
    capsys.readouterr()
    assert main(["verify", str(out), "--json", "--executor", "local", "--workers", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["answered"], summary["verified"], summary["by_checker"]) == (12, 12, {"bottom-up-evaluator": 12})


def test_a_verdict_symba_cannot_read_keeps_its_answer_without_a_certificate(tmp_path):
    from symbolkg.solvers.runtime.local_pool import LocalSolverPool

    cut = "rough(X) :- big(X), !.\nbig(anne).\n"  # a cut: SWI-Prolog runs it, SymBa's language has none
    engine = ScriptedEngine(lambda request: P.render_response(cut, "rough(anne)"))
    with LocalSolverPool(1) as pool:
        asyncio.run(
            run_method_job(
                [problem("p1", "Anne is rough.", "A")],
                ResultStore(tmp_path / "r.parquet"),
                CFG,
                engine,
                pool,
                progress=False,
                method=PrologAgent(PrologAgentConfig(sldnf=False)),
            )
        )
    [row] = pq.read_table(tmp_path / "r.parquet").to_pylist()
    rederived = json.loads(row["trace"])["rederived"]
    assert row["correct"] and row["certificate"] is None
    assert rederived["status"] == "parse_error" and rederived["reason"]


# -- across the dataset ----------------------------------------------------------------------------------

STRIDE = 50  # every 50th question of each depth (164 of 8,106); benchmarks/prolog_agent.py runs all of them


@pytest.mark.slow
@needs_data
def test_the_template_engine_is_right_across_depths_2_to_4(tmp_path):
    problems = [p for d in (2, 3, 4) for p in load_dataset(f"pararule_plus/depth{d}").problems[::STRIDE]]
    assert len(problems) == sum(-(-n // STRIDE) for n in (2708, 2694, 2704))
    _, _, rows = run_job(problems, PararuleTemplateEngine(), tmp_path / "all.parquet", in_flight=32)
    assert len(rows) == len(problems)
    wrong = [(r["problem_id"], r["error_message"]) for r in rows if not r["correct"]]
    assert not wrong, wrong[:5]
    assert all(r["rounds"] == 1 for r in rows)
