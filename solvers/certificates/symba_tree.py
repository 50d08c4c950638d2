"""SymBa proof-tree certificates, and their checker: a bottom-up evaluator of the program.

Produced for the SymBa clause language (``symba``, :mod:`symbolkg.solvers.symba.language`), answered by
its top-down tabled SLDNF prover: ``True`` when the query holds (with the prover's
justification tree), ``False`` when the search was complete without a proof (closed world:
negation as failure). These certificates are of kind ``derivation`` with ``format: "tree"``;
:mod:`.derivation` hands them to this module.

Fields (version 1; atoms, literals and clauses written as :func:`symbolkg.solvers.symba.language.format_clause`
and friends print them, so that :func:`symbolkg.solvers.symba.language.parse` reads them back):

* ``kind``: ``"derivation"``; ``format``: ``"tree"``; ``version``: ``1``; ``producer``:
  ``"symba-chainer"``;
* ``answer``: ``"True"`` or ``"False"``;
* ``query``: ``{"goal", "line"}``, the program's query as written (``is(bob, red)``,
  ``not is(eric, round)``, ``answer(X)``) and its 1-based program line;
* for ``True``, ``tree``: the proof, a node of one of three sorts:

  - a clause node ``{"goal", "line", "clause", "binding", "children"}``: ``goal`` the atom it
    proves; ``line`` and ``clause`` the program line and text (``format_clause``) of the
    clause applied; ``binding`` ``{"X": "term"}``, a value for every variable of the clause
    (an anonymous ``_`` is named ``_#k``, the k-th of its clause); ``children`` one node per
    body literal, in order. A value may hold a variable (``A``, ``B``, ...): the proof then
    holds for every value of it (a fact ``p(X).`` proves ``p(A)``). ``truncated: true``
    marks a node the prover did not expand (a tree deeper or larger than it writes out);
  - a builtin leaf ``{"goal": "3 = 2 + 1", "builtin": true}``: a comparison instance;
  - a negation-as-failure leaf ``{"goal": "not p(a)", "naf": true, "atom": "p(a)"}``: ``atom``
    was searched and has no proof. A variable in it ranges over everything (``not p(a, B)``:
    no ``p(a, anything)``). For a query ``not g`` the tree is one such leaf.

* for ``False``, ``closure``: ``{"method": "negation_as_failure", "searched": goal}``: the
  search for the query (``goal`` as in ``query``) was complete and found no proof; for a query
  ``not g`` this says that ``g`` has a proof.

The checker (:func:`check`) does not trust the top-down search. It reads the program with
:func:`symbolkg.solvers.symba.language.parse` and the certificate's terms with symba's term reader, and
evaluates arithmetic with symba's ``_evaluate`` (the only helpers it shares with the prover;
no solving code of that module runs). Then:

* for ``True``: every clause node cites a clause of the program on that line with that text;
  the binding gives every variable of the clause a value, and applied to the clause gives the
  node's goal as head and, in order, the children's goals as body (a comparison instance
  unevaluated); builtin leaves evaluate to true; the root is an instance of the query (for
  ``not g``: one negation leaf of ``g`` itself). Each negation leaf's atom must have no
  instance in the program's model, computed by this module's own engine;
* for ``False``: the query has no instance in that model (for ``not g``: ``g`` has one);
* in both cases the certificate's answer and query are the row's and the program's.

The model: naive bottom-up evaluation (the least fixpoint, every rule applied to the whole
model until a round adds nothing), over the predicates the decided atoms depend on, set by set
in dependency order (strongly connected sets of predicates, so that a ``not`` reads completed
predicates). A set with a ``not`` inside it (``is(a, big) :- not is(a, red).``, stratified atom
by atom but not predicate by predicate) is evaluated by the alternating fixpoint (``not`` read
against an underestimate, then against the overestimate that gives, until they settle: the
well-founded model). If atoms stay undefined there (``p :- not q. q :- not p.``), all the
predicates are evaluated that way together, and an atom the check needs that is undefined
(neither true nor false) makes it ``unverifiable``. A variable no positive
literal binds (``p(X) :- not q(X).``) ranges over the values the program, the query and the
certificate write; with arithmetic among the evaluated clauses that domain is not finite, and
the check is ``unverifiable``. So is a model that does not close within ``limits.timeout_s`` or
:data:`MAX_MODEL_ATOMS` atoms (arithmetic that generates values without end, ``n(X) :- n(Y),
X = Y + 1.``), and a truncated proof tree.

:func:`explain_lines` renders a certificate for people (``symbolkg explain``);
:func:`premise_lines` gives the program lines a proof uses.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator
from typing import Any

from symbolkg.solvers.symba import language as symba
from symbolkg.solvers.certificates import Verdict
from symbolkg.solvers.outcomes import CertificateError, Limits, ProgramError
from symbolkg.solvers.symba.language import Atom, Clause, Comparison, Expr, Naf, Str, Var

KIND = "derivation"
FORMAT = "tree"
VERSION = 1
PRODUCER = symba.BACKEND
LANGUAGE = "symba"
#: Prolog rows (the prolog-agent method) whose answer SymBa re-derived: checked on
#: :func:`symbolkg.solvers.symba.language.from_prolog` of the row's program.
PROLOG = "prolog"
CHECKER = "bottom-up-evaluator"
CLOSURE_METHOD = "negation_as_failure"
#: Above this many atoms the checker's model is given up (``unverifiable``).
MAX_MODEL_ATOMS = 200_000

#: The types of a ground value: identifier constant, number, quoted string.
_GROUND = (str, int, float, Str)
#: A predicate: (name, arity).
PredKey = tuple[str, int]


# --------------------------------------------------------------------------- producing


def certificate(program: symba.Program, result: symba.ProofResult, answer: str) -> dict[str, Any]:
    """The certificate of ``answer`` (``"True"``/``"False"``) that :func:`symbolkg.solvers.symba.language.prove` found.

    Raises:
        ValueError: ``answer`` is neither, or a ``True`` result has no proof tree.
    """
    goal = symba.format_goal(program.goal)
    cert: dict[str, Any] = {"kind": KIND, "format": FORMAT, "version": VERSION, "producer": PRODUCER, "answer": answer,
                            "query": {"goal": goal, "line": program.goal.source_line or None}}
    if answer == "True":
        if not isinstance(result.tree, dict):
            raise ValueError("a proved result without a proof tree has no certificate")
        cert["tree"] = _certificate_node(result.tree)
    elif answer == "False":
        cert["closure"] = {"method": CLOSURE_METHOD, "searched": goal}
    else:
        raise ValueError(f"SymBa certificates are for True/False answers, got {answer!r}")
    return cert


def _certificate_node(node: dict[str, Any]) -> dict[str, Any]:
    """One node of :attr:`symbolkg.solvers.symba.language.ProofResult.tree` in the certificate's format."""
    goal = str(node["goal"])
    if node.get("naf"):
        return {"goal": goal, "naf": True, "atom": goal.removeprefix("not ").strip()}
    if node.get("builtin"):
        return {"goal": goal, "builtin": True}
    out: dict[str, Any] = {"goal": goal, "line": node.get("line"), "clause": node.get("clause"),
                           "binding": dict(node.get("bindings") or {}),
                           "children": [_certificate_node(c) for c in node.get("children") or []]}
    if node.get("truncated"):
        out["truncated"] = True
    return out


