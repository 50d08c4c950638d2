"""New LogicGraph instances: backward construction, solver filters, enumerated ground truth.

The construction follows LogicGraph's paper (section 4.1, "Symbolic Logic DAG Generation"): start
from the goal ``G``, pick one of the seven argument forms that can conclude it, create that form's
premises with fresh atoms, and keep expanding one of those premises upwards for a sampled number
of steps; the premises never expanded become the knowledge base (literals as facts, compound
formulas as rules, as the dataset does). Several proofs come from several such chains to ``G``
(new *families*) and from re-expanding an intermediate conclusion of an existing chain with fresh
atoms (a *branch*: it reaches the same conclusion by another route and finishes like the chain).

Because every new premise has fresh atoms, two chains share nothing but ``G`` and the re-derived
nodes, which keeps unintended proofs rare, but the construction is *not* trusted for the ground
truth: the reference list of a written instance is the reference enumerator's complete list of
minimal supports (:func:`symbolkg.solvers.logicgraph.dualize.reference_supports`, a different
algorithm from the elimination that ``symbolkg logicgraph supports`` compares with it), one stepwise proof each
(the construction's own proof when it cites exactly that support, else
:func:`symbolkg.solvers.logicgraph.proof_search.prove`), grouped into families by
:func:`symbolkg.solvers.logicgraph.proof_search.families`. An instance is written only when it passes
the paper's three solver filters (section 4.3) with our own solvers (:func:`check_filters`) and its
number of proofs falls in the tier's range.

Everything is a pure function of ``(tier, seed, index)``: instance ``i`` draws from its own
``random.Random`` seeded with a string of the three, so instances are independent of each other
and of how many were asked for.

>>> generated = generate_instance("small", seed=7, index=0)
>>> 2 <= len(generated.instance.proofs) <= 4
True
>>> generated.instance.id
'Small/gen_s7_1'

One module, long because it is one pipeline read top to bottom: the backward construction,
the tiers that size it, the solver filters and the ground truth of one instance, each step fed by the
previous one. The English wording is apart (:mod:`.wording`), and so are the supports
(:mod:`.elimination`, :mod:`.dualize`) and the proofs (:mod:`.proof_search`).
"""

from __future__ import annotations

import random
import re
import statistics
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from symbolkg.solvers.logicgraph.dualize import reference_supports
from symbolkg.solvers.logicgraph.instances import DERIVED, Instance, Premise, Proof, Step, StepPremise
from symbolkg.solvers.logicgraph.proof_search import families, prove
from symbolkg.solvers.logicgraph.proofs import matching_rules
from symbolkg.solvers.logicgraph.propositional import (
    Atom,
    Formula,
    Implies,
    Not,
    Or,
    atoms,
    entails,
    negate,
    satisfiable,
    to_prover9,
    to_unicode,
)
from symbolkg.solvers.logicgraph.wording import THEMES, Proposition, instantiate, propositions, rename, verbalize

__all__ = [
    "TIERS",
    "FilterReport",
    "GeneratedInstance",
    "GenerationError",
    "Inference",
    "Path",
    "Skeleton",
    "TierConfig",
    "check_filters",
    "construct",
    "expand",
    "generate",
    "generate_instance",
    "skeleton_proofs",
    "tier_statistics",
]

TextMode = Literal["template"]


class GenerationError(RuntimeError):
    """No instance passing the filters and the tier's range within the attempt limit."""


