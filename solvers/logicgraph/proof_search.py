"""LogicGraph proof search: the proofs a support admits, built from the seven rule shapes, and their families.

:func:`prove` finds the shortest proof of a goal from a support (a hyperpath search over the
instances of the seven rule shapes the support's formulas allow), :func:`shortest_proofs` all the
shortest ones, and :func:`families` groups proofs that share their steps up to a
:func:`branch_point`. The checks of a model's proofs (rule shapes, step and path labels) are
:mod:`symbolkg.solvers.logicgraph.proofs`; the search builds only steps that those checks accept.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from symbolkg.solvers.logicgraph.instances import DERIVED, Instance, Premise, Proof, Step, StepPremise
from symbolkg.solvers.logicgraph.proofs import negate
from symbolkg.solvers.logicgraph.propositional import (
    Formula,
    Implies,
    Not,
    Or,
    strip_double_negation,
    to_prover9,
)


@dataclass(frozen=True)
class _Derivation:
    rule: str
    premises: tuple[Formula, ...]  # normalised, in the dataset's citation order for the rule


def _premise_formulas(source: Instance | Mapping[str, Any]) -> dict[str, Formula]:
    premises = source.premises if isinstance(source, Instance) else source
    return {pid: (p.formula if isinstance(p, Premise) else p) for pid, p in premises.items()}


def prove(
    source: Instance | Mapping[str, Formula] | Mapping[str, Premise],
    support: Iterable[str],
    goal: Formula | None = None,
    *,
    max_formulas: int = 20000,
) -> Proof | None:
    """A shortest stepwise proof of ``goal`` from exactly the premises ``support``, seven rules only.

    The search is Knuth's generalisation of Dijkstra (shortest hyperpaths): a derivable formula
    costs one step plus the costs of its derived premises, premises cost nothing, and formulas
    are settled cheapest first, so the first time the goal is settled its proof tree is
    minimal. The proof printed is that tree with repeated sub-derivations written once; the
    number of steps is therefore minimal among proofs whose sub-derivations are not shared,
    and at most that for the rest (a proof that must reuse one lemma in two branches can in
    principle be one step shorter than what this finds; none of the 2,706 reference proofs
    is shorter than what it finds, see docs/LOGICGRAPH.md).

    The formula space is bounded so the search ends: besides what MP/MT/DS/DE/RAA produce
    (subformulas of premises and their negations), HS and CD build new implications and
    disjunctions only between antecedents/consequents/disjuncts that already occur.

    Args:
        source: an :class:`~symbolkg.solvers.logicgraph.instances.Instance` or a mapping id -> formula
            (or -> :class:`~symbolkg.solvers.logicgraph.instances.Premise`).
        support: the premise ids the proof may cite.
        goal: the formula to prove; default the instance's goal.
        max_formulas: give up (return None) after settling this many formulas.

    Returns:
        A :class:`~symbolkg.solvers.logicgraph.instances.Proof` in the dataset's format (``id`` 0, no
        family), or None when the seven rules cannot derive the goal from ``support``.

    Raises:
        KeyError: an id of ``support`` is not a premise of ``source``.
        ValueError: ``goal`` is None and ``source`` is not an Instance.
    """
    premises = _premise_formulas(source)
    if goal is None:
        if not isinstance(source, Instance):
            raise ValueError("prove: pass goal= when the premises are not an Instance")
        goal = source.goal
    support_ids = sorted(support)
    given: dict[Formula, str] = {}
    for pid in support_ids:
        given.setdefault(strip_double_negation(premises[pid]), pid)
    target = strip_double_negation(goal)
    if target in given:  # nothing to derive: a one-premise "proof" has no steps
        return Proof(0, ())

    return _shortest_hyperpath(given, target, max_formulas)


def _shortest_hyperpath(given: Mapping[Formula, str], target: Formula, max_formulas: int) -> Proof | None:
    """The search of :func:`prove`: formulas settled cheapest first from the ``given`` ones."""
    best: dict[Formula, int] = {}
    how: dict[Formula, _Derivation] = {}
    settled: dict[Formula, int] = {}
    by_ante: dict[Formula, list[Implies]] = {}
    by_cons: dict[Formula, list[Implies]] = {}
    by_disjunct: dict[Formula, list[Or]] = {}
    heap: list[tuple[int, int, Formula]] = []
    counter = itertools.count()
    for f in given:
        best[f] = 0
        heapq.heappush(heap, (0, next(counter), f))

    def offer(rule: str, ps: tuple[Formula, ...], conclusion: Formula) -> None:
        if conclusion in settled:
            return
        cost = 1 + sum(settled[p] for p in set(ps))
        if cost < best.get(conclusion, 1 << 30):
            best[conclusion] = cost
            how[conclusion] = _Derivation(rule, ps)
            heapq.heappush(heap, (cost, next(counter), conclusion))

    while heap:
        cost, _, f = heapq.heappop(heap)
        if f in settled or cost != best[f]:
            continue
        settled[f] = cost
        if f == target:
            return _build_proof(target, given, how)
        if len(settled) > max_formulas:
            return None
        # index f, then try every rule instance in which f is one of the premises and the
        # others are already settled (each instance is thus tried once, by its last premise)
        if isinstance(f, Implies):
            by_ante.setdefault(f.left, []).append(f)
            by_cons.setdefault(f.right, []).append(f)
        if isinstance(f, Or):
            by_disjunct.setdefault(f.left, []).append(f)
            if f.right != f.left:
                by_disjunct.setdefault(f.right, []).append(f)
        _expand(f, settled, by_ante, by_cons, by_disjunct, offer)
    return None


def _expand(
    f: Formula,
    settled: Mapping[Formula, int],
    by_ante: Mapping[Formula, list[Implies]],
    by_cons: Mapping[Formula, list[Implies]],
    by_disjunct: Mapping[Formula, list[Or]],
    offer: Any,
) -> None:
    """Offer every conclusion of a rule instance that uses the newly settled ``f``."""
    nf = negate(f)
    # f as the minor premise: MP (P), MT (¬Q), DS (¬P)
    for i in list(by_ante.get(f, ())):
        offer("MP", (i, f), i.right)
    for i in list(by_cons.get(nf, ())):
        offer("MT", (i, f), negate(i.left))
    for d in list(by_disjunct.get(nf, ())):
        other = d.right if d.left == nf else d.left
        offer("DS", (d, f), other)
    if isinstance(f, Implies):
        p, q = f.left, f.right
        if p in settled:
            offer("MP", (f, p), q)
        if negate(q) in settled:
            offer("MT", (f, negate(q)), negate(p))
        for g in list(by_ante.get(q, ())):  # f then g
            offer("HS", (f, g), Implies(p, g.right))
        for g in list(by_cons.get(p, ())):  # g then f
            offer("HS", (g, f), Implies(g.left, q))
        for g in list(by_ante.get(p, ())):
            if g.right == negate(q):  # cite X→Y before X→¬Y, as the dataset does
                offer("RAA", (g, f) if isinstance(q, Not) else (f, g), negate(p))
        for d in list(by_disjunct.get(p, ())):
            other = d.right if d.left == p else d.left
            for g in list(by_ante.get(other, ())):
                left, right = (f, g) if d.left == p else (g, f)
                if g.right == q:
                    offer("DE", (d, left, right), q)
                offer("CD", (left, right, d), Or(left.right, right.right))
    if isinstance(f, Or):
        a, b = f.left, f.right
        if negate(a) in settled:
            offer("DS", (f, negate(a)), b)
        if negate(b) in settled:
            offer("DS", (f, negate(b)), a)
        for g in list(by_ante.get(a, ())):
            for h in list(by_ante.get(b, ())):
                if g.right == h.right:
                    offer("DE", (f, g, h), g.right)
                offer("CD", (g, h, f), Or(g.right, h.right))


def _build_proof(target: Formula, given: Mapping[Formula, str], how: Mapping[Formula, _Derivation]) -> Proof:
    """The derivation tree of ``target`` as numbered steps, each lemma derived once, premises first."""
    order: list[Formula] = []
    placed: set[Formula] = set()

    def visit(f: Formula) -> None:
        if f in given or f in placed:
            return
        for p in how[f].premises:
            visit(p)
        placed.add(f)
        order.append(f)

    visit(target)
    steps = []
    for number, f in enumerate(order, 1):
        d = how[f]
        cited = tuple(StepPremise(given[p], p) if p in given else StepPremise(DERIVED, p) for p in d.premises)
        steps.append(Step(number, d.rule, cited, f))
    return Proof(0, tuple(steps))


def shortest_proofs(
    instance: Instance, supports: Iterable[frozenset[str]] | None = None
) -> dict[frozenset[str], Proof | None]:
    """:func:`prove` for each support (default: the instance's reference supports)."""
    wanted = instance.reference_supports() if supports is None else list(supports)
    return {s: prove(instance, s) for s in wanted}


# ------------------------------------------------------------------ families


@dataclass(frozen=True)
class Family:
    """One family of proofs: a core proof and the branches that rejoin it.

    Attributes:
        id: 1-based, numbered in the order the cores appear.
        core: the core proof (``path_type`` "core", ``branch_from`` None).
        branches: the branch proofs, each with ``family_id``, ``path_type`` "branch" and
            ``branch_from`` (0-based index of the core step whose conclusion it re-derives).
    """

    id: int
    core: Proof
    branches: tuple[Proof, ...] = ()

    @property
    def proofs(self) -> tuple[Proof, ...]:
        return (self.core, *self.branches)


def _step_key(step: Step) -> tuple[Any, ...]:
    """A step's identity for families: rule, cited (id, formula) as a multiset, conclusion."""
    cited = tuple(sorted((p.id, to_prover9(strip_double_negation(p.formula))) for p in step.premises))
    return (step.rule, cited, to_prover9(strip_double_negation(step.conclusion)))


def branch_point(core: Proof, proof: Proof) -> int | None:
    """``branch_from`` if ``proof`` is a branch of ``core``, else None.

    A branch re-derives the conclusion of some core step ``k`` differently (another rule or
    other premises) and then finishes with exactly core steps ``k+1 .. end``, at least one
    of them (``k`` is never the core's last step: proofs that differ in their last step share
    no inference node); ``k`` is found from the longest common tail of the two proofs.
    """
    a, b = [_step_key(s) for s in core.steps], [_step_key(s) for s in proof.steps]
    tail = 0
    while tail < len(a) and tail < len(b) and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    k = len(a) - tail - 1
    # tail 0: the last steps differ, so the proofs share no inference node (two cores);
    # k < 0 or nothing left of the proof: identical to the core, or the core is a tail of it
    if tail == 0 or k < 0 or tail >= len(b):
        return None
    if a[k][2] != b[len(b) - tail - 1][2]:  # the differing step must reach the same conclusion
        return None
    return k


def families(proofs: Sequence[Proof]) -> list[Family]:
    """Group proofs into families as the dataset does.

    Proofs are taken in order; a proof that is a branch (:func:`branch_point`) of an earlier
    core joins the first such core's family, any other proof starts a new family as its core.
    On the reference proofs (in file order) this reproduces the dataset's families exactly;
    see docs/LOGICGRAPH.md for the measured agreement.

    Args:
        proofs: proofs in the order they were found (for the reference: file order).

    Returns:
        Families in the order of their cores; every input proof appears in exactly one,
        re-labelled with ``family_id`` / ``path_type`` / ``branch_from``.
    """
    cores: list[Proof] = []
    members: list[list[Proof]] = []
    for proof in proofs:
        for n, core in enumerate(cores):
            k = branch_point(core, proof)
            if k is not None:
                members[n].append(replace(proof, family_id=n + 1, path_type="branch", branch_from=k))
                break
        else:
            cores.append(replace(proof, family_id=len(cores) + 1, path_type="core", branch_from=None))
            members.append([])
    return [Family(n + 1, core, tuple(members[n])) for n, core in enumerate(cores)]
