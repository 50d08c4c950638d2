"""Canonical ids and sentence splitting: mentions of one thing merge, different things do not."""

from __future__ import annotations

import doctest
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolkg.retrieval.lkg import canonical, extract, merge, schema, store, validate
from symbolkg.retrieval.lkg.canonical import (
    concept_id,
    constraint_id,
    entity_id,
    normalize_expression,
    normalize_name,
    rule_id,
    split_sentences,
)


def test_blue_book_variants_share_one_id():
    ids = {entity_id(n) for n in ("The blue book", "Blue Book", "blue books", "  the   BLUE   book!  ", "A blue book")}
    assert len(ids) == 1
    assert normalize_name("The blue book") == "blue book"


def test_node_type_is_part_of_the_id():
    assert entity_id("Blue Book") != concept_id("Blue Book")
    assert rule_id("blue(x) -> book(x)") != constraint_id("Generic", "blue(x) -> book(x)")
    assert constraint_id("Ordering", "a < b") != constraint_id("Generic", "a < b")


def test_different_names_differ_and_ids_are_32_hex():
    assert entity_id("Bob") != entity_id("Bobby")
    assert entity_id("red book") != entity_id("blue book")
    assert re.fullmatch(r"[0-9a-f]{32}", entity_id("Bob"))


def test_normalization_details():
    assert normalize_name("Ｂｏｂ") == normalize_name("bob")  # NFKC full-width letters
    assert normalize_name("Mia's  bicycle") == "mia s bicycle"
    assert normalize_name("the") == "the"  # a lone article is the whole name, kept
    assert normalize_name("A") == "a"
    assert normalize_name("mice") == normalize_name("mouse")
    assert normalize_name("Shelves") == normalize_name("shelf") == "shelf"
    assert normalize_name("Wumpuses") == normalize_name("wumpus")  # not in the dictionary: plural rule
    assert normalize_name("bus") == "bus"  # known word: never stripped to "bu"
    assert normalize_name("?!") == ""


def test_expression_keeps_operators_but_not_spacing_or_case():
    assert normalize_expression("Age(Leo)  >  20") == normalize_expression("age(leo)>20")
    assert rule_id("x > 3") != rule_id("x < 3")
    assert rule_id("Blue(x) -> Cold(x)") == rule_id("blue(x)->cold(x)")


def test_empty_text_has_no_id():
    with pytest.raises(ValueError):
        entity_id("...")
    with pytest.raises(ValueError):
        rule_id("   ")
    with pytest.raises(ValueError):
        constraint_id("Generic", "")


def test_split_sentences():
    text = "Mr. Smith is tall.  He owns 2 cats!\nAnn is happy\n\nIs Bob big? Yes. A came before B. C won."
    assert split_sentences(text) == [
        "Mr. Smith is tall.",
        "He owns 2 cats!",
        "Ann is happy",
        "Is Bob big?",
        "Yes.",
        "A came before B.",
        "C won.",
    ]
    assert split_sentences("The price is 3.5 dollars. Done.") == ["The price is 3.5 dollars.", "Done."]
    assert split_sentences("   \n\n ") == []


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["Bob", "is", "big.", "Mr.", "A.", "e.g.", "3.5", "cats!", "\n", "Yes?", "“Hi.”", "(B)", "x", "  "]
        ),
        max_size=30,
    )
)
def test_split_is_idempotent_on_its_own_output(words):
    sentences = split_sentences(" ".join(words))
    assert split_sentences("\n".join(sentences)) == sentences


def test_docstring_examples():
    for module in (canonical, schema, validate, merge, extract, store):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__
