"""BM25: tokenizer, ranking on a toy corpus, idf, ties, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from symbolkg.retrieval.bm25 import BM25Config, BM25Index, tokenize

CORPUS = [
    "Ann is a teacher.",  # 0
    "Bob owns a red car and a red bike.",  # 1
    "Every teacher is kind.",  # 2
    "No birds are cold.",  # 3
    "All birds fly, and every bird has feathers.",  # 4
    "The cat sits on the mat.",  # 5
]


def test_tokenize_lowercases_splits_on_non_alnum_and_keeps_logic_words():
    assert tokenize("Blue(x) -> cold_x, NOT Ann's!") == ["blue", "x", "cold", "x", "not", "ann", "s"]
    assert tokenize("The cat is on a mat") == ["cat", "mat"]
    assert tokenize("all no some every if only") == ["all", "no", "some", "every", "if", "only"]
    assert tokenize("Zoë lives in Zürich, 三十") == ["zoë", "lives", "zürich", "三十"]
    with pytest.raises(TypeError):
        tokenize(None)  # type: ignore[arg-type]


def test_ranking_on_toy_corpus():
    index = BM25Index(CORPUS)
    scores, ids = index.search("Which teacher is kind?", k=3)
    assert list(ids) == [2, 0]  # both query terms beat one; nothing else shares a term
    assert scores[0] > scores[1] > 0
    _, ids = index.search("red car", k=1)
    assert list(ids) == [1]
    _, ids = index.search("birds", k=5)
    assert list(ids) == [3, 4]  # same tf; the shorter document wins


def test_ids_are_returned_and_scores_match_the_formula():
    ids = [f"d{i}" for i in range(len(CORPUS))]
    index = BM25Index(CORPUS, ids=ids, config=BM25Config(k1=1.2, b=0.75))
    scores, got = index.search("cat", k=2)
    assert list(got) == ["d5"]
    lengths = [len(tokenize(t)) for t in CORPUS]
    avgdl = sum(lengths) / len(lengths)
    n, df, tf, dl = len(CORPUS), 1, 1, lengths[5]
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    expected = idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl))
    assert scores[0] == pytest.approx(expected, rel=1e-6)


def test_rare_terms_weigh_more_and_repeated_terms_saturate():
    index = BM25Index(["apple apple apple banana", "apple", "apple cherry", "apple", "apple"])
    assert index.idf[index.vocabulary["cherry"]] > index.idf[index.vocabulary["apple"]]
    full = index.scores("apple")
    # tf 3 scores higher than tf 1 but less than 3x (saturation, and the longer document is penalized).
    assert full[1] < full[0] < 3 * full[1]


def test_ties_are_broken_by_row_order_and_k_is_respected():
    index = BM25Index(["same words here"] * 6)
    scores, ids = index.search("words", k=4)
    assert list(ids) == [0, 1, 2, 3]
    assert np.all(scores == scores[0])


def test_no_match_stopword_query_and_empty_corpus():
    index = BM25Index(CORPUS)
    assert len(index.search("zebra", k=3)[1]) == 0
    assert len(index.search("the of is", k=3)[1]) == 0
    empty = BM25Index([])
    assert len(empty) == 0 and len(empty.search("cat", k=3)[1]) == 0
    blank = BM25Index(["", "the"])
    assert len(blank.search("cat", k=3)[1]) == 0


def test_invalid_arguments():
    with pytest.raises(ValueError, match="k must be"):
        BM25Index(CORPUS).search("cat", k=0)
    with pytest.raises(ValueError, match="ids"):
        BM25Index(CORPUS, ids=["a"])
    with pytest.raises(ValueError, match="b must be"):
        BM25Config(b=1.5)
    with pytest.raises(ValueError, match="k1"):
        BM25Config(k1=-1)
