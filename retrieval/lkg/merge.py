"""Merging LKGs: nodes by canonical id, edges by ``(source_id, target_id, edge_type)``.

Used for the chunks of one long context (each chunk's graph has the same
context key and global sentence indices) and for several documents (each with
its own document id in the provenance). The same rules apply when one LLM
output names one thing twice ("Blue Book" and "blue books"):

* provenance: the union of both (nothing is lost);
* Entity ``properties``: the union; for a key present in both with different
  values the first value is kept and the key is reported as a conflict;
* Entity ``entity_type``; Constraint ``relation`` / ``operation`` / ``value``:
  the first non-empty one; two different non-empty values are a conflict;
* Concept ``labels``: the union, in first-seen order;
* Rule ``description``, Rule / Constraint ``raw_text``: the first non-empty one
  (different wordings of one rule are normal, not a conflict);
* names and expressions: the first one as written (the ids are equal, so the
  normalized forms are too);
* edges: one per ``(source_id, target_id, edge_type)``, with the first
  ``raw_text`` and the union of provenance.

"First" is the order in which graphs (and, within a graph, nodes) are given.
:func:`merge_graphs` drops conflict reports (documents may disagree; the first
document wins); :class:`GraphBuilder` returns them for validation to report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from symbolkg.retrieval.lkg.schema import Concept, Constraint, Edge, Entity, Graph, Node, Rule, sorted_provenance


def _first_nonempty(field_name: str, a: str, b: str, conflicts: list[str]) -> str:
    if a and b and a != b:
        conflicts.append(field_name)
    return a or b


def merge_node(a: Node, b: Node) -> tuple[Node, list[str]]:
    """Merge two records of the same node (rules in the module docstring).

    Args:
        a: the record seen first.
        b: the record seen later, with the same id.

    Returns:
        The merged node and the names of conflicting fields (``"entity_type"``,
        ``"properties.<key>"``, ``"relation"``, ...), first value kept.

    Raises:
        ValueError: if the ids or node types differ.
    """
    if a.id != b.id or type(a) is not type(b):
        raise ValueError(f"cannot merge {a.node_type} {a.id} with {b.node_type} {b.id}")
    conflicts: list[str] = []
    provenance = sorted_provenance(a.provenance + b.provenance)
    if isinstance(a, Entity) and isinstance(b, Entity):
        properties = dict(a.properties)
        for key, value in b.properties.items():
            if key not in properties:
                properties[key] = value
            elif properties[key] != value:
                conflicts.append(f"properties.{key}")
        entity_type = _first_nonempty("entity_type", a.entity_type, b.entity_type, conflicts)
        return replace(a, entity_type=entity_type, properties=properties, provenance=provenance), conflicts
    if isinstance(a, Concept) and isinstance(b, Concept):
        labels = tuple(dict.fromkeys(a.labels + b.labels))
        return replace(a, labels=labels, provenance=provenance), conflicts
    if isinstance(a, Rule) and isinstance(b, Rule):
        return replace(
            a, description=a.description or b.description, raw_text=a.raw_text or b.raw_text, provenance=provenance
        ), conflicts
    if not (isinstance(a, Constraint) and isinstance(b, Constraint)):
        raise ValueError(f"not a node record: {type(a).__name__}")
    relation = _first_nonempty("relation", a.relation, b.relation, conflicts)
    operation = _first_nonempty("operation", a.operation, b.operation, conflicts)
    value = _first_nonempty("value", a.value, b.value, conflicts)
    return replace(
        a, relation=relation, operation=operation, value=value, raw_text=a.raw_text or b.raw_text, provenance=provenance
    ), conflicts


def merge_edge(a: Edge, b: Edge) -> Edge:
    """Merge two records of the same edge: first ``raw_text``, union of provenance.

    Raises:
        ValueError: if their ``(source_id, target_id, edge_type)`` differ.
    """
    if a.key != b.key:
        raise ValueError(f"cannot merge edge {a.key} with {b.key}")
    return replace(a, raw_text=a.raw_text or b.raw_text, provenance=sorted_provenance(a.provenance + b.provenance))


class GraphBuilder:
    """Accumulates nodes and edges, merging duplicates as they arrive; :meth:`build` makes the Graph."""

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._edges: dict[tuple[str, str, str], Edge] = {}

    def add_node(self, node: Node) -> list[str]:
        """Add a node, merging it into an existing one with the same id.

        Returns:
            Conflicting field names (see :func:`merge_node`); empty for a new node.
        """
        old = self._nodes.get(node.id)
        if old is None:
            self._nodes[node.id] = node
            return []
        merged, conflicts = merge_node(old, node)
        self._nodes[node.id] = merged
        return conflicts

    def add_edge(self, edge: Edge) -> None:
        """Add an edge, merging it into an existing one with the same key. Endpoints are checked by :meth:`build`."""
        old = self._edges.get(edge.key)
        self._edges[edge.key] = edge if old is None else merge_edge(old, edge)

    def node(self, node_id: str) -> Node | None:
        """The node accumulated so far under ``node_id``, or None."""
        return self._nodes.get(node_id)

    def nodes(self) -> list[Node]:
        """The nodes accumulated so far, in first-seen order."""
        return list(self._nodes.values())

    def edges(self) -> list[Edge]:
        """The edges accumulated so far, in first-seen order."""
        return list(self._edges.values())

    def build(self, context_key: str) -> Graph:
        """The graph of everything added.

        Raises:
            ValueError: if an edge's endpoint was never added as a node.
        """
        return Graph(context_key, tuple(self._nodes.values()), tuple(self._edges.values()))


def merge_graphs(graphs: Iterable[Graph], context_key: str) -> Graph:
    """Merge graphs into one (rules in the module docstring).

    Args:
        graphs: partial graphs: chunks of one context, or several documents. Each
            one's provenance already names its document.
        context_key: key of the merged graph (the chunks' common key, or a key of
            the document set).

    Returns:
        One graph; nodes and edges in first-seen order.

    Example:
        >>> from symbolkg.retrieval.lkg.schema import Provenance
        >>> a = Graph("doc1", (Entity.create("The blue book", provenance=[Provenance("doc1", 0)]),))
        >>> b = Graph("doc2", (Entity.create("blue books", provenance=[Provenance("doc2", 3)]),))
        >>> merged = merge_graphs([a, b], "corpus")
        >>> len(merged.nodes), [(p.document, p.sentence) for p in merged.nodes[0].provenance]
        (1, [('doc1', 0), ('doc2', 3)])
    """
    builder = GraphBuilder()
    for graph in graphs:
        for node in graph.nodes:
            builder.add_node(node)
        for edge in graph.edges:
            builder.add_edge(edge)
    return builder.build(context_key)
