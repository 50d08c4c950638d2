"""Check an elimination certificate: the support list is exactly the minimal supports.

Independent of the producer (:mod:`~symbolkg.solvers.logicgraph.elimination`, never imported
here): it reads the premises' formulas, the goal, the claimed supports and the
:class:`~symbolkg.solvers.logicgraph.supports_syntax.EliminationCertificate`, computes the CNF
itself (:func:`~symbolkg.solvers.logicgraph.propositional.clauses`), and replays the elimination
with its own clause set:

1. the input clauses are exactly the CNF of each premise (labelled with it) and of ``¬G``;
2. per step, every clause it adds is the resolvent on the step's atom of two clauses live before the
   step, labelled with the union of their labels (so each live ``(C, L)`` has ``L ⊨ C``, reading
   the goal label as ``¬G``);
3. per step, every non-tautological resolvent of two live clauses on the atom, and every clause it
   drops, is subsumed (literals and label) by a clause live after the step, which the certificate
   names: this is what makes the elimination complete (see the producer's docstring);
4. after the last step every live clause is empty, and the minimal labels, without ``¬G``, are the
   claimed supports.

Each step costs its live clauses on the atom and its pairs of them: linear in the elimination.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from symbolkg.solvers.logicgraph.propositional import Formula, Not, clauses
from symbolkg.solvers.logicgraph.supports_syntax import (
    GOAL_LABEL,
    EliminationCertificate,
    EliminationStep,
    SupportResult,
    minimal_sets,
    set_bits,
)
from symbolkg.solvers.outcomes import CertificateError

__all__ = ["EliminationCheck", "check_certificate"]


@dataclass(frozen=True)
class EliminationCheck:
    """What :func:`check_certificate` verified: ``clauses`` labelled clauses over ``steps`` eliminations,
    ``pairs`` resolution pairs, and that the supports are exactly the ``supports`` minimal labels."""

    clauses: int
    steps: int
    pairs: int
    supports: int


class _Replay:
    """The checker's own clause set: literal masks over ``2v`` / ``2v + 1``, label masks, occurrences."""

    def __init__(self, premises: Mapping[str, Formula], goal: Formula, cert: EliminationCertificate) -> None:
        self.cnf = {pid: clauses(f) for pid, f in premises.items()}
        self.cnf[GOAL_LABEL] = clauses(Not(goal))
        names = sorted({a for cls in self.cnf.values() for c in cls for a, _ in c})
        self.var = {a: i for i, a in enumerate(names)}
        self.bit = {pid: i for i, pid in enumerate(self.cnf)}
        self.mask: list[int] = []
        self.label: list[int] = []
        for k, c in enumerate(cert.clauses):
            try:
                self.mask.append(sum(1 << (2 * self.var[a] + (not s)) for a, s in c.literals))
                self.label.append(sum(1 << self.bit[p] for p in c.label))
            except KeyError as exc:
                raise CertificateError(
                    f"clause {k} names {exc.args[0]!r}, which is no atom or premise of the problem"
                ) from None
        self.even = sum(1 << (2 * v) for v in range(len(names)))
        self.live: set[int] = set()
        self.occ: list[set[int]] = [set() for _ in range(2 * len(names))]
        self.pairs = 0

    def literals(self, k: int) -> list[int]:
        return set_bits(self.mask[k])

    def enter(self, k: int) -> None:
        if k in self.live:
            raise CertificateError(f"clause {k} enters the clause set twice")
        self.live.add(k)
        for li in self.literals(k):
            self.occ[li].add(k)

    def leave(self, k: int) -> None:
        if k not in self.live:
            raise CertificateError(f"clause {k} leaves the clause set but is not in it")
        self.live.discard(k)
        for li in self.literals(k):
            self.occ[li].discard(k)

    def subsumes(self, w: int, mask: int, label: int) -> bool:
        return w in self.live and not self.mask[w] & ~mask and not self.label[w] & ~label


def _check_inputs(replay: _Replay, cert: EliminationCertificate) -> None:
    """Step 1: the input clauses are the CNF of the premises and of ``¬G``, each with its own label."""
    given: set[tuple[str, frozenset]] = set()
    for k in range(cert.initial):
        c = cert.clauses[k]
        lits = frozenset(c.literals)
        if (
            c.parents is not None
            or c.source not in replay.cnf
            or c.label != (c.source,)
            or lits not in replay.cnf[c.source]
        ):
            raise CertificateError(f"input clause {k} is not a clause of {c.source!r} labelled with it")
        given.add((c.source, lits))
        replay.enter(k)
    for pid, cls in replay.cnf.items():
        for c in cls:
            if (pid, c) not in given:
                raise CertificateError(f"a clause of {pid!r} is missing from the input clauses")


