"""Answer interpretation: a solver's normalised answer -> the problem's answer space.

No guessing: a program that gave no answer yields ``None`` and is scored wrong
(Logic-LM picked a random option for those; we report them by error kind).
"""

from __future__ import annotations

import re

from jobs.records import Problem

_OPTION = re.compile(r"^\s*\(?([A-Z])\)\s*(.*)$", re.S)
# Solver verdicts -> the option texts datasets use for them.
_VERDICT_TEXTS = {
    "true": {"true", "yes"},
    "false": {"false", "no"},
    "unknown": {"unknown", "uncertain", "cannot be determined"},
}


def option_letters(problem: Problem) -> dict[str, str]:
    """``{"A": "True", ...}`` from ``"A) True"``-style options."""
    letters: dict[str, str] = {}
    for opt in problem.options:
        m = _OPTION.match(opt)
        if m:
            letters[m.group(1)] = m.group(2).strip().rstrip(".").strip()
    return letters


def interpret(problem: Problem, answer: str | None) -> str | None:
    """Map a solver answer onto ``problem``'s answers.

    Args:
        problem: the problem (its options decide the answer space).
        answer: ``Outcome.answer``: a verdict (True/False/Unknown), an option
            letter, or free text.

    Returns:
        An option letter when the problem has options, else the answer text;
        None when the answer does not name any option (e.g. ``Unknown`` on a
        True/False dataset), which scores as wrong.

    >>> p = Problem("p1", "x", "", "", ("A) True", "B) False", "C) Uncertain"), "C")
    >>> interpret(p, "Unknown"), interpret(p, "B"), interpret(p, None)
    ('C', 'B', None)
    """
    if answer is None:
        return None
    answer = answer.strip()
    if not problem.options:
        return answer
    letters = option_letters(problem)
    if answer in letters:
        return answer
    texts = _VERDICT_TEXTS.get(answer.lower())
    if texts is None:
        return None
    for letter, text in letters.items():
        if text.lower() in texts:
            return letter
    return None


def normalise_text(s: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", s.lower())).strip()


def is_correct(problem: Problem, predicted: str | None) -> bool:
    """Exact letter match for option problems; normalised text (or alias) match otherwise."""
    if predicted is None or problem.answer is None:
        return False
    if problem.options:
        return predicted == problem.answer
    golds = [problem.answer, *problem.meta.get("answer_aliases", [])]
    return normalise_text(predicted) in {normalise_text(g) for g in golds}
