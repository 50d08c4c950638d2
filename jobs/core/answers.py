"""Answer interpretation: a solver's normalised answer -> the problem's answer space.

No guessing: a program that gave no answer yields ``None`` and is scored wrong
(Logic-LM picked a random option for those; we report them by error kind).
"""

from __future__ import annotations

import math
import re

from symbolkg.jobs.core.rows import Problem
from symbolkg.solvers.answer_options import VERDICT_TEXTS, option_letters


def interpret(problem: Problem, answer: str | None) -> str | None:
    """Map a solver answer onto ``problem``'s answers.

    Args:
        problem: the problem (its options decide the answer space).
        answer: ``Outcome.answer``: a verdict (True/False/Unknown), an option
            letter, or free text.

    Returns:
        An option letter when the problem has options, else the answer text;
        None when the answer does not name any option, which scores as wrong.

    Closed world: a True/False problem without an Unknown option (ProntoQA,
    PARARULE-Plus, SymBa's sets) is posed under the closed-world assumption, so
    a goal the program cannot derive is False (negation as failure), exactly as
    a Prolog query would answer. That is the dataset's semantics, not a guess:
    the program still has to run, and an unexecuted program stays unanswered.

    >>> p = Problem("p1", "x", "", "", ("A) True", "B) False", "C) Uncertain"), "C")
    >>> interpret(p, "Unknown"), interpret(p, "B"), interpret(p, None)
    ('C', 'B', None)
    >>> interpret(Problem("p2", "x", "", "", ("A) True", "B) False"), "B"), "Unknown")
    'B'
    """
    if answer is None:
        return None
    answer = answer.strip()
    if not problem.options:
        return answer
    letters = option_letters(problem.options)
    if answer in letters:
        return answer
    verdict = answer.lower()
    if verdict not in VERDICT_TEXTS:
        return None
    by_verdict = {
        v: letter for letter, text in letters.items() for v, texts in VERDICT_TEXTS.items() if text.lower() in texts
    }
    if verdict == "unknown" and "unknown" not in by_verdict and {"true", "false"} <= by_verdict.keys():
        return by_verdict["false"]  # closed world: not derivable = false
    return by_verdict.get(verdict)


def normalise_text(s: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", s.lower())).strip()


def as_number(text: str) -> float | None:
    """``text`` as a number (``"18"``, ``"18.0"``, ``" -2.5 "``), or None when it is not one."""
    try:
        value = float(text.strip().replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def is_correct(problem: Problem, predicted: str | None) -> bool:
    """Exact letter match for option problems; numbers as numbers; normalised text (or alias) otherwise.

    >>> p = Problem("m1", "symba/gsm8k", "", "answer(X)", (), "18")
    >>> is_correct(p, "18.0"), is_correct(p, "18"), is_correct(p, "17.999"), is_correct(p, "eighteen")
    (True, True, False, False)
    """
    if predicted is None or problem.answer is None:
        return False
    if problem.options:
        return predicted == problem.answer
    gold_number, number = as_number(problem.answer), as_number(predicted)
    if gold_number is not None and number is not None:
        return abs(gold_number - number) <= 1e-9 * max(1.0, abs(gold_number))
    golds = [problem.answer, *problem.meta.get("answer_aliases", [])]
    return normalise_text(predicted) in {normalise_text(g) for g in golds}