# ----------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class TierConfig:
    """How instances of one tier are built.

    Attributes:
        name: ``small`` / ``medium`` / ``large`` (the record id uses it capitalised).
        min_proofs: fewest reference proofs an instance of the tier may have.
        max_proofs: most reference proofs (None: no upper bound, the paper's Large is ``n >= 8``).
        planned_proofs: range the number of constructed chains is drawn from (uniformly); the
            enumerated count usually equals it, and an instance outside ``min/max_proofs`` is redrawn.
        tail_p: probability that the number of chains is drawn from ``tail_proofs`` instead (the
            paper's Large tier: 5% of instances have 15 or more proofs); 0 draws nothing extra.
        tail_proofs: the range of that tail.
        new_family_p: probability that a chain after the first is a new chain to ``G`` (a new
            family) rather than a branch; 0.4 gives the dataset's families per instance
            (Small 1.7, Medium 3.05).
        core_steps: range of a new family's chain length (steps), drawn uniformly.
        branch_steps: range of a branch's own steps before it rejoins its chain.
        max_formula_size: largest premise (AST nodes) a form may create; the dataset's biggest,
            ``(¬(A10 ∨ (¬(¬G → A8) → ¬A9)) → A11)``, has 13.
        negative_literal_p: probability that a fresh literal is negated.
        distractors: dead-end chains added per instance: a chain (to ``G`` or to an intermediate
            conclusion) with one leaf left out, so its premises look relevant but prove nothing.
            0 by default: in the dataset every premise is used by some reference proof.
        max_attempts: constructions tried per instance before :class:`GenerationError`.
        support_budget_s: time limit handed to the enumerator per attempt (None: none); an
            enumeration that is not complete rejects the attempt.
    """

    name: str
    min_proofs: int
    max_proofs: int | None
    planned_proofs: tuple[int, int]
    new_family_p: float = 0.4
    core_steps: tuple[int, int] = (3, 9)
    branch_steps: tuple[int, int] = (1, 5)
    max_formula_size: int = 13
    negative_literal_p: float = 0.3
    distractors: int = 0
    max_attempts: int = 50
    support_budget_s: float | None = 30.0
    tail_p: float = 0.0
    tail_proofs: tuple[int, int] = (15, 19)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.name):
            raise ValueError(f"TierConfig.name {self.name!r}: use lowercase letters, digits and '_'")
        if self.min_proofs < 1:
            raise ValueError(f"TierConfig.min_proofs={self.min_proofs}: must be >= 1")
        if self.max_proofs is not None and self.max_proofs < self.min_proofs:
            raise ValueError(f"TierConfig.max_proofs={self.max_proofs} < min_proofs={self.min_proofs}")
        for label, (lo, hi), least in (
            ("planned_proofs", self.planned_proofs, 1),
            ("core_steps", self.core_steps, 1),
            ("branch_steps", self.branch_steps, 1),
            ("tail_proofs", self.tail_proofs, 1),
        ):
            if lo < least or hi < lo:
                raise ValueError(f"TierConfig.{label}={(lo, hi)}: need {least} <= low <= high")
        if not all(0.0 <= p <= 1.0 for p in (self.new_family_p, self.negative_literal_p, self.tail_p)):
            raise ValueError("TierConfig.new_family_p, negative_literal_p and tail_p are probabilities in [0, 1]")
        if self.max_formula_size < 5:
            raise ValueError(f"TierConfig.max_formula_size={self.max_formula_size}: CD/DE need at least 5 nodes")
        if self.distractors < 0 or self.max_attempts < 1:
            raise ValueError("TierConfig.distractors must be >= 0 and max_attempts >= 1")
        if self.support_budget_s is not None and self.support_budget_s <= 0:
            raise ValueError(f"TierConfig.support_budget_s={self.support_budget_s}: must be > 0 (None: no limit)")

    @property
    def label(self) -> str:
        """The tier as the record id spells it (``Small``)."""
        return self.name.capitalize()

    def planned(self, rng: random.Random) -> int:
        """The number of chains to construct (one draw; two when the tier has a tail)."""
        if self.tail_p > 0 and rng.random() < self.tail_p:
            return rng.randint(*self.tail_proofs)
        return rng.randint(*self.planned_proofs)

    def accepts(self, proofs: int) -> bool:
        """Whether an instance with this many reference proofs belongs to the tier."""
        return proofs >= self.min_proofs and (self.max_proofs is None or proofs <= self.max_proofs)


#: the paper's tiers (section 4.4): Small 2-4 proofs, Medium 5-7, Large 8 or more. ``large`` has the
#: held-back Large tier's shape: 10.3 proofs on average, 5% of instances with 15 or more, up to 19,
#: and 65 premises on average (up to 143), which chains of 3-10 steps give. ``large_8_12`` and
#: ``large_15_19`` fix the number of proofs to one part of that range (for measurements).
TIERS: dict[str, TierConfig] = {
    "small": TierConfig("small", 2, 4, (2, 4)),
    "medium": TierConfig("medium", 5, 7, (5, 7)),
    "large": TierConfig("large", 8, 19, (8, 12), core_steps=(3, 10), tail_p=0.05, tail_proofs=(15, 19)),
    "large_8_12": TierConfig("large_8_12", 8, 12, (8, 12), core_steps=(3, 10)),
    "large_15_19": TierConfig("large_15_19", 15, 19, (15, 19), core_steps=(3, 10)),
}


# ----------------------------------------------------------------------------- construction


@dataclass(frozen=True)
class Inference:
    """One inference node: a form's premises and its conclusion.

    Attributes:
        rule: one of :data:`~symbolkg.solvers.logicgraph.instances.RULES`.
        premises: in the order the dataset cites them for this form (e.g. CD: ``P→R, Q→S, P∨Q``).
        conclusion: what the form derives (double negations removed, as the dataset writes them).
        derived: index into ``premises`` of the one obtained from the previous step of the chain;
            None for a chain's first step (all its premises are knowledge-base items).
    """

    rule: str
    premises: tuple[Formula, ...]
    conclusion: Formula
    derived: int | None = None


