"""The retrieve stage's steps one at a time: query entities, the search, the pruning.

(jobs/methods/symbolkg_retrieve.py)
"""

from __future__ import annotations

import asyncio

from symbolkg.actors.engines.base import EngineError
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.actors.retrieval_actor import RetrievalError
from symbolkg.jobs.methods.symbolkg_retrieve import (
    RetrieveOutcome,
    StageLLM,
    find_query_entities,
    prune_hull,
    search_anchors,
)
from symbolkg.retrieval.lkg.schema import Entity, Graph
from symbolkg.retrieval.prune import PruneConfig

ANN = Entity.create("Ann")
GRAPH = Graph("ctx", (ANN,), ())


def test_a_failed_entity_request_falls_back_to_the_lexical_entities_and_is_counted():
    out = RetrieveOutcome()
    llm = StageLLM(ScriptedEngine(lambda r: EngineError("down")), "p1", 64)
    entities = asyncio.run(find_query_entities(llm, "Is Ann kind?", out))
    assert entities == out.entities and "Ann" in entities
    assert out.entities_source == "lexical-fallback" and out.errors == ["query-entities: engine error: down"]
    assert (out.llm.calls, out.llm.prompt_tokens) == (1, 0)


def test_without_an_llm_the_entities_are_lexical_and_nothing_is_asked():
    out = RetrieveOutcome()
    asyncio.run(find_query_entities(None, "Is Ann kind?", out))
    assert out.entities_source == "lexical" and out.llm.calls == 0


def test_a_failed_search_leaves_no_anchors_and_says_why():
    async def search(question, entities):
        raise RetrievalError("index actor died")

    out = RetrieveOutcome()
    asyncio.run(search_anchors(search, "Is Ann kind?", ["Ann"], out))
    assert (out.anchors, out.hull, out.search_error) == ((), (), "index actor died")
    assert out.errors == ["search: index actor died"]


def test_an_empty_hull_is_not_sent_to_the_llm():
    engine = ScriptedEngine(lambda r: '{"keep": []}')
    out = RetrieveOutcome()
    asyncio.run(prune_hull(StageLLM(engine, "p1"), GRAPH, "Is Ann kind?", PruneConfig(), out))
    assert (out.prune_source, out.pruned, engine.calls) == ("empty", (), 0)


def test_an_unusable_pruning_answer_keeps_the_hull():
    out = RetrieveOutcome(hull=(ANN.id,))
    llm = StageLLM(ScriptedEngine(lambda r: "not json"), "p1")
    asyncio.run(prune_hull(llm, GRAPH, "Is Ann kind?", PruneConfig(), out))
    assert (out.prune_source, out.pruned) == ("fallback", (ANN.id,))
    assert out.errors and out.errors[0].startswith("prune: ") and out.llm.calls == 1
