"""The ``logiclm-lp`` prompt: system message, few-shot examples, section headers and the line grammar.

Read by :mod:`symbolkg.solvers.prompts`, which builds the messages of every Logic-LM language from the
same parts; the system message states what :mod:`symbolkg.solvers.lp.syntax` accepts.
"""

from __future__ import annotations

import re

from symbolkg.solvers.prompt_parts import COMMENT, NAME, ONLY, FewShot

SYSTEM = f"""Translate the problem into a logic program. {ONLY}
Sections, in this order, each header alone on its line: Predicates:, Facts:, Rules:, Query:.
Predicates: declarations like Likes($x, $y, bool)
Facts: atoms like Likes(Anne, Bob, True)
Rules: premises >>> conclusion, premises joined by &&
Query: exactly one atom, the statement to check
An atom ends with True or False, saying whether it holds: "Bob is not cold" is Cold(Bob, False).
Constants are single words (Bob, cat); variables ($x, $y) belong in rules. Keep each predicate's number of arguments.
Text after ::: is an optional comment."""

#: Hand-written few-shot examples, in prompt order.
EXAMPLES: tuple[FewShot, ...] = (
    FewShot(
        context=("Every lorpin is a tremp. Each tremp is not shiny. Every zindle is shiny. Mira is a lorpin."),
        question="Is the following statement true or false? Mira is shiny.",
        options=("A) True", "B) False"),
        program="""Predicates:
Lorpin($x, bool)
Tremp($x, bool)
Shiny($x, bool)
Zindle($x, bool)

Facts:
Lorpin(Mira, True)

Rules:
Lorpin($x, True) >>> Tremp($x, True)
Tremp($x, True) >>> Shiny($x, False)
Zindle($x, True) >>> Shiny($x, True)

Query:
Shiny(Mira, True)""",
        solver_answer="False",
        answer="B",
    ),
    FewShot(
        context=(
            "The bear is big. The bear likes the mouse. The mouse is cold. The mouse does not like the bear. "
            "If someone likes the mouse then they are kind. If someone is big and kind then they are not quiet."
        ),
        question=(
            "Based on the above information, is the following statement true, false, or unknown? The bear is not quiet."
        ),
        options=("A) True", "B) False", "C) Unknown"),
        program="""Predicates:
Big($x, bool) ::: Is x big?
Likes($x, $y, bool) ::: Does x like y?
Cold($x, bool) ::: Is x cold?
Kind($x, bool) ::: Is x kind?
Quiet($x, bool) ::: Is x quiet?

Facts:
Big(bear, True) ::: The bear is big.
Likes(bear, mouse, True) ::: The bear likes the mouse.
Cold(mouse, True) ::: The mouse is cold.
Likes(mouse, bear, False) ::: The mouse does not like the bear.

Rules:
Likes($x, mouse, True) >>> Kind($x, True) ::: If someone likes the mouse then they are kind.
Big($x, True) && Kind($x, True) >>> Quiet($x, False) ::: If someone is big and kind then they are not quiet.

Query:
Quiet(bear, False) ::: The bear is not quiet.""",
        solver_answer="True",
        answer="A",
    ),
)

#: Section headers, in program order (canonical spelling).
SECTIONS: tuple[str, ...] = ("Predicates:", "Facts:", "Rules:", "Query:")

#: A line that belongs to the last section; the first other line ends the program
#: (:func:`symbolkg.solvers.prompts.extract_program`).
LAST_SECTION_LINE = re.compile(r"^\s*[!¬~]?\s*[A-Za-z_]\w*\s*\(")


_VAR = r"\$[A-Za-z][A-Za-z0-9_]*"
_ID_CHAR = "A-Za-z0-9_"


def _identifier_except(word: str) -> str:
    """A regex for identifiers ``[A-Za-z0-9_]+`` other than ``word`` (letters only).

    Written without lookahead (xgrammar has none): an identifier differs from ``word`` at
    some first position, or is a proper prefix of it, or extends it.
    """
    alternatives = [f"{word[:i]}[{_except(ch)}][{_ID_CHAR}]*" for i, ch in enumerate(word)]
    alternatives += [word[:i] for i in range(1, len(word))]
    alternatives.append(f"{word}[{_ID_CHAR}]+")
    return "(" + "|".join(alternatives) + ")"


def _except(ch: str) -> str:
    """The identifier character class without ``ch``, as ranges."""
    ranges = []
    for lo, hi in (("A", "Z"), ("a", "z"), ("0", "9")):
        if lo <= ch <= hi:
            if ch > lo:
                ranges.append(f"{lo}-{chr(ord(ch) - 1)}" if chr(ord(ch) - 1) != lo else lo)
            if ch < hi:
                ranges.append(f"{chr(ord(ch) + 1)}-{hi}" if chr(ord(ch) + 1) != hi else hi)
        else:
            ranges.append(f"{lo}-{hi}")
    return "".join(ranges) + "_"


# A constant is any identifier but ``bool``: that word belongs in declarations only, and a small
# model otherwise copies ``Pred($x, bool)`` into facts as ``Pred($x, bool, True)``.
_CONST = _identifier_except("bool")
# At most three arguments before the truth value (the recorded programs use one or two): unbounded,
# a small constrained model can loop on "Pred($x, bool, bool, ..." until max_tokens.
_ATOM = rf"!?{NAME}\((({_VAR}|{_CONST}), ){{1,3}}(True|False)\)"
_GROUND_ATOM = rf"!?{NAME}\(({_CONST}, ){{1,3}}(True|False)\)"  # the query names constants only
_CONJ = rf"{_ATOM}( && {_ATOM})*"
_DECL = rf"{NAME}\(({_VAR}, ){{1,3}}bool\){COMMENT}"
_CLAUSE = rf"{_CONJ}( >>> {_CONJ})?{COMMENT}"

#: The LP line grammar: every program it admits parses (arities aside; tested by sampling).
PROGRAM_REGEX = (
    rf"Predicates:\n({_DECL}\n)*"
    rf"\n?Facts:\n({_CLAUSE}\n)*"
    rf"\n?Rules:\n({_CLAUSE}\n)*"
    rf"\n?Query:\n{_GROUND_ATOM}{COMMENT}\n?"
)
