"""LKG extraction: the prompt, its JSON schema, parsing of the completion, and chunking.

This module builds chat messages and parses completions; it never calls a model
(stage code in ``jobs/`` does, through an engine it is given). Messages are
lists of ``(role, content)`` tuples, as in :mod:`symbolkg.solvers.prompts`.

Flow for one context (SymbolLKG's LKG construction):

1. :func:`chunk_context` cuts a long context on sentence boundaries; every
   :class:`Chunk` knows the global index of its first sentence.
2. :func:`extraction_messages` asks for the graph of one chunk as one JSON
   object; with structured decoding, :func:`chunk_schema` constrains the output
   to what validation accepts wherever a JSON schema can say it (quotes, entity
   names, ids, edge endpoints by type, bounded strings and lists: see
   :func:`extraction_schema`).
3. :func:`parse_extraction` cuts the JSON out of the completion (code fences and
   prose around it are tolerated), decodes it and validates it
   (:func:`symbolkg.retrieval.lkg.validate.validate_extraction`). Bad JSON is an issue,
   not an exception.
4. While issues remain and rounds are left, :func:`repair_messages` shows the
   model its output and the issues and asks for the whole corrected object.
5. The chunk graphs are merged (:func:`symbolkg.retrieval.lkg.merge.merge_graphs`).

The prompt has one hand-written few-shot example (:data:`EXAMPLE_CONTEXT`,
:data:`EXAMPLE_OUTPUT`, made up for this purpose; the tests check that it
matches the schema and validates without issues). The extraction and repair
prompts share their prefix (system message and example) so that an engine with
prefix caching computes it once. Change :data:`PROMPT_VERSION` whenever the
prompt, the schema or the example change: it is part of the store's cache key. One
exception, made once: :data:`RELATION_PATTERN` left out ``APPLIES_TO`` and ``MENTIONS``
after ``lkg-extract-4``, ruling out during decoding only edges that validation always
rejected (``bad_endpoint``); every graph stored under 4 is one the current rules accept,
so the version stayed and precomputed stores (the kept qwen runs' among them) stay valid.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from symbolkg.retrieval.lkg.canonical import split_sentences
from symbolkg.retrieval.lkg.schema import CONSTRAINT_TYPES, Graph, ValidationIssue
from symbolkg.retrieval.lkg.validate import ValidationLimits, ValidationResult, validate_extraction
from symbolkg.solvers.json_text import close_truncated

__all__ = [
    "EXAMPLE_CONTEXT",
    "EXAMPLE_OUTPUT",
    "FIELD_MAX_CHARS",
    "MAX_OUTPUT_CHARS",
    "PROMPT_VERSION",
    "Chunk",
    "SchemaBounds",
    "chunk_context",
    "chunk_schema",
    "extraction_messages",
    "extraction_schema",
    "name_spans",
    "parse_extraction",
    "repair_messages",
    "split_sentences",
]

#: Version of prompt + schema + example. Part of the store's cache key.
PROMPT_VERSION = "lkg-extract-4"

#: A completion longer than this is rejected before decoding (a runaway or adversarial output).
MAX_OUTPUT_CHARS = 200_000

#: Most issues listed in a repair message, and most characters of the previous output shown
#: (about 1,700 tokens: with the prompt and the issues, a repair request fits a 4,096-token
#: context, the embedded engine's default; a longer prompt is rejected by the engine).
MAX_REPAIR_ISSUES = 20
MAX_REPAIR_OUTPUT_CHARS = 6_000

Messages = list[tuple[str, str]]

SYSTEM = f"""You build a logical knowledge graph from a text. Output one JSON object and nothing else.

The object has five lists:
- "entities": concrete individuals (people, objects, places). Fields: "id" (e1, e2, ...), "name" (one to five
  words in a row, copied from the text), "entity_type" (person, object, place, ... or ""), "properties" (a list of
  {{"key", "value"}} strings, e.g. color).
- "concepts": classes and categories (cat, vehicle, red things). Fields: "id" (c1, ...), "name", "labels"
  (broader categories or synonyms, may be empty).
- "rules": general statements, usually "if ... then ..." or "all/every ...". Fields: "id" (r1, ...), "expression"
  (a first-order-logic style formula), "description" (the rule in plain words), "raw_text".
