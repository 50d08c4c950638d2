"""Stop a completion that repeats itself, instead of decoding the loop to the token cap.

A small model writing a program sometimes falls into a loop: ``Bright($x, True) &&`` again and again,
the same fact lines forty times. Greedy decoding never leaves such a loop, so the completion runs to
``max_tokens`` (of qwen2.5-coder-1.5b's first 1,337 completions here, 204 ran to the cap, 41% of all
the tokens it generated; most were loops), and near the end of a batch job such a completion decodes
alone at a single sequence's speed (about 6.5 tokens/s for that model on 2 CPU cores). What the loop
adds is not used: the program does not parse either way, and a repair round starts from the error.

:class:`RepeatStop` says when the generated tokens end in such a loop: the last ``span`` tokens (at
least :attr:`~RepeatStop.min_tokens`) are one block of at most :attr:`~RepeatStop.max_period` tokens
repeated, at least :attr:`~RepeatStop.repeats` whole times. An engine that sees the tokens as they
are generated (:class:`~symbolkg.actors.engines.vllm_engine.VLLMEngine`) checks every
:attr:`~RepeatStop.check_every` tokens, aborts the request when it holds, and returns what was
generated with ``finish_reason="repeat"``.

Ordinary text and programs do not hold it: a block repeated three times in a row, token for token,
with no token changed (a constant, a number, a name), over at least 128 tokens. No program of the
three models recorded in Logic-LM's data does (``tests/actors/test_repeats.py``). The defaults were
chosen on the kept completions of the qwen2.5-coder-1.5b runs (``benchmarks/repeat_stop.py``): of
the 204 that ran to the cap, blocks of up to 64 tokens repeated four times end 102, blocks of up to
256 repeated three times 132 (a loop of seven fact lines is a block of about 100 tokens); either ends
3 of the 1,133 that ended by themselves, each after a run of junk lines (``Footer...`` forty times).
A request decoded to a JSON schema is exempt: the schema bounds what it admits, so a loop inside it
ends with a valid object at the bound (SmolLM2's LKG extractions repeat items and still validate),
which a stop would cut. A request that asks for a repetition on purpose holds it too: such a job
turns the stop off
(``VLLMConfig(repeat_stop=None)``, ``symbolkg solve --no-repeat-stop``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FINISH_REASON", "RepeatStop"]

#: The ``Completion.finish_reason`` of a completion stopped by a :class:`RepeatStop`.
FINISH_REASON = "repeat"


@dataclass(frozen=True)
class RepeatStop:
    """When a completion is a loop: the tail of its tokens is one block repeated.

    Attributes:
        min_tokens: the shortest repeating tail that stops a completion (tokens).
        repeats: the fewest whole copies of the block in that tail.
        max_period: the longest block looked for (tokens); a block of ``p`` tokens needs a tail of
            ``max(min_tokens, repeats * p)`` tokens.
        check_every: how often an engine looks (every this many generated tokens): the cost of a look
            is ``max_period`` slice comparisons of the tail, done in C.
    """

    min_tokens: int = 128
    repeats: int = 3
    max_period: int = 256
    check_every: int = 16

    def __post_init__(self) -> None:
        if self.repeats < 2:
            raise ValueError(f"repeats must be >= 2 (one copy is not a repetition), got {self.repeats}")
        if self.max_period < 1:
            raise ValueError(f"max_period must be >= 1, got {self.max_period}")
        if self.min_tokens < self.repeats:
            raise ValueError(f"min_tokens must be >= repeats ({self.repeats}), got {self.min_tokens}")
        if self.check_every < 1:
            raise ValueError(f"check_every must be >= 1, got {self.check_every}")

    def period(self, ids: Sequence[int]) -> int | None:
        """The shortest block ``ids`` ends repeating (per the attributes), or None where it does not."""
        n = len(ids)
        if n < self.min_tokens:
            return None
        last = ids[-1]
        for p in range(1, self.max_period + 1):
            span = max(self.min_tokens, self.repeats * p)
            if span > n:
                return None  # longer blocks need longer tails still
            if ids[n - 1 - p] != last:  # the cheap test first: most periods fail at the last token
                continue
            tail = list(ids[n - span :])
            if tail[p:] == tail[:-p]:  # every token equals the one p before it
                return p
        return None

    def due(self, generated: int, last_checked: int) -> bool:
        """Whether an engine that last looked at ``last_checked`` tokens should look at ``generated``."""
        return generated >= self.min_tokens and generated - last_checked >= self.check_every
