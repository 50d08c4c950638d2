"""LKG extraction: the prompt, its JSON schema, parsing of the completion, and chunking.

This module builds chat messages and parses completions; it never calls a model
(stage code in ``jobs/`` does, through an engine it is given). Messages are
lists of ``(role, content)`` tuples, as in :mod:`solvers.prompts`.

Flow for one context (SymbolLKG's LKG construction):

1. :func:`chunk_context` cuts a long context on sentence boundaries; every
   :class:`Chunk` knows the global index of its first sentence.
2. :func:`extraction_messages` asks for the graph of one chunk as one JSON
   object; with structured decoding, :func:`extraction_schema` constrains the
   output (plain objects, arrays, strings and one enum; ``additionalProperties:
   false`` everywhere; ``maxItems`` on every array so a small model cannot loop).
3. :func:`parse_extraction` cuts the JSON out of the completion (code fences and
   prose around it are tolerated), decodes it and validates it
   (:func:`retrieval.lkg.validate.validate_extraction`). Bad JSON is an issue,
   not an exception.
4. While issues remain and rounds are left, :func:`repair_messages` shows the
   model its output and the issues and asks for the whole corrected object.
5. The chunk graphs are merged (:func:`retrieval.lkg.merge.merge_graphs`).

The prompt has one hand-written few-shot example (:data:`EXAMPLE_CONTEXT`,
:data:`EXAMPLE_OUTPUT`, made up for this purpose; the tests check that it
matches the schema and validates without issues). The extraction and repair
prompts share their prefix (system message and example) so that an engine with
prefix caching computes it once. Change :data:`PROMPT_VERSION` whenever the
prompt, the schema or the example change: it is part of the store's cache key.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from retrieval.lkg.canonical import split_sentences
from retrieval.lkg.schema import CONSTRAINT_TYPES, Graph, ValidationIssue
from retrieval.lkg.validate import ValidationLimits, ValidationResult, validate_extraction

__all__ = [
    "EXAMPLE_CONTEXT", "EXAMPLE_OUTPUT", "MAX_OUTPUT_CHARS", "PROMPT_VERSION", "Chunk", "chunk_context", "chunk_schema",
    "extraction_messages", "extraction_schema", "parse_extraction", "repair_messages", "split_sentences",
]

#: Version of prompt + schema + example. Part of the store's cache key.
PROMPT_VERSION = "lkg-extract-3"

#: A completion longer than this is rejected before decoding (a runaway or adversarial output).
MAX_OUTPUT_CHARS = 200_000

#: Most issues listed in a repair message, and most characters of the previous output shown.
MAX_REPAIR_ISSUES = 20
MAX_REPAIR_OUTPUT_CHARS = 12_000

Messages = list[tuple[str, str]]

SYSTEM = f"""You build a logical knowledge graph from a text. Output one JSON object and nothing else.