# --------------------------------------------------------------------------- terms


class _Unverifiable(Exception):
    """The checker cannot decide (no finite stratified model, its budget, a truncated tree)."""


class _NotTwoValued(Exception):
    """A set of predicates whose well-founded model leaves atoms undefined (recursion through negation)."""


class _Undefined(Exception):
    """Arithmetic without a value: the literal fails (as in the prover)."""


def _is_ground(t: Any) -> bool:
    if isinstance(t, _GROUND):
        return True
    return isinstance(t, Expr) and all(_is_ground(a) for a in t.args)


def _subst(t: Any, env: dict[Var, Any], evaluate: bool = True) -> Any:
    """``t`` with ``env``'s values for its variables; ground sub-expressions evaluated when ``evaluate``.

    Raises:
        _Undefined: a ground expression has no value (division by zero, a non-number, ...).
    """
    if isinstance(t, Var):
        return env.get(t, t)
    if isinstance(t, Expr):
        args = tuple(_subst(a, env, evaluate) for a in t.args)
        if evaluate and all(isinstance(a, _GROUND) for a in args):
            try:
                return symba._evaluate(Expr(t.op, args))
            except symba._Undefined as exc:
                raise _Undefined(str(exc)) from None
        return Expr(t.op, args)
    return t


def _same(a: Any, b: Any) -> bool:
    """Equal terms: the same type and value (a number never equals a constant)."""
    if isinstance(a, Expr) or isinstance(b, Expr):
        return (isinstance(a, Expr) and isinstance(b, Expr) and a.op == b.op and len(a.args) == len(b.args)
                and all(_same(x, y) for x, y in zip(a.args, b.args)))
    return type(a) is type(b) and a == b


