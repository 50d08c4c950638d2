"""The Logical Knowledge Graph (LKG): schema, canonical ids, validation, merging, extraction prompt, Parquet store.

Modules (each imports only the standard library, third-party packages and its siblings):

* :mod:`symbolkg.retrieval.lkg.schema` — typed records (Entity, Concept, Rule, Constraint, Edge, Graph,
  ContextRecord, ValidationIssue) and the Arrow schemas ``NODE_SCHEMA`` / ``EDGE_SCHEMA``.
* :mod:`symbolkg.retrieval.lkg.canonical` — normalization, canonical ids, sentence splitting.
* :mod:`symbolkg.retrieval.lkg.validate` — raw LLM output -> valid Graph + structured issues.
* :mod:`symbolkg.retrieval.lkg.merge` — merging partial graphs by canonical id with provenance.
* :mod:`symbolkg.retrieval.lkg.extract` — extraction / repair prompts, JSON schema, parsing, chunking.
* :mod:`symbolkg.retrieval.lkg.store` — Parquet store and cache of extracted graphs.

Nothing here calls a model: stage code in ``jobs/`` sends the messages to an engine and hands
the completion to :func:`symbolkg.retrieval.lkg.extract.parse_extraction`.
"""

from symbolkg.retrieval.lkg.canonical import CANONICAL_VERSION, normalize_expression, normalize_name, split_sentences
from symbolkg.retrieval.lkg.merge import merge_graphs
from symbolkg.retrieval.lkg.schema import (
    CONSTRAINT_TYPES,
    EDGE_SCHEMA,
    NODE_SCHEMA,
    NODE_TYPES,
    STRUCTURAL_EDGE_TYPES,
    Concept,
    Constraint,
    ContextRecord,
    Edge,
    Entity,
    Graph,
    Node,
    Provenance,
    Rule,
    ValidationIssue,
)
from symbolkg.retrieval.lkg.validate import ValidationLimits, ValidationResult, validate_extraction

__all__ = [
    "CANONICAL_VERSION",
    "CONSTRAINT_TYPES",
    "EDGE_SCHEMA",
    "NODE_SCHEMA",
    "NODE_TYPES",
    "STRUCTURAL_EDGE_TYPES",
    "Concept",
    "Constraint",
    "ContextRecord",
    "Edge",
    "Entity",
    "Graph",
    "Node",
    "Provenance",
    "Rule",
    "ValidationIssue",
    "ValidationLimits",
    "ValidationResult",
    "merge_graphs",
    "normalize_expression",
    "normalize_name",
    "split_sentences",
    "validate_extraction",
]
