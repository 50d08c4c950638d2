"""The whole-program grammar of Logic-LM's FOL language (``logiclm-fol``), for constrained decoding.

:func:`program_grammar` returns GBNF text (:mod:`symbolkg.solvers.gbnf` says why GBNF) for a
program as :mod:`symbolkg.solvers.fol.syntax` reads it: ``Predicates:`` with declarations
``Name(x, y)``, ``Premises:`` with one formula per line, ``Conclusion:`` with exactly one, each
line optionally followed by a ``:::`` comment of free English. A formula is written with the
Unicode connectives the prompts show (``¬ ∧ ∨ ⊕ → ↔``, one blank on each side of a binary one),
quantifiers ``∀x`` / ``∃x`` followed by a blank (stacked, negated), atoms ``P(a, f(x))`` and
propositions, numbers (``2000``, ``42.3billion``), quoted names (``"The Secret Dude Society"``),
``=``, ``≠``, ``∈``, ``∉`` between terms, a final ``.``, and the ``...`` conjunct the parser
reads in a premise.

The grammar is syntax only: it does not know which names are bound, nor arities, nor precedence
(it admits every string of connectives and operands, which the parser then groups), so it admits
a superset of what parses. Nesting is bounded by unrolling the formula rule
:attr:`Bounds.depth` times (parentheses and function terms deeper than that are refused), so a
constrained model cannot open parentheses without end.

It admits every recorded FOLIO program of the three Logic-LM models that the parser accepts
(``tests/solvers/test_grammars.py``) but two, whose formulas have one ``)`` too many: the parser
drops a surplus ``)`` where every placement of its ``(`` reads the same, a repair, not a spelling
to teach a constrained model (the test checks that those two are admitted once the ``)`` is
gone). The parser's other spellings, none of which those programs use (ASCII connectives,
``forall``, ``xor``, ``∀x, y``, ``∀x.``, curly quotes, Markdown headers, list markers, ``//``
comments), are left out to keep a constrained model to one spelling. Bounds (:data:`BOUNDS`) are
about twice the largest seen: 15 declarations, 9 premises, parentheses 4 deep, 15 connectives
and 6 quantifiers in one formula, 61-character names, 95-word comments; quantified variables
are the lowercase names the programs use (``x``, ``y``, ``z``).

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
        declarations: lines of ``Predicates:``.
        premises: lines of ``Premises:``.
        depth: nesting of parentheses (formula groups, argument lists) in one formula.
        operands: operands joined by connectives at one level of parentheses.
        prefixes: ``¬`` and quantifiers before one operand.
        arguments: arguments of one predicate or function.
        name_chars: characters of a name.
        comment_words: blank-separated words of a ``:::`` comment.
    """

    declarations: int = 40
    premises: int = 32
    depth: int = 8
    operands: int = 32
    prefixes: int = 8
    arguments: int = 8
    name_chars: int = 96
    comment_words: int = 200


BOUNDS = Bounds()

_NAME_FIRST = string.ascii_letters
_NAME_REST = string.ascii_letters + string.digits + "_"


def program_grammar(bounds: Bounds = BOUNDS) -> str:
    """The GBNF grammar of a whole FOL program (module docstring).

    Args:
        bounds: the repetition bounds; the default admits every recorded program that parses.

    Returns:
        Grammar text whose root is the program, for ``StructuredOutput(grammar=...)``.
    """
    rules = {**_layout_rules(bounds), **_formula_rules(bounds), **_term_rules(bounds)}
    return gbnf.render(rules)


def _layout_rules(b: Bounds) -> dict[str, str]:
    """Sections, lines, comments."""
    return {
        "root": (
            f'"Predicates:" ws declaration_line{{0,{b.declarations}}} '
            f'nl "Premises:" ws premise_line{{1,{b.premises}}} '
            'nl "Conclusion:" ws conclusion_line end'
        ),
        "declaration_line": "nl declaration (comment | ws)",
        "premise_line": "nl premise stop? (comment | ws)",
        "conclusion_line": "nl formula_0 stop? (comment | ws)",
        # Each line starts with its line break, after at most two blank lines; it may end in a few blanks.
        "nl": '"\\n" ([ \\t]{0,4} "\\n"){0,2}',
        "ws": "[ \\t]{0,4}",
        "stop": '"."',
        "end": '"\\n"{0,3}',
        "comment": '" :::" comment_text',
        **gbnf.text_rules("comment_text", b.comment_words),
        "declaration": f'name ("(" name_or_number (", " name_or_number){{0,{b.arguments - 1}}} ")")?',
        # a premise may elide conjuncts: A ∧ ... ∧ C (the parser reads what is written)
        "premise": f"operand_0 (binary (operand_0 | ellipsis)){{0,{b.operands - 1}}}",
        "ellipsis": '"..." | "…"',
    }


def _formula_rules(b: Bounds) -> dict[str, str]:
    """Formulas, one copy per level of parentheses: level ``depth`` has no parentheses left.

    The ``¬`` and quantifier prefixes of an operand are unrolled too (``operand_d_p``: ``p``
    prefixes written so far), each quantifier spelled out in the rule that goes on with the
    operand. Written as a repetition of a separate ``prefix`` rule they admit the same strings,
    but then every token after ``∀x`` that starts with a blank (``" ("``, ``" Dog"``) crosses a
    rule end, which xgrammar checks token by token: about 150 ms per quantifier with SmolLM2's
    vocabulary, against a few milliseconds so.
    """
    variable = "[a-z] [A-Za-z0-9_]{0,15}"
    rules = {
        "binary": '" ∧ " | " ∨ " | " ⊕ " | " → " | " ↔ "',
        "relation": '" = " | " ≠ " | " ∈ " | " ∉ "',
    }
    for d in range(b.depth + 1):
        group = f' | "(" formula_{d + 1} ")"' if d < b.depth else ""
        rules[f"formula_{d}"] = f"operand_{d} (binary operand_{d}){{0,{b.operands - 1}}}"
        for p in range(b.prefixes):
            rule = f"operand_{d}" if p == 0 else f"operand_{d}_{p}"
            rest = f"operand_{d}_{p + 1}" if p + 1 < b.prefixes else f"core_{d}"
            rules[rule] = f'"¬" {rest} | "∀" {variable} " " {rest} | "∃" {variable} " " {rest} | core_{d}'
        rules[f"core_{d}"] = f"atomic_{d}{group}"
        rules[f"atomic_{d}"] = f"term_{d} (relation term_{d})?"
    return rules


def _term_rules(b: Bounds) -> dict[str, str]:
    """Terms: names, numbers, applications ``f(t, ...)`` (a predicate applied is written the same)."""
    rules = {
        "name": f"{gbnf.char_class(_NAME_FIRST)} {gbnf.char_class(_NAME_REST)}{{0,{b.name_chars - 1}}}",
        # 2000, 42.3, 8pm, 42.3billion: the lexer reads a number with a word stuck to it as one token
        "number": '[0-9]{1,12} ("." [0-9]{1,12})? name?',
        "name_or_number": "name | number",
        # a quoted name is a constant ("The Secret Dude Society")
        "quoted": f'"\\"" [^"{gbnf.LINE_BREAKS}]{{1,{b.name_chars}}} "\\""',
    }
    for d in range(b.depth + 1):
        args = f' ("(" term_{d + 1} (", " term_{d + 1}){{0,{b.arguments - 1}}} ")")?' if d < b.depth else ""
        rules[f"term_{d}"] = f"number | quoted | name{args}"
    return rules
