"""Our FOL syntax tree in Z3: satisfiability, and small finite models (an independent evaluator).

Used by three parts that must not depend on each other: the ``logiclm-fol-z3`` engine
(:mod:`symbolkg.solvers.fol.z3_engine`), the entailment certificate checker
(:mod:`symbolkg.solvers.certificates.entailment`, which re-proves Prover9's answers with
:func:`satisfiable`), and the Prover9 backend, whose "Unknown" answers carry countermodels found by
:func:`find_model` (:func:`symbolkg.solvers.fol.prover9.with_countermodels`; Prover9's wheel ships no
Mace4). It imports only the syntax tree (:mod:`symbolkg.solvers.fol.syntax`), never a prover.

Translation: one uninterpreted sort ``U`` for individuals; a predicate is a function
``U^k -> Bool``, a function symbol ``U^k -> U``, a constant a ``U`` constant; ``⊕`` is ``Xor``;
quantifiers become Z3 quantifiers. No unique-name assumption: two constants may denote the same
individual, as in Prover9. Z3 objects live in the calling thread's :class:`Session` (a
:class:`z3.Context` per thread: contexts are not thread-safe, and making one costs about as much as
a whole small check). Nothing a check means carries over between calls: every call has a fresh
solver, and the symbols it declares are the program's own (a name's declaration is the same in
every call that uses it with the same arity). A session is replaced after
:data:`SESSION_MAX_USES` calls and after an interrupt.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from symbolkg.solvers.fol.syntax import (
    Atom,
    Binary,
    Connective,
    Const,
    Equals,
    Formula,
    Func,
    Not,
    Quantified,
    Quantifier,
    Term,
    Var,
)

#: Largest domain :func:`find_model` tries (models of FOLIO programs need 1-3 individuals).
MAX_MODEL_SIZE = 6

#: Most ground formula instances :func:`find_model` builds for one domain size (bounds its memory).
MAX_GROUND_INSTANCES = 200_000

#: Calls one thread's :class:`Session` serves before it is replaced (bounds what a context keeps).
SESSION_MAX_USES = 1_000

#: Z3 resource units (its ``rlimit``, a count of solver work, not of time) one check of
#: :func:`find_models` may use: the deterministic budget that makes a model search end the same
#: way on a fast and on a loaded machine; the wall-clock ``timeout_s`` stays a safety net. The
#: largest check of the model searches over every recorded FOLIO program of three models (2,729
#: checks, sizes 1-6) used 23,012 units; a million is about 0.2 s of one core here.
MODEL_CHECK_RLIMIT = 1_000_000


# --------------------------------------------------------------------------- sessions


class Session:
    """A Z3 context and the sorts built in it, reused by the calls of one thread (:func:`session`).

    :meth:`interrupt` may be called from another thread: it stops the check running in this
    session (Z3 answers ``unknown``, reason ``canceled``) and retires the session.
    """

    def __init__(self) -> None:
        self.ctx = z3.Context()
        self.uses = 0
        self.interrupted = False
        self._universe: z3.SortRef | None = None
        self._domains: dict[int, tuple[z3.SortRef, list[z3.ExprRef]]] = {}

    def universe(self) -> z3.SortRef:
        """The uninterpreted sort of individuals."""
        if self._universe is None:
            self._universe = z3.DeclareSort("U", self.ctx)
        return self._universe

    def domain(self, n: int) -> tuple[z3.SortRef, list[z3.ExprRef]]:
        """The finite sort of ``n`` individuals and its elements (an enumeration sort, made once)."""
        if n not in self._domains:
            sort, elements = z3.EnumSort(f"D{n}", [f"d{n}_{i}" for i in range(n)], self.ctx)
            self._domains[n] = (sort, list(elements))
        return self._domains[n]

    def interrupt(self) -> None:
        """Stop the check running in this session (thread-safe); the session is not used again."""
        self.interrupted = True
        self.ctx.interrupt()


_LOCAL = threading.local()


def session() -> Session:
    """The calling thread's session: made on first use, replaced when worn out or interrupted."""
    current: Session | None = getattr(_LOCAL, "session", None)
    if current is None or current.interrupted or current.uses >= SESSION_MAX_USES:
        current = _LOCAL.session = Session()
    current.uses += 1
    return current


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
        self._atoms: dict[tuple, z3.BoolRef] = {}
        self._fresh = itertools.count()

    def predicate(self, name: str, arity: int) -> z3.FuncDeclRef | z3.BoolRef:
        if name not in self.preds:
            self.preds[name] = (
                z3.Bool(f"P_{name}", self.ctx)
                if arity == 0
                else z3.Function(f"P_{name}", *([self.sort] * arity), z3.BoolSort(self.ctx))
            )
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

    def atom(self, f: Atom, env: dict[str, z3.ExprRef]) -> z3.BoolRef:
        """``P(t1, ..., tk)``; made once per predicate and argument terms (a grounding repeats atoms)."""
        p = self.predicate(f.predicate, len(f.args))
        if not f.args:
            return p  # type: ignore[return-value]
        args = [self.term(a, env) for a in f.args]
        key = (f.predicate, *(a.get_id() for a in args))
        made = self._atoms.get(key)
        if made is None:
            made = self._atoms[key] = _app(self.ctx, p, args)  # type: ignore[arg-type]
        return made

    def formula(self, f: Formula, env: dict[str, z3.ExprRef] | None = None) -> z3.BoolRef:
        env = env or {}
        if isinstance(f, Atom):
            return self.atom(f, env)
        if isinstance(f, Equals):
            return self.term(f.left, env) == self.term(f.right, env)
        if isinstance(f, Not):
            return _bool(self.ctx, z3.Z3_mk_not(self.ctx.ref(), self.formula(f.body, env).as_ast()))
        if isinstance(f, Quantified):
            if self.elements is not None:
                parts = [self.formula(f.body, {**env, f.var: e}) for e in self.elements]
                return _nary(self.ctx, z3.Z3_mk_and if f.quantifier is Quantifier.FORALL else z3.Z3_mk_or, parts)
            x = z3.Const(f"{f.var}!{next(self._fresh)}", self.sort)
            body = self.formula(f.body, {**env, f.var: x})
            return z3.ForAll([x], body) if f.quantifier is Quantifier.FORALL else z3.Exists([x], body)
        left, right = self.formula(f.left, env), self.formula(f.right, env)
        if f.op is Connective.AND:
            return _nary(self.ctx, z3.Z3_mk_and, [left, right])
        if f.op is Connective.OR:
            return _nary(self.ctx, z3.Z3_mk_or, [left, right])
        make = {Connective.XOR: z3.Z3_mk_xor, Connective.IMPLIES: z3.Z3_mk_implies}.get(f.op, z3.Z3_mk_eq)
        return _bool(self.ctx, make(self.ctx.ref(), left.as_ast(), right.as_ast()))