@dataclass(frozen=True)
class Path:
    """One constructed proof.

    Attributes:
        steps: the whole proof in order, its last conclusion ``G``.
        own: how many of the first steps are this path's own (the rest are its parent's suffix).
        parent: index of the path this one branches from; None for a new family's chain.
        branch_from: index into the parent's ``steps`` of the step whose conclusion this path
            re-derives (the parent's steps after it are this path's suffix).
    """

    steps: tuple[Inference, ...]
    own: int
    parent: int | None = None
    branch_from: int | None = None

    @property
    def is_core(self) -> bool:
        return self.parent is None


@dataclass(frozen=True)
class Skeleton:
    """A constructed Logic DAG before ids, texts and ground truth.

    Attributes:
        goal: ``G``.
        paths: the constructed proofs, families' chains first in construction order.
        premises: the knowledge-base formulas (leaves of the paths and distractors), no duplicates.
        distractors: the subset of ``premises`` that belongs to dead-end chains only.
    """

    goal: Formula
    paths: tuple[Path, ...]
    premises: tuple[Formula, ...]
    distractors: tuple[Formula, ...] = ()


def size(formula: Formula) -> int:
    """Number of AST nodes (atoms and connectives)."""
    if isinstance(formula, Atom):
        return 1
    if isinstance(formula, Not):
        return 1 + size(formula.arg)
    return 1 + size(formula.left) + size(formula.right)


def is_literal(formula: Formula) -> bool:
    return isinstance(formula, Atom) or (isinstance(formula, Not) and isinstance(formula.arg, Atom))


class _Fresh:
    """Fresh atoms ``X1, X2, ...`` for one construction (renamed to ``A1..An`` at the end)."""

    def __init__(self, rng: random.Random, negative_p: float) -> None:
        self.rng = rng
        self.negative_p = negative_p
        self.count = 0

    def literal(self) -> Formula:
        self.count += 1
        atom = Atom(f"X{self.count}")
        return Not(atom) if self.rng.random() < self.negative_p else atom


def _form_premises(rule: str, target: Formula, fresh: _Fresh, rng: random.Random) -> tuple[Formula, ...] | None:
    """The premises of ``rule`` concluding ``target`` with fresh literals, or None if it cannot."""
    if rule == "MP":  # (p → φ), p ⊢ φ
        p = fresh.literal()
        return (Implies(p, target), p)
    if rule == "MT":  # (¬φ → q), ¬q ⊢ φ  (¬¬ removed: the dataset derives G from ¬G → A1, ¬A1)
        q = fresh.literal()
        return (Implies(negate(target), q), negate(q))
    if rule == "DS":  # (p ∨ φ), ¬p ⊢ φ, the disjuncts in either order
        p = fresh.literal()
        disjunction = Or(p, target) if rng.random() < 0.5 else Or(target, p)
        return (disjunction, negate(p))
    if rule == "HS":  # (P → q), (q → R) ⊢ (P → R)
        if not isinstance(target, Implies):
            return None
        q = fresh.literal()
        return (Implies(target.left, q), Implies(q, target.right))
    if rule == "CD":  # (p → Q), (r → S), (p ∨ r) ⊢ (Q ∨ S)
        if not isinstance(target, Or):
            return None
        p, r = fresh.literal(), fresh.literal()
        return (Implies(p, target.left), Implies(r, target.right), Or(p, r))
    if rule == "DE":  # (p ∨ r), (p → φ), (r → φ) ⊢ φ
        p, r = fresh.literal(), fresh.literal()
        return (Or(p, r), Implies(p, target), Implies(r, target))
    if rule == "RAA":  # (X → q), (X → ¬q) ⊢ ¬X, with X = ¬φ (so the conclusion is φ itself)
        x, q = negate(target), fresh.literal()
        return (Implies(x, q), Implies(x, negate(q)))
    raise ValueError(f"unknown argument form {rule!r}")


#: sampling weights of the forms; HS and CD only apply to implications and disjunctions, so
#: they get more weight to come out about as often as in the dataset (HS is its most common form).
_FORM_WEIGHTS: dict[str, float] = {"MP": 1.0, "MT": 1.0, "DS": 1.0, "HS": 3.0, "CD": 3.0, "DE": 1.0, "RAA": 1.0}


