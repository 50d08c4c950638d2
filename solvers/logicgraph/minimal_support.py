"""Minimal supports: every minimal premise set that entails a goal, with a checkable proof of completeness.

A *support* of a goal ``G`` in premises ``P`` is a set ``S ⊆ P`` with ``S ⊨ G``; a *minimal* support
has no proper subset that is a support. Equivalently, ``S ∪ {¬G}`` is a minimal unsatisfiable subset
(MUS) of ``P ∪ {¬G}`` with ``¬G`` held fixed. LogicGraph's task is to find all of them.

:func:`minimal_supports` (propositional) is exact and complete, and every complete result carries a
:class:`SupportCertificate` that :func:`check_certificate` re-verifies with nothing but
:func:`~symbolkg.solvers.logicgraph.propositional.clauses` and :func:`~symbolkg.solvers.logicgraph.propositional.evaluate`:

1. **Reduction** (each step a checkable claim, each keeps the set of minimal supports unchanged):
   premises outside the goal's atom-connected component are dropped when ``P`` is consistent (the
   certificate holds a model of ``P``); tautologies are dropped; a premise every clause of which holds
   a literal that is *pure* in the remaining premises and ``¬G`` is dropped (such a premise is in no
   MUS, so in no minimal support).
2. **Blocks**: when atom ``x`` occurs positively only in block ``A`` and negatively only in block
   ``B`` (and not in ``¬G``), every minimal support contains both ``A`` and ``B`` or neither: with
   ``A`` but not ``B``, ``x`` is pure and ``A``'s ``x``-premises could be dropped. Chains of
   implications collapse into one block; minimal supports are unions of blocks.
3. **Dualization** (Gunopulos et al.'s "dualize and advance", at block level): with found supports
   ``H``, take each minimal block transversal ``T`` of ``H`` (a set of blocks meeting every member of
   ``H``). If ``P∖⋃T ⊭ G``, a SAT model is a *countermodel* for ``T``; otherwise ``P∖⋃T`` entails
   ``G`` and holds no found support, so shrinking it yields a new minimal support. It stops when every
   minimal transversal of ``H`` has a countermodel.

Why the stop proves completeness: let ``S`` be a minimal support holding no member of ``H``. ``S`` is
a union of blocks (step 2), so the blocks outside ``S`` meet every member of ``H``: they contain a
minimal transversal ``T``, and ``S ⊆ P∖⋃T``. The countermodel of ``T`` satisfies ``P∖⋃T ⊇ S`` and
``¬G``, contradicting ``S ⊨ G``. So every minimal support contains, hence equals, a found one.

The certificate is small because blocks collapse chains: minimal transversals over premises number in
the thousands on LogicGraph (a 10-step chain offers 10 ways to break it), over blocks a few dozen.

:func:`recheck_supports` verifies each returned set with Z3 (``S ⊨ G`` and ``S∖{p} ⊭ G`` for each ``p``), a
different solver from the one that found it. :func:`minimal_supports_fol` is the first-order variant
(SMT-LIB premises, MARCO with Z3 under a time budget).

>>> from symbolkg.solvers.logicgraph.propositional import parse
>>> premises = {"r1": parse("A -> G"), "f1": parse("A"), "r2": parse("B -> G"), "f2": parse("B"), "x": parse("C")}
>>> result = minimal_supports(premises, parse("G"))
>>> [sorted(s) for s in result.supports], result.status
([['f1', 'r1'], ['f2', 'r2']], 'complete')
>>> check_certificate(premises, parse("G"), result).transversals
1
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from symbolkg.solvers.logicgraph.propositional import (
    And,
    Atom,
    Clause,
    Formula,
    Iff,
    Implies,
    Not,
    Or,
    atoms,
    clauses,
    evaluate,
    to_prover9,
    to_z3,
)

_FORMULA_TYPES = (Atom, Not, And, Or, Implies, Iff)

#: clause owners for model rotation: a clause of ``¬G``, of a dropped premise
_HARD = -1
_NOT_KEPT = -2
#: single flips tried per rotation (bounds the work when countermodels are plentiful)
_ROTATION_FLIPS = 64

__all__ = [
    "CertificateCheck",
    "CertificateError",
    "Countermodel",
    "FolCertificate",
    "MergeStep",
    "PureStep",
    "RecheckError",
    "SupportCertificate",
    "SupportResult",
    "check_certificate",
    "minimal_supports",
    "minimal_supports_fol",
    "recheck_supports",
]

#: ``complete``: the list is provably all minimal supports. ``stopped_at_budget``: the time budget
#: ran out; the sets found so far are minimal supports, others may exist. ``stopped_unknown``
#: (first-order only): Z3 answered ``unknown`` on a check the enumeration could not do without.
Status = Literal["complete", "stopped_at_budget", "stopped_unknown"]


class RecheckError(RuntimeError):
    """An independent recheck found a returned set that is not a minimal support (names the set)."""


class CertificateError(RuntimeError):
    """A completeness certificate that does not prove what it claims (says which step failed)."""


# ------------------------------------------------------------------ records


@dataclass(frozen=True)
class PureStep:
    """Premises dropped because each of their clauses holds the literal ``(atom, polarity)``, which is
    pure (its complement occurs in no remaining premise and not in ``¬G``) at this point of the reduction.
    """

    atom: str
    polarity: bool
    premises: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"atom": self.atom, "polarity": self.polarity, "premises": list(self.premises)}


@dataclass(frozen=True)
class MergeStep:
    """Blocks ``positive`` and ``negative`` merged: ``atom`` occurs positively only in ``positive``'s
    premises, negatively only in ``negative``'s, never in ``¬G``; each side has a premise all of whose
    clauses hold the atom with that sign.
    """

    atom: str
    positive: tuple[str, ...]
    negative: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"atom": self.atom, "positive": list(self.positive), "negative": list(self.negative)}


@dataclass(frozen=True)
class Countermodel:
    """An assignment satisfying ``¬G`` and every kept premise outside the blocks ``blocks``.

    Attributes:
        blocks: indices into :attr:`SupportCertificate.blocks`: the minimal transversal it refutes.
        assignment: a value for every atom of the kept premises and of the goal.
    """

    blocks: tuple[int, ...]
    assignment: Mapping[str, bool]

    def to_json(self) -> dict[str, Any]:
        return {"blocks": list(self.blocks), "assignment": {k: self.assignment[k] for k in sorted(self.assignment)}}


@dataclass(frozen=True)
class SupportCertificate:
    """Proof that a propositional support list is complete (see the module docstring).

    Attributes:
        consistency_model: a model of all premises (so ``P`` is consistent), or None when ``P`` is
            inconsistent; only with a model may unrelated premises be dropped.
        unrelated: premises outside the goal's atom-connected component.
        tautologies: premises with no clause.
        pure: the pure-literal drops, in order.
        merges: the block merges, in order (blocks start as single kept premises).
        blocks: the final blocks (sorted premise ids each), the kept premises partitioned.
        countermodels: one per minimal block transversal of the supports (when complete).
    """

    consistency_model: Mapping[str, bool] | None
    unrelated: tuple[str, ...]
    tautologies: tuple[str, ...]
    pure: tuple[PureStep, ...]
    merges: tuple[MergeStep, ...]
    blocks: tuple[tuple[str, ...], ...]
    countermodels: tuple[Countermodel, ...]
    kind: str = "block-transversal-duality"

    def to_json(self) -> dict[str, Any]:
        model = self.consistency_model
        return {
            "kind": self.kind,
            "consistency_model": None if model is None else {k: model[k] for k in sorted(model)},
            "unrelated": list(self.unrelated),
            "tautologies": list(self.tautologies),
            "pure": [p.to_json() for p in self.pure],
            "merges": [m.to_json() for m in self.merges],
            "blocks": [list(b) for b in self.blocks],
            "countermodels": [c.to_json() for c in self.countermodels],
        }


@dataclass(frozen=True)
class FolCertificate:
    """What the first-order enumeration saw: the maximal non-entailing sets it found (each checked
    satisfiable with ``¬G`` by Z3) and its call counts. When complete, the minimal hitting sets of
    their complements are exactly the supports (MARCO's duality); the per-set claims rest on Z3.
    """

    non_entailing: tuple[tuple[str, ...], ...]
    solver_calls: int
    unknown_calls: int
    kind: str = "marco-z3"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "non_entailing": [list(s) for s in self.non_entailing],
                "solver_calls": self.solver_calls, "unknown_calls": self.unknown_calls}


@dataclass(frozen=True)
class SupportResult:
    """The minimal supports of a goal and how far they are proven.

    Attributes:
        supports: the minimal supports found, sorted by (size, sorted ids).
        complete: True when ``supports`` is provably every minimal support.
        status: see :data:`Status`.
        method: the algorithm, e.g. ``"blocks+dualize"`` or ``"marco-z3"``.
        certificate: the completeness evidence (see its class).
        rechecked: True when every set passed the independent Z3 recheck (a failure raises instead).
        elapsed_ms: wall time of the enumeration (and of the recheck when it ran).
        premises_consistent: False when the premises are inconsistent: then every minimal
            inconsistent subset is a support too (ex falso), and the list includes them; None when not
            determined (first-order).
        solver_calls: satisfiability checks the enumeration made.
    """

    supports: tuple[frozenset[str], ...]
    complete: bool
    status: Status
    method: str
    certificate: SupportCertificate | FolCertificate | None
    rechecked: bool
    elapsed_ms: float
    premises_consistent: bool | None = None
    solver_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "supports": [sorted(s) for s in self.supports],
            "complete": self.complete,
            "status": self.status,
            "method": self.method,
            "certificate": None if self.certificate is None else self.certificate.to_json(),
            "rechecked": self.rechecked,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "premises_consistent": self.premises_consistent,
            "solver_calls": self.solver_calls,
        }


@dataclass(frozen=True)
class CertificateCheck:
    """What :func:`check_certificate` verified: ``transversals`` minimal block transversals, each
    with a countermodel, over ``blocks`` blocks of ``kept`` premises."""

    transversals: int
    blocks: int
    kept: int


def _sort_key(s: frozenset[str]) -> tuple[int, list[str]]:
    return (len(s), sorted(s))


# ------------------------------------------------------------------ a small SAT engine with cores


class _Sat:
    """DPLL with unit propagation over integer literals, returning a model or an unsatisfiable core.

    Own engine rather than :func:`propositional.satisfiable` because the enumeration needs cores
    (the premises a refutation used) and makes dozens of calls per instance; clauses are few and
    short, so occurrence lists and no learning are enough. Literal ``l`` indexes the value list
    directly (``values[-v]`` is Python's from-the-end index, distinct from ``values[v]``).
    """

    def __init__(self, premise_clauses: Sequence[Sequence[tuple[int, ...]]], hard: Sequence[tuple[int, ...]], n_vars: int) -> None:
        self.n_vars = n_vars
        self.clauses: list[tuple[int, ...]] = []
        self.owner: list[int] = []  # premise index, -1 for a hard clause
        self.by_premise: list[list[int]] = []
        for i, cls in enumerate(premise_clauses):
            mine = []
            for c in cls:
                mine.append(len(self.clauses))
                self.clauses.append(c)
                self.owner.append(i)
            self.by_premise.append(mine)
        self.hard: list[int] = []
        for c in hard:
            self.hard.append(len(self.clauses))
            self.clauses.append(c)
            self.owner.append(-1)
        # watch[l]: clauses holding -l, i.e. those that lose a literal when l becomes true
        self.watch: list[list[int]] = [[] for _ in range(2 * n_vars + 1)]
        # occ_var[v]: clauses holding v with either sign (what flipping v can change)
        self.occ_var: list[list[int]] = [[] for _ in range(n_vars + 1)]
        for k, c in enumerate(self.clauses):
            for lit in c:
                self.watch[-lit].append(k)
                self.occ_var[abs(lit)].append(k)
        self.calls = 0

    def active(self, premises: Iterable[int] | None, *, hard: bool = True) -> list[int]:
        """Clause indices of the given premises (all when None), plus the hard clauses."""
        out: list[int] = list(self.hard) if hard else []
        for i in range(len(self.by_premise)) if premises is None else premises:
            out.extend(self.by_premise[i])
        return out

    def solve(self, active: list[int]) -> tuple[list[int] | None, set[int] | None]:
        """Satisfiability of the clauses ``active`` (indices, see :meth:`active`).

        Returns:
            ``(values, None)`` when satisfiable, ``values[l] > 0`` meaning literal ``l`` is true
            (every variable assigned); else ``(None, core)`` with the premise indices a refutation used.
        """
        self.calls += 1
        clauses = self.clauses
        owner = self.owner
        watch = self.watch
        on = bytearray(len(clauses))
        for k in active:
            on[k] = 1
        n = self.n_vars
        vals = [0] * (2 * n + 1)
        reason = [-2] * (n + 1)  # clause that implied the variable; -1 for a decision
        trail: list[int] = []

        def analyze(conflict: int) -> tuple[set[int], set[int]]:
            core: set[int] = set()
            decisions: set[int] = set()
            stack = [conflict]
            seen: set[int] = set()
            while stack:
                k = stack.pop()
                if k in core:
                    continue
                core.add(k)
                for lit in clauses[k]:
                    v = lit if lit > 0 else -lit
                    if v in seen:
                        continue
                    seen.add(v)
                    r = reason[v]
                    if r >= 0:
                        stack.append(r)
                    elif r == -1:
                        decisions.add(v)
            return core, decisions

        def propagate(head: int) -> int:
            """Unit propagation from trail[head:]; returns a conflicting clause or -1."""
            while head < len(trail):
                lit = trail[head]
                head += 1
                for k in watch[lit]:
                    if not on[k]:
                        continue
                    unassigned = 0
                    last = 0
                    for l2 in clauses[k]:
                        x = vals[l2]
                        if x > 0:
                            break
                        if x == 0:
                            unassigned += 1
                            last = l2
                    else:
                        if unassigned == 0:
                            return k
                        if unassigned == 1:
                            vals[last] = 1
                            vals[-last] = -1
                            reason[last if last > 0 else -last] = k
                            trail.append(last)
            return -1

        for k in active:  # empty and unit clauses
            c = clauses[k]
            if len(c) > 1:
                continue
            if not c or vals[c[0]] < 0:
                core, _ = analyze(k) if c else ({k}, set())
                return None, {owner[j] for j in core} - {-1}
            if vals[c[0]] == 0:
                vals[c[0]] = 1
                vals[-c[0]] = -1
                reason[abs(c[0])] = k
                trail.append(c[0])

        def search(head: int) -> tuple[bool, set[int], set[int]]:
            conflict = propagate(head)
            if conflict >= 0:
                core, decisions = analyze(conflict)
                return False, core, decisions
            # branch on a free literal of the shortest unsatisfied clause
            best: tuple[int, ...] | None = None
            best_len = 1 << 30
            for k in active:
                free = 0
                for lit in clauses[k]:
                    x = vals[lit]
                    if x > 0:
                        break
                    if x == 0:
                        free += 1
                else:
                    if free < best_len:
                        best, best_len = clauses[k], free
                        if free == 2:
                            break
            if best is None:
                return True, set(), set()
            lit = next(l for l in best if vals[l] == 0)
            v = lit if lit > 0 else -lit
            cores: set[int] = set()
            decs: set[int] = set()
            for choice in (lit, -lit):
                mark = len(trail)
                vals[choice] = 1
                vals[-choice] = -1
                reason[v] = -1
                trail.append(choice)
                ok, core, decisions = search(mark)
                if ok:
                    return True, set(), set()
                for undo in trail[mark:]:
                    vals[undo] = 0
                    vals[-undo] = 0
                    reason[undo if undo > 0 else -undo] = -2
                del trail[mark:]
                if v not in decisions:  # the conflict did not depend on this decision: backjump
                    return False, core, decisions
                cores |= core
                decs |= decisions - {v}
            return False, cores, decs

        ok, core, _ = search(0)
        if ok:
            for v in range(1, n + 1):  # free variables: any value satisfies the clauses
                if vals[v] == 0:
                    vals[v] = 1
                    vals[-v] = -1
            return vals, None
        return None, {owner[k] for k in core} - {-1}


# ------------------------------------------------------------------ reduction (shared shapes)


def _single_clause(formula: Formula, positive: bool, out: set[tuple[str, bool]]) -> bool:
    """Add the literals of ``formula`` (negated when not ``positive``) to ``out`` if it is one
    disjunction; False when it is not (then :func:`propositional.clauses` does the general CNF)."""
    if isinstance(formula, Atom):
        out.add((formula.name, positive))
        return True
    if isinstance(formula, Not):
        return _single_clause(formula.arg, not positive, out)
    if isinstance(formula, Or) and positive or isinstance(formula, And) and not positive:
        return _single_clause(formula.left, positive, out) and _single_clause(formula.right, positive, out)
    if isinstance(formula, Implies) and positive:
        return _single_clause(formula.left, False, out) and _single_clause(formula.right, True, out)
    return False


def _clauses(formula: Formula) -> frozenset[Clause]:
    """:func:`propositional.clauses`, with a fast path for the one-clause premises LogicGraph has."""
    lits: set[tuple[str, bool]] = set()
    if not _single_clause(formula, True, lits):
        return clauses(formula)
    if any((name, not sign) in lits for name, sign in lits):
        return frozenset()  # a tautology
    return frozenset((frozenset(lits),))


def _goal_component(premise_atoms: Mapping[str, frozenset[str]], goal_atoms: frozenset[str]) -> set[str]:
    """Premise ids in the atom-connected component of the goal's atoms."""
    by_atom: dict[str, list[str]] = {}
    for pid, names in premise_atoms.items():
        for a in names:
            by_atom.setdefault(a, []).append(pid)
    seen_atoms = set(goal_atoms)
    stack = list(goal_atoms)
    kept: set[str] = set()
    while stack:
        a = stack.pop()
        for pid in by_atom.get(a, ()):
            if pid in kept:
                continue
            kept.add(pid)
            for b in premise_atoms[pid]:
                if b not in seen_atoms:
                    seen_atoms.add(b)
                    stack.append(b)
    return kept


def _pure_drops(kept: set[str], pclauses: Mapping[str, frozenset[Clause]], hard: frozenset[Clause]) -> list[PureStep]:
    """Iterated pure-literal drops (mutates ``kept``)."""
    steps: list[PureStep] = []
    while True:
        occ: dict[tuple[str, bool], set[str]] = {}
        for pid in kept:
            for c in pclauses[pid]:
                for lit in c:
                    occ.setdefault(lit, set()).add(pid)
        hard_lits = {lit for c in hard for lit in c}
        progress = False
        for (name, sign) in sorted(occ):
            if (name, not sign) in occ or (name, not sign) in hard_lits:
                continue
            drop = sorted(p for p in occ[(name, sign)] if p in kept and all((name, sign) in c for c in pclauses[p]))
            if drop:
                steps.append(PureStep(name, sign, tuple(drop)))
                kept.difference_update(drop)
                progress = True
                break  # occurrences changed: recount
        if not progress:
            return steps


def _merge_blocks(kept: Sequence[str], pclauses: Mapping[str, frozenset[Clause]], hard: frozenset[Clause]) -> tuple[list[MergeStep], dict[str, int], list[list[str]]]:
    """Greedy block merges; returns the steps, premise -> block index, and the blocks."""
    pos: dict[str, set[str]] = {}
    neg: dict[str, set[str]] = {}
    full: set[tuple[str, bool]] = set()  # literals that fill every clause of at least one premise
    for pid in kept:
        cls = pclauses[pid]
        first = True
        common: Clause = frozenset()
        for c in cls:
            for name, sign in c:
                (pos if sign else neg).setdefault(name, set()).add(pid)
            common = c if first else common & c
            first = False
        full.update(common)
    hard_atoms = {name for c in hard for name, _ in c}
    candidates = sorted(name for name in pos.keys() & neg.keys()
                        if name not in hard_atoms and (name, True) in full and (name, False) in full)
    block: dict[str, list[str]] = {p: [p] for p in kept}  # premise -> its block (shared list)
    steps: list[MergeStep] = []
    progress = True
    while progress:  # a merge can make an earlier-scanned atom mergeable: repeat to a fixpoint
        progress = False
        waiting: list[str] = []
        for name in candidates:
            a = {id(block[p]): block[p] for p in pos[name]}
            b = {id(block[p]): block[p] for p in neg[name]}
            if a.keys() & b.keys():
                continue  # both signs in one block: never mergeable again
            if len(a) != 1 or len(b) != 1:
                waiting.append(name)
                continue
            (side_a,), (side_b,) = a.values(), b.values()
            steps.append(MergeStep(name, tuple(sorted(side_a)), tuple(sorted(side_b))))
            side_a.extend(side_b)
            for p in side_b:
                block[p] = side_a
            progress = True
        candidates = waiting
    unique = {id(b): b for b in block.values()}
    blocks = sorted((sorted(b) for b in unique.values()), key=lambda b: b[0])
    block_of = {p: i for i, b in enumerate(blocks) for p in b}
    return steps, block_of, blocks


def _add_to_transversals(transversals: list[int], h: int) -> list[int]:
    """One step of Berge's algorithm: the minimal transversals of ``H ∪ {h}`` from those of ``H``."""
    hit = [t for t in transversals if t & h]
    grown: set[int] = set()
    for t in transversals:
        if t & h:
            continue
        bits = h
        while bits:
            low = bits & -bits
            grown.add(t | low)
            bits ^= low
    # a grown set is minimal unless it contains a transversal already hitting h, or a smaller grown one
    fresh = [g for g in sorted(grown, key=int.bit_count) if not any(k & g == k for k in hit)]
    kept: list[int] = []
    for g in fresh:
        if not any(k & g == k for k in kept):
            kept.append(g)
    return hit + kept


def _minimal_transversals(sets: Sequence[int]) -> list[int]:
    """Minimal hitting sets of bitmask sets (Berge's algorithm); none when a set is empty."""
    result = [0]
    for h in sets:
        result = _add_to_transversals(result, h)
    return result


def _bits(mask: int) -> list[int]:
    out = []
    i = 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out


# ------------------------------------------------------------------ propositional enumeration


class _Enumerator:
    """One propositional problem: the reduction, then dualize-and-advance over blocks.

    Block sets are int bitmasks (bit ``b`` = block ``b``); a countermodel is the SAT engine's value
    list, filed under the mask of the blocks it falsifies: it refutes every transversal ``T``
    containing that mask (it satisfies ``¬G`` and every kept premise outside ``T``).
    """

    def __init__(self, premises: Mapping[str, Formula], goal: Formula, deadline: float | None) -> None:
        self.deadline = deadline
        ids = list(premises)
        pclauses = {pid: _clauses(premises[pid]) for pid in ids}
        patoms = {pid: atoms(premises[pid]) for pid in ids}
        goal_atoms = atoms(goal)
        hard = _clauses(Not(goal))
        self.names = sorted(goal_atoms.union(*patoms.values()))
        self.var = {a: i + 1 for i, a in enumerate(self.names)}
        var = self.var

        def encode(cls: Iterable[Clause]) -> list[tuple[int, ...]]:
            return [tuple(var[a] if s else -var[a] for a, s in c) for c in cls]

        self.sat = sat = _Sat([encode(pclauses[p]) for p in ids], encode(hard), len(self.names))
        index = {p: i for i, p in enumerate(ids)}

        # The component cut needs consistent premises (an unrelated consistent part cannot turn a
        # countermodel into a model of G); pure drops and merges hold either way.
        self.consistency_model, _ = sat.solve(sat.active(None, hard=False))
        kept_set = set(ids)
        self.unrelated: list[str] = []
        if self.consistency_model is not None:
            kept_set = _goal_component(patoms, goal_atoms)
            self.unrelated = [p for p in ids if p not in kept_set]
        self.tautologies = [p for p in ids if p in kept_set and not pclauses[p]]
        kept_set.difference_update(self.tautologies)
        self.pure = _pure_drops(kept_set, pclauses, hard)
        kept = [p for p in ids if p in kept_set]
        self.merges, block_of, self.blocks = _merge_blocks(kept, pclauses, hard)
        self.kept_atoms = sorted(goal_atoms.union(*(patoms[p] for p in kept)))
        self.n_blocks = len(self.blocks)
        self.all_blocks = (1 << self.n_blocks) - 1
        self.block_clause_ids = [sat.active([index[p] for p in b], hard=False) for b in self.blocks]
        self.premise_block = {index[p]: b for p, b in block_of.items()}
        self.clause_block = [_NOT_KEPT] * len(sat.clauses)
        for b, ks in enumerate(self.block_clause_ids):
            for k in ks:
                self.clause_block[k] = b
        for k in sat.hard:
            self.clause_block[k] = _HARD

        self.found: list[int] = []  # supports as block masks
        self.transversals: list[int] = [0]  # minimal block transversals of `found`
        self.models: dict[int, list[int]] = {}  # falsified-block mask -> countermodel values

    # -------------------------------------------------------------- helpers

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline

    def enabled(self, off: int) -> list[int]:
        """Clause indices of ``¬G`` and of the blocks not in the mask ``off``."""
        out: list[int] = list(self.sat.hard)
        for b, ks in enumerate(self.block_clause_ids):
            if not (off >> b) & 1:
                out.extend(ks)
        return out

    def falsified_clauses(self, values: list[int], on: int) -> list[int]:
        """The clauses of blocks in ``on`` that ``values`` falsifies."""
        clauses_ = self.sat.clauses
        out = []
        for b, ks in enumerate(self.block_clause_ids):
            if not (on >> b) & 1:
                continue
            for k in ks:
                for lit in clauses_[k]:
                    if values[lit] > 0:
                        break
                else:
                    out.append(k)
        return out

    def falsified(self, values: list[int]) -> int:
        """Mask of the kept blocks that ``values`` falsifies."""
        mask = 0
        for k in self.falsified_clauses(values, self.all_blocks):
            mask |= 1 << self.clause_block[k]
        return mask

    def core_blocks(self, core: set[int]) -> int:
        mask = 0
        for i in core:
            mask |= 1 << self.premise_block[i]
        return mask

    def covered(self, t: int) -> bool:
        models = self.models
        return t in models or any(f & t == f for f in models)

    # -------------------------------------------------------------- model rotation

    def rotate(self, values: list[int], on: int, fals: list[int], accept: Callable[[int, list[int]], bool]) -> None:
        """Recursive model rotation (Marques-Silva & Lynce): flip one variable of a falsified clause.

        From a countermodel ``values`` (falsifying the clauses ``fals`` among blocks ``on`` and no
        clause of ``¬G``), a flip often gives another countermodel falsifying a different block, for
        the price of re-evaluating a few clauses instead of a SAT call. ``accept(mask, values)``
        records a new one and says whether to rotate on from it.
        """
        clauses_ = self.sat.clauses
        occ_var = self.sat.occ_var
        clause_block = self.clause_block
        stack = [(values, fals)]
        flips = 0
        while stack and flips < _ROTATION_FLIPS:
            vals, fl = stack.pop()
            tried: set[int] = set()
            for k in fl:
                for lit in clauses_[k]:
                    v = lit if lit > 0 else -lit
                    if v in tried:
                        continue
                    tried.add(v)
                    flips += 1
                    nv = vals.copy()
                    nv[v], nv[-v] = nv[-v], nv[v]
                    nf = set(fl)
                    ok = True
                    for k2 in occ_var[v]:
                        b2 = clause_block[k2]
                        if b2 == _NOT_KEPT or (b2 >= 0 and not (on >> b2) & 1):
                            continue
                        for l2 in clauses_[k2]:
                            if nv[l2] > 0:
                                nf.discard(k2)
                                break
                        else:
                            if b2 == _HARD:
                                ok = False
                                break
                            nf.add(k2)
                    if not ok:
                        continue
                    mask = 0
                    for k2 in nf:
                        mask |= 1 << clause_block[k2]
                    if accept(mask, nv):
                        stack.append((nv, list(nf)))

    def add_model(self, values: list[int]) -> None:
        """File a countermodel, and the rotations of it that falsify no more blocks."""
        models = self.models
        mask = self.falsified(values)
        if mask in models:
            return
        models[mask] = values
        size = mask.bit_count()

        def accept(m: int, nv: list[int]) -> bool:
            if m in models:
                return False
            models[m] = nv
            return m.bit_count() <= size  # rotate on only from those that falsify no more blocks

        self.rotate(values, self.all_blocks, self.falsified_clauses(values, self.all_blocks), accept)

    # -------------------------------------------------------------- the search

    def shrink(self, mask: int) -> int | None:
        """A block-minimal support inside the entailing set ``mask``; None when the budget ran out.

        Deletion: a block whose removal keeps ``G`` entailed goes (and the set shrinks to the
        refutation's core); one whose removal gives a countermodel is critical and stays, and model
        rotation finds further critical blocks without a SAT call. Block-minimal is minimal: every
        minimal support is a union of blocks, so a smaller support inside would leave a block out.
        """
        order = _bits(mask)
        critical: set[int] = set()
        i = 0
        while i < len(order):
            if self.out_of_time():
                return None
            drop = order[i]
            if drop in critical:
                i += 1
                continue
            values, core = self.sat.solve(self.enabled(~mask | (1 << drop)))
            if values is None:
                assert core is not None  # solve returns exactly one of the two
                mask = self.core_blocks(core)
                order = [b for b in order if (mask >> b) & 1]
                continue
            critical.add(drop)
            self.models.setdefault(self.falsified(values), values)
            def accept(m: int, nv: list[int], current: int = mask) -> bool:
                inside = m & current
                if inside.bit_count() != 1 or inside.bit_length() - 1 in critical:
                    return False
                critical.add(inside.bit_length() - 1)
                self.models.setdefault(self.falsified(nv), nv)
                return True

            self.rotate(values, mask, self.falsified_clauses(values, mask), accept)
            i += 1
        return mask

    def run(self) -> bool:
        """Dualize and advance; True when complete, False when the budget ran out."""
        while True:
            pending = [t for t in self.transversals if not self.covered(t)]
            if not pending:
                return True
            for t in pending:
                if self.out_of_time():
                    return False
                if self.covered(t):  # by a model found since `pending` was made
                    continue
                values, core = self.sat.solve(self.enabled(t))
                if values is not None:
                    self.add_model(values)
                    continue
                assert core is not None
                # P minus the blocks of t entails G and holds no found support: a new one inside
                new = self.shrink(self.core_blocks(core))
                if new is None:
                    return False
                self.found.append(new)
                self.transversals = _add_to_transversals(self.transversals, new)
                break  # the transversals changed

    def supports(self) -> tuple[frozenset[str], ...]:
        sets = (frozenset(p for b in _bits(m) for p in self.blocks[b]) for m in self.found)
        return tuple(sorted(sets, key=_sort_key))

    def certificate(self, complete: bool) -> SupportCertificate:
        var = self.var
        countermodels: list[Countermodel] = []
        if complete:
            for t in sorted(self.transversals):
                values = self.models.get(t) or next(v for f, v in self.models.items() if f & t == f)
                countermodels.append(Countermodel(tuple(_bits(t)), {a: values[var[a]] > 0 for a in self.kept_atoms}))
        model = self.consistency_model
        return SupportCertificate(
            consistency_model=None if model is None else {a: model[var[a]] > 0 for a in self.names},
            unrelated=tuple(self.unrelated),
            tautologies=tuple(self.tautologies),
            pure=tuple(self.pure),
            merges=tuple(self.merges),
            blocks=tuple(tuple(b) for b in self.blocks),
            countermodels=tuple(countermodels),
        )


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
        budget_s: wall-clock budget; when it runs out the result has status ``stopped_at_budget``
            and holds the supports found so far (each a minimal support). None: no limit.
        recheck: verify every returned set with Z3 (:func:`recheck_supports`); raises on a failure.

    Returns:
        The supports, sorted by (size, ids). With inconsistent premises the minimal inconsistent
        subsets are supports too (they entail anything) and ``premises_consistent`` is False; if the
        goal is valid, the one minimal support is the empty set.

    Raises:
        TypeError: a premise or goal that is not a :class:`Formula` (names the premise).
        RecheckError: ``recheck`` found a set that is not a minimal support.
    """
    start = time.perf_counter()
    for pid, formula in premises.items():
        if not isinstance(formula, _FORMULA_TYPES):
            raise TypeError(f"premise {pid!r}: expected a propositional Formula, got {type(formula).__name__}")
    if not isinstance(goal, _FORMULA_TYPES):
        raise TypeError(f"goal: expected a propositional Formula, got {type(goal).__name__}")
    enumerator = _Enumerator(premises, goal, None if budget_s is None else start + budget_s)
    complete = enumerator.run()
    supports = enumerator.supports()
    rechecked = False
    if recheck:
        recheck_supports(premises, goal, supports)
        rechecked = True
    return SupportResult(
        supports=supports,
        complete=complete,
        status="complete" if complete else "stopped_at_budget",
        method="blocks+dualize",
        certificate=enumerator.certificate(complete),
        rechecked=rechecked,
        elapsed_ms=(time.perf_counter() - start) * 1000,
        premises_consistent=enumerator.consistency_model is not None,
        solver_calls=enumerator.sat.calls,
    )


# ------------------------------------------------------------------ independent checks


def recheck_supports(premises: Mapping[str, Formula], goal: Formula, supports: Iterable[frozenset[str]], *, timeout_s: float = 10.0) -> int:
    """Verify with Z3 that each set is a minimal support: ``S ⊨ G``, and ``S∖{p} ⊭ G`` for each ``p``.

    Z3 is a different solver from the enumerator's, so a bug in one is not repeated by the other.
    One fresh ``z3.Context`` per call (Z3 objects are not thread-safe).

    Args:
        premises: premise id -> formula.
        goal: the goal.
        supports: the sets to verify.
        timeout_s: per Z3 check.

    Returns:
        The number of Z3 checks made.

    Raises:
        RecheckError: a set with an unknown id, one that does not entail the goal, one with a
            redundant premise, or a Z3 ``unknown``; the message names the set.
    """
    import z3

    sets = [frozenset(s) for s in supports]
    ctx = z3.Context()
    cache: dict[str, Any] = {}
    solver = z3.Solver(ctx=ctx)
    solver.set("timeout", max(1, int(timeout_s * 1000)))
    guards: dict[str, Any] = {}
    for s in sets:
        for pid in s:
            if pid not in premises:
                raise RecheckError(f"support {sorted(s)} names {pid!r}, which is not a premise")
            if pid not in guards:
                guards[pid] = z3.Bool(f"__guard_{len(guards)}", ctx)
                solver.add(z3.Implies(guards[pid], to_z3(premises[pid], ctx, cache)))
    solver.add(z3.Not(to_z3(goal, ctx, cache)))
    checks = 0
    for s in sets:
        members = sorted(s)
        checks += 1
        r = solver.check(*[guards[p] for p in members])
        if r != z3.unsat:
            raise RecheckError(f"support {members} does not entail {to_prover9(goal)} (Z3: {r})")
        for p in members:
            checks += 1
            r = solver.check(*[guards[q] for q in members if q != p])
            if r != z3.sat:
                raise RecheckError(f"support {members} is not minimal: without {p!r} Z3 says {r}")
    if len(set(sets)) != len(sets):
        raise RecheckError("the support list has a duplicate set")
    return checks


def _transversals_plain(sets: Sequence[frozenset[int]]) -> list[frozenset[int]]:
    """Minimal hitting sets, written apart from the enumerator's bitmask version on purpose."""
    current: list[frozenset[int]] = [frozenset()]
    for h in sets:
        grown: set[frozenset[int]] = set()
        for t in current:
            if t & h:
                grown.add(t)
            else:
                grown.update(t | {x} for x in h)
        current = [t for t in grown if not any(o < t for o in grown)]
    return current


def check_certificate(premises: Mapping[str, Formula], goal: Formula, result: SupportResult) -> CertificateCheck:
    """Re-verify that ``result.supports`` contains every minimal support, from its certificate alone.

    Uses only :func:`~symbolkg.solvers.logicgraph.propositional.clauses` and
    :func:`~symbolkg.solvers.logicgraph.propositional.evaluate` on the original formulas, and recomputes the
    blocks' effect and the minimal transversals itself. Together with :func:`recheck` (each listed set
    is a minimal support) it proves the list is exactly the minimal supports.

    Raises:
        CertificateError: an incomplete result, or a step whose claim does not hold (named).
    """
    cert = result.certificate
    if not result.complete or not isinstance(cert, SupportCertificate):
        raise CertificateError(f"no completeness certificate to check (status {result.status!r})")
    hard = clauses(Not(goal))
    hard_lits = {lit for c in hard for lit in c}
    pcl = {p: clauses(f) for p, f in premises.items()}
    kept = set(premises)

    # consistency and the component cut
    if cert.unrelated:
        if cert.consistency_model is None:
            raise CertificateError("premises dropped as unrelated without a model of the premises")
        for pid, f in premises.items():
            try:
                ok = evaluate(f, cert.consistency_model)
            except KeyError as exc:
                raise CertificateError(f"consistency model leaves atom {exc} of {pid!r} unassigned") from None
            if not ok:
                raise CertificateError(f"consistency model falsifies premise {pid!r}")
        component = _goal_component({p: atoms(f) for p, f in premises.items()}, atoms(goal))
        for pid in cert.unrelated:
            if pid in component:
                raise CertificateError(f"premise {pid!r} dropped as unrelated but shares atoms with the goal's component")
        kept -= set(cert.unrelated)
    for pid in cert.tautologies:
        if pid not in kept or pcl[pid]:
            raise CertificateError(f"premise {pid!r} dropped as a tautology but it has clauses (or is unknown)")
        kept.discard(pid)
    for step in cert.pure:
        lit, comp = (step.atom, step.polarity), (step.atom, not step.polarity)
        if comp in hard_lits or any(comp in c for p in kept for c in pcl[p]):
            raise CertificateError(f"pure step on {step.atom}: the complement occurs in the kept premises or ¬goal")
        for pid in step.premises:
            if pid not in kept or not all(lit in c for c in pcl[pid]):
                raise CertificateError(f"pure step on {step.atom}: premise {pid!r} is not kept or has a clause without the literal")
        kept -= set(step.premises)

    # blocks
    block: dict[str, frozenset[str]] = {p: frozenset((p,)) for p in kept}
    hard_atoms = {a for a, _ in hard_lits}
    for step in cert.merges:
        a_side, b_side = frozenset(step.positive), frozenset(step.negative)
        if not a_side or not b_side or block.get(next(iter(a_side))) != a_side or block.get(next(iter(b_side))) != b_side or a_side == b_side:
            raise CertificateError(f"merge on {step.atom}: {sorted(a_side)} / {sorted(b_side)} are not two current blocks")
        if step.atom in hard_atoms:
            raise CertificateError(f"merge on {step.atom}: the atom occurs in ¬goal")
        for pid in kept:
            for c in pcl[pid]:
                if (step.atom, True) in c and pid not in a_side:
                    raise CertificateError(f"merge on {step.atom}: positive occurrence in {pid!r} outside the block")
                if (step.atom, False) in c and pid not in b_side:
                    raise CertificateError(f"merge on {step.atom}: negative occurrence in {pid!r} outside the block")
        if not any(pcl[p] and all((step.atom, True) in c for c in pcl[p]) for p in a_side) or not any(
            pcl[p] and all((step.atom, False) in c for c in pcl[p]) for p in b_side
        ):
            raise CertificateError(f"merge on {step.atom}: a side has no premise all of whose clauses hold the atom")
        merged = a_side | b_side
        for p in merged:
            block[p] = merged
    final_blocks = sorted({tuple(sorted(b)) for b in block.values()})
    if final_blocks != sorted(cert.blocks):
        raise CertificateError("the certificate's blocks are not what its merge steps produce")
    position = {b: i for i, b in enumerate(cert.blocks)}

    # supports as block sets, then every minimal transversal needs a countermodel
    block_supports: list[frozenset[int]] = []
    for s in result.supports:
        if not s <= kept:
            raise CertificateError(f"support {sorted(s)} uses a dropped premise")
        bs = frozenset(position[tuple(sorted(block[p]))] for p in s)
        if frozenset().union(*(cert.blocks[b] for b in bs)) != s:
            raise CertificateError(f"support {sorted(s)} is not a union of blocks")
        block_supports.append(bs)
    by_blocks: dict[frozenset[int], Countermodel] = {frozenset(c.blocks): c for c in cert.countermodels}
    transversals = _transversals_plain(block_supports)
    for t in transversals:
        cm = by_blocks.get(t)
        if cm is None:
            raise CertificateError(f"no countermodel for the minimal transversal {[list(cert.blocks[b]) for b in sorted(t)]}")
        removed = {p for b in t for p in cert.blocks[b]}
        try:
            if evaluate(goal, cm.assignment):
                raise CertificateError(f"countermodel for blocks {sorted(t)} satisfies the goal")
            for pid in kept - removed:
                if not evaluate(premises[pid], cm.assignment):
                    raise CertificateError(f"countermodel for blocks {sorted(t)} falsifies kept premise {pid!r}")
        except KeyError as exc:
            raise CertificateError(f"countermodel for blocks {sorted(t)} leaves atom {exc} unassigned") from None
    return CertificateCheck(transversals=len(transversals), blocks=len(cert.blocks), kept=len(kept))


# ------------------------------------------------------------------ first-order variant


def minimal_supports_fol(
    premises: Mapping[str, str],
    goal: str,
    *,
    budget_s: float,
    declarations: str = "",
    language: Literal["smtlib"] = "smtlib",
    call_timeout_s: float = 5.0,
) -> SupportResult:
    """Minimal supports of a first-order goal: MARCO over Z3, complete when the map is exhausted.

    Input is SMT-LIB 2 (Z3's ``parse_smt2_string``): ``declarations`` holds the ``declare-sort`` /
    ``declare-fun`` / ``declare-const`` commands shared by all formulas, each premise and the goal
    are Boolean terms, e.g. ``"(forall ((x U)) (=> (P x) (Q x)))"``.

    The map solver proposes a seed (a premise subset not above a found support nor below a found
    non-entailing set); Z3 decides ``seed ∪ {¬G}``: satisfiable -> grown to a maximal non-entailing
    set and blocked downwards; unsatisfiable -> shrunk (unsat core, then deletion) to a minimal
    support and blocked upwards. When the map has no seed left, every minimal support is found.

    Args:
        premises: premise id -> SMT-LIB Boolean term.
        goal: SMT-LIB Boolean term.
        budget_s: wall-clock budget for the whole enumeration.
        declarations: SMT-LIB declarations the terms use.
        language: ``"smtlib"`` (the only one so far).
        call_timeout_s: cap per Z3 check (also never beyond the budget left), so no call hangs.

    Returns:
        status ``complete``, ``stopped_at_budget`` (the budget ran out, possibly inside a check), or
        ``stopped_unknown`` (Z3 said ``unknown`` for a reason other than the time limit, e.g.
        incomplete quantifier reasoning, where the enumeration needed a definite answer). The
        supports listed are minimal supports in every case (each set and its minimality were
        decided by Z3).

    Raises:
        ValueError: a formula that Z3 cannot parse (names its id) or an unknown language.
    """
    import z3

    if language != "smtlib":
        raise ValueError(f"language {language!r} is not supported; use 'smtlib'")
    start = time.perf_counter()
    deadline = start + budget_s
    ctx = z3.Context()

    def parse_term(name: str, term: str) -> Any:
        try:
            parsed = z3.parse_smt2_string(f"{declarations}\n(assert {term})", ctx=ctx)
        except z3.Z3Exception as exc:
            raise ValueError(f"{name}: not an SMT-LIB Boolean term ({exc})") from None
        return parsed[0] if len(parsed) == 1 else z3.And(*parsed)

    ids = list(premises)
    formulas = {p: parse_term(f"premise {p!r}", premises[p]) for p in ids}
    goal_f = parse_term("goal", goal)
    guards = {p: z3.Bool(f"__support_{i}", ctx) for i, p in enumerate(ids)}
    check_solver = z3.Solver(ctx=ctx)
    for p in ids:
        check_solver.add(z3.Implies(guards[p], formulas[p]))
    check_solver.add(z3.Not(goal_f))
    map_solver = z3.Solver(ctx=ctx)
    calls = 0
    unknown_calls = 0

    class _Stop(Exception):
        def __init__(self, status: Status) -> None:
            self.status = status

    def check(subset: Iterable[str]) -> bool:
        """True when ``subset ∪ {¬G}`` is satisfiable (the subset does not entail G)."""
        nonlocal calls, unknown_calls
        left = deadline - time.perf_counter()
        if left <= 0:
            raise _Stop("stopped_at_budget")
        check_solver.set("timeout", max(1, int(min(left, call_timeout_s) * 1000)))
        calls += 1
        r = check_solver.check(*[guards[p] for p in subset])
        if r == z3.sat:
            return True
        if r == z3.unsat:
            return False
        unknown_calls += 1
        reason = check_solver.reason_unknown()
        # a time limit (the call's own cap or the budget) is a budget stop; anything else (e.g.
        # incomplete quantifier instantiation) is Z3 not knowing
        timed_out = "timeout" in reason or "canceled" in reason
        raise _Stop("stopped_at_budget" if timed_out else "stopped_unknown")

    found: list[frozenset[str]] = []
    mss: list[frozenset[str]] = []
    status: Status = "complete"
    try:
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise _Stop("stopped_at_budget")
            map_solver.set("timeout", max(1, int(left * 1000)))
            r = map_solver.check()
            if r == z3.unsat:
                break
            if r != z3.sat:
                raise _Stop("stopped_at_budget")
            m = map_solver.model()
            # unassigned guards default to "in": larger seeds reach maximal sets sooner
            seed = [p for p in ids if not z3.is_false(m.eval(guards[p], model_completion=False))]
            if check(seed):
                grown = list(seed)
                for p in ids:
                    if p not in grown and check(grown + [p]):
                        grown.append(p)
                mss.append(frozenset(grown))
                map_solver.add(z3.Or([guards[p] for p in ids if p not in grown] or [z3.BoolVal(False, ctx)]))
            else:
                core_names = {str(g) for g in check_solver.unsat_core()}
                current = [p for p in seed if str(guards[p]) in core_names]
                i = 0
                while i < len(current):
                    trial = current[:i] + current[i + 1:]
                    if check(trial):
                        i += 1
                    else:
                        core_names = {str(g) for g in check_solver.unsat_core()}
                        current = [p for p in trial if str(guards[p]) in core_names]
                found.append(frozenset(current))
                map_solver.add(z3.Or([z3.Not(guards[p]) for p in current] or [z3.BoolVal(False, ctx)]))
    except _Stop as stop:
        status = stop.status
    supports = tuple(sorted(found, key=_sort_key))
    return SupportResult(
        supports=supports,
        complete=status == "complete",
        status=status,
        method="marco-z3",
        certificate=FolCertificate(tuple(tuple(sorted(s)) for s in mss), calls, unknown_calls),
        rechecked=False,
        elapsed_ms=(time.perf_counter() - start) * 1000,
        premises_consistent=None,
        solver_calls=calls,
    )
