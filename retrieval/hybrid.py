"""Topology-aware hybrid retrieval over an LKG: anchors, then the logical hull around them.

:class:`HybridRetriever` holds what every query shares, built once from a store: one FAISS index
per node type, the entity-name index, the CSR adjacency and the embedder. A query then costs one
embedding, one index search per node type, a name lookup and a k-hop expansion::

    query --embed--> dense hits per type (thresholded) --+
          --query entities (LLM or lexical)--> exact/BM25 entity-name matches --+--> anchors --hull(k)--> subgraph

No LLM is called here: query entities from the LLM are passed in by the stage code (``jobs/``),
and so is the pruning of the result (:mod:`symbolkg.retrieval.prune`). :class:`Retrieval` keeps the
anchors with their reasons, the hull with hop distances, and the seconds each step took.

Example:
    >>> from symbolkg.retrieval.embed import HashingEmbedder
    >>> from symbolkg.retrieval.lkg.schema import Edge, Entity, Graph, Rule
    >>> ann, rule = Entity.create("Ann"), Rule.create("teacher(x) -> kind(x)", "every teacher is kind")
    >>> g = Graph("ctx", (ann, rule), (Edge(rule.id, ann.id, "MENTIONS"),))
    >>> retriever = HybridRetriever.from_graphs([g], HashingEmbedder())
    >>> result = retriever.retrieve("Is Ann kind?")
    >>> [a.source for a in result.anchors][:1], rule.id in result.hull.distances
    (['exact'], True)
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from symbolkg.retrieval.anchors import (
    Anchor,
    AnchorConfig,
    NameIndex,
    dense_anchors,
    lexical_query_entities,
    merge_anchors,
)
from symbolkg.retrieval.embed import Embedder
from symbolkg.retrieval.embed_cache import EmbeddingCache, store_embedding_cache
from symbolkg.retrieval.hull import Adjacency, Hull, HullConfig, logical_hull
from symbolkg.retrieval.index import (
    DEFAULT_INDEXED_TYPES,
    IndexConfig,
    VectorIndex,
    build_indexes,
    load_indexes,
    save_indexes,
)
from symbolkg.retrieval.lkg.schema import Edge, Graph, node_from_row
from symbolkg.retrieval.lkg.store import LKGStore


@dataclass(frozen=True)
class Retrieval:
    """The result of one query.

    Attributes:
        query: the query text.
        entities: the query entities used for name matching.
        anchors: anchors with their reasons, in priority order.
        hull: the logical hull around the anchors.
        seconds: step -> seconds (``embed``, ``anchors``, ``hull``; a batch's embedding time is split evenly).
    """

    query: str
    entities: tuple[str, ...]
    anchors: tuple[Anchor, ...]
    hull: Hull
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def node_ids(self) -> list[str]:
        """Every retrieved node, anchors first, then by hop."""
        return self.hull.node_ids


class HybridRetriever:
    """Dense + lexical anchors and the logical hull over one LKG (module docstring).

    Args:
        embedder: embeds queries; must be the one that embedded the nodes.
        indexes: node type -> vector index.
        names: the entity-name index.
        adjacency: the graph for the hull.
        anchor_config: anchor thresholds and caps.
        hull_config: hops, edge types and size bound of the hull.

    Raises:
        ValueError: if an index was built by another embedder or has another width.
    """

    def __init__(
        self,
        embedder: Embedder,
        indexes: Mapping[str, VectorIndex],
        names: NameIndex,
        adjacency: Adjacency,
        anchor_config: AnchorConfig | None = None,
        hull_config: HullConfig | None = None,
    ) -> None:
        for node_type, index in indexes.items():
            if index.dim != embedder.dim or (index.embedder and index.embedder != embedder.name):
                raise ValueError(
                    f"the {node_type} index holds {index.dim}-dim vectors of {index.embedder!r}; "
                    f"queries would be embedded by {embedder.name!r} ({embedder.dim} dims)"
                )
        self.embedder = embedder
        self.indexes = dict(indexes)
        self.names = names
        self.adjacency = adjacency
        self.anchor_config = anchor_config or AnchorConfig()
        self.hull_config = hull_config or HullConfig()

    # -- builders ------------------------------------------------------------------------
    @classmethod
    def from_graphs(
        cls,
        graphs: Iterable[Graph],
        embedder: Embedder,
        *,
        index_config: IndexConfig | None = None,
        anchor_config: AnchorConfig | None = None,
        hull_config: HullConfig | None = None,
        cache: EmbeddingCache | None = None,
    ) -> HybridRetriever:
        """From graphs in memory (one problem's LKG, tests); ``cache`` holds node embeddings across calls."""
        graphs = list(graphs)
        indexes = build_indexes(graphs, embedder, config=index_config, cache=cache)
        entities = [(n.id, n.name) for g in graphs for n in g.nodes if n.node_type == "Entity"]  # type: ignore[attr-defined]
        merged = Graph(
            "corpus",
            tuple({n.id: n for g in graphs for n in g.nodes}.values()),
            tuple(e for g in graphs for e in g.edges),
        )
        return cls(embedder, indexes, NameIndex(entities), Adjacency.from_graph(merged), anchor_config, hull_config)

    @classmethod
    def from_store(
        cls,
        store: LKGStore,
        embedder: Embedder,
        *,
        index_dir: str | os.PathLike[str] | None = None,
        index_config: IndexConfig | None = None,
        anchor_config: AnchorConfig | None = None,
        hull_config: HullConfig | None = None,
        cache: EmbeddingCache | None | bool = True,
    ) -> HybridRetriever:
        """From an LKG store: loads saved indexes from ``index_dir`` when they are there, else builds and saves them.

        Args:
            store: the LKG store.
            embedder: the query (and node) embedder.
            index_dir: where indexes live (default ``STORE/indexes/<embedder>``); built when absent.
            index_config: settings for a build (and ``ef_search`` for loaded HNSW indexes).
            anchor_config: anchor settings.
            hull_config: hull settings.
            cache: node embeddings cache: True = the store's (``STORE/embeddings``), False/None = none.
        """
        folder = Path(index_dir) if index_dir is not None else Path(store.path) / "indexes" / _slug(embedder.name)
        if (folder / DEFAULT_INDEXED_TYPES[0] / "meta.json").is_file():
            indexes = load_indexes(folder, config=index_config)
        else:
            node_cache = store_embedding_cache(store.path, embedder) if cache is True else (cache or None)
            indexes = build_indexes(store, embedder, config=index_config, cache=node_cache)
            save_indexes(indexes, folder)
        entities: list[tuple[str, str]] = []
        for batch in store.iter_nodes(columns=["node_id", "node_type", "name"]):
            for node_id, node_type, name in zip(
                batch.column("node_id").to_pylist(),
                batch.column("node_type").to_pylist(),
                batch.column("name").to_pylist(),
                strict=True,
            ):
                if node_type == "Entity" and name:
                    entities.append((node_id, name))
        return cls(embedder, indexes, NameIndex(entities), Adjacency.from_store(store), anchor_config, hull_config)

    # -- queries -------------------------------------------------------------------------
    def retrieve(self, query: str, entities: Sequence[str] | None = None) -> Retrieval:
        """Anchors and hull for one query (:meth:`retrieve_batch` of one)."""
        return self.retrieve_batch([query], None if entities is None else [entities])[0]

    def retrieve_batch(
        self,
        queries: Sequence[str],
        entities: Sequence[Sequence[str] | None] | None = None,
        vectors: np.ndarray | None = None,
    ) -> list[Retrieval]:
        """Anchors and hull for each query; the queries are embedded and searched as one batch.

        Args:
            queries: query texts.
            entities: per query, its entities (from the LLM); None (or a None entry) = lexical extraction.
            vectors: the queries' embeddings by this retriever's embedder, when the caller embedded them
                already (one embedding call for queries over many retrievers); None = embed here.

        Returns:
            One :class:`Retrieval` per query, in order.
        """
        if entities is not None and len(entities) != len(queries):
            raise ValueError(f"{len(entities)} entity lists for {len(queries)} queries")
        if vectors is not None and vectors.shape != (len(queries), self.embedder.dim):
            raise ValueError(f"vectors of shape {vectors.shape} for {len(queries)} queries of {self.embedder.dim} dims")
        if not queries:
            return []
        t0 = time.perf_counter()
        if vectors is None:
            vectors = self.embedder.embed(list(queries))
        t1 = time.perf_counter()
        dense = dense_anchors(vectors, self.indexes, self.anchor_config)
        t2 = time.perf_counter()
        embed_s, dense_s = (t1 - t0) / len(queries), (t2 - t1) / len(queries)
        out: list[Retrieval] = []
        for i, query in enumerate(queries):
            t3 = time.perf_counter()
            given = entities[i] if entities is not None else None
            mentions = list(given) if given is not None else lexical_query_entities(query)
            anchors = merge_anchors(self.names.match(mentions, self.anchor_config), dense[i], self.anchor_config)
            t4 = time.perf_counter()
            hull = logical_hull(self.adjacency, [a.node_id for a in anchors], self.hull_config)
            t5 = time.perf_counter()
            out.append(
                Retrieval(
                    query,
                    tuple(mentions),
                    tuple(anchors),
                    hull,
                    {"embed": embed_s, "anchors": dense_s + (t4 - t3), "hull": t5 - t4},
                )
            )
        return out


def store_subgraph(store: LKGStore, node_ids: Sequence[str]) -> Graph:
    """The stored nodes with these ids (first stored copy of each) and the edges among them.

    Streams the store, so it works on stores far larger than memory; what the pruning prompt
    and ``symbolkg retrieve`` show.

    Returns:
        A graph keyed ``"retrieved"``, nodes in the order of ``node_ids`` (ids not stored are left out).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted = pa.array(list(dict.fromkeys(node_ids)), pa.string())
    found: dict[str, object] = {}
    for batch in store.iter_nodes():
        for row in batch.filter(pc.is_in(batch.column("node_id"), value_set=wanted)).to_pylist():
            found.setdefault(row["node_id"], node_from_row(row))
    edges: dict[tuple[str, str, str], Edge] = {}
    for batch in store.iter_edges(columns=["source_id", "target_id", "edge_type", "raw_text"]):
        inside = pc.and_(
            pc.is_in(batch.column("source_id"), value_set=wanted), pc.is_in(batch.column("target_id"), value_set=wanted)
        )
        for row in batch.filter(inside).to_pylist():
            key = (row["source_id"], row["target_id"], row["edge_type"])
            edges.setdefault(key, Edge(*key, raw_text=row["raw_text"] or ""))
    nodes = tuple(found[i] for i in dict.fromkeys(node_ids) if i in found)
    return Graph("retrieved", nodes, tuple(edges.values()))  # type: ignore[arg-type]


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "embedder"


def total_seconds(result: Retrieval) -> float:
    """Seconds the query took, all steps together."""
    return float(np.sum(list(result.seconds.values())))
