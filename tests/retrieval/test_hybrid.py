"""Hybrid retrieval over an LKG: anchors from names and vectors, hull, store-backed indexes."""

from __future__ import annotations

import pytest

from symbolkg.retrieval.anchors import AnchorConfig
from symbolkg.retrieval.embed import HashingEmbedder
from symbolkg.retrieval.embed_cache import store_embedding_cache
from symbolkg.retrieval.hull import HullConfig
from symbolkg.retrieval.hybrid import HybridRetriever, total_seconds
from symbolkg.retrieval.lkg.schema import Concept, ContextRecord, Edge, Entity, Graph, Rule
from symbolkg.retrieval.lkg.store import LKGStore

ANN, BOB, TEACHER = Entity.create("Ann"), Entity.create("Bob"), Concept.create("teacher")
KIND = Rule.create("teacher(x) -> kind(x)", "every teacher is kind")
TALL = Rule.create("tall(Bob)", "Bob is tall")
ISOLATED = Rule.create("wumpus(x) -> red(x)", "wumpuses are red")
G1 = Graph("ctx-1", (ANN, TEACHER, KIND), (Edge(ANN.id, TEACHER.id, "IS_A"), Edge(KIND.id, TEACHER.id, "APPLIES_TO")))
G2 = Graph("ctx-2", (BOB, ANN, TALL, ISOLATED), (Edge(TALL.id, BOB.id, "MENTIONS"), Edge(BOB.id, ANN.id, "FRIEND_OF")))
STRICT = AnchorConfig(dense_threshold=0.99)  # no dense anchors: only name matches


def test_a_named_entity_reaches_the_rule_about_its_class():
    retriever = HybridRetriever.from_graphs([G1, G2], HashingEmbedder(), anchor_config=STRICT)
    result = retriever.retrieve("Is Ann kind?")
    assert result.entities == ("Ann",)
    assert [(a.node_id, a.source) for a in result.anchors] == [(ANN.id, "exact")]
    assert result.hull.distances[TEACHER.id] == 1 and result.hull.distances[KIND.id] == 2
    assert set(result.hull.rules) == {KIND.id, TALL.id}  # through the class, and through the friend Bob
    assert ISOLATED.id not in result.hull.distances
    assert set(result.seconds) == {"embed", "anchors", "hull"} and total_seconds(result) >= 0


def test_hull_depth_and_given_entities():
    retriever = HybridRetriever.from_graphs(
        [G1, G2], HashingEmbedder(), anchor_config=STRICT, hull_config=HullConfig(k=1)
    )
    result = retriever.retrieve("Is this person tall?", entities=["Bob"])
    assert result.entities == ("Bob",)
    assert set(result.hull.distances) == {BOB.id, TALL.id, ANN.id}  # one hop: the rule and the friend


def test_dense_anchors_find_rules_by_their_words():
    retriever = HybridRetriever.from_graphs(
        [G1, G2], HashingEmbedder(), anchor_config=AnchorConfig(dense_threshold=0.5)
    )
    result = retriever.retrieve("are wumpuses red", entities=[])
    assert [(a.node_id, a.source) for a in result.anchors][:1] == [(ISOLATED.id, "dense")]


def test_batch_equals_single_queries():
    retriever = HybridRetriever.from_graphs([G1, G2], HashingEmbedder())
    queries = ["Is Ann kind?", "Is Bob tall?", "are wumpuses red"]
    batch = retriever.retrieve_batch(queries)
    assert [r.hull.distances for r in batch] == [retriever.retrieve(q).hull.distances for q in queries]
    assert retriever.retrieve_batch([]) == []
    with pytest.raises(ValueError, match="entity lists"):
        retriever.retrieve_batch(queries, [["Ann"]])


def _store(path) -> LKGStore:
    store = LKGStore(path)
    for g in (G1, G2):
        store.put(ContextRecord(g.context_key, problem_ids=(f"p-{g.context_key}",)), g)
    store.flush()
    return store


def test_from_store_builds_saves_and_reuses_indexes_and_embeddings(tmp_path):
    store = _store(tmp_path / "store")
    first = HybridRetriever.from_store(store, HashingEmbedder(), anchor_config=STRICT)
    assert (tmp_path / "store" / "indexes" / "hashing-384-0" / "Rule" / "meta.json").is_file()
    # every indexed node text (2 entities, 3 rules), once
    assert len(store_embedding_cache(tmp_path / "store", HashingEmbedder())) == 5
    second = HybridRetriever.from_store(store, HashingEmbedder(), anchor_config=STRICT)  # loads, embeds nothing
    assert {t: len(i) for t, i in second.indexes.items()} == {t: len(i) for t, i in first.indexes.items()}
    q = "Is Ann kind?"
    assert second.retrieve(q).hull.distances == first.retrieve(q).hull.distances
    assert KIND.id in second.retrieve(q).hull.distances


def test_indexes_of_another_embedder_are_refused(tmp_path):
    store = _store(tmp_path / "store")
    built = HybridRetriever.from_store(store, HashingEmbedder())
    with pytest.raises(ValueError, match="queries would be embedded by"):
        HybridRetriever(HashingEmbedder(dim=64), built.indexes, built.names, built.adjacency)


def test_store_subgraph_streams_the_named_nodes_and_their_edges(tmp_path):
    from symbolkg.retrieval.hybrid import store_subgraph

    store = _store(tmp_path / "store")
    sub = store_subgraph(store, [BOB.id, TALL.id, "nope", BOB.id])
    assert [n.id for n in sub.nodes] == [BOB.id, TALL.id]
    assert [(e.source_id, e.target_id, e.edge_type) for e in sub.edges] == [(TALL.id, BOB.id, "MENTIONS")]


def test_retrieve_cli(tmp_path, capsys):
    import json

    from symbolkg.jobs.cli import main

    _store(tmp_path / "store")
    code = main(
        [
            "retrieve",
            "--store",
            str(tmp_path / "store"),
            "--query",
            "Is Ann kind?",
            "--embedder",
            "hashing",
            "--dense-threshold",
            "0.99",
            "--json",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["entities"] == ["Ann"] and out["anchors"] == [ANN.id]
    assert {n["id"]: n["hop"] for n in out["nodes"]}[KIND.id] == 2 and out["kept"] == out["hull"]
    assert (
        main(
            [
                "retrieve",
                "--store",
                str(tmp_path / "store"),
                "--query",
                "Is Ann kind?",
                "--embedder",
                "hashing",
                "--dense-threshold",
                "0.99",
                "--hops",
                "1",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "hop 0  Entity     Ann  <- exact 1.00 (Ann)" in text and KIND.expression not in text
    assert main(["retrieve", "--store", str(tmp_path / "none"), "--query", "q"]) == 2
    assert "no LKG store" in capsys.readouterr().err
