"""The SymbolKG stages one at a time, without a store or a solver: premises, route (jobs/methods/symbolkg_stages.py)."""

from __future__ import annotations

import asyncio

from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.methods.base import MethodConfig, MethodContext
from symbolkg.jobs.methods.symbolkg_retrieve import RetrieveOutcome
from symbolkg.jobs.methods.symbolkg_stages import SymbolKGConfig, choose_premises, route_problem
from symbolkg.retrieval.lkg.schema import Entity, Graph, Provenance

CONTEXT = "Ann is a teacher. Bob is tall. Every teacher is kind."
PROBLEM = Problem("p1", "custom", CONTEXT, "Is Ann kind?", ("A) True", "B) False", "C) Unknown"), "A")
ANN = Entity.create("Ann", provenance=(Provenance("ctx", 0),))
BOB = Entity.create("Bob", provenance=(Provenance("ctx", 1),))
GRAPH = Graph("ctx", (ANN, BOB), ())


def test_the_premises_are_the_sentences_the_kept_nodes_cite():
    premises = choose_premises(PROBLEM, GRAPH, RetrieveOutcome(pruned=(ANN.id,)))
    assert premises.context == "Ann is a teacher."
    assert premises.trace == {"source": "subgraph", "sentences": [0], "of": 3}
    assert [n.id for n in premises.sub.nodes] == [ANN.id] and premises.retrieved["kept"] == [ANN.id]


def test_a_failed_search_or_no_retrieval_formalizes_the_whole_context():
    failed = choose_premises(PROBLEM, GRAPH, RetrieveOutcome(search_error="gone"))
    assert (failed.context, failed.trace["source"]) == (CONTEXT, "whole: search failed")
    off = choose_premises(PROBLEM, GRAPH, None, retrieval=False)
    assert (off.context, off.trace["source"], off.retrieved, off.sub) == (CONTEXT, "whole: retrieval off", None, GRAPH)
    empty = choose_premises(PROBLEM, Graph("ctx"), None)
    assert empty.trace == {"source": "whole: empty LKG", "sentences": [], "of": 3}


def test_a_forced_solver_routes_without_asking_the_llm():
    engine = ScriptedEngine(lambda r: "z3")
    ctx = MethodContext(engine, None, MethodConfig(method="symbolkg"))
    premises = choose_premises(PROBLEM, GRAPH, None)
    routed = asyncio.run(route_problem(PROBLEM, ctx, SymbolKGConfig(force_solver="prover9", llm_vote=True), premises))
    assert routed.decided.solver == "prover9" and routed.vote_error is None and engine.calls == 0
    trace = routed.trace()
    assert trace["solver"] == "prover9" and trace["run_as"] == routed.target.run_as
    assert list(trace)[-3:] == ["language", "run_as", "language_reason"]
