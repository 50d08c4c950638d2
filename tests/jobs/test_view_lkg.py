"""The viewer's drawing of a row's retrieved subgraph (jobs/servers/view/pages.py lkg_drawing), without Graphviz."""

from __future__ import annotations

from symbolkg.jobs.servers.view.pages import lkg_drawing
from symbolkg.retrieval.lkg.schema import Edge, Entity, Graph, Provenance, Rule

ANN = Entity.create("Ann", provenance=(Provenance("ctx", 0),))
BOB = Entity.create("Bob")
KIND = Rule.create('teacher(x) -> kind(x) "quoted"')
GRAPH = Graph("ctx", (ANN, BOB, KIND), (Edge(KIND.id, ANN.id, "MENTIONS"), Edge(KIND.id, BOB.id, "MENTIONS")))


def test_the_hull_is_drawn_with_anchors_bold_and_pruned_nodes_grey():
    dot, nodes = lkg_drawing(GRAPH, hull={ANN.id, KIND.id}, anchors={ANN.id}, kept={KIND.id})
    assert [(n["id"], n["state"], n["anchor"]) for n in nodes] == [(ANN.id, "pruned", True), (KIND.id, "kept", False)]
    assert nodes[0]["sentences"] == [0] and nodes[1]["label"] == KIND.expression
    assert dot.startswith("digraph LKG {") and dot.endswith("}\n")
    assert BOB.id not in dot and dot.count("MENTIONS") == 1  # only the edge among the drawn nodes
    assert 'penwidth=2.5, color="#1d4ed8"' in dot and '\\"quoted\\"' in dot


def test_without_a_hull_every_node_is_drawn_as_retrieved():
    _, nodes = lkg_drawing(GRAPH, hull=set(), anchors=set(), kept=set())
    assert [n["state"] for n in nodes] == ["retrieved"] * 3
