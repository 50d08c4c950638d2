"""The logical hull: the part of the LKG within ``k`` hops of the retrieved anchors.

SymbolLKG's retrieval takes the anchor nodes found by dense and lexical search and expands them
over the edges that carry logical dependence: ``MENTIONS`` and ``APPLIES_TO`` (rule or
constraint <-> entity or concept), ``IS_A`` (membership in a class, where a general rule about
the class applies) and the typed relations between entities (``LEFT_OF``, ``FATHER_OF``: any
UPPER_SNAKE type that is not structural). ``HAS`` and ``RELATED_TO`` are left out by default:
they are loose associations that mostly widen the hull. Edges are followed in both directions
by default (an entity reaches the rules that mention it, and those rules reach their other
entities), so a 2-hop hull of an entity holds the rules about it and what those rules talk about.

:class:`Adjacency` is the graph in compressed form (node ids -> integers, both directions of
every edge in one CSR array with an edge-type code), built once per graph or per store and
shared by all queries. :func:`logical_hull` is a breadth-first search whose frontier expands with
numpy, so a hub node (a concept with 10^5 members) costs one vectorized step, not 10^5 Python
iterations; ``max_nodes`` bounds the hull when hubs would flood it.

Example:
    >>> from symbolkg.retrieval.lkg.schema import Edge, Entity, Graph, Rule
    >>> ann, bob = Entity.create("Ann"), Entity.create("Bob")
    >>> rule = Rule.create("teacher(x) -> kind(x)")
    >>> g = Graph("ctx", (ann, bob, rule), (Edge(rule.id, ann.id, "MENTIONS"), Edge(ann.id, bob.id, "FRIEND_OF")))
    >>> hull = logical_hull(Adjacency.from_graph(g), [bob.id], HullConfig(k=2))
    >>> hull.distances[ann.id], hull.rules == (rule.id,)
    (1, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from symbolkg.retrieval.lkg.schema import NODE_TYPES, STRUCTURAL_EDGE_TYPES, Graph, is_edge_type
from symbolkg.retrieval.lkg.store import LKGStore

#: Structural edge types the hull follows by default.
DEFAULT_HULL_EDGE_TYPES: tuple[str, ...] = ("MENTIONS", "IS_A", "APPLIES_TO")

_OUT, _IN = 1, 2  # direction bits of a CSR entry: the edge leaves / enters the row's node


@dataclass(frozen=True)
class HullConfig:
    """Which edges the hull follows, how far, and how big it may grow.

    Attributes:
        k: hops from the anchors (0 = the anchors alone).
        edge_types: structural (or named relation) edge types to follow.
        relations: also follow every typed relation, i.e. any edge type not in
            :data:`~symbolkg.retrieval.lkg.schema.STRUCTURAL_EDGE_TYPES`.
        direction: ``"both"`` (default), ``"out"`` (source -> target only) or ``"in"``.
        max_nodes: stop expanding once the hull would exceed this many nodes; the last hop is
            cut in node order and :attr:`Hull.truncated` is set. None = no bound.
    """

    k: int = 2
    edge_types: tuple[str, ...] = DEFAULT_HULL_EDGE_TYPES
    relations: bool = True
    direction: Literal["both", "out", "in"] = "both"
    max_nodes: int | None = None

    def __post_init__(self) -> None:
        if self.k < 0:
            raise ValueError(f"HullConfig.k must be >= 0, got {self.k}")
        object.__setattr__(self, "edge_types", tuple(self.edge_types))
        for edge_type in self.edge_types:
            if not is_edge_type(edge_type):
                raise ValueError(
                    f"HullConfig.edge_types: {edge_type!r} is not an edge type (IS_A, MENTIONS, "
                    f"... or an UPPER_SNAKE relation)"
                )
        if self.direction not in ("both", "out", "in"):
            raise ValueError(f"HullConfig.direction must be 'both', 'out' or 'in', got {self.direction!r}")
        if self.max_nodes is not None and self.max_nodes < 1:
            raise ValueError(f"HullConfig.max_nodes must be >= 1 or None, got {self.max_nodes}")

    def follows(self, edge_type: str) -> bool:
        """Whether the hull follows edges of this type."""
        return edge_type in self.edge_types or (self.relations and edge_type not in STRUCTURAL_EDGE_TYPES)


@dataclass(frozen=True)
class Hull:
    """The nodes within ``k`` hops of the anchors.

    Attributes:
        anchors: the anchors found in the graph, deduplicated, in the order given.
        unknown_anchors: anchors not in the graph (ignored).
        distances: node id -> hops from the nearest anchor (anchors: 0); ordered by hop, then node order.
        rules: Rule node ids in the hull, nearest first.
        constraints: Constraint node ids in the hull, nearest first.
        truncated: ``max_nodes`` cut the hull short.
    """

    anchors: tuple[str, ...]
    unknown_anchors: tuple[str, ...]
    distances: dict[str, int]
    rules: tuple[str, ...]
    constraints: tuple[str, ...]
    truncated: bool = False

    @property
    def node_ids(self) -> list[str]:
        """Every node of the hull, nearest first."""
        return list(self.distances)

    def at_hop(self, hop: int) -> list[str]:
        """The nodes exactly ``hop`` hops from the anchors."""
        return [n for n, d in self.distances.items() if d == hop]

    def __len__(self) -> int:
        return len(self.distances)


class Adjacency:
    """A graph's nodes and edges in CSR form for fast k-hop expansion.

    Every edge appears twice, once under each endpoint, with a direction bit and an edge-type
    code. Build with :meth:`from_graph`, :meth:`from_edges`, :meth:`from_store` or (fastest, for
    large synthetic graphs) :meth:`from_arrays`.

    Attributes:
        node_ids: node id of each integer node.
        node_types: node type of each node (``""`` when unknown).
        edge_type_names: the edge type of each code.
    """

    def __init__(
        self,
        node_ids: Sequence[str],
        node_types: Sequence[str],
        src: np.ndarray,
        dst: np.ndarray,
        edge_codes: np.ndarray,
        edge_type_names: Sequence[str],
    ) -> None:
        n = len(node_ids)
        if len(node_types) != n:
            raise ValueError(f"{n} node ids but {len(node_types)} node types")
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        codes = np.asarray(edge_codes, dtype=np.int32)
        if not (src.shape == dst.shape == codes.shape) or src.ndim != 1:
            raise ValueError("src, dst and edge_codes must be 1-D arrays of one length")
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise ValueError("an edge endpoint is not a node index")
        if len(codes) and (codes.min() < 0 or codes.max() >= len(edge_type_names)):
            raise ValueError("an edge code has no edge type name")
        self.node_ids: list[str] = list(node_ids)
        self.node_types: list[str] = list(node_types)
        self.edge_type_names: tuple[str, ...] = tuple(edge_type_names)
        self._index: dict[str, int] = {node_id: i for i, node_id in enumerate(self.node_ids)}
        if len(self._index) != n:
            raise ValueError("node ids must be unique")
        # Deduplicate (src, dst, type) triples: the same edge read in several contexts counts once.
        if len(src):
            triples = np.unique(np.stack([src, dst, codes.astype(np.int64)], axis=1), axis=0)
            src, dst, codes = triples[:, 0], triples[:, 1], triples[:, 2].astype(np.int32)
        self.n_edges = int(len(src))
        owner = np.concatenate([src, dst])
        order = np.argsort(owner, kind="stable")
        self._neighbors = np.concatenate([dst, src])[order]
        self._codes = np.concatenate([codes, codes])[order]
        self._dirs = np.concatenate([np.full(len(src), _OUT, np.int8), np.full(len(src), _IN, np.int8)])[order]
        self._indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner, minlength=n), out=self._indptr[1:])
        type_table = {t: i for i, t in enumerate(NODE_TYPES)}
        self._type_codes = np.array([type_table.get(t, -1) for t in self.node_types], dtype=np.int8)

    def __len__(self) -> int:
        return len(self.node_ids)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._index

    def degree(self, node_id: str) -> int:
        """Edges at ``node_id``, both directions, all types (0 for an unknown id)."""
        i = self._index.get(node_id)
        return 0 if i is None else int(self._indptr[i + 1] - self._indptr[i])

    # -- builders ------------------------------------------------------------------------
    @classmethod
    def from_arrays(
        cls,
        node_ids: Sequence[str],
        node_types: Sequence[str],
        src: np.ndarray,
        dst: np.ndarray,
        edge_codes: np.ndarray,
        edge_type_names: Sequence[str],
    ) -> Adjacency:
        """From integer edge arrays (the constructor; for callers that already have integer ids)."""
        return cls(node_ids, node_types, src, dst, edge_codes, edge_type_names)

    @classmethod
    def from_edges(
        cls, edges: Iterable[tuple[str, str, str]], node_types: Mapping[str, str] | None = None
    ) -> Adjacency:
        """From ``(source_id, target_id, edge_type)`` triples.

        Args:
            edges: the edges; their endpoints become nodes.
            node_types: node id -> node type; its ids become nodes too (isolated ones included).
                Nodes not in it have type ``""`` (never counted as rules or constraints).

        Raises:
            ValueError: on an illegal edge type.
        """
        types = dict(node_types or {})
        index: dict[str, int] = {node_id: i for i, node_id in enumerate(types)}
        type_codes: dict[str, int] = {}
        src, dst, codes = [], [], []
        for source_id, target_id, edge_type in edges:
            if edge_type not in type_codes:
                if not is_edge_type(edge_type):
                    raise ValueError(f"illegal edge type {edge_type!r}")
                type_codes[edge_type] = len(type_codes)
            src.append(index.setdefault(source_id, len(index)))
            dst.append(index.setdefault(target_id, len(index)))
            codes.append(type_codes[edge_type])
        ids = list(index)
        return cls(
            ids,
            [types.get(i, "") for i in ids],
            np.array(src, np.int64),
            np.array(dst, np.int64),
            np.array(codes, np.int32),
            list(type_codes),
        )

    @classmethod
    def from_graph(cls, graph: Graph) -> Adjacency:
        """From one :class:`~symbolkg.retrieval.lkg.schema.Graph` (every node, isolated ones included)."""
        return cls.from_edges(
            ((e.source_id, e.target_id, e.edge_type) for e in graph.edges), {n.id: n.node_type for n in graph.nodes}
        )

    @classmethod
    def from_store(
        cls, store: LKGStore, context_keys: Sequence[str] | None = None, batch_size: int = 262_144
    ) -> Adjacency:
        """The corpus graph of a store: nodes merged by canonical id across contexts, edges deduplicated.

        Streams only the id and type columns, so memory is the adjacency itself.

        Args:
            store: the LKG store.
            context_keys: only these contexts (all when None).
            batch_size: rows per streamed batch.
        """
        node_types: dict[str, str] = {}
        for batch in store.iter_nodes(
            columns=["node_id", "node_type"], batch_size=batch_size, context_keys=context_keys
        ):
            for node_id, node_type in zip(
                batch.column("node_id").to_pylist(), batch.column("node_type").to_pylist(), strict=True
            ):
                node_types.setdefault(node_id, node_type)

        def edges() -> Iterable[tuple[str, str, str]]:
            for batch in store.iter_edges(
                columns=["source_id", "target_id", "edge_type"], batch_size=batch_size, context_keys=context_keys
            ):
                yield from zip(
                    batch.column("source_id").to_pylist(),
                    batch.column("target_id").to_pylist(),
                    batch.column("edge_type").to_pylist(),
                    strict=True,
                )

        return cls.from_edges(edges(), node_types)

    # -- expansion -----------------------------------------------------------------------
    def _neighbors_of(self, frontier: np.ndarray, allowed_codes: np.ndarray, dir_mask: int) -> np.ndarray:
        """Neighbors of all frontier nodes over allowed edges (with repeats), vectorized over the CSR rows."""
        starts = self._indptr[frontier]
        lengths = self._indptr[frontier + 1] - starts
        total = int(lengths.sum())
        if total == 0:
            return np.empty(0, dtype=np.int64)
        # Positions starts[i] .. starts[i] + lengths[i] - 1 of every frontier row, concatenated.
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
        positions = np.arange(total, dtype=np.int64) + offsets
        keep = allowed_codes[self._codes[positions]] & ((self._dirs[positions] & dir_mask) != 0)
        return self._neighbors[positions[keep]]


def logical_hull(adjacency: Adjacency, anchors: Iterable[str], config: HullConfig | None = None) -> Hull:
    """Breadth-first ``k``-hop expansion from the anchors over the configured edges.

    Cycles are harmless (a node is reached once, at its smallest distance); anchors missing from
    the graph are reported in :attr:`Hull.unknown_anchors` and otherwise ignored; an isolated
    anchor yields itself.

    Args:
        adjacency: the graph.
        anchors: node ids to start from (duplicates ignored).
        config: hops, edge types, direction, size bound.

    Returns:
        The :class:`Hull`.
    """
    config = config or HullConfig()
    found: list[str] = []
    unknown: list[str] = []
    for node_id in dict.fromkeys(anchors):
        (found if node_id in adjacency._index else unknown).append(node_id)
    if config.max_nodes is not None and len(found) > config.max_nodes:
        found, truncated = found[: config.max_nodes], True
    else:
        truncated = False
    allowed = np.array([config.follows(t) for t in adjacency.edge_type_names] or [False], dtype=bool)
    dir_mask = {"both": _OUT | _IN, "out": _OUT, "in": _IN}[config.direction]

    frontier = np.array([adjacency._index[a] for a in found], dtype=np.int64)
    hops = [frontier]
    # np.zeros is a calloc: untouched pages cost nothing, so this stays cheap on a 10^6-node graph.
    visited = np.zeros(len(adjacency), dtype=bool)
    visited[frontier] = True
    n_reached = len(frontier)
    for _ in range(config.k):
        if not len(frontier) or truncated:
            break
        neighbors = np.unique(adjacency._neighbors_of(frontier, allowed, dir_mask))
        fresh = neighbors[~visited[neighbors]]
        if config.max_nodes is not None and n_reached + len(fresh) > config.max_nodes:
            fresh = fresh[: config.max_nodes - n_reached]
            truncated = True
        visited[fresh] = True
        n_reached += len(fresh)
        hops.append(fresh)
        frontier = fresh

    distances: dict[str, int] = {}
    for hop, nodes in enumerate(hops):
        for i in nodes.tolist():
            distances[adjacency.node_ids[i]] = hop
    rule_code, constraint_code = NODE_TYPES.index("Rule"), NODE_TYPES.index("Constraint")
    ordered = np.concatenate(hops) if hops else np.empty(0, dtype=np.int64)
    codes = adjacency._type_codes[ordered] if len(ordered) else np.empty(0, dtype=np.int8)
    rules = tuple(adjacency.node_ids[i] for i in ordered[codes == rule_code].tolist())
    constraints = tuple(adjacency.node_ids[i] for i in ordered[codes == constraint_code].tolist())
    return Hull(
        anchors=tuple(found),
        unknown_anchors=tuple(unknown),
        distances=distances,
        rules=rules,
        constraints=constraints,
        truncated=truncated,
    )


def hull_subgraph(graph: Graph, hull: Hull, config: HullConfig | None = None) -> Graph:
    """The part of ``graph`` inside the hull: its nodes and the followed edges between them.

    What the pruning prompt and the logic router see.

    Args:
        graph: the graph the hull was computed on.
        hull: from :func:`logical_hull`.
        config: edges kept are those ``config.follows`` (default :class:`HullConfig`); pass the one used for the hull.

    Returns:
        A graph with the same context key, nodes in hull order (nearest first), edges in graph order.
    """
    config = config or HullConfig()
    inside = hull.distances
    nodes = tuple(n for n in (graph.node(i) for i in inside) if n is not None)
    edges = tuple(
        e for e in graph.edges if e.source_id in inside and e.target_id in inside and config.follows(e.edge_type)
    )
    return Graph(graph.context_key, nodes, edges)
