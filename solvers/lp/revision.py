"""Revising an inconsistent LP program: the facts the text does not state give way.

A small model writes, beside the facts the context states, facts it believes: the chain's
conclusions, and as often their opposites (``Small(alex, False)`` where the rules derive
``Small(alex, True)``). When that makes the program derive the query both ways, the engine has
no answer (:func:`symbolkg.solvers.lp.engine.solve`: ``inconsistent``). The text decides which
side gives way: :func:`revise` looks at the facts each side's derivation rests on and drops
those that no sentence of the context states, then runs again, until the program is consistent.
It is dependency-directed (only facts the contradiction rests on are dropped; facts the text
states are never touched), and it gives up when neither side rests on an unstated fact: then a
rule or the text itself is at odds, and dropping a fact would be a guess.

A fact ``P(c1, ..., cn, v)`` is *stated* when one sentence of the context names every word of
every constant ``ci`` and every content word of the predicate's name (plural and verb endings
aside; ``NotHot`` is ``hot`` negated), and the sentence is negated exactly when the fact is
(``Alex is not small.`` states ``Small(alex, False)`` and ``NotSmall(alex, True)``). That is a
word match, not understanding: a fact the text states in other words ("Alex is tiny") reads as
unstated, and only matters when the contradiction rests on it.

Where it runs: the solver worker, after the checks' corrections, when the request asks for
corrections (:func:`symbolkg.solvers.registry.run`); ``tests/solvers/lp/test_revision.py`` holds its
cases. On the recorded programs of Logic-LM's three models it changes one answer
(text-davinci-003, ProntoQA: no answer -> a wrong one); on qwen2.5-coder-1.5b's ProntoQA programs it
answers all 8 inconsistent programs, all right (``benchmarks/RESULTS.md``).

Example:
    >>> prog = '''Predicates:
    ... Jompus($x, bool)
    ... Small($x, bool)
    ... Facts:
    ... Jompus(alex, True)
    ... Small(alex, False)
    ... Rules:
    ... Jompus($x, True) >>> Small($x, True)
    ... Query:
    ... Small(alex, True)'''
    >>> r = revise(prog, "Alex is a jompus. Every jompus is small.")
    >>> r.dropped
    ('Small(alex, False)',)
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass

from symbolkg.solvers.lp import syntax as lp
from symbolkg.solvers.lp.engine import ChainingTimeout, Fixpoint, TooManyAtoms, contradiction, forward_chain
from symbolkg.solvers.outcomes import Limits
from symbolkg.solvers.shared_checks import states

#: Most rounds of dropping and running again (each drops at least one fact).
MAX_STEPS = 8
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Revision:
    """A consistent program made from an inconsistent one.

    Attributes:
        program: the revised program (each dropped fact's line left empty, so line numbers stay).
        dropped: the dropped facts as the engine prints them, in the order dropped.
        lines: their 1-based lines in the program as given.
    """

    program: str
    dropped: tuple[str, ...]
    lines: tuple[int, ...]


def revise(text: str, context: str, limits: Limits | None = None, *, max_steps: int = MAX_STEPS) -> Revision | None:
    """Drop the unstated facts an inconsistent program's contradiction rests on (module docstring).

    Args:
        text: an LP program that parses.
        context: the premises the program formalizes.
        limits: bound every run of the forward chainer together, as :func:`~symbolkg.solvers.lp.engine.solve`
            bounds one (default :class:`~symbolkg.solvers.outcomes.Limits`).
        max_steps: most rounds of dropping.

    Returns:
        The revision, or None when the program is consistent as given, when the contradiction
        rests on stated facts only (or on a line holding more than one fact, which cannot lose one
        alone), or when ``max_steps`` rounds or ``limits`` do not end it.

    Raises:
        ProgramError: ``text`` does not parse.
    """
    limits = limits or Limits()
    deadline = time.perf_counter() + limits.timeout_s
    sentences = [s for s in _SENTENCE_END.split(context) if s.strip()]
    lines = text.splitlines()
    dropped: list[lp.Atom] = []
    for _ in range(max_steps):
        program = lp.parse("\n".join(lines))
        try:
            fixpoint = forward_chain(program, deadline=deadline, max_facts=limits.memory_mb * 2000)
        except (ChainingTimeout, TooManyAtoms):
            return None
        both = contradiction(program, fixpoint)
        if both is None:
            if not dropped:
                return None
            return Revision("\n".join(lines), tuple(str(a) for a in dropped), tuple(a.line for a in dropped))
        unstated = _unstated_support(program, fixpoint, both, sentences)
        shared = Counter(f.line for f in program.facts)
        if unstated is None or any(shared[f.line] > 1 for f in unstated):
            return None
        for fact in unstated:
            lines[fact.line - 1] = ""
        dropped += unstated
    return None


def _unstated_support(
    program: lp.LPProgram, fixpoint: Fixpoint, both: tuple[lp.GroundAtom, lp.GroundAtom], sentences: list[str]
) -> list[lp.Atom] | None:
    """The unstated facts the derivations of both sides rest on; None when there are none."""
    facts = {(f.predicate, tuple(str(a) for a in f.args), f.value): f for f in program.facts}
    out: list[lp.Atom] = []
    for goal in both:
        support = [facts[a] for a in fixpoint.proof_order([goal]) if a in facts and fixpoint.derived[a].rule is None]
        out += [f for f in support if f not in out and not states(sentences, f.predicate, f.args, f.value)]
    return out or None
