"""LKG Parquet store: exact round trip, cache keys, resume after a kill without duplicates, streaming reads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from symbolkg.retrieval.lkg.schema import (
    EDGE_SCHEMA,
    NODE_SCHEMA,
    Concept,
    Constraint,
    ContextRecord,
    Edge,
    Entity,
    Graph,
    Provenance,
    Rule,
    ValidationIssue,
)
from symbolkg.retrieval.lkg.store import CONTEXT_SCHEMA, LKGStore, cache_key


def rich_graph(key: str) -> Graph:
    """Every node type, unicode, empty and non-empty properties and labels, multi-sentence provenance."""
    p = lambda *s: tuple(Provenance(key, i) for i in s)
    zoe = Entity.create("Zoë Ñúñez", "person", {"città": "Zürich", "年龄": "三十", "": "empty key"}, p(0, 3))
    box = Entity.create("box", "", {}, ())
    concept = Concept.create("Ünicode concept 😀", ["tag", "étiquette"], p(1))
    bare = Concept.create("thing", [], ())
    rule = Rule.create("∀x: cat(x) → soft(x)", "", "All cats are soft — always.", p(2))
    constraint = Constraint.create("age(Zoë) > 20", "Arithmetic", "", ">", "20", "Zoë is older than 20.", p(3))
    edges = (
        Edge(zoe.id, concept.id, "IS_A", "Zoë is an Ünicode concept 😀.", p(1)),
        Edge(zoe.id, box.id, "OWNS", "", ()),
        Edge(rule.id, concept.id, "APPLIES_TO", "All cats", p(2)),
        Edge(constraint.id, zoe.id, "APPLIES_TO", "Zoë is older than 20.", p(3)),
        Edge(box.id, bare.id, "IS_A", "a\nmulti-line\ttext", p(0, 1, 2)),
    )
    return Graph(key, (zoe, box, concept, bare, rule, constraint), edges)


def simple_graph(key: str, n: int) -> Graph:
    nodes = tuple(
        Entity.create(f"item {key} {i}", properties={"i": str(i)}, provenance=[Provenance(key, i)]) for i in range(n)
    )
    edges = tuple(Edge(nodes[i].id, nodes[i + 1].id, "NEXT_TO", f"{i}") for i in range(n - 1))
    return Graph(key, nodes, edges)


def record(key: str, *problems: str, **kw) -> ContextRecord:
    return ContextRecord(key, problem_ids=problems, model="m", prompt_version="v1", **kw)


def all_rows(store: LKGStore, which: str = "nodes") -> list[dict]:
    it = store.iter_nodes() if which == "nodes" else store.iter_edges()
    return [r for batch in it for r in batch.to_pylist()]


def test_cache_key_is_sha256_of_all_three_parts():
    k = cache_key("text", "model", "v1")
    assert len(k) == 64 and k == cache_key("text", "model", "v1")
    assert (
        len({k, cache_key("text ", "model", "v1"), cache_key("text", "model2", "v1"), cache_key("text", "model", "v2")})
        == 4
    )
    assert cache_key("a", "bc", "d") != cache_key("ab", "c", "d")  # no ambiguous concatenation
    with pytest.raises(ValueError):
        cache_key("text", None, "v1")  # type: ignore[arg-type]


def test_graph_round_trips_exactly_through_the_store(tmp_path: Path):
    key = cache_key("ctx", "m", "v1")
    graph = rich_graph(key)
    errors = (ValidationIssue("$.edges[0]", "dangling_edge", "ünïcode message"),)
    rec = record(key, "p1", "p2", status="invalid", errors=errors, prompt_tokens=10, completion_tokens=5, rounds=2)
    empty_key = cache_key("empty", "m", "v1")
    with LKGStore(tmp_path / "s") as store:
        assert store.put(rec, graph) is True
        assert store.get(key) == graph  # buffered
        assert store.put(record(empty_key), Graph(empty_key)) is True
    reopened = LKGStore(tmp_path / "s")
    assert reopened.has(key) and not reopened.has("nope")
    got = reopened.get(key)
    assert got == graph
    assert [type(n) for n in got.nodes] == [type(n) for n in graph.nodes]
    assert got.node(graph.nodes[1].id).properties == {}
    assert reopened.context(key) == rec
    assert reopened.get(empty_key) == Graph(empty_key)
    assert reopened.get("missing") is None and reopened.context("missing") is None
    assert reopened.graph_for_problem("p2") == graph
    assert reopened.graph_for_problem("nobody") is None
    counts = reopened.counts()
    got_counts = (counts.contexts, counts.valid, counts.invalid, counts.nodes, counts.edges, counts.problems)
    assert got_counts == (2, 1, 1, 6, 5, 2)


def test_tables_on_disk_have_the_documented_schemas(tmp_path: Path):
    key = cache_key("ctx", "m", "v1")
    with LKGStore(tmp_path) as store:
        store.put(record(key, "p"), rich_graph(key))
    for table, schema in (("nodes", NODE_SCHEMA), ("edges", EDGE_SCHEMA), ("contexts", CONTEXT_SCHEMA)):
        (f,) = (tmp_path / table).glob("part-*.parquet")
        assert pq.read_schema(f).remove_metadata() == schema
    nodes = pq.read_table(next((tmp_path / "nodes").glob("*.parquet")))
    assert set(nodes.column("node_type").to_pylist()) == {"Entity", "Concept", "Rule", "Constraint"}


def test_put_twice_links_new_problems_instead_of_duplicating(tmp_path: Path):
    key = cache_key("shared", "m", "v1")
    with LKGStore(tmp_path) as store:
        assert store.put(record(key, "p1"), simple_graph(key, 3))
    store = LKGStore(tmp_path)
    assert store.put(record(key, "p2", "p1"), simple_graph(key, 3)) is False
    store.close()
    store = LKGStore(tmp_path)
    assert store.keys_for_problem("p2") == [key]
    assert len(all_rows(store)) == 3
    store.compact()
    assert not list((tmp_path / "links").glob("*.parquet"))
    assert store.context(key).problem_ids == ("p1", "p2")
    with pytest.raises(ValueError):
        store.link_problems("unknown", ["p"])


def test_newest_graph_wins_for_a_problem(tmp_path: Path):
    old, new = cache_key("c", "m", "v1"), cache_key("c", "m", "v2")
    with LKGStore(tmp_path) as store:
        store.put(record(old, "p"), simple_graph(old, 1))
        store.flush()
        store.put(record(new, "p"), simple_graph(new, 2))
    store = LKGStore(tmp_path)
    assert store.keys_for_problem("p") == [old, new]
    assert len(store.graph_for_problem("p").nodes) == 2


def test_resume_after_a_kill_between_data_and_commit(tmp_path: Path, monkeypatch):
    keys = [cache_key(f"ctx{i}", "m", "v1") for i in range(6)]
    store = LKGStore(tmp_path, flush_contexts=3)
    for k in keys[:3]:
        store.put(record(k, f"p-{k[:6]}"), simple_graph(k, 4))  # third put flushes part 1

    real_write = LKGStore._write

    def killed(self, table, name, tag, **kw):
        if name == "contexts":
            raise KeyboardInterrupt("killed")  # the process dies after nodes and edges were written
        return real_write(self, table, name, tag, **kw)

    monkeypatch.setattr(LKGStore, "_write", killed)
    with pytest.raises(KeyboardInterrupt):
        for k in keys[3:]:
            store.put(record(k, f"p-{k[:6]}"), simple_graph(k, 4))
    monkeypatch.setattr(LKGStore, "_write", real_write)
    assert len(list((tmp_path / "nodes").glob("*.parquet"))) == 2  # one orphan part

    rerun = LKGStore(tmp_path, flush_contexts=3)
    assert [rerun.has(k) for k in keys] == [True] * 3 + [False] * 3
    added = [rerun.put(record(k, f"p-{k[:6]}"), simple_graph(k, 4)) for k in keys]  # a rerun puts everything
    assert added == [False] * 3 + [True] * 3
    rerun.close()

    store = LKGStore(tmp_path)
    rows = all_rows(store)
    assert len(rows) == 24 == store.counts().nodes
    assert len({(r["context_key"], r["node_id"]) for r in rows}) == 24
    assert len(all_rows(store, "edges")) == 18
    for k in keys:
        assert store.get(k) == simple_graph(k, 4)

    store.compact()
    assert len(list((tmp_path / "nodes").glob("*.parquet"))) == 1  # orphan removed
    assert len(all_rows(store)) == 24
    assert all(LKGStore(tmp_path).get(k) == simple_graph(k, 4) for k in keys)


def test_a_context_committed_twice_is_read_once(tmp_path: Path):
    keys = [cache_key(f"ctx{i}", "m", "v1") for i in range(3)]
    with LKGStore(tmp_path) as store:
        for k in keys:
            store.put(record(k, "p"), simple_graph(k, 5))
    # A second writer (or a compaction killed before deleting old parts) committed the same contexts again.
    for table in ("nodes", "edges", "contexts"):
        (f,) = (tmp_path / table).glob("part-*.parquet")
        shutil.copy(f, f.with_name("part-9999999999999-copy-000000.parquet"))
    store = LKGStore(tmp_path)
    assert store.counts().contexts == 3 and store.counts().nodes == 15
    assert len(all_rows(store)) == 15
    assert len(all_rows(store, "edges")) == 12
    assert store.get(keys[0]) == simple_graph(keys[0], 5)
    store.compact()
    assert len(list((tmp_path / "contexts").glob("*.parquet"))) == 1
    assert len(all_rows(LKGStore(tmp_path))) == 15


def test_streaming_reads_are_bounded_and_pruned(tmp_path: Path):
    keys = [cache_key(f"ctx{i}", "m", "v1") for i in range(40)]
    with LKGStore(tmp_path, row_group_rows=50, flush_contexts=20) as store:
        for k in keys:
            store.put(record(k), simple_graph(k, 25))
    store = LKGStore(tmp_path)
    batches = list(store.iter_nodes(columns=["context_key", "node_id"], batch_size=64))
    assert all(b.num_rows <= 64 for b in batches)
    assert all(b.schema.names == ["context_key", "node_id"] for b in batches)
    assert sum(b.num_rows for b in batches) == 1000
    only = list(store.iter_nodes(context_keys=[keys[7], keys[30]]))
    assert {r["context_key"] for b in only for r in b.to_pylist()} == {keys[7], keys[30]}
    assert sum(b.num_rows for b in only) == 50
    # Each part is sorted by context key, in several row groups with min/max statistics.
    for f in (tmp_path / "nodes").glob("*.parquet"):
        meta = pq.ParquetFile(f).metadata
        assert meta.num_row_groups == 10
        stats = [meta.row_group(i).column(0).statistics for i in range(meta.num_row_groups)]
        assert all(s.has_min_max for s in stats)
        assert [s.min for s in stats] == sorted(s.min for s in stats)
    assert store.get(keys[11]) == simple_graph(keys[11], 25)
    with pytest.raises(ValueError):
        next(store.iter_nodes(batch_size=0))


def test_put_rejects_mismatched_keys(tmp_path: Path):
    with pytest.raises(ValueError):
        LKGStore(tmp_path).put(record("a"), Graph("b"))
    with pytest.raises(ValueError):
        LKGStore(tmp_path, flush_nodes=0)


def test_graph_invariants_are_enforced():
    bob = Entity.create("Bob")
    with pytest.raises(ValueError):
        Graph("k", (bob, bob))
    with pytest.raises(ValueError):
        Graph("k", (bob,), (Edge(bob.id, "x" * 32, "RELATED_TO"),))
    with pytest.raises(ValueError):
        Graph("k", (bob,), (Edge(bob.id, bob.id, "RELATED_TO"), Edge(bob.id, bob.id, "RELATED_TO")))
    with pytest.raises(ValueError):
        Edge(bob.id, bob.id, "related to")
    with pytest.raises(ValueError):
        Graph("")
    table, _ = Graph("k", (bob,)).to_tables()
    assert isinstance(table, pa.Table) and table.schema == NODE_SCHEMA
