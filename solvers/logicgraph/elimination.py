"""Minimal supports by labelled Davis-Putnam elimination: complete by construction, certified.

A *support* of a goal ``G`` in premises ``P`` is a set ``S ⊆ P`` with ``S ⊨ G``; a *minimal*
support has no proper subset that is one. LogicGraph's task is to find all of them.

The method: put every clause of every premise's CNF in a set, labelled with its premise, and the
clauses of ``¬G`` labelled :data:`~symbolkg.solvers.logicgraph.supports_syntax.GOAL_LABEL`. Then
eliminate the atoms one at a time (Davis and Putnam, 1960): the clauses holding atom ``x`` are
replaced by all their non-tautological resolvents on ``x``, each labelled with the union of its
parents' labels. A labelled clause ``(C, L)`` is dropped when another live one ``(C', L')`` has
``C' ⊆ C`` and ``L' ⊆ L`` (it says no more, from no fewer premises). When every atom is gone, the
live clauses are empty clauses, and their labels are exactly the minimal unsatisfiable subsets of
``P ∪ {¬G}``; without the goal label they are the minimal supports (and a label without it is a
minimal inconsistent subset of ``P``, a support by ex falso).

Why it is complete: for any ``S``, plain Davis-Putnam on ``S ∪ {¬G}`` (same order, no labels)
derives the empty clause iff ``S ⊨ G``. By induction over the steps, every clause that plain run
keeps is subsumed by a live labelled clause whose label lies inside ``S``: a kept clause by its
subsumer (or that subsumer's resolvent, when it holds ``x``), a resolvent by the resolvent of the
two subsumers of its parents, which is smaller and not a tautology. So ``S ⊨ G`` exactly when a
final empty clause has its label inside ``S``; no countermodel is searched for, none is needed.

The certificate (:class:`~symbolkg.solvers.logicgraph.supports_syntax.EliminationCertificate`)
is the elimination itself: the clauses kept, each resolvent's parents, and the witness of every
subsumed clause and resolvent. :mod:`~symbolkg.solvers.logicgraph.elimination_check` replays it in
time linear in its size, from the formulas and the certificate only.

>>> from symbolkg.solvers.logicgraph.propositional import parse
>>> premises = {"r1": parse("A -> G"), "f1": parse("A"), "r2": parse("B -> G"), "f2": parse("B"), "x": parse("C")}
>>> result = minimal_supports(premises, parse("G"))
>>> [sorted(s) for s in result.supports], result.status
([['f1', 'r1'], ['f2', 'r2']], 'complete')
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterator, Mapping, Sequence

from symbolkg.solvers.logicgraph.propositional import Formula, Not, clauses, entails, require_formulas
from symbolkg.solvers.logicgraph.support_check import recheck_supports
from symbolkg.solvers.logicgraph.supports_syntax import (
    GOAL_LABEL,
    EliminationCertificate,
    EliminationStep,
    LabelledClause,
    SupportResult,
    minimal_sets,
    set_bits,
    sort_key,
)
from symbolkg.solvers.outcomes import Deadline

__all__ = ["minimal_supports"]

#: resolution pairs between two looks at the clock
_CLOCK_EVERY = 512


class _Elimination:
    """The labelled clause set and its indexes; one instance per enumeration.

    A literal is an index ``2v`` (atom ``v`` true) or ``2v + 1`` (false); a clause is a bitmask of
    literal indices plus the tuple of them; a label is a bitmask of premise indices (the goal's bit
    last). ``occ[l]`` holds the live clauses with literal ``l``; ``first[l]`` those whose smallest
    literal is ``l`` (each clause once, for the subsumer search); ``empties`` the live empty clauses.
    """

    def __init__(self, names: Sequence[str], deadline: Deadline | None) -> None:
        self.names = names
        self.deadline = deadline
        n = len(names)
        self.even = sum(1 << (2 * v) for v in range(n))  # the positive-literal bits
        self.lit: list[int] = []
        self.lits: list[tuple[int, ...]] = []
        self.lab: list[int] = []
        self.parents: list[tuple[int, int] | None] = []
        self.source: list[int] = []
        self.alive: set[int] = set()
        self.occ: list[set[int]] = [set() for _ in range(2 * n)]
        self.first: list[set[int]] = [set() for _ in range(2 * n)]
        self.empties: set[int] = set()
        # the live empty clauses by the lowest bit of their label (to find those inside a label)
        # and by every bit of it (to find those holding a label)
        self.empties_low: dict[int, set[int]] = {}
        self.empties_bit: dict[int, set[int]] = {}
        self.forward: dict[int, int] = {}  # dropped clause -> the clause that subsumed it
        self.dirty: set[int] = set()  # atoms whose occurrence counts changed
        self.pairs = 0

    # -------------------------------------------------------------- the clause set

    def add(
        self, mask: int, lits: tuple[int, ...], label: int, parents: tuple[int, int] | None, source: int = -1
    ) -> int:
        k = len(self.lit)
        self.lit.append(mask)
        self.lits.append(lits)
        self.lab.append(label)
        self.parents.append(parents)
        self.source.append(source)
        self.alive.add(k)
        if lits:
            for li in lits:
                self.occ[li].add(k)
                self.dirty.add(li >> 1)
            self.first[lits[0]].add(k)
        else:
            self.empties.add(k)
            self.empties_low.setdefault((label & -label).bit_length(), set()).add(k)
            for b in set_bits(label):
                self.empties_bit.setdefault(b, set()).add(k)
        return k

    def kill(self, k: int) -> None:
        self.alive.discard(k)
        lits = self.lits[k]
        if lits:
            for li in lits:
                self.occ[li].discard(k)
                self.dirty.add(li >> 1)
            self.first[lits[0]].discard(k)
        else:
            label = self.lab[k]
            self.empties.discard(k)
            self.empties_low[(label & -label).bit_length()].discard(k)
            for b in set_bits(label):
                self.empties_bit[b].discard(k)

    def subsumer(self, mask: int, lits: tuple[int, ...], label: int) -> int:
        """A live clause whose literals and label are subsets of these, or -1."""
        lab, lit = self.lab, self.lit
        if self.empties:
            for b in [0, *(1 + x for x in set_bits(label))]:  # key 0: the empty label (a valid goal)
                for e in self.empties_low.get(b, ()):
                    if not lab[e] & ~label:
                        return e
        for li in lits:
            for d in self.first[li]:
                if not lit[d] & ~mask and not lab[d] & ~label:
                    return d
        return -1

    def drop_subsumed(self, k: int) -> list[int]:
        """Kill the live clauses clause ``k`` subsumes; returns them."""
        mask, lits, label = self.lit[k], self.lits[k], self.lab[k]
        lab, lit = self.lab, self.lit
        if lits:
            candidates = min((self.occ[li] for li in lits), key=len)
        elif label:
            # an empty clause: only empty clauses are dropped here (a non-empty clause with a
            # larger label stays live; its resolvents are subsumed by this one as they appear)
            candidates = set(self.empties_bit.get(set_bits(label)[0], ()))
        else:
            candidates = set(self.alive)
        gone = [e for e in candidates if e != k and not label & ~lab[e] and not mask & ~lit[e]]
        for e in gone:
            self.kill(e)
            self.forward[e] = k
        return gone

    def live_witness(self, k: int) -> int:
        while k not in self.alive:
            k = self.forward[k]
        return k

    # -------------------------------------------------------------- elimination

    def order(self, first: Sequence[int] = ()) -> Iterator[int]:
        """Atoms in the order they are eliminated: ``first`` (the goal's atoms when ``¬G`` is unit
        clauses: resolving them away is unit propagation, and it keeps each route to ``G`` from
        piling up as a unit clause ``G`` that every later resolvent is compared with), then least
        (positive x negative) occurrences first, re-scored as the clause set changes (a lazy heap;
        ties by index)."""
        heap: list[tuple[int, int]] = []
        done: set[int] = set()
        for v in first:
            done.add(v)
            yield v
        while True:
            for v in self.dirty:
                if v not in done:
                    heapq.heappush(heap, (self.score(v), v))
            self.dirty.clear()
            while heap:
                s, v = heapq.heappop(heap)
                if v not in done and s == self.score(v):
                    break
            else:
                return
            done.add(v)
            yield v

    def score(self, v: int) -> int:
        p, n = len(self.occ[2 * v]), len(self.occ[2 * v + 1])
        return p * n - p - n

    def eliminate(self, v: int) -> EliminationStep:
        """Replace the clauses holding atom ``v`` by their resolvents on it; the step's record."""
        if self.deadline is not None and self.deadline.expired():
            raise TimeoutError("the elimination's budget ran out")
        pos, neg = list(self.occ[2 * v]), list(self.occ[2 * v + 1])
        for k in pos + neg:
            self.kill(k)
        both = 3 << (2 * v)
        before = len(self.lit)
        dropped: list[int] = []
        witnesses: list[tuple[int, int, int]] = []
        lit, lab, even = self.lit, self.lab, self.even
        for p in pos:
            for n in neg:
                self.pairs += 1
                if self.deadline is not None:
                    self.deadline.tick()  # TimeoutError once the budget is spent
                mask = (lit[p] | lit[n]) & ~both
                if mask & (mask >> 1) & even:
                    continue  # a tautology
                label = lab[p] | lab[n]
                lits = tuple(li for li in sorted(set(self.lits[p] + self.lits[n])) if li >> 1 != v)
                w = self.subsumer(mask, lits, label)
                if w >= 0:
                    witnesses.append((p, n, w))
                    continue
                k = self.add(mask, lits, label, (p, n))
                dropped.extend(e for e in self.drop_subsumed(k) if e < before)
        added = tuple(k for k in range(before, len(self.lit)) if k in self.alive)
        # a resolvent kept and then subsumed within this step is covered by its subsumer
        witnesses += [(*self.parents[k], k) for k in range(before, len(self.lit)) if k not in self.alive]  # type: ignore[misc]
        return EliminationStep(
            self.names[v],
            added,
            tuple((e, self.live_witness(e)) for e in dropped),
            tuple((p, n, self.live_witness(w)) for p, n, w in witnesses),
        )