# The Z3 C API directly for the connectives and applications a grounding makes by the thousand: the
# Python wrappers re-check sorts on every call, which costs more than Z3's own work on FOLIO programs.


def _bool(ctx: z3.Context, ast: Any) -> z3.BoolRef:
    return z3.BoolRef(ast, ctx)


def _nary(ctx: z3.Context, make: Any, parts: Sequence[z3.BoolRef]) -> z3.BoolRef:
    array = (z3.Ast * len(parts))(*(p.as_ast() for p in parts))
    return _bool(ctx, make(ctx.ref(), len(parts), array))


def _app(ctx: z3.Context, decl: z3.FuncDeclRef, args: Sequence[z3.ExprRef]) -> z3.BoolRef:
    array = (z3.Ast * len(args))(*(a.as_ast() for a in args))
    return _bool(ctx, z3.Z3_mk_app(ctx.ref(), decl.ast, len(args), array))


# --------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class Check:
    """One satisfiability check: ``result`` is ``sat``, ``unsat`` or ``unknown`` (with Z3's reason)."""

    result: str
    reason: str = ""
    seconds: float = 0.0


def _remaining_ms(deadline: float) -> int:
    return max(1, int((deadline - time.perf_counter()) * 1000))


def satisfiable(formulas: Sequence[Formula], timeout_s: float, *, within: Session | None = None) -> Check:
    """Is the conjunction of ``formulas`` satisfiable? Z3 with quantifiers over an uninterpreted sort.

    ``sat`` and ``unsat`` are definite; ``unknown`` carries Z3's reason (``timeout``,
    ``canceled``, ``(incomplete quantifiers)``, ...). ``within``: the session to use (default:
    the calling thread's).
    """
    t0 = time.perf_counter()
    sess = within or session()
    ctx = sess.ctx
    builder = _Builder(ctx, sess.universe())
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


