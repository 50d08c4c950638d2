"""Merging partial graphs: one node per canonical id, provenance kept, identical edges deduplicated."""

from __future__ import annotations

import pytest

from symbolkg.retrieval.lkg.merge import GraphBuilder, merge_graphs, merge_node
from symbolkg.retrieval.lkg.schema import Concept, Constraint, Edge, Entity, Graph, Provenance, Rule


def P(doc: str, *sentences: int) -> list[Provenance]:
    return [Provenance(doc, s) for s in sentences]


def test_two_documents_merge_by_canonical_id_and_keep_provenance():
    book1 = Entity.create("The blue book", "object", {"pages": "200"}, P("doc1", 0))
    shelf1 = Concept.create("shelf", ["furniture"], P("doc1", 1))
    edge1 = Edge(book1.id, shelf1.id, "IS_A", "The blue book is a shelf.", tuple(P("doc1", 1)))
    g1 = Graph("doc1", (book1, shelf1), (edge1,))
    book2 = Entity.create("blue books", "", {"color": "blue", "pages": "300"}, P("doc2", 4))
    shelf2 = Concept.create("Shelves", ["wood", "furniture"], P("doc2", 2))
    edge2 = Edge(book2.id, shelf2.id, "IS_A", "Blue books are shelves.", tuple(P("doc2", 2)))
    g2 = Graph("doc2", (shelf2, book2), (edge2,))

    merged = merge_graphs([g1, g2], "corpus")

    assert merged.context_key == "corpus"
    assert [n.name for n in merged.nodes] == ["The blue book", "shelf"]  # first-seen order and names
    book = merged.node(book1.id)
    assert book.entity_type == "object"
    assert book.properties == {"pages": "200", "color": "blue"}  # union, first value wins
    assert book.provenance == (Provenance("doc1", 0), Provenance("doc2", 4))
    assert merged.node(shelf1.id).labels == ("furniture", "wood")
    assert len(merged.edges) == 1
    edge = merged.edges[0]
    assert edge.raw_text == "The blue book is a shelf."
    assert edge.provenance == (Provenance("doc1", 1), Provenance("doc2", 2))


def test_chunks_of_one_context_merge_sentence_provenance():
    a = Rule.create("blue(x) -> cold(x)", "", "All blue things are cold.", P("ctx", 0))
    b = Rule.create("Blue(x)  ->  Cold(x)", "blue things are cold", "Blue things are cold.", P("ctx", 7))
    merged = merge_graphs([Graph("ctx", (a,)), Graph("ctx", (b,))], "ctx")
    (rule,) = merged.nodes
    assert rule.description == "blue things are cold"  # first non-empty
    assert rule.raw_text == "All blue things are cold."
    assert [p.sentence for p in rule.provenance] == [0, 7]


def test_conflicts_are_reported_by_the_builder_first_value_kept():
    builder = GraphBuilder()
    assert builder.add_node(Entity.create("Bob", "person", {"age": "30"})) == []
    conflicts = builder.add_node(Entity.create("bob", "dog", {"age": "31", "hair": "red"}))
    assert sorted(conflicts) == ["entity_type", "properties.age"]
    (bob,) = builder.nodes()
    assert (bob.entity_type, bob.properties) == ("person", {"age": "30", "hair": "red"})
    k1 = Constraint.create("x > 3", "Arithmetic", operation=">", value="3")
    k2 = Constraint.create("X>3", "Arithmetic", operation=">", value="4")
    assert merge_node(k1, k2)[1] == ["value"]


def test_merge_node_refuses_different_nodes():
    with pytest.raises(ValueError):
        merge_node(Entity.create("Bob"), Concept.create("Bob"))
    with pytest.raises(ValueError):
        merge_node(Entity.create("Bob"), Entity.create("Ann"))


def test_builder_refuses_an_edge_without_its_nodes():
    bob = Entity.create("Bob")
    builder = GraphBuilder()
    builder.add_node(bob)
    builder.add_edge(Edge(bob.id, "0" * 32, "RELATED_TO"))
    with pytest.raises(ValueError, match="not a node"):
        builder.build("x")
