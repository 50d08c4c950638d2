"""The ``logiclm-csp`` prompt: system message, few-shot examples, section headers and the section skeleton.

Read by :mod:`symbolkg.solvers.prompts`, which builds the messages of every Logic-LM language from the
same parts; the system message states what :mod:`symbolkg.solvers.csp.syntax` accepts.
"""

from __future__ import annotations

import re

from symbolkg.solvers.prompt_parts import COMMENT, ITEM, ONLY, TEXT, FewShot

SYSTEM = f"""Translate the ordering puzzle into a constraint program. {ONLY}
Sections, in this order, each header alone on its line:
Domain: what the positions mean, e.g. 1: leftmost and 3: rightmost (N objects -> positions 1 to N).
Variables: one per object, name [IN] [1, 2, 3]; names use letters, digits and _.
Constraints: one Python condition per line (== != < > <= >=, + -, abs(), and, or, not), and AllDifferentConstraint([all variables]).
Query: one line per answer option, with its letter, e.g. A) name == 1
"Second from the right" among N objects is position N - 1.
Text after ::: is a comment (the sentence)."""  # noqa: E501 - a prompt line is one line for the model

#: Hand-written few-shot examples, in prompt order.
EXAMPLES: tuple[FewShot, ...] = (
    FewShot(
        context=(
            "The following paragraphs each describe a set of three objects arranged in a fixed order. "
            "The statements are logically consistent within each paragraph.\n\n"
            "In a bakery window, there are three cakes: a lemon cake, a plum cake, and a fig cake. "
            "The plum cake is cheaper than the fig cake. The lemon cake is the most expensive."
        ),
        question="Which of the following is true?",
        options=(
            "A) The lemon cake is the cheapest.",
            "B) The plum cake is the cheapest.",
            "C) The fig cake is the cheapest.",
        ),
        program="""Domain:
1: cheapest
3: most expensive
Variables:
lemon_cake [IN] [1, 2, 3]
plum_cake [IN] [1, 2, 3]
fig_cake [IN] [1, 2, 3]
Constraints:
plum_cake < fig_cake ::: The plum cake is cheaper than the fig cake.
lemon_cake == 3 ::: The lemon cake is the most expensive.
AllDifferentConstraint([lemon_cake, plum_cake, fig_cake]) ::: Each cake has its own place.
Query:
A) lemon_cake == 1 ::: The lemon cake is the cheapest.
B) plum_cake == 1 ::: The plum cake is the cheapest.
C) fig_cake == 1 ::: The fig cake is the cheapest.""",
        solver_answer="B",
        answer="B",
    ),
)

#: Section headers, in program order (canonical spelling).
SECTIONS: tuple[str, ...] = ("Domain:", "Variables:", "Constraints:", "Query:")

#: A line that belongs to the last section; the first other line ends the program
#: (:func:`symbolkg.solvers.prompts.extract_program`).
LAST_SECTION_LINE = re.compile(r"^\s*[A-Za-z]\s*\)")


#: CSP skeleton: Domain notes, ``name [IN] domain`` variables, constraints, ``X) expr`` options.
PROGRAM_REGEX = (
    rf"(Domain:\n([0-9]+: {TEXT}*\n)*)?"
    rf"\n?Variables:\n([A-Za-z_][A-Za-z0-9_]* \[IN\] {ITEM}{COMMENT}\n)+"
    rf"\n?Constraints:\n({ITEM}{COMMENT}\n)+"
    rf"\n?Query:\n([A-G]\) {ITEM}{COMMENT}\n)*[A-G]\) {ITEM}{COMMENT}\n?"
)