def _encode(premises: Mapping[str, Formula], goal: Formula) -> tuple[list[str], list[tuple[str, list[frozenset]]]]:
    """Atom names (sorted) and each label's clauses: the premises in order, then ``¬G``."""
    groups = [(pid, sorted(clauses(f), key=sorted)) for pid, f in premises.items()]
    groups.append((GOAL_LABEL, sorted(clauses(Not(goal)), key=sorted)))
    names = sorted({a for _, cls in groups for c in cls for a, _ in c})
    return names, groups


def _run(
    premises: Mapping[str, Formula], goal: Formula, deadline: Deadline | None
) -> tuple[_Elimination, list[EliminationStep], list[str], bool]:
    names, groups = _encode(premises, goal)
    var = {a: i for i, a in enumerate(names)}
    elim = _Elimination(names, deadline)
    for bit, (_, cls) in enumerate(groups):
        for c in cls:
            lits = tuple(sorted(2 * var[a] + (not s) for a, s in c))
            mask = sum(1 << li for li in lits)
            elim.add(mask, lits, 1 << bit, None, bit)
    ids = [pid for pid, _ in groups]
    negated_goal = groups[-1][1]
    first = sorted({var[a] for c in negated_goal for a, _ in c}) if all(len(c) == 1 for c in negated_goal) else []
    steps: list[EliminationStep] = []
    try:
        for v in elim.order(first):
            steps.append(elim.eliminate(v))
    except TimeoutError:  # the budget ran out
        return elim, steps, ids, False
    return elim, steps, ids, True


