"""Typed records of the Logical Knowledge Graph (LKG) and their Arrow schemas.

An LKG is a directed heterogeneous multigraph built from one context (a
problem's premises, a document, or several documents merged). Node types
(SymbolLKG, Table 1):

* :class:`Entity` — a concrete individual: ``name``, ``entity_type`` (free text
  such as ``"person"``), ``properties`` (attribute -> value, both strings).
* :class:`Concept` — a class or category: ``name``, ``labels`` (broader tags).
* :class:`Rule` — a general statement: ``expression`` (a formal-ish rendering,
  e.g. ``"blue(x) -> cold(x)"``), ``description`` (plain words), ``raw_text``
  (the words of the context it comes from).
* :class:`Constraint` — a restriction of a puzzle: ``raw_expression``,
  ``constraint_type`` in :data:`CONSTRAINT_TYPES`, and where they apply
  ``relation`` (Ordering: e.g. ``"LEFT_OF"``), ``operation`` and ``value``
  (Arithmetic: e.g. ``">"`` and ``"20"``); ``raw_text`` as for rules.

Edges (:class:`Edge`) have a type: one of :data:`STRUCTURAL_EDGE_TYPES`
(``IS_A``, ``HAS``, ``APPLIES_TO``, ``MENTIONS``, ``RELATED_TO``) or a typed
relation between entities (or concepts, for generic statements) named in
UPPER_SNAKE case (``LEFT_OF``, ``FATHER_OF``; :func:`is_edge_type`). Allowed
endpoints per type are in :data:`EDGE_ENDPOINTS`. Every edge keeps the
``raw_text`` it was read from. Edges are identified by ``(source_id,
target_id, edge_type)``: a graph holds at most one edge per triple.

Node ids are canonical (:mod:`symbolkg.retrieval.lkg.canonical`): computed from the
normalized text and the node type, so mentions merge. Every node and edge
carries its provenance: a sorted tuple of :class:`Provenance` (document id,
sentence index). The document id is the context key for a single context, or
each source document's id after :func:`symbolkg.retrieval.lkg.merge.merge_graphs`.

Parquet contract. One table of nodes (:data:`NODE_SCHEMA`) and one of edges
(:data:`EDGE_SCHEMA`) for all node and edge types; columns that do not apply to
a row's type are null. Rows keep their graph's order.

``NODE_SCHEMA``:

====================  ===============================  ==========================================
column                type                             meaning
====================  ===============================  ==========================================
``context_key``       string, not null                 the graph the row belongs to (store cache key)
``node_id``           string, not null                 canonical id, 32 hex digits
``node_type``         string, not null                 ``Entity`` / ``Concept`` / ``Rule`` / ``Constraint``
``name``              string                           Entity, Concept: the name as first written
``entity_type``       string                           Entity: free-text type (``""`` if none)
``properties``        map<string, string>              Entity: attributes, keys sorted (may be empty)
``labels``            list<string>                     Concept: broader tags (may be empty)
``expression``        string                           Rule: formal-ish expression
``description``       string                           Rule: plain-words description (``""`` if none)
``raw_expression``    string                           Constraint: the constraint as written
``constraint_type``   string                           Constraint: one of :data:`CONSTRAINT_TYPES`
``relation``          string                           Constraint: ordering relation (``""`` if none)
``operation``         string                           Constraint: arithmetic operation (``""`` if none)
``value``             string                           Constraint: arithmetic operand (``""`` if none)
``raw_text``          string                           Rule, Constraint: source words in the context
``provenance``        list<struct<document: string,    where it was read: document id and
                      sentence: int32>>, not null      0-based sentence index, sorted
====================  ===============================  ==========================================

``EDGE_SCHEMA``:

====================  ===============================  ==========================================
column                type                             meaning
====================  ===============================  ==========================================
``context_key``       string, not null                 the graph the row belongs to
``source_id``         string, not null                 node id of the tail
``target_id``         string, not null                 node id of the head
``edge_type``         string, not null                 structural type or UPPER_SNAKE relation
``raw_text``          string, not null                 source words in the context (first seen)
``provenance``        list<struct<...>>, not null      as for nodes
====================  ===============================  ==========================================

The store's third table, ``CONTEXT_SCHEMA``, is documented in
:mod:`symbolkg.retrieval.lkg.store`; its record is :class:`ContextRecord`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import pyarrow as pa

from symbolkg.retrieval.lkg import canonical

NODE_TYPES: tuple[str, ...] = ("Entity", "Concept", "Rule", "Constraint")
CONSTRAINT_TYPES: tuple[str, ...] = ("Ordering", "AllDifferent", "Arithmetic", "Generic")
STRUCTURAL_EDGE_TYPES: tuple[str, ...] = ("IS_A", "HAS", "APPLIES_TO", "MENTIONS", "RELATED_TO")

_ENTITY_OR_CONCEPT = frozenset({"Entity", "Concept"})
_RULE_OR_CONSTRAINT = frozenset({"Rule", "Constraint"})
_ANY = frozenset(NODE_TYPES)

#: Allowed (source node types, target node types) per structural edge type.
#: Typed relations (any other UPPER_SNAKE name) use :data:`RELATION_ENDPOINTS`.
EDGE_ENDPOINTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "IS_A": (_ENTITY_OR_CONCEPT, frozenset({"Concept"})),
    "HAS": (_ENTITY_OR_CONCEPT, _ENTITY_OR_CONCEPT),
    "APPLIES_TO": (_RULE_OR_CONSTRAINT, _ENTITY_OR_CONCEPT),
    "MENTIONS": (_RULE_OR_CONSTRAINT, _ENTITY_OR_CONCEPT),
    "RELATED_TO": (_ANY, _ANY),
}
#: Endpoints of a typed relation (``LEFT_OF``, ``FATHER_OF``, ...).
RELATION_ENDPOINTS: tuple[frozenset[str], frozenset[str]] = (_ENTITY_OR_CONCEPT, _ENTITY_OR_CONCEPT)

_EDGE_TYPE_RE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
MAX_EDGE_TYPE_CHARS = 64


def is_edge_type(name: str) -> bool:
    """True when ``name`` is a structural edge type or an UPPER_SNAKE relation name.

    Args:
        name: candidate edge type.

    Returns:
        Whether it is legal, e.g. ``"LEFT_OF"`` yes, ``"left of"`` or ``"Left_Of"`` no.
    """
    return isinstance(name, str) and len(name) <= MAX_EDGE_TYPE_CHARS and _EDGE_TYPE_RE.fullmatch(name) is not None


def edge_endpoints(edge_type: str) -> tuple[frozenset[str], frozenset[str]]:
    """Allowed (source node types, target node types) of an edge type.

    Raises:
        ValueError: if ``edge_type`` is not legal (:func:`is_edge_type`).
    """
    if not is_edge_type(edge_type):
        raise ValueError(f"illegal edge type {edge_type!r}: use IS_A, HAS, ... or an UPPER_SNAKE relation name")
    return EDGE_ENDPOINTS.get(edge_type, RELATION_ENDPOINTS)


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, order=True)
class Provenance:
    """Where a node or edge was read.

    Attributes:
        document: the context key or document id of the text.
        sentence: 0-based index into :func:`symbolkg.retrieval.lkg.canonical.split_sentences` of that text.
    """

    document: str
    sentence: int

    def to_row(self) -> dict[str, Any]:
        return {"document": self.document, "sentence": self.sentence}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Provenance:
        return cls(document=row["document"], sentence=int(row["sentence"]))


def sorted_provenance(items: Iterable[Provenance]) -> tuple[Provenance, ...]:
    """Deduplicated, sorted provenance (the one form records hold)."""
    return tuple(sorted(set(items)))


def _check_provenance(owner: str, provenance: tuple[Provenance, ...]) -> None:
    if provenance != sorted_provenance(provenance):
        raise ValueError(f"{owner}: provenance must be sorted and unique; build it with sorted_provenance()")


# Row template: every node column, null. Each node type fills its own columns.
_EMPTY_NODE_ROW: dict[str, Any] = {
    "name": None,
    "entity_type": None,
    "properties": None,
    "labels": None,
    "expression": None,
    "description": None,
    "raw_expression": None,
    "constraint_type": None,
    "relation": None,
    "operation": None,
    "value": None,
    "raw_text": None,
}


@dataclass(frozen=True)
class Entity:
    """A concrete individual (module docstring). Build with :meth:`create` to get the canonical id.

    Attributes:
        id: canonical id (:func:`symbolkg.retrieval.lkg.canonical.entity_id` of ``name``).
        name: the name as first written.
        entity_type: free-text type, ``""`` when unknown.
        properties: attribute -> value.
        provenance: sorted :class:`Provenance`.
    """

    node_type: ClassVar[str] = "Entity"
    id: str
    name: str
    entity_type: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    provenance: tuple[Provenance, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", dict(sorted(self.properties.items())))
        object.__setattr__(self, "provenance", tuple(self.provenance))
        _check_provenance(f"Entity {self.name!r}", self.provenance)

    @classmethod
    def create(
        cls,
        name: str,
        entity_type: str = "",
        properties: Mapping[str, str] | None = None,
        provenance: Iterable[Provenance] = (),
    ) -> Entity:
        """An Entity with its canonical id computed from ``name``.

        Raises:
            ValueError: if ``name`` has no letters or digits.
        """
        return cls(canonical.entity_id(name), name, entity_type, dict(properties or {}), sorted_provenance(provenance))

    def to_row(self, context_key: str) -> dict[str, Any]:
        row = {"context_key": context_key, "node_id": self.id, "node_type": self.node_type, **_EMPTY_NODE_ROW}
        row.update(name=self.name, entity_type=self.entity_type, properties=list(self.properties.items()))
        row["provenance"] = [p.to_row() for p in self.provenance]
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Entity:
        return cls(
            row["node_id"],
            row["name"],
            row["entity_type"],
            dict(row["properties"] or ()),
            tuple(Provenance.from_row(p) for p in row["provenance"]),
        )


@dataclass(frozen=True)
class Concept:
    """A class or category (module docstring). Build with :meth:`create` to get the canonical id.

    Attributes:
        id: canonical id (:func:`symbolkg.retrieval.lkg.canonical.concept_id` of ``name``).
        name: the name as first written.
        labels: broader tags, in first-seen order, unique.
        provenance: sorted :class:`Provenance`.
    """

    node_type: ClassVar[str] = "Concept"
    id: str
    name: str
    labels: tuple[str, ...] = ()
    provenance: tuple[Provenance, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "provenance", tuple(self.provenance))
        _check_provenance(f"Concept {self.name!r}", self.provenance)

    @classmethod
    def create(cls, name: str, labels: Iterable[str] = (), provenance: Iterable[Provenance] = ()) -> Concept:
        """A Concept with its canonical id computed from ``name``.

        Raises:
            ValueError: if ``name`` has no letters or digits.
        """
        return cls(canonical.concept_id(name), name, tuple(dict.fromkeys(labels)), sorted_provenance(provenance))

    def to_row(self, context_key: str) -> dict[str, Any]:
        row = {"context_key": context_key, "node_id": self.id, "node_type": self.node_type, **_EMPTY_NODE_ROW}
        row.update(name=self.name, labels=list(self.labels))
        row["provenance"] = [p.to_row() for p in self.provenance]
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Concept:
        return cls(
            row["node_id"],
            row["name"],
            tuple(row["labels"] or ()),
            tuple(Provenance.from_row(p) for p in row["provenance"]),
        )


@dataclass(frozen=True)
class Rule:
    """A general statement (module docstring). Build with :meth:`create` to get the canonical id.

    Attributes:
        id: canonical id (:func:`symbolkg.retrieval.lkg.canonical.rule_id` of ``expression``).
        expression: formal-ish rendering.
        description: plain words, ``""`` when none.
        raw_text: the words of the context it was read from.
        provenance: sorted :class:`Provenance`.
    """

    node_type: ClassVar[str] = "Rule"
    id: str
    expression: str
    description: str = ""
    raw_text: str = ""
    provenance: tuple[Provenance, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "provenance", tuple(self.provenance))
        _check_provenance(f"Rule {self.expression!r}", self.provenance)

    @classmethod
    def create(
        cls, expression: str, description: str = "", raw_text: str = "", provenance: Iterable[Provenance] = ()
    ) -> Rule:
        """A Rule with its canonical id computed from ``expression``.

        Raises:
            ValueError: if ``expression`` is blank.
        """
        return cls(canonical.rule_id(expression), expression, description, raw_text, sorted_provenance(provenance))

    def to_row(self, context_key: str) -> dict[str, Any]:
        row = {"context_key": context_key, "node_id": self.id, "node_type": self.node_type, **_EMPTY_NODE_ROW}
        row.update(expression=self.expression, description=self.description, raw_text=self.raw_text)
        row["provenance"] = [p.to_row() for p in self.provenance]
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Rule:
        return cls(
            row["node_id"],
            row["expression"],
            row["description"],
            row["raw_text"],
            tuple(Provenance.from_row(p) for p in row["provenance"]),
        )


@dataclass(frozen=True)
class Constraint:
    """A restriction of a puzzle (module docstring). Build with :meth:`create` to get the canonical id.

    Attributes:
        id: canonical id (:func:`symbolkg.retrieval.lkg.canonical.constraint_id`).
        raw_expression: the constraint as written, e.g. ``"left_of(Mia, Leo)"``.
        constraint_type: one of :data:`CONSTRAINT_TYPES`.
        relation: Ordering relation (e.g. ``"LEFT_OF"``), ``""`` when it does not apply.
        operation: Arithmetic operation (e.g. ``">"``), ``""`` when it does not apply.
        value: Arithmetic operand (e.g. ``"20"``), ``""`` when it does not apply.
        raw_text: the words of the context it was read from.
        provenance: sorted :class:`Provenance`.
    """

    node_type: ClassVar[str] = "Constraint"
    id: str
    raw_expression: str
    constraint_type: str
    relation: str = ""
    operation: str = ""
    value: str = ""
    raw_text: str = ""
    provenance: tuple[Provenance, ...] = ()

    def __post_init__(self) -> None:
        if self.constraint_type not in CONSTRAINT_TYPES:
            raise ValueError(f"constraint_type must be one of {CONSTRAINT_TYPES}, got {self.constraint_type!r}")
        object.__setattr__(self, "provenance", tuple(self.provenance))
        _check_provenance(f"Constraint {self.raw_expression!r}", self.provenance)

    @classmethod
    def create(
        cls,
        raw_expression: str,
        constraint_type: str,
        relation: str = "",
        operation: str = "",
        value: str = "",
        raw_text: str = "",
        provenance: Iterable[Provenance] = (),
    ) -> Constraint:
        """A Constraint with its canonical id computed from its type and ``raw_expression``.

        Raises:
            ValueError: if ``raw_expression`` is blank or ``constraint_type`` is illegal.
        """
        return cls(
            canonical.constraint_id(constraint_type, raw_expression),
            raw_expression,
            constraint_type,
            relation,
            operation,
            value,
            raw_text,
            sorted_provenance(provenance),
        )

    def to_row(self, context_key: str) -> dict[str, Any]:
        row = {"context_key": context_key, "node_id": self.id, "node_type": self.node_type, **_EMPTY_NODE_ROW}
        row.update(
            raw_expression=self.raw_expression,
            constraint_type=self.constraint_type,
            relation=self.relation,
            operation=self.operation,
            value=self.value,
            raw_text=self.raw_text,
        )
        row["provenance"] = [p.to_row() for p in self.provenance]
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Constraint:
        return cls(
            row["node_id"],
            row["raw_expression"],
            row["constraint_type"],
            row["relation"],
            row["operation"],
            row["value"],
            row["raw_text"],
            tuple(Provenance.from_row(p) for p in row["provenance"]),
        )


Node = Entity | Concept | Rule | Constraint
_NODE_CLASSES: dict[str, type] = {"Entity": Entity, "Concept": Concept, "Rule": Rule, "Constraint": Constraint}


def node_from_row(row: Mapping[str, Any]) -> Node:
    """A node record from one :data:`NODE_SCHEMA` row (dispatches on ``node_type``).

    Raises:
        ValueError: on an unknown ``node_type``.
    """
    cls = _NODE_CLASSES.get(row["node_type"])
    if cls is None:
        raise ValueError(f"unknown node_type {row['node_type']!r}; expected one of {NODE_TYPES}")
    return cls.from_row(row)


@dataclass(frozen=True)
class Edge:
    """A directed, typed edge between two nodes of one graph.

    Attributes:
        source_id: id of the tail node.
        target_id: id of the head node.
        edge_type: structural type or UPPER_SNAKE relation (:func:`is_edge_type`).
        raw_text: the words of the context it was read from (the first, when merged).
        provenance: sorted :class:`Provenance` (all of them, when merged).
    """

    source_id: str
    target_id: str
    edge_type: str
    raw_text: str = ""
    provenance: tuple[Provenance, ...] = ()

    def __post_init__(self) -> None:
        if not is_edge_type(self.edge_type):
            raise ValueError(f"illegal edge type {self.edge_type!r}")
        object.__setattr__(self, "provenance", tuple(self.provenance))
        _check_provenance(f"Edge {self.edge_type}", self.provenance)

    @property
    def key(self) -> tuple[str, str, str]:
        """``(source_id, target_id, edge_type)``: the identity used to deduplicate edges."""
        return (self.source_id, self.target_id, self.edge_type)

    def to_row(self, context_key: str) -> dict[str, Any]:
        return {
            "context_key": context_key,
            "source_id": self.source_id,
            "target_id": self.target_id,
            "edge_type": self.edge_type,
            "raw_text": self.raw_text,
            "provenance": [p.to_row() for p in self.provenance],
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Edge:
        return cls(
            row["source_id"],
            row["target_id"],
            row["edge_type"],
            row["raw_text"],
            tuple(Provenance.from_row(p) for p in row["provenance"]),
        )


@dataclass(frozen=True)
class Graph:
    """One LKG: nodes and edges of one context key.

    Invariants (checked on construction; a violation is a programming error and
    raises ``ValueError``): node ids unique; every edge's endpoints are nodes of
    this graph; at most one edge per ``(source_id, target_id, edge_type)``.

    Attributes:
        context_key: the store's cache key of the context (or of a merged corpus).
        nodes: in insertion order.
        edges: in insertion order.
    """

    context_key: str
    nodes: tuple[Node, ...] = ()
    edges: tuple[Edge, ...] = ()
    _by_id: dict[str, Node] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.context_key, str) or not self.context_key:
            raise ValueError(f"Graph.context_key must be a non-empty string, got {self.context_key!r}")
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "edges", tuple(self.edges))
        by_id: dict[str, Node] = {}
        for node in self.nodes:
            if node.id in by_id:
                raise ValueError(f"duplicate node id {node.id} in graph {self.context_key}")
            by_id[node.id] = node
        seen: set[tuple[str, str, str]] = set()
        for edge in self.edges:
            for end in (edge.source_id, edge.target_id):
                if end not in by_id:
                    raise ValueError(
                        f"edge {edge.key} refers to {end}, which is not a node of graph {self.context_key}"
                    )
            if edge.key in seen:
                raise ValueError(f"duplicate edge {edge.key} in graph {self.context_key}")
            seen.add(edge.key)
        object.__setattr__(self, "_by_id", by_id)

    def node(self, node_id: str) -> Node | None:
        """The node with this id, or None."""
        return self._by_id.get(node_id)

    def nodes_of_type(self, node_type: str) -> list[Node]:
        """The nodes of one type (``"Entity"``, ...), in graph order.

        Raises:
            ValueError: on an unknown node type.
        """
        if node_type not in NODE_TYPES:
            raise ValueError(f"unknown node type {node_type!r}; expected one of {NODE_TYPES}")
        return [n for n in self.nodes if n.node_type == node_type]

    def edges_of(self, node_id: str) -> list[Edge]:
        """Edges with ``node_id`` at either end, in graph order."""
        return [e for e in self.edges if node_id in (e.source_id, e.target_id)]

    def counts(self) -> dict[str, int]:
        """Node count per node type plus ``"edges"``."""
        out = {t: 0 for t in NODE_TYPES}
        for n in self.nodes:
            out[n.node_type] += 1
        out["edges"] = len(self.edges)
        return out

    def to_tables(self) -> tuple[pa.Table, pa.Table]:
        """This graph as ``(nodes, edges)`` Arrow tables with :data:`NODE_SCHEMA` / :data:`EDGE_SCHEMA`."""
        return (
            node_table([n.to_row(self.context_key) for n in self.nodes]),
            edge_table([e.to_row(self.context_key) for e in self.edges]),
        )

    @classmethod
    def from_tables(cls, context_key: str, nodes: pa.Table, edges: pa.Table) -> Graph:
        """The graph ``context_key`` from tables holding (at least) its rows, in order.

        Raises:
            ValueError: if a row belongs to another context key or the rows break a graph invariant.
        """
        node_rows = nodes.to_pylist()
        edge_rows = edges.to_pylist()
        for row in node_rows + edge_rows:
            if row["context_key"] != context_key:
                raise ValueError(f"row of context {row['context_key']!r} given for graph {context_key!r}")
        return cls(context_key, tuple(node_from_row(r) for r in node_rows), tuple(Edge.from_row(r) for r in edge_rows))


# --------------------------------------------------------------------------- validation issues and context records


@dataclass(frozen=True)
class ValidationIssue:
    """One problem found in an LLM's extraction output, phrased so the LLM can fix it.

    Attributes:
        path: JSON path of the offending value, e.g. ``"$.entities[3].name"`` (``"$"`` for the whole output).
        kind: one of :data:`symbolkg.retrieval.lkg.validate.ISSUE_KINDS`, e.g. ``"missing_field"``.
        message: what is wrong and what to do instead.
    """

    path: str
    kind: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind, "message": self.message}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ValidationIssue:
        return cls(path=d["path"], kind=d["kind"], message=d["message"])


CONTEXT_STATUSES: tuple[str, ...] = ("valid", "invalid")


@dataclass(frozen=True)
class ContextRecord:
    """What the store records about one extracted context, besides its graph.

    Attributes:
        key: cache key (:func:`symbolkg.retrieval.lkg.store.cache_key` of text, model, prompt version).
        problem_ids: problems whose context this is.
        status: ``"valid"`` (no issues) or ``"invalid"`` (issues remain; the graph holds what passed).
        errors: the remaining issues after the last round.
        model: the LLM that extracted the graph.
        prompt_version: :data:`symbolkg.retrieval.lkg.extract.PROMPT_VERSION` used.
        prompt_tokens, completion_tokens: tokens spent, all rounds.
        rounds: LLM calls made (1 = no repair round).
        llm_seconds: summed latency of those calls (what a cache hit saves).
    """

    key: str
    problem_ids: tuple[str, ...] = ()
    status: str = "valid"
    errors: tuple[ValidationIssue, ...] = ()
    model: str = ""
    prompt_version: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rounds: int = 1
    llm_seconds: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise ValueError(f"ContextRecord.key must be a non-empty string, got {self.key!r}")
        if self.status not in CONTEXT_STATUSES:
            raise ValueError(f"ContextRecord.status must be one of {CONTEXT_STATUSES}, got {self.status!r}")
        object.__setattr__(self, "problem_ids", tuple(self.problem_ids))
        object.__setattr__(self, "errors", tuple(self.errors))

    def to_row(self) -> dict[str, Any]:
        row = {f.name: getattr(self, f.name) for f in fields(self)}
        row["context_key"] = row.pop("key")
        row["problem_ids"] = list(self.problem_ids)
        row["errors"] = json.dumps([e.to_dict() for e in self.errors], ensure_ascii=False)
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ContextRecord:
        return cls(
            key=row["context_key"],
            problem_ids=tuple(row["problem_ids"] or ()),
            status=row["status"],
            errors=tuple(ValidationIssue.from_dict(e) for e in json.loads(row["errors"])),
            model=row["model"],
            prompt_version=row["prompt_version"],
            prompt_tokens=row["prompt_tokens"],
            completion_tokens=row["completion_tokens"],
            rounds=row["rounds"],
            llm_seconds=row["llm_seconds"],
        )


# --------------------------------------------------------------------------- Arrow schemas

PROVENANCE_TYPE = pa.list_(pa.struct([pa.field("document", pa.string()), pa.field("sentence", pa.int32())]))

NODE_SCHEMA = pa.schema(
    [
        pa.field("context_key", pa.string(), nullable=False),
        pa.field("node_id", pa.string(), nullable=False),
        pa.field("node_type", pa.string(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("entity_type", pa.string()),
        pa.field("properties", pa.map_(pa.string(), pa.string())),
        pa.field("labels", pa.list_(pa.string())),
        pa.field("expression", pa.string()),
        pa.field("description", pa.string()),
        pa.field("raw_expression", pa.string()),
        pa.field("constraint_type", pa.string()),
        pa.field("relation", pa.string()),
        pa.field("operation", pa.string()),
        pa.field("value", pa.string()),
        pa.field("raw_text", pa.string()),
        pa.field("provenance", PROVENANCE_TYPE, nullable=False),
    ]
)

EDGE_SCHEMA = pa.schema(
    [
        pa.field("context_key", pa.string(), nullable=False),
        pa.field("source_id", pa.string(), nullable=False),
        pa.field("target_id", pa.string(), nullable=False),
        pa.field("edge_type", pa.string(), nullable=False),
        pa.field("raw_text", pa.string(), nullable=False),
        pa.field("provenance", PROVENANCE_TYPE, nullable=False),
    ]
)


def _columnar(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    # Column by column: several times faster than Table.from_pylist for a million rows.
    return pa.table({f.name: pa.array([r[f.name] for r in rows], type=f.type) for f in schema}, schema=schema)


def node_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Node rows (``Node.to_row``) -> an Arrow table with exactly :data:`NODE_SCHEMA`."""
    return _columnar(rows, NODE_SCHEMA)


def edge_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Edge rows (``Edge.to_row``) -> an Arrow table with exactly :data:`EDGE_SCHEMA`."""
    return _columnar(rows, EDGE_SCHEMA)


def graph_counts(graph: Graph) -> tuple[dict[str, int], int, int]:
    """The router's graph features of an LKG: constraint nodes by type, rule nodes, typed relation edges."""
    constraints = Counter(getattr(n, "constraint_type", "") for n in graph.nodes if n.node_type == "Constraint")
    rules = sum(n.node_type == "Rule" for n in graph.nodes)
    relations = sum(e.edge_type not in STRUCTURAL_EDGE_TYPES for e in graph.edges)
    return dict(constraints), rules, relations