def expand(rng: random.Random, target: Formula, fresh: _Fresh, max_size: int) -> Inference:
    """One backward step: a random form that concludes ``target``, with fresh premises.

    Forms whose premises would be bigger than ``max_size`` are left out; MP and DS always fit
    when ``target`` is at most ``max_size - 3`` nodes (callers keep it so).

    Raises:
        ValueError: no form fits (``target`` itself is too big).
    """
    rules = [
        r
        for r in _FORM_WEIGHTS
        if not (r == "HS" and not isinstance(target, Implies)) and not (r == "CD" and not isinstance(target, Or))
    ]
    rng.shuffle(rules)
    weights = [_FORM_WEIGHTS[r] for r in rules]
    while rules:
        k = rng.choices(range(len(rules)), weights)[0]
        rule = rules.pop(k)
        weights.pop(k)
        saved = fresh.count
        premises = _form_premises(rule, target, fresh, rng)
        if premises is not None and max(size(p) for p in premises) <= max_size:
            return Inference(rule, premises, target)
        fresh.count = saved  # give the atoms back so numbering stays dense
    raise ValueError(f"no argument form concludes {to_unicode(target)} within {max_size} nodes")


def _chain(rng: random.Random, target: Formula, length: int, fresh: _Fresh, max_size: int) -> list[Inference]:
    """A chain of ``length`` backward steps concluding ``target``, in proof order.

    Each step expands one premise of the step above it; which one is random among those small
    enough to expand again (at most ``max_size - 4`` nodes, which every form then fits).
    """
    top_down: list[Inference] = []
    current = target
    for depth in range(length):
        step = expand(rng, current, fresh, max_size)
        expandable = [i for i, p in enumerate(step.premises) if size(p) <= max_size - 4]
        if depth == length - 1 or not expandable:  # the chain's first step: all premises are leaves
            top_down.append(step)
            break
        j = rng.choice(expandable)
        # in proof order this step comes after the one deriving premise j: it cites j as Derived
        top_down.append(replace(step, derived=j))
        current = step.premises[j]
    return list(reversed(top_down))


def _leaves(steps: Sequence[Inference]) -> list[Formula]:
    """The knowledge-base premises of some steps: every premise except the derived ones."""
    return [p for step in steps for i, p in enumerate(step.premises) if i != step.derived]


def construct(rng: random.Random, config: TierConfig, planned: int | None = None) -> Skeleton:
    """Build one Logic DAG for the tier: ``planned`` chains (drawn from the tier when None).

    The first chain concludes ``G``; each further one is, with probability
    ``config.new_family_p``, another chain to ``G`` (a new family), otherwise a branch:
    it re-derives the conclusion of a random non-final step of a random existing path with
    fresh atoms and then finishes with that path's remaining steps. Distractors are built the
    same way with one leaf left out.

    Returns:
        The skeleton, atoms still named ``X1..Xn`` (see :func:`rename_atoms`).
    """
    goal = Atom("G")
    fresh = _Fresh(rng, config.negative_literal_p)
    n = planned if planned is not None else config.planned(rng)
    paths: list[Path] = []

    def new_path(as_branch: bool) -> tuple[list[Inference], int | None, int | None]:
        """Own steps, parent index and branch point of one new path (a family chain if no branch fits)."""
        candidates = [(k, i) for k, path in enumerate(paths) for i in range(path.own) if i < len(path.steps) - 1]
        if as_branch and candidates:
            parent, at = rng.choice(candidates)
            own = _chain(
                rng,
                paths[parent].steps[at].conclusion,
                rng.randint(*config.branch_steps),
                fresh,
                config.max_formula_size,
            )
            return own, parent, at
        return _chain(rng, goal, rng.randint(*config.core_steps), fresh, config.max_formula_size), None, None

    for k in range(n):
        own, parent, at = new_path(as_branch=k > 0 and rng.random() >= config.new_family_p)
        if parent is None:
            paths.append(Path(tuple(own), len(own)))
        else:
            assert at is not None
            # the parent's steps after the re-derived one, unchanged: their first one cites the
            # re-derived conclusion as Derived, now concluded by the branch's last step
            suffix = paths[parent].steps[at + 1 :]
            paths.append(Path(tuple(own) + suffix, len(own), parent, at))

    premises: list[Formula] = []
    for path in paths:
        for leaf in _leaves(path.steps[: path.own]):
            if leaf not in premises:
                premises.append(leaf)

    distractors: list[Formula] = []
    for _ in range(config.distractors):
        own, _, _ = new_path(as_branch=rng.random() < 0.5)
        leaves = _leaves(own)
        # leave out one literal leaf of the chain's first step if it has one (a missing fact is the
        # natural dead end), else any leaf of it; the first step has no derived premise
        first = own[0].premises
        literals = [p for p in first if is_literal(p)]
        dropped = rng.choice(literals or list(first))
        for leaf in leaves:
            if leaf != dropped and leaf not in premises and leaf not in distractors:
                distractors.append(leaf)
    return Skeleton(goal, tuple(paths), tuple(premises + distractors), tuple(distractors))