def _check_step(replay: _Replay, cert: EliminationCertificate, step: EliminationStep, index: int) -> None:
    """Steps 2 and 3 for one eliminated atom."""
    if step.atom not in replay.var:
        raise CertificateError(f"step {index} eliminates {step.atom!r}, which is no atom of the problem")
    v = replay.var[step.atom]
    pos, neg = sorted(replay.occ[2 * v]), sorted(replay.occ[2 * v + 1])
    pos_set, neg_set = set(pos), set(neg)
    for k in pos + neg:
        replay.leave(k)
    both = 3 << (2 * v)
    covered: dict[tuple[int, int], int] = {}
    for k in step.added:
        parents = cert.clauses[k].parents if 0 <= k < len(cert.clauses) else None
        if parents is None or k < cert.initial:
            raise CertificateError(f"step {index} ({step.atom}) adds clause {k}, which is no resolvent")
        p, n = parents
        if p not in pos_set or n not in neg_set:
            raise CertificateError(
                f"step {index} ({step.atom}): the parents of clause {k} are not live clauses "
                f"with {step.atom} and ¬{step.atom}"
            )
        if (
            replay.mask[k] != (replay.mask[p] | replay.mask[n]) & ~both
            or replay.label[k] != replay.label[p] | replay.label[n]
        ):
            raise CertificateError(
                f"step {index} ({step.atom}): clause {k} is not the labelled resolvent of {p} and {n}"
            )
        replay.enter(k)
        covered[(p, n)] = k
    for e, _ in step.dropped:
        replay.leave(e)
    for e, w in step.dropped:
        if not replay.subsumes(w, replay.mask[e], replay.label[e]):
            raise CertificateError(f"step {index} ({step.atom}): dropped clause {e} is not subsumed by live clause {w}")
    for p, n, w in step.witnesses:
        covered.setdefault((p, n), w)
    _check_pairs(replay, pos, neg, both, covered, f"step {index} ({step.atom})")


def _check_pairs(
    replay: _Replay, pos: list[int], neg: list[int], both: int, covered: Mapping[tuple[int, int], int], where: str
) -> None:
    """Every non-tautological resolvent of the step is subsumed by the live clause named for it."""
    mask, label, even = replay.mask, replay.label, replay.even
    for p in pos:
        for n in neg:
            replay.pairs += 1
            r = (mask[p] | mask[n]) & ~both
            if r & (r >> 1) & even:
                continue
            w = covered.get((p, n))
            if w is None or not replay.subsumes(w, r, label[p] | label[n]):
                raise CertificateError(
                    f"{where}: the resolvent of clauses {p} and {n} is not subsumed by a live clause"
                )


def check_certificate(premises: Mapping[str, Formula], goal: Formula, result: SupportResult) -> EliminationCheck:
    """Re-verify from the certificate alone that ``result.supports`` is exactly the minimal supports.

    Raises:
        CertificateError: an incomplete result, a malformed certificate, or a step whose claim does
            not hold (the message names the step and clause).
    """
    cert = result.certificate
    if not result.complete or not isinstance(cert, EliminationCertificate):
        raise CertificateError(f"no completeness certificate to check (status {result.status!r})")
    if not 0 <= cert.initial <= len(cert.clauses):
        raise CertificateError(f"the certificate claims {cert.initial} input clauses of {len(cert.clauses)}")
    replay = _Replay(premises, goal, cert)
    _check_inputs(replay, cert)
    for i, step in enumerate(cert.steps):
        _check_step(replay, cert, step, i)
    leftover = [k for k in replay.live if replay.mask[k]]
    if leftover:
        raise CertificateError(f"after the last step clause {min(leftover)} still has literals")
    goal_bit = 1 << replay.bit[GOAL_LABEL]
    ids = list(replay.bit)
    found = {frozenset(ids[i] for i in set_bits(replay.label[k] & ~goal_bit)) for k in replay.live}
    minimal = minimal_sets(found)
    claimed = set(result.supports)
    if claimed != minimal or len(claimed) != len(result.supports):
        missing = sorted(sorted(s) for s in minimal - claimed)
        extra = sorted(sorted(s) for s in claimed - minimal)
        raise CertificateError(
            f"the supports are not the elimination's minimal labels (missing {missing}, extra {extra})"
        )
    return EliminationCheck(len(cert.clauses), len(cert.steps), replay.pairs, len(minimal))