def find_model(
    formulas: Sequence[Formula],
    timeout_s: float,
    *,
    max_size: int = MAX_MODEL_SIZE,
    within: Session | None = None,
    rlimit: int = MODEL_CHECK_RLIMIT,
) -> ModelSearch:
    """The smallest finite model of ``formulas`` with at most ``max_size`` individuals, if any.

    For each size ``n = 1, 2, ...`` the quantifiers are expanded over ``n`` individuals (an
    enumeration sort) and the ground problem goes to Z3; the first satisfiable size gives the
    model, read back as an :class:`Interpretation` over every symbol of ``formulas``.

    Returns:
        A :class:`ModelSearch`; ``model`` is None when no size up to ``max_size`` has one
        (the formulas may still have larger or infinite models), when the grounding would be too
        large, or when ``timeout_s`` ran out; ``reason`` says which.
    """
    return find_models(formulas, {"model": None}, timeout_s, max_size=max_size, within=within, rlimit=rlimit)["model"]


def find_models(
    base: Sequence[Formula],
    extras: dict[str, Formula | None],
    timeout_s: float,
    *,
    max_size: int = MAX_MODEL_SIZE,
    within: Session | None = None,
    rlimit: int = MODEL_CHECK_RLIMIT,
) -> dict[str, ModelSearch]:
    """For each extra formula, the smallest finite model of ``base`` ∧ that formula (None: ``base`` alone).

    One search for all of them: the grounding of ``base`` over ``n`` individuals is built once per
    size and each extra is checked as an assumption (``premises`` with ``¬goal`` and with ``goal``
    cost about one grounding instead of two). Each extra's :class:`ModelSearch` is what
    :func:`find_model` would return for ``[*base, extra]``. What is found depends only on the
    formulas, ``max_size`` and ``rlimit`` (Z3 resource units per check, :data:`MODEL_CHECK_RLIMIT`),
    not on the machine's speed; ``timeout_s`` bounds the whole call as a safety net.
    """
    t0 = time.perf_counter()
    deadline = t0 + timeout_s
    sess = within or session()
    sig = Signature.of([*base, *(f for f in extras.values() if f is not None)])
    found: dict[str, ModelSearch] = {}

    def stop_all(reason: str) -> dict[str, ModelSearch]:
        return {name: found.get(name) or ModelSearch(None, reason, time.perf_counter() - t0) for name in extras}

    for n in range(1, max_size + 1):
        if time.perf_counter() >= deadline:
            return stop_all(f"no model with at most {n - 1} individuals within {timeout_s:g} s")
        largest = max((ground_size([*base, f] if f is not None else base, n) for f in extras.values()), default=0)
        if largest > MAX_GROUND_INSTANCES:
            return stop_all(f"no model with at most {n - 1} individuals; the grounding over {n} is too large")
        sort, elements = sess.domain(n)
        builder = _Builder(sess.ctx, sort, elements)
        solver = z3.Solver(ctx=sess.ctx)
        for f in base:
            solver.add(builder.formula(f))
        for k, (name, extra) in enumerate(extras.items()):
            if name in found:
                continue
            assumptions = []
            if extra is not None:  # a fresh literal stands for the extra formula: Z3 assumes literals
                literal = z3.Bool(f"symbolkg_extra!{k}", sess.ctx)
                solver.add(z3.Implies(literal, builder.formula(extra)))
                assumptions.append(literal)
            if sess.interrupted:
                return stop_all("interrupted")
            solver.set("rlimit", rlimit)
            solver.set("timeout", _remaining_ms(deadline))
            result = solver.check(*assumptions)
            if result == z3.sat:
                found[name] = ModelSearch(
                    _read_model(solver.model(), builder, sig, elements), "", time.perf_counter() - t0
                )
            elif result == z3.unknown:
                found[name] = ModelSearch(
                    None, f"Z3 could not decide size {n}: {solver.reason_unknown()}", time.perf_counter() - t0
                )
        if len(found) == len(extras):
            return {name: found[name] for name in extras}
    return stop_all(f"no model with at most {max_size} individuals")


def _read_model(
    model: z3.ModelRef, builder: _Builder, sig: Signature, elements: Sequence[z3.ExprRef]
) -> Interpretation:
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
        functions[name] = tuple(
            (args, value(fn(*[elements[i] for i in args]))) for args in itertools.product(range(n), repeat=arity)
        )
    return Interpretation(n, constants, predicates, functions)
