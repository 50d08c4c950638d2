"""Anchors: lexical and LLM query entities, entity-name matching, dense hits, their union."""

from __future__ import annotations

import numpy as np
import pytest

from symbolkg.retrieval.anchors import (
    QUERY_ENTITY_SCHEMA,
    Anchor,
    AnchorConfig,
    NameIndex,
    dense_anchors,
    lexical_query_entities,
    merge_anchors,
    parse_query_entities,
    query_entity_messages,
)
from symbolkg.retrieval.index import VectorIndex


@pytest.mark.parametrize(
    "question, expected",
    [
        ('Who directed the film "Big Stone Gap" set in Virginia?', ["Big Stone Gap", "Virginia"]),
        (
            "Which magazine was started first, Arthur's Magazine or First for Women?",
            ["Arthur's Magazine", "First for Women"],
        ),
        ("Who was born first, Charles de Gaulle or the King of Sweden?", ["Charles de Gaulle", "King of Sweden"]),
        ("Is the following statement true, false, or unknown? Max is not a yumpus.", ["Max"]),
        ("Is every wumpus a tumpus?", ["every", "wumpus", "tumpus"]),  # no names: content words
        ("", []),
    ],
)
def test_lexical_query_entities(question, expected):
    assert lexical_query_entities(question) == expected


def test_lexical_query_entities_dedupes_and_caps():
    assert lexical_query_entities("Ann met ann and Bob, then Carl, Dora, Eve", max_entities=3) == ["Ann", "Bob", "Carl"]


def test_parse_query_entities_keeps_only_what_the_question_says():
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    assert parse_query_entities(
        '{"entities": ["Ed Wood", "ed  wood", "Tim Burton", 7, "Scott Derrickson"]}', question
    ) == ["Ed Wood", "Scott Derrickson"]
    assert parse_query_entities('{"entities": []}', question) == []
    assert parse_query_entities("Ed Wood, Scott Derrickson", question) is None
    assert parse_query_entities('{"names": ["Ed Wood"]}', question) is None
    assert parse_query_entities('["Ed Wood"]', question) is None


def test_query_entity_prompt_and_schema():
    messages = query_entity_messages("Is Ann kind?")
    assert messages[0][0] == "system" and messages[-1] == ("user", "Question: Is Ann kind?")
    assert QUERY_ENTITY_SCHEMA["properties"]["entities"]["maxItems"] == 8


def test_name_index_exact_then_bm25():
    names = NameIndex(
        [
            ("e1", "The Blue Book"),
            ("e2", "Adriana Trigiani"),
            ("e3", "Blue Ridge"),
            ("e1", "blue books"),
            ("bad", "!!!"),
        ]
    )
    anchors = names.match(["blue books", "Trigiani", "nobody here", "???"])
    assert [(a.node_id, a.source, a.mention) for a in anchors] == [
        ("e1", "exact", "blue books"),
        ("e2", "bm25", "Trigiani"),
    ]
    assert anchors[0].score == 1.0 and anchors[1].score > 0
    # BM25 keeps every match within name_bm25_ratio of the best one
    both = names.match(["Blue"], AnchorConfig(name_bm25_ratio=0.0))
    assert {a.node_id for a in both} == {"e1", "e3"}
    assert names.match(["Trigiani"], AnchorConfig(name_bm25_k=0)) == []


def _index(vectors: dict[str, list[float]]) -> VectorIndex:
    index = VectorIndex(2)
    ids = list(vectors)
    x = np.array([vectors[i] for i in ids], dtype=np.float32)
    index.add(x / np.linalg.norm(x, axis=1, keepdims=True), ids)
    return index


def test_dense_anchors_threshold_per_type_and_batch():
    indexes = {
        "Rule": _index({"r1": [1, 0], "r2": [0, 1]}),
        "Entity": _index({"e1": [1, 1]}),
        "Constraint": VectorIndex(2),
    }
    q = np.array([[1, 0], [0, 1]], dtype=np.float32)
    out = dense_anchors(q, indexes, AnchorConfig(dense_threshold=0.5))
    assert [(a.node_id, a.node_type) for a in out[0]] == [("r1", "Rule"), ("e1", "Entity")]
    assert [a.node_id for a in out[1]] == ["r2", "e1"]
    assert all(a.source == "dense" for a in out[0] + out[1])
    assert dense_anchors(q, indexes, AnchorConfig(dense_threshold=0.9))[0][0].node_id == "r1"
    assert dense_anchors(q, indexes, AnchorConfig(dense_k=0)) == [[], []]


def test_merge_anchors_exact_first_then_interleaved_once_each():
    exact = Anchor("e1", "Entity", "exact", 1.0, "Ann")
    bm25 = [Anchor("e2", "Entity", "bm25", 3.0, "Bo"), Anchor("r1", "Rule", "bm25", 2.0, "Bo")]
    dense = [
        Anchor("r1", "Rule", "dense", 0.9),
        Anchor("e1", "Entity", "dense", 0.8),
        Anchor("c1", "Constraint", "dense", 0.7),
    ]
    merged = merge_anchors([exact, *bm25], dense)
    assert [(a.node_id, a.source) for a in merged] == [
        ("e1", "exact"),
        ("r1", "dense"),
        ("e2", "bm25"),
        ("c1", "dense"),
    ]
    assert [a.node_id for a in merge_anchors([exact, *bm25], dense, AnchorConfig(max_anchors=2))] == ["e1", "r1"]


def test_anchor_config_is_checked():
    with pytest.raises(ValueError):
        AnchorConfig(max_anchors=0)
    with pytest.raises(ValueError):
        AnchorConfig(name_bm25_ratio=1.5)