def rename_atoms(skeleton: Skeleton, rng: random.Random) -> Skeleton:
    """Name the fresh atoms ``A1..An`` in a random order.

    The dataset numbers atoms in construction order (``A1`` next to ``G``), which tells a reader
    where the proofs start; a random numbering keeps that from leaking.
    """
    fresh = sorted(
        {a for f in skeleton.premises for a in atoms(f)}
        | {a for p in skeleton.paths for s in p.steps for f in s.premises for a in atoms(f)}
    )
    fresh = [a for a in fresh if a != "G"]
    numbers = list(range(1, len(fresh) + 1))
    rng.shuffle(numbers)
    names = {a: f"A{k}" for a, k in zip(fresh, numbers, strict=True)}

    def step(s: Inference) -> Inference:
        return Inference(s.rule, tuple(rename(p, names) for p in s.premises), rename(s.conclusion, names), s.derived)

    return Skeleton(
        skeleton.goal,
        tuple(Path(tuple(step(s) for s in p.steps), p.own, p.parent, p.branch_from) for p in skeleton.paths),
        tuple(rename(f, names) for f in skeleton.premises),
        tuple(rename(f, names) for f in skeleton.distractors),
    )


def premise_ids(formulas: Iterable[Formula]) -> dict[str, Formula]:
    """Knowledge-base ids as the dataset assigns them: rules (compound) then facts (literals),
    each group sorted by its ``formal`` string, numbered ``Rule1..`` / ``Fact1..``."""
    unique = list(dict.fromkeys(formulas))
    rules = sorted((f for f in unique if not is_literal(f)), key=to_unicode)
    facts = sorted((f for f in unique if is_literal(f)), key=to_unicode)
    out: dict[str, Formula] = {f"Rule{k}": f for k, f in enumerate(rules, 1)}
    out.update({f"Fact{k}": f for k, f in enumerate(facts, 1)})
    return out


def skeleton_proofs(skeleton: Skeleton, ids: Mapping[str, Formula]) -> list[Proof]:
    """The constructed paths as dataset proofs citing ``ids`` (formula -> id looked up).

    Family fields are filled from the construction (a family per chain to ``G``; a branch's
    ``branch_from`` is the index in its family's chain where it rejoins it); the ground truth
    regroups the enumerated proofs with :func:`~symbolkg.solvers.logicgraph.proof_search.families`.
    """
    by_formula = {f: i for i, f in ids.items()}
    family_of: list[int] = []
    core_index: list[int | None] = []
    proofs: list[Proof] = []
    next_family = 1
    for k, path in enumerate(skeleton.paths):
        if path.parent is None:
            family_of.append(next_family)
            core_index.append(None)
            next_family += 1
        else:
            family_of.append(family_of[path.parent])
            # the dataset's branch_from: the index of the family chain's step that the branch
            # re-derives, i.e. just before the longest common suffix of the two proofs
            chain = skeleton.paths[_root(skeleton, k)].steps
            common = 0
            while common < min(len(chain), len(path.steps)) and chain[-1 - common] == path.steps[-1 - common]:
                common += 1
            core_index.append(len(chain) - common - 1)
        steps: list[Step] = []
        for n, inference in enumerate(path.steps, 1):
            cited = tuple(
                StepPremise(DERIVED if i == inference.derived else by_formula[p], p)
                for i, p in enumerate(inference.premises)
            )
            steps.append(Step(n, inference.rule, cited, inference.conclusion))
        proofs.append(
            Proof(k + 1, tuple(steps), family_of[k], "core" if path.parent is None else "branch", core_index[k])
        )
    return proofs


def _root(skeleton: Skeleton, k: int) -> int:
    while skeleton.paths[k].parent is not None:
        k = skeleton.paths[k].parent  # type: ignore[assignment]
    return k


# ----------------------------------------------------------------------------- filters


@dataclass(frozen=True)
class FilterReport:
    """The paper's three solver filters (section 4.3) on one instance, with our own solvers.

    Attributes:
        stepwise: every step's cited premises entail its conclusion and the step is an
            application of the form it names, every cited id is a
            knowledge-base item with that formula, every ``Derived`` premise an earlier conclusion,
            and every proof ends with the goal.
        derivable: the knowledge base entails the goal and every intermediate conclusion.
        consistent: the knowledge base (all premises of all paths) is satisfiable.
        problems: one line per failure, naming the proof and step.
    """

    stepwise: bool
    derivable: bool
    consistent: bool
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.stepwise and self.derivable and self.consistent


