"""VectorIndex: HNSW against the exact reference, id mapping, save/load (mmap), per-type indexes from an LKG."""

from __future__ import annotations

import json

import faiss
import numpy as np
import pytest

from symbolkg.retrieval.embed import HashingEmbedder
from symbolkg.retrieval.index import (
    IndexConfig,
    VectorIndex,
    build_indexes,
    load_indexes,
    node_text,
    save_indexes,
)
from symbolkg.retrieval.lkg.schema import Concept, Constraint, ContextRecord, Edge, Entity, Graph, Rule
from symbolkg.retrieval.lkg.store import LKGStore

N, DIM = 20_000, 64
# Small HNSW parameters keep the build to a few seconds on 2 cores; recall is still well above 0.95.
HNSW = IndexConfig(exact_max_vectors=10_000, hnsw_m=16, ef_construction=40, ef_search=64, device="cpu")


@pytest.fixture(scope="module", autouse=True)
def one_faiss_thread():
    """FAISS's OpenMP threads spin-wait; on a 2-core machine shared with other jobs one thread is
    several times faster. The setting is process-global, so it is restored afterwards."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Embedding-like vectors: a 16-dim latent space mapped to 64 dims plus noise; queries near data points."""
    rng = np.random.default_rng(1234)
    x = unit(rng.standard_normal((N, 16)) @ rng.standard_normal((16, DIM)) + 0.1 * rng.standard_normal((N, DIM)))
    q = unit(x[rng.choice(N, 200, replace=False)] + 0.1 * rng.standard_normal((200, DIM)))
    return x, q, [f"node-{i:05d}" for i in range(N)]


@pytest.fixture(scope="module")
def exact(data) -> VectorIndex:
    x, _, ids = data
    index = VectorIndex(DIM, IndexConfig(device="cpu"))
    index.add(x, ids)
    return index


@pytest.fixture(scope="module")
def hnsw(data) -> VectorIndex:
    x, _, ids = data
    index = VectorIndex(DIM, HNSW)
    index.add(x, ids)
    return index


def recall_at(reference: np.ndarray, approx: np.ndarray) -> float:
    return float(np.mean([len(set(a) & set(b)) / len(a) for a, b in zip(reference, approx, strict=True)]))


def test_kind_follows_the_size_threshold(exact, hnsw):
    assert exact.kind == "flat" and len(exact) == N
    assert hnsw.kind == "hnsw" and len(hnsw) == N


def test_exact_index_matches_brute_force(data, exact):
    x, q, ids = data
    scores, got = exact.search(q[:20], k=10)
    truth = np.argsort(-(q[:20] @ x.T), axis=1)[:, :10]
    assert (got == np.array(ids, dtype=object)[truth]).all()
    np.testing.assert_allclose(scores, np.take_along_axis(q[:20] @ x.T, truth, axis=1), rtol=1e-5, atol=1e-5)


def test_hnsw_recall_at_10_against_exact(data, exact, hnsw):
    _, q, _ = data
    _, reference = exact.search_rows(q, 10)
    _, approx = hnsw.search_rows(q, 10)
    assert recall_at(reference, approx) >= 0.95
    # ef_search is the recall knob: a tiny candidate list does worse than the configured one.
    _, rough = hnsw.search_rows(q, 10, ef_search=10)
    assert recall_at(reference, rough) <= recall_at(reference, approx)


def test_search_pads_missing_results_and_maps_ids():
    index = VectorIndex(4, IndexConfig(device="cpu"))
    index.add(np.eye(4, dtype=np.float32)[:3], ["a", "b", "c"])
    scores, ids = index.search(np.eye(4, dtype=np.float32)[[1]], k=5)
    assert ids[0, 0] == "b" and set(ids[0, 1:3]) == {"a", "c"}  # a and c tie at 0
    assert list(ids[0, 3:]) == [None, None] and list(scores[0, 3:]) == [-np.inf, -np.inf]
    assert scores[0, 0] == pytest.approx(1.0)
    empty = VectorIndex(4, IndexConfig(device="cpu"))
    scores, ids = empty.search(np.ones((2, 4), np.float32), k=3)
    assert ids.shape == (2, 3) and (ids == None).all() and np.isinf(scores).all()  # noqa: E711


def test_growing_past_the_threshold_rebuilds_as_hnsw(data):
    x, q, ids = data
    index = VectorIndex(DIM, IndexConfig(exact_max_vectors=1_000, hnsw_m=16, ef_construction=40, device="cpu"))
    index.add(x[:800], ids[:800])
    assert index.kind == "flat"
    index.add(x[800:1500], ids[800:1500])
    assert index.kind == "hnsw" and len(index) == 1500
    _, got = index.search(x[[10, 1200]], k=1)
    assert list(got[:, 0]) == [ids[10], ids[1200]]  # old and new rows both survive the rebuild


