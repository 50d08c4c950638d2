"""The reference enumerator of minimal supports: dualize and advance over blocks (Gunopulos et al.).

Not the method LogicGraph's commands use (that is :mod:`~symbolkg.solvers.logicgraph.elimination`,
complete by construction and certified); this one is kept as an *independent reference*: a
different algorithm with a different SAT engine, so the two cannot share a bug. The generator takes
its ground truth from it (so ``symbolkg logicgraph supports`` on a generated tier compares the
elimination with this), the tests cross-check the two on every instance, and
``benchmarks/logicgraph_supports.py`` times both (the "before" column).

1. **Reduction** (each step keeps the set of minimal supports unchanged): premises outside the
   goal's atom-connected component are dropped when ``P`` is consistent; tautologies are dropped; a
   premise every clause of which holds a literal that is *pure* in the remaining premises and ``¬G``
   is dropped (such a premise is in no minimal unsatisfiable subset).
2. **Blocks**: when atom ``x`` occurs positively only in block ``A`` and negatively only in block
   ``B`` (and not in ``¬G``), every minimal support contains both ``A`` and ``B`` or neither.
   Chains of implications collapse into one block; minimal supports are unions of blocks.
3. **Dualization** at block level: with found supports ``H``, take each minimal block transversal
   ``T`` of ``H``. If ``P∖⋃T ⊭ G``, a SAT model is a countermodel for ``T``; otherwise ``P∖⋃T``
   entails ``G`` and holds no found support, so shrinking it yields a new minimal support. It stops
   when every minimal transversal of ``H`` has a countermodel.

Why the stop proves completeness: let ``S`` be a minimal support holding no member of ``H``. ``S`` is
a union of blocks, so the blocks outside ``S`` meet every member of ``H``: they contain a minimal
transversal ``T``, and ``S ⊆ P∖⋃T``. The countermodel of ``T`` satisfies ``P∖⋃T ⊇ S`` and ``¬G``,
contradicting ``S ⊨ G``. The cost grows with the number of minimal transversals (up to thousands of
countermodels on the paper's largest instances), which is why the elimination replaced it.

>>> from symbolkg.solvers.logicgraph.propositional import parse
>>> premises = {"r1": parse("A -> G"), "f1": parse("A"), "r2": parse("B -> G"), "f2": parse("B"), "x": parse("C")}
>>> result = reference_supports(premises, parse("G"))
>>> [sorted(s) for s in result.supports], result.status
([['f1', 'r1'], ['f2', 'r2']], 'complete')
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from symbolkg.solvers.logicgraph.propositional import Clause, Formula, Not, atoms, clauses, require_formulas
from symbolkg.solvers.logicgraph.supports_syntax import SupportResult, sort_key
from symbolkg.solvers.outcomes import Deadline

__all__ = ["reference_supports"]


#: clause owners for model rotation: a clause of ``¬G``, of a dropped premise
_HARD = -1
_NOT_KEPT = -2
#: single flips tried per rotation (bounds the work when countermodels are plentiful)
_ROTATION_FLIPS = 64


@dataclass(frozen=True)
class _PureStep:
    """Premises dropped because each of their clauses holds the pure literal ``(atom, polarity)``."""

    atom: str
    polarity: bool
    premises: tuple[str, ...]


@dataclass(frozen=True)
class _MergeStep:
    """Blocks ``positive`` and ``negative`` merged on ``atom``."""

    atom: str
    positive: tuple[str, ...]
    negative: tuple[str, ...]


# ------------------------------------------------------------------ a small SAT engine with cores


class _Sat:
    """DPLL with unit propagation over integer literals, returning a model or an unsatisfiable core.

    Own engine rather than :func:`propositional.satisfiable` because the enumeration needs cores
    (the premises a refutation used) and makes dozens of calls per instance; clauses are few and
    short, so occurrence lists and no learning are enough. Literal ``l`` indexes the value list
    directly (``values[-v]`` is Python's from-the-end index, distinct from ``values[v]``).
    """

    def __init__(
        self, premise_clauses: Sequence[Sequence[tuple[int, ...]]], hard: Sequence[tuple[int, ...]], n_vars: int
    ) -> None:
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
        search = _Search(self, active)
        core = search.units()
        if core is None:
            ok, core, _ = search.search(0)
            if ok:
                return search.model(), None
        return None, {self.owner[k] for k in core} - {-1}


class _Search:
    """One DPLL run of :class:`_Sat` over some active clauses: values, reasons, trail, backjumping."""

    def __init__(self, sat: _Sat, active: list[int]) -> None:
        self.clauses = sat.clauses
        self.watch = sat.watch
        self.active = active
        self.on = bytearray(len(sat.clauses))
        for k in active:
            self.on[k] = 1
        self.n = sat.n_vars
        self.vals = [0] * (2 * self.n + 1)
        self.reason = [-2] * (self.n + 1)  # clause that implied the variable; -1 for a decision
        self.trail: list[int] = []

    def assign(self, lit: int, reason: int) -> None:
        self.vals[lit] = 1
        self.vals[-lit] = -1
        self.reason[lit if lit > 0 else -lit] = reason
        self.trail.append(lit)

    def analyze(self, conflict: int) -> tuple[set[int], set[int]]:
        """The clauses a conflict rests on and the decisions among its causes."""
        core: set[int] = set()
        decisions: set[int] = set()
        stack = [conflict]
        seen: set[int] = set()
        clauses, reason = self.clauses, self.reason
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

    def propagate(self, head: int) -> int:
        """Unit propagation from trail[head:]; returns a conflicting clause or -1."""
        clauses, on, vals, trail = self.clauses, self.on, self.vals, self.trail
        while head < len(trail):
            lit = trail[head]
            head += 1
            for k in self.watch[lit]:
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
                        self.assign(last, k)
        return -1

    def units(self) -> set[int] | None:
        """Assign the unit clauses; the core of an empty or clashing one, else None."""
        for k in self.active:
            c = self.clauses[k]
            if len(c) > 1:
                continue
            if not c or self.vals[c[0]] < 0:
                return self.analyze(k)[0] if c else {k}
            if self.vals[c[0]] == 0:
                self.assign(c[0], k)
        return None

    def branch_literal(self) -> int:
        """A free literal of the shortest unsatisfied clause, or 0 when every clause is satisfied."""
        best: tuple[int, ...] | None = None
        best_len = 1 << 30
        vals = self.vals
        for k in self.active:
            free = 0
            for lit in self.clauses[k]:
                x = vals[lit]
                if x > 0:
                    break
                if x == 0:
                    free += 1
            else:
                if free < best_len:
                    best, best_len = self.clauses[k], free
                    if free == 2:
                        break
        return 0 if best is None else next(lit for lit in best if vals[lit] == 0)

    def undo(self, mark: int) -> None:
        for lit in self.trail[mark:]:
            self.vals[lit] = 0
            self.vals[-lit] = 0
            self.reason[lit if lit > 0 else -lit] = -2
        del self.trail[mark:]

    def search(self, head: int) -> tuple[bool, set[int], set[int]]:
        conflict = self.propagate(head)
        if conflict >= 0:
            core, decisions = self.analyze(conflict)
            return False, core, decisions
        lit = self.branch_literal()
        if not lit:
            return True, set(), set()
        v = lit if lit > 0 else -lit
        cores: set[int] = set()
        decs: set[int] = set()
        for choice in (lit, -lit):
            mark = len(self.trail)
            self.assign(choice, -1)
            ok, core, decisions = self.search(mark)
            if ok:
                return True, set(), set()
            self.undo(mark)
            if v not in decisions:  # the conflict did not depend on this decision: backjump
                return False, core, decisions
            cores |= core
            decs |= decisions - {v}
        return False, cores, decs

    def model(self) -> list[int]:
        for v in range(1, self.n + 1):  # free variables: any value satisfies the clauses
            if self.vals[v] == 0:
                self.vals[v] = 1
                self.vals[-v] = -1
        return self.vals


# ------------------------------------------------------------------ reduction (shared shapes)


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


def _pure_drops(kept: set[str], pclauses: Mapping[str, frozenset[Clause]], hard: frozenset[Clause]) -> list[_PureStep]:
    """Iterated pure-literal drops (mutates ``kept``)."""
    steps: list[_PureStep] = []
    while True:
        occ: dict[tuple[str, bool], set[str]] = {}
        for pid in kept:
            for c in pclauses[pid]:
                for lit in c:
                    occ.setdefault(lit, set()).add(pid)
        hard_lits = {lit for c in hard for lit in c}
        progress = False
        for name, sign in sorted(occ):
            if (name, not sign) in occ or (name, not sign) in hard_lits:
                continue
            drop = sorted(p for p in occ[(name, sign)] if p in kept and all((name, sign) in c for c in pclauses[p]))
            if drop:
                steps.append(_PureStep(name, sign, tuple(drop)))
                kept.difference_update(drop)
                progress = True
                break  # occurrences changed: recount
        if not progress:
            return steps


def _merge_blocks(
    kept: Sequence[str], pclauses: Mapping[str, frozenset[Clause]], hard: frozenset[Clause]
) -> tuple[list[_MergeStep], dict[str, int], list[list[str]]]:
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
    candidates = sorted(
        name
        for name in pos.keys() & neg.keys()
        if name not in hard_atoms and (name, True) in full and (name, False) in full
    )
    block: dict[str, list[str]] = {p: [p] for p in kept}  # premise -> its block (shared list)
    steps: list[_MergeStep] = []
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
            steps.append(_MergeStep(name, tuple(sorted(side_a)), tuple(sorted(side_b))))
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

    def __init__(self, premises: Mapping[str, Formula], goal: Formula, deadline: Deadline | None) -> None:
        self.deadline = deadline
        ids = list(premises)
        pclauses = {pid: clauses(premises[pid]) for pid in ids}
        patoms = {pid: atoms(premises[pid]) for pid in ids}
        goal_atoms = atoms(goal)
        hard = clauses(Not(goal))
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
        return self.deadline is not None and self.deadline.expired()

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
        return tuple(sorted(sets, key=sort_key))


def reference_supports(
    premises: Mapping[str, Formula], goal: Formula, *, budget_s: float | None = None
) -> SupportResult:
    """Every minimal set of premises that entails ``goal``, by dualize and advance (no certificate).

    Args:
        premises: premise id -> formula.
        goal: the formula to entail.
        budget_s: wall-clock budget; when it runs out the result has status ``stopped_at_budget`` and
            holds the supports found so far (each a minimal support). None: no limit.

    Returns:
        The supports, sorted by (size, ids), as :func:`~symbolkg.solvers.logicgraph.elimination.minimal_supports`
        defines them (minimal inconsistent subsets included); ``certificate`` is None.

    Raises:
        TypeError: a premise or goal that is not a :class:`Formula` (names the premise).
    """
    start = time.perf_counter()
    require_formulas(premises, goal)
    enumerator = _Enumerator(premises, goal, None if budget_s is None else Deadline(budget_s))
    complete = enumerator.run()
    return SupportResult(
        supports=enumerator.supports(),
        complete=complete,
        status="complete" if complete else "stopped_at_budget",
        method="blocks+dualize",
        certificate=None,
        rechecked=False,
        elapsed_ms=(time.perf_counter() - start) * 1000,
        premises_consistent=enumerator.consistency_model is not None,
        solver_calls=enumerator.sat.calls,
    )
