"""Validation of an LLM's raw extraction output into a typed :class:`Graph` plus issues.

The input is whatever the LLM produced, already decoded from JSON (any Python
value: it may be adversarial). Validation never raises on it: it keeps every
item that passes, drops every item that does not, and explains each drop in a
:class:`~symbolkg.retrieval.lkg.schema.ValidationIssue` (path, kind, message) that can
be shown to the LLM in a repair round (:func:`symbolkg.retrieval.lkg.extract.repair_messages`).
``ValueError`` is raised only for misuse by the caller (a non-string context,
an empty context key, a negative sentence offset).

Expected shape (the extraction JSON schema, :func:`symbolkg.retrieval.lkg.extract.extraction_schema`)::

    {"entities":    [{"id", "name", "entity_type", "properties": [{"key", "value"}]}],
     "concepts":    [{"id", "name", "labels": [str]}],
     "rules":       [{"id", "expression", "description", "raw_text"}],
     "constraints": [{"id", "raw_expression", "constraint_type", "relation", "operation", "value", "raw_text"}],
     "edges":       [{"source", "target", "type", "raw_text"}]}

``id`` values are the LLM's local names (``"e1"``) for wiring edges; the graph
uses canonical ids (:mod:`symbolkg.retrieval.lkg.canonical`). Required per item:
``id`` and ``name`` (entities, concepts), ``id``, ``expression`` and
``raw_text`` (rules), ``id``, ``raw_expression``, ``constraint_type`` and
``raw_text`` (constraints; plus ``relation`` for Ordering and ``operation`` for
Arithmetic), ``source``, ``target``, ``type`` and ``raw_text`` (edges). Other
fields may be left out. A missing top-level list counts as empty;
``properties`` may also be a plain ``{"key": "value"}`` object.

Decisions:

* Dropping, not guessing: an item with a missing or ill-typed required field,
  an illegal value, a string over its length cap, or a ``raw_text`` that is
  not in the context is dropped. Nothing is truncated: a cut name would be a
  different node and a cut quote may no longer be a quote. A bad optional
  field (a property, a label, ``entity_type``) is dropped alone.
* Too many items: the first ``max_*`` of a list are kept (``too_many``).
* Duplicate local ids: the first item with an id owns it. A later item with the
  same id is merged silently if it is the same node (a repeated item), else it
  is dropped with a ``duplicate_id`` issue and edges use the first. Different
  local ids that canonicalize to one node ("Blue Book", "blue books") merge,
  as in :mod:`symbolkg.retrieval.lkg.merge`; clashing attributes are reported as
  ``conflict`` (the first value is kept).
* Edges: both ends must be ids of kept nodes (``dangling_edge``), the type
  must be legal (``unknown_edge_type``) and its endpoints of allowed node types
  (``bad_endpoint``, :data:`symbolkg.retrieval.lkg.schema.EDGE_ENDPOINTS`). Identical
  edges merge.
* ``raw_text`` must occur in the context after whitespace normalization
  (:func:`symbolkg.retrieval.lkg.canonical.collapse_whitespace`; case and punctuation
  count): a sentence or part of one (a quote spanning sentences is accepted
  too). Its provenance is every sentence each occurrence overlaps.
* Entity and Concept provenance: the sentences whose lemmatized words contain
  the node's name, plus the provenance of the edges at the node.
* Issues are capped at ``max_issues``; the last one then says how many were left out.

Status: :attr:`ValidationResult.status` is ``"valid"`` when there is no issue
at all, else ``"invalid"`` (the graph still holds everything that passed).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from symbolkg.retrieval.lkg import canonical
from symbolkg.retrieval.lkg.merge import GraphBuilder
from symbolkg.retrieval.lkg.schema import (
    CONSTRAINT_TYPES,
    Concept,
    Constraint,
    Edge,
    Entity,
    Graph,
    Node,
    Provenance,
    Rule,
    ValidationIssue,
    edge_endpoints,
    is_edge_type,
    sorted_provenance,
)

#: Every ``ValidationIssue.kind`` this module (and :func:`symbolkg.retrieval.lkg.extract.parse_extraction`) emits.
ISSUE_KINDS: tuple[str, ...] = (
    "invalid_json",  # the text is not JSON (parse_extraction)
    "not_object",  # the top level is not a JSON object
    "unknown_node_type",  # a top-level list other than entities/concepts/rules/constraints/edges
    "unknown_field",  # a field the schema does not have (ignored)
    "missing_field",  # a required field is absent
    "wrong_type",  # a value of the wrong JSON type
    "empty_value",  # a required string is empty (or a name has no letters or digits)
    "illegal_value",  # e.g. a constraint_type outside Ordering/AllDifferent/Arithmetic/Generic
    "too_long",  # a string over its cap (the holder is dropped)
    "too_many",  # a list over its cap (the rest is dropped), or too many issues to show
    "duplicate_id",  # a local id given to two different nodes
    "conflict",  # two mentions of one node disagree on an attribute (first kept)
    "unknown_edge_type",  # an edge type that is neither structural nor UPPER_SNAKE
    "dangling_edge",  # an edge end that is not the id of a kept node
    "bad_endpoint",  # an edge between node types its type does not allow
    "raw_text_not_in_context",  # raw_text does not occur in the context
    "name_not_in_context",  # an entity's (lemmatized) name does not occur in the context
    "truncated",  # the JSON was cut off (token limit); complete items before the cut are kept
    "llm_error",  # the engine gave no completion for the request (jobs/methods/lkg_extract.py records it)
)

NODE_LISTS: tuple[str, ...] = ("entities", "concepts", "rules", "constraints")
TOP_LEVEL_KEYS: tuple[str, ...] = NODE_LISTS + ("edges",)


@dataclass(frozen=True)
class ValidationLimits:
    """Caps that keep a runaway or adversarial output bounded.

    Attributes:
        max_nodes_per_list: most items kept per node list (entities, concepts, rules, constraints).
        max_edges: most edges kept.
        max_properties: most properties kept per entity.
        max_labels: most labels kept per concept.
        max_name_chars: cap of a name (entities, concepts).
        max_text_chars: cap of expression, description, raw_expression and raw_text.
        max_short_chars: cap of ids, entity_type, property keys and values, labels,
            relation, operation, value and edge types.
        max_issues: most issues reported (the last one then counts the rest).
    """

    max_nodes_per_list: int = 64
    max_edges: int = 256
    max_properties: int = 16
    max_labels: int = 8
    max_name_chars: int = 200
    max_text_chars: int = 1000
    max_short_chars: int = 100
    max_issues: int = 50

    def __post_init__(self) -> None:
        for f in (
            "max_nodes_per_list",
            "max_edges",
            "max_properties",
            "max_labels",
            "max_name_chars",
            "max_text_chars",
            "max_short_chars",
            "max_issues",
        ):
            if getattr(self, f) < 1:
                raise ValueError(f"ValidationLimits.{f} must be >= 1, got {getattr(self, f)}")


@dataclass(frozen=True)
class ValidationResult:
    """The graph that passed validation and the issues found.

    Attributes:
        graph: every node and edge that passed (possibly empty).
        errors: the issues, in the order found.
    """

    graph: Graph
    errors: tuple[ValidationIssue, ...] = ()

    @property
    def ok(self) -> bool:
        """True when no issue was found."""
        return not self.errors

    @property
    def status(self) -> str:
        """``"valid"`` or ``"invalid"`` (the store's context status)."""
        return "valid" if self.ok else "invalid"


class _SentenceIndex:
    """The context as whitespace-collapsed sentences joined by single spaces, for raw-text lookups."""

    def __init__(self, context: str, offset: int) -> None:
        self.sentences = canonical.split_sentences(context)
        self.offset = offset
        self.starts: list[int] = []
        pos = 0
        for s in self.sentences:
            self.starts.append(pos)
            pos += len(s) + 1
        self.text = " ".join(self.sentences)
        self._tokens: list[list[str]] | None = None

    def locate(self, raw_text: str) -> list[int]:
        """Global indices of the sentences overlapped by every occurrence of ``raw_text``; empty if none."""
        needle = canonical.collapse_whitespace(raw_text)
        if not needle:
            return []
        found: set[int] = set()
        pos = self.text.find(needle)
        while pos >= 0:
            first = bisect.bisect_right(self.starts, pos) - 1
            last = bisect.bisect_right(self.starts, pos + len(needle) - 1) - 1
            found.update(range(first, last + 1))
            pos = self.text.find(needle, pos + 1)
        return sorted(i + self.offset for i in found)

    def words_in_one_sentence(self, name: str) -> bool:
        """True when one sentence holds every word of ``name`` (lemmatized, in any order;
        one-letter tokens such as a possessive ``s`` aside): "Mia's bicycle" is in
        "Mia owns a red bicycle"."""
        if self._tokens is None:
            self._tokens = [canonical.name_tokens(s) for s in self.sentences]
        words = {w for w in canonical.normalize_name(name).split() if len(w) > 1}
        return bool(words) and any(words <= set(tokens) for tokens in self._tokens)

    def mentions(self, name: str) -> list[int]:
        """Global indices of the sentences whose lemmatized words contain ``name``'s."""
        if self._tokens is None:
            self._tokens = [canonical.name_tokens(s) for s in self.sentences]
        needle = canonical.normalize_name(name).split()
        n = len(needle)
        if n == 0:
            return []
        out = []
        for i, tokens in enumerate(self._tokens):
            if any(tokens[j : j + n] == needle for j in range(len(tokens) - n + 1)):
                out.append(i + self.offset)
        return out


class _Validator:
    """One validation run; collects issues while it builds the graph."""

    def __init__(self, context: str, context_key: str, offset: int, limits: ValidationLimits) -> None:
        self.context_key = context_key
        self.limits = limits
        self.index = _SentenceIndex(context, offset)
        self.issues: list[ValidationIssue] = []
        self.builder = GraphBuilder()
        self.local: dict[str, str] = {}  # LLM local id -> canonical id

    def issue(self, path: str, kind: str, message: str) -> None:
        self.issues.append(ValidationIssue(path, kind, message))

    # -- field helpers: each returns None (and records why) when the value is unusable ------
    def string(
        self, item: dict[str, Any], key: str, path: str, cap: int, *, required: bool, nonempty: bool = False
    ) -> str | None:
        if key not in item:
            if required:
                self.issue(f"{path}.{key}", "missing_field", f"required field '{key}' is missing")
                return None
            return ""
        value = item[key]
        if not isinstance(value, str):
            self.issue(f"{path}.{key}", "wrong_type", f"'{key}' must be a string, got {_json_type(value)}")
            return None if required else ""
        if len(value) > cap:
            self.issue(
                f"{path}.{key}",
                "too_long",
                f"'{key}' has {len(value)} characters, at most {cap} are allowed; shorten it",
            )
            return None
        if nonempty and not value.strip():
            self.issue(f"{path}.{key}", "empty_value", f"'{key}' must not be empty")
            return None
        return value

    def unknown_fields(self, item: dict[str, Any], path: str, allowed: tuple[str, ...]) -> None:
        for key in item:
            if key not in allowed:
                self.issue(
                    f"{path}.{_short(str(key))}",
                    "unknown_field",
                    f"unknown field {_short(str(key))!r} (ignored); allowed: {', '.join(allowed)}",
                )

    def raw_text(self, item: dict[str, Any], path: str) -> tuple[str, list[int]] | None:
        text = self.string(item, "raw_text", path, self.limits.max_text_chars, required=True, nonempty=True)
        if text is None:
            return None
        if not any(c.isalnum() for c in text):
            self.issue(f"{path}.raw_text", "empty_value", "raw_text must quote words of the context")
            return None
        sentences = self.index.locate(text)
        if not sentences:
            self.issue(
                f"{path}.raw_text",
                "raw_text_not_in_context",
                f"raw_text {_short(text)!r} is not in the context; copy a sentence (or part of one) verbatim",
            )
            return None
        return text, sentences

    def provenance(self, sentences: list[int]) -> tuple[Provenance, ...]:
        return sorted_provenance(Provenance(self.context_key, s) for s in sentences)

    # -- node lists -------------------------------------------------------------------------
    def node_list(self, raw: dict[str, Any], key: str, parse: Callable[[dict[str, Any], str], Node | None]) -> None:
        items = raw.get(key, [])
        if not isinstance(items, list):
            self.issue(f"$.{key}", "wrong_type", f"'{key}' must be a list, got {_json_type(items)}")
            return
        cap = self.limits.max_nodes_per_list
        if len(items) > cap:
            self.issue(f"$.{key}", "too_many", f"{len(items)} {key}, at most {cap} are kept; merge or drop some")
        for i, item in enumerate(items[:cap]):
            path = f"$.{key}[{i}]"
            if not isinstance(item, dict):
                self.issue(path, "wrong_type", f"each of '{key}' must be an object, got {_json_type(item)}")
                continue
            local_id = self.string(item, "id", path, self.limits.max_short_chars, required=True, nonempty=True)
            node = parse(item, path)
            if local_id is None or node is None:
                continue
            owner = self.local.get(local_id)
            if owner is not None and owner != node.id:
                self.issue(
                    f"{path}.id",
                    "duplicate_id",
                    f"id {_short(local_id)!r} is already used by another node; give each node its own id",
                )
                continue
            self.local[local_id] = node.id
            for name in self.builder.add_node(node):
                self.issue(
                    path,
                    "conflict",
                    f"'{name}' differs from an earlier mention of the same "
                    f"{node.node_type.lower()}; the first value is kept",
                )

    def entity(self, item: dict[str, Any], path: str) -> Node | None:
        lim = self.limits
        self.unknown_fields(item, path, ("id", "name", "entity_type", "properties"))
        name = self.string(item, "name", path, lim.max_name_chars, required=True, nonempty=True)
        entity_type = self.string(item, "entity_type", path, lim.max_short_chars, required=False)
        properties = self.properties(item.get("properties", []), f"{path}.properties")
        if name is None or not self.has_words(name, f"{path}.name"):
            return None
        if not self.index.mentions(name) and not self.index.words_in_one_sentence(name):
            # an entity is an individual the text names; one it never names is invented
            # (small models copy the few-shot example's people). Concepts may be implied.
            self.issue(
                f"{path}.name",
                "name_not_in_context",
                f"entity {_short(name)!r} is not named in the text; name entities as the text does",
            )
            return None
        return Entity.create(name, entity_type or "", properties)

    def properties(self, raw: Any, path: str) -> dict[str, str]:
        lim = self.limits
        if isinstance(raw, dict):
            pairs = [({"key": k, "value": v}, f"{path}.{_short(str(k))}") for k, v in raw.items()]
        elif isinstance(raw, list):
            pairs = [(p, f"{path}[{i}]") for i, p in enumerate(raw)]
        else:
            self.issue(
                path, "wrong_type", f"'properties' must be a list of {{key, value}} objects, got {_json_type(raw)}"
            )
            return {}
        if len(pairs) > lim.max_properties:
            self.issue(path, "too_many", f"{len(pairs)} properties, at most {lim.max_properties} are kept")
        out: dict[str, str] = {}
        for pair, ppath in pairs[: lim.max_properties]:
            if not isinstance(pair, dict):
                self.issue(ppath, "wrong_type", f"a property must be a {{key, value}} object, got {_json_type(pair)}")
                continue
            self.unknown_fields(pair, ppath, ("key", "value"))
            key = self.string(pair, "key", ppath, lim.max_short_chars, required=True, nonempty=True)
            value = self.string(pair, "value", ppath, lim.max_short_chars, required=True)
            if key is None or value is None:
                continue
            if key in out and out[key] != value:
                self.issue(
                    ppath,
                    "conflict",
                    f"property {_short(key)!r} is given twice with different values; the first is kept",
                )
                continue
            out[key] = value
        return out

    def concept(self, item: dict[str, Any], path: str) -> Node | None:
        lim = self.limits
        self.unknown_fields(item, path, ("id", "name", "labels"))
        name = self.string(item, "name", path, lim.max_name_chars, required=True, nonempty=True)
        labels: list[str] = []
        raw_labels = item.get("labels", [])
        if not isinstance(raw_labels, list):
            self.issue(
                f"{path}.labels", "wrong_type", f"'labels' must be a list of strings, got {_json_type(raw_labels)}"
            )
            raw_labels = []
        if len(raw_labels) > lim.max_labels:
            self.issue(f"{path}.labels", "too_many", f"{len(raw_labels)} labels, at most {lim.max_labels} are kept")
        for j, label in enumerate(raw_labels[: lim.max_labels]):
            if not isinstance(label, str):
                self.issue(f"{path}.labels[{j}]", "wrong_type", f"a label must be a string, got {_json_type(label)}")
            elif len(label) > lim.max_short_chars:
                self.issue(
                    f"{path}.labels[{j}]",
                    "too_long",
                    f"label has {len(label)} characters, at most {lim.max_short_chars} are allowed",
                )
            elif label.strip():
                labels.append(label)
        if name is None or not self.has_words(name, f"{path}.name"):
            return None
        return Concept.create(name, labels)

    def rule(self, item: dict[str, Any], path: str) -> Node | None:
        lim = self.limits
        self.unknown_fields(item, path, ("id", "expression", "description", "raw_text"))
        expression = self.string(item, "expression", path, lim.max_text_chars, required=True, nonempty=True)
        description = self.string(item, "description", path, lim.max_text_chars, required=False)
        located = self.raw_text(item, path)
        if expression is None or description is None or located is None:
            return None
        raw_text, sentences = located
        return Rule.create(expression, description, raw_text, self.provenance(sentences))

    def constraint(self, item: dict[str, Any], path: str) -> Node | None:
        lim = self.limits
        self.unknown_fields(
            item, path, ("id", "raw_expression", "constraint_type", "relation", "operation", "value", "raw_text")
        )
        expression = self.string(item, "raw_expression", path, lim.max_text_chars, required=True, nonempty=True)
        ctype = self.string(item, "constraint_type", path, lim.max_short_chars, required=True, nonempty=True)
        if ctype is not None and ctype not in CONSTRAINT_TYPES:
            self.issue(
                f"{path}.constraint_type",
                "illegal_value",
                f"constraint_type {_short(ctype)!r} is not one of {', '.join(CONSTRAINT_TYPES)}",
            )
            ctype = None
        extras = {}
        for key in ("relation", "operation", "value"):
            required = (key == "relation" and ctype == "Ordering") or (key == "operation" and ctype == "Arithmetic")
            extras[key] = self.string(item, key, path, lim.max_short_chars, required=required, nonempty=required)
        located = self.raw_text(item, path)
        if expression is None or ctype is None or located is None or None in extras.values():
            return None
        raw_text, sentences = located
        return Constraint.create(
            expression,
            ctype,
            extras["relation"] or "",
            extras["operation"] or "",
            extras["value"] or "",
            raw_text,
            self.provenance(sentences),
        )

    def has_words(self, name: str, path: str) -> bool:
        if canonical.normalize_name(name):
            return True
        self.issue(path, "empty_value", f"name {_short(name)!r} has no letters or digits")
        return False

    # -- edges ------------------------------------------------------------------------------
    def edges(self, raw: dict[str, Any]) -> None:
        lim = self.limits
        items = raw.get("edges", [])
        if not isinstance(items, list):
            self.issue("$.edges", "wrong_type", f"'edges' must be a list, got {_json_type(items)}")
            return
        if len(items) > lim.max_edges:
            self.issue("$.edges", "too_many", f"{len(items)} edges, at most {lim.max_edges} are kept")
        for i, item in enumerate(items[: lim.max_edges]):
            path = f"$.edges[{i}]"
            if not isinstance(item, dict):
                self.issue(path, "wrong_type", f"each edge must be an object, got {_json_type(item)}")
                continue
            self.unknown_fields(item, path, ("source", "target", "type", "raw_text"))
            source = self.string(item, "source", path, lim.max_short_chars, required=True, nonempty=True)
            target = self.string(item, "target", path, lim.max_short_chars, required=True, nonempty=True)
            edge_type = self.string(item, "type", path, lim.max_short_chars, required=True, nonempty=True)
            located = self.raw_text(item, path)
            if edge_type is not None and not is_edge_type(edge_type):
                self.issue(
                    f"{path}.type",
                    "unknown_edge_type",
                    f"edge type {_short(edge_type)!r} is neither IS_A, HAS, APPLIES_TO, MENTIONS, RELATED_TO "
                    "nor an UPPER_SNAKE relation name such as LEFT_OF",
                )
                edge_type = None
            ends = [self.endpoint(ref, f"{path}.{key}") for ref, key in ((source, "source"), (target, "target"))]
            if edge_type is None or located is None or None in ends:
                continue
            src, dst = ends
            src_type, dst_type = src.node_type, dst.node_type
            allowed_src, allowed_dst = edge_endpoints(edge_type)
            if src_type not in allowed_src or dst_type not in allowed_dst:
                self.issue(
                    path,
                    "bad_endpoint",
                    f"{edge_type} cannot go from a {src_type} to a {dst_type}; allowed: from "
                    f"{'/'.join(sorted(allowed_src))} to {'/'.join(sorted(allowed_dst))}",
                )
                continue
            raw_text, sentences = located
            self.builder.add_edge(Edge(src.id, dst.id, edge_type, raw_text, self.provenance(sentences)))

    def endpoint(self, ref: str | None, path: str) -> Node | None:
        if ref is None:
            return None
        node_id = self.local.get(ref)
        if node_id is None:
            self.issue(
                path,
                "dangling_edge",
                f"{_short(ref)!r} is not the id of any valid node; use an id defined "
                "in entities, concepts, rules or constraints",
            )
            return None
        return self.builder.node(node_id)

    # -- the whole output -------------------------------------------------------------------
    def run(self, raw: Any) -> ValidationResult:
        if not isinstance(raw, dict):
            self.issue(
                "$",
                "not_object",
                f"the output must be one JSON object with the lists {', '.join(TOP_LEVEL_KEYS)}; got {_json_type(raw)}",
            )
            return self.result()
        for key in raw:
            if key not in TOP_LEVEL_KEYS:
                self.issue(
                    f"$.{_short(str(key))}",
                    "unknown_node_type",
                    f"unknown list {_short(str(key))!r} (ignored); allowed: {', '.join(TOP_LEVEL_KEYS)}",
                )
        self.node_list(raw, "entities", self.entity)
        self.node_list(raw, "concepts", self.concept)
        self.node_list(raw, "rules", self.rule)
        self.node_list(raw, "constraints", self.constraint)
        self.edges(raw)
        self.name_provenance()
        return self.result()

    def name_provenance(self) -> None:
        """Give entities and concepts the sentences naming them plus their edges' sentences."""
        by_node: dict[str, list[Provenance]] = {}
        for edge in self.builder.edges():
            by_node.setdefault(edge.source_id, []).extend(edge.provenance)
            by_node.setdefault(edge.target_id, []).extend(edge.provenance)
        for node in self.builder.nodes():
            if isinstance(node, (Entity, Concept)):
                found = self.provenance(self.index.mentions(node.name)) + tuple(by_node.get(node.id, ()))
                self.builder.add_node(replace(node, provenance=sorted_provenance(found)))

    def result(self) -> ValidationResult:
        issues = self.issues
        cap = self.limits.max_issues
        if len(issues) > cap:
            left_out = len(issues) - (cap - 1)
            issues = issues[: cap - 1] + [ValidationIssue("$", "too_many", f"{left_out} more issues not shown")]
        return ValidationResult(self.builder.build(self.context_key), tuple(issues))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def validate_extraction(
    raw: Any, context: str, context_key: str, *, sentence_offset: int = 0, limits: ValidationLimits | None = None
) -> ValidationResult:
    """Validate a decoded extraction output against its context (rules in the module docstring).

    Args:
        raw: the LLM's output after ``json.loads``: any value.
        context: the text the LLM read (a whole context or one chunk of it).
        context_key: key of the resulting graph, and the document id in its provenance.
        sentence_offset: global index of ``context``'s first sentence (a chunk's
            :attr:`symbolkg.retrieval.lkg.extract.Chunk.first_sentence`), so provenance uses
            the whole context's sentence numbers.
        limits: caps; :class:`ValidationLimits` defaults when None.

    Returns:
        The valid graph (possibly empty) and the issues found.

    Raises:
        ValueError: if ``context`` is not a string, ``context_key`` is empty, or
            ``sentence_offset`` is negative (caller errors, not LLM errors).

    Example:
        >>> raw = {"entities": [{"id": "e1", "name": "Bob"}], "concepts": [{"id": "c1", "name": "cats"}],
        ...        "edges": [{"source": "e1", "target": "c1", "type": "IS_A", "raw_text": "Bob is a cat."}]}
        >>> result = validate_extraction(raw, "Bob is a cat.", "ctx")
        >>> result.status, [n.name for n in result.graph.nodes], result.graph.edges[0].edge_type
        ('valid', ['Bob', 'cats'], 'IS_A')
    """
    if not isinstance(context, str):
        raise ValueError(f"context must be a string, got {type(context).__name__}")
    if not isinstance(context_key, str) or not context_key:
        raise ValueError(f"context_key must be a non-empty string, got {context_key!r}")
    if not isinstance(sentence_offset, int) or sentence_offset < 0:
        raise ValueError(f"sentence_offset must be an int >= 0, got {sentence_offset!r}")
    return _Validator(context, context_key, sentence_offset, limits or ValidationLimits()).run(raw)
