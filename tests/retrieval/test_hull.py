"""Logical hull: k-hop expansion on hand-built graphs (anchors, k, cycles, isolated nodes, edge types)."""

from __future__ import annotations

import numpy as np
import pytest

from symbolkg.retrieval.hull import Adjacency, HullConfig, hull_subgraph, logical_hull
from symbolkg.retrieval.lkg.schema import Concept, Constraint, ContextRecord, Edge, Entity, Graph, Rule
from symbolkg.retrieval.lkg.store import LKGStore

ANN, BOB, CAROL, DAN = (Entity.create(n) for n in ("Ann", "Bob", "Carol", "Dan"))
LONER = Entity.create("Loner")
TEACHER = Concept.create("teacher")
KIND = Rule.create("teacher(x) -> kind(x)", "Every teacher is kind.")
OLDER = Constraint.create("age(Bob) > 20", "Arithmetic", "", ">", "20")


def school() -> Graph:
    """Ann -IS_A-> teacher <-APPLIES_TO- rule; Ann -FRIEND_OF-> Bob <-APPLIES_TO- constraint;
    Bob -HAS-> Carol (not followed by default); Carol -LEFT_OF-> Dan -LEFT_OF-> Carol (a cycle); Loner isolated."""
    edges = (
        Edge(ANN.id, TEACHER.id, "IS_A"),
        Edge(KIND.id, TEACHER.id, "APPLIES_TO"),
        Edge(ANN.id, BOB.id, "FRIEND_OF"),
        Edge(OLDER.id, BOB.id, "APPLIES_TO"),
        Edge(BOB.id, CAROL.id, "HAS"),
        Edge(CAROL.id, DAN.id, "LEFT_OF"),
        Edge(DAN.id, CAROL.id, "LEFT_OF"),
    )
    return Graph("school", (ANN, BOB, CAROL, DAN, LONER, TEACHER, KIND, OLDER), edges)


@pytest.fixture(scope="module")
def adj() -> Adjacency:
    return Adjacency.from_graph(school())


def test_k0_is_the_anchors(adj):
    hull = logical_hull(adj, [ANN.id, BOB.id], HullConfig(k=0))
    assert hull.distances == {ANN.id: 0, BOB.id: 0}
    assert hull.rules == () and hull.constraints == ()


def test_k1_and_k2_follow_edges_both_ways(adj):
    hull1 = logical_hull(adj, [ANN.id], HullConfig(k=1))
    assert hull1.distances == {ANN.id: 0, TEACHER.id: 1, BOB.id: 1}
    hull2 = logical_hull(adj, [ANN.id], HullConfig(k=2))
    # The rule reaches Ann through her class (IS_A then APPLIES_TO backwards), the constraint through Bob.
    assert hull2.distances == {ANN.id: 0, TEACHER.id: 1, BOB.id: 1, KIND.id: 2, OLDER.id: 2}
    assert hull2.rules == (KIND.id,) and hull2.constraints == (OLDER.id,)
    assert set(hull2.at_hop(2)) == {KIND.id, OLDER.id}
    assert hull2.node_ids[0] == ANN.id and not hull2.truncated


def test_unfollowed_edge_types_stop_the_expansion(adj):
    # HAS is not followed by default: Carol is out of reach from Bob however large k is.
    assert CAROL.id not in logical_hull(adj, [BOB.id], HullConfig(k=5)).distances
    with_has = logical_hull(adj, [BOB.id], HullConfig(k=2, edge_types=("HAS",), relations=False))
    assert with_has.distances == {BOB.id: 0, CAROL.id: 1}
    no_relations = logical_hull(adj, [ANN.id], HullConfig(k=3, relations=False))
    assert BOB.id not in no_relations.distances  # FRIEND_OF is a typed relation


def test_cycles_terminate_with_shortest_distances(adj):
    hull = logical_hull(adj, [CAROL.id], HullConfig(k=10))
    assert hull.distances == {CAROL.id: 0, DAN.id: 1}
    # A longer cycle: distances are the shortest ones from any anchor.
    a, b, c = "a", "b", "c"
    ring = Adjacency.from_edges([(a, b, "NEXT_TO"), (b, c, "NEXT_TO"), (c, a, "NEXT_TO")])
    assert logical_hull(ring, [a], HullConfig(k=3)).distances == {a: 0, b: 1, c: 1}
    assert logical_hull(ring, [a], HullConfig(k=3, direction="out")).distances == {a: 0, b: 1, c: 2}
    assert logical_hull(ring, [a], HullConfig(k=1, direction="in")).distances == {a: 0, c: 1}


