"""What a formalization check reports: :class:`Finding`, and what the checks read of a problem.

The checks themselves are :mod:`symbolkg.solvers.checks` (their definitions and the dispatch by
language) and each language's ``checks`` module beside its parser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from symbolkg.solvers.outcomes import CheckFinding, Severity


class ProblemText(Protocol):
    """What the checks read of a problem (a job's problem record has both): the text checked against."""

    @property
    def question(self) -> str: ...

    @property
    def options(self) -> Sequence[str]: ...


#: The checks, in the order they run (see :mod:`symbolkg.solvers.checks` for each definition).
CHECKS = (
    "answer_format",
    "query_polarity",
    "one_name",
    "option_position",
    "scale_direction",
    "option_modality",
    "free_variables",
    "unused_symbols",
    "disconnected_premises",
    "unstated_facts",
)


@dataclass(frozen=True)
class Finding:
    """One thing a check found wrong with a program.

    Attributes:
        check: the check's name (one of :data:`CHECKS`).
        severity: ``"error"`` (the program does not say what the text says: worth a refine round),
            ``"warning"`` (likely wrong), ``"info"`` (worth knowing).
        message: what is wrong, where, and what the text says, for an LLM to act on.
        line: the 1-based program line it refers to, if one.
        correction: the whole corrected program when the text resolves the mismatch without
            guessing; None otherwise.
    """

    check: str
    severity: Severity
    message: str
    line: int | None = None
    correction: str | None = None

    def record(self) -> CheckFinding:
        """The finding as it leaves the worker and as a row records it: whether it corrects, not the corrected
        text (the worker applies corrections itself). That record is the only form a finding travels in."""
        return CheckFinding(self.check, self.severity, self.message, self.line, self.correction is not None)
