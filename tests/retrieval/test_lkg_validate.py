"""Validation of raw (possibly adversarial) LLM output: keeps what passes, explains every drop, never raises."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolkg.retrieval.lkg.canonical import entity_id
from symbolkg.retrieval.lkg.extract import EXAMPLE_CONTEXT, EXAMPLE_OUTPUT
from symbolkg.retrieval.lkg.schema import Concept, Constraint, Entity, Provenance, Rule
from symbolkg.retrieval.lkg.validate import ISSUE_KINDS, ValidationLimits, validate_extraction

CONTEXT = "Bob is a cat. Bob sits left of Ann.\nAll cats are soft. The blue book is on the shelf."


def base() -> dict:
    return {
        "entities": [
            {"id": "e1", "name": "Bob", "entity_type": "animal", "properties": []},
            {"id": "e2", "name": "Ann", "entity_type": "person", "properties": []},
        ],
        "concepts": [{"id": "c1", "name": "cat", "labels": []}],
        "rules": [{"id": "r1", "expression": "cat(x) -> soft(x)", "description": "", "raw_text": "All cats are soft."}],
        "constraints": [
            {
                "id": "k1",
                "raw_expression": "left_of(Bob, Ann)",
                "constraint_type": "Ordering",
                "relation": "LEFT_OF",
                "operation": "",
                "value": "",
                "raw_text": "Bob sits left of Ann.",
            }
        ],
        "edges": [
            {"source": "e1", "target": "c1", "type": "IS_A", "raw_text": "Bob is a cat."},
            {"source": "e1", "target": "e2", "type": "LEFT_OF", "raw_text": "Bob sits left of Ann."},
            {"source": "r1", "target": "c1", "type": "APPLIES_TO", "raw_text": "All cats are soft."},
        ],
    }


def kinds(result) -> list[str]:
    return [e.kind for e in result.errors]


def test_valid_output_builds_the_typed_graph():
    result = validate_extraction(base(), CONTEXT, "ctx")
    assert result.ok and result.status == "valid"
    graph = result.graph
    assert graph.counts() == {"Entity": 2, "Concept": 1, "Rule": 1, "Constraint": 1, "edges": 3}
    bob = graph.node(entity_id("Bob"))
    assert isinstance(bob, Entity) and bob.entity_type == "animal"
    # Bob is named in sentences 0 and 1; his edges come from the same sentences.
    assert bob.provenance == (Provenance("ctx", 0), Provenance("ctx", 1))
    (rule,) = graph.nodes_of_type("Rule")
    assert isinstance(rule, Rule) and rule.provenance == (Provenance("ctx", 2),)
    (constraint,) = graph.nodes_of_type("Constraint")
    assert isinstance(constraint, Constraint) and constraint.relation == "LEFT_OF"
    cat = graph.nodes_of_type("Concept")[0]
    assert isinstance(cat, Concept) and [p.sentence for p in cat.provenance] == [0, 2]  # "cat", "cats"


def test_few_shot_example_is_valid():
    result = validate_extraction(copy.deepcopy(EXAMPLE_OUTPUT), EXAMPLE_CONTEXT, "example")
    assert result.errors == ()
    assert len(result.graph.nodes) == 10 and len(result.graph.edges) == 11


@pytest.mark.parametrize("raw", [None, [], "entities", 3, 2.5, True, [base()]])
def test_top_level_must_be_an_object(raw):
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert kinds(result) == ["not_object"] and result.graph.nodes == ()


def test_missing_lists_are_empty_but_unknown_lists_are_reported():
    assert validate_extraction({}, CONTEXT, "ctx").ok
    result = validate_extraction({"entities": [{"id": "e1", "name": "Bob"}], "events": [1]}, CONTEXT, "ctx")
    assert kinds(result) == ["unknown_node_type"]
    assert result.errors[0].path == "$.events"
    assert len(result.graph.nodes) == 1


def test_missing_required_field_drops_the_item_and_its_edges():
    raw = base()
    del raw["entities"][0]["name"]
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert result.status == "invalid"
    assert ("$.entities[0].name", "missing_field") in [(e.path, e.kind) for e in result.errors]
    assert kinds(result).count("dangling_edge") == 2  # e1 -> c1 and e1 -> e2
    assert result.graph.node(entity_id("Bob")) is None
    assert len(result.graph.edges) == 1


def test_wrong_types():
    raw = base()
    raw["entities"][0]["name"] = 42
    raw["entities"][1]["properties"] = "tall"
    raw["concepts"][0]["labels"] = {"a": "b"}
    raw["rules"][0]["description"] = ["x"]
    raw["constraints"] = "none"
    raw["edges"].append("e1->e2")
    result = validate_extraction(raw, CONTEXT, "ctx")
    paths = {(e.path, e.kind) for e in result.errors}
    assert {
        ("$.entities[0].name", "wrong_type"),
        ("$.entities[1].properties", "wrong_type"),
        ("$.concepts[0].labels", "wrong_type"),
        ("$.rules[0].description", "wrong_type"),
        ("$.constraints", "wrong_type"),
        ("$.edges[3]", "wrong_type"),
    } <= paths
    # Bad optional fields cost only themselves: Ann, the concept and the rule stay.
    assert {n.node_type for n in result.graph.nodes} == {"Entity", "Concept", "Rule"}
    messages = {e.path: e.message for e in result.errors}
    assert messages["$.entities[0].name"] == "'name' must be a string, got a number"  # names the JSON type
    assert "got a string" in messages["$.constraints"] and "got an object" in messages["$.concepts[0].labels"]


def test_properties_as_list_or_object_and_bad_pairs():
    raw = {
        "entities": [
            {
                "id": "e1",
                "name": "Bob",
                "properties": [{"key": "age", "value": "3"}, {"key": "x"}, {"key": "age", "value": "4"}, "oops"],
            },
            {"id": "e2", "name": "Ann", "properties": {"hair": "red", "age": 7}},
        ]
    }
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert sorted(kinds(result)) == ["conflict", "missing_field", "wrong_type", "wrong_type"]
    bob, ann = result.graph.nodes
    assert bob.properties == {"age": "3"}
    assert ann.properties == {"hair": "red"}


def test_unknown_fields_are_reported_but_the_item_is_kept():
    raw = base()
    raw["entities"][0]["confidence"] = "high"
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert kinds(result) == ["unknown_field"] and result.errors[0].path == "$.entities[0].confidence"
    assert len(result.graph.nodes) == 5


def test_illegal_constraint_type_and_missing_relation():
    raw = base()
    raw["constraints"][0]["constraint_type"] = "Temporal"
    raw["constraints"].append(
        {
            "id": "k2",
            "raw_expression": "b < a",
            "constraint_type": "Ordering",
            "relation": "",
            "operation": "",
            "value": "",
            "raw_text": "Bob sits left of Ann.",
        }
    )
    raw["constraints"].append(
        {"id": "k3", "raw_expression": "n > 1", "constraint_type": "Arithmetic", "raw_text": "Bob sits left of Ann."}
    )
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert [(e.path, e.kind) for e in result.errors] == [
        ("$.constraints[0].constraint_type", "illegal_value"),
        ("$.constraints[1].relation", "empty_value"),
        ("$.constraints[2].operation", "missing_field"),
    ]
    assert result.graph.nodes_of_type("Constraint") == []


def test_dangling_and_illegal_edges():
    raw = base()
    raw["edges"] += [
        {"source": "e1", "target": "e9", "type": "RELATED_TO", "raw_text": "Bob is a cat."},
        {"source": "e1", "target": "e2", "type": "left of", "raw_text": "Bob sits left of Ann."},
        {"source": "e1", "target": "e2", "type": "IS_A", "raw_text": "Bob sits left of Ann."},
        {"source": "c1", "target": "r1", "type": "LIKES", "raw_text": "All cats are soft."},
    ]
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert [(e.path, e.kind) for e in result.errors] == [
        ("$.edges[3].target", "dangling_edge"),
        ("$.edges[4].type", "unknown_edge_type"),
        ("$.edges[5]", "bad_endpoint"),
        ("$.edges[6]", "bad_endpoint"),
    ]
    assert len(result.graph.edges) == 3


def test_duplicate_local_id_for_a_different_node_is_reported_first_kept():
    raw = base()
    raw["concepts"].append({"id": "e1", "name": "book", "labels": []})
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert [(e.path, e.kind) for e in result.errors] == [("$.concepts[1].id", "duplicate_id")]
    assert result.graph.nodes_of_type("Concept")[0].name == "cat"
    assert result.graph.edges[0].source_id == entity_id("Bob")  # edges still use the first owner


def test_repeated_item_and_canonical_duplicates_merge_silently():
    raw = base()
    raw["entities"].append({"id": "e1", "name": "Bob", "entity_type": "animal", "properties": []})  # repeated
    raw["entities"].append({"id": "e3", "name": "The blue book", "properties": [{"key": "color", "value": "blue"}]})
    raw["entities"].append({"id": "e4", "name": "blue books", "properties": [{"key": "pages", "value": "9"}]})
    raw["edges"].append({"source": "e4", "target": "e1", "type": "RELATED_TO", "raw_text": "The blue book"})
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert result.ok, result.errors
    books = [n for n in result.graph.nodes_of_type("Entity") if n.name == "The blue book"]
    assert len(books) == 1 and books[0].properties == {"color": "blue", "pages": "9"}
    assert len(result.graph.nodes_of_type("Entity")) == 3
    assert result.graph.edges[-1].source_id == books[0].id  # e4 resolves to the merged node


def test_canonical_duplicates_with_clashing_values_report_a_conflict():
    raw = {
        "entities": [
            {"id": "e1", "name": "Bob", "entity_type": "cat"},
            {"id": "e2", "name": "bob", "entity_type": "dog"},
        ]
    }
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert kinds(result) == ["conflict"] and result.graph.nodes[0].entity_type == "cat"


def test_huge_strings_are_rejected_not_truncated():
    raw = base()
    raw["entities"][0]["name"] = "B" * 100_000
    raw["rules"][0]["raw_text"] = "All cats are soft. " * 1000
    raw["concepts"][0]["labels"] = ["x" * 500, "pet"]
    result = validate_extraction(raw, CONTEXT, "ctx")
    too_long = [e.path for e in result.errors if e.kind == "too_long"]
    assert too_long == ["$.entities[0].name", "$.concepts[0].labels[0]", "$.rules[0].raw_text"]
    assert all(len(e.message) < 300 for e in result.errors)
    assert result.graph.node(entity_id("B" * 100_000)) is None
    assert result.graph.nodes_of_type("Concept")[0].labels == ("pet",)
    assert result.graph.nodes_of_type("Rule") == []


def test_too_many_items_and_issues_are_capped():
    limits = ValidationLimits(max_nodes_per_list=10, max_issues=5)
    raw = {
        "concepts": [{"id": f"c{i}", "name": f"thing {i}"} for i in range(10_000)],
        "edges": [{"source": "c1", "target": "zz", "type": "RELATED_TO", "raw_text": "Bob"}] * 300,
    }
    result = validate_extraction(raw, CONTEXT, "ctx", limits=limits)
    assert len(result.graph.nodes) == 10
    assert len(result.errors) == 5
    assert result.errors[0].kind == "too_many" and result.errors[-1].kind == "too_many"
    assert "more issues not shown" in result.errors[-1].message


def test_entities_must_be_named_in_the_context():
    raw = {
        "entities": [
            {"id": "e1", "name": "Bob"},
            {"id": "e2", "name": "Mia"},  # Mia: invented
            {"id": "e3", "name": "Bob's cat"},  # words of one sentence, any order: fine
        ]
    }
    result = validate_extraction(raw, "Bob is a cat. Bob sits left of Ann.", "ctx")
    assert [(e.path, e.kind) for e in result.errors] == [("$.entities[1].name", "name_not_in_context")]
    assert sorted(n.name for n in result.graph.nodes) == ["Bob", "Bob's cat"]


def test_raw_text_must_come_from_the_context():
    raw = base()
    raw["rules"][0]["raw_text"] = "All dogs are soft."  # invented
    raw["edges"][0]["raw_text"] = "Bob  is a\n cat."  # other whitespace: fine
    raw["edges"][1]["raw_text"] = "..."  # no words
    raw["edges"][2]["raw_text"] = "Bob sits left of Ann. All cats"  # spans two sentences: fine
    raw["edges"][2]["source"] = "e1"
    raw["edges"][2]["type"] = "RELATED_TO"
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert [(e.path, e.kind) for e in result.errors] == [
        ("$.rules[0].raw_text", "raw_text_not_in_context"),
        ("$.edges[1].raw_text", "empty_value"),
    ]
    assert result.graph.nodes_of_type("Rule") == []
    spanning = result.graph.edges[1]
    assert [p.sentence for p in spanning.provenance] == [1, 2]


def test_raw_text_is_case_sensitive_and_uses_global_sentence_indices():
    raw = {
        "entities": [{"id": "e1", "name": "Bob"}],
        "concepts": [{"id": "c1", "name": "cat"}],
        "edges": [{"source": "e1", "target": "c1", "type": "IS_A", "raw_text": "bob is a cat."}],
    }
    assert kinds(validate_extraction(raw, CONTEXT, "ctx")) == ["raw_text_not_in_context"]
    raw["edges"][0]["raw_text"] = "Bob is a cat."
    result = validate_extraction(raw, CONTEXT, "ctx", sentence_offset=10)
    assert result.graph.edges[0].provenance == (Provenance("ctx", 10),)


def test_programmer_misuse_raises():
    with pytest.raises(ValueError):
        validate_extraction({}, None, "ctx")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        validate_extraction({}, CONTEXT, "")
    with pytest.raises(ValueError):
        validate_extraction({}, CONTEXT, "ctx", sentence_offset=-1)


def test_issue_kinds_are_all_declared():
    raw = base()
    raw["entities"][0]["name"] = 3
    raw["bogus"] = 1
    for issue in validate_extraction(raw, CONTEXT, "ctx").errors:
        assert issue.kind in ISSUE_KINDS


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=25,
)
field_names = st.sampled_from(
    [
        "id",
        "name",
        "entity_type",
        "properties",
        "labels",
        "expression",
        "description",
        "raw_text",
        "raw_expression",
        "constraint_type",
        "relation",
        "operation",
        "value",
        "source",
        "target",
        "type",
        "key",
    ]
)
items = st.dictionaries(
    field_names,
    json_values | st.sampled_from(["e1", "c1", "Bob", "IS_A", "Ordering", "Bob is a cat.", "LEFT_OF"]),
    max_size=8,
)
outputs = st.dictionaries(
    st.sampled_from(["entities", "concepts", "rules", "constraints", "edges", "other"]),
    st.lists(items | json_values, max_size=5),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(outputs | json_values)
def test_never_raises_on_arbitrary_input(raw):
    result = validate_extraction(raw, CONTEXT, "ctx")
    assert all(issue.kind in ISSUE_KINDS for issue in result.errors)
    assert result.ok == (not result.errors)
