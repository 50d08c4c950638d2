"""The GBNF building blocks of the program grammars (solvers/gbnf.py), matched by xgrammar."""

from __future__ import annotations

import string

import pytest

from symbolkg.solvers import gbnf

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string as accepts  # noqa: E402  (after the skip)


def test_literal_escapes_what_gbnf_needs():
    grammar = gbnf.render({"root": gbnf.literal('say "hi"\\\n\t')})
    assert accepts(grammar, 'say "hi"\\\n\t')
    assert not accepts(grammar, 'say "hi"')


def test_char_class_merges_ranges_and_escapes():
    assert gbnf.char_class("abcx") == "[a-cx]"
    grammar = gbnf.render({"root": gbnf.char_class("]-^\\a") + "+"})
    assert accepts(grammar, "]-^\\a")
    assert not accepts(grammar, "b")


def test_word_except_refuses_exactly_the_excluded_words_in_any_case():
    letters = string.ascii_letters
    grammar = gbnf.render(
        {"root": "w", **gbnf.word_except("w", ("bool", "boolean"), first=letters, rest=letters, max_len=8)}
    )
    for word in ("bool", "Bool", "BOOL", "boolean", "BooLean"):
        assert not accepts(grammar, word), word
    for word in ("b", "boo", "boole", "booleans", "bools", "x", "abcdefgh"):
        assert accepts(grammar, word), word
    assert not accepts(grammar, "abcdefghi")  # longer than max_len


def test_word_except_refuses_every_word_with_an_excluded_prefix():
    letters = string.ascii_letters + "_"
    grammar = gbnf.render(
        {"root": "w", **gbnf.word_except("w", ("true",), first=letters, rest=letters, max_len=9, prefixes=("bool",))}
    )
    for word in ("bool", "Bool_x", "boolean", "true", "TRUE"):
        assert not accepts(grammar, word), word
    for word in ("b", "boo", "boo_l", "bolo", "truer", "x"):
        assert accepts(grammar, word), word


def test_text_rules_bound_words_not_characters():
    grammar = gbnf.render({"root": '"> " text', **gbnf.text_rules("text", 20, max_word_chars=8)})
    assert accepts(grammar, "> " + " ".join(["abcdefgh"] * 20))
    assert accepts(grammar, "> two  blanks, trailing ")
    assert not accepts(grammar, "> " + " ".join(["abcdefgh"] * 21))
    assert not accepts(grammar, "> abcdefghi")
    for line_break in ("\n", "\r", "\x85", "\u2028"):  # str.splitlines() breaks there too
        assert not accepts(grammar, f"> a{line_break}b")


def test_expression_rules_bound_the_nesting():
    rules = gbnf.expression_rules(
        "e",
        depth=2,
        operands=4,
        arguments=2,
        operators=("==",),
        tight=("+",),
        words=("and",),
        unary=("not ",),
        binders=True,
    )
    grammar = gbnf.render({"root": "e_0", "name": "[a-z]+", "number": "[0-9]+", "string": '"\'" [a-z]* "\'"', **rules})
    assert accepts(grammar, "f([x:s], g(x) == 1+2 and not x)")
    assert not accepts(grammar, "f(g(h(x)))")  # three levels of brackets
    assert not accepts(grammar, "a == b == c == d == e")  # five operands
    assert not accepts(grammar, "a==b")  # blanks around the spaced operators are fixed


def test_render_puts_the_root_first_and_needs_one():
    text = gbnf.render({"a": '"x"', "root": "a"})
    assert text.splitlines()[0] == "root ::= a"
    with pytest.raises(ValueError, match="no rule 'root'"):
        gbnf.render({"a": '"x"'})
