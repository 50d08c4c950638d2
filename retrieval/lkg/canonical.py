"""Canonical ids, text normalization and sentence splitting for the LKG.

Two mentions of one thing must become one node, across sentences, chunks and
documents. A node's id is therefore computed from its text, never chosen by
the LLM (the LLM's local ids such as ``"e1"`` only wire up one output):

* Entity and Concept: ``normalize_name(name)``: Unicode NFKC, casefold,
  punctuation (anything not a letter or digit, ``_`` included) to spaces,
  whitespace collapsed, one leading article (``the``/``a``/``an``) dropped when
  a word follows it, and every token lemmatized with simplemma's English
  dictionary (a short table fixes the -ves plurals it reads as verbs:
  "shelves" -> "shelf", not "shelve"). An English word simplemma does not know (ProntoQA's "wumpuses")
  loses a regular plural ending instead (``-ies`` -> ``-y``; ``-sses``/``-xes``/
  ``-zes``/``-ches``/``-shes``/``-uses`` -> drop ``-es``; ``-s`` after anything
  but ``s``/``u``/``i`` -> drop it). So "The blue book", "Blue Book" and
  "blue books" all normalize to ``"blue book"``.
* Rule and Constraint: ``normalize_expression(text)``: NFKC, casefold,
  whitespace collapsed and removed around punctuation, so ``"x > 3"`` equals
  ``"X>3"``. Punctuation is kept (``<`` and ``>`` mean different things) and
  nothing is lemmatized.

The id is the first :data:`ID_HEX_CHARS` (32) hex digits of
``sha256(node_type + "\\x00" + normalized_text)``: 128 bits, so a collision
is not a practical concern below ~10^18 nodes, at half the width of a full
digest in every Parquet row. The node type is part of the hashed text, so an
Entity and a Concept of the same name are different nodes. The entity's own
``entity_type`` ("person", "object") is *not* hashed: a small model labels
the same person inconsistently across chunks and those mentions must still
merge.

Ids are stable for one :data:`CANONICAL_VERSION` and one simplemma version
(the lemma dictionary is data); change the version when the normalization
changes, because stored graphs then no longer merge with new ones.

Sentences: :func:`split_sentences` is the one splitter used for provenance
(sentence indices), raw-text checks and chunking, so indices agree everywhere.
A sentence ends at ``.``, ``!`` or ``?`` (plus closing quotes or brackets)
followed by whitespace and an upper-case letter, digit, quote or bracket,
except after a common abbreviation ("Mr.", "e.g."); every line break also
ends a sentence (puzzle premises are often one per line, without a full stop).
A single capital letter before a full stop ends a sentence ("... before B. C
won."): in logic puzzles one-letter names are far more common than initials.
The text is NFKC-normalized before splitting. Splitting
``"\\n".join(split_sentences(t))`` again gives the same sentences.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata

import simplemma

#: Bump when normalization or id computation changes (stored ids then differ).
CANONICAL_VERSION = "lkg-canonical-1"

#: Hex digits of the SHA-256 digest kept as a node id (128 bits).
ID_HEX_CHARS = 32

_ARTICLES = frozenset({"the", "a", "an"})
_NON_WORD = re.compile(r"[\W_]+")
_SPACE = re.compile(r"\s+")
_SPACE_AROUND_PUNCT = re.compile(r"\s*([^\w\s])\s*")


def collapse_whitespace(text: str) -> str:
    """NFKC-normalize, turn every run of whitespace into one space, and strip.

    This is the comparison form for raw-text checks: case and punctuation are kept.

    Args:
        text: any string.

    Returns:
        The normalized string.
    """
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


# simplemma keeps one lemma per word form and picks the verb for some -ves plurals
# ("shelves" -> "shelve"); names are noun phrases, so these nouns win.
_VES_NOUNS = {
    "shelves": "shelf",
    "leaves": "leaf",
    "lives": "life",
    "wives": "wife",
    "halves": "half",
    "calves": "calf",
    "loaves": "loaf",
    "thieves": "thief",
    "selves": "self",
    "scarves": "scarf",
    "hooves": "hoof",
    "wharves": "wharf",
    "sheaves": "sheaf",
}


@functools.lru_cache(maxsize=200_000)
def _lemma(token: str) -> str:
    """Lemma of one casefolded token (simplemma English, plural fallback for unknown words)."""
    if token in _VES_NOUNS:
        return _VES_NOUNS[token]
    if simplemma.is_known(token, lang="en"):
        return simplemma.lemmatize(token, lang="en").casefold()
    if not token.isalpha() or len(token) <= 3:
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    for ending in ("sses", "xes", "zes", "ches", "shes", "uses"):
        if token.endswith(ending):
            return token[:-2]
    if token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def name_tokens(text: str) -> list[str]:
    """The lemmatized tokens of ``text``, without dropping an article.

    Used to find a node's name inside a sentence (provenance).

    Args:
        text: a name or a sentence.

    Returns:
        Casefolded lemmas, in order; empty when ``text`` has no letters or digits.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [_lemma(t) for t in _NON_WORD.sub(" ", folded).split()]


