"""`symbolkg profile` and the LLM request log (actors/engines/metered.py, jobs/inspection/profile.py).

A SymbolKG job with a scripted LLM that takes 50 ms per call (so requests of concurrent problems
overlap, as on a batching engine) and real solvers writes its rows and its request log; the
profile must account for every request and stage and draw its plots.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from symbolkg.actors.engines.metered import MeteredEngine, RequestRecord, read_request_log, write_request_log
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.cli import main as cli_main
from symbolkg.jobs.inspection.profile import distribution, format_profile, in_flight_timeline, profile_run
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.methods.symbolkg import SymbolKGMethod
from symbolkg.jobs.methods.symbolkg_stages import STAGES, SymbolKG, SymbolKGConfig
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.retrieval.lkg.store import LKGStore
from symbolkg.solvers.outcomes import Limits
from symbolkg.solvers.runtime.local_pool import LocalSolverPool
from tests.jobs.test_symbolkg import EMBEDDER, MODEL, WALK, Script, problem

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("profile")
    problems = [problem(p) for p in WALK] + [replace(problem(p), id=f"{p}-again") for p in WALK]
    engine = MeteredEngine(ScriptedEngine(Script(), model=MODEL, latency_s=0.05))
    kg = SymbolKG(LKGStore(tmp / "lkg"), EMBEDDER(), SymbolKGConfig(hops=10))
    run = tmp / "run.parquet"
    pool = LocalSolverPool(2)
    try:
        cfg = MethodConfig(method="symbolkg", limits=Limits(timeout_s=20))
        asyncio.run(
            run_method_job(problems, ResultStore(run), cfg, engine, pool, progress=False, method=SymbolKGMethod(kg))
        )
    finally:
        pool.close()
    write_request_log(run, engine.records)
    return tmp, run, engine


def test_the_request_log_holds_every_llm_call_of_the_rows(profiled):
    _, run, engine = profiled
    records = read_request_log(run)
    assert records == engine.records and len(records) > 0
    rows = read_run(run)[0].to_pylist()
    assert len(records) == sum(r["llm_calls"] for r in rows)
    assert all(r.finished >= r.submitted and r.error is None for r in records)
    assert {r.purpose for r in records} == {"lkg-extract", "query-entities", "prune", "formulate", "refine"}


def test_profile_reports_stages_waits_llm_occupancy_and_writes_plots(profiled):
    tmp, run, engine = profiled
    p = profile_run(run, tmp / "prof")
    assert p["problems"] == 6 and p["latency"]["count"] == 6 and p["problems_per_second"] > 0
    assert list(p["stages"]) == list(STAGES) and all(d["count"] == 6 for d in p["stages"].values())
    assert p["waits"]["solver_queue"]["count"] == p["waits"]["orchestrator"]["count"] == 6
    llm = p["llm"]
    assert llm["requests"] == len(engine.records) and llm["errors"] == 0 and llm["cached"] == 0
    assert 0 < llm["busy_fraction"] <= 1 and llm["max_in_flight"] > 1  # concurrent problems overlapped
    assert llm["request_latency"]["formulate"]["p50"] >= 0.05
    assert sum(p["throughput"]["finished_per_bucket"]) == 6
    for name in ("stages.png", "throughput.png", "llm.png"):
        assert (tmp / "prof" / name).read_bytes()[:8] == PNG
    assert json.loads((tmp / "prof" / "profile.json").read_text())["llm"]["requests"] == llm["requests"]
    text = format_profile(p)
    assert "end to end" in text and "solver queue" in text and "LLM:" in text and "formulate" in text


def test_profile_cli(profiled, capsys, tmp_path):
    _, run, _ = profiled
    assert cli_main(["profile", str(run), "--out", str(tmp_path / "p"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["problems"] == 6
    assert cli_main(["profile", str(tmp_path / "missing.parquet"), "--out", str(tmp_path / "q")]) == 2
    assert "no results" in capsys.readouterr().err


def test_in_flight_timeline_on_hand_made_intervals():
    recs = [
        RequestRecord("a", "p", "x", 0.0, 2.0, completion_tokens=10),
        RequestRecord("b", "p", "x", 1.0, 3.0, completion_tokens=20),
        RequestRecord("c", "q", "x", 5.0, 6.0, completion_tokens=30),
    ]
    times, occupancy, tokens, busy = in_flight_timeline(recs, 0.0, 1.0)
    assert times == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert occupancy == [1.0, 2.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    assert busy == pytest.approx(4 / 6) and sum(tokens) == 60
    assert in_flight_timeline([], 0.0, 1.0) == ([], [], [], 0.0)


def test_distribution():
    d = distribution([1.0, 2.0, 3.0, 4.0])
    assert (d["count"], d["mean"], d["p50"], d["max"]) == (4, 2.5, 2.5, 4.0)
    assert distribution([])["count"] == 0


def test_a_failed_request_is_logged_with_its_error():
    from symbolkg.actors.engines.base import ChatRequest, EngineError, Message

    def fail(_):
        raise EngineError("boom")

    engine = MeteredEngine(ScriptedEngine(fail))
    with pytest.raises(EngineError):
        asyncio.run(engine.generate([ChatRequest((Message("user", "hi"),), problem_id="p", purpose="answer")]))
    assert engine.records[0].error.endswith("boom") and engine.records[0].problem_id == "p"


def test_profile_reports_stage_gate_waits_and_plots_queue_depth(profiled, tmp_path):
    tmp, run, engine = profiled
    from symbolkg.jobs.pipeline.gates import read_gate_log

    events = read_gate_log(run)
    p = profile_run(run, tmp_path / "prof")
    gates = p["gates"]
    assert set(gates) == {"llm", "solve"}
    assert gates["llm"]["passes"] == gates["llm"]["wait"]["count"] == len(engine.records)  # one pass per request
    assert gates["llm"]["limit"] is None and gates["llm"]["waited"] == 0  # unlimited by default: nobody waits
    assert (
        gates["solve"]["limit"] == 4
        and gates["solve"]["passes"] == sum(e.stage == "solve" and e.event == "enter" for e in events) > 0
    )
    assert gates["solve"]["peak_running"] <= 4 and gates["llm"]["peak_running"] > 1
    assert (tmp_path / "prof" / "gates.png").read_bytes()[:8] == PNG and "gates.png" in p["plots"]
    assert "llm gate" in format_profile(p) and "solve: limit 4" in format_profile(p)


def test_profile_of_a_run_without_a_gate_log(profiled, tmp_path):
    import shutil

    _, run, _ = profiled
    old = tmp_path / "old.parquet"
    shutil.copy(run, old)  # the finished results alone, as runs before the gate log
    p = profile_run(old, tmp_path / "prof")
    assert "gates" not in p and p["problems"] == 6 and not (tmp_path / "prof" / "gates.png").exists()
    assert "stage gates" not in format_profile(p)