The object has five lists:
- "entities": concrete individuals (people, objects, places). Fields: "id" (e1, e2, ...), "name" (as in the text),
  "entity_type" (person, object, place, ... or ""), "properties" (a list of {{"key", "value"}} strings, e.g. color).
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
        {"id": "e3", "name": "Mia's bicycle", "entity_type": "object",
         "properties": [{"key": "color", "value": "red"}]},
    ],
    "concepts": [
        {"id": "c1", "name": "bicycle", "labels": ["vehicle"]},
        {"id": "c2", "name": "vehicle", "labels": []},
        {"id": "c3", "name": "person", "labels": []},
    ],
    "rules": [
        {"id": "r1", "expression": "forall x: (person(x) & exists y: (vehicle(y) & owns(x, y))) -> pays_road_tax(x)",
         "description": "A person who owns a vehicle pays a road tax.",
         "raw_text": "If a person owns a vehicle, then that person pays a road tax."},
    ],
    "constraints": [
        {"id": "k1", "raw_expression": "left_of(Mia, Leo)", "constraint_type": "Ordering", "relation": "LEFT_OF",
         "operation": "", "value": "", "raw_text": "Mia sits to the left of Leo."},
        {"id": "k2", "raw_expression": "age(Mia) != age(Leo)", "constraint_type": "AllDifferent", "relation": "",
         "operation": "", "value": "", "raw_text": "Mia and Leo have different ages."},
        {"id": "k3", "raw_expression": "age(Leo) > 20", "constraint_type": "Arithmetic", "relation": "",
         "operation": ">", "value": "20", "raw_text": "Leo is older than 20."},
    ],
    "edges": [
        {"source": "e1", "target": "e3", "type": "OWNS", "raw_text": "Mia owns a red bicycle."},
        {"source": "e3", "target": "c1", "type": "IS_A", "raw_text": "Mia owns a red bicycle."},
        {"source": "c1", "target": "c2", "type": "IS_A", "raw_text": "Every bicycle is a vehicle."},
        {"source": "r1", "target": "c3", "type": "APPLIES_TO",
         "raw_text": "If a person owns a vehicle, then that person pays a road tax."},
        {"source": "r1", "target": "c2", "type": "MENTIONS",
         "raw_text": "If a person owns a vehicle, then that person pays a road tax."},
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


def extraction_schema(limits: ValidationLimits | None = None, sentences: Sequence[str] | None = None) -> dict[str, Any]:
    """The JSON schema of one extraction output, for structured decoding (vLLM guided JSON).

    Only objects, arrays, strings and one enum; every field required (the
    prompt says to use ``""`` where a field does not apply);
    ``additionalProperties: false``; every array bounded by ``maxItems`` from
    ``limits``. Lengths of strings are not bounded here (not every decoding
    backend supports ``maxLength``): ``max_tokens`` bounds them, and validation
    rejects strings over their caps.

    With ``sentences`` (the sentences of the text being extracted, as
    :func:`split_sentences` gives them), the schema is specific to that text:
    every ``raw_text`` is an ``enum`` of those sentences, so a constrained model
    can only quote the text word for word (the check a small model fails most
    often), and ids follow the prompt's pattern (``e1``, ``c1``, ``r1``, ``k1``),
    edge types are ``UPPER_SNAKE``. A dangling edge or a wrong endpoint type is
    still possible; validation and repair handle those.

    Args:
        limits: the caps to mirror; :class:`ValidationLimits` defaults when None.
        sentences: the text's sentences; None for the generic schema (any strings).

    Returns:
        A fresh JSON-schema dict (safe to modify).
    """
    lim = limits or ValidationLimits()
    string = {"type": "string"}
    if sentences:
        quote = {"type": "string", "enum": list(dict.fromkeys(sentences))}

        def ident(prefix: str) -> dict[str, Any]:
            return {"type": "string", "pattern": f"^{prefix}[0-9]{{1,3}}$"}

        node_ref = {"type": "string", "pattern": "^[ecrk][0-9]{1,3}$"}
        edge_type = {"type": "string", "pattern": "^[A-Z][A-Z_]{0,39}$"}
    else:
        quote = node_ref = edge_type = string

        def ident(prefix: str) -> dict[str, Any]:
            return string
    entity = _object({
        "id": ident("e"), "name": string, "entity_type": string,
        "properties": _array(_object({"key": string, "value": string}), lim.max_properties),
    })
    concept = _object({"id": ident("c"), "name": string, "labels": _array(string, lim.max_labels)})
    rule = _object({"id": ident("r"), "expression": string, "description": string, "raw_text": quote})
    constraint = _object({
        "id": ident("k"), "raw_expression": string,
        "constraint_type": {"type": "string", "enum": list(CONSTRAINT_TYPES)},
        "relation": string, "operation": string, "value": string, "raw_text": quote,
    })
    edge = _object({"source": node_ref, "target": node_ref, "type": edge_type, "raw_text": quote})
    return _object({
        "entities": _array(entity, lim.max_nodes_per_list),
        "concepts": _array(concept, lim.max_nodes_per_list),
        "rules": _array(rule, lim.max_nodes_per_list),
        "constraints": _array(constraint, lim.max_nodes_per_list),
        "edges": _array(edge, lim.max_edges),
    })


def chunk_schema(sentences: Sequence[str]) -> dict[str, Any]:
    """The structured-decoding schema for extracting one chunk: :func:`extraction_schema` with
    ``sentences`` and lists bounded by the chunk's size.

    Bounds: at most ``2n + 4`` items per node list and ``4n + 8`` edges for ``n`` sentences
    (capped by the validation limits), 4 properties and 4 labels. A model that loops, repeating
    one item, is stopped early and still inside valid JSON instead of at ``max_tokens``; a
    sentence rarely holds more than two new nodes and four links.

    Args:
        sentences: the chunk's sentences (:attr:`Chunk.sentences`).

    Returns:
        A fresh JSON-schema dict.
    """
    n = len(sentences)
    defaults = ValidationLimits()
    bounds = ValidationLimits(max_nodes_per_list=min(defaults.max_nodes_per_list, 2 * n + 4),
                              max_edges=min(defaults.max_edges, 4 * n + 8), max_properties=4, max_labels=4)
    return extraction_schema(bounds, sentences=sentences)


# --------------------------------------------------------------------------- messages


def _user_message(context: str, question: str | None) -> str:
    text = f"Text:\n{context}"
    if question:
        text += ("\n\nQuestion (for focus only; take every raw_text from the text above, never from the question):\n"
                 f"{question}")
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


def repair_messages(context: str, previous_output: str, errors: Sequence[ValidationIssue],
                    question: str | None = None) -> Messages:
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
    request = ("Your JSON has these problems:\n" + "\n".join(lines)
               + "\n\nWrite the whole corrected JSON object again, with all five lists. Keep what was right. "
                 "Copy every raw_text word for word from the text.\n\nJSON:")
    return extraction_messages(context, question) + [("assistant", shown), ("user", request)]


# --------------------------------------------------------------------------- parsing

_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)