def _same_literal(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, Naf):
        return _same_literal(a.atom, b.atom)
    if isinstance(a, Comparison):
        return a.op == b.op and _same(a.left, b.left) and _same(a.right, b.right)
    return a.pred == b.pred and len(a.args) == len(b.args) and all(_same(x, y) for x, y in zip(a.args, b.args))


def _variables(t: Any, out: dict[Var, None]) -> dict[Var, None]:
    """The variables of a term, literal or clause part, in order of first occurrence (into ``out``)."""
    if isinstance(t, Var):
        out.setdefault(t, None)
    elif isinstance(t, (Expr, Atom)):
        for a in t.args:
            _variables(a, out)
    elif isinstance(t, Naf):
        _variables(t.atom, out)
    elif isinstance(t, Comparison):
        _variables(t.left, out)
        _variables(t.right, out)
    return out


def _clause_variables(clause: Clause) -> list[Var]:
    out: dict[Var, None] = {}
    for part in (clause.head, *clause.body):
        _variables(part, out)
    return list(out)


def _var_key(v: Var) -> str:
    """The binding's name of a clause variable (as the prover writes it)."""
    return f"_#{v.anon}" if v.anon else v.name


def _instance(lit: Any, env: dict[Var, Any]) -> Any:
    """A body literal or head with ``env`` applied (comparisons left unevaluated, as the tree prints them)."""
    if isinstance(lit, Atom):
        return Atom(lit.pred, tuple(_subst(a, env) for a in lit.args))
    if isinstance(lit, Naf):
        return Naf(_instance(lit.atom, env))
    return Comparison(lit.op, _subst(lit.left, env, False), _subst(lit.right, env, False))