def _label_ids(label: int, ids: Sequence[str]) -> tuple[str, ...]:
    return tuple(sorted(ids[i] for i in set_bits(label)))


def _certificate(
    elim: _Elimination, steps: list[EliminationStep], ids: Sequence[str], initial: int
) -> EliminationCertificate:
    names = elim.names
    table = []
    for k in range(len(elim.lit)):
        literals = tuple((names[li >> 1], not li & 1) for li in elim.lits[k])
        source = ids[elim.source[k]] if elim.source[k] >= 0 else None
        table.append(LabelledClause(literals, _label_ids(elim.lab[k], ids), elim.parents[k], source))
    return EliminationCertificate(tuple(table), initial, tuple(steps))


def _shrink(premises: Mapping[str, Formula], goal: Formula, support: frozenset[str]) -> frozenset[str]:
    """A minimal support inside an entailing set (deletion; used only after a budget stop)."""
    current = set(support)
    for pid in sorted(support):
        rest = [premises[q] for q in current if q != pid]
        if entails(rest, goal):
            current.discard(pid)
    return frozenset(current)


def minimal_supports(
    premises: Mapping[str, Formula],
    goal: Formula,
    *,
    budget_s: float | None = None,
    recheck: bool = True,
) -> SupportResult:
    """Every minimal set of premises that entails ``goal``, with a completeness certificate.

    Args:
        premises: premise id -> formula (any connectives; CNF by distribution, so keep them short).
        goal: the formula to entail.
        budget_s: wall-clock budget; when it runs out the result has status ``stopped_at_budget``,
            no certificate, and the supports found so far, each shrunk to a minimal support.
            None: no limit.
        recheck: verify every returned set with Z3
            (:func:`~symbolkg.solvers.logicgraph.support_check.recheck_supports`); raises on a failure.

    Returns:
        The supports, sorted by (size, ids). With inconsistent premises the minimal inconsistent
        subsets are supports too (they entail anything) and ``premises_consistent`` is False; if the
        goal is valid, the one minimal support is the empty set. ``solver_calls`` counts the
        resolution pairs.

    Raises:
        TypeError: a premise or goal that is not a :class:`Formula` (names the premise).
        RecheckError: ``recheck`` found a set that is not a minimal support.
    """
    start = time.perf_counter()
    require_formulas(premises, goal)
    elim, steps, ids, complete = _run(
        premises, goal, None if budget_s is None else Deadline(budget_s, every=_CLOCK_EVERY)
    )
    goal_bit = 1 << (len(ids) - 1)
    labels = [elim.lab[k] for k in elim.empties]
    found = {frozenset(_label_ids(lab & ~goal_bit, ids)) for lab in labels}
    if not complete:
        found = {_shrink(premises, goal, s) for s in found}
    supports = tuple(sorted(minimal_sets(found), key=sort_key))
    initial = sum(1 for p in elim.parents if p is None)
    certificate = _certificate(elim, steps, ids, initial) if complete else None
    if recheck:
        recheck_supports(premises, goal, supports)
    return SupportResult(
        supports=supports,
        complete=complete,
        status="complete" if complete else "stopped_at_budget",
        method="labelled-elimination",
        certificate=certificate,
        rechecked=recheck,
        elapsed_ms=(time.perf_counter() - start) * 1000,
        premises_consistent=(not any(not lab & goal_bit for lab in labels)) if complete else None,
        solver_calls=elim.pairs,
    )