def _invalid(message: str, context_key: str, path: str = "$", kind: str = "invalid_json") -> ValidationResult:
    return ValidationResult(Graph(context_key), (ValidationIssue(path, kind, message),))


def parse_extraction(text: str, context: str, context_key: str, *, sentence_offset: int = 0,
                     limits: ValidationLimits | None = None) -> ValidationResult:
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
        The :class:`~retrieval.lkg.validate.ValidationResult`.

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
        return _invalid(f"the output has {len(text)} characters, at most {MAX_OUTPUT_CHARS} are read; "
                        "write a shorter object", context_key, kind="too_long")
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
        salvaged = _close_truncated(body[start:])
        if salvaged is None:
            return _invalid(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", context_key)
        raw, kept = salvaged
        truncated = ValidationIssue("$", "truncated", f"the JSON ends before it is complete (after {kept} of "
                                                      f"{len(body) - start} characters); the complete items before "
                                                      "the cut were kept, the rest is lost")
    except RecursionError:
        return _invalid("the JSON nests too deeply", context_key)
    result = validate_extraction(raw, context, context_key, sentence_offset=sentence_offset, limits=limits)
    if truncated is not None:
        return ValidationResult(result.graph, (truncated, *result.errors))
    return result


def _close_truncated(text: str) -> tuple[Any, int] | None:
    """Decode a JSON object cut off before its end (a completion stopped by its token limit).

    Keeps every value completed before the cut: the text is cut at the last point between two
    items (before a ``,`` or after a closing bracket, outside strings), and the brackets still
    open there are closed. Returns (value, characters kept), or None if nothing decodes.
    """
    stack: list[str] = []
    in_string = escaped = False
    best: tuple[int, str] | None = None  # (cut position, closers)
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                return None
            stack.pop()
            if not stack:
                return None  # complete: not a truncation (the caller's decode failed for another reason)
            best = (i + 1, "".join(reversed(stack)))
        elif ch == "," and stack:
            best = (i, "".join(reversed(stack)))
    if best is None:
        return None
    cut, closers = best
    try:
        return json.loads(text[:cut] + closers), cut
    except (json.JSONDecodeError, RecursionError):
        return None


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
