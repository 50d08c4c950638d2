"""The whole-program grammar of Logic-LM's constraint language (``logiclm-csp``), for constrained decoding.

:func:`program_grammar` returns GBNF text (:mod:`symbolkg.solvers.gbnf` says why GBNF) for a
program as :mod:`symbolkg.solvers.csp.syntax` reads it: an optional ``Domain:`` section of notes
(``1: leftmost``), ``Variables:`` with ``name [IN] [1, 2, 3]`` (or ``range(1, 6)``),
``Constraints:`` with one Python-style expression per line, and ``Query:`` with one option per
line, ``A) expression``; any line may end in a ``:::`` comment of free English.

The expressions are the operators the parser reads (comparisons, ``+ - * // %``, ``and`` /
``or`` / ``not``, ``in`` / ``not in`` a list, calls such as ``AllDifferentConstraint([...])``
and ``abs``), with one blank on each side of a binary operator (``+`` and ``-`` may also be
written without: ``7-2``) and bracket nesting bounded by unrolling. Syntax only: undeclared names, types
and the option letters' order are the parser's to check. The parser's other spellings (``≠``,
``&&``, ``name: domain``, ``Option A:``, Markdown headers, ``#`` comments) never occur in the
recorded programs, so the grammar keeps a constrained model to the one spelling the prompts
show. A Domain note is a number and text (``1: leftmost``) or text without ``:``, so that it can
never be mistaken for a section header.

It admits every recorded LogicalDeduction program of the three Logic-LM models that the parser
accepts (``tests/solvers/test_grammars.py``). Bounds (:data:`BOUNDS`) are about twice the largest
seen (4 notes, 7 variables, 8 constraints, 7 options, brackets 2 deep, 22-character names, 12-word
comments, one trailing blank) or more where a puzzle could need it (lines, list items).

Example:
    >>> program_grammar().splitlines()[0].startswith("root ::= ")
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
        notes: lines of ``Domain:``.
        variables: lines of ``Variables:``.
        constraints: lines of ``Constraints:``.
        options: lines of ``Query:`` (option letters A-G).
        depth: bracket nesting in one expression.
        operands: operands joined by binary operators at one level of brackets.
        items: items of one list or argument list.
        name_chars: characters of a name.
        comment_words: blank-separated words of a ``:::`` comment or a Domain note.
    """

    notes: int = 12
    variables: int = 16
    constraints: int = 32
    options: int = 7
    depth: int = 5
    operands: int = 16
    items: int = 16
    name_chars: int = 64
    comment_words: int = 40


BOUNDS = Bounds()

_NAME_FIRST = string.ascii_letters + "_"
_NAME_REST = string.ascii_letters + string.digits + "_"
_OPERATORS = ("==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "//", "%")
_WORDS = ("and", "or", "in", "not in")


def program_grammar(bounds: Bounds = BOUNDS) -> str:
    """The GBNF grammar of a whole CSP program (module docstring).

    Args:
        bounds: the repetition bounds; the default admits every recorded program that parses.

    Returns:
        Grammar text whose root is the program, for ``StructuredOutput(grammar=...)``.
    """
    b = bounds
    rules = {
        "root": (
            f'("Domain:" ws note_line{{0,{b.notes}}} nl)? '
            f'"Variables:" ws variable_line{{1,{b.variables}}} '
            f'nl "Constraints:" ws constraint_line{{1,{b.constraints}}} '
            f'nl "Query:" ws option_line{{1,{b.options}}} end'
        ),
        "note_line": 'nl ([0-9]{1,3} ":" comment_text | note_start note_text)',
        "variable_line": 'nl name " [IN] " domain (comment | ws)',
        "constraint_line": "nl expr_0 (comment | ws)",
        "option_line": 'nl [A-G] ") " expr_0 (comment | ws)',
        "domain": f'"[" value (", " value){{0,{b.items - 1}}} "]" | "range(" number (", " number){{1,2}} ")"',
        "value": "number | string",
        # Each line starts with its line break, after at most two blank lines; it may end in a few blanks.
        "nl": '"\\n" ([ \\t]{0,4} "\\n"){0,2}',
        "ws": "[ \\t]{0,4}",
        "end": '"\\n"{0,3}',
        "comment": '" :::" comment_text',
        **gbnf.text_rules("comment_text", b.comment_words),
        "note_start": f"[^{gbnf.LINE_BREAKS}: \\t]",
        **gbnf.text_rules("note_text", b.comment_words, exclude=":"),
        "name": f"{gbnf.char_class(_NAME_FIRST)} {gbnf.char_class(_NAME_REST)}{{0,{b.name_chars - 1}}}",
        "number": "[0-9]{1,9}",
        "string": gbnf.string_rule(b.name_chars),
        **gbnf.expression_rules(
            "expr",
            depth=b.depth,
            operands=b.operands,
            arguments=b.items,
            operators=_OPERATORS,
            tight=("+", "-"),
            words=_WORDS,
            unary=("not ", "-"),
            binders=False,
        ),
    }
    return gbnf.render(rules)
