"""Anchors: the LKG nodes a query is about, found densely and lexically.

SymbolLKG's hybrid retrieval starts from *anchors*, the union of

* **dense hits**: per node type (Rule, Constraint, Entity), the query's nearest nodes in the
  FAISS index whose cosine similarity clears a threshold (a weak nearest neighbour is not an anchor);
* **name matches** for the query's entities: an exact match of the canonical entity id
  (``"the Blue Books"`` finds the node ``Blue Book``), else the best BM25 matches over entity
  names, kept only when they score close to the best one.

Query entities come from the LLM (:func:`query_entity_messages`, :data:`QUERY_ENTITY_SCHEMA`,
:func:`parse_query_entities`; stage code in ``jobs/`` makes the call) or, when there is no LLM
or its answer is unusable, from :func:`lexical_query_entities`: quoted spans, runs of
capitalized words, and failing those the content words of the query.

Everything here is pure and fast: no model call, no Ray. An :class:`Anchor` says which signal
found it and with what score, so a result can be explained.

Example:
    >>> names = NameIndex([("e1", "Big Stone Gap"), ("e2", "Adriana Trigiani"), ("e3", "Greenwich Village")])
    >>> lexical_query_entities('Who directed the film "Big Stone Gap" set in Virginia?')
    ['Big Stone Gap', 'Virginia']
    >>> [(a.node_id, a.source) for a in names.match(["big stone gap", "Trigiani"])]
    [('e1', 'exact'), ('e2', 'bm25')]
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from symbolkg.retrieval.bm25 import BM25Index, tokenize
from symbolkg.retrieval.index import VectorIndex
from symbolkg.retrieval.lkg.canonical import entity_id, normalize_name

Messages = list[tuple[str, str]]
AnchorSource = Literal["dense", "exact", "bm25"]

#: Capitalized words that open questions and sentences without naming anything.
_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are was were do does did can could would should will "
    "the a an in on at of for to from by with and or but if then than as this that these those it its "
    "name list give based according".split()
)
#: Lower-case words allowed inside a capitalized name ("Bank of America", "Charles de Gaulle").
#: Not "and": "Scott Derrickson and Ed Wood" are two names far more often than "Kiss and Tell" is one.
_NAME_JOINERS = frozenset({"of", "the", "de", "du", "da", "van", "von", "der", "la", "le", "&", "for"})
_QUOTED = re.compile(r"\"([^\"]{2,120})\"|\u201c([^\u201d]{2,120})\u201d|(?<!\w)'([^']{2,120})'(?!\w)")
_WORD = re.compile(r"[\w'&.-]+|[^\w\s]", re.UNICODE)  # words, and punctuation as its own token


def _is_capitalized(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def lexical_query_entities(question: str, max_entities: int = 8) -> list[str]:
    """Entity mentions in a query, without a model.

    Quoted spans first, then maximal runs of capitalized words (joined by ``of``, ``de``, ...;
    a question word alone at the start of the query is skipped), then, only if neither found
    anything, the query's content words (lower-case logic puzzles: "Is the wumpus red?").

    Args:
        question: the query text.
        max_entities: most mentions returned.

    Returns:
        Distinct mentions (case-insensitive), in order of appearance, at most ``max_entities``.
    """
    found: list[str] = []
    for match in _QUOTED.finditer(question):
        found.append(next(g for g in match.groups() if g).strip())
    unquoted = _QUOTED.sub(" , ", question)
    words = _WORD.findall(unquoted)
    run: list[str] = []

    def close_run() -> None:
        while run and run[-1].lower() in _NAME_JOINERS:
            run.pop()
        while run and run[0].lower() in _QUESTION_WORDS:
            run.pop(0)
        if run:
            found.append(" ".join(run).strip(".'"))
        run.clear()

    for word in words:
        if _is_capitalized(word):
            run.append(word)
        elif run and word.lower() in _NAME_JOINERS:
            run.append(word)
        else:
            close_run()
    close_run()
    if not found:
        found = [t for t in tokenize(question) if len(t) > 2]
    out: list[str] = []
    seen: set[str] = set()
    for mention in found:
        key = mention.casefold()
        if mention and key not in seen:
            seen.add(key)
            out.append(mention)
    return out[:max_entities]


# --------------------------------------------------------------------------- LLM query entities

#: Structured-output schema of the query entity call.
QUERY_ENTITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {"type": "array", "maxItems": 8, "items": {"type": "string", "minLength": 1, "maxLength": 80}}
    },
    "required": ["entities"],
    "additionalProperties": False,
}

_QUERY_ENTITY_SYSTEM = (
    "You find the named things a question is about: people, places, works, organizations, objects, "
    "and the individuals and classes of a logic puzzle. Copy each one exactly as it is written in the "
    'question. Answer with JSON only: {"entities": [...]}.'
)
_QUERY_ENTITY_EXAMPLE = (
    "Question: Were Scott Derrickson and Ed Wood of the same nationality?",
    '{"entities": ["Scott Derrickson", "Ed Wood"]}',
)


def query_entity_messages(question: str) -> Messages:
    """The chat messages asking an LLM for the entities of ``question`` (one few-shot example)."""
    return [
        ("system", _QUERY_ENTITY_SYSTEM),
        ("user", _QUERY_ENTITY_EXAMPLE[0]),
        ("assistant", _QUERY_ENTITY_EXAMPLE[1]),
        ("user", f"Question: {question}"),
    ]


def parse_query_entities(text: str, question: str, max_entities: int = 8) -> list[str] | None:
    """The entities of an LLM answer that really occur in the question.

    A mention the question does not contain (case-insensitively, after whitespace collapsing) is
    dropped: the model copied it from the example or made it up.

    Args:
        text: the model's output.
        question: the query it was asked about.
        max_entities: most mentions kept.

    Returns:
        The mentions (possibly empty), or None when the output is not the expected JSON; callers
        then fall back to :func:`lexical_query_entities`.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("entities"), list):
        return None
    folded = " ".join(question.split()).casefold()
    out: list[str] = []
    for item in data["entities"]:
        if not isinstance(item, str):
            continue
        mention = " ".join(item.split())
        if mention and mention.casefold() in folded and mention.casefold() not in {m.casefold() for m in out}:
            out.append(mention)
    return out[:max_entities]


