"""What the prompts of every Logic-LM language are made of: the few-shot record, the reply rule,
and the pieces of the structured-decoding regexes.

Each language keeps its own prompt beside its parser (``solvers/lp/prompts.py``, ``solvers/fol/prompts.py``,
``solvers/csp/prompts.py``, ``solvers/smt/lsat_prompts.py``); :mod:`symbolkg.solvers.prompts` builds the
messages from them. The regex pieces use only what both xgrammar and Python's ``re`` read the same
way: no flags, lookarounds or backreferences.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FewShot:
    """A hand-written example problem with its program.

    Attributes:
        context: the premises or puzzle setup.
        question: the question as the dataset phrases it.
        options: answer options, ``"A) ..."`` style.
        program: the program the model should write for it.
        solver_answer: what the solver must answer for ``program``
            (``"True"``/``"False"``/``"Unknown"`` or an option letter).
        answer: the correct option letter.
    """

    context: str
    question: str
    options: tuple[str, ...]
    program: str
    solver_answer: str
    answer: str


#: The last sentence of every system message and of every refine request.
ONLY = "Reply with ONLY the program: no explanation, no Markdown, no ``` fences."

# str.splitlines() (which every parser uses) also breaks lines at these; free text must not contain them.
BREAKS = r"\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029"
TEXT = rf"[^{BREAKS}]"
NAME = r"[A-Za-z][A-Za-z0-9_]*"
COMMENT = rf"( ::: {TEXT}*)?"
# Items without ':' (formulas, Python expressions) cannot be mistaken for a header.
ITEM = rf"[^:{BREAKS}]+"