def _compare(lit: Comparison, env: dict[Var, Any]) -> Iterator[dict[Var, Any]] | None:
    """The ways ``lit`` holds under ``env`` (at most one, possibly binding a variable); None: not evaluable yet."""
    try:
        left, right = _subst(lit.left, env), _subst(lit.right, env)
    except _Undefined:
        return iter(())
    lg, rg = isinstance(left, _GROUND), isinstance(right, _GROUND)
    if lit.op == "=":
        if lg and rg:
            return iter((env,)) if _same(left, right) else iter(())
        if isinstance(left, Var) and rg:
            return iter(({**env, left: right},))
        if isinstance(right, Var) and lg:
            return iter(({**env, right: left},))
        return None
    if not (lg and rg):
        return None
    if lit.op == "!=":
        return iter(()) if _same(left, right) else iter((env,))
    numbers = all(type(x) in (int, float) for x in (left, right))
    holds = numbers and {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[lit.op]
    return iter((env,)) if holds else iter(())


# --------------------------------------------------------------------------- the bottom-up model


class _Budget:
    """The checker's time limit."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.perf_counter() + seconds
        self._n = 0

    def tick(self) -> None:
        self._n += 1
        if self._n % 1024 == 0 and time.perf_counter() > self._end:
            raise _Unverifiable(f"the bottom-up model did not close within {self.seconds:g} s "
                                "(arithmetic may generate values without end)")


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
    for term, value in zip(pattern, args):
        if isinstance(term, Var):
            bound = out.get(term)
            if bound is None:
                if out is env:
                    out = dict(env)
                out[term] = value
            elif not _same(bound, value):
                return None
        elif not _same(term, value):
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
            for v in _variables(part, {}):
                counts[v] = counts.get(v, 0) + 1
        # a `not`'s variables that occur elsewhere must be bound before it runs; the others are local
        self.shared = tuple(
            tuple(v for v in _variables(lit, {}) if counts[v] > 1) if isinstance(lit, Naf) else () for lit in clause.body
        )

    def describe(self) -> str:
        return f"line {self.clause.source_line}: `{symba.format_clause(self.clause)}`"


class Model:
    """The model (stratified, else well-founded) of the part of a program that some atoms depend on.

    Args:
        program: the parsed program.
        targets: the atoms to decide; the model covers their predicates and all they depend on.
        constants: extra values of the domain (from the certificate).
        budget: the time limit.

    Raises:
        _Unverifiable: a variable no positive literal binds, with arithmetic around; the budget.
            (An atom left undefined by recursion through negation raises only when asked, :meth:`holds`.)
    """

    def __init__(self, program: symba.Program, targets: list[Atom], constants: Iterable[Any], budget: _Budget) -> None:
        self.budget = budget
        self.by_pred: dict[PredKey, list[_Rule]] = {}
        for clause in program.clauses:
            self.by_pred.setdefault((clause.head.pred, len(clause.head.args)), []).append(_Rule(clause))
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
                raise _Unverifiable(f"the bottom-up model grew beyond {MAX_MODEL_ATOMS} atoms "
                                    "(arithmetic may generate values without end)")

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

    def _least_with_negation(self, component: list[PredKey], rules: list[_Rule],
                             view: dict[PredKey, _Relation]) -> dict[PredKey, _Relation]:
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
        free = [v for v in _variables(rule.head, {}) if v not in env]
        if free and not self.finite:
            raise _Unverifiable(f"{rule.describe()}: {', '.join(map(str, free))} is bound by no positive literal, "
                                "and with arithmetic among the clauses its domain is not finite")
        for values in itertools.product(self.domain, repeat=len(free)):
            self.budget.tick()
            try:
                args = tuple(_subst(a, {**env, **dict(zip(free, values))}) for a in rule.head.args)
            except _Undefined:
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
                rest = pending[:pos] + pending[pos + 1:]
                for extended in ways:
                    yield from self._body(rule, rest, extended)
                return
        # nothing can run: give the first unbound variable every value of the domain
        unbound = [v for j in pending for v in _variables(rule.body[j], {}) if v not in env]
        if not self.finite:
            shown = symba.format_literal(rule.body[pending[0]])
            raise _Unverifiable(f"{rule.describe()}: `{shown}` cannot be evaluated bottom-up ({unbound[0]} is bound by no "
                                "positive literal), and with arithmetic among the clauses its domain is not finite")
        for value in self.domain:
            self.budget.tick()
            yield from self._body(rule, pending, {**env, unbound[0]: value})

    def _literal(self, rule: _Rule, j: int, env: dict[Var, Any]) -> Iterable[dict[Var, Any]] | None:
        """The ways body literal ``j`` holds under ``env``; None when it cannot be evaluated yet."""
        lit = rule.body[j]
        if isinstance(lit, Comparison):
            return _compare(lit, env)
        if isinstance(lit, Naf):
            if any(v not in env for v in rule.shared[j]):
                return None
            try:
                pattern = self._pattern(lit.atom, env)
            except _Undefined:
                return ()
            if pattern is None:
                return None
            key = (lit.atom.pred, len(pattern))
            view = self.negation_view.get(key)
            return () if self._exists(self.relations.get(key) if view is None else view, pattern) else (env,)
        try:
            pattern = self._pattern(lit, env)
        except _Undefined:
            return ()
        if pattern is None:
            return None
        return self._join(lit.pred, pattern, env)

    def _pattern(self, atom: Atom, env: dict[Var, Any]) -> tuple | None:
        """The atom's arguments under ``env``: values and variables; None while an expression is not ground."""
        args = tuple(_subst(a, env) for a in atom.args)
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
    def holds(self, atom: Atom) -> bool:
        """Whether some instance of ``atom`` (its variables range over everything) is in the model.

        Raises:
            _Unverifiable: no instance is true but one is undefined (recursion through negation).
        """
        try:
            pattern = self._pattern(atom, {})
        except _Undefined:
            return False
        if pattern is None:
            raise _Unverifiable(f"`{symba.format_atom(atom)}` holds an expression with a variable; the checker "
                                "decides atoms of values only")
        key = (atom.pred, len(atom.args))
        if key not in self.relations:
            raise _Unverifiable(f"`{symba.format_atom(atom)}` was not among the atoms the model was built for")
        if self._exists(self.relations[key], pattern):
            return True
        if self.over is not None and self._exists(self.over[key], pattern):
            raise _Unverifiable(f"`{symba.format_atom(atom)}` depends on itself through negation: it is neither true nor "
                                "false in the well-founded model (the program has no two-valued model there)")
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


def _domain(program: symba.Program, extra: Iterable[Any]) -> list[Any]:
    """Every value the program, its query and ``extra`` write (one placeholder when there is none)."""
    seen: dict[tuple[type, Any], Any] = {}

    def visit(t: Any) -> None:
        if isinstance(t, _GROUND):
            seen.setdefault((type(t), t), t)
        elif isinstance(t, Expr):
            for a in t.args:
                visit(a)

    for clause in program.clauses:
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


# --------------------------------------------------------------------------- checking


def _field(obj: dict[str, Any], key: str, types: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise CertificateError(f"{where} has no {key!r}")
    value = obj[key]
    if not isinstance(value, types) or (isinstance(value, bool) and types is int):
        raise CertificateError(f"{where}.{key} has the wrong type ({type(value).__name__})")
    return value


def _read_literal(text: Any, where: str) -> Any:
    if not isinstance(text, str):
        raise CertificateError(f"{where}: the goal must be a string, got {text!r}")
    try:
        return symba._parse_literal_text(text)
    except ProgramError as exc:
        raise CertificateError(f"{where}: unreadable goal {text!r}: {exc.message}") from None


def _read_term(text: Any, where: str) -> Any:
    if not isinstance(text, str):
        raise CertificateError(f"{where}: a binding value must be a string, got {text!r}")
    try:
        return symba._parse_term_text(text)
    except ProgramError as exc:
        raise CertificateError(f"{where}: unreadable binding value {text!r}: {exc.message}") from None


class _TreeCheck:
    """The structural check of a proof tree; collects the negation leaves for the model."""

    def __init__(self, program: symba.Program) -> None:
        self.clauses_at: dict[int, list[Clause]] = {}
        for clause in program.clauses:
            self.clauses_at.setdefault(clause.source_line, []).append(clause)
        self.negations: list[tuple[str, Atom]] = []  # (path, atom)
        self.values: list[Any] = []
        self.nodes = 0

    def run(self, root: Any) -> None:
        work: list[tuple[Any, str, Any]] = [(root, "root", None)]
        while work:
            node, path, expected = work.pop()
            if not isinstance(node, dict):
                raise CertificateError(f"{path}: a node must be an object, got {node!r}")
            literal = _read_literal(node.get("goal"), path)
            if expected is not None and not _same_literal(literal, expected):
                raise CertificateError(f"{path}: the parent's clause needs `{symba.format_literal(expected)}` here, "
                                       f"the node proves `{node.get('goal')}`")
            if node.get("naf"):
                self._negation(node, literal, path)
            elif node.get("builtin"):
                _check_builtin(literal, path)
            else:
                work.extend(reversed(self._clause_node(node, literal, path)))

    def _negation(self, node: dict[str, Any], literal: Any, path: str) -> None:
        if not isinstance(literal, Naf):
            raise CertificateError(f"{path}: a negation leaf's goal must be `not atom`, found {node.get('goal')!r}")
        atom = _read_literal(node.get("atom"), f"{path}.atom")
        if not _same_literal(atom, literal.atom):
            raise CertificateError(f"{path}: the searched atom {node.get('atom')!r} is not the one in {node.get('goal')!r}")
        if node.get("children"):
            raise CertificateError(f"{path}: a negation leaf has no children")
        self.negations.append((path, atom))
        self.values.extend(atom.args)

    def _clause_node(self, node: dict[str, Any], literal: Any, path: str) -> list[tuple[Any, str, Any]]:
        """Check one clause node; returns its children with the literal each must prove."""
        self.nodes += 1
        if node.get("truncated"):
            raise _Unverifiable(f"{path}: the prover did not write out this subtree (truncated), so it cannot be checked")
        if not isinstance(literal, Atom):
            raise CertificateError(f"{path}: a clause node proves an atom, not {node.get('goal')!r}")
        line = _field(node, "line", int, path)
        text = _field(node, "clause", str, path)
        binding = _field(node, "binding", dict, path)
        children = _field(node, "children", list, path)
        clause = self._cited(line, text, path)
        env = self._binding(clause, binding, path)
        where = f"{path} (`{text}`, line {line})"
        try:
            head = _instance(clause.head, env)
            body = [_instance(lit, env) for lit in clause.body]
        except _Undefined as exc:
            raise CertificateError(f"{where}: the clause instance is undefined: {exc}") from None
        if not _same_literal(head, literal):
            raise CertificateError(f"{where}: the binding gives the head `{symba.format_atom(head)}`, "
                                   f"not the node's goal `{node['goal']}`")
        if len(children) != len(body):
            raise CertificateError(f"{where}: the clause has {len(body)} body literal(s), the node {len(children)} child(ren)")
        out = []
        for j, (lit, child) in enumerate(zip(body, children)):
            cpath = f"{path}.children[{j}]"
            if isinstance(child, dict):
                wanted = "naf" if isinstance(lit, Naf) else "builtin" if isinstance(lit, Comparison) else "clause"
                found = "naf" if child.get("naf") else "builtin" if child.get("builtin") else "clause"
                if wanted != found:
                    raise CertificateError(f"{cpath}: the body literal `{symba.format_literal(lit)}` needs a {wanted} "
                                           f"node, found a {found} node")
            out.append((child, cpath, lit))
        return out

    def _cited(self, line: int, text: str, path: str) -> Clause:
        for clause in self.clauses_at.get(line, []):
            if symba.format_clause(clause) == text:
                return clause
        there = "; ".join(f"`{symba.format_clause(c)}`" for c in self.clauses_at.get(line, [])) or "no clause"
        raise CertificateError(f"{path} cites the clause `{text}` on line {line}, but the program has {there} there")

    def _binding(self, clause: Clause, binding: dict[str, Any], path: str) -> dict[Var, Any]:
        variables = {_var_key(v): v for v in _clause_variables(clause)}
        unknown = sorted(set(binding) - set(variables))
        missing = sorted(set(variables) - set(binding))
        if unknown or missing:
            raise CertificateError(f"{path}: the binding must give every variable of the clause a value "
                                   f"(unknown: {unknown or 'none'}; missing: {missing or 'none'})")
        env = {}
        for key, text in binding.items():
            value = _read_term(text, f"{path}.binding[{key!r}]")
            env[variables[key]] = value
            self.values.append(value)
        return env


def _check_builtin(literal: Any, path: str) -> None:
    """A builtin leaf holds as it stands (a variable left in it holds for every value, so it may not bind one)."""
    if not isinstance(literal, Comparison):
        raise CertificateError(f"{path}: a builtin leaf's goal must be a comparison, found `{symba.format_literal(literal)}`")
    shown = symba.format_literal(literal)
    ways = _compare(literal, {})
    if ways is None:
        try:
            left, right = _subst(literal.left, {}), _subst(literal.right, {})
        except _Undefined:
            left, right = literal.left, literal.right
        if literal.op == "=" and _same(left, right):  # the same term with variables on both sides
            return
        raise CertificateError(f"{path}: `{shown}` cannot be evaluated (a side is not ground)")
    outcome = next(iter(ways), None)
    if outcome is None:
        raise CertificateError(f"{path}: `{shown}` does not hold")
    if outcome:
        raise CertificateError(f"{path}: `{shown}` holds only for one value of {', '.join(map(str, outcome))}, "
                               "not for every value")


def _check_root(tree: dict[str, Any], goal: symba.Goal) -> None:
    """The root proves the query: an instance of it, or for ``not g`` the negation leaf of ``g``."""
    root = _read_literal(tree.get("goal"), "root")
    try:
        query = Atom(goal.atom.pred, tuple(_subst(a, {}) for a in goal.atom.args))
    except _Undefined as exc:
        raise CertificateError(f"the query {symba.format_goal(goal)} is undefined: {exc}") from None
    if goal.negated:
        if not (tree.get("naf") and isinstance(root, Naf) and _instance_of(root.atom, query) and _instance_of(query, root.atom)):
            raise CertificateError(f"the proof of `{symba.format_goal(goal)}` must be one negation leaf of that atom, "
                                   f"found {tree.get('goal')!r}")
    elif tree.get("naf") or tree.get("builtin") or not isinstance(root, Atom) or not _instance_of(root, query):
        raise CertificateError(f"the proof's root `{tree.get('goal')}` is not an instance of the query `{symba.format_goal(goal)}`")


def _instance_of(specific: Atom, general: Atom) -> bool:
    """``specific`` is ``general`` with some of its variables replaced (one-way matching)."""
    if specific.pred != general.pred or len(specific.args) != len(general.args):
        return False
    sigma: dict[Var, Any] = {}

    def match(p: Any, t: Any) -> bool:
        if isinstance(p, Var):
            return _same(sigma.setdefault(p, t), t)
        if isinstance(p, Expr):
            return isinstance(t, Expr) and p.op == t.op and len(p.args) == len(t.args) and all(map(match, p.args, t.args))
        return _same(p, t)

    return all(map(match, general.args, specific.args))


def check(cert: dict[str, Any], *, language: str, program: str, answer: str | None,
          limits: Limits | None = None) -> Verdict:
    """Re-check a SymBa proof-tree certificate (module docstring) with this module's bottom-up evaluator.

    Args:
        cert: the certificate.
        language: the row's program language (``symba``, or ``prolog`` for a Prolog program SymBa
            re-derived: the program is rewritten with :func:`symbolkg.solvers.symba.language.from_prolog`).
        program: the program text.
        answer: the row's answer.
        limits: ``timeout_s`` bounds the check (one that runs out is ``unverifiable``).

    Returns:
        The verdict: ``verified``, or ``unverifiable`` with the reason.

    Raises:
        CertificateError: the certificate is malformed or does not follow from the program.
    """
    limits = limits or Limits()
    t0 = time.perf_counter()
    if language not in (LANGUAGE, PROLOG):
        return Verdict("unverifiable", f"proof-tree certificates are checked for the {LANGUAGE!r} and {PROLOG!r} "
                                       f"languages, not {language!r}", CHECKER)
    if language == PROLOG:  # a Prolog row re-derived by SymBa: the same rewriting, done here again
        try:
            program = symba.from_prolog(program)
        except ProgramError as err:
            raise CertificateError(f"the Prolog program cannot be read as a SymBa program: {err}") from None
    if cert.get("format") != FORMAT or cert.get("version") != VERSION:
        return Verdict("unverifiable", f"certificate format {cert.get('format')!r} version {cert.get('version')!r} unknown "
                                       f"(this checker: {FORMAT!r} version {VERSION})", CHECKER)
    try:
        parsed = symba.parse(program)
    except ProgramError as err:
        raise CertificateError(f"the program does not parse, so it has no answer: {err}") from None
    claimed = cert.get("answer")
    if claimed not in ("True", "False"):
        raise CertificateError(f"answer must be True or False, got {claimed!r}")
    if claimed != answer:
        raise CertificateError(f"the certificate proves {claimed!r}, the row answers {answer!r}")
    _check_query(cert, parsed.goal)
    budget = _Budget(limits.timeout_s)
    try:
        reason = _check_proof(cert, parsed, budget) if claimed == "True" else _check_closure(cert, parsed, budget)
    except _Unverifiable as exc:
        return Verdict("unverifiable", str(exc), CHECKER, round(time.perf_counter() - t0, 6))
    return Verdict("verified", reason, CHECKER, round(time.perf_counter() - t0, 6))


def _check_query(cert: dict[str, Any], goal: symba.Goal) -> None:
    stated = _field(cert, "query", dict, "the certificate")
    written = symba.format_goal(goal)
    if stated.get("goal") != written or stated.get("line") != (goal.source_line or None):
        raise CertificateError(f"the certificate's query {stated.get('goal')!r} (line {stated.get('line')!r}) is not the "
                               f"program's, `{written}` (line {goal.source_line})")


def _check_proof(cert: dict[str, Any], program: symba.Program, budget: _Budget) -> str:
    tree = _field(cert, "tree", dict, "the certificate")
    _check_root(tree, program.goal)
    walk = _TreeCheck(program)
    walk.run(tree)
    if not walk.negations:
        return f"{walk.nodes} clause node(s) checked"
    model = Model(program, [atom for _, atom in walk.negations], walk.values, budget)
    for path, atom in walk.negations:
        if model.holds(atom):
            raise CertificateError(f"{path}: `{symba.format_atom(atom)}` is derivable (the bottom-up model has an "
                                   f"instance of it), so `not {symba.format_atom(atom)}` does not hold")
    return (f"{walk.nodes} clause node(s) checked; {len(walk.negations)} negation leaf/leaves decided on a bottom-up "
            f"model of {model.size} atom(s)")


def _check_closure(cert: dict[str, Any], program: symba.Program, budget: _Budget) -> str:
    closure = _field(cert, "closure", dict, "the certificate")
    if closure.get("method") != CLOSURE_METHOD:
        raise CertificateError(f"closure.method must be {CLOSURE_METHOD!r}, got {closure.get('method')!r}")
    goal = program.goal
    if closure.get("searched") != symba.format_goal(goal):
        raise CertificateError(f"the closure searched {closure.get('searched')!r}, the query is `{symba.format_goal(goal)}`")
    model = Model(program, [goal.atom], (), budget)
    derivable = model.holds(goal.atom)
    atom = symba.format_atom(goal.atom)
    if goal.negated and not derivable:
        raise CertificateError(f"`{atom}` is not derivable (no instance in the bottom-up model), so `not {atom}` holds: "
                               "the answer is True, not False")
    if not goal.negated and derivable:
        raise CertificateError(f"`{atom}` is derivable (the bottom-up model has an instance of it), so the answer is "
                               "True, not False")
    return f"decided on a bottom-up model of {model.size} atom(s)"


# --------------------------------------------------------------------------- explaining


def explain_lines(cert: dict[str, Any]) -> list[str]:
    """The certificate for people: the proof as an indented tree, or what the closed-world search found.

    A clause node reads ``goal  <- clause [X=v, ...]  (line N)`` (a fact ``goal  <- fact, line N``),
    its children indented under it; a builtin leaf ``3 = 2 + 1  (arithmetic)``; a negation leaf
    ``not p(a)  (negation as failure: p(a) has no proof)``.
    """
    query = cert.get("query") or {}
    lines = [f"{cert.get('answer')}: query {query.get('goal')} (line {query.get('line')}), by {cert.get('producer')}"]
    closure = cert.get("closure")
    if isinstance(closure, dict):
        searched = str(closure.get("searched"))
        if searched.startswith("not "):
            lines.append(f"{searched.removeprefix('not ')} has a proof, so `{searched}` fails ({closure.get('method')})")
        else:
            lines.append(f"the search for {searched} was complete and found no proof "
                         f"(closed world: {closure.get('method')})")
        return lines
    work: list[tuple[Any, int]] = [(cert.get("tree"), 0)]
    while work:
        node, depth = work.pop()
        lines.append("  " * depth + _explain_node(node))
        if isinstance(node, dict) and isinstance(node.get("children"), list):
            work.extend((child, depth + 1) for child in reversed(node["children"]))
    return lines


def _explain_node(node: Any) -> str:
    if not isinstance(node, dict):
        return f"(malformed node {node!r})"
    goal = node.get("goal")
    if node.get("naf"):
        return f"{goal}  (negation as failure: {node.get('atom')} has no proof)"
    if node.get("builtin"):
        return f"{goal}  (arithmetic)"
    if node.get("truncated"):
        return f"{goal}  <- {node.get('clause')}  (line {node.get('line')}; subtree not written out)"
    if not node.get("children") and not node.get("binding"):
        return f"{goal}  <- fact, line {node.get('line')}"
    binding = ", ".join(f"{k}={v}" for k, v in (node.get("binding") or {}).items())
    return f"{goal}  <- {node.get('clause')}" + (f" [{binding}]" if binding else "") + f"  (line {node.get('line')})"


def premise_lines(cert: dict[str, Any]) -> list[int]:
    """Program lines of the clauses the proof uses, in the order the tree first cites them (none for False)."""
    out: list[int] = []
    work: list[Any] = [cert.get("tree")]
    while work:
        node = work.pop()
        if not isinstance(node, dict):
            continue
        line = node.get("line")
        if isinstance(line, int) and not isinstance(line, bool) and line not in out:
            out.append(line)
        if isinstance(node.get("children"), list):
            work.extend(reversed(node["children"]))
    return out