# --------------------------------------------------------------------------- anchors


@dataclass(frozen=True)
class AnchorConfig:
    """How anchors are chosen.

    Attributes:
        dense_k: nearest nodes looked at per node type.
        dense_threshold: least cosine similarity for a dense hit to count (embedder dependent;
            0.35 suits MiniLM / BGE-M3 on short node texts).
        name_bm25_k: BM25 entity-name matches looked at per query entity.
        name_bm25_ratio: a BM25 match counts when it scores at least this fraction of the best one.
        max_anchors: most anchors kept (best scores first; exact name matches always first).
    """

    dense_k: int = 8
    dense_threshold: float = 0.35
    name_bm25_k: int = 3
    name_bm25_ratio: float = 0.8
    max_anchors: int = 32

    def __post_init__(self) -> None:
        if self.dense_k < 0 or self.name_bm25_k < 0:
            raise ValueError("AnchorConfig.dense_k and name_bm25_k must be >= 0")
        if not 0.0 <= self.name_bm25_ratio <= 1.0:
            raise ValueError(f"AnchorConfig.name_bm25_ratio must be in [0, 1], got {self.name_bm25_ratio}")
        if self.max_anchors < 1:
            raise ValueError(f"AnchorConfig.max_anchors must be >= 1, got {self.max_anchors}")


@dataclass(frozen=True)
class Anchor:
    """One anchor node and why it was chosen.

    Attributes:
        node_id: the LKG node.
        node_type: its type (``"Entity"`` for name matches).
        source: ``"exact"`` (canonical name), ``"bm25"`` (entity name words) or ``"dense"``.
        score: cosine similarity (dense), BM25 score (bm25) or 1.0 (exact).
        mention: the query entity that matched (empty for dense hits).
    """

    node_id: str
    node_type: str
    source: AnchorSource
    score: float
    mention: str = ""