def test_isolated_and_unknown_anchors(adj):
    hull = logical_hull(adj, [LONER.id, "no-such-node", LONER.id, "other-missing"], HullConfig(k=3))
    assert hull.distances == {LONER.id: 0}
    assert hull.anchors == (LONER.id,)
    assert hull.unknown_anchors == ("no-such-node", "other-missing")
    empty = logical_hull(adj, ["nothing"], HullConfig(k=2))
    assert len(empty) == 0 and empty.unknown_anchors == ("nothing",)
    assert adj.degree(LONER.id) == 0 and adj.degree("nothing") == 0


def test_max_nodes_truncates_deterministically():
    hub_edges = [(f"e{i:03d}", "hub", "IS_A") for i in range(100)]
    adj = Adjacency.from_edges(hub_edges, {"hub": "Concept"})
    full = logical_hull(adj, ["e000"], HullConfig(k=2))
    assert len(full) == 101 and not full.truncated
    cut = logical_hull(adj, ["e000"], HullConfig(k=2, max_nodes=10))
    assert len(cut) == 10 and cut.truncated
    assert cut.distances == logical_hull(adj, ["e000"], HullConfig(k=2, max_nodes=10)).distances


def test_subgraph_keeps_hull_nodes_and_followed_edges(adj):
    graph = school()
    cfg = HullConfig(k=2)
    sub = hull_subgraph(graph, logical_hull(adj, [ANN.id], cfg), cfg)
    assert [n.id for n in sub.nodes] == [ANN.id, BOB.id, TEACHER.id, KIND.id, OLDER.id]  # by hop, then graph order
    assert {e.edge_type for e in sub.edges} == {"IS_A", "APPLIES_TO", "FRIEND_OF"}
    assert sub.context_key == "school"


def test_duplicate_edges_and_store_built_adjacency_agree(tmp_path, adj):
    graph = school()
    with LKGStore(tmp_path / "store") as store:
        store.put(ContextRecord("school"), graph)
        # A second context that repeats Ann, the teacher concept and the IS_A edge: merged by canonical id.
        store.put(ContextRecord("again"), Graph("again", (ANN, TEACHER), (Edge(ANN.id, TEACHER.id, "IS_A"),)))
    from_store = Adjacency.from_store(LKGStore(tmp_path / "store"))
    assert len(from_store) == len(adj) and from_store.n_edges == adj.n_edges == 7
    for anchor in (ANN.id, CAROL.id, LONER.id):
        assert logical_hull(from_store, [anchor]).distances == logical_hull(adj, [anchor]).distances


def test_hub_expansion_is_vectorized_on_a_large_graph():
    rng = np.random.default_rng(0)
    n = 50_000
    src = rng.integers(0, n, 3 * n)
    dst = rng.integers(0, n, 3 * n)
    src[:n] = np.arange(n)
    dst[:n] = 0  # node 0 is a hub with n IS_A members
    ids = [f"n{i}" for i in range(n)]
    adj = Adjacency.from_arrays(ids, ["Entity"] * n, src, dst, np.zeros(3 * n, np.int32), ["IS_A"])
    hull = logical_hull(adj, ["n0"], HullConfig(k=1))
    assert len(hull) == n  # every node has an IS_A edge to the hub
    assert set(hull.at_hop(1)) == set(ids[1:])


def test_config_validation():
    with pytest.raises(ValueError, match="k must be"):
        HullConfig(k=-1)
    with pytest.raises(ValueError, match="not an edge type"):
        HullConfig(edge_types=("mentions",))
    with pytest.raises(ValueError, match="direction"):
        HullConfig(direction="sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_nodes"):
        HullConfig(max_nodes=0)
    with pytest.raises(ValueError, match="endpoint"):
        Adjacency(["a"], [""], np.array([0]), np.array([1]), np.array([0]), ["IS_A"])