def normalize_name(name: str) -> str:
    """Normal form of an Entity or Concept name (see the module docstring).

    Args:
        name: the name as written.

    Returns:
        Space-joined lemmas; ``""`` when the name has no letters or digits.

    Example:
        >>> normalize_name("The blue book"), normalize_name("Blue Book"), normalize_name("blue books")
        ('blue book', 'blue book', 'blue book')
    """
    tokens = name_tokens(name)
    if len(tokens) > 1 and tokens[0] in _ARTICLES:
        tokens = tokens[1:]
    return " ".join(tokens)


def normalize_expression(text: str) -> str:
    """Normal form of a Rule expression or Constraint raw expression.

    Args:
        text: the expression as written.

    Returns:
        NFKC, casefolded, whitespace collapsed and removed around punctuation.

    Example:
        >>> normalize_expression("Age(Leo)  >  20"), normalize_expression("age(leo)>20")
        ('age(leo)>20', 'age(leo)>20')
    """
    folded = collapse_whitespace(text).casefold()
    return _SPACE_AROUND_PUNCT.sub(r"\1", folded)


def hash_id(node_type: str, normalized: str) -> str:
    """The id of a node whose normalized text is already computed.

    Args:
        node_type: ``"Entity"``, ``"Concept"``, ``"Rule"`` or ``"Constraint"``.
        normalized: output of :func:`normalize_name` / :func:`normalize_expression`.

    Returns:
        :data:`ID_HEX_CHARS` lower-case hex digits.

    Raises:
        ValueError: if ``normalized`` is empty (nothing to identify the node by).
    """
    if not normalized:
        raise ValueError(f"cannot compute a {node_type} id from empty normalized text")
    digest = hashlib.sha256(f"{node_type}\x00{normalized}".encode()).hexdigest()
    return digest[:ID_HEX_CHARS]


def entity_id(name: str) -> str:
    """Canonical id of the Entity named ``name``.

    Raises:
        ValueError: if the name has no letters or digits.
    """
    return hash_id("Entity", normalize_name(name))


def concept_id(name: str) -> str:
    """Canonical id of the Concept named ``name``.

    Raises:
        ValueError: if the name has no letters or digits.
    """
    return hash_id("Concept", normalize_name(name))


def rule_id(expression: str) -> str:
    """Canonical id of the Rule with this expression.

    Raises:
        ValueError: if the expression is blank.
    """
    return hash_id("Rule", normalize_expression(expression))


def constraint_id(constraint_type: str, raw_expression: str) -> str:
    """Canonical id of a Constraint: its type and normalized raw expression.

    Raises:
        ValueError: if the expression is blank.
    """
    normalized = normalize_expression(raw_expression)
    if not normalized:
        raise ValueError("cannot compute a Constraint id from a blank expression")
    return hash_id("Constraint", f"{constraint_type}\x00{normalized}")


# --------------------------------------------------------------------------- sentences

_ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "no", "fig", "inc", "ltd", "co"}
)
# A candidate boundary: terminal punctuation, optional closing quotes/brackets, whitespace,
# then something that can start a sentence.
_BOUNDARY = re.compile(r"[.!?]+[\"')\]\u201d\u2019]*\s+(?=[A-Z0-9\"'(\[\u201c\u2018])")


def _ends_with_abbreviation(text: str) -> bool:
    words = text.rstrip().rstrip(".!?\"')]\u201d\u2019").split()
    if not words:
        return False
    last = words[-1].lstrip("\"'([\u201c\u2018")
    return last.casefold() in _ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """Split a context into sentences (rules in the module docstring).

    Args:
        text: the context.

    Returns:
        The sentences, whitespace-collapsed (:func:`collapse_whitespace`), in order,
        without empty ones. Index ``i`` of this list is "sentence ``i``" everywhere
        in the LKG.

    Example:
        >>> split_sentences("Mr. Smith is tall. He owns 2 cats!\\nAnn is happy")
        ['Mr. Smith is tall.', 'He owns 2 cats!', 'Ann is happy']
    """
    sentences: list[str] = []
    for line in unicodedata.normalize("NFKC", text).splitlines():
        start = 0
        for match in _BOUNDARY.finditer(line):
            candidate = line[start : match.end()]
            if _ends_with_abbreviation(candidate):
                continue
            sentences.append(candidate)
            start = match.end()
        sentences.append(line[start:])
    return [s for s in (collapse_whitespace(s) for s in sentences) if s]
