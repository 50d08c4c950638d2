"""Router evaluation on the real mixed stream, with and without LKG features."""

from __future__ import annotations

import json

import pytest

from symbolkg.jobs.cli import main
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.jobs.evaluations.router import ROUTER_GROUND_TRUTH, evaluate_router, mixed_stream
from symbolkg.retrieval.lkg.schema import Constraint, ContextRecord, Edge, Entity, Graph, Rule, graph_counts
from symbolkg.retrieval.lkg.store import LKGStore
from tests.conftest import data_or_skip


def test_stream_interleaves_datasets():
    data_or_skip("logiclm")
    stream = mixed_stream(2)
    assert [k for k, _ in stream] == list(ROUTER_GROUND_TRUTH) * 2
    assert len({p.id for _, p in stream}) == 10


def test_cli_json_keys_and_accuracy(capsys):
    data_or_skip("logiclm")
    assert main(["router-eval", "--per-dataset", "20", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(ROUTER_GROUND_TRUTH) | {"overall"} <= set(report)
    assert all(0.0 <= report[k] <= 1.0 for k in [*ROUTER_GROUND_TRUTH, "overall"])
    assert report["overall"] >= 0.86 and report["problems"]["folio"] == 20 and report["with_lkg"] == 0
    assert main(["router-eval", "--per-dataset", "20", "--no-option-features"]) == 0
    assert "answer-option features off" in capsys.readouterr().out
    assert main(["router-eval", "--per-dataset", "0"]) == 2


def test_lkg_features_are_used_when_the_store_has_the_graph(tmp_path, capsys):
    data_or_skip("logiclm")
    stream = mixed_stream(1)
    prontoqa = next(p for k, p in stream if k == "prontoqa")
    # a (wrong) graph claiming ordering constraints: the LKG rule fires before the option rules
    a, b = Entity.create("Alex"), Entity.create("Sam")
    graph = Graph(
        "k",
        (
            a,
            b,
            Constraint.create("Alex < Sam", "Ordering"),
            Constraint.create("Sam < Kim", "Ordering"),
            Rule.create("r(x) -> s(x)"),
        ),
        (Edge(a.id, b.id, "LEFT_OF"),),
    )
    assert graph_counts(graph) == ({"Ordering": 2}, 1, 1)
    store = LKGStore(tmp_path / "lkg")
    store.put(ContextRecord("k", problem_ids=(prontoqa.id,)), graph)
    store.flush()
    report, routed = evaluate_router(stream, store)
    assert report.with_graph == 1 and report.accuracy["prontoqa"] == 0.0
    route = next(r for k, p, r in routed if p.id == prontoqa.id)
    assert route.rule == "lkg_constraints" and "Ordering x2" in route.reasons[0]
    assert main(["router-eval", "--per-dataset", "1", "--store", str(tmp_path / "lkg"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["with_lkg"] == 1
    assert main(["router-eval", "--store", str(tmp_path / "nothing")]) == 2


@pytest.mark.parametrize("key", list(ROUTER_GROUND_TRUTH))
def test_each_dataset_routes_to_its_solver(key):
    data_or_skip("logiclm")
    name, solver = ROUTER_GROUND_TRUTH[key]
    report, _ = evaluate_router([(key, p) for p in load_dataset(name, limit=30).problems])
    assert report.accuracy[key] >= 0.95, (key, solver, report.rules)


def test_llm_votes_with_a_scripted_engine():
    import asyncio

    from symbolkg.actors.engines.base import EngineError
    from symbolkg.actors.engines.scripted import ScriptedEngine
    from symbolkg.jobs.evaluations.router import llm_votes

    data_or_skip("logiclm")
    stream = mixed_stream(1)
    answers = {
        "prontoqa": "prolog",
        "proofwriter": "vampire",
        "folio": EngineError("busy"),
        "logicaldeduction": "z3",
        "ar-lsat": "prover9",
    }
    key_of = {p.id: k for k, p in stream}
    engine = ScriptedEngine(lambda r: answers[key_of[r.problem_id]])
    votes = asyncio.run(llm_votes(engine, [p for _, p in stream]))
    assert [votes[p.id] for _, p in stream] == ["prolog", None, None, "z3", "prover9"]
    report, routed = evaluate_router(stream, votes=votes)
    assert report.llm_vote and report.overall == 1.0  # strong feature rules keep their choice
    assert routed[-1][2].reasons[-1] == "LLM vote: prover9"
