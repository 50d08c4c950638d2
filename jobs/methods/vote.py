"""The certified vote over sampled programs (``--logiclm-samples K``): which answer, if any, a problem gets.

Self-consistency (Wang et al., 2023) samples several answers and keeps the most frequent one. A
program that did not run, or that ran but says something other than the problem (a finding of
severity ``error`` of the formalization checks, :mod:`symbolkg.solvers.checks`), has no answer worth
counting, so only *certified* samples vote here: the caller passes None for every sample that does
not count (the ``logiclm`` method: its kept program did not execute, gave no answer on the problem's
answer space, or has a check error; :class:`symbolkg.jobs.methods.logiclm.Sample`). This module
only counts, so the rule can be read and tested alone.

The rule (a strict plurality of the counted samples):

* the winner is the answer with more counted samples than every other answer;
* two or more answers tied for the most counted samples: no winner (a conflict is not settled by
  guessing or by sample order); the message lists the tied counts, ``samples disagree: A x2, B x2``;
* no sample counts: no winner, ``no sample executed cleanly``;
* one counted sample alone wins (its agreement is 1.0 of 1 counted; ``counted`` and ``samples``
  stay in the record so that a reader sees how thin the support was).

``agreement`` is the winner's share of the counted samples (votes for the winner / counted), not of
all samples: the uncounted ones cast no vote either way.

    >>> v = vote(["A", "A", None, "B"])
    >>> (v.winner, v.counts, v.counted, v.samples, v.agreement, v.first)
    ('A', {'A': 2, 'B': 1}, 3, 4, 0.6667, 0)
    >>> v = vote(["B", "A", "A", "B"])
    >>> (v.winner, v.reason)
    (None, 'samples disagree: B x2, A x2')
    >>> vote([None, None]).reason
    'no sample executed cleanly'
    >>> vote([None, "C"]).to_dict()
    {'winner': 'C', 'counts': {'C': 1}, 'counted': 1, 'samples': 2, 'agreement': 1.0, 'reason': ''}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["NO_CLEAN_SAMPLE", "SAMPLES_DISAGREE", "Vote", "vote"]

#: The row's ``error_kind`` when no sample counted (nothing certified to answer with).
NO_CLEAN_SAMPLE = "no_clean_sample"
#: The row's ``error_kind`` when two answers tie for the most counted samples.
SAMPLES_DISAGREE = "samples_disagree"


@dataclass(frozen=True)
class Vote:
    """The result of :func:`vote`.

    Attributes:
        winner: the answer with a strict plurality of the counted samples; None on a tie or when
            no sample counted.
        counts: answer -> counted samples giving it, most first (ties in the order the answers
            first appear, i.e. sample order).
        counted: samples that counted (had a certified answer).
        samples: every sample, counted or not.
        first: the index of the first counted sample whose answer is the winner (the one whose
            program, outcome and certificate the row reports); None without a winner.
    """

    winner: str | None
    counts: dict[str, int]
    counted: int
    samples: int
    first: int | None

    @property
    def agreement(self) -> float | None:
        """Votes for the winner over the counted samples, 4 decimals; None without a winner."""
        if self.winner is None:
            return None
        return round(self.counts[self.winner] / self.counted, 4)

    @property
    def reason(self) -> str:
        """Why there is no winner (the row's error message), or ``""`` when there is one."""
        if self.winner is not None:
            return ""
        if not self.counted:
            return "no sample executed cleanly"
        return "samples disagree: " + ", ".join(f"{answer} x{n}" for answer, n in self.counts.items())

    @property
    def error_kind(self) -> str | None:
        """:data:`SAMPLES_DISAGREE` or :data:`NO_CLEAN_SAMPLE` without a winner, else None."""
        if self.winner is not None:
            return None
        return SAMPLES_DISAGREE if self.counted else NO_CLEAN_SAMPLE

    def to_dict(self) -> dict[str, Any]:
        """The row's ``trace["vote"]`` (JSON-ready)."""
        return {
            "winner": self.winner,
            "counts": dict(self.counts),
            "counted": self.counted,
            "samples": self.samples,
            "agreement": self.agreement,
            "reason": self.reason,
        }


def vote(answers: Sequence[str | None]) -> Vote:
    """Count the certified answers of the samples and name the winner by the module's rule.

    Args:
        answers: one entry per sample, in sample (seed) order: the sample's answer when it counts,
            None when it does not (the caller decides what counts).

    Returns:
        The vote: the winner (None on a tie or with nothing counted), the counts, the agreement.

    Raises:
        ValueError: no samples, or an answer that is not a non-empty string (it names the sample).
    """
    if not answers:
        raise ValueError("vote needs at least one sample, got none")
    for i, answer in enumerate(answers):
        if answer is not None and (not isinstance(answer, str) or not answer):
            raise ValueError(f"sample {i}'s answer must be a non-empty string or None, got {answer!r}")
    counted = [a for a in answers if a is not None]
    counts = dict(Counter(counted).most_common())  # most_common keeps first-seen order among equal counts
    ranked = list(counts.items())
    winner = None
    if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
        winner = ranked[0][0]
    first = answers.index(winner) if winner is not None else None
    return Vote(winner, counts, len(counted), len(answers), first)