def check_filters(premises: Mapping[str, Formula], goal: Formula, proofs: Sequence[Proof]) -> FilterReport:
    """Run the three filters on a knowledge base and its proofs.

    Stepwise entailment is checked semantically (as the paper does with Prover9) and, beyond the
    paper, syntactically: each step must be an application of the form it names
    (:func:`~symbolkg.solvers.logicgraph.proofs.matching_rules`), since the task's answers are
    judged against those seven shapes.

    Args:
        premises: knowledge-base id -> formula.
        goal: the target.
        proofs: the proofs to check step by step (the construction's or the reference).

    Returns:
        The report; ``ok`` when all three hold.
    """
    problems: list[str] = []
    stepwise = True
    conclusions: set[Formula] = set()
    for proof in proofs:
        earlier: list[Formula] = []
        for step in proof.steps:
            where = f"proof {proof.id} step {step.number}"
            for cited in step.premises:
                if cited.id == DERIVED:
                    if cited.formula not in earlier:
                        stepwise = False
                        problems.append(f"{where}: Derived {to_prover9(cited.formula)} is no earlier conclusion")
                elif premises.get(cited.id) != cited.formula:
                    stepwise = False
                    problems.append(f"{where}: {cited.id} is not {to_prover9(cited.formula)} in the knowledge base")
            cited_formulas = [c.formula for c in step.premises]
            if not entails(cited_formulas, step.conclusion):
                stepwise = False
                problems.append(f"{where}: {step.rule} premises do not entail {to_prover9(step.conclusion)}")
            elif step.rule not in matching_rules(cited_formulas, step.conclusion):
                # valid but not the named form (or not one of the seven): the task's proofs must be
                stepwise = False
                problems.append(f"{where}: the step is not an application of {step.rule}")
            earlier.append(step.conclusion)
            conclusions.add(step.conclusion)
        if not proof.steps or proof.steps[-1].conclusion != goal:
            stepwise = False
            problems.append(f"proof {proof.id}: does not end with the goal {to_prover9(goal)}")
    kb = list(premises.values())
    consistent = satisfiable(kb) is not None
    if not consistent:
        problems.append("the premises are unsatisfiable together")
    derivable = True
    for target in [goal, *sorted(conclusions - {goal}, key=to_prover9)]:
        if not entails(kb, target):
            derivable = False
            problems.append(f"the premises do not entail {to_prover9(target)}")
    return FilterReport(stepwise, derivable, consistent, tuple(problems))


# ----------------------------------------------------------------------------- generation


@dataclass(frozen=True)
class GeneratedInstance:
    """One written instance and how it was obtained.

    Attributes:
        instance: the instance (reference proofs = one per enumerated minimal support).
        record: its JSON line, the dataset's format plus ``translations``, ``verification`` and
            ``metadata.generator``.
        filters: the three filters on the reference proofs.
        attempts: constructions tried (1 = the first one was accepted).
        rejections: reason -> count over the rejected attempts.
        constructed: number of constructed paths of the accepted skeleton.
        proved: reference proofs that came from the proof search (supports the construction
            did not intend, or constructed proofs citing more than a minimal support).
        seconds: wall time of this instance.
        theme: the domain theme of its English.
        readings: atom -> its English (both polarities) and first-order atom; :func:`reword`
            replaces the English and keeps the rest.
    """

    instance: Instance
    record: dict[str, Any]
    filters: FilterReport
    attempts: int
    rejections: Mapping[str, int]
    constructed: int
    proved: int
    seconds: float
    theme: str = ""
    readings: Mapping[str, Proposition] = field(default_factory=dict)


@dataclass(frozen=True)
class _Attempt:
    instance: Instance | None
    reason: str = ""
    filters: FilterReport | None = None
    constructed: int = 0
    proved: int = 0
    theme: str = ""
    readings: Mapping[str, Proposition] = field(default_factory=dict)


def _instance_rng(tier: str, seed: int, index: int) -> random.Random:
    # a string seed is hashed with SHA-512 by random.seed: stable across runs and platforms
    return random.Random(f"logicgraph-generate:{tier}:{seed}:{index}")


def _ground_truth(
    premises: Mapping[str, Formula], goal: Formula, constructed: Sequence[Proof], budget_s: float | None
) -> tuple[list[Proof] | None, str, int]:
    """One proof per enumerated minimal support, grouped into families; (None, reason, 0) if not.

    A support's proof is the constructed one citing exactly that support when there is one (so
    branches keep the steps they share with their chain, which is what makes them a family),
    else the shortest proof :func:`~symbolkg.solvers.logicgraph.proof_search.prove` finds. Proofs go to
    :func:`~symbolkg.solvers.logicgraph.proof_search.families` in construction order (a chain before
    its branches), then are numbered as the dataset numbers them: cores first, then branches.
    """
    result = reference_supports(premises, goal, budget_s=budget_s)
    if not result.complete:
        return None, "enumeration incomplete", 0
    wanted = {frozenset(s) for s in result.supports}
    ordered: list[Proof] = []
    seen: set[frozenset[str]] = set()
    for proof in constructed:
        support = proof.premise_ids()
        if support in wanted and support not in seen:
            ordered.append(proof)
            seen.add(support)
    proved = 0
    for support in sorted(wanted - seen, key=lambda s: sorted(s)):
        proof = prove(premises, support, goal)
        if proof is None or not proof.steps:
            return None, "support without a seven-form proof", 0
        ordered.append(proof)
        proved += 1
    grouped = families(ordered)
    numbered = [f.core for f in grouped] + [b for f in grouped for b in f.branches]
    return [replace(p, id=k) for k, p in enumerate(numbered, 1)], "", proved


