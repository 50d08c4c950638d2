"""The whole-program grammar of the AR-LSAT DSL (``logiclm-smt``), for constrained decoding.

:func:`program_grammar` returns GBNF text (:mod:`symbolkg.solvers.gbnf` says why GBNF) for a
program as :mod:`symbolkg.solvers.smt.lsat_syntax` reads it: ``# Declarations`` (sorts
``name = EnumSort([a, b])`` / ``IntSort``, functions ``name = Function([s, t] -> [u])``, and the
range constraints models put there), ``# Constraints`` (one formula per line), ``# Options``
(an optional ``Question ::: ...`` line, then one check per option, ``is_valid(...) ::: (A)``).
A line may end in a ``:::`` comment, or a ``#`` comment outside the option checks.

Formulas are Python-style expressions (:func:`symbolkg.solvers.gbnf.expression_rules`): Z3-style
calls (``ForAll([c:children], ...)``, ``Count``, ``And``, ``Implies``, declared functions), binder
lists, comparisons, arithmetic, ``mod``, and the connective spellings the parser reads (``and``,
``&&``, ``->``, ``if``/``else``, ...), with bracket nesting bounded by unrolling. The option checks
are the DSL's five and their English aliases
(:data:`symbolkg.solvers.smt.lsat_formula_syntax.CHECK_ALIASES`), each labelled ``(A)``-``(G)``
(the parser would number an unlabelled option by its position; the label keeps the letter
explicit). Binary operators have one blank on each side (``+`` and ``-`` may also be written
without: ``l+1``), as in the recorded programs. Syntax only: declared names, sorts, arities and
which option letters appear are the parser's to check.

It admits every recorded AR-LSAT program of the three Logic-LM models that the parser accepts
(``tests/solvers/test_grammars.py``). Bounds (:data:`BOUNDS`) are about twice the largest seen
(10 declaration and 19 constraint lines, brackets 6 deep, 22-character names, 54-word comments,
one trailing blank) or more where a puzzle could need it.

Example:
    >>> program_grammar().splitlines()[0].startswith("root ::= ")
    True
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from symbolkg.solvers import gbnf
from symbolkg.solvers.smt.lsat_formula_syntax import CHECK_ALIASES, OPTION_FUNCTIONS


@dataclass(frozen=True)
class Bounds:
    """How far each repetition of the grammar may go (see the module docstring for the data).

    Attributes:
        declarations: lines of ``# Declarations``.
        constraints: lines of ``# Constraints``.
        options: option checks (letters A-G).
        depth: bracket nesting in one formula.
        operands: operands joined by binary operators at one level of brackets.
        items: items of one list or argument list.
        name_chars: characters of a name.
        comment_words: blank-separated words of a comment.
    """

    declarations: int = 24
    constraints: int = 40
    options: int = 7
    depth: int = 10
    operands: int = 16
    items: int = 16
    name_chars: int = 64
    comment_words: int = 120


BOUNDS = Bounds()

_NAME_FIRST = string.ascii_letters + "_"
_NAME_REST = string.ascii_letters + string.digits + "_"
_OPERATORS = ("==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "&&", "||", "->", "=>", "==>", "<->", "<=>")
_WORDS = ("and", "or", "in", "not in", "mod", "if", "else")
_CHECKS = tuple(OPTION_FUNCTIONS) + tuple(sorted(CHECK_ALIASES))


def program_grammar(bounds: Bounds = BOUNDS) -> str:
    """The GBNF grammar of a whole AR-LSAT DSL program (module docstring).

    Args:
        bounds: the repetition bounds; the default admits every recorded program that parses.

    Returns:
        Grammar text whose root is the program, for ``StructuredOutput(grammar=...)``.
    """
    b = bounds
    rules = {
        "root": (
            f'"# Declarations" ws declaration_line{{1,{b.declarations}}} '
            f'nl "# Constraints" ws constraint_line{{1,{b.constraints}}} '
            f'nl "# Options" ws question_line? option_line{{1,{b.options}}} end'
        ),
        "declaration_line": "nl (sort | function | formula_0) (comment | ws)",
        "constraint_line": "nl formula_0 (comment | ws)",
        "question_line": 'nl "Question ::: " comment_text',
        "option_line": 'nl check " ::: (" [A-G] ")" comment_text',
        "check": f'{gbnf.choice(*_CHECKS)} "(" formula_items_1 ")"',
        "sort": 'name " = " ("EnumSort" | "IntSort") "([" member (", " member){0,63} "])"',
        "member": 'name | "-"? number | string',
        "function": f'name " = Function([" (name (", " name){{0,{b.items - 1}}})? "] -> [" name "])"',
        # Each line starts with its line break, after at most two blank lines; it may end in a few blanks.
        "nl": '"\\n" ([ \\t]{0,4} "\\n"){0,2}',
        "ws": "[ \\t]{0,4}",
        "end": '"\\n"{0,3}',
        "comment": '" :::" comment_text | " #" comment_text',
        **gbnf.text_rules("comment_text", b.comment_words),
        "name": f"{gbnf.char_class(_NAME_FIRST)} {gbnf.char_class(_NAME_REST)}{{0,{b.name_chars - 1}}}",
        "number": "[0-9]{1,9}",
        "string": gbnf.string_rule(b.name_chars),
        **gbnf.expression_rules(
            "formula",
            depth=b.depth,
            operands=b.operands,
            arguments=b.items,
            operators=_OPERATORS,
            tight=("+", "-"),
            words=_WORDS,
            unary=("not ", "-"),
            binders=True,
        ),
    }
    return gbnf.render(rules)
