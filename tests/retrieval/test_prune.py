"""Pruning prompt, schema and parsing."""

from __future__ import annotations

import json

import pytest

from symbolkg.retrieval.lkg.schema import Constraint, Entity, Rule
from symbolkg.retrieval.prune import PruneConfig, PrunePrompt, parse_pruned, unpruned

NODES = [
    Entity.create("Ann"),
    Rule.create("teacher(x) -> kind(x)", "every teacher is kind"),
    Constraint.create("Ann left_of Bob", "Ordering", relation="left_of"),
    Entity.create("Bob"),
    Rule.create("x" * 500),
]


def test_prompt_shows_nodes_under_handles_in_hull_order():
    prompt = PrunePrompt.build("Is Ann kind?", NODES, PruneConfig(cap=2, max_shown=4, max_node_chars=80))
    assert prompt.handles == ("N1", "N2", "N3", "N4")
    assert prompt.node_ids == tuple(n.id for n in NODES[:4])  # the 5th is not shown
    user = prompt.messages[1][1]
    assert "N2 [Rule] teacher(x) -> kind(x). every teacher is kind" in user
    assert "N3 [Constraint] Ann left_of Bob" in user and "N5" not in user
    keep = prompt.schema["properties"]["keep"]
    assert keep["items"]["enum"] == ["N1", "N2", "N3", "N4"] and keep["maxItems"] == 2
    json.dumps(prompt.schema)  # serializable for the engines


def test_long_node_texts_are_cut():
    prompt = PrunePrompt.build("q", NODES[4:], PruneConfig(max_node_chars=40))
    line = prompt.messages[1][1].splitlines()[-1]
    assert line.endswith("...") and len(line) < 60


def test_parse_maps_handles_back_drops_unknown_and_duplicates():
    prompt = PrunePrompt.build("Is Ann kind?", NODES[:4])
    result = parse_pruned('{"keep": ["N3", "N1", "N3", "N42", 5]}', prompt)
    assert result.ok and result.kept == (NODES[0].id, NODES[2].id)  # prompt order
    assert result.unknown == ("N42", "5") and not result.over_cap


def test_parse_enforces_the_cap():
    prompt = PrunePrompt.build("q", NODES[:4], PruneConfig(cap=2))
    result = parse_pruned('{"keep": ["N4", "N3", "N1"]}', prompt)
    assert result.over_cap and result.kept == (NODES[2].id, NODES[3].id)  # the first two listed, in prompt order


@pytest.mark.parametrize(
    "text, error",
    [
        ("N1, N2", "not JSON"),
        ('{"nodes": ["N1"]}', "expected an object"),
        ('{"keep": []}', "keeps no known node"),
        ('{"keep": ["N9"]}', "keeps no known node"),
        (None, "not JSON"),
    ],
)
def test_unusable_answers_are_errors(text, error):
    result = parse_pruned(text, PrunePrompt.build("q", NODES[:2]))
    assert not result.ok and error in result.error and result.kept == ()


def test_unpruned_is_the_hull_cut_to_max_shown():
    ids = [n.id for n in NODES]
    assert unpruned(ids).kept == tuple(ids)
    assert unpruned(ids, PruneConfig(max_shown=2)).kept == tuple(ids[:2])


def test_config_is_checked():
    with pytest.raises(ValueError):
        PruneConfig(cap=0)


def _keys(schema) -> set[str]:
    if isinstance(schema, dict):
        return set(schema) | {k for v in schema.values() for k in _keys(v)}
    if isinstance(schema, list):
        return {k for v in schema for k in _keys(v)}
    return set()


def test_structured_output_schemas_use_no_key_vllm_rejects():
    """vLLM's grammar backend fails a request whose JSON schema uses ``uniqueItems`` (found by the
    real-engine SymbolKG run: every pruning request failed and fell back to the hull)."""
    from symbolkg.retrieval.anchors import QUERY_ENTITY_SCHEMA
    from symbolkg.retrieval.lkg.extract import chunk_schema

    schemas = [
        PrunePrompt.build("q", NODES, PruneConfig()).schema,
        QUERY_ENTITY_SCHEMA,
        chunk_schema(["Ann is kind.", "Bob is tall."]),
    ]
    for schema in schemas:
        assert "uniqueItems" not in _keys(schema)