def _attempt(rng: random.Random, config: TierConfig, index: int, seed: int) -> _Attempt:
    skeleton = rename_atoms(construct(rng, config), rng)
    ids = premise_ids(skeleton.premises)
    constructed = skeleton_proofs(skeleton, ids)
    report = check_filters(ids, skeleton.goal, constructed)
    if not report.ok:
        return _Attempt(
            None,
            "filter: "
            + ("consistency" if not report.consistent else "stepwise" if not report.stepwise else "derivability"),
            report,
        )
    proofs, reason, proved = _ground_truth(ids, skeleton.goal, constructed, config.support_budget_s)
    if proofs is None:
        return _Attempt(None, reason)
    if not config.accepts(len(proofs)):
        return _Attempt(None, "proof count outside the tier")
    report = check_filters(ids, skeleton.goal, proofs)
    if not report.ok:
        return _Attempt(None, "filter on the reference proofs", report)

    theme = rng.choice(sorted(THEMES))
    names = sorted({a for f in ids.values() for a in atoms(f)} - {"G"}, key=lambda a: int(a[1:]))
    readings = dict(zip(["G", *names], propositions(rng, theme, len(names) + 1), strict=True))
    instance = _worded(f"{config.label}/gen_s{seed}_{index + 1}", ids, skeleton.goal, proofs, readings)
    generator = {
        "tier": config.name,
        "seed": seed,
        "index": index,
        "constructed_paths": len(skeleton.paths),
        "proofs_from_search": proved,
        "text": "template",
    }
    record = _record(instance, readings, theme, report, generator)
    return _Attempt(Instance.from_record(record), "", report, len(skeleton.paths), proved, theme, readings)


def _worded(
    iid: str, ids: Mapping[str, Formula], goal: Formula, proofs: Sequence[Proof], readings: Mapping[str, Proposition]
) -> Instance:
    """The instance with every English text (premises, step conclusions, goal) from ``readings``."""
    kb = {i: Premise(i, f, verbalize(f, readings), to_prover9(instantiate(f, readings))) for i, f in ids.items()}
    texts = [
        replace(p, steps=tuple(replace(s, natural=verbalize(s.conclusion, readings)) for s in p.steps)) for p in proofs
    ]
    return Instance(iid, kb, goal, verbalize(goal, readings), tuple(texts))


def _record(
    instance: Instance,
    readings: Mapping[str, Proposition],
    theme: str,
    report: FilterReport,
    generator: Mapping[str, Any],
) -> dict[str, Any]:
    """The dataset's record plus what the dataset also carries and ``to_record`` leaves out."""
    record = instance.to_record()
    # Proof.to_json writes a cited premise's id and prover9 only; the dataset also has its
    # instantiated expression and English
    for proof, raw_proof in zip(instance.proofs, record["solutions"]["solutions"], strict=True):
        for step, raw_step in zip(proof.steps, raw_proof["steps"], strict=True):
            for cited, raw in zip(step.premises, raw_step["premises_used"], strict=True):
                raw["prover9_expression"] = to_prover9(instantiate(cited.formula, readings))
                raw["natural"] = verbalize(cited.formula, readings)
    record["target"]["prover9_expression"] = to_prover9(instantiate(instance.goal, readings))
    record["translations"] = {
        "domain_theme": theme,
        "atomic_facts": {name: r.prover9 for name, r in readings.items()},
        "natural_facts": {name: r.positive[0].upper() + r.positive[1:] for name, r in readings.items()},
    }
    n = len(instance.proofs)
    record["verification"] = {
        "total_solutions": n,
        "valid_solutions": n if report.stepwise else 0,
        "invalid_solutions": 0 if report.stepwise else n,
        "solutions_reaching_target": sum(
            1 for p in instance.proofs if p.steps and p.steps[-1].conclusion == instance.goal
        ),
    }
    record["metadata"]["generator"] = dict(generator)
    return record


