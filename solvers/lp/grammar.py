"""The whole-program grammar of the Logic-LM LP language (``logiclm-lp``), for constrained decoding.

:func:`program_grammar` returns GBNF text (:mod:`symbolkg.solvers.gbnf` says why GBNF) that
admits programs of the language as :mod:`symbolkg.solvers.lp.syntax` reads them: the four
sections (``Predicates:``, then ``Facts:`` / ``Rules:`` sections, ``Query:`` with one ground
atom), declarations ``Pred($x, ..., bool)``, atoms with a truth value (or without, as the
parser reads ``Eats(bear, cow)``), the negations other models write (``!``, ``¬``, ``~``,
``not``, ``Not(...)``), multi-word constants, ``&&`` conjunctions, one ``>>>`` per rule, and a
``:::`` comment of free English at the end of any line.

It admits every recorded program of the three Logic-LM models that the parser accepts
(``tests/solvers/test_grammars.py`` checks it with xgrammar), but not the parser's whole
tolerance: spellings those programs never use (Markdown headers, list markers, ``#`` / ``//`` /
``%`` comments, ``=>`` and other arrows, ``&`` / ``∧`` / comma conjunctions, parentheses around
a conjunction, a final ``.``, prose before the first header) are left out, because a constrained
model is better kept to the spelling the prompts show; so are ``Facts:`` / ``Rules:`` sections
past the bounds, and more than two blank lines in a row. The bounds (:data:`BOUNDS`) are about
twice the largest seen in those programs (20 declarations, 17 facts, 34 rules, 3 body and 2 head
conjuncts, 2 arguments, 3-word constants of 14 characters, 17-character names, 52-word
comments, one trailing blank): every repetition ends at its bound, so a model that repeats a
part (a small one wrote ``Bright($x, True) &&`` until its tokens ran out) must move on.

What a context-free grammar cannot see is left to the parser: a predicate used with two
arities, and, where the truth value is omitted, a constant standing in its place
(``Fruity(Sam, X)`` for a declared ``Fruity($x, bool)``); the grammar admits both, the parser
refuses them with a message for the repair round.

Example:
    >>> text = program_grammar()
    >>> text.startswith("root ::= ")
    True
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from symbolkg.solvers import gbnf


@dataclass(frozen=True)
class Bounds:
    """How far each repetition of the grammar may go (see the module docstring for the data).

    Attributes:
        declarations: lines of ``Predicates:``.
        lines_per_section: lines of one ``Facts:`` or ``Rules:`` section.
        sections: ``Facts:`` / ``Rules:`` sections before the query (the parser reads them in any order).
        conjuncts: atoms on one side of ``>>>``.
        arguments: arguments of an atom before its truth value.
        constant_words: words of a multi-word constant (``bald eagle``).
        name_chars: characters of a predicate or variable name.
        constant_chars: characters of one word of a constant.
        comment_words: blank-separated words of a ``:::`` comment.
    """

    declarations: int = 40
    lines_per_section: int = 70
    sections: int = 4
    conjuncts: int = 8
    arguments: int = 4
    constant_words: int = 4
    name_chars: int = 48
    constant_chars: int = 32
    comment_words: int = 120


BOUNDS = Bounds()

_LETTERS = string.ascii_letters + "_"
_WORD_CHARS = string.ascii_letters + string.digits + "_"
#: Words the parser refuses as an argument where the truth value goes (``lp.syntax._NOT_A_VALUE``);
#: never constants here. No constant starts with ``bool`` either: a small model copies the
#: declarations' ``bool`` into facts, and refused the word itself it wrote ``bool_bool``.
_NOT_VALUES = ("unknown", "uncertain", "none", "null")


def program_grammar(bounds: Bounds = BOUNDS) -> str:
    """The GBNF grammar of a whole LP program (module docstring).

    Args:
        bounds: the repetition bounds; the default admits every recorded program that parses.

    Returns:
        Grammar text whose root is the program, for ``StructuredOutput(grammar=...)``.
    """
    rules = {**_layout_rules(bounds), **_atom_rules(bounds)}
    return gbnf.render(rules)


def _layout_rules(b: Bounds) -> dict[str, str]:
    """Sections, lines, comments: the program around the atoms."""
    return {
        "root": (
            f'"Predicates:" ws declaration_line{{0,{b.declarations}}} body_section{{0,{b.sections}}} '
            "query_section body_section{0,2} end"
        ),
        "body_section": f'nl ("Facts:" | "Rules:") ws clause_line{{0,{b.lines_per_section}}}',
        "query_section": 'nl "Query:" (ws nl | " ") query (comment | ws)',
        "declaration_line": "nl declaration (comment | ws)",
        "clause_line": "nl clause (comment | ws)",
        # Each line starts with its line break, after at most two blank lines; it may end in a few blanks.
        "nl": '"\\n" ([ \\t]{0,4} "\\n"){0,2}',
        "ws": "[ \\t]{0,4}",
        "end": '"\\n"{0,3}',
        "comment": '" :::" comment_text',
        **gbnf.text_rules("comment_text", b.comment_words),
    }


def _atom_rules(b: Bounds) -> dict[str, str]:
    """Declarations, atoms, conjunctions and rules."""
    more_args = f'(", " argument){{0,{b.arguments}}}'
    negation = '"!" | "¬" | "~" | "not " | "Not "'
    return {
        "declaration": f'name "(" parameter (", " parameter){{0,{b.arguments}}} ")"',
        "parameter": "variable | name",
        "clause": 'conjunction (" >>> " conjunction)?',
        "conjunction": f'literal ((" && " | " and ") literal){{0,{b.conjuncts - 1}}}',
        "literal": f'({negation})? (atom | ("Not(" | "not(") atom (", " truth)? ")")',
        # the query asks about constants only: a variable there is refused by the parser
        "query": f'({negation})? (ground_atom | ("Not(" | "not(") ground_atom (", " truth)? ")")',
        # the first argument is never the truth value (Cold(True) names no one)
        "atom": f'name "(" (variable | constant) {more_args} ")"',
        "ground_atom": f'name "(" constant (", " (constant | truth)){{0,{b.arguments}}} ")"',
        "argument": "variable | constant | truth",
        "truth": '"True" | "False"',
        "variable": '"$" name',
        # one word, or several (none of them True/False, which would read as a missing comma)
        "constant": f'constant_word | plain_word (" " plain_word){{1,{b.constant_words - 1}}}',
        "name": f"{gbnf.char_class(_LETTERS)} {gbnf.char_class(_WORD_CHARS)}{{0,{b.name_chars - 1}}}",
        **gbnf.word_except(
            "constant_word",
            _NOT_VALUES + ("true", "false"),
            first=_WORD_CHARS,
            rest=_WORD_CHARS + "-'",
            max_len=b.constant_chars,
            prefixes=("bool",),
        ),
        **gbnf.word_except(
            "plain_word",
            ("true", "false"),
            first=_WORD_CHARS,
            rest=_WORD_CHARS + "-'",
            max_len=b.constant_chars,
            prefixes=("bool",),
        ),
    }
