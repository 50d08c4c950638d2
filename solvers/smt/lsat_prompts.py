"""The ``logiclm-smt`` prompt (the AR-LSAT DSL): system message, few-shot examples, section headers and the
section skeleton.

Read by :mod:`symbolkg.solvers.prompts`, which builds the messages of every Logic-LM language from the
same parts; the system message states what :mod:`symbolkg.solvers.smt.lsat_syntax` accepts.
"""

from __future__ import annotations

import re

from symbolkg.solvers.prompt_parts import BREAKS, ONLY, TEXT, FewShot
from symbolkg.solvers.smt.lsat_formula_syntax import CHECK_ALIASES

SYSTEM = f"""Translate the puzzle into a Z3-style program. {ONLY}
Sections, in this order, each header alone on its line:
# Declarations
sorts: people = EnumSort([Ann, Bo]) or days = EnumSort([1, 2, 3]); functions: f = Function([people] -> [days]) (several argument sorts allowed; the result may also be int or bool)
# Constraints
one formula per line: == != < <= > >= + -, And(...), Or(...), Not(x), Implies(a, b), If(c, a, b), Distinct(...), ForAll([x:people], ...), Exists([x:people], ...), Count([x:people], condition)
The question's own condition ("If Ann ..., then") is a constraint too.
# Options
Question ::: the question
one check per option, ending with ::: (A), ::: (B), ...:
is_valid(f) must be true; is_sat(f) could be true; is_unsat(f) cannot be true; is_exception(is_sat(f)) for "could be true EXCEPT".
Text after ::: is a comment."""  # noqa: E501 - a prompt line is one line for the model

#: Hand-written few-shot examples, in prompt order.
EXAMPLES: tuple[FewShot, ...] = (
    FewShot(
        context=(
            "Three interns—Kim, Lee, and Moss—are each assigned to exactly one of two projects, Alpha and Beta. "
            "The following conditions apply: Each project has at least one intern. "
            "Kim and Lee are not assigned to the same project. "
            "If Moss is assigned to Alpha, then Lee is assigned to Beta."
        ),
        question="If Kim is assigned to Beta, then which one of the following must be true?",
        options=(
            "A) Lee is assigned to Beta.",
            "B) Moss is assigned to Alpha.",
            "C) Lee and Moss are assigned to the same project.",
            "D) Moss is assigned to Beta.",
            "E) All three interns are assigned to Beta.",
        ),
        program="""# Declarations
interns = EnumSort([Kim, Lee, Moss])
projects = EnumSort([Alpha, Beta])
assigned = Function([interns] -> [projects])

# Constraints
ForAll([p:projects], Exists([i:interns], assigned(i) == p)) ::: Each project has at least one intern.
assigned(Kim) != assigned(Lee) ::: Kim and Lee are not assigned to the same project.
Implies(assigned(Moss) == Alpha, assigned(Lee) == Beta) ::: If Moss is assigned to Alpha, then Lee is assigned to Beta.
assigned(Kim) == Beta ::: If Kim is assigned to Beta

# Options
Question ::: If Kim is assigned to Beta, then which one of the following must be true?
is_valid(assigned(Lee) == Beta) ::: (A)
is_valid(assigned(Moss) == Alpha) ::: (B)
is_valid(assigned(Lee) == assigned(Moss)) ::: (C)
is_valid(assigned(Moss) == Beta) ::: (D)
is_valid(Count([i:interns], assigned(i) == Beta) == 3) ::: (E)""",
        solver_answer="D",
        answer="D",
    ),
)

#: Section headers, in program order (canonical spelling).
SECTIONS: tuple[str, ...] = ("# Declarations", "# Constraints", "# Options")

#: A line that belongs to the last section; the first other line ends the program
#: (:func:`symbolkg.solvers.prompts.extract_program`).
LAST_SECTION_LINE = re.compile(r"^\s*(?:Question\b|[A-Za-z_]\w*\s*\()")


# the option checks the DSL reads, with the English spellings it reads as one of them
# (lsat_formula_syntax.CHECK_ALIASES): the regex admits every program the parser runs
# (tests/solvers/test_prompts.py)
_CHECKS = ("is_sat", "is_unsat", "is_valid", "is_exception", "is_accurate_list", *sorted(CHECK_ALIASES))
_OPTION = rf"({'|'.join(_CHECKS)})\({TEXT}*\) ::: \([A-G]\)"
_LINE = rf"[^#{BREAKS}]{TEXT}*\n"
#: AR-LSAT skeleton: the three headers, one item per line, option checks labelled (A)...
PROGRAM_REGEX = (
    rf"# Declarations\n({_LINE})+\n?"
    rf"# Constraints\n({_LINE})+\n?"
    rf"# Options\n(Question ::: {TEXT}*\n)?"
    rf"({_OPTION}\n)*{_OPTION}\n?"
)
