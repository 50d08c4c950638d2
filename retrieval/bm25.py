"""BM25 over short texts (node names, rule expressions, paragraphs): the lexical half of hybrid retrieval.

Okapi BM25 with Lucene's non-negative idf::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    score(q, d) = sum over distinct terms t of q in d of
                  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))

Every (term, document) weight depends only on the corpus, so it is computed once when the index
is built and stored per term (postings sorted by term, CSR-like). A query then adds a few slices
of precomputed weights into one score array: no per-query arithmetic over documents that do not
contain a query term.

The tokenizer is deliberately small: case-folded runs of letters and digits (any script), minus a
tiny stopword list. Words that carry logic (``not``, ``no``, ``all``, ``some``, ``every``, ``if``,
``only``) are kept on purpose: "all birds fly" and "no birds fly" must not look alike.

Example:
    >>> index = BM25Index(["Ann is a teacher.", "Bob owns a red car.", "Every teacher is kind."],
    ...                   ids=["e-ann", "e-bob", "r-kind"])
    >>> scores, ids = index.search("Which teacher is kind?", k=2)
    >>> list(ids)
    ['r-kind', 'e-ann']
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Function words dropped by :func:`tokenize`. Small on purpose: quantifiers and negations stay.
STOPWORDS: frozenset[str] = frozenset(
    "a an the is are was were be been being of to in on at by for with as and or it its this that "
    "these those there here which who whom what do does did has have had".split()
)

_TOKEN_RE = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens of ``text`` without :data:`STOPWORDS`.

    Args:
        text: any string.

    Returns:
        Tokens in text order, duplicates kept (``"Blue(x) -> cold_x"`` gives ``["blue", "x", "cold", "x"]``).

    Raises:
        TypeError: if ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"tokenize expects a str, got {type(text).__name__}")
    return [t for t in _TOKEN_RE.findall(text.casefold()) if t not in STOPWORDS]


@dataclass(frozen=True)
class BM25Config:
    """BM25 parameters.

    Attributes:
        k1: term-frequency saturation (>= 0); 0 makes a term count once however often it appears.
        b: length normalization in [0, 1]; 0 ignores document length, 1 normalizes fully.
    """

    k1: float = 1.5
    b: float = 0.75

    def __post_init__(self) -> None:
        if not self.k1 >= 0:
            raise ValueError(f"BM25Config.k1 must be >= 0, got {self.k1}")
        if not 0 <= self.b <= 1:
            raise ValueError(f"BM25Config.b must be in [0, 1], got {self.b}")


class BM25Index:
    """An in-memory BM25 index over a fixed list of texts.

    Args:
        texts: the documents, e.g. node texts (:func:`symbolkg.retrieval.index.node_text`) or paragraphs.
        ids: one key per text, returned by :meth:`search` (row numbers 0..N-1 when None).
        config: BM25 parameters.

    Raises:
        ValueError: if ``ids`` has another length than ``texts``.
        TypeError: if a text is not a string.
    """

    def __init__(
        self, texts: Sequence[str], ids: Sequence[str] | None = None, config: BM25Config | None = None
    ) -> None:
        self.config = config or BM25Config()
        n_docs = len(texts)
        if ids is not None and len(ids) != n_docs:
            raise ValueError(f"BM25Index: {len(ids)} ids for {n_docs} texts")
        self.ids: np.ndarray = np.arange(n_docs, dtype=np.int64) if ids is None else np.array(list(ids), dtype=object)
        self.vocabulary: dict[str, int] = {}
        term_ids: list[int] = []
        doc_ids: list[int] = []
        tfs: list[int] = []
        lengths = np.zeros(n_docs, dtype=np.float64)
        for doc, text in enumerate(texts):
            tokens = tokenize(text)
            lengths[doc] = len(tokens)
            for token, tf in Counter(tokens).items():
                term_ids.append(self.vocabulary.setdefault(token, len(self.vocabulary)))
                doc_ids.append(doc)
                tfs.append(tf)
        terms = np.asarray(term_ids, dtype=np.int64)
        order = np.argsort(terms, kind="stable")  # postings grouped by term, documents ascending within a term
        self._docs = np.asarray(doc_ids, dtype=np.int64)[order]
        tf = np.asarray(tfs, dtype=np.float64)[order]
        df = np.bincount(terms, minlength=len(self.vocabulary)).astype(np.float64)
        self._offsets = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
        self.idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        avgdl = float(lengths.mean()) if n_docs and lengths.sum() > 0 else 1.0
        k1, b = self.config.k1, self.config.b
        norm = k1 * (1.0 - b + b * lengths[self._docs] / avgdl)
        self._weights = (self.idf[terms[order]] * tf * (k1 + 1.0) / (tf + norm)).astype(np.float32)
        self.n_docs = n_docs

    def __len__(self) -> int:
        return self.n_docs

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (0 where no query term occurs).

        Args:
            query: free text, tokenized like the documents; repeated query terms count once.

        Returns:
            float32 array of shape ``(len(self),)``.
        """
        out = np.zeros(self.n_docs, dtype=np.float32)
        for token in dict.fromkeys(tokenize(query)):
            term = self.vocabulary.get(token)
            if term is None:
                continue
            lo, hi = self._offsets[term], self._offsets[term + 1]
            out[self._docs[lo:hi]] += self._weights[lo:hi]  # documents are unique within one term's postings
        return out

    def search(self, query: str, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best documents for ``query``.

        Only documents sharing at least one term with the query are returned, so the result may
        be shorter than ``k`` (empty for a query of stopwords only). Ties are broken by row
        order, so results are deterministic.

        Args:
            query: free text.
            k: most documents to return (>= 1).

        Returns:
            ``(scores, ids)``: float32 scores, best first, and the matching entries of ``ids``
            given to the constructor (int64 row numbers when none were given).

        Raises:
            ValueError: if ``k`` < 1.
        """
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        scores = self.scores(query)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:
            # Partial selection of the k best, then an exact sort of those (score desc, row asc).
            keep = np.argpartition(-scores[hits], k - 1)[:k]
            threshold = scores[hits[keep]].min()
            hits = hits[scores[hits] >= threshold]  # every document tied at the threshold, for stable ties
        order = np.lexsort((hits, -scores[hits]))[:k]
        top = hits[order]
        return scores[top], self.ids[top]