- "constraints": restrictions in puzzles. Fields: "id" (k1, ...), "raw_expression" (a formula),
  "constraint_type" (one of {", ".join(CONSTRAINT_TYPES)}), "relation" (for Ordering, an UPPER_SNAKE name such as
  LEFT_OF or BEFORE), "operation" (for Arithmetic, such as > or =), "value" (for Arithmetic, the number),
  "raw_text". Leave fields that do not apply as "".
- "edges": typed links between the ids above. Fields: "source", "target" (ids), "type", "raw_text".
  Types: IS_A (entity or concept -> concept), HAS (entity or concept -> entity or concept),
  APPLIES_TO and MENTIONS (rule or constraint -> entity or concept), RELATED_TO (anything), or a relation
  between entities named in UPPER_SNAKE case (LEFT_OF, FATHER_OF, OWNS).

Rules:
- Every "raw_text" is copied word for word from the text: a whole sentence or a part of one.
- Every edge uses ids defined in the lists; every id is used for one thing only.
- Name each thing the same way everywhere. Do not invent facts that the text does not state.
- Leave a list empty when the text has nothing of that kind."""

EXAMPLE_CONTEXT = (
    "Mia owns a red bicycle. Every bicycle is a vehicle. If a person owns a vehicle, then that person pays a "
    "road tax. Mia sits to the left of Leo. Mia and Leo have different ages. Leo is older than 20."
)

EXAMPLE_OUTPUT: dict[str, Any] = {
    "entities": [
        {"id": "e1", "name": "Mia", "entity_type": "person", "properties": []},
        {"id": "e2", "name": "Leo", "entity_type": "person", "properties": []},
        {"id": "e3", "name": "red bicycle", "entity_type": "object", "properties": [{"key": "color", "value": "red"}]},
    ],
    "concepts": [
        {"id": "c1", "name": "bicycle", "labels": ["vehicle"]},
        {"id": "c2", "name": "vehicle", "labels": []},
        {"id": "c3", "name": "person", "labels": []},
    ],
    "rules": [
        {
            "id": "r1",
            "expression": "forall x: (person(x) & exists y: (vehicle(y) & owns(x, y))) -> pays_road_tax(x)",
            "description": "A person who owns a vehicle pays a road tax.",
            "raw_text": "If a person owns a vehicle, then that person pays a road tax.",
        },
    ],
    "constraints": [
        {
            "id": "k1",
            "raw_expression": "left_of(Mia, Leo)",
            "constraint_type": "Ordering",
            "relation": "LEFT_OF",
            "operation": "",
            "value": "",
            "raw_text": "Mia sits to the left of Leo.",
        },
        {
            "id": "k2",
            "raw_expression": "age(Mia) != age(Leo)",
            "constraint_type": "AllDifferent",
            "relation": "",
            "operation": "",
            "value": "",
            "raw_text": "Mia and Leo have different ages.",
        },
        {
            "id": "k3",
            "raw_expression": "age(Leo) > 20",
            "constraint_type": "Arithmetic",
            "relation": "",
            "operation": ">",
            "value": "20",
            "raw_text": "Leo is older than 20.",
        },
    ],
    "edges": [
        {"source": "e1", "target": "e3", "type": "OWNS", "raw_text": "Mia owns a red bicycle."},
        {"source": "e3", "target": "c1", "type": "IS_A", "raw_text": "Mia owns a red bicycle."},
        {"source": "c1", "target": "c2", "type": "IS_A", "raw_text": "Every bicycle is a vehicle."},
        {
            "source": "r1",
            "target": "c3",
            "type": "APPLIES_TO",
            "raw_text": "If a person owns a vehicle, then that person pays a road tax.",
        },
        {
            "source": "r1",
            "target": "c2",
            "type": "MENTIONS",
            "raw_text": "If a person owns a vehicle, then that person pays a road tax.",
        },
        {"source": "e1", "target": "e2", "type": "LEFT_OF", "raw_text": "Mia sits to the left of Leo."},
        {"source": "k1", "target": "e1", "type": "APPLIES_TO", "raw_text": "Mia sits to the left of Leo."},
        {"source": "k1", "target": "e2", "type": "APPLIES_TO", "raw_text": "Mia sits to the left of Leo."},
        {"source": "k2", "target": "e1", "type": "APPLIES_TO", "raw_text": "Mia and Leo have different ages."},
        {"source": "k2", "target": "e2", "type": "APPLIES_TO", "raw_text": "Mia and Leo have different ages."},
        {"source": "k3", "target": "e2", "type": "APPLIES_TO", "raw_text": "Leo is older than 20."},
    ],
}


# --------------------------------------------------------------------------- schema


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _array(items: dict[str, Any], max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": items, "maxItems": max_items}


@dataclass(frozen=True)
class SchemaBounds:
    """How many items each list of one structured-decoded output may hold.

    Attributes:
        entities, concepts, rules, constraints: most items per node list.
        edges: most edges.
        properties: most properties per entity.
        labels: most labels per concept.
    """

    entities: int
    concepts: int
    rules: int
    constraints: int
    edges: int
    properties: int
    labels: int

    @classmethod
    def from_limits(cls, limits: ValidationLimits) -> SchemaBounds:
        """The validation caps themselves (the generic schema)."""
        n = limits.max_nodes_per_list
        return cls(n, n, n, n, limits.max_edges, limits.max_properties, limits.max_labels)

    @classmethod
    def for_sentences(cls, n: int, limits: ValidationLimits | None = None) -> SchemaBounds:
        """Bounds for a text of ``n`` sentences, capped by ``limits``.

        ``n + 2`` entities and concepts, ``n`` rules and constraints (each quotes one
        sentence), ``3n + 3`` edges, 4 properties and 4 labels: the hand-checked graphs
        in ``tests/fixtures/lkg`` fit, and a model that loops, repeating one item, stops
        early, inside valid JSON, instead of at ``max_tokens``.
        """
        lim = limits or ValidationLimits()
        n = max(1, n)
        nodes = lim.max_nodes_per_list
        return cls(
            min(nodes, n + 2),
            min(nodes, n + 2),
            min(nodes, n),
            min(nodes, n),
            min(lim.max_edges, 3 * n + 3),
            min(lim.max_properties, 4),
            min(lim.max_labels, 4),
        )


#: ``maxLength`` of each string field in a text-specific schema (below the validation caps).
FIELD_MAX_CHARS: dict[str, int] = {
    "concept_name": 100,
    "entity_type": 40,
    "key": 40,
    "value": 60,
    "label": 60,
    "expression": 300,
    "description": 300,
    "raw_expression": 300,
    "relation": 40,
    "operation": 10,
    "constraint_value": 40,
}

#: Most words of an entity name in a text-specific schema (see :func:`name_spans`).
MAX_NAME_WORDS = 5

_STRIP = string.punctuation.replace("'", "") + "\u201c\u201d\u2018\u2019"


def name_spans(sentences: Sequence[str], max_words: int = MAX_NAME_WORDS) -> list[str]:
    """Every run of 1 to ``max_words`` consecutive words of each sentence: the entity names a
    text-specific schema allows ("as in the text").

    Words are split on whitespace, with punctuation stripped from their ends (an inner
    apostrophe stays: "Mia's"). Runs never cross sentences. Order: first occurrence.

    Example:
        >>> name_spans(["Ann, a nurse, sings."], 2)
        ['Ann', 'Ann a', 'a', 'a nurse', 'nurse', 'nurse sings', 'sings']
    """
    out: dict[str, None] = {}
    for sentence in sentences:
        words = [w for w in (w.strip(_STRIP) for w in sentence.split()) if w]
        for i in range(len(words)):
            for j in range(i + 1, min(len(words), i + max_words) + 1):
                out[" ".join(words[i:j])] = None
    return list(out)


def extraction_schema(
    limits: ValidationLimits | None = None, sentences: Sequence[str] | None = None, bounds: SchemaBounds | None = None
) -> dict[str, Any]:
    """The JSON schema of one extraction output, for structured decoding (vLLM guided JSON).

    Only objects, arrays, strings, enums and (text-specific) one ``anyOf``; every field
    required (the prompt says to use ``""`` where a field does not apply);
    ``additionalProperties: false``; every array bounded by ``maxItems``.

    The generic schema (``sentences`` None) admits any strings; ``max_tokens`` bounds
    them and validation rejects what breaks its rules. With ``sentences`` (the sentences
    of the text being extracted, as :func:`split_sentences` gives them), the schema is
    specific to that text and rules out, during decoding, what validation would reject:

    * every ``raw_text`` is an ``enum`` of those sentences (quotes are word for word);
    * an entity's ``name`` is an ``enum`` of the text's word runs (:func:`name_spans`);
    * ids are positional (``prefixItems``): the i-th entity is ``ei``, the i-th concept
      ``ci``, and so on, so no id names two items;
    * an edge is one of four shapes (``anyOf``) whose endpoint ids are of the node
      types its type allows (:data:`symbolkg.retrieval.lkg.schema.EDGE_ENDPOINTS`): ``IS_A``
      from an entity or concept to a concept, ``HAS`` and UPPER_SNAKE relations between
      entities and concepts (:data:`RELATION_PATTERN`: never ``APPLIES_TO`` or ``MENTIONS``),
      ``APPLIES_TO`` and ``MENTIONS`` from a rule or constraint, ``RELATED_TO`` between any;
    * every other string has a ``maxLength`` (:data:`FIELD_MAX_CHARS`).

    What it cannot rule out, validation still catches: an edge to an id the output never
    defined (``dangling_edge``), two items that are one node with clashing attributes
    (``conflict``), and a cut output (``truncated``).

    Args:
        limits: the caps to mirror; :class:`ValidationLimits` defaults when None.
        sentences: the text's sentences; None for the generic schema (any strings).
        bounds: list bounds; :meth:`SchemaBounds.from_limits` of ``limits`` when None.

    Returns:
        A fresh JSON-schema dict (safe to modify).
    """
    b = bounds or SchemaBounds.from_limits(limits or ValidationLimits())
    return _text_schema(b, sentences) if sentences else _generic_schema(b)


def _generic_schema(b: SchemaBounds) -> dict[str, Any]:
    """:func:`extraction_schema` without a text: any strings, bounded arrays."""
    string: dict[str, Any] = {"type": "string"}
    entity = _object(
        {
            "id": string,
            "name": string,
            "entity_type": string,
            "properties": _array(_object({"key": string, "value": string}), b.properties),
        }
    )
    concept = _object({"id": string, "name": string, "labels": _array(string, b.labels)})
    rule = _object({"id": string, "expression": string, "description": string, "raw_text": string})
    constraint = _object(
        {
            "id": string,
            "raw_expression": string,
            "constraint_type": {"type": "string", "enum": list(CONSTRAINT_TYPES)},
            "relation": string,
            "operation": string,
            "value": string,
            "raw_text": string,
        }
    )
    edge = _object({"source": string, "target": string, "type": string, "raw_text": string})
    return _object(
        {
            "entities": _array(entity, b.entities),
            "concepts": _array(concept, b.concepts),
            "rules": _array(rule, b.rules),
            "constraints": _array(constraint, b.constraints),
            "edges": _array(edge, b.edges),
        }
    )


def _string_field(field: str) -> dict[str, Any]:
    return {"type": "string", "maxLength": FIELD_MAX_CHARS[field]}


def _one_of(values: Sequence[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(1, n + 1)]


_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_UPPER_DIGIT = _UPPER + "0123456789"


def _word_except(excluded: Sequence[str], first: str, rest: str, min_len: int, max_len: int) -> str:
    """A regex (no lookaround: xgrammar has none) for a word of ``min_len``-``max_len`` characters, the
    first from ``first``, the others from ``rest``, that is none of ``excluded``: a walk down the trie of
    the excluded words, leaving it at any character the trie does not go on with, or ending early."""

    def chars(allowed: str) -> str:
        return "[" + allowed + "]"

    def walk(prefix: str, depth: int) -> str | None:  # None: no word goes on from here
        allowed = first if depth == 0 else rest
        children = sorted({w[depth] for w in excluded if len(w) > depth and w.startswith(prefix)})
        options = []
        if depth >= min_len and prefix not in excluded:
            options.append("")  # the word ends here
        if depth < max_len:
            other = "".join(c for c in allowed if c not in children)
            lo, hi = max(0, min_len - depth - 1), max_len - depth - 1
            if other:
                options.append(chars(other) + (f"{chars(rest)}{{{lo},{hi}}}" if hi > 0 else ""))
            options.extend(c + tail for c in children if (tail := walk(prefix + c, depth + 1)) is not None)
        if not options:
            return None
        return "(" + "|".join(options) + ")" if len(options) > 1 else options[0]

    word = walk("", 0)
    if word is None:
        raise ValueError(f"no word of {min_len}-{max_len} characters is left once {list(excluded)} are excluded")
    return word


def _relation_pattern() -> str:
    """UPPER_SNAKE relation names of at most 64 characters (a first word of 1-16, then up to three
    ``_`` parts of 2-16, so never ``IS_A``), except ``MENTIONS`` and ``APPLIES_TO``: those are structural
    types from a rule or constraint only, and between entities and concepts validation rejects them
    (``bad_endpoint``). Flat alternatives: xgrammar 0.1 admits ``A_TO`` for ``^A(_X(_Y){0,2})?$`` where
    ``_X`` excludes ``_TO`` (a repetition nested in an optional group), and none of the flat form."""
    part = f"_[{_UPPER_DIGIT}]{{2,15}}"
    first_word = _word_except(("MENTIONS", "APPLIES"), _UPPER, _UPPER_DIGIT, 1, 16)
    not_to = "_" + _word_except(("TO",), _UPPER_DIGIT, _UPPER_DIGIT, 2, 15)
    names = [first_word + part * n for n in range(4)]
    names += ["MENTIONS" + part * n for n in range(1, 4)]
    names += ["APPLIES"] + ["APPLIES" + not_to + part * n for n in range(3)]
    names += ["APPLIES_TO" + part * n for n in range(1, 3)]
    return "^(" + "|".join(names) + ")$"


#: The JSON-schema pattern of a typed relation's name in the text-specific extraction schema.
RELATION_PATTERN = _relation_pattern()


def _text_schema(b: SchemaBounds, sentences: Sequence[str]) -> dict[str, Any]:
    """:func:`extraction_schema` specific to the text of ``sentences`` (see its docstring)."""
    e_ids, c_ids = _ids("e", b.entities), _ids("c", b.concepts)
    r_ids, k_ids = _ids("r", b.rules), _ids("k", b.constraints)
    quote = {"$ref": "#/$defs/quote"}  # large enums once, referenced from every item

    def positional(make: Callable[[str], dict[str, Any]], item_ids: list[str]) -> dict[str, Any]:
        # item i has id <prefix>i: no id can name two items, and none is skipped
        return {"type": "array", "prefixItems": [make(i) for i in item_ids], "items": False, "maxItems": len(item_ids)}

    def entity(item_id: str) -> dict[str, Any]:
        return _object(
            {
                "id": _one_of([item_id]),
                "name": {"$ref": "#/$defs/entity_name"},
                "entity_type": _string_field("entity_type"),
                "properties": _array(
                    _object({"key": _string_field("key"), "value": _string_field("value")}), b.properties
                ),
            }
        )

    def concept(item_id: str) -> dict[str, Any]:
        return _object(
            {
                "id": _one_of([item_id]),
                "name": _string_field("concept_name"),
                "labels": _array(_string_field("label"), b.labels),
            }
        )

    def rule(item_id: str) -> dict[str, Any]:
        return _object(
            {
                "id": _one_of([item_id]),
                "expression": _string_field("expression"),
                "description": _string_field("description"),
                "raw_text": quote,
            }
        )

    def constraint(item_id: str) -> dict[str, Any]:
        return _object(
            {
                "id": _one_of([item_id]),
                "raw_expression": _string_field("raw_expression"),
                "constraint_type": _one_of(CONSTRAINT_TYPES),
                "relation": _string_field("relation"),
                "operation": _string_field("operation"),
                "value": _string_field("constraint_value"),
                "raw_text": quote,
            }
        )

    def edge(edge_type: dict[str, Any], sources: list[str], targets: list[str]) -> dict[str, Any]:
        return _object({"source": _one_of(sources), "target": _one_of(targets), "type": edge_type, "raw_text": quote})

    things = e_ids + c_ids
    relation = {"type": "string", "pattern": RELATION_PATTERN}
    shapes = [
        edge(_one_of(["IS_A"]), things, c_ids),
        edge(_one_of(["APPLIES_TO", "MENTIONS"]), r_ids + k_ids, things),
        edge(_one_of(["RELATED_TO"]), things + r_ids + k_ids, things + r_ids + k_ids),
        edge(relation, things, things),  # HAS and typed relations (LEFT_OF, OWNS)
    ]
    schema = _object(
        {
            "entities": positional(entity, e_ids),
            "concepts": positional(concept, c_ids),
            "rules": positional(rule, r_ids),
            "constraints": positional(constraint, k_ids),
            "edges": _array({"anyOf": shapes}, b.edges),
        }
    )
    schema["$defs"] = {"quote": _one_of(list(dict.fromkeys(sentences))), "entity_name": _one_of(name_spans(sentences))}
    return schema


def chunk_schema(sentences: Sequence[str]) -> dict[str, Any]:
    """The structured-decoding schema for extracting one chunk: :func:`extraction_schema` with
    ``sentences`` and :meth:`SchemaBounds.for_sentences` of the chunk's size.

    Args:
        sentences: the chunk's sentences (:attr:`Chunk.sentences`).

    Returns:
        A fresh JSON-schema dict.
    """
    return extraction_schema(sentences=sentences, bounds=SchemaBounds.for_sentences(len(sentences)))


# --------------------------------------------------------------------------- messages


def _user_message(context: str, question: str | None) -> str:
    text = f"Text:\n{context}"
    if question:
        text += (
            "\n\nQuestion (for focus only; take every raw_text from the text above, never from the question):\n"
            f"{question}"
        )
    return text + "\n\nJSON:"


def extraction_messages(context: str, question: str | None = None) -> Messages:
    """Chat messages asking for the LKG of ``context``.

    Args:
        context: the text to extract from (a whole context or one :class:`Chunk`'s text).
        question: the problem's question, shown for focus only; None to leave it out.

    Returns:
        ``[(role, content), ...]``: system, the few-shot example (user, assistant), the request (user).

    Raises:
        ValueError: if ``context`` is empty.
    """
    if not isinstance(context, str) or not context.strip():
        raise ValueError("extraction_messages needs a non-empty context")
    return [
        ("system", SYSTEM),
        ("user", _user_message(EXAMPLE_CONTEXT, None)),
        ("assistant", json.dumps(EXAMPLE_OUTPUT, ensure_ascii=False)),
        ("user", _user_message(context, question)),
    ]


def repair_messages(
    context: str, previous_output: str, errors: Sequence[ValidationIssue], question: str | None = None
) -> Messages:
    """Chat messages asking the model to correct its previous extraction.

    The prefix is :func:`extraction_messages` (same context and question), then
    the model's previous output (cut to :data:`MAX_REPAIR_OUTPUT_CHARS`), then
    the issues (at most :data:`MAX_REPAIR_ISSUES`) and a request for the whole
    corrected object.

    Args:
        context: the same text as in the extraction request.
        previous_output: the completion that had issues, as returned by the engine.
        errors: the issues :func:`parse_extraction` reported for it.
        question: the same question as in the extraction request.

    Returns:
        ``[(role, content), ...]`` ending with a user message.

    Raises:
        ValueError: if ``context`` is empty or ``errors`` is empty (nothing to repair).
    """
    if not errors:
        raise ValueError("repair_messages needs at least one issue to report")
    shown = previous_output
    if len(shown) > MAX_REPAIR_OUTPUT_CHARS:
        shown = shown[:MAX_REPAIR_OUTPUT_CHARS] + "\n[... output cut ...]"
    lines = [f"- {e.path} ({e.kind}): {e.message}" for e in errors[:MAX_REPAIR_ISSUES]]
    if len(errors) > MAX_REPAIR_ISSUES:
        lines.append(f"- ... and {len(errors) - MAX_REPAIR_ISSUES} more")
    request = (
        "Your JSON has these problems:\n"
        + "\n".join(lines)
        + "\n\nWrite the whole corrected JSON object again, with all five lists. Keep what was right. "
        "Copy every raw_text word for word from the text.\n\nJSON:"
    )
    return extraction_messages(context, question) + [("assistant", shown), ("user", request)]


# --------------------------------------------------------------------------- parsing

_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)


def _invalid(message: str, context_key: str, path: str = "$", kind: str = "invalid_json") -> ValidationResult:
    return ValidationResult(Graph(context_key), (ValidationIssue(path, kind, message),))


def parse_extraction(
    text: str, context: str, context_key: str, *, sentence_offset: int = 0, limits: ValidationLimits | None = None
) -> ValidationResult:
    """Decode and validate one extraction completion.

    The JSON object is taken from the first code fence if there is one holding
    a ``{`` (an unclosed fence runs to the end), else from the whole text; decoding starts
    at its first ``{`` and stops at the end of that object, so prose before or
    after it is ignored. Text that is not JSON, nests too deeply, or is longer
    than :data:`MAX_OUTPUT_CHARS` yields an empty graph and one issue.

    Args:
        text: the completion.
        context: the text the model read.
        context_key: key of the graph and document id of its provenance.
        sentence_offset: global index of ``context``'s first sentence (chunks).
        limits: validation caps; defaults when None.

    Returns:
        The :class:`~symbolkg.retrieval.lkg.validate.ValidationResult`.

    Raises:
        ValueError: if ``text`` or ``context`` is not a string or ``context_key`` is empty.

    Example:
        >>> out = '```json\\n{"entities": [{"id": "e1", "name": "Ann"}]}\\n```\\nDone!'
        >>> r = parse_extraction(out, "Ann sings.", "ctx")
        >>> r.status, r.graph.nodes[0].name
        ('valid', 'Ann')
        >>> parse_extraction("sorry, no JSON", "Ann sings.", "ctx").errors[0].kind
        'invalid_json'
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    if not isinstance(context_key, str) or not context_key:
        raise ValueError(f"context_key must be a non-empty string, got {context_key!r}")
    if len(text) > MAX_OUTPUT_CHARS:
        return _invalid(
            f"the output has {len(text)} characters, at most {MAX_OUTPUT_CHARS} are read; write a shorter object",
            context_key,
            kind="too_long",
        )
    fence = _FENCE.search(text)
    body = text
    if fence and "{" in fence.group(1):
        body = fence.group(1)
    start = body.find("{")
    if start < 0:
        return _invalid("no JSON object found; output one object that starts with '{'", context_key)
    truncated: ValidationIssue | None = None
    try:
        raw, _ = json.JSONDecoder().raw_decode(body, start)
    except json.JSONDecodeError as e:
        salvaged = close_truncated(body[start:])
        if salvaged is None:
            return _invalid(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", context_key)
        raw, kept = salvaged
        truncated = ValidationIssue(
            "$",
            "truncated",
            f"the JSON ends before it is complete (after {kept} of "
            f"{len(body) - start} characters); the complete items before "
            "the cut were kept, the rest is lost",
        )
    except RecursionError:
        return _invalid("the JSON nests too deeply", context_key)
    result = validate_extraction(raw, context, context_key, sentence_offset=sentence_offset, limits=limits)
    if truncated is not None:
        return ValidationResult(result.graph, (truncated, *result.errors))
    return result


# --------------------------------------------------------------------------- chunking


@dataclass(frozen=True)
class Chunk:
    """A run of whole sentences of a context.

    Attributes:
        text: the sentences joined by newlines (splitting it again gives exactly ``sentences``).
        first_sentence: global index of the first sentence (pass it as ``sentence_offset``).
        sentences: the sentences, as :func:`split_sentences` returns them.
    """

    text: str
    first_sentence: int
    sentences: tuple[str, ...]


def chunk_context(text: str, max_chars: int) -> list[Chunk]:
    """Cut a context into chunks of whole sentences of at most ``max_chars`` characters each.

    Sentences are packed greedily in order. A sentence longer than
    ``max_chars`` becomes a chunk of its own (sentences are never cut, so its
    raw texts stay quotable).

    Args:
        text: the context.
        max_chars: most characters of a chunk's text (newline separators included).

    Returns:
        The chunks in order; empty for a text without sentences.

    Raises:
        ValueError: if ``max_chars`` < 1.

    Example:
        >>> [(c.first_sentence, c.text) for c in chunk_context("A is red. B is blue. C is green.", 20)]
        [(0, 'A is red.\\nB is blue.'), (2, 'C is green.')]
    """
    if not isinstance(max_chars, int) or max_chars < 1:
        raise ValueError(f"max_chars must be an int >= 1, got {max_chars!r}")
    chunks: list[Chunk] = []
    current: list[str] = []
    size = 0
    first = 0
    for i, sentence in enumerate(split_sentences(text)):
        added = len(sentence) + (1 if current else 0)
        if current and size + added > max_chars:
            chunks.append(Chunk("\n".join(current), first, tuple(current)))
            current, size, first = [], 0, i
            added = len(sentence)
        current.append(sentence)
        size += added
    if current:
        chunks.append(Chunk("\n".join(current), first, tuple(current)))
    return chunks
