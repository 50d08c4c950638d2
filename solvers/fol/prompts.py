"""The ``logiclm-fol`` prompt: system message, few-shot examples, section headers and the section skeleton.

Read by :mod:`symbolkg.solvers.prompts`, which builds the messages of every Logic-LM language from the
same parts; the system message states what :mod:`symbolkg.solvers.fol.syntax` accepts.
"""

from __future__ import annotations

import re

from symbolkg.solvers.prompt_parts import COMMENT, ITEM, NAME, ONLY, FewShot

SYSTEM = f"""Translate the problem into first-order logic. {ONLY}
Sections, in this order, each header alone on its line:
Predicates: one per line, e.g. Dog(x) ::: x is a dog.
Premises: one formula per premise sentence.
Conclusion: exactly one formula, the statement to check.
Symbols: ∀x ∃x ¬ ∧ ∨ → (if-then) ↔ (if and only if) ⊕ (either-or, not both), parentheses, = and ≠.
Predicates start with a capital letter and keep the same number of arguments everywhere.
Constants are lowercase names (rex, new_york); the variables x, y, z must be bound by ∀ or ∃.
No arithmetic or comparisons such as < or >: use a predicate instead, e.g. OlderThan(x, y).
Text after ::: is a comment (the sentence)."""

#: Hand-written few-shot examples, in prompt order.
EXAMPLES: tuple[FewShot, ...] = (
    FewShot(
        context=(
            "All librarians in Tromso read every day. Some people who read every day write poems. "
            "Everyone who reads every day is either a student or a teacher, but not both. "
            "If someone is a teacher, then they have a library card. "
            "Ingrid is a librarian in Tromso, and she is not a teacher."
        ),
        question=(
            "Based on the above information, is the following statement true, false, or uncertain? Ingrid is a student."
        ),
        options=("A) True", "B) False", "C) Uncertain"),
        program="""Predicates:
Librarian(x) ::: x is a librarian in Tromso.
ReadsDaily(x) ::: x reads every day.
WritesPoems(x) ::: x writes poems.
Student(x) ::: x is a student.
Teacher(x) ::: x is a teacher.
HasCard(x) ::: x has a library card.
Premises:
∀x (Librarian(x) → ReadsDaily(x)) ::: All librarians in Tromso read every day.
∃x (ReadsDaily(x) ∧ WritesPoems(x)) ::: Some people who read every day write poems.
∀x (ReadsDaily(x) → (Student(x) ⊕ Teacher(x))) ::: Everyone who reads every day is either a student or a teacher, but not both.
∀x (Teacher(x) → HasCard(x)) ::: If someone is a teacher, then they have a library card.
Librarian(ingrid) ∧ ¬Teacher(ingrid) ::: Ingrid is a librarian in Tromso, and she is not a teacher.
Conclusion:
Student(ingrid) ::: Ingrid is a student.""",  # noqa: E501 - a program line is one line for the model
        solver_answer="True",
        answer="A",
    ),
)

#: Section headers, in program order (canonical spelling).
SECTIONS: tuple[str, ...] = ("Predicates:", "Premises:", "Conclusion:")

#: A line that belongs to the last section; the first other line ends the program
#: (:func:`symbolkg.solvers.prompts.extract_program`).
LAST_SECTION_LINE = re.compile(r"^\s*(?:[∀∃¬(~]|[A-Za-z_]\w*\(|[a-z]\w*\s*(?:=|≠))")


_DECL = rf"{NAME}\(([A-Za-z][A-Za-z0-9_]*(, ?[A-Za-z][A-Za-z0-9_]*)*)?\){COMMENT}"

#: FOL skeleton: Predicates/Premises/Conclusion, one item per line, exactly one conclusion.
PROGRAM_REGEX = (
    rf"Predicates:\n({_DECL}\n)*"
    rf"\n?Premises:\n({ITEM}{COMMENT}\n)+"
    rf"\n?Conclusion:\n{ITEM}{COMMENT}\n?"
)
