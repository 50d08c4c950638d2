"""The answer options of a problem as text: ``"A) True"`` -> ``{"A": "True"}``, and the verdict texts.

Shared by the formalization checks (:mod:`symbolkg.solvers.checks`, which compare a program's
options with the problem's) and the job's answer interpretation
(:func:`symbolkg.jobs.core.answers.interpret`, which maps a solver verdict onto an option), so
that both read options the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_OPTION = re.compile(r"^\s*\(?([A-Z])\)\s*(.*)$", re.DOTALL)

#: Solver verdicts -> the option texts (lower case) datasets use for them.
VERDICT_TEXTS: Mapping[str, frozenset[str]] = {
    "true": frozenset({"true", "yes"}),
    "false": frozenset({"false", "no"}),
    "unknown": frozenset({"unknown", "uncertain", "cannot be determined"}),
}


def option_letters(options: Iterable[str]) -> dict[str, str]:
    """``{"A": "True", ...}`` from ``"A) True"``-style options (others are left out).

    >>> option_letters(["A) True", "(B) False.", "no letter"])
    {'A': 'True', 'B': 'False'}
    """
    letters: dict[str, str] = {}
    for opt in options:
        m = _OPTION.match(opt)
        if m:
            letters[m.group(1)] = m.group(2).strip().rstrip(".").strip()
    return letters
