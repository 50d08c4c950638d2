"""The tabled backward chainer of the SymBa clause language: the registry entry of ``symba``.

SymBa (symbolic backward chaining) proves a goal top-down; where a subgoal has no clause, its
method asks an LLM for one statement and retries. This module is the symbolic half: a solver
that records which subgoals had no clause (:attr:`ProofResult.missing`) and which ended
without a proof (:attr:`ProofResult.unproved`), so that the method knows what to ask for. It
calls no model. The language is specified in :mod:`.syntax` (terms and printer in
:mod:`.terms_syntax`, arithmetic and comparison in :mod:`.arith_eval`).

Solver
------

:func:`prove` runs SLDNF resolution with tabling: body literals left to right,
each instantiated by the bindings so far (binding propagation), all answers
collected. Every call is tabled by variant; recursive variant calls consume the
answers their table has so far, and a strongly connected set of tables is
re-evaluated until no table gains an answer (linear tabling: the SCC leader, found
as in Tarjan's algorithm, iterates to the fixpoint, then every table of the set is
complete). So every function-free program terminates, left recursion included
(``is(bear, red) :- is(X, red), chases(X, bear).``). Arithmetic can still create
infinitely many values (``n(X) :- n(Y), X = Y + 1.``); the budgets end such
searches: nesting depth of tabled calls, resolution steps, wall-clock seconds
(:class:`Budget`). The Python stack grows with the nesting depth (3 frames per
level), so the depth budget is also capped to fit under the interpreter's
recursion limit.

``X = E``: if one side is an unbound variable it is bound to the value of the other side;
if both sides are ground they are compared (:func:`.arith_eval.compare`); two unbound
variables are unified. The other comparisons need both sides ground. Arithmetic that has
no value (division by zero, a non-number, beyond 1e100) makes the literal fail (as in
clingo) and the reason is recorded in :attr:`ProofResult.issues`. An atom argument that is an
expression is evaluated once its variables are bound (``p(X + 1)`` called with ``X = 2`` is
``p(3)``); an expression that is still non-ground unifies only with the same expression
(Prolog's structural reading).

* ``not A`` runs when ``A`` has no unbound variable shared with the rest of the
  clause (variables that occur only inside the ``not``, such as ``_``, are local:
  ``not p(X, _)`` means "no ``p(X, anything)``"). Until then it is delayed behind
  the other literals of the body; if it never becomes ready the branch
  *flounders*: it fails, and the result's kind is ``"floundered"``. The same
  holds for comparisons that cannot be evaluated (``X < Y`` with ``Y`` unbound).
* ``not A`` where ``A`` depends on the caller through negation (``p :- not q.
  q :- not p.``) has no stratified meaning: the literal fails, the reason is
  recorded and the kind is ``"nonstratified"``.
* A ground goal stops at its first proof; a goal with variables gets all answers.
* Denials (``not h :- body.``, :mod:`.syntax`): after the query's search, each denial's
  body and atom are searched together (as the clause ``#inconsistent(k) :- body, h.``,
  a predicate no program can name); an instance that holds makes the program
  inconsistent: kind ``"inconsistent"``, no query is proved, and
  :attr:`ProofResult.violated` names the denial. Subgoals met only by this check are not
  reported as missing or unproved (SymBa's solver runs it without asking the LLM).

:func:`head_unifies` is the symbolic check SymBa applies to a statement written for a
subgoal (does its head unify with it?). Proofs are re-checked independently by
:mod:`symbolkg.solvers.certificates.symba_tree` from the certificate :func:`solve` attaches.
:func:`solve` is the registry entry point: ``PROVED``/"True" when the goal holds,
``DISPROVED``/"False" when the search was complete and found no proof (closed world) or the
program is inconsistent, ``TIMEOUT`` when a budget ran out first, ``RUNTIME_ERROR`` for
floundering and recursion through negation; ``Outcome.proof`` is the JSON of the
:class:`ProofResult`.

One module, long because it is one concept: the tabled prover (tables, the SCC fixpoint, the budgets,
the justification trees it returns) and the registry entry that asks it the program's query and
its denials. Unification and environments are apart (:mod:`.unification`), and so is the
substitution it shares with the checker (:func:`.arith_eval.subst`).
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from symbolkg.solvers.certificates import symba_tree
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch
from symbolkg.solvers.symba.arith_eval import compare, evaluate_ground_parts, is_ground, same_value, subst
from symbolkg.solvers.symba.arith_eval import evaluate as evaluate_expression
from symbolkg.solvers.symba.syntax import parse
from symbolkg.solvers.symba.terms_syntax import (
    CONST_TYPES,
    VAR_TYPES,
    Atom,
    AVar,
    Clause,
    Comparison,
    Expr,
    Fresh,
    Goal,
    Literal,
    Naf,
    Program,
    Undefined,
    Var,
    format_atom,
    format_clause,
    format_goal,
    format_literal,
    format_term,
)
from symbolkg.solvers.symba.unification import (
    canon,
    deref,
    ground_args,
    match,
    rename,
    resolve,
    resolve_raw,
    undo,
    unify,
    unify_args,
    value,
)

BACKEND = symba_tree.PRODUCER

#: The nesting depth :func:`solve` allows (tabled calls inside tabled calls).
DEFAULT_MAX_DEPTH = 200

#: ``ProofResult.kind`` values.
KINDS = ("complete", "depth", "steps", "wall", "floundered", "nonstratified", "inconsistent")


# --------------------------------------------------------------------------- solver


@dataclass(frozen=True)
class Budget:
    """Per-call limits of :func:`prove`.

    Attributes:
        max_depth: most nested tabled calls (a goal, its subgoal, the subgoal's
            subgoal, ...); also capped so that the Python stack stays below the
            interpreter's recursion limit.
        max_steps: most resolution steps (clause-head unifications, answer
            unifications and builtin evaluations).
        timeout_s: wall-clock seconds.
    """

    max_depth: int = DEFAULT_MAX_DEPTH
    max_steps: int = 1_000_000
    timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if self.max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, got {self.max_depth}")
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")


@dataclass
class ProofResult:
    """What :func:`prove` found.

    Attributes:
        proved: the goal holds (for ``not g``: ``g`` has no proof and the search was
            complete). A proof found before a budget ran out is still a proof. With kind
            ``"floundered"`` or ``"nonstratified"`` a ``not`` may have been decided on an
            atom that could not be evaluated, so :func:`solve` reports an error instead.
        answers: bindings of the goal's named variables, one dict per answer, in the
            order found (``[{}]`` for a proved goal without variables).
        tree: justification tree of the first proof, or None (its certificate is checked by
            :mod:`symbolkg.solvers.certificates.symba_tree`).
        missing: subgoals that no clause head unified with, as called (variables as
            ``A``, ``B``, ...), once per variant, in the order first met; including
            atoms under ``not`` that succeeded only because nothing unified.
        kind: ``"complete"``, ``"depth"``, ``"steps"`` or ``"wall"`` (a budget ran out),
            ``"floundered"`` (a ``not`` or comparison never became evaluable),
            ``"nonstratified"`` (a ``not`` depends on itself) or ``"inconsistent"`` (a denial
            is violated: the search was complete, and no query holds; see :attr:`violated`).
        steps: resolution steps taken.
        seconds: wall time.
        issues: human-readable diagnostics (floundering, undefined arithmetic,
            recursion through negation), with the clause line.
        unproved: every subgoal met during the search that ended without an answer
            (a superset of ``missing``: also subgoals some clause head unified with but
            none proved, such as ``eats(A, mouse)`` when only ``eats(squirrel, mouse) :-
            ...`` exists), formatted like ``missing``, in the order first met. These are
            the subgoals SymBa's method may ask a statement for.
        violated: with kind ``"inconsistent"``, the denial violated first: ``{"line",
            "statement"}`` (its program line and text); else None.
        negation_succeeded: a ``not`` literal of a clause body held somewhere in the search
            (by failure of its atom). Only then can a verdict change when statements are
            added: without it every proof found is monotone, and stays a proof in a larger
            database (SymBa's method stops asking there; with it, it asks on).
    """

    proved: bool
    answers: list
    tree: dict | None
    missing: list
    kind: str
    steps: int
    seconds: float
    issues: list = field(default_factory=list)
    unproved: list = field(default_factory=list)
    violated: dict | None = None
    negation_succeeded: bool = False

    def to_dict(self) -> dict:
        doc = {
            "proved": self.proved,
            "answers": self.answers,
            "tree": self.tree,
            "missing": self.missing,
            "unproved": self.unproved,
            "kind": self.kind,
            "steps": self.steps,
            "issues": self.issues,
            "negation_succeeded": self.negation_succeeded,
        }
        if self.violated is not None:
            doc["violated"] = self.violated
        return doc


class _Stop(Exception):
    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


_ATOM, _NAF, _CMP = 0, 1, 2


class _ClauseInfo:
    """A clause compiled for the engine."""

    __slots__ = (
        "_text",
        "body",
        "clause",
        "head",
        "head_exprs",
        "head_plain",
        "kinds",
        "line",
        "order",
        "shared",
        "vars",
    )

    def __init__(self, clause: Clause):
        self.clause = clause
        self.head = clause.head
        self.body = clause.body
        self.kinds = kinds = tuple(_ATOM if type(b) is Atom else _NAF if type(b) is Naf else _CMP for b in clause.body)
        # variable -> the places it occurs (-1: head, j: body literal j), in order of first occurrence
        owners: dict = {}
        pending = [(t, -1) for t in clause.head.args]
        for j, lit in enumerate(clause.body):
            terms = lit.args if type(lit) is Atom else lit.atom.args if type(lit) is Naf else (lit.left, lit.right)
            pending.extend((t, j) for t in terms)
        k = 0
        while k < len(pending):
            t, owner = pending[k]
            k += 1
            if type(t) is Var:
                occ = owners.get(t)
                if occ is None:
                    owners[t] = {owner}
                else:
                    occ.add(owner)
            elif type(t) is Expr:
                pending[k:k] = [(a, owner) for a in t.args]
        self.vars = tuple(owners)
        # For a `not` literal: its variables that also occur elsewhere in the clause
        # (they must be bound before it runs); the others are local to the negation.
        self.shared = (
            tuple(
                tuple(v for v in atom_variables(lit.atom) if owners[v] - {j}) if kinds[j] == _NAF else ()
                for j, lit in enumerate(clause.body)
            )
            if _NAF in kinds
            else ((),) * len(kinds)
        )
        self.order = tuple(range(len(clause.body)))
        # Head arguments that are expressions are matched after the body has run (their
        # variables are bound by then); the others at head unification.
        self.head_exprs = tuple(i for i, a in enumerate(clause.head.args) if type(a) is Expr)
        self.head_plain = tuple(i for i, a in enumerate(clause.head.args) if type(a) is not Expr)
        self.line = clause.source_line
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = format_clause(self.clause)
        return self._text

    def var_key(self, v: Var) -> str:
        return f"_#{v.anon}" if v.anon else v.name


def atom_variables(a: Atom) -> list[Var]:
    """The variables of ``a``, in the order they first occur (none: the atom is ground)."""
    return _variables_of(a.args, Var)


def _variables_of(args: tuple, kind: type) -> list:
    """The variables of type ``kind`` in ``args`` (a clause's :class:`Var`, a call's canonical
    :class:`AVar`), each once, in the order they first occur."""
    out: dict = {}

    def visit(t: Any) -> None:
        if type(t) is kind:
            out.setdefault(t, None)
        elif type(t) is Expr:
            for x in t.args:
                visit(x)

    for t in args:
        visit(t)
    return list(out)


class _Table:
    __slots__ = (
        "active",
        "answers",
        "complete",
        "consumed",
        "dfn",
        "evaluated",
        "goal",
        "goal_ground",
        "ground",
        "justs",
        "keys",
        "low",
        "stamp",
    )

    def __init__(self, goal: Atom, goal_ground: bool):
        self.goal = goal
        self.goal_ground = goal_ground
        self.answers: list[tuple] = []  # canonical argument tuples
        self.keys: set = set()
        self.ground: list[bool] = []
        self.justs: list[tuple] = []  # (clause info, canonical bindings, children)
        self.complete = False
        self.active = False
        self.stamp = -1
        self.dfn: int | None = None
        self.low = 0
        self.consumed = False
        self.evaluated = False


def _term_depth(t: Any) -> int:
    depth, layer = 0, [t]
    while layer:
        depth += 1
        layer = [a for x in layer if type(x) is Expr for a in x.args]
    return depth


def _frame_depth() -> int:
    f = sys._getframe()
    n = 0
    while f is not None:
        n += 1
        f = f.f_back
    return n


_FRAMES_PER_LEVEL = 3  # call -> run_clause -> open_literal -> call
_MAX_TERM_DEPTH = 50
_FRAME_MARGIN = 120
_TREE_MAX_DEPTH = 100
_TREE_MAX_NODES = 5_000


class _Engine:
    def __init__(self, clauses: tuple, budget: Budget):
        self.index: dict[tuple[str, int], list[_ClauseInfo]] = {}
        for c in clauses:
            self.index.setdefault((c.head.pred, len(c.head.args)), []).append(_ClauseInfo(c))
        room = (sys.getrecursionlimit() - _frame_depth() - _FRAME_MARGIN) // _FRAMES_PER_LEVEL
        self.max_depth = max(1, min(budget.max_depth, room))
        self.max_steps = budget.max_steps
        self.deadline = time.perf_counter() + budget.timeout_s
        self.steps = 0
        self.tables: dict[tuple, _Table] = {}
        self.stack: list[_Table] = []
        self.completion: list[_Table] = []
        self.dfn_counter = 0
        self.stamp = 0
        self.stamp_counter = 0
        self.dirty = False
        self.missing: dict[tuple, str] = {}
        self.issues: dict[str, None] = {}
        self.flags: list[str] = []  # "floundered" / "nonstratified", in order met
        self.negation_succeeded = False  # a `not` literal held somewhere in the search (see ProofResult)

    # -- bookkeeping
    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise _Stop("steps")
        if not self.steps & 255 and time.perf_counter() > self.deadline:
            raise _Stop("wall")

    def issue(self, message: str, flag: str | None = None) -> None:
        self.issues.setdefault(message, None)
        if flag and flag not in self.flags:
            self.flags.append(flag)

    # -- tabled call
    def variant(self, inst: Atom) -> tuple[tuple, _Table]:
        """The key and table of ``inst``'s variant (a new table when it is the first call of it)."""
        args = inst.args
        if ground_args(args):
            key = (inst.pred, args)
            table = self.tables.get(key)
            if table is None:
                table = self.tables[key] = _Table(Atom(inst.pred, args), True)
            return key, table
        if any(type(a) is Expr and _term_depth(a) > _MAX_TERM_DEPTH for a in args):
            raise _Stop("depth")  # an expression argument nesting without end, e.g. n(X) :- n(X + 1).
        mapping: dict = {}
        canonical = tuple(canon(a, mapping) for a in args)
        key = (inst.pred, canonical)
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = _Table(Atom(inst.pred, canonical), False)
        return key, table

    def call(self, inst: Atom) -> _Table:
        """The table of ``inst``, evaluated to completion or as far as its SCC allows.

        Runs the clauses against the table; an SCC leader repeats until its set gains no answer.
        (One frame per nesting level here: the depth budget counts 3 frames per level.)
        """
        key, table = self.variant(inst)
        stack = self.stack
        if table.complete:
            return table
        if table.active or (table.dfn is not None and table.stamp == self.stamp):
            table.consumed = True
            if stack:
                stack[-1].low = min(stack[-1].low, table.dfn if table.active else table.low)
            return table
        if len(stack) >= self.max_depth:
            raise _Stop("depth")
        first = table.dfn is None
        saved_dirty = self.dirty
        self.dirty = False
        outer_stamp = self.stamp
        if first:
            table.dfn = table.low = self.dfn_counter
            self.dfn_counter += 1
            pos = len(self.completion)
            self.completion.append(table)
        clauses = self.index.get((table.goal.pred, len(table.goal.args)), ())
        while True:  # one pass; a leader repeats until its SCC gains no answer
            table.active = True
            table.stamp = self.stamp
            stack.append(table)
            unified = False
            for ci in clauses:
                if self.run_clause(table, ci):
                    unified = True
                if table.complete:
                    break
            stack.pop()
            table.active = False
            if not table.evaluated:
                table.evaluated = True
                if not unified:
                    self.missing.setdefault(key, format_atom(table.goal))
            # Only an SCC leader iterates; it stops being one if a later pass reached an
            # older incomplete table (new answers can lead to new calls).
            if not first or table.low != table.dfn or not self.dirty or table.complete:
                break
            self.dirty = False
            self.stamp_counter += 1
            self.stamp = self.stamp_counter
        final_stamp = self.stamp
        self.stamp = outer_stamp
        if first and table.low == table.dfn:  # SCC leader: its set is done
            self.complete_scc(pos, final_stamp)
            self.dirty = saved_dirty
        else:
            self.dirty = saved_dirty or self.dirty
            if not table.complete:
                table.consumed = True
            # Even a table completed early (a ground goal with its answer) passes its low on:
            # the incomplete tables it evaluated stay on the completion stack and belong to an
            # older SCC, so the caller must not complete them as a leader.
            if stack and table.low < stack[-1].low:
                stack[-1].low = table.low
        return table

    def complete_scc(self, pos: int, final_stamp: int) -> None:
        """The leader's strongly connected set (the completion stack from ``pos``) is done."""
        members = self.completion[pos:]
        del self.completion[pos:]
        # Complete: the tables evaluated in the last pass, when that pass changed nothing.
        # Others (not called again in the last pass, e.g. because their caller completed
        # early, or the leader itself stopped early) keep their answers, which are sound,
        # and are evaluated afresh when next called.
        fixpoint = not self.dirty
        for m in members:
            if m.complete:
                continue
            if fixpoint and m.stamp == final_stamp:
                m.complete = True
            else:
                m.dfn = None
                m.consumed = False

    def add_answer(self, table: _Table, ci: _ClauseInfo, env: dict, children: tuple) -> None:
        try:
            args = tuple(resolve(a, env) for a in table.goal.args)
            binds = tuple(resolve(v, env) for v in ci.vars)
        except Undefined as exc:
            self.issue(f"line {ci.line}: {exc} in `{ci.text}`")
            return
        ground = ground_args(args)
        if not ground or not ground_args(binds):
            mapping: dict = {}
            args = tuple(canon(a, mapping) for a in args)
            binds = tuple(canon(b, mapping) for b in binds)
            ground = ground_args(args)
        if args in table.keys:
            return
        table.keys.add(args)
        table.answers.append(args)
        table.ground.append(ground)
        table.justs.append((ci, binds, children))
        if table.consumed:
            self.dirty = True
        if table.goal_ground:
            table.complete = True  # a ground goal has one possible answer

    # -- one clause against a call: iterative backtracking over the body
    def run_clause(self, table: _Table, ci: _ClauseInfo) -> bool:
        self.tick()
        env: dict = {}
        trail: list = []
        head_args, goal_args = ci.head.args, table.goal.args
        if ci.head_exprs:
            for i in ci.head_plain:
                if not unify(head_args[i], goal_args[i], env, trail):
                    return False
        elif not unify_args(head_args, goal_args, env, trail):
            return False
        body = ci.body
        if not body:
            self.finish(table, ci, env, trail, ())
            return True
        children: list = [None] * len(body)
        stack: list[list] = []  # frames: [kind, j, rest, mark, pos, sub, inst_args]
        rest = ci.order
        while True:
            if not rest:
                self.finish(table, ci, env, trail, tuple(children))
                if table.complete:
                    return True
            else:
                frame = self.open_literal(ci, rest, env, trail)
                if frame is not None:
                    stack.append(frame)
            # advance the newest frame that still has an alternative
            while stack:
                fr = stack[-1]
                undo(env, trail, fr[3])
                if fr[0] == _ATOM:
                    sub, inst_args = fr[5], fr[6]
                    answers = sub.answers
                    pos = fr[4]
                    found = False
                    while pos < len(answers):
                        k = pos
                        pos += 1
                        self.tick()
                        ans = answers[k]
                        if not sub.ground[k]:
                            ans = rename(ans)
                        if unify_args(inst_args, ans, env, trail):
                            found = True
                            break
                        undo(env, trail, fr[3])
                    fr[4] = pos
                    if found:
                        children[fr[1]] = (sub, k)
                        rest = fr[2]
                        break
                elif fr[4] == 0:  # `not` / comparison: at most one way through
                    fr[4] = 1
                    binding = fr[5]
                    if binding is None or unify(binding[0], binding[1], env, trail):
                        children[fr[1]] = fr[0]
                        rest = fr[2]
                        break
                stack.pop()
            else:
                return True

    def finish(self, table: _Table, ci: _ClauseInfo, env: dict, trail: list, children: tuple) -> None:
        """The body holds: match the head's expression arguments, then record the answer."""
        if not ci.head_exprs:
            self.add_answer(table, ci, env, children)
            return
        mark = len(trail)
        head_args, goal_args = ci.head.args, table.goal.args
        try:
            ok = all(unify(resolve(head_args[i], env), goal_args[i], env, trail) for i in ci.head_exprs)
        except Undefined as exc:
            self.issue(f"line {ci.line}: {exc} in `{ci.text}`")
            ok = False
        if ok:
            self.add_answer(table, ci, env, children)
        undo(env, trail, mark)

    def open_literal(self, ci: _ClauseInfo, rest: tuple, env: dict, trail: list) -> list | None:
        """Select the first evaluable literal of ``rest`` and prepare its alternatives."""
        body, kinds = ci.body, ci.kinds
        for idx, j in enumerate(rest):  # noqa: B007 - read after the loop: the literal it stopped on
            kind = kinds[j]
            lit = body[j]
            if kind == _ATOM:
                break
            if kind == _NAF:
                if all(type(deref(v, env)) not in VAR_TYPES for v in ci.shared[j]):
                    break
                continue
            ready, outcome = self.compare(lit, env, ci)
            if ready:
                break
        else:
            j = rest[0]
            lit = body[j]
            try:
                shown = format_literal(_literal_instance(lit, env, evaluate=False))
            except Undefined:  # pragma: no cover - unevaluated instances never compute
                shown = format_literal(lit)
            self.issue(
                f"line {ci.line}: cannot evaluate `{shown}` in `{ci.text}`: a variable is still unbound "
                "(floundering); bind it with a positive literal earlier in the body",
                "floundered",
            )
            return None
        rest_after = rest[:idx] + rest[idx + 1 :]
        mark = len(trail)
        if kind == _ATOM:
            try:
                inst_args = tuple(resolve(a, env) for a in lit.args)
            except Undefined as exc:
                self.issue(f"line {ci.line}: {exc} in `{ci.text}`")
                return None
            sub = self.call(Atom(lit.pred, inst_args))
            return [_ATOM, j, rest_after, mark, 0, sub, inst_args]
        if kind == _NAF:
            self.tick()
            try:
                inst_args = tuple(resolve(a, env) for a in lit.atom.args)
            except Undefined as exc:
                self.issue(f"line {ci.line}: {exc} in `{ci.text}`")
                return None
            sub = self.call(Atom(lit.atom.pred, inst_args))
            if sub.answers:
                return None
            if not sub.complete:
                self.issue(
                    f"line {ci.line}: `not {format_atom(sub.goal)}` depends on itself through negation "
                    f"(recursion through negation has no stratified meaning) in `{ci.text}`",
                    "nonstratified",
                )
                return None
            self.negation_succeeded = True
            return [_NAF, j, rest_after, mark, 0, None]
        self.tick()
        if outcome is False:
            return None
        return [_CMP, j, rest_after, mark, 0, outcome]

    def compare(self, lit: Comparison, env: dict, ci: _ClauseInfo) -> tuple[bool, Any]:
        """(ready, outcome): outcome False (fails), None (holds) or (var, value) to bind."""
        try:
            left = resolve(lit.left, env)
            right = resolve(lit.right, env)
        except Undefined as exc:
            self.issue(f"line {ci.line}: {exc} in `{ci.text}`")
            return True, False
        tl, tr = type(left), type(right)
        lg, rg = tl in CONST_TYPES, tr in CONST_TYPES
        if lit.op == "=":
            if lg and rg:
                return True, (None if same_value(left, right) else False)
            if tl in VAR_TYPES and (rg or tr in VAR_TYPES):
                return True, (left, right)
            if tr in VAR_TYPES and lg:
                return True, (right, left)
            return False, None
        if not (lg and rg):
            return False, None
        return True, (None if compare(lit.op, left, right) else False)

    # -- results
    def tree(self, table: _Table, k: int) -> dict:
        counter = itertools.count()
        nodes = [0]
        root_sigma = {v: AVar(next(counter)) for v in _variables_of(table.answers[k], AVar)}
        target = Atom(table.goal.pred, tuple(subst(a, root_sigma) for a in table.answers[k]))
        return self.node(table, k, target, counter, nodes, 0)

    def node(self, table: _Table, k: int, target: Atom, counter: Any, nodes: list, depth: int) -> dict:
        nodes[0] += 1
        ci, binds, children = table.justs[k]
        if depth >= _TREE_MAX_DEPTH or nodes[0] > _TREE_MAX_NODES:
            return {
                "goal": format_atom(target),
                "clause": ci.text,
                "bindings": {},
                "children": [],
                "naf": False,
                "builtin": False,
                "line": ci.line,
                "truncated": True,
            }
        sigma: dict = {}
        _match_args(table.answers[k], target.args, sigma)
        for b in binds:
            for v in _variables_of((b,), AVar):
                if v not in sigma:
                    sigma[v] = AVar(next(counter))
        values = {v: subst(b, sigma) for v, b in zip(ci.vars, binds, strict=True)}
        out_children = []
        for j, lit in enumerate(ci.body):
            ch = children[j]
            if type(lit) is Atom:
                inst = _literal_instance(lit, values)
                sub, kk = ch
                out_children.append(self.node(sub, kk, inst, counter, nodes, depth + 1))
            elif type(lit) is Naf:
                inst = _literal_instance(lit, values)
                out_children.append(
                    {
                        "goal": format_literal(inst),
                        "clause": None,
                        "bindings": {},
                        "children": [],
                        "naf": True,
                        "builtin": False,
                    }
                )
            else:
                inst = _literal_instance(lit, values, evaluate=False)
                out_children.append(
                    {
                        "goal": format_literal(inst),
                        "clause": None,
                        "bindings": {},
                        "children": [],
                        "naf": False,
                        "builtin": True,
                    }
                )
        return {
            "goal": format_atom(target),
            "clause": ci.text,
            "bindings": {ci.var_key(v): format_term(t) for v, t in values.items()},
            "children": out_children,
            "naf": False,
            "builtin": False,
            "line": ci.line,
        }


def _match_args(pattern: tuple, target: tuple, sigma: dict) -> None:
    if len(pattern) != len(target) or not all(match(p, t, sigma) for p, t in zip(pattern, target, strict=True)):
        raise AssertionError(f"proof tree: {pattern} does not generalise {target}")  # an engine bug, not user input


def _literal_instance(lit: Literal, values: dict, evaluate: bool = True) -> Literal:
    """``lit`` with clause variables replaced (``values`` maps a variable or holds an env)."""

    def sub(t: Any) -> Any:
        return resolve(t, values) if evaluate else resolve_raw(t, values)

    if type(lit) is Atom:
        return Atom(lit.pred, tuple(sub(a) for a in lit.args))
    if type(lit) is Naf:
        return Naf(Atom(lit.atom.pred, tuple(sub(a) for a in lit.atom.args)))
    return Comparison(lit.op, sub(lit.left), sub(lit.right))


def prove(program: Program, budget: Budget = Budget()) -> ProofResult:
    """Prove ``program.goal`` from ``program.clauses`` (tabled SLDNF, see the module docstring).

    Then, when the program has denials, check that none is violated (SymBa's consistency
    check): an inconsistent program proves no query.

    Pure: no global state, safe to call on trusted programs in-process; LLM-written
    programs go through :func:`solve` in a solver worker.

    Args:
        program: a parsed program.
        budget: depth, step and wall-clock limits.

    Returns:
        The result; ``kind`` says whether the search was complete or which limit ended it.
    """
    t0 = time.perf_counter()
    engine = _Engine(program.clauses + _denial_clauses(program.denials), budget)
    goal = program.goal
    inst, table, kind = _search_query(engine, goal)
    if kind == "complete" and engine.flags:
        kind = engine.flags[0]
    asked_tables, asked_missing = list(engine.tables.values()), list(engine.missing.values())
    violated = None
    if program.denials:
        kind, violated = _consistency(engine, program.denials, kind)
    has_answers = table is not None and bool(table.answers)
    answers: list = []
    tree = None
    if violated is not None or (program.denials and kind in ("depth", "steps", "wall")):
        proved = False  # an inconsistent program, or one whose consistency was not decided, proves nothing
    elif goal.negated:
        proved = kind == "complete" and not has_answers
        if proved:
            answers = [{}]
            tree = {
                "goal": "not " + format_atom(inst),
                "clause": None,
                "bindings": {},
                "children": [],
                "naf": True,
                "builtin": False,
            }
    else:
        proved = has_answers
        if proved:
            answers = _answers(inst, table)
            tree = engine.tree(table, 0)
    unproved = [format_atom(t.goal) for t in asked_tables if not t.answers]  # dicts keep first-met order
    return ProofResult(
        proved=proved,
        answers=answers,
        tree=tree,
        missing=asked_missing,
        kind=kind,
        steps=engine.steps,
        seconds=time.perf_counter() - t0,
        issues=list(engine.issues),
        unproved=unproved,
        violated=violated,
        negation_succeeded=engine.negation_succeeded,
    )


def _search_query(engine: _Engine, goal: Goal) -> tuple[Atom | None, _Table | None, str]:
    """(the query's atom, its table, the search's kind) after the top-down search."""
    try:
        inst = Atom(goal.atom.pred, tuple(evaluate_ground_parts(a) for a in goal.atom.args))
    except Undefined as exc:
        engine.issue(f"the query {format_goal(goal)} is undefined: {exc}")
        return None, None, "complete"
    try:
        return inst, engine.call(inst), "complete"
    except _Stop as stop:
        mapping: dict = {}
        return inst, engine.tables.get((inst.pred, tuple(canon(a, mapping) for a in inst.args))), stop.kind


def _answers(inst: Atom, table: _Table) -> list[dict]:
    """The bindings of the query's named variables, one dict per answer of its table."""
    names = [v for v in atom_variables(inst) if not v.anon]
    answers = []
    for args in table.answers:
        sigma: dict = {}
        env: dict = {}
        trail: list = []
        unify_args(inst.args, rename(args), env, trail)
        answers.append({v.name: value(canon(resolve_raw(v, env), sigma)) for v in names})
    return answers


#: The engine's own predicate for the denials: ``#inconsistent(k)`` holds when denial ``k`` is violated.
_INCONSISTENT = "#inconsistent"


def _denial_clauses(denials: tuple) -> tuple:
    """``not h :- b1, ..., bn.`` (the k-th denial) as the clause ``#inconsistent(k) :- b1, ..., bn, h.``"""
    return tuple(Clause(Atom(_INCONSISTENT, (k,)), (*d.body, d.head), d.source_line) for k, d in enumerate(denials))


def _consistency(engine: _Engine, denials: tuple, kind: str) -> tuple[str, dict | None]:
    """(kind, violated denial or None): SymBa's consistency check, after the query's search."""
    if kind in ("depth", "steps", "wall"):
        return kind, None  # the budget is spent: consistency stays undecided
    try:
        table = engine.call(Atom(_INCONSISTENT, (Var("K"),)))
    except _Stop as stop:
        return stop.kind, None
    if kind == "complete" and engine.flags:
        kind = engine.flags[0]
    if not table.answers:
        return kind, None
    denial = denials[min(args[0] for args in table.answers)]
    statement = format_clause(denial)
    engine.issue(
        f"line {denial.source_line}: the program is inconsistent: `{statement}` is violated (its atom is "
        "provable where its body holds), so no query is proved"
    )
    return "inconsistent", {"line": denial.source_line, "statement": statement}


def head_unifies(clause: Clause, goal: Goal | Atom) -> bool:
    """Whether ``clause`` could resolve ``goal``: its head unifies with the goal's atom.

    This is SymBa's symbolic check of a statement an LLM wrote for a subgoal (for
    ``not g`` the atom ``g`` is the one to unify with). Variables of the clause and of
    the goal are kept apart; a head argument that is an expression unifies when it is
    not yet ground (the solver compares it once the body has bound it), and is
    compared by value when it is.

    Args:
        clause: a parsed clause.
        goal: a goal (e.g. from :func:`parse_goal`) or an atom.

    Returns:
        True when the head and the goal's atom unify.
    """
    atom = goal.atom if isinstance(goal, Goal) else goal
    head = clause.head
    if head.pred != atom.pred or len(head.args) != len(atom.args):
        return False
    apart = {v: Fresh() for v in atom_variables(atom)}
    env: dict = {}
    trail: list = []
    try:
        goal_args = tuple(resolve(a, apart) for a in atom.args)
        for h, g in zip(head.args, goal_args, strict=True):
            if type(h) is Expr:
                if not is_ground(h):
                    continue
                h = evaluate_expression(h)
            if not unify(h, g, env, trail):
                return False
    except Undefined:
        return False
    return True


# --------------------------------------------------------------------------- registry entry point


def solve(text: str, limits: Limits) -> Outcome:
    """Parse and prove a program. Never raises for a bad program.

    Args:
        text: the program (clauses and one ``?- goal.`` line).
        limits: ``timeout_s`` is the wall-clock budget; ``max_depth`` caps the nesting
            depth (at most :data:`DEFAULT_MAX_DEPTH`); ``max_answers`` caps the answers
            written into the proof.

    Returns:
        ``PROVED``/"True" when the goal holds; ``DISPROVED``/"False" when the search
        was complete without a proof (closed world); ``TIMEOUT`` when a budget ran out
        first; ``RUNTIME_ERROR`` (``ErrorKind.UNSUPPORTED``) on floundering or recursion
        through negation. An inconsistent program (a denial violated) proves no query:
        ``DISPROVED``/"False", as SymBa's solver answers it. ``proof`` is the JSON of
        ``{"proved", "answers", "tree", "missing", "unproved", "kind", "steps", "issues",
        "negation_succeeded"}``
        (and ``"violated"`` for an inconsistent program).
    """
    with Stopwatch() as sw:
        try:
            program = parse(text)
            _check_query_arithmetic(program.goal)
        except ProgramError as exc:
            return exc.to_outcome(seconds=sw.elapsed(), backend=BACKEND)
        budget = Budget(max_depth=min(limits.max_depth, DEFAULT_MAX_DEPTH), timeout_s=limits.timeout_s)
        result = prove(program, budget)
        doc = result.to_dict()
        doc["answers"] = doc["answers"][: limits.max_answers]
        proof = json.dumps(doc)
    common = {"proof": proof, "seconds": sw.seconds, "backend": BACKEND}
    kind = result.kind
    if kind in ("floundered", "nonstratified"):
        what = "floundering" if kind == "floundered" else "recursion through negation"
        detail = "; ".join(result.issues[:3]) or what
        return Outcome(
            status=Status.RUNTIME_ERROR,
            error_kind=ErrorKind.UNSUPPORTED.value,
            error_message=f"{what}: {detail}",
            error_line=_first_line(result.issues),
            **common,
        )
    if result.proved or kind in ("complete", "inconsistent"):
        answer = "True" if result.proved else "False"
        try:  # the proof-tree certificate; none if it cannot be built
            certificate = symba_tree.certificate(program, result, answer)
        except Exception:  # noqa: BLE001 - solve never raises; an answer without a certificate is still an answer
            certificate = None
        status = Status.PROVED if result.proved else Status.DISPROVED
        return Outcome(status=status, answer=answer, certificate=certificate, **common)
    limit = {
        "depth": f"depth budget ({budget.max_depth} nested calls)",
        "steps": f"step budget ({budget.max_steps} steps)",
        "wall": f"time budget ({budget.timeout_s:g} s)",
    }[kind]
    return Outcome(
        status=Status.TIMEOUT,
        error_kind=ErrorKind.TIMEOUT.value,
        error_message=f"{limit} exhausted after {result.steps} steps without a proof of {format_goal(program.goal)}; "
        "a rule may generate unboundedly many values (e.g. arithmetic in a recursive rule)",
        **common,
    )


def _check_query_arithmetic(goal: Goal) -> None:
    """A query whose arguments compute no value is a malformed program (raises ProgramError at its line)."""
    try:
        for a in goal.atom.args:
            evaluate_ground_parts(a)
    except Undefined as exc:
        raise ProgramError(
            f"the query {format_atom(goal.atom)} has an undefined argument: {exc}", goal.source_line
        ) from None


def _first_line(issues: list) -> int | None:
    for msg in issues:
        m = re.match(r"line (\d+):", msg)
        if m:
            return int(m.group(1))
    return None