def generate_instance(
    tier: str | TierConfig, seed: int, index: int, *, text: TextMode = "template"
) -> GeneratedInstance:
    """Instance ``index`` of a tier at a seed (independent of every other index).

    Args:
        tier: a name in :data:`TIERS` or a custom :class:`TierConfig`.
        seed: the run's seed.
        index: 0-based position in the run; the record id is ``<Tier>/gen_s<seed>_<index + 1>``.
        text: ``"template"``; English from an LLM is a second pass (:func:`reword`), run by
            ``symbolkg logicgraph generate --text llm``.

    Raises:
        GenerationError: ``config.max_attempts`` constructions were all rejected.
        ValueError: an unknown tier or text mode.
    """
    config = _config(tier)
    if text != "template":
        raise ValueError(
            f"text={text!r}: instances are worded from templates; an LLM's wording is a second "
            "pass over them (readings_request, parse_readings, reword)"
        )
    rng = _instance_rng(config.name, seed, index)
    t0 = time.perf_counter()
    rejections: dict[str, int] = {}
    for attempt in range(1, config.max_attempts + 1):
        result = _attempt(rng, config, index, seed)
        if result.instance is not None:
            assert result.filters is not None
            record = dict(result.instance.record)
            return GeneratedInstance(
                result.instance,
                record,
                result.filters,
                attempt,
                rejections,
                result.constructed,
                result.proved,
                time.perf_counter() - t0,
                result.theme,
                result.readings,
            )
        rejections[result.reason] = rejections.get(result.reason, 0) + 1
    raise GenerationError(
        f"{config.name} seed={seed} index={index}: {config.max_attempts} attempts rejected: {rejections}"
    )


def generate(
    tier: str | TierConfig, count: int, seed: int, *, start: int = 0, text: TextMode = "template"
) -> Iterator[GeneratedInstance]:
    """Instances ``start .. start + count - 1`` of a tier at a seed, in order."""
    if count < 0 or start < 0:
        raise ValueError(f"count={count}, start={start}: both must be >= 0")
    config = _config(tier)
    for index in range(start, start + count):
        yield generate_instance(config, seed, index, text=text)


def _config(tier: str | TierConfig) -> TierConfig:
    if isinstance(tier, TierConfig):
        return tier
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; choose one of {', '.join(TIERS)}")
    return TIERS[tier]


# ----------------------------------------------------------------------------- statistics


def _summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"min": 0, "max": 0, "mean": 0.0}
    return {"min": min(values), "max": max(values), "mean": round(statistics.fmean(values), 2)}


def tier_statistics(instances: Iterable[Instance]) -> dict[str, Any]:
    """Per-tier numbers comparable with the dataset's (same function for both).

    Returns:
        ``instances``; per instance ``solutions``, ``families``, ``premises``, ``facts``, ``atoms``
        and per proof ``steps`` as ``{min, max, mean}``; ``core``/``branch`` proof totals; and
        ``rules``: how often each form is applied over all reference steps.
    """
    solutions: list[int] = []
    steps: list[int] = []
    families: list[int] = []
    premises: list[int] = []
    facts: list[int] = []
    atom_counts: list[int] = []
    core = branch = 0
    rules: dict[str, int] = {}
    n = 0
    for instance in instances:
        n += 1
        solutions.append(len(instance.proofs))
        families.append(len(instance.families()))
        premises.append(len(instance.premises))
        facts.append(sum(p.is_fact for p in instance.premises.values()))
        atom_counts.append(len(instance.atoms()))
        for proof in instance.proofs:
            steps.append(len(proof.steps))
            core += proof.path_type == "core"
            branch += proof.path_type == "branch"
            for step in proof.steps:
                rules[step.rule] = rules.get(step.rule, 0) + 1
    return {
        "instances": n,
        "solutions": _summary(solutions),
        "steps": _summary(steps),
        "families": _summary(families),
        "premises": _summary(premises),
        "facts": _summary(facts),
        "atoms": _summary(atom_counts),
        "core": core,
        "branch": branch,
        "rules": dict(sorted(rules.items(), key=lambda kv: -kv[1])),
    }


# ----------------------------------------------------------------------------- English from an LLM


def reword(
    generated: GeneratedInstance,
    readings: Mapping[str, Proposition],
    *,
    text: str = "llm",
    problems: Sequence[str] = (),
) -> GeneratedInstance:
    """The same instance with its English rebuilt from ``readings`` (logic and proofs unchanged).

    Args:
        generated: a template-worded instance.
        readings: atom -> reading for every atom (see :func:`parse_readings`).
        text: recorded in ``metadata.generator.text``.
        problems: the readings' problems, recorded in ``metadata.generator.text_problems``.
    """
    inst = generated.instance
    ids = {pid: p.formula for pid, p in inst.premises.items()}
    instance = _worded(inst.id, ids, inst.goal, inst.proofs, readings)
    generator = {**generated.record["metadata"]["generator"], "text": text, "text_problems": list(problems)}
    record = _record(instance, readings, generated.theme, generated.filters, generator)
    return replace(generated, instance=Instance.from_record(record), record=record, readings=dict(readings))
