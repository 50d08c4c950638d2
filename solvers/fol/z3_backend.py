"""The Logic-LM FOL language decided by Z3 (language ``logiclm-fol-z3``), and small finite models.

The program text is the ``logiclm-fol`` language (:mod:`symbolkg.solvers.fol.language`, same parser);
only the prover differs. It exists for two reasons:

* ``symbolkg solve --cross-check`` runs every ``logiclm-fol`` program through it as a second
  opinion on Prover9's answer (:mod:`symbolkg.jobs.pipeline.solve`);
* the entailment certificate checker (:mod:`symbolkg.solvers.certificates.entailment`) re-proves
  Prover9's answers with :func:`satisfiable` here, and Prover9's "Unknown" answers carry countermodels
  found by :func:`find_model` (Prover9's wheel ships no Mace4).

Translation: one uninterpreted sort ``U`` for individuals; a predicate is a function
``U^k -> Bool``, a function symbol ``U^k -> U``, a constant a ``U`` constant; ``⊕`` is ``Xor``;
quantifiers become Z3 quantifiers. No unique-name assumption: two constants may denote the same
individual, as in Prover9.

Decision (:func:`decide`), each check inside the call's deadline:

==================================================  ======================
premises ∧ ¬goal unsat                              PROVED, ``"True"``
                                                    (also when the premises
                                                    alone are inconsistent,
                                                    as the Prover9 path does)
premises ∧ goal unsat                               DISPROVED, ``"False"``
both satisfiable                                    UNKNOWN, ``"Unknown"``
a side Z3 cannot decide (``unknown``/time limit)    TIMEOUT, with Z3's reason
==================================================  ======================

A side Z3 answers ``unknown`` for (incomplete quantifier instantiation) is retried as a search
for a finite model (:func:`find_model`): a finite model found is a model, so that side is
satisfiable. Z3 objects live in a fresh :class:`z3.Context` per call (Z3 contexts are not
thread-safe, and nothing carries over between programs run by one worker).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, replace
from typing import Any
from collections.abc import Iterable, Sequence

import z3

from symbolkg.solvers.fol import language as fol
from symbolkg.solvers.fol.language import Atom, Binary, Connective, Const, Equals, Formula, Func, Not, Quantified, Quantifier, Term, Var
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

BACKEND = "z3"

#: Largest domain :func:`find_model` tries (models of FOLIO programs need 1-3 individuals).
MAX_MODEL_SIZE = 6

#: Most ground formula instances :func:`find_model` builds for one domain size (bounds its memory).
MAX_GROUND_INSTANCES = 200_000

parse = fol.parse


# --------------------------------------------------------------------------- signature


@dataclass
class Signature:
    """The non-logical symbols of some formulas: name -> arity (constants have none)."""

    predicates: dict[str, int] = field(default_factory=dict)
    functions: dict[str, int] = field(default_factory=dict)
    constants: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, formulas: Iterable[Formula]) -> Signature:
        sig = cls()
        for f in formulas:
            sig._formula(f)
        return sig

    def _formula(self, f: Formula) -> None:
        stack: list[Any] = [f]
        while stack:
            node = stack.pop()
            if isinstance(node, Atom):
                self.predicates.setdefault(node.predicate, len(node.args))
                stack.extend(node.args)
            elif isinstance(node, Func):
                self.functions.setdefault(node.name, len(node.args))
                stack.extend(node.args)
            elif isinstance(node, Const):
                self.constants.add(node.name)
            elif isinstance(node, Equals):
                stack.extend((node.left, node.right))
            elif isinstance(node, (Not, Quantified)):
                stack.append(node.body)
            elif isinstance(node, Binary):
                stack.extend((node.left, node.right))


# --------------------------------------------------------------------------- translation


class _Builder:
    """Z3 terms for FOL formulas over one sort, in one context.

    With ``elements`` (a finite domain) quantifiers are expanded into conjunctions and
    disjunctions over the elements (a ground, decidable problem); without, they become Z3
    quantifiers over the uninterpreted sort.
    """

    def __init__(self, ctx: z3.Context, sort: z3.SortRef, elements: Sequence[z3.ExprRef] | None = None) -> None:
        self.ctx = ctx
        self.sort = sort
        self.elements = elements
        self.preds: dict[str, z3.FuncDeclRef | z3.BoolRef] = {}
        self.funcs: dict[str, z3.FuncDeclRef] = {}
        self.consts: dict[str, z3.ExprRef] = {}
        self._fresh = itertools.count()

    def predicate(self, name: str, arity: int) -> z3.FuncDeclRef | z3.BoolRef:
        if name not in self.preds:
            self.preds[name] = (z3.Bool(f"P_{name}", self.ctx) if arity == 0
                                else z3.Function(f"P_{name}", *([self.sort] * arity), z3.BoolSort(self.ctx)))
        return self.preds[name]

    def function(self, name: str, arity: int) -> z3.FuncDeclRef:
        if name not in self.funcs:
            self.funcs[name] = z3.Function(f"F_{name}", *([self.sort] * (arity + 1)))
        return self.funcs[name]

    def constant(self, name: str) -> z3.ExprRef:
        if name not in self.consts:
            self.consts[name] = z3.Const(f"C_{name}", self.sort)
        return self.consts[name]

    def term(self, t: Term, env: dict[str, z3.ExprRef]) -> z3.ExprRef:
        if isinstance(t, Var):
            return env[t.name]
        if isinstance(t, Const):
            return self.constant(t.name)
        return self.function(t.name, len(t.args))(*[self.term(a, env) for a in t.args])

    def formula(self, f: Formula, env: dict[str, z3.ExprRef] | None = None) -> z3.BoolRef:
        env = env or {}
        if isinstance(f, Atom):
            p = self.predicate(f.predicate, len(f.args))
            return p if not f.args else p(*[self.term(a, env) for a in f.args])  # type: ignore[operator]
        if isinstance(f, Equals):
            return self.term(f.left, env) == self.term(f.right, env)
        if isinstance(f, Not):
            return z3.Not(self.formula(f.body, env), self.ctx)
        if isinstance(f, Quantified):
            if self.elements is not None:
                parts = [self.formula(f.body, {**env, f.var: e}) for e in self.elements]
                return z3.And(parts) if f.quantifier is Quantifier.FORALL else z3.Or(parts)
            x = z3.Const(f"{f.var}!{next(self._fresh)}", self.sort)
            body = self.formula(f.body, {**env, f.var: x})
            return z3.ForAll([x], body) if f.quantifier is Quantifier.FORALL else z3.Exists([x], body)
        left, right = self.formula(f.left, env), self.formula(f.right, env)
        if f.op is Connective.AND:
            return z3.And(left, right)
        if f.op is Connective.OR:
            return z3.Or(left, right)
        if f.op is Connective.XOR:
            return z3.Xor(left, right)
        if f.op is Connective.IMPLIES:
            return z3.Implies(left, right)
        return left == right


# --------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class Check:
    """One satisfiability check: ``result`` is ``sat``, ``unsat`` or ``unknown`` (with Z3's reason)."""

    result: str
    reason: str = ""
    seconds: float = 0.0


def _remaining_ms(deadline: float) -> int:
    return max(1, int((deadline - time.perf_counter()) * 1000))


def satisfiable(formulas: Sequence[Formula], timeout_s: float) -> Check:
    """Is the conjunction of ``formulas`` satisfiable? Z3 with quantifiers over an uninterpreted sort.

    ``sat`` and ``unsat`` are definite; ``unknown`` carries Z3's reason (``timeout``,
    ``canceled``, ``(incomplete quantifiers)``, ...).
    """
    t0 = time.perf_counter()
    ctx = z3.Context()
    builder = _Builder(ctx, z3.DeclareSort("U", ctx))
    solver = z3.Solver(ctx=ctx)
    solver.set("timeout", max(1, int(timeout_s * 1000)))
    for f in formulas:
        solver.add(builder.formula(f))
    result = solver.check()
    reason = solver.reason_unknown() if result == z3.unknown else ""
    return Check(str(result), reason, time.perf_counter() - t0)


# --------------------------------------------------------------------------- finite models


@dataclass(frozen=True)
class Interpretation:
    """A finite model: individuals ``0 .. domain_size-1``.

    Attributes:
        domain_size: number of individuals.
        constants: constant -> individual.
        predicates: predicate -> the tuples it is true of (``[()]``/``[]`` for a true/false proposition).
        functions: function -> ((argument tuple, value), ...) for every argument tuple.
    """

    domain_size: int
    constants: dict[str, int]
    predicates: dict[str, tuple[tuple[int, ...], ...]]
    functions: dict[str, tuple[tuple[tuple[int, ...], int], ...]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON form (lists instead of tuples; keys sorted by the JSON writer)."""
        return {
            "domain_size": self.domain_size,
            "constants": dict(self.constants),
            "predicates": {p: [list(t) for t in ts] for p, ts in self.predicates.items()},
            "functions": {f: [[list(args), v] for args, v in table] for f, table in self.functions.items()},
        }


@dataclass(frozen=True)
class ModelSearch:
    """The result of :func:`find_model`: a model, or why there is none (searched sizes, Z3's reason)."""

    model: Interpretation | None
    reason: str = ""
    seconds: float = 0.0


def ground_size(formulas: Sequence[Formula], n: int) -> int:
    """Instances the grounding of ``formulas`` over ``n`` individuals builds (nodes times n^depth)."""
    total = 0
    for f in formulas:
        stack: list[tuple[Any, int]] = [(f, 1)]
        while stack:
            node, mult = stack.pop()
            total += mult
            if isinstance(node, Quantified):
                stack.append((node.body, mult * n))
            elif isinstance(node, Not):
                stack.append((node.body, mult))
            elif isinstance(node, Binary):
                stack.extend(((node.left, mult), (node.right, mult)))
    return total


def find_model(formulas: Sequence[Formula], timeout_s: float, *, max_size: int = MAX_MODEL_SIZE) -> ModelSearch:
    """The smallest finite model of ``formulas`` with at most ``max_size`` individuals, if any.

    For each size ``n = 1, 2, ...`` the quantifiers are expanded over ``n`` individuals (an
    enumeration sort) and the ground problem goes to Z3; the first satisfiable size gives the
    model, read back as an :class:`Interpretation` over every symbol of ``formulas``.

    Returns:
        A :class:`ModelSearch`; ``model`` is None when no size up to ``max_size`` has one
        (the formulas may still have larger or infinite models), when the grounding would be too
        large, or when ``timeout_s`` ran out; ``reason`` says which.
    """
    t0 = time.perf_counter()
    deadline = t0 + timeout_s
    sig = Signature.of(formulas)
    ctx = z3.Context()
    for n in range(1, max_size + 1):
        if time.perf_counter() >= deadline:
            return ModelSearch(None, f"no model with at most {n - 1} individuals within {timeout_s:g} s", time.perf_counter() - t0)
        if ground_size(formulas, n) > MAX_GROUND_INSTANCES:
            return ModelSearch(None, f"no model with at most {n - 1} individuals; the grounding over {n} is too large",
                               time.perf_counter() - t0)
        sort, elements = z3.EnumSort(f"D{n}", [f"d{n}_{i}" for i in range(n)], ctx)
        builder = _Builder(ctx, sort, elements)
        solver = z3.Solver(ctx=ctx)
        solver.set("timeout", _remaining_ms(deadline))
        for f in formulas:
            solver.add(builder.formula(f))
        result = solver.check()
        if result == z3.unsat:
            continue
        if result == z3.unknown:
            return ModelSearch(None, f"Z3 could not decide size {n}: {solver.reason_unknown()}", time.perf_counter() - t0)
        model = _read_model(solver.model(), builder, sig, elements)
        return ModelSearch(model, "", time.perf_counter() - t0)
    return ModelSearch(None, f"no model with at most {max_size} individuals", time.perf_counter() - t0)


def _read_model(model: z3.ModelRef, builder: _Builder, sig: Signature, elements: Sequence[z3.ExprRef]) -> Interpretation:
    index = {str(e): i for i, e in enumerate(elements)}
    n = len(elements)

    def value(expr: z3.ExprRef) -> int:
        return index[str(model.eval(expr, model_completion=True))]

    constants = {c: value(builder.constant(c)) for c in sorted(sig.constants)}
    predicates: dict[str, tuple[tuple[int, ...], ...]] = {}
    for name, arity in sorted(sig.predicates.items()):
        p = builder.predicate(name, arity)
        true: list[tuple[int, ...]] = []
        for args in itertools.product(range(n), repeat=arity):
            atom = p if arity == 0 else p(*[elements[i] for i in args])  # type: ignore[operator]
            if z3.is_true(model.eval(atom, model_completion=True)):
                true.append(args)
        predicates[name] = tuple(true)
    functions: dict[str, tuple[tuple[tuple[int, ...], int], ...]] = {}
    for name, arity in sorted(sig.functions.items()):
        fn = builder.function(name, arity)
        functions[name] = tuple((args, value(fn(*[elements[i] for i in args]))) for args in itertools.product(range(n), repeat=arity))
    return Interpretation(n, constants, predicates, functions)


# --------------------------------------------------------------------------- decide


def _side(formulas: Sequence[Formula], deadline: float, share: float) -> Check:
    """One side of the decision: Z3 with quantifiers, then a finite-model search if it says unknown."""
    budget = max(0.001, (deadline - time.perf_counter()) * share)
    check = satisfiable(formulas, budget)
    if check.result != "unknown" or time.perf_counter() >= deadline:
        return check
    search = find_model(formulas, max(0.001, deadline - time.perf_counter()) * share)
    if search.model is not None:
        return Check("sat", "finite model", check.seconds + search.seconds)
    return Check("unknown", f"{check.reason}; {search.reason}", check.seconds + search.seconds)


def decide(program: fol.FolProgram, limits: Limits) -> Outcome:
    """Three-valued entailment of the program's conclusion by Z3 (module docstring)."""
    deadline = time.perf_counter() + limits.timeout_s
    premises = [p.formula for p in program.premises]
    goal = program.conclusion.formula
    not_goal = _side([*premises, Not(goal)], deadline, 0.5)
    if not_goal.result == "unsat":
        return Outcome(Status.PROVED, answer="True", proof="Z3: premises ∧ ¬goal is unsatisfiable", backend=BACKEND)
    with_goal = _side([*premises, goal], deadline, 1.0)
    if with_goal.result == "unsat":
        return Outcome(Status.DISPROVED, answer="False", proof="Z3: premises ∧ goal is unsatisfiable", backend=BACKEND)
    if not_goal.result == "sat" and with_goal.result == "sat":
        return Outcome(Status.UNKNOWN, answer="Unknown", proof="Z3: premises ∧ goal and premises ∧ ¬goal are both satisfiable",
                       backend=BACKEND)
    undecided = [name for name, c in (("premises ∧ ¬goal", not_goal), ("premises ∧ goal", with_goal)) if c.result == "unknown"]
    reasons = "; ".join(f"{name}: {c.reason}" for name, c in (("premises ∧ ¬goal", not_goal), ("premises ∧ goal", with_goal))
                        if c.result == "unknown")
    return Outcome.error(Status.TIMEOUT, ErrorKind.TIMEOUT,
                         f"Z3 could not decide {' and '.join(undecided)} within {limits.timeout_s:g} s ({reasons})",
                         backend=BACKEND)


def solve(text: str, limits: Limits) -> Outcome:
    """Parse a FOLIO program (the ``logiclm-fol`` language) and decide its conclusion with Z3.

    Returns the same statuses and answers as :func:`symbolkg.solvers.fol.language.solve`, with backend
    ``"z3"``; never raises for a bad program.
    """
    with Stopwatch() as sw:
        try:
            program = fol.parse(text)
        except ProgramError as err:
            return err.to_outcome(seconds=sw.elapsed(), backend=BACKEND)
        outcome = fol.decide_readings(
            program, lambda goal, lim, _full: decide(replace(program, conclusion=replace(program.conclusion, formula=goal)), lim),
            limits, backend=BACKEND)
    return replace(outcome, seconds=sw.seconds)