@pytest.mark.parametrize("which", ["exact", "hnsw"])
@pytest.mark.parametrize("mmap", [True, False])
def test_save_load_round_trip(tmp_path, request, data, which, mmap):
    _, q, _ = data
    index: VectorIndex = request.getfixturevalue(which)
    folder = index.save(tmp_path / which)
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["kind"] == index.kind and meta["count"] == N and meta["dim"] == DIM
    loaded = VectorIndex.load(folder, mmap=mmap)
    assert loaded.kind == index.kind and loaded.node_ids == index.node_ids and loaded.read_only == mmap
    before = index.search(q[:50], k=10)
    after = loaded.search(q[:50], k=10)
    assert (before[1] == after[1]).all()
    np.testing.assert_allclose(before[0], after[0])
    if mmap:
        with pytest.raises(RuntimeError, match="read-only"):
            loaded.add(q[:1], ["new"])
    else:
        loaded.add(q[:1], ["new"])
        assert loaded.search(q[:1], k=1)[1][0, 0] == "new"


def test_load_rejects_missing_and_inconsistent_folders(tmp_path):
    with pytest.raises(FileNotFoundError, match="meta.json"):
        VectorIndex.load(tmp_path / "nothing")
    index = VectorIndex(4, IndexConfig(device="cpu"))
    index.add(np.eye(4, dtype=np.float32), ["a", "b", "c", "d"])
    folder = index.save(tmp_path / "idx")
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "count": 3}))
    with pytest.raises(ValueError, match="inconsistent"):
        VectorIndex.load(folder)


def test_add_validates_inputs():
    index = VectorIndex(4, IndexConfig(device="cpu"))
    with pytest.raises(ValueError, match="shape"):
        index.add(np.ones((2, 3), np.float32), ["a", "b"])
    with pytest.raises(ValueError, match="node ids"):
        index.add(np.ones((2, 4), np.float32), ["a"])
    with pytest.raises(ValueError, match="already"):
        index.add(np.ones((2, 4), np.float32), ["a", "a"])
    index.add(np.ones((1, 4), np.float32), ["a"])
    with pytest.raises(ValueError, match="already"):
        index.add(np.ones((1, 4), np.float32), ["a"])
    with pytest.raises(ValueError, match="k must be"):
        index.search(np.ones((1, 4), np.float32), k=0)
    with pytest.raises(ValueError, match="hnsw_m"):
        IndexConfig(hnsw_m=1)
    with pytest.raises(ValueError, match="device"):
        IndexConfig(device="tpu")  # type: ignore[arg-type]


def lkg() -> tuple[Graph, Graph]:
    ann, bob = Entity.create("Ann Smith", "person"), Entity.create("Bob the builder", "person")
    teacher = Concept.create("teacher")
    kind = Rule.create("teacher(x) -> kind(x)", "Every teacher is kind.")
    cars = Rule.create("owns(x, car) -> drives(x)", "Car owners drive.")
    older = Constraint.create("age(Bob) > 20", "Arithmetic", "", ">", "20", "Bob is older than 20.")
    first = Graph("ctx-1", (ann, teacher, kind, older), (Edge(ann.id, teacher.id, "IS_A"),))
    second = Graph("ctx-2", (ann, bob, cars), (Edge(cars.id, bob.id, "MENTIONS"),))  # Ann again: indexed once
    return first, second


def test_node_text():
    first, second = lkg()
    texts = {n.node_type: node_text(n) for n in first.nodes}
    assert texts == {
        "Entity": "Ann Smith",
        "Concept": "teacher",
        "Rule": "teacher(x) -> kind(x). Every teacher is kind.",
        "Constraint": "age(Bob) > 20",
    }


@pytest.mark.parametrize("from_store", [False, True])
def test_build_indexes_per_node_type(tmp_path, from_store):
    graphs = lkg()
    source: object = graphs
    if from_store:
        with LKGStore(tmp_path / "store") as store:
            for g in graphs:
                store.put(ContextRecord(g.context_key), g)
        source = LKGStore(tmp_path / "store")
    embedder = HashingEmbedder(dim=64)
    indexes = build_indexes(source, embedder, config=IndexConfig(device="cpu"), chunk_texts=1)
    assert set(indexes) == {"Rule", "Constraint", "Entity"}
    assert {t: len(i) for t, i in indexes.items()} == {"Rule": 2, "Constraint": 1, "Entity": 2}
    assert all(i.embedder == "hashing-64-0" for i in indexes.values())
    query = embedder.embed(["which teacher is kind"])
    assert indexes["Rule"].search(query, k=1)[1][0, 0] == graphs[0].nodes[2].id
    query = embedder.embed(["Bob"])
    assert indexes["Entity"].search(query, k=1)[1][0, 0] == Entity.create("Bob the builder").id

    save_indexes(indexes, tmp_path / "indexes")
    loaded = load_indexes(tmp_path / "indexes")
    assert {t: i.node_ids for t, i in loaded.items()} == {t: i.node_ids for t, i in indexes.items()}


def test_build_indexes_rejects_unknown_types():
    with pytest.raises(ValueError, match="unknown node type"):
        build_indexes([], HashingEmbedder(), node_types=("Person",))
