"""A bottom-up evaluator of SymBa programs: the model a certificate checker decides atoms on.

Independent of the top-down prover (:mod:`symbolkg.solvers.symba.engine`): it shares only the
syntax and the arithmetic (:mod:`.arith_eval`). Used by
:mod:`symbolkg.solvers.certificates.symba_tree` to decide negation leaves, closed-world ``False``
answers and the program's denials.

The model: naive bottom-up evaluation (the least fixpoint, every rule applied to the whole
model until a round adds nothing), over the predicates the decided atoms depend on, set by set
in dependency order (strongly connected sets of predicates, so that a ``not`` reads completed
predicates). A set with a ``not`` inside it (``is(a, big) :- not is(a, red).``, stratified atom
by atom but not predicate by predicate) is evaluated by the alternating fixpoint (``not`` read
against an underestimate, then against the overestimate that gives, until they settle: the
well-founded model). If atoms stay undefined there (``p :- not q. q :- not p.``), all the
predicates are evaluated that way together, and an atom the check needs that is undefined
(neither true nor false) makes it :class:`Unverifiable`. A variable no positive literal binds
(``p(X) :- not q(X).``) ranges over the values the program, the query and the certificate
write; with arithmetic among the evaluated clauses that domain is not finite, and the check is
:class:`Unverifiable`. So is a model beyond :data:`MAX_MODEL_ATOMS` atoms (arithmetic that
generates values without end, ``n(X) :- n(Y), X = Y + 1.``); a model that does not close in
time raises ``TimeoutError`` from the :class:`~symbolkg.solvers.outcomes.Deadline`.

Denials (``not h :- body.``) are evaluated as the rules ``#inconsistent(k) :- body, h.`` (k the
denial's index in :attr:`~.terms_syntax.Program.denials`); :meth:`Model.violated` says which
one holds, when :data:`INCONSISTENT_TARGET` is among the model's targets.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

from symbolkg.solvers.outcomes import Deadline
from symbolkg.solvers.symba.arith_eval import compare, subst
from symbolkg.solvers.symba.terms_syntax import (
    Atom,
    Clause,
    Comparison,
    Expr,
    Naf,
    Program,
    Str,
    Undefined,
    Var,
    format_atom,
    format_clause,
    format_literal,
)

#: Above this many atoms the model is given up (:class:`Unverifiable`).
MAX_MODEL_ATOMS = 200_000
#: The predicate of violated denials (no program can name it: ``#`` starts no identifier).
INCONSISTENT = "#inconsistent"
#: The target that makes a :class:`Model` evaluate the program's denials.
INCONSISTENT_TARGET = Atom(INCONSISTENT, (Var("K"),))

#: The types of a ground value: identifier constant, number, quoted string.
_GROUND = (str, int, float, Str)
#: A predicate: (name, arity).
PredKey = tuple[str, int]


class Unverifiable(Exception):
    """The checker cannot decide (no finite stratified model, its budget, a truncated tree)."""


class _NotTwoValued(Exception):
    """A set of predicates whose well-founded model leaves atoms undefined (recursion through negation)."""


def same_term(a: Any, b: Any) -> bool:
    """Equal terms: the same type and value (a number never equals a constant)."""
    if isinstance(a, Expr) or isinstance(b, Expr):
        return (
            isinstance(a, Expr)
            and isinstance(b, Expr)
            and a.op == b.op
            and len(a.args) == len(b.args)
            and all(same_term(x, y) for x, y in zip(a.args, b.args, strict=True))
        )
    return type(a) is type(b) and a == b


def same_literal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, Naf):
        return same_literal(a.atom, b.atom)
    if isinstance(a, Comparison):
        return a.op == b.op and same_term(a.left, b.left) and same_term(a.right, b.right)
    return (
        a.pred == b.pred
        and len(a.args) == len(b.args)
        and all(same_term(x, y) for x, y in zip(a.args, b.args, strict=True))
    )


def variables(t: Any, out: dict[Var, None]) -> dict[Var, None]:
    """The variables of a term, literal or clause part, in order of first occurrence (into ``out``)."""
    if isinstance(t, Var):
        out.setdefault(t, None)
    elif isinstance(t, (Expr, Atom)):
        for a in t.args:
            variables(a, out)
    elif isinstance(t, Naf):
        variables(t.atom, out)
    elif isinstance(t, Comparison):
        variables(t.left, out)
        variables(t.right, out)
    return out


def compare_literal(lit: Comparison, env: dict[Var, Any]) -> Iterator[dict[Var, Any]] | None:
    """The ways ``lit`` holds under ``env`` (at most one, possibly binding a variable); None: not evaluable yet."""
    try:
        left, right = subst(lit.left, env), subst(lit.right, env)
    except Undefined:
        return iter(())
    lg, rg = isinstance(left, _GROUND), isinstance(right, _GROUND)
    if lit.op == "=":
        if lg and rg:
            return iter((env,)) if same_term(left, right) else iter(())
        if isinstance(left, Var) and rg:
            return iter(({**env, left: right},))
        if isinstance(right, Var) and lg:
            return iter(({**env, right: left},))
        return None
    if not (lg and rg):
        return None
    return iter((env,)) if compare(lit.op, left, right) else iter(())


# --------------------------------------------------------------------------- the bottom-up model


class _Relation:
    """The ground tuples of one predicate, indexed by (position, value)."""

    def __init__(self) -> None:
        self.tuples: set[tuple] = set()
        self.index: dict[tuple[int, Any], list[tuple]] = {}

    def add(self, args: tuple) -> bool:
        if args in self.tuples:
            return False
        self.tuples.add(args)
        for i, value in enumerate(args):
            self.index.setdefault((i, (type(value), value)), []).append(args)
        return True

    def candidates(self, pattern: tuple) -> Iterable[tuple]:
        for i, term in enumerate(pattern):
            if isinstance(term, _GROUND):
                return self.index.get((i, (type(term), term)), ())
        return self.tuples


def _match(pattern: tuple, args: tuple, env: dict[Var, Any]) -> dict[Var, Any] | None:
    """``env`` extended so that ``pattern`` (ground values and variables) equals ``args``; None if impossible."""
    out = env
    for term, value in zip(pattern, args, strict=True):
        if isinstance(term, Var):
            bound = out.get(term)
            if bound is None:
                if out is env:
                    out = dict(env)
                out[term] = value
            elif not same_term(bound, value):
                return None
        elif not same_term(term, value):
            return None
    return out


class _Rule:
    """A clause prepared for bottom-up evaluation."""

    def __init__(self, clause: Clause) -> None:
        self.clause = clause
        self.head = clause.head
        self.body = clause.body
        counts: dict[Var, int] = {}
        for part in (clause.head, *clause.body):
            for v in variables(part, {}):
                counts[v] = counts.get(v, 0) + 1
        # a `not`'s variables that occur elsewhere must be bound before it runs; the others are local
        self.shared = tuple(
            tuple(v for v in variables(lit, {}) if counts[v] > 1) if isinstance(lit, Naf) else () for lit in clause.body
        )

    def describe(self) -> str:
        return f"line {self.clause.source_line}: `{format_clause(self.clause)}`"


class Model:
    """The model (stratified, else well-founded) of the part of a program that some atoms depend on.

    Args:
        program: the parsed program.
        targets: the atoms to decide; the model covers their predicates and all they depend on.
        constants: extra values of the domain (from the certificate).
        budget: the time limit.

    Raises:
        Unverifiable: a variable no positive literal binds, with arithmetic around; the budget.
            (An atom left undefined by recursion through negation raises only when asked, :meth:`holds`.)
    """

    def __init__(self, program: Program, targets: list[Atom], constants: Iterable[Any], budget: Deadline) -> None:
        self.budget = budget
        self.by_pred: dict[PredKey, list[_Rule]] = {}
        for clause in program.clauses:
            self.by_pred.setdefault((clause.head.pred, len(clause.head.args)), []).append(_Rule(clause))
        for k, denial in enumerate(program.denials):  # `not h :- body.` as `#inconsistent(k) :- body, h.`
            rule = _Rule(Clause(Atom(INCONSISTENT, (k,)), (*denial.body, denial.head), denial.source_line))
            self.by_pred.setdefault((INCONSISTENT, 1), []).append(rule)
        keys = self._relevant([(a.pred, len(a.args)) for a in targets])
        rules = [r for k in keys for r in self.by_pred.get(k, [])]
        self.finite = not any(_has_expr(r.clause) for r in rules)
        self.domain = _domain(program, constants)
        self.relations: dict[PredKey, _Relation] = {k: _Relation() for k in keys}
        #: what a `not` reads for the predicates of a set under alternating evaluation (else the model)
        self.negation_view: dict[PredKey, _Relation] = {}
        #: the atoms not false (true or undefined) when the model is not two-valued, else None
        self.over: dict[PredKey, _Relation] | None = None
        try:
            for component in self._strata(keys):
                rules = [r for k in component for r in self.by_pred.get(k, [])]
                if self._negation_inside(component):
                    self._alternating(component, rules, two_valued=True)
                else:
                    self._fixpoint(rules)
        except _NotTwoValued:  # some atoms are undefined: the three-valued model of the whole slice
            self._alternating(keys, [r for k in keys for r in self.by_pred.get(k, [])], two_valued=False)

    @property
    def size(self) -> int:
        """Atoms in the model."""
        return sum(len(r.tuples) for r in self.relations.values())

    # -- structure
    def _dependencies(self, key: PredKey) -> Iterator[tuple[PredKey, bool, _Rule, Any]]:
        """(body predicate, negated?, rule, literal) for every atom in the bodies of ``key``'s rules."""
        for rule in self.by_pred.get(key, []):
            for lit in rule.body:
                if isinstance(lit, Atom):
                    yield (lit.pred, len(lit.args)), False, rule, lit
                elif isinstance(lit, Naf):
                    yield (lit.atom.pred, len(lit.atom.args)), True, rule, lit

    def _relevant(self, roots: list[PredKey]) -> list[PredKey]:
        seen: dict[PredKey, None] = dict.fromkeys(roots)
        work = list(seen)
        while work:
            for dep, _, _, _ in self._dependencies(work.pop()):
                if dep not in seen:
                    seen[dep] = None
                    work.append(dep)
        return list(seen)

    def _strata(self, keys: list[PredKey]) -> list[list[PredKey]]:
        """Strongly connected sets of predicates, each after those it depends on (Tarjan, iterative)."""
        index: dict[PredKey, int] = {}
        low: dict[PredKey, int] = {}
        stack: list[PredKey] = []
        on_stack: set[PredKey] = set()
        out: list[list[PredKey]] = []
        for root in keys:
            if root in index:
                continue
            work = [(root, iter([d for d, _, _, _ in self._dependencies(root)]))]
            index[root] = low[root] = len(index)
            stack.append(root)
            on_stack.add(root)
            while work:
                node, deps = work[-1]
                for dep in deps:
                    if dep not in index:
                        index[dep] = low[dep] = len(index)
                        stack.append(dep)
                        on_stack.add(dep)
                        work.append((dep, iter([d for d, _, _, _ in self._dependencies(dep)])))
                        break
                    if dep in on_stack:
                        low[node] = min(low[node], index[dep])
                else:
                    work.pop()
                    if work:
                        low[work[-1][0]] = min(low[work[-1][0]], low[node])
                    if low[node] == index[node]:
                        component = []
                        while True:
                            member = stack.pop()
                            on_stack.discard(member)
                            component.append(member)
                            if member == node:
                                break
                        out.append(component)
        return out

    def _negation_inside(self, component: list[PredKey]) -> bool:
        """Whether a `not` of the set's rules reads a predicate of the set (recursion through negation)."""
        members = set(component)
        return any(negated and dep in members for key in component for dep, negated, _, _ in self._dependencies(key))

    # -- evaluation
    def _fixpoint(self, rules: list[_Rule]) -> None:
        """Naive iteration: apply every rule to the whole model until a round adds nothing."""
        while True:
            new: list[tuple[PredKey, tuple]] = []
            for rule in rules:
                key = (rule.head.pred, len(rule.head.args))
                for env in self._body(rule, tuple(range(len(rule.body))), {}):
                    for args in self._heads(rule, env):
                        if args not in self.relations[key].tuples:
                            new.append((key, args))
            if not sum(self.relations[key].add(args) for key, args in new):
                return
            if self.size > MAX_MODEL_ATOMS:
                raise Unverifiable(
                    f"the bottom-up model grew beyond {MAX_MODEL_ATOMS} atoms "
                    "(arithmetic may generate values without end)"
                )

    def _alternating(self, component: list[PredKey], rules: list[_Rule], two_valued: bool) -> None:
        """A set of predicates with recursion through negation: the alternating fixpoint (well-founded model).

        ``not a`` is read against an underestimate of the true atoms (giving an overestimate) and
        against that overestimate (giving a better underestimate), until the underestimate stops
        growing. Where both estimates agree the model is two-valued (the program is stratified
        atom by atom, as ``is(a, big) :- not is(a, red).``) and that is the answer; an atom in one
        but not the other is undefined (``p :- not q. q :- not p.``): with ``two_valued`` that
        raises _NotTwoValued, else the underestimate is kept as the model and the overestimate
        as :attr:`over`.
        """
        under: dict[PredKey, _Relation] = {k: _Relation() for k in component}
        while True:
            over = self._least_with_negation(component, rules, under)
            better = self._least_with_negation(component, rules, over)
            if all(better[k].tuples == under[k].tuples for k in component):
                break
            under = better
        if two_valued and any(over[k].tuples != under[k].tuples for k in component):
            raise _NotTwoValued
        for key in component:
            self.relations[key] = under[key]
        if not two_valued:
            self.over = over

    def _least_with_negation(
        self, component: list[PredKey], rules: list[_Rule], view: dict[PredKey, _Relation]
    ) -> dict[PredKey, _Relation]:
        """The least fixpoint of ``rules`` with each `not` of the set's predicates read against ``view``."""
        for key in component:
            self.relations[key] = _Relation()
        self.negation_view = view
        try:
            self._fixpoint(rules)
        finally:
            self.negation_view = {}
        return {k: self.relations[k] for k in component}

    def _heads(self, rule: _Rule, env: dict[Var, Any]) -> Iterator[tuple]:
        free = [v for v in variables(rule.head, {}) if v not in env]
        if free and not self.finite:
            raise Unverifiable(
                f"{rule.describe()}: {', '.join(map(str, free))} is bound by no positive literal, "
                "and with arithmetic among the clauses its domain is not finite"
            )
        for values in itertools.product(self.domain, repeat=len(free)):
            self.budget.tick()
            try:
                args = tuple(subst(a, {**env, **dict(zip(free, values, strict=True))}) for a in rule.head.args)
            except Undefined:
                continue
            if all(isinstance(a, _GROUND) for a in args):
                yield args

    def _body(self, rule: _Rule, pending: tuple[int, ...], env: dict[Var, Any]) -> Iterator[dict[Var, Any]]:
        """Every extension of ``env`` under which the ``pending`` body literals all hold."""
        if not pending:
            yield env
            return
        for pos, j in enumerate(pending):
            ways = self._literal(rule, j, env)
            if ways is not None:
                rest = pending[:pos] + pending[pos + 1 :]
                for extended in ways:
                    yield from self._body(rule, rest, extended)
                return
        # nothing can run: give the first unbound variable every value of the domain
        unbound = [v for j in pending for v in variables(rule.body[j], {}) if v not in env]
        if not self.finite:
            shown = format_literal(rule.body[pending[0]])
            raise Unverifiable(
                f"{rule.describe()}: `{shown}` cannot be evaluated bottom-up ({unbound[0]} is bound by no "
                "positive literal), and with arithmetic among the clauses its domain is not finite"
            )
        for value in self.domain:
            self.budget.tick()
            yield from self._body(rule, pending, {**env, unbound[0]: value})

    def _literal(self, rule: _Rule, j: int, env: dict[Var, Any]) -> Iterable[dict[Var, Any]] | None:
        """The ways body literal ``j`` holds under ``env``; None when it cannot be evaluated yet."""
        lit = rule.body[j]
        if isinstance(lit, Comparison):
            return compare_literal(lit, env)
        if isinstance(lit, Naf):
            if any(v not in env for v in rule.shared[j]):
                return None
            try:
                pattern = self._pattern(lit.atom, env)
            except Undefined:
                return ()
            if pattern is None:
                return None
            key = (lit.atom.pred, len(pattern))
            view = self.negation_view.get(key)
            return () if self._exists(self.relations.get(key) if view is None else view, pattern) else (env,)
        try:
            pattern = self._pattern(lit, env)
        except Undefined:
            return ()
        if pattern is None:
            return None
        return self._join(lit.pred, pattern, env)

    def _pattern(self, atom: Atom, env: dict[Var, Any]) -> tuple | None:
        """The atom's arguments under ``env``: values and variables; None while an expression is not ground."""
        args = tuple(subst(a, env) for a in atom.args)
        return None if any(isinstance(a, Expr) for a in args) else args

    def _join(self, pred: str, pattern: tuple, env: dict[Var, Any]) -> Iterator[dict[Var, Any]]:
        yield from self._matches(self.relations.get((pred, len(pattern))), pattern, env)

    def _matches(self, relation: _Relation | None, pattern: tuple, env: dict[Var, Any]) -> Iterator[dict[Var, Any]]:
        if relation is None:
            return
        for args in list(relation.candidates(pattern)):
            self.budget.tick()
            extended = _match(pattern, args, env)
            if extended is not None:
                yield extended

    def _exists(self, relation: _Relation | None, pattern: tuple) -> bool:
        return next(self._matches(relation, pattern, {}), None) is not None

    # -- questions
    def violated(self) -> int | None:
        """The first denial of the program violated in the model (its index), or None.

        The model must have been built with :data:`INCONSISTENT_TARGET` among its targets.
        """
        relation = self.relations.get((INCONSISTENT, 1))
        if relation is None:
            raise Unverifiable("the model was not built to check the program's denials")
        return min((args[0] for args in relation.tuples), default=None)

    def holds(self, atom: Atom) -> bool:
        """Whether some instance of ``atom`` (its variables range over everything) is in the model.

        Raises:
            Unverifiable: no instance is true but one is undefined (recursion through negation).
        """
        try:
            pattern = self._pattern(atom, {})
        except Undefined:
            return False
        if pattern is None:
            raise Unverifiable(
                f"`{format_atom(atom)}` holds an expression with a variable; the checker decides atoms of values only"
            )
        key = (atom.pred, len(atom.args))
        if key not in self.relations:
            raise Unverifiable(f"`{format_atom(atom)}` was not among the atoms the model was built for")
        if self._exists(self.relations[key], pattern):
            return True
        if self.over is not None and self._exists(self.over[key], pattern):
            raise Unverifiable(
                f"`{format_atom(atom)}` depends on itself through negation: it is neither true nor "
                "false in the well-founded model (the program has no two-valued model there)"
            )
        return False


def _has_expr(clause: Clause) -> bool:
    def term(t: Any) -> bool:
        return isinstance(t, Expr)

    for part in (clause.head, *clause.body):
        if isinstance(part, Comparison):
            if term(part.left) or term(part.right):
                return True
        elif any(term(a) for a in (part.atom if isinstance(part, Naf) else part).args):
            return True
    return False


def _domain(program: Program, extra: Iterable[Any]) -> list[Any]:
    """Every value the program, its query and ``extra`` write (one placeholder when there is none)."""
    seen: dict[tuple[type, Any], Any] = {}

    def visit(t: Any) -> None:
        if isinstance(t, _GROUND):
            seen.setdefault((type(t), t), t)
        elif isinstance(t, Expr):
            for a in t.args:
                visit(a)

    for clause in (*program.clauses, *program.denials):
        for part in (clause.head, *clause.body):
            if isinstance(part, Comparison):
                visit(part.left)
                visit(part.right)
            else:
                for a in (part.atom if isinstance(part, Naf) else part).args:
                    visit(a)
    for a in program.goal.atom.args:
        visit(a)
    for value in extra:
        visit(value)
    return list(seen.values()) or ["a_constant"]