class NameIndex:
    """Entity names for exact (canonical id) and BM25 matching of query entities.

    Args:
        entities: ``(node_id, name)`` pairs, e.g. every Entity node of a store.
    """

    def __init__(self, entities: Sequence[tuple[str, str]]) -> None:
        self._by_canonical: dict[str, list[str]] = {}
        ids: list[str] = []
        names: list[str] = []
        for node_id, name in entities:
            normalized = normalize_name(name)
            if not normalized:
                continue
            key = entity_id(name)
            bucket = self._by_canonical.setdefault(key, [])
            if node_id not in bucket:
                bucket.append(node_id)
            ids.append(node_id)
            names.append(name)
        self._bm25 = BM25Index(names, ids=ids)

    def __len__(self) -> int:
        return len(self._bm25)

    def match(self, mentions: Sequence[str], config: AnchorConfig | None = None) -> list[Anchor]:
        """Entity nodes named by ``mentions``: exact canonical matches, else near-best BM25 matches."""
        config = config or AnchorConfig()
        out: list[Anchor] = []
        for mention in mentions:
            if not normalize_name(mention):
                continue
            exact = self._by_canonical.get(entity_id(mention))
            if exact:
                out.extend(Anchor(n, "Entity", "exact", 1.0, mention) for n in exact)
                continue
            if config.name_bm25_k == 0 or not len(self._bm25):
                continue
            scores, ids = self._bm25.search(mention, k=config.name_bm25_k)
            if len(scores):
                best = float(scores[0])
                out.extend(
                    Anchor(str(n), "Entity", "bm25", float(s), mention)
                    for s, n in zip(scores, ids, strict=True)
                    if s >= config.name_bm25_ratio * best
                )
        return out


def dense_anchors(
    query_vectors: np.ndarray, indexes: Mapping[str, VectorIndex], config: AnchorConfig | None = None
) -> list[list[Anchor]]:
    """Thresholded nearest nodes per node type, for a batch of query vectors.

    Args:
        query_vectors: ``(nq, dim)`` unit vectors.
        indexes: node type -> index (:func:`symbolkg.retrieval.index.build_indexes`).
        config: ``dense_k`` and ``dense_threshold``.

    Returns:
        One list per query, best score first.
    """
    config = config or AnchorConfig()
    q = np.atleast_2d(np.asarray(query_vectors, dtype=np.float32))
    out: list[list[Anchor]] = [[] for _ in range(len(q))]
    if config.dense_k == 0:
        return out
    for node_type, index in indexes.items():
        if not len(index):
            continue
        scores, ids = index.search(q, min(config.dense_k, len(index)))
        for row in range(len(q)):
            out[row].extend(
                Anchor(str(n), node_type, "dense", float(s))
                for s, n in zip(scores[row], ids[row], strict=True)
                if n is not None and s >= config.dense_threshold
            )
    for anchors in out:
        anchors.sort(key=lambda a: -a.score)
    return out


def merge_anchors(
    name_matches: Sequence[Anchor], dense: Sequence[Anchor], config: AnchorConfig | None = None
) -> list[Anchor]:
    """The union of name matches and dense hits: each node once (its first reason), at most ``max_anchors``.

    Exact name matches come first, then dense hits and BM25 name matches interleaved by rank, so
    neither signal crowds the other out when the cap bites.
    """
    config = config or AnchorConfig()
    exact = [a for a in name_matches if a.source == "exact"]
    bm25 = [a for a in name_matches if a.source != "exact"]
    ordered: list[Anchor] = list(exact)
    for i in range(max(len(dense), len(bm25))):
        ordered.extend(group[i] for group in (dense, bm25) if i < len(group))
    out: list[Anchor] = []
    seen: set[str] = set()
    for anchor in ordered:
        if anchor.node_id not in seen:
            seen.add(anchor.node_id)
            out.append(anchor)
    return out[: config.max_anchors]
