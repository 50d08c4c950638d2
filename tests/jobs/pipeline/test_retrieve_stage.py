"""The retrieve stage with a scripted LLM: query entities, pruning, and every fallback."""

from __future__ import annotations

import asyncio
import json

import pytest

from symbolkg.actors.engines.base import EngineDeadError, EngineError
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.methods.symbolkg_retrieve import retrieve
from symbolkg.retrieval.anchors import AnchorConfig
from symbolkg.retrieval.embed import HashingEmbedder
from symbolkg.retrieval.hybrid import HybridRetriever
from symbolkg.retrieval.lkg.schema import Concept, Edge, Entity, Graph, Rule
from symbolkg.retrieval.prune import PruneConfig

ANN, BOB, TEACHER = Entity.create("Ann"), Entity.create("Bob"), Concept.create("teacher")
KIND = Rule.create("teacher(x) -> kind(x)", "every teacher is kind")
TALL = Rule.create("tall(Bob)", "Bob is tall")
GRAPH = Graph(
    "ctx",
    (ANN, BOB, TEACHER, KIND, TALL),
    (Edge(ANN.id, TEACHER.id, "IS_A"), Edge(KIND.id, TEACHER.id, "APPLIES_TO"), Edge(TALL.id, BOB.id, "MENTIONS")),
)
QUESTION = "Is the teacher Ann kind?"


@pytest.fixture(scope="module")
def retriever() -> HybridRetriever:
    return HybridRetriever.from_graphs([GRAPH], HashingEmbedder(), anchor_config=AnchorConfig(dense_threshold=0.99))


def script(entities: object, keep: object):
    """Answers by purpose; an exception instance is raised by the engine."""

    def answer(request):
        value = entities if request.purpose == "query-entities" else keep
        return value if isinstance(value, (str, BaseException)) else json.dumps(value)

    return answer


def run(engine, retriever, **kw):
    return asyncio.run(retrieve(engine, retriever, GRAPH, QUESTION, problem_id="p1", **kw))


def test_llm_entities_and_pruning(retriever):
    engine = ScriptedEngine(script({"entities": ["Ann", "Zed"]}, {"keep": ["N1", "N3"]}))
    out = run(engine, retriever)
    assert out.entities == ("Ann",) and out.entities_source == "llm"  # "Zed" is not in the question
    assert out.anchors[0] == ANN.id
    assert out.hull[:3] == (ANN.id, TEACHER.id, KIND.id) and TALL.id not in out.hull
    assert out.prune_source == "llm" and out.pruned == (out.hull[0], out.hull[2])
    assert out.errors == [] and out.llm.prompt_tokens > 0 and out.llm.completion_tokens > 0
    assert set(out.seconds) == {"entities", "retrieve", "prune"}


def test_structured_schemas_are_sent_when_the_engine_enforces_them(retriever):
    seen = []

    def answer(request):
        seen.append((request.purpose, request.structured.json_schema if request.structured else None))
        return script({"entities": ["Ann"]}, {"keep": ["N1"]})(request)

    run(ScriptedEngine(answer, supports_structured=True), retriever)
    assert seen[0][0] == "query-entities" and "entities" in seen[0][1]["properties"]
    assert seen[1][0] == "prune" and seen[1][1]["properties"]["keep"]["items"]["enum"][0] == "N1"
    seen.clear()
    run(ScriptedEngine(answer), retriever)  # no structured decoding: plain requests, parsed all the same
    assert [schema for _, schema in seen] == [None, None]


@pytest.mark.parametrize(
    "entities, error",
    [
        (EngineError("overloaded"), "engine error"),
        ("Ann and Bob", "unusable output"),
        ({"entities": []}, None),
    ],
)
def test_entity_failures_fall_back_to_lexical(retriever, entities, error):
    out = run(ScriptedEngine(script(entities, {"keep": ["N1"]})), retriever)
    assert out.entities_source == "lexical-fallback" and out.entities == ("Ann",)
    assert (error is None and out.errors == []) or error in out.errors[0]
    assert out.prune_source == "llm"


@pytest.mark.parametrize(
    "keep, error",
    [
        (EngineError("timeout"), "engine error"),
        ("N1 N2", "not JSON"),
        ({"keep": ["N99"]}, "keeps no known node"),
    ],
)
def test_prune_failures_fall_back_to_the_hull(retriever, keep, error):
    out = run(ScriptedEngine(script({"entities": ["Ann"]}, keep)), retriever)
    assert out.prune_source == "fallback" and out.pruned == out.hull
    assert error in out.errors[-1]


def test_no_pruning_switch_and_no_engine(retriever):
    engine = ScriptedEngine(script({"entities": ["Ann"]}, AssertionError("pruning must not be asked")))
    out = run(engine, retriever, prune=PruneConfig(enabled=False, max_shown=2))
    assert out.prune_source == "disabled" and out.pruned == out.hull[:2]
    offline = run(None, retriever)
    assert (
        offline.entities_source == "lexical" and offline.prune_source == "disabled" and offline.llm.prompt_tokens == 0
    )
    lexical = run(engine, retriever, llm_entities=False, prune=PruneConfig(enabled=False))
    assert lexical.entities_source == "lexical"


def test_a_dead_engine_is_not_swallowed(retriever):
    with pytest.raises(EngineDeadError):
        run(ScriptedEngine(script(EngineDeadError("gone"), {"keep": ["N1"]})), retriever)


def test_an_empty_hull_is_not_sent_for_pruning():
    lonely = HybridRetriever.from_graphs([Graph("empty")], HashingEmbedder())
    engine = ScriptedEngine(script({"entities": ["Ann"]}, AssertionError("nothing to prune")))
    out = asyncio.run(retrieve(engine, lonely, Graph("empty"), QUESTION, problem_id="p1"))
    assert out.hull == () and out.pruned == () and out.prune_source == "empty"
