"""The SymBa clause language ("symba") and its tabled backward chainer.

SymBa (symbolic backward chaining) proves a goal top-down; where a subgoal has no
clause, its method asks an LLM for one statement and retries. This module is the
symbolic half: the language, a parser that says what is wrong and where, and a
solver that records which subgoals had no clause (:attr:`ProofResult.missing`) and
which ended without a proof (:attr:`ProofResult.unproved`), so that the method knows
what to ask for. It calls no model.

Language
--------

A program is a sequence of statements, each ending in ``.``, and exactly one query::

    % ProofWriter record 243 (left-recursive rule)
    is(mouse, blue). is(mouse, red).
    eats(X, mouse) :- is(X, red).
    is(mouse, nice) :- eats(X, mouse).
    is(bear, red) :- is(X, red), chases(X, bear).
    chases(X, bear) :- is(X, nice), is(X, blue).
    ?- eats(bear, mouse).

* ``%`` starts a comment that runs to the end of the line, except between two
  arithmetic operands on one line (``X = Y % 3``), where it is the modulo operator.
  Whitespace and line breaks are free; a statement may span lines.
* Terms: constants are lower-case identifiers (``bald_eagle``), numbers (``3``,
  ``-2``, ``2.5``, ``1e-3``) or double-quoted strings (``"New York"``, escapes
  ``\\"``, ``\\\\``, ``\\n``, ``\\t``); variables start with an upper-case letter
  or ``_``; each ``_`` alone is a fresh anonymous variable. There are no function
  symbols: ``f(a)`` as an argument is an error (arithmetic aside, below).
* Atoms: ``pred(arg, ...)`` or a bare ``pred``. ``-pred(...)`` is classical
  negation: a predicate of its own, named ``-pred``, usable wherever an atom is
  (heads, bodies, under ``not``, the query). Nothing relates ``p`` and ``-p``: a
  program may derive both (no consistency check, unlike an answer-set solver).
* Clauses: facts ``h.`` and rules ``h :- l1, ..., ln.`` Body literals are atoms,
  ``not atom`` (negation as failure; ``\\+ atom``, ``not(atom)`` too), and
  comparisons ``L op R`` with ``op`` in ``= != < <= > >=`` (also written ``==``,
  ``\\=``, ``<>``, ``=<``, and Prolog's ``X is Expr`` for ``=``).
* Arithmetic, in comparisons and in atom arguments: numbers, variables, ``+ - * /
  ** %``, parentheses, unary minus, ``round(E)``, ``max(E, ...)``, ``min(E, ...)``,
  ``abs(E)``. ``**`` binds tighter than unary minus (``-2 ** 2`` is ``-4``) and
  groups to the right. ``/`` is true division (``7 / 2`` is ``3.5``), ``round``
  rounds halves away from zero.
* Pooling, as in clingo: ``(a;b)`` in an argument, or ``p(a;b)`` / ``p(a, b; c, d)``
  (``;`` between whole argument tuples), expands the statement into one clause per
  combination, in heads and bodies alike (``p :- q(1;2).`` is ``p :- q(1).`` and
  ``p :- q(2).``; under ``not`` too).
* The query ``?- goal.`` is one literal: an atom (``is(bob, red)``, or with
  variables, ``answer(X)``, which enumerates the bindings) or ``not atom``.
* Not supported, with a message that says so: integrity constraints (``:- b.``),
  disjunctive or choice heads, conjunctive queries, function symbols.

Malformed text raises :class:`~symbolkg.solvers.outcomes.ProgramError` with the line
number; :func:`parse` never raises anything else. :func:`format_clause` and friends
print terms back in the same syntax (``parse(format(p)) == p``).

Numbers
-------

Every number is normalised: a float with an integral value is stored as the int
(``5.0`` is ``5``, so ``5 = 5.0`` holds and ``answer(18.0)`` prints ``answer(18)``),
and floats are rounded to 12 significant digits after each operation, so that
``0.1 + 0.2 = 0.3`` holds. Results beyond 1e100 in magnitude, division by zero,
and arithmetic on a non-number make the literal *undefined*: it fails (as in
clingo) and the reason is recorded in :attr:`ProofResult.issues`.

``X = E``: if one side is an unbound variable it is bound to the value of the
other side; if both sides are ground they are compared (numbers by value,
constants as constants, a number never equals a constant); two unbound variables
are unified. ``!=`` compares ground terms; ``< <= > >=`` compare numbers only.
An atom argument that is an expression is evaluated once its variables are bound
(``p(X + 1)`` called with ``X = 2`` is ``p(3)``); an expression that is still
non-ground unifies only with the same expression (Prolog's structural reading).

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

:func:`head_unifies` is the symbolic check SymBa applies to a statement written for a
subgoal (does its head unify with it?). :func:`check_tree` re-checks a proof tree on its own (every node an instance of a
program clause, builtins true, negated atoms not provable). :func:`solve` is the
registry entry point: ``PROVED``/"True" when the goal holds, ``DISPROVED``/"False"
when the search was complete and found no proof (closed world), ``TIMEOUT`` when
a budget ran out first, ``RUNTIME_ERROR`` for floundering and recursion through
negation; ``Outcome.proof`` is the JSON of the :class:`ProofResult`.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

BACKEND = "symba-chainer"

#: The nesting depth :func:`solve` allows (tabled calls inside tabled calls).
DEFAULT_MAX_DEPTH = 200

#: ``ProofResult.kind`` values.
KINDS = ("complete", "depth", "steps", "wall", "floundered", "nonstratified")

# --------------------------------------------------------------------------- terms


@dataclass(frozen=True, slots=True)
class Var:
    """A variable of a clause. ``anon > 0``: the k-th ``_`` of its clause (printed ``_``)."""

    name: str
    anon: int = 0

    def __str__(self) -> str:
        return "_" if self.anon else self.name

    def __hash__(self) -> int:  # cheaper than the generated tuple hash; str hashes are cached
        return hash(self.name) + self.anon


@dataclass(frozen=True, slots=True)
class Str:
    """A double-quoted string constant (distinct from the identifier with the same letters)."""

    value: str


@dataclass(frozen=True, slots=True)
class Expr:
    """An arithmetic expression: ``op`` in ``+ - * / ** % neg round max min abs``."""

    op: str
    args: tuple


#: A term: identifier constant (str), number, :class:`Str`, :class:`Var` or :class:`Expr`.
Term = str | int | float | Str | Var | Expr


@dataclass(frozen=True, slots=True)
class Atom:
    """``pred(args...)``; a classically negated atom has a ``pred`` starting with ``-``."""

    pred: str
    args: tuple = ()

    @property
    def arity(self) -> int:
        return len(self.args)


@dataclass(frozen=True, slots=True)
class Naf:
    """``not atom``: negation as failure."""

    atom: Atom


@dataclass(frozen=True, slots=True)
class Comparison:
    """``left op right``, ``op`` in ``= != < <= > >=``."""

    op: str
    left: Term
    right: Term


#: A body literal.
Literal = Atom | Naf | Comparison


@dataclass(frozen=True)
class Clause:
    """A fact (empty body) or rule, after pooling expansion.

    Attributes:
        head: the conclusion.
        body: the literals, in order.
        source_line: 1-based line of the program where the statement starts.
    """

    head: Atom
    body: tuple = ()
    source_line: int = 0


@dataclass(frozen=True)
class Goal:
    """The query: ``atom`` or, with ``negated``, ``not atom``."""

    atom: Atom
    negated: bool = False
    source_line: int = 0


@dataclass(frozen=True)
class Program:
    """A parsed program: the clauses (pooling expanded) and the query."""

    clauses: tuple
    goal: Goal


# Engine-only variables: a tabled call's variables (canonical, numbered by first
# occurrence) and fresh renamings of non-ground answers.
@dataclass(frozen=True, slots=True)
class _AVar:
    index: int

    def __hash__(self) -> int:
        return self.index


class _Fresh:
    __slots__ = ()


_VARS = frozenset({Var, _AVar, _Fresh})
_CONSTS = frozenset({str, int, float, Str})
_UNBOUND = object()

# --------------------------------------------------------------------------- formatting

_CMP_OPS = ("=", "!=", "<", "<=", ">", ">=")
_BIN_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2, "**": 4}
_FUNCS = frozenset({"round", "max", "min", "abs"})


def _var_letters(i: int) -> str:
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 26] + (str(i // 26) if i >= 26 else "")


def _prec(t: Term) -> int:
    if type(t) is Expr:
        if t.op in _BIN_PREC:
            return _BIN_PREC[t.op]
        return 3 if t.op == "neg" else 5
    if type(t) in (int, float) and t < 0:
        return 3  # a negative literal reads like unary minus
    return 5


def format_term(t: Term) -> str:
    """Print a term in program syntax (canonical engine variables print as ``A``, ``B``, ...)."""
    tt = type(t)
    if tt is str:
        return t
    if tt is int:
        return str(t)
    if tt is float:
        return repr(t)
    if tt is Var:
        return str(t)
    if tt is Str:
        return '"' + t.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    if tt is _AVar:
        return _var_letters(t.index)
    if tt is _Fresh:
        return "_"
    if tt is Expr:
        op, args = t.op, t.args
        if op in _FUNCS:
            return f"{op}({', '.join(format_term(a) for a in args)})"
        if op == "neg":
            inner = format_term(args[0])
            return "-" + (f"({inner})" if _prec(args[0]) <= 4 else inner)
        left, right = args
        p = _BIN_PREC[op]
        if op == "**":  # right-associative; the base must be a primary
            ls = format_term(left)
            ls = f"({ls})" if _prec(left) <= 4 else ls
            rs = format_term(right)
            rs = f"({rs})" if _prec(right) < 3 else rs
            return f"{ls} ** {rs}"
        ls = format_term(left)
        ls = f"({ls})" if _prec(left) < p else ls
        rs = format_term(right)
        rs = f"({rs})" if _prec(right) <= p and not (_prec(right) == 3 and p < 3) else rs
        return f"{ls} {op} {rs}"
    raise TypeError(f"not a term: {t!r}")


def format_atom(a: Atom) -> str:
    """``pred(arg, ...)`` or ``pred``."""
    if not a.args:
        return a.pred
    return f"{a.pred}({', '.join(format_term(x) for x in a.args)})"


def format_literal(lit: Literal) -> str:
    if type(lit) is Atom:
        return format_atom(lit)
    if type(lit) is Naf:
        return "not " + format_atom(lit.atom)
    return f"{format_term(lit.left)} {lit.op} {format_term(lit.right)}"


def format_clause(c: Clause) -> str:
    """``head.`` or ``head :- l1, ..., ln.``"""
    if not c.body:
        return format_atom(c.head) + "."
    return f"{format_atom(c.head)} :- {', '.join(format_literal(b) for b in c.body)}."


def format_goal(g: Goal) -> str:
    return ("not " if g.negated else "") + format_atom(g.atom)


def format_program(p: Program) -> str:
    """The whole program, one clause per line, then the query."""
    return "".join(format_clause(c) + "\n" for c in p.clauses) + f"?- {format_goal(p.goal)}.\n"


# --------------------------------------------------------------------------- arithmetic


class _Undefined(Exception):
    """An arithmetic expression without a value (division by zero, a non-number, overflow)."""


_LIMIT = 1e100


def _norm(x: float) -> float:
    if type(x) is int:
        if -(10**100) <= x <= 10**100:
            return x
        raise _Undefined("result too large (beyond 1e100)")
    if math.isnan(x) or not -_LIMIT <= x <= _LIMIT:
        raise _Undefined("result too large or not a number")
    x = float(f"{x:.12g}")
    if x.is_integer():
        return int(x)
    return x


def _is_num(x: Any) -> bool:
    return type(x) is int or type(x) is float


def _evaluate(e: Expr) -> int | float:
    """Value of a ground expression; raises _Undefined."""
    vals = []
    for a in e.args:
        v = _evaluate(a) if type(a) is Expr else a
        if not _is_num(v):
            raise _Undefined(f"cannot compute {format_term(e)}: {format_term(v)} is not a number")
        vals.append(v)
    op = e.op
    try:
        if op == "+":
            r = vals[0] + vals[1]
        elif op == "-":
            r = vals[0] - vals[1]
        elif op == "*":
            r = vals[0] * vals[1]
        elif op == "/":
            a, b = vals
            if b == 0:
                raise _Undefined(f"division by zero in {format_term(e)}")
            r = a // b if type(a) is int and type(b) is int and a % b == 0 else a / b
        elif op == "%":
            a, b = vals
            if b == 0:
                raise _Undefined(f"modulo by zero in {format_term(e)}")
            r = a % b
        elif op == "**":
            a, b = vals
            if a == 0 and b < 0:
                raise _Undefined(f"division by zero in {format_term(e)}")
            approx = math.pow(float(a), float(b))  # OverflowError / ValueError below
            if abs(approx) > _LIMIT:
                raise _Undefined(f"{format_term(e)} is too large")
            r = a**b if type(a) is int and type(b) is int and b >= 0 else approx
        elif op == "neg":
            r = -vals[0]
        elif op == "abs":
            r = abs(vals[0])
        elif op == "round":
            v = vals[0]
            r = math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)
        elif op == "max":
            r = max(vals)
        elif op == "min":
            r = min(vals)
        else:  # pragma: no cover - the parser builds no other operator
            raise _Undefined(f"unknown operator {op}")
    except OverflowError:
        raise _Undefined(f"{format_term(e)} is too large") from None
    except (ValueError, ZeroDivisionError) as exc:
        raise _Undefined(f"cannot compute {format_term(e)}: {exc}") from None
    if type(r) is complex:
        raise _Undefined(f"{format_term(e)} has no real value")
    return _norm(r)


def _is_ground(t: Term) -> bool:
    tt = type(t)
    if tt in _CONSTS:
        return True
    if tt is Expr:
        return all(_is_ground(a) for a in t.args)
    return False


def _eval_ground_exprs(t: Term) -> Term:
    """Evaluate every ground sub-expression of an atom argument."""
    if type(t) is not Expr:
        return t
    args = tuple(_eval_ground_exprs(a) for a in t.args)
    if all(type(a) in _CONSTS for a in args):
        return _evaluate(Expr(t.op, args))
    return Expr(t.op, args)


# --------------------------------------------------------------------------- parsing

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<nl>\n)
  | (?P<comment>%[^\n]*)
  | (?P<num>\d+\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)
  | (?P<name>[a-z][A-Za-z0-9_]*)
  | (?P<var>[A-Z_][A-Za-z0-9_]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<op>:-|\?-|\\\+|\*\*|<=|>=|=<|!=|\\=|<>|==|[().,;<>=+\-*/])
  | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_MOD_NEXT_RE = re.compile(r"[ \t]*(?:\d|[A-Z_]|\(|-|(?:round|max|min|abs)\s*\()")
_CMP_TOKENS = {"=": "=", "==": "=", "!=": "!=", "\\=": "!=", "<>": "!=", "<": "<", "<=": "<=", "=<": "<=", ">": ">", ">=": ">="}
_ARG_END = frozenset({",", ")", ";"})
_MAX_EXPANSION = 10_000
_MAX_NESTING = 100


class _Tok(NamedTuple):
    kind: str  # num, name, var, str, op, eof
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class _Pool:
    options: tuple


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    append = toks.append
    line, pos = 1, 0
    while True:
        for m in _TOKEN_RE.finditer(text, pos):
            kind = m.lastgroup
            if kind == "ws":
                continue
            if kind == "nl":
                line += 1
                continue
            if kind == "comment":
                # `%` between two operands on one line is the modulo operator: emit it and
                # tokenize the rest of the line again.
                prev = toks[-1] if toks else None
                start = m.start()
                if prev is not None and prev.line == line and (prev.kind in ("num", "var") or prev.text == ")") \
                        and _MOD_NEXT_RE.match(text, start + 1):
                    append(_Tok("op", "%", line))
                    pos = start + 1
                    break
                continue
            if kind == "bad":
                raise _bad_character(text, m.start(), line)
            append(_Tok(kind, m.group(), line))
        else:
            break
    append(_Tok("eof", "", line))
    return toks


def _bad_character(text: str, pos: int, line: int) -> ProgramError:
    ch = text[pos]
    snippet = text[pos : pos + 12].split("\n")[0]
    hint = ""
    if ch == "'":
        hint = "; quote strings with double quotes (\"...\")"
    elif ch == '"':
        hint = "; a string must close on the same line"
    elif ch in "{}":
        hint = "; choice rules and aggregates are not supported"
    elif ch.isalpha():
        hint = "; identifiers use ASCII letters, digits and '_'"
    return ProgramError(f"unexpected character {ch!r} at {snippet!r}{hint}", line)


def _number(text: str) -> int | float:
    if re.fullmatch(r"\d+", text):
        return _norm(int(text))
    return _norm(float(text))


def _unescape(body: str, line: int) -> str:
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise ProgramError(f"unknown escape \\{nxt} in a string (use \\\" \\\\ \\n \\t)", line)
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}


def _describe(tok: _Tok) -> str:
    return "the end of the program" if tok.kind == "eof" else repr(tok.text)


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokenize(text)
        self.i = 0
        self.tok = self.toks[0]
        self.depth = 0
        self.saw_anon = False  # the current statement has an anonymous variable `_`
        self.vars: dict[str, Var] = {}  # one object per name: dict lookups then hit by identity

    # -- token helpers
    def peek(self, k: int = 1) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self) -> _Tok:
        t = self.tok
        if t.kind != "eof":
            self.i += 1
            self.tok = self.toks[self.i]
        return t

    def var(self, name: str) -> Var:
        if name == "_":
            self.saw_anon = True
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = Var(name)
        return v

    def is_op(self, text: str, tok: _Tok | None = None) -> bool:
        # operator texts never collide with other tokens' texts (names, numbers, quoted strings)
        return (tok or self.tok).text == text

    def expect_op(self, text: str, what: str) -> _Tok:
        if not self.is_op(text):
            raise ProgramError(f"expected {text!r} {what}, found {_describe(self.tok)}", self.tok.line)
        return self.take()

    # -- statements
    def program(self) -> Program:
        clauses: list[Clause] = []
        goals: list[Goal] = []
        while self.tok.kind != "eof":
            if self.is_op("?-"):
                goals.append(self.query())
            else:
                clauses.extend(self.clause())
        if not goals:
            raise ProgramError("the program has no query: add one line '?- goal.' such as '?- is(bob, red).'", None, ErrorKind.NO_ANSWER)
        if len(goals) > 1:
            lines = ", ".join(str(g.source_line) for g in goals)
            raise ProgramError(f"the program must have exactly one query '?- goal.', found {len(goals)} (lines {lines})", goals[1].source_line, ErrorKind.NO_ANSWER)
        return Program(tuple(clauses), goals[0])

    def end_of_statement(self, start: int, what: str) -> None:
        if self.is_op("."):
            self.take()
            return
        tok = self.tok
        if tok.kind == "eof":
            raise ProgramError(f"missing '.' at the end of the {what} that starts on line {start}", tok.line)
        if self.is_op(";"):
            raise ProgramError(f"disjunction with ';' is not supported here (only inside arguments, as pooling); found in the {what} that starts on line {start}", tok.line, ErrorKind.UNSUPPORTED)
        raise ProgramError(f"expected ',' or '.' after a literal in the {what} that starts on line {start}, found {_describe(tok)} (missing '.' at the end of the previous statement?)", tok.line)

    def query(self) -> Goal:
        start = self.take().line  # '?-'
        goal = self.goal_literal(start)
        if self.is_op(","):
            raise ProgramError("the query must be a single atom or 'not atom', not a conjunction: define a rule for the conjunction and query its head", self.tok.line, ErrorKind.NO_ANSWER)
        self.end_of_statement(start, "query")
        return goal

    def goal_literal(self, line: int) -> Goal:
        negated = False
        if self.is_naf_start():
            self.take()
            negated = True
        atoms = self.atom_with_paren(allow_paren=negated) if negated else self.atom_options(classical_ok=True)
        if len(atoms) != 1 or _has_pool(atoms[0]):
            raise ProgramError("pooling (';') is not allowed in the query: ask one goal", line, ErrorKind.NO_ANSWER)
        atom = atoms[0]
        if self.tok.kind == "op" and (self.tok.text in _CMP_TOKENS):
            raise ProgramError("the query must be an atom or 'not atom', not a comparison: define a rule such as 'answer(X) :- ...' and query it", self.tok.line, ErrorKind.NO_ANSWER)
        try:
            atom = Atom(atom.pred, tuple(_eval_ground_exprs(a) for a in atom.args))
        except _Undefined as exc:
            raise ProgramError(f"the query {format_atom(atom)} has an undefined argument: {exc}", line) from None
        return Goal(_number_anons([_mark_anons(atom)])[0], negated, line)

    def is_naf_start(self) -> bool:
        tok = self.tok
        if tok.kind == "op" and tok.text == "\\+":
            return True
        if tok.kind == "name" and tok.text == "not":
            nxt = self.peek()
            return nxt.kind in ("name", "var") or (nxt.kind == "op" and nxt.text in ("(", "-"))
        return False

    def clause(self) -> list[Clause]:
        start = self.tok.line
        self.saw_anon = False
        if self.is_op(":-"):
            raise ProgramError("integrity constraints (':- body.') are not supported: write rules that conclude an atom", start, ErrorKind.UNSUPPORTED)
        if self.is_naf_start():
            raise ProgramError("a clause head cannot use 'not'; for a negative conclusion use classical negation, e.g. '-is(bob, red) :- ...'", start, ErrorKind.UNSUPPORTED)
        heads = self.atom_options(classical_ok=True, where="clause head")
        if self.tok.kind == "op" and self.tok.text in _CMP_TOKENS:
            raise ProgramError(f"a clause head must be an atom, found a comparison after {format_atom(heads[0])}", self.tok.line)
        body: list[list[Literal]] = []
        if self.is_op(":-"):
            self.take()
            body.append(self.body_literal())
            while self.is_op(","):
                self.take()
                body.append(self.body_literal())
        elif self.is_op(","):
            raise ProgramError("expected ':-' or '.' after the clause head, found ','; a fact states one atom (write one fact per atom)", self.tok.line)
        self.end_of_statement(start, "clause")
        return _expand(heads, body, start, self.saw_anon)

    def body_literal(self) -> list[Literal]:
        line = self.tok.line
        if self.tok.kind == "op" and self.tok.text in (".", ","):
            raise ProgramError(f"expected a literal after ':-' or ',', found {_describe(self.tok)}", line)
        if self.tok.kind == "name" and self.tok.text == "not" and self.peek().kind in ("num", "str"):
            raise ProgramError("'not' applies to atoms; for a comparison write the opposite one (e.g. X != 2 for not X = 2)", line, ErrorKind.UNSUPPORTED)
        if self.is_naf_start():
            self.take()
            if self.is_naf_start():
                raise ProgramError("double negation 'not not' is not supported", line, ErrorKind.UNSUPPORTED)
            return [Naf(a) for a in self.atom_with_paren(allow_paren=True)]
        if self.is_op("-") and self.peek().kind == "name" and not (self.peek().text in _FUNCS and self.is_op("(", self.peek(2))):
            return self.atom_options(classical_ok=True)
        if self.tok.kind == "name" and self.tok.text not in _FUNCS and self.peek().text == "(":
            atoms = self.atom_options(classical_ok=False)  # fast path: an atom literal
            if self.tok.kind == "op" and self.tok.text in _CMP_TOKENS:
                raise ProgramError(f"{atoms[0].pred}(...) is not arithmetic: comparisons take numbers, variables, constants and + - * / ** % round max min abs", line)
            return atoms
        left = self.expr()
        tok = self.tok
        op = None
        if tok.kind == "op" and tok.text in _CMP_TOKENS:
            op = _CMP_TOKENS[tok.text]
        elif tok.kind == "name" and tok.text == "is" and not self.is_op("(", self.peek()):
            op = "="
        if op is not None:
            self.take()
            right = self.expr()
            if isinstance(left, _AtomTerm) or isinstance(right, _AtomTerm):
                bad = left if isinstance(left, _AtomTerm) else right
                raise ProgramError(f"{bad.text}(...) is not arithmetic: comparisons take numbers, variables, constants and + - * / ** % round max min abs", line)
            return [Comparison(op, l, r) for l, r in itertools.product(_expand_term(left), _expand_term(right))]
        if isinstance(left, _AtomTerm):
            return list(left.atoms)
        if type(left) is str:
            return [Atom(left)]
        if type(left) is Expr and left.op in _FUNCS:  # a predicate named round/max/min/abs
            return _expand_atom(Atom(left.op, left.args))
        raise ProgramError(f"expected a literal (an atom, 'not atom' or a comparison such as X = Y + 1), found {_show(left)} followed by {_describe(tok)}", line)

    def atom_with_paren(self, allow_paren: bool) -> list[Atom]:
        if allow_paren and self.is_op("("):
            self.take()
            atoms = self.atom_options(classical_ok=True)
            self.expect_op(")", "to close 'not('")
            return atoms
        return self.atom_options(classical_ok=True)

    def atom_options(self, classical_ok: bool, where: str = "literal") -> list[Atom]:
        line = self.tok.line
        neg = ""
        if classical_ok and self.is_op("-"):
            self.take()
            neg = "-"
        tok = self.tok
        if tok.kind != "name":
            found = _describe(tok)
            hint = " (variables cannot be predicates)" if tok.kind == "var" else ""
            raise ProgramError(f"expected an atom such as pred(a, B) as {where}, found {found}{hint}", line)
        self.take()
        if tok.text in ("not", "is") and not self.is_op("("):
            raise ProgramError(f"{tok.text!r} cannot be used as a predicate name here", tok.line)
        if not self.is_op("("):
            return [Atom(neg + tok.text)]
        tuples = self.arguments(tok.text)
        return [Atom(neg + tok.text, t) for t in tuples]

    def arguments(self, pred: str) -> list[tuple]:
        """``( tuple {';' tuple} )`` where ``tuple := arg {',' arg}``; returns each tuple."""
        open_tok = self.take()  # '('
        if self.is_op(")"):
            raise ProgramError(f"{pred}() has empty parentheses: write the bare name {pred} for an atom without arguments", open_tok.line)
        tuples: list[tuple] = []
        current: list[Term] = []
        while True:
            current.append(self.argument(pred))
            if self.is_op(","):
                self.take()
                continue
            if self.is_op(";"):
                self.take()
                tuples.append(tuple(current))
                current = []
                continue
            if self.is_op(")"):
                self.take()
                tuples.append(tuple(current))
                return tuples
            raise ProgramError(f"expected ',' or ')' in the arguments of {pred}(...), found {_describe(self.tok)}", self.tok.line)

    def argument(self, pred: str) -> Term:
        tok = self.tok
        if tok.kind in ("name", "var") and self.toks[self.i + 1].text in _ARG_END:
            # fast path: a lone constant or variable
            if tok.kind == "name":
                self.take()
                return tok.text
            if tok.kind == "var":
                self.take()
                return self.var(tok.text)
        line = tok.line
        t = self.expr()
        if isinstance(t, _AtomTerm):
            raise ProgramError(f"function symbols are not supported: {t.text}(...) inside {pred}(...); arguments are constants, numbers, strings, variables or arithmetic", line, ErrorKind.UNSUPPORTED)
        return t

    # -- arithmetic: expr := term {(+|-) term}; term := unary {(*|/|%) unary};
    #    unary := '-' unary | power; power := primary ['**' unary]
    def nest(self) -> None:
        self.depth += 1
        if self.depth > _MAX_NESTING:
            raise ProgramError("expression nested too deeply", self.tok.line)

    def expr(self) -> Any:
        self.nest()
        try:
            left = self.term()
            while self.tok.kind == "op" and self.tok.text in ("+", "-"):
                op = self.take().text
                left = _binop(op, left, self.term(), self.tok.line)
            return left
        finally:
            self.depth -= 1

    def term(self) -> Any:
        left = self.unary()
        while self.tok.kind == "op" and self.tok.text in ("*", "/", "%"):
            op = self.take().text
            left = _binop(op, left, self.unary(), self.tok.line)
        return left

    def unary(self) -> Any:
        if self.is_op("-"):
            line = self.take().line
            self.nest()
            try:
                inner = self.unary()
            finally:
                self.depth -= 1
            if _is_num(inner):
                return _norm(-inner)
            _check_arith(inner, line)
            return Expr("neg", (inner,))
        base = self.primary()
        if self.is_op("**"):
            line = self.take().line
            self.nest()
            try:
                exponent = self.unary()
            finally:
                self.depth -= 1
            return _binop("**", base, exponent, line)
        return base

    def primary(self) -> Any:
        tok = self.tok
        if tok.kind == "num":
            self.take()
            try:
                return _number(tok.text)
            except _Undefined:
                raise ProgramError(f"number {tok.text} is too large", tok.line) from None
        if tok.kind == "var":
            self.take()
            return self.var(tok.text)
        if tok.kind == "str":
            self.take()
            return Str(_unescape(tok.text[1:-1], tok.line))
        if tok.kind == "name":
            self.take()
            if not self.is_op("("):
                return tok.text
            if tok.text in _FUNCS:
                self.take()
                args = [self.expr()]
                while self.is_op(","):
                    self.take()
                    args.append(self.expr())
                self.expect_op(")", f"to close {tok.text}(")
                if tok.text in ("round", "abs") and len(args) != 1:
                    raise ProgramError(f"{tok.text}() takes one argument, found {len(args)}", tok.line)
                for a in args:
                    _check_arith(a, tok.line)
                return Expr(tok.text, tuple(args))
            tuples = self.arguments(tok.text)
            return _AtomTerm(tok.text, [Atom(tok.text, t) for t in tuples])
        if tok.kind == "op" and tok.text == "(":
            self.take()
            options = [self.expr()]
            while self.is_op(";"):
                self.take()
                options.append(self.expr())
            if self.is_op(","):
                raise ProgramError("tuples '(a, b)' are not supported as arguments; pool alternatives with ';' as in (a;b)", self.tok.line, ErrorKind.UNSUPPORTED)
            self.expect_op(")", "to close '('")
            if len(options) == 1:
                return options[0]
            for o in options:
                if isinstance(o, _AtomTerm):
                    raise ProgramError(f"function symbols are not supported: {o.text}(...) in a pool", tok.line, ErrorKind.UNSUPPORTED)
            return _Pool(tuple(options))
        raise ProgramError(f"expected a term (constant, number, string, variable or expression), found {_describe(tok)}", tok.line)


@dataclass
class _AtomTerm:
    """``name(args)`` met where a term or a literal may stand (the caller decides which)."""

    text: str
    atoms: list


def _show(t: Any) -> str:
    if type(t) is _Pool:
        return "(" + ";".join(_show(o) for o in t.options) + ")"
    if isinstance(t, _AtomTerm):
        return f"{t.text}(...)"
    try:
        return format_term(t)
    except TypeError:  # an expression with a pool inside
        return "an expression"


def _check_arith(t: Any, line: int) -> None:
    if isinstance(t, _AtomTerm):
        raise ProgramError(f"{t.text}(...) is not arithmetic: expressions take numbers, variables and + - * / ** % round max min abs", line)


def _binop(op: str, left: Any, right: Any, line: int) -> Expr:
    _check_arith(left, line)
    _check_arith(right, line)
    return Expr(op, (left, right))


def _has_pool(x: Any) -> bool:
    if type(x) is _Pool:
        return True
    if type(x) is Expr:
        return any(_has_pool(a) for a in x.args)
    if type(x) is Atom:
        return any(_has_pool(a) for a in x.args)
    return False


def _expand_term(t: Any) -> list:
    if type(t) is _Pool:
        return [x for o in t.options for x in _expand_term(o)]
    if type(t) is Expr:
        return [Expr(t.op, args) for args in itertools.product(*[_expand_term(a) for a in t.args])]
    return [t]


def _expand_atom(a: Atom) -> list:
    if not any(_has_pool(x) for x in a.args):
        return [a]
    return [Atom(a.pred, args) for args in itertools.product(*[_expand_term(x) for x in a.args])]


def _expand_literal(lit: Literal) -> list:
    if type(lit) is Atom:
        return _expand_atom(lit)
    if type(lit) is Naf:
        return [Naf(a) for a in _expand_atom(lit.atom)]
    return [Comparison(lit.op, l, r) for l, r in itertools.product(_expand_term(lit.left), _expand_term(lit.right))]


def _number_anons(items: list) -> list:
    """Renumber the anonymous variables of one clause (head and body) in order of appearance."""
    counter = itertools.count(1)

    def term(t: Any) -> Any:
        if type(t) is Var and t.anon:
            return Var("_", next(counter))
        if type(t) is Expr:
            return Expr(t.op, tuple(term(a) for a in t.args))
        return t

    def lit(x: Any) -> Any:
        if type(x) is Atom:
            return Atom(x.pred, tuple(term(a) for a in x.args))
        if type(x) is Naf:
            return Naf(lit(x.atom))
        return Comparison(x.op, term(x.left), term(x.right))

    return [lit(x) for x in items]


def _mark_anons(x: Any) -> Any:
    """Turn parsed ``Var('_')`` into anonymous variables (numbered later, per clause)."""
    if type(x) is Var:
        return Var("_", -1) if x.name == "_" else x
    if type(x) is Expr:
        return Expr(x.op, tuple(_mark_anons(a) for a in x.args))
    if type(x) is _Pool:
        return _Pool(tuple(_mark_anons(a) for a in x.options))
    if type(x) is Atom:
        return Atom(x.pred, tuple(_mark_anons(a) for a in x.args))
    if type(x) is Naf:
        return Naf(_mark_anons(x.atom))
    if type(x) is Comparison:
        return Comparison(x.op, _mark_anons(x.left), _mark_anons(x.right))
    return x


def _expand(heads: list, body: list, line: int, anon: bool = True) -> list:
    """One clause per combination of pooled alternatives, anonymous variables numbered per clause."""
    mark = _mark_anons if anon else (lambda x: x)
    head_opts = [h2 for h in heads for h2 in _expand_atom(mark(h))]
    body_opts = [[l2 for l in options for l2 in _expand_literal(mark(l))] for options in body]
    total = len(head_opts)
    for opts in body_opts:
        total *= len(opts)
    if total > _MAX_EXPANSION:
        raise ProgramError(f"pooling expands this statement into {total} clauses (more than {_MAX_EXPANSION})", line, ErrorKind.UNSUPPORTED)
    out = []
    for head in head_opts:
        for combo in itertools.product(*body_opts):
            if anon:
                items = _number_anons([head, *combo])
                out.append(Clause(items[0], tuple(items[1:]), line))
            else:
                out.append(Clause(head, combo, line))
    return out


def parse(text: str) -> Program:
    """Parse a SymBa program (see the module docstring for the language).

    Args:
        text: the program text, as written.

    Returns:
        The typed program, with pooling expanded.

    Raises:
        ProgramError: on malformed text, with the 1-based line; ``ErrorKind.NO_ANSWER``
            when the query is missing, repeated or not a single literal,
            ``ErrorKind.UNSUPPORTED`` for constructs outside the language.
    """
    if not isinstance(text, str):
        raise ProgramError(f"the program must be text, got {type(text).__name__}")
    try:
        return _Parser(text).program()
    except RecursionError:
        raise ProgramError("program nested too deeply to parse") from None


def parse_clause(text: str) -> list[Clause]:
    """Parse one statement (a fact or rule; the final ``.`` may be omitted).

    Args:
        text: e.g. ``"is(X, blue) :- is(X, cold)."``.

    Returns:
        The clauses it stands for (several when it uses pooling).

    Raises:
        ProgramError: malformed text, a query, or more than one statement.
    """
    text = text.strip() if isinstance(text, str) else text
    if not isinstance(text, str) or not text:
        raise ProgramError("empty statement: expected a fact 'pred(a).' or a rule 'head :- body.'")
    if not text.endswith("."):
        text += "."
    p = _Parser(text)
    if p.is_op("?-"):
        raise ProgramError("expected a fact or rule, found a query '?- ...'", 1)
    try:
        clauses = p.clause()
    except RecursionError:
        raise ProgramError("statement nested too deeply to parse") from None
    if p.tok.kind != "eof":
        raise ProgramError(f"expected one statement, found more text after '.': {_describe(p.tok)}", p.tok.line)
    return clauses


#: Prolog directives that do not change what a pure program derives (dropped by :func:`from_prolog`).
PROLOG_DECLARATIONS = ("dynamic", "table", "discontiguous")
#: The clause :func:`from_prolog` adds when a Prolog goal is more than one literal.
PROLOG_GOAL = "symbolkg_goal"


def from_prolog(text: str) -> str:
    """A Prolog knowledge base with a final ``?- goal.`` line, as a program of this language.

    For pure Prolog (facts, rules, ``\\+``, comparisons) the two read the same: SLDNF with
    tabling here, and on a stratified program SWI-Prolog's answer is the same. The rewriting
    keeps every line number: a declaration directive (``:- dynamic p/1.``, ``:- table``,
    ``:- discontiguous``: they change what fails or terminates, not what holds) becomes an empty
    line; a goal with several literals (``?- big(a), \\+ red(a).``) becomes the clause
    ``symbolkg_goal :- big(a), \\+ red(a).`` on its own line and the query
    ``?- symbolkg_goal.`` after it. Anything else outside this language (cuts, ``;``, lists,
    other directives) is left for :func:`parse` to refuse.

    Raises:
        ProgramError: a directive other than the declarations, or no ``?-`` goal line.
    """
    lines = text.splitlines()
    goal_at = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].lstrip().startswith("?-")), None)
    if goal_at is None:
        raise ProgramError("a Prolog program to re-derive needs its goal as a final '?- goal.' line", None,
                           ErrorKind.NO_ANSWER)
    out = []
    for number, line in enumerate(lines, start=1):
        directive = re.match(r"\s*:-\s*(\w+)", line)
        if directive and number - 1 != goal_at:
            if directive.group(1) not in PROLOG_DECLARATIONS:
                raise ProgramError(f"the directive ':- {directive.group(1)}' is not part of this language "
                                   f"(only {', '.join(PROLOG_DECLARATIONS)} declarations are dropped)", number,
                                   ErrorKind.UNSUPPORTED)
            line = ""
        out.append(line)
    goal = out[goal_at].strip().removeprefix("?-").strip().removesuffix(".").strip()
    try:
        parse_goal(goal)
    except ProgramError:  # several literals: a clause of its own names the conjunction
        out[goal_at] = f"{PROLOG_GOAL} :- {goal}."
        out.append(f"?- {PROLOG_GOAL}.")
    return "\n".join(out) + "\n"


def parse_goal(text: str) -> Goal:
    """Parse a goal: ``atom`` or ``not atom``, optionally written ``?- goal.``.

    Raises:
        ProgramError: malformed text or not a single literal.
    """
    if not isinstance(text, str) or not text.strip():
        raise ProgramError("empty goal: expected an atom such as is(bob, red)", None, ErrorKind.NO_ANSWER)
    text = text.strip()
    if not text.startswith("?-"):
        text = "?- " + text
    if not text.endswith("."):
        text += "."
    p = _Parser(text)
    p.take()
    goal = p.goal_literal(1)
    if p.is_op(","):
        raise ProgramError("the goal must be a single atom or 'not atom'", p.tok.line, ErrorKind.NO_ANSWER)
    p.end_of_statement(1, "goal")
    if p.tok.kind != "eof":
        raise ProgramError(f"expected one goal, found more text: {_describe(p.tok)}", p.tok.line, ErrorKind.NO_ANSWER)
    return goal


def _parse_term_text(text: str) -> Term:
    """One term as :func:`format_term` prints it (for proof-tree bindings)."""
    p = _Parser(text)
    t = p.expr()
    if isinstance(t, _AtomTerm) or type(t) is _Pool or p.tok.kind != "eof":
        raise ProgramError(f"not a term: {text!r}")
    return _mark_anons(t)


def _parse_literal_text(text: str) -> Literal:
    p = _Parser(text + ".")
    lits = p.body_literal()
    if len(lits) != 1 or not p.is_op("."):
        raise ProgramError(f"not a single literal: {text!r}")
    p.take()
    if p.tok.kind != "eof":
        raise ProgramError(f"not a single literal: {text!r}")
    return _number_anons([_mark_anons(lits[0])])[0]


# --------------------------------------------------------------------------- unification


def _deref(t: Any, env: dict) -> Any:
    while type(t) in _VARS:
        nxt = env.get(t, _UNBOUND)
        if nxt is _UNBOUND:
            return t
        t = nxt
    return t


def _resolve(t: Any, env: dict) -> Any:
    """``t`` with every bound variable replaced and ground expressions evaluated."""
    tt = type(t)
    if tt in _CONSTS:
        return t
    if tt in _VARS:
        t = _deref(t, env)
        tt = type(t)
        if tt is not Expr:
            return t
    if tt is Expr:
        args = tuple(_resolve(a, env) for a in t.args)
        if all(type(a) in _CONSTS for a in args):
            return _evaluate(Expr(t.op, args))
        return Expr(t.op, args)
    return t


def _resolve_raw(t: Any, env: dict) -> Any:
    """Like :func:`_resolve` but keeps expressions unevaluated (builtin leaves of proof trees)."""
    tt = type(t)
    if tt in _VARS:
        t = _deref(t, env)
        tt = type(t)
    if tt is Expr:
        return Expr(t.op, tuple(_resolve_raw(a, env) for a in t.args))
    return t


def _occurs(v: Any, t: Any, env: dict) -> bool:
    t = _deref(t, env)
    if t is v or (type(t) is type(v) and t == v):
        return True
    if type(t) is Expr:
        return any(_occurs(v, a, env) for a in t.args)
    return False


def _unify(a: Any, b: Any, env: dict, trail: list) -> bool:
    a = _deref(a, env)
    b = _deref(b, env)
    ta, tb = type(a), type(b)
    if ta is tb and a == b:
        return True
    if ta in _VARS:
        if tb is Expr and _occurs(a, b, env):
            return False
        env[a] = b
        trail.append(a)
        return True
    if tb in _VARS:
        if ta is Expr and _occurs(b, a, env):
            return False
        env[b] = a
        trail.append(b)
        return True
    if ta is Expr and tb is Expr and a.op == b.op and len(a.args) == len(b.args):
        return all(_unify(x, y, env, trail) for x, y in zip(a.args, b.args))
    return False


def _unify_args(xs: tuple, ys: tuple, env: dict, trail: list) -> bool:
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        if not _unify(x, y, env, trail):
            return False
    return True


def _undo(env: dict, trail: list, mark: int) -> None:
    while len(trail) > mark:
        del env[trail.pop()]


def _canon(t: Any, mapping: dict) -> Any:
    tt = type(t)
    if tt in _VARS:
        v = mapping.get(t)
        if v is None:
            v = mapping[t] = _AVar(len(mapping))
        return v
    if tt is Expr:
        return Expr(t.op, tuple(_canon(a, mapping) for a in t.args))
    return t


def _ground_args(args: tuple) -> bool:
    for a in args:
        if type(a) not in _CONSTS:
            return False
    return True


def _rename(args: tuple) -> tuple:
    mapping: dict = {}

    def ren(t: Any) -> Any:
        if type(t) is _AVar:
            v = mapping.get(t)
            if v is None:
                v = mapping[t] = _Fresh()
            return v
        if type(t) is Expr:
            return Expr(t.op, tuple(ren(a) for a in t.args))
        return t

    return tuple(ren(a) for a in args)


def _match(pattern: Any, target: Any, sigma: dict) -> bool:
    """One-way matching of canonical variables in ``pattern`` against ``target``."""
    if type(pattern) is _AVar:
        bound = sigma.get(pattern, _UNBOUND)
        if bound is _UNBOUND:
            sigma[pattern] = target
            return True
        return type(bound) is type(target) and bound == target
    if type(pattern) is Expr:
        return type(target) is Expr and pattern.op == target.op and len(pattern.args) == len(target.args) and all(
            _match(p, t, sigma) for p, t in zip(pattern.args, target.args)
        )
    return type(pattern) is type(target) and pattern == target


def _subst(t: Any, sigma: dict, evaluate: bool = True) -> Any:
    tt = type(t)
    if tt in _VARS:
        return sigma.get(t, t)
    if tt is Expr:
        args = tuple(_subst(a, sigma, evaluate) for a in t.args)
        if evaluate and all(type(a) in _CONSTS for a in args):
            return _evaluate(Expr(t.op, args))
        return Expr(t.op, args)
    return t


def _value(t: Any) -> Any:
    """An answer value: numbers as numbers, constants as str."""
    if type(t) in (int, float, str):
        return t
    if type(t) is Str:
        return t.value
    return format_term(t)


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
        tree: justification tree of the first proof (see :func:`check_tree`), or None.
        missing: subgoals that no clause head unified with, as called (variables as
            ``A``, ``B``, ...), once per variant, in the order first met; including
            atoms under ``not`` that succeeded only because nothing unified.
        kind: ``"complete"``, ``"depth"``, ``"steps"`` or ``"wall"`` (a budget ran out),
            ``"floundered"`` (a ``not`` or comparison never became evaluable) or
            ``"nonstratified"`` (a ``not`` depends on itself).
        steps: resolution steps taken.
        seconds: wall time.
        issues: human-readable diagnostics (floundering, undefined arithmetic,
            recursion through negation), with the clause line.
        unproved: every subgoal met during the search that ended without an answer
            (a superset of ``missing``: also subgoals some clause head unified with but
            none proved, such as ``eats(A, mouse)`` when only ``eats(squirrel, mouse) :-
            ...`` exists), formatted like ``missing``, in the order first met. These are
            the subgoals SymBa's method may ask a statement for.
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

    def to_dict(self) -> dict:
        return {"proved": self.proved, "answers": self.answers, "tree": self.tree, "missing": self.missing,
                "unproved": self.unproved, "kind": self.kind, "steps": self.steps, "issues": self.issues}


class _Stop(Exception):
    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


_ATOM, _NAF, _CMP = 0, 1, 2


class _ClauseInfo:
    """A clause compiled for the engine."""

    __slots__ = ("_text", "body", "clause", "head", "head_exprs", "head_plain", "kinds", "line", "order", "shared", "vars")

    def __init__(self, clause: Clause):
        self.clause = clause
        self.head = clause.head
        self.body = clause.body
        self.kinds = kinds = tuple(_ATOM if type(b) is Atom else _NAF if type(b) is Naf else _CMP for b in clause.body)
        owners: dict = {}  # variable -> the places it occurs (-1: head, j: body literal j), in order of first occurrence
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
        self.shared = tuple(
            tuple(v for v in _atom_vars(lit.atom) if owners[v] - {j}) if kinds[j] == _NAF else ()
            for j, lit in enumerate(clause.body)
        ) if _NAF in kinds else ((),) * len(kinds)
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
    return _atom_vars(a)


def _atom_vars(a: Atom) -> list:
    out: dict = {}

    def visit(t: Any) -> None:
        if type(t) is Var:
            out.setdefault(t, None)
        elif type(t) is Expr:
            for x in t.args:
                visit(x)

    for t in a.args:
        visit(t)
    return list(out)


class _Table:
    __slots__ = ("active", "answers", "complete", "consumed", "dfn", "evaluated", "goal", "goal_ground", "ground", "justs",
                 "keys", "low", "stamp")

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
    def call(self, inst: Atom) -> _Table:
        args = inst.args
        if _ground_args(args):
            key = (inst.pred, args)
            ground = True
            canon = args
        else:
            if any(type(a) is Expr and _term_depth(a) > _MAX_TERM_DEPTH for a in args):
                raise _Stop("depth")  # an expression argument nesting without end, e.g. n(X) :- n(X + 1).
            mapping: dict = {}
            canon = tuple(_canon(a, mapping) for a in args)
            key = (inst.pred, canon)
            ground = False
        table = self.tables.get(key)
        stack = self.stack
        if table is None:
            table = self.tables[key] = _Table(Atom(inst.pred, canon), ground)
        elif table.complete:
            return table
        elif table.active or (table.dfn is not None and table.stamp == self.stamp):
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
        clauses = self.index.get((inst.pred, len(args)), ())
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

    def add_answer(self, table: _Table, ci: _ClauseInfo, env: dict, children: tuple) -> None:
        try:
            args = tuple(_resolve(a, env) for a in table.goal.args)
            binds = tuple(_resolve(v, env) for v in ci.vars)
        except _Undefined as exc:
            self.issue(f"line {ci.line}: {exc} in `{ci.text}`")
            return
        ground = _ground_args(args)
        if not ground or not _ground_args(binds):
            mapping: dict = {}
            args = tuple(_canon(a, mapping) for a in args)
            binds = tuple(_canon(b, mapping) for b in binds)
            ground = _ground_args(args)
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
                if not _unify(head_args[i], goal_args[i], env, trail):
                    return False
        elif not _unify_args(head_args, goal_args, env, trail):
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
                _undo(env, trail, fr[3])
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
                            ans = _rename(ans)
                        if _unify_args(inst_args, ans, env, trail):
                            found = True
                            break
                        _undo(env, trail, fr[3])
                    fr[4] = pos
                    if found:
                        children[fr[1]] = (sub, k)
                        rest = fr[2]
                        break
                elif fr[4] == 0:  # `not` / comparison: at most one way through
                    fr[4] = 1
                    binding = fr[5]
                    if binding is None or _unify(binding[0], binding[1], env, trail):
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
            ok = all(_unify(_resolve(head_args[i], env), goal_args[i], env, trail) for i in ci.head_exprs)
        except _Undefined as exc:
            self.issue(f"line {ci.line}: {exc} in `{ci.text}`")
            ok = False
        if ok:
            self.add_answer(table, ci, env, children)
        _undo(env, trail, mark)

    def open_literal(self, ci: _ClauseInfo, rest: tuple, env: dict, trail: list) -> list | None:
        """Select the first evaluable literal of ``rest`` and prepare its alternatives."""
        body, kinds = ci.body, ci.kinds
        for idx, j in enumerate(rest):
            kind = kinds[j]
            lit = body[j]
            if kind == _ATOM:
                break
            if kind == _NAF:
                if all(type(_deref(v, env)) not in _VARS for v in ci.shared[j]):
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
            except _Undefined:  # pragma: no cover - unevaluated instances never compute
                shown = format_literal(lit)
            self.issue(f"line {ci.line}: cannot evaluate `{shown}` in `{ci.text}`: a variable is still unbound "
                       "(floundering); bind it with a positive literal earlier in the body", "floundered")
            return None
        rest_after = rest[:idx] + rest[idx + 1 :]
        mark = len(trail)
        if kind == _ATOM:
            try:
                inst_args = tuple(_resolve(a, env) for a in lit.args)
            except _Undefined as exc:
                self.issue(f"line {ci.line}: {exc} in `{ci.text}`")
                return None
            sub = self.call(Atom(lit.pred, inst_args))
            return [_ATOM, j, rest_after, mark, 0, sub, inst_args]
        if kind == _NAF:
            self.tick()
            try:
                inst_args = tuple(_resolve(a, env) for a in lit.atom.args)
            except _Undefined as exc:
                self.issue(f"line {ci.line}: {exc} in `{ci.text}`")
                return None
            sub = self.call(Atom(lit.atom.pred, inst_args))
            if sub.answers:
                return None
            if not sub.complete:
                self.issue(f"line {ci.line}: `not {format_atom(sub.goal)}` depends on itself through negation "
                           f"(recursion through negation has no stratified meaning) in `{ci.text}`", "nonstratified")
                return None
            return [_NAF, j, rest_after, mark, 0, None]
        self.tick()
        if outcome is False:
            return None
        return [_CMP, j, rest_after, mark, 0, outcome]

    def compare(self, lit: Comparison, env: dict, ci: _ClauseInfo) -> tuple[bool, Any]:
        """(ready, outcome): outcome False (fails), None (holds) or (var, value) to bind."""
        try:
            left = _resolve(lit.left, env)
            right = _resolve(lit.right, env)
        except _Undefined as exc:
            self.issue(f"line {ci.line}: {exc} in `{ci.text}`")
            return True, False
        tl, tr = type(left), type(right)
        lg, rg = tl in _CONSTS, tr in _CONSTS
        op = lit.op
        if op == "=":
            if lg and rg:
                return True, (None if tl is tr and left == right else False)
            if tl in _VARS and (rg or tr in _VARS):
                return True, (left, right)
            if tr in _VARS and lg:
                return True, (right, left)
            return False, None
        if not (lg and rg):
            return False, None
        if op == "!=":
            return True, (None if not (tl is tr and left == right) else False)
        if not (_is_num(left) and _is_num(right)):
            bad = left if not _is_num(left) else right
            self.issue(f"line {ci.line}: cannot compare {format_term(left)} {op} {format_term(right)}: "
                       f"{format_term(bad)} is not a number, in `{ci.text}`")
            return True, False
        holds = {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]
        return True, (None if holds else False)

    # -- results
    def tree(self, table: _Table, k: int) -> dict:
        counter = itertools.count()
        nodes = [0]
        root_sigma = {v: _AVar(next(counter)) for v in _avars_of(table.answers[k])}
        target = Atom(table.goal.pred, tuple(_subst(a, root_sigma) for a in table.answers[k]))
        return self.node(table, k, target, counter, nodes, 0)

    def node(self, table: _Table, k: int, target: Atom, counter: Any, nodes: list, depth: int) -> dict:
        nodes[0] += 1
        ci, binds, children = table.justs[k]
        if depth >= _TREE_MAX_DEPTH or nodes[0] > _TREE_MAX_NODES:
            return {"goal": format_atom(target), "clause": ci.text, "bindings": {}, "children": [], "naf": False,
                    "builtin": False, "line": ci.line, "truncated": True}
        sigma: dict = {}
        _match_args(table.answers[k], target.args, sigma)
        for b in binds:
            for v in _avars_of((b,)):
                if v not in sigma:
                    sigma[v] = _AVar(next(counter))
        values = {v: _subst(b, sigma) for v, b in zip(ci.vars, binds)}
        out_children = []
        for j, lit in enumerate(ci.body):
            ch = children[j]
            if type(lit) is Atom:
                inst = _literal_instance(lit, values)
                sub, kk = ch
                out_children.append(self.node(sub, kk, inst, counter, nodes, depth + 1))
            elif type(lit) is Naf:
                inst = _literal_instance(lit, values)
                out_children.append({"goal": format_literal(inst), "clause": None, "bindings": {}, "children": [],
                                     "naf": True, "builtin": False})
            else:
                inst = _literal_instance(lit, values, evaluate=False)
                out_children.append({"goal": format_literal(inst), "clause": None, "bindings": {}, "children": [],
                                     "naf": False, "builtin": True})
        return {"goal": format_atom(target), "clause": ci.text,
                "bindings": {ci.var_key(v): format_term(t) for v, t in values.items()},
                "children": out_children, "naf": False, "builtin": False, "line": ci.line}


def _avars_of(args: tuple) -> list:
    out: dict = {}

    def visit(t: Any) -> None:
        if type(t) is _AVar:
            out.setdefault(t, None)
        elif type(t) is Expr:
            for a in t.args:
                visit(a)

    for a in args:
        visit(a)
    return list(out)


def _match_args(pattern: tuple, target: tuple, sigma: dict) -> None:
    if len(pattern) != len(target) or not all(_match(p, t, sigma) for p, t in zip(pattern, target)):
        raise AssertionError(f"proof tree: {pattern} does not generalise {target}")  # an engine bug, not user input


def _literal_instance(lit: Literal, values: dict, evaluate: bool = True) -> Literal:
    """``lit`` with clause variables replaced (``values`` maps a variable or holds an env)."""
    def sub(t: Any) -> Any:
        if evaluate:
            return _subst_env(t, values, True)
        return _subst_env(t, values, False)

    if type(lit) is Atom:
        return Atom(lit.pred, tuple(sub(a) for a in lit.args))
    if type(lit) is Naf:
        return Naf(Atom(lit.atom.pred, tuple(sub(a) for a in lit.atom.args)))
    return Comparison(lit.op, sub(lit.left), sub(lit.right))


def _subst_env(t: Any, values: dict, evaluate: bool) -> Any:
    tt = type(t)
    if tt in _VARS:
        v = _deref(t, values)
        if type(v) is Expr:
            return _subst_env(v, values, evaluate)
        return v
    if tt is Expr:
        args = tuple(_subst_env(a, values, evaluate) for a in t.args)
        if evaluate and all(type(a) in _CONSTS for a in args):
            return _evaluate(Expr(t.op, args))
        return Expr(t.op, args)
    return t


def prove(program: Program, budget: Budget = Budget()) -> ProofResult:
    """Prove ``program.goal`` from ``program.clauses`` (tabled SLDNF, see the module docstring).

    Pure: no global state, safe to call on trusted programs in-process; LLM-written
    programs go through :func:`solve` in a solver worker.

    Args:
        program: a parsed program.
        budget: depth, step and wall-clock limits.

    Returns:
        The result; ``kind`` says whether the search was complete or which limit ended it.
    """
    t0 = time.perf_counter()
    engine = _Engine(program.clauses, budget)
    goal = program.goal
    table: _Table | None = None
    kind = "complete"
    try:
        inst = Atom(goal.atom.pred, tuple(_eval_ground_exprs(a) for a in goal.atom.args))
    except _Undefined as exc:
        engine.issue(f"the query {format_goal(goal)} is undefined: {exc}")
        inst = None
    if inst is not None:
        try:
            table = engine.call(inst)
        except _Stop as stop:
            kind = stop.kind
            mapping: dict = {}
            table = engine.tables.get((inst.pred, tuple(_canon(a, mapping) for a in inst.args)))
    if kind == "complete" and engine.flags:
        kind = engine.flags[0]
    has_answers = table is not None and bool(table.answers)
    answers: list = []
    tree = None
    if goal.negated:
        proved = kind == "complete" and not has_answers
        if proved:
            answers = [{}]
            tree = {"goal": format_goal(goal), "clause": None, "bindings": {}, "children": [], "naf": True, "builtin": False}
    else:
        proved = has_answers
        if proved:
            names = [v for v in _atom_vars(inst) if not v.anon]
            for args in table.answers:
                sigma: dict = {}
                env: dict = {}
                trail: list = []
                _unify_args(inst.args, _rename(args), env, trail)
                answers.append({v.name: _value(_canon(_resolve_raw(v, env), sigma)) for v in names})
            tree = engine.tree(table, 0)
    unproved = [format_atom(t.goal) for t in engine.tables.values() if not t.answers]  # dicts keep first-met order
    return ProofResult(proved=proved, answers=answers, tree=tree, missing=list(engine.missing.values()), kind=kind,
                       steps=engine.steps, seconds=time.perf_counter() - t0, issues=list(engine.issues),
                       unproved=unproved)


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
    apart = {v: _Fresh() for v in _atom_vars(atom)}
    env: dict = {}
    trail: list = []
    try:
        goal_args = tuple(_subst_env(a, apart, True) for a in atom.args)
        for h, g in zip(head.args, goal_args):
            if type(h) is Expr:
                if not _is_ground(h):
                    continue
                h = _evaluate(h)
            if not _unify(h, g, env, trail):
                return False
    except _Undefined:
        return False
    return True


# --------------------------------------------------------------------------- proof checking


def check_tree(program: Program, tree: Any, budget: Budget = Budget()) -> list[str]:
    """Re-check a justification tree against the program, independently of the search.

    Every clause node must name a clause of the program (as :func:`format_clause`
    prints it); the clause with the node's bindings applied must give the node's
    goal as head and the children's goals as the body, in order (up to a consistent
    renaming of leftover variables); builtin leaves must evaluate to true; a
    negation leaf ``not a`` is re-checked by proving ``a``, which must fail with a
    complete search. The root must be an instance of the program's goal.

    Args:
        program: the program the tree claims to prove.
        tree: a node dict as in :attr:`ProofResult.tree`.
        budget: limits of each negation re-check.

    Returns:
        One message per unjustified node; ``[]`` when the tree is a proof.
    """
    clauses = {}
    for c in program.clauses:
        clauses.setdefault(format_clause(c), c)
    errors: list[str] = []
    if not isinstance(tree, dict):
        return ["the tree is not a node (dict)"]
    # root against the goal
    goal = program.goal
    try:
        root = _parse_literal_text(str(tree.get("goal")))
        root_atom = root.atom if type(root) is Naf else root
        if goal.negated != (type(root) is Naf) or type(root_atom) is not Atom:
            errors.append(f"root: goal {tree.get('goal')!r} does not match the query {format_goal(goal)}")
        elif not _instance_of(root_atom, goal.atom):
            errors.append(f"root: goal {tree.get('goal')!r} is not an instance of the query {format_goal(goal)}")
    except ProgramError as exc:
        errors.append(f"root: unreadable goal {tree.get('goal')!r}: {exc.message}")
    work = [(tree, "root")]
    while work:
        node, path = work.pop()
        if not isinstance(node, dict) or not isinstance(node.get("goal"), str):
            errors.append(f"{path}: not a node with a 'goal' string")
            continue
        children = node.get("children") or []
        if not isinstance(children, list):
            errors.append(f"{path}: 'children' is not a list")
            continue
        if node.get("truncated"):
            errors.append(f"{path}: subtree truncated, cannot be checked")
            continue
        if node.get("naf"):
            errors.extend(_check_naf(program, node, path, budget))
            continue
        if node.get("builtin"):
            errors.extend(_check_builtin(node, path))
            continue
        text = node.get("clause")
        clause = clauses.get(text) if isinstance(text, str) else None
        if clause is None:
            errors.append(f"{path}: clause {text!r} is not in the program")
            continue
        bindings = node.get("bindings") or {}
        if not isinstance(bindings, dict):
            errors.append(f"{path}: 'bindings' is not a dict")
            continue
        ci = _ClauseInfo(clause)
        by_key = {ci.var_key(v): v for v in ci.vars}
        sigma: dict = {}
        bad = False
        for key, value in bindings.items():
            if key not in by_key:
                errors.append(f"{path}: binding {key!r} is not a variable of `{text}`")
                bad = True
                continue
            try:
                sigma[by_key[key]] = _apart(_parse_term_text(str(value)))
            except ProgramError as exc:
                errors.append(f"{path}: unreadable binding {key}={value!r}: {exc.message}")
                bad = True
        if bad:
            continue
        if len(children) != len(clause.body):
            errors.append(f"{path}: `{text}` has {len(clause.body)} body literal(s) but the node has {len(children)} child(ren)")
            continue
        try:
            expected = [_literal_instance(clause.head, sigma)]
            expected += [_literal_instance(lit, sigma, evaluate=type(lit) is not Comparison) for lit in clause.body]
            actual = [_parse_literal_text(node["goal"])]
        except _Undefined as exc:
            errors.append(f"{path}: the clause instance is undefined: {exc}")
            continue
        except ProgramError as exc:
            errors.append(f"{path}: unreadable goal {node['goal']!r}: {exc.message}")
            continue
        ok = True
        for j, (lit, child) in enumerate(zip(clause.body, children)):
            cpath = f"{path}.children[{j}]"
            if not isinstance(child, dict) or not isinstance(child.get("goal"), str):
                errors.append(f"{cpath}: not a node with a 'goal' string")
                ok = False
                continue
            want_naf, want_builtin = type(lit) is Naf, type(lit) is Comparison
            if bool(child.get("naf")) != want_naf or bool(child.get("builtin")) != want_builtin:
                errors.append(f"{cpath}: body literal `{format_literal(lit)}` needs a "
                              f"{'negation' if want_naf else 'builtin' if want_builtin else 'clause'} node")
                ok = False
                continue
            try:
                actual.append(_parse_literal_text(child["goal"]))
            except ProgramError as exc:
                errors.append(f"{cpath}: unreadable goal {child['goal']!r}: {exc.message}")
                ok = False
            work.append((child, cpath))
        if ok and not _variants(expected, actual):
            shown = "; ".join(format_literal(e) for e in expected)
            errors.append(f"{path}: `{text}` with bindings {bindings} gives `{shown}`, not the node's goal and children")
    return errors


def _check_naf(program: Program, node: dict, path: str, budget: Budget) -> list[str]:
    try:
        lit = _parse_literal_text(node["goal"])
    except ProgramError as exc:
        return [f"{path}: unreadable goal {node['goal']!r}: {exc.message}"]
    if type(lit) is not Naf:
        return [f"{path}: a negation node's goal must be 'not atom', found {node['goal']!r}"]
    if node.get("children"):
        return [f"{path}: a negation node has no children"]
    result = prove(Program(program.clauses, Goal(lit.atom, negated=False)), budget)
    if result.proved:
        return [f"{path}: {format_atom(lit.atom)} is provable, so `{node['goal']}` does not hold"]
    if result.kind != "complete":
        return [f"{path}: could not re-check `{node['goal']}` ({result.kind})"]
    return []


def _check_builtin(node: dict, path: str) -> list[str]:
    try:
        lit = _parse_literal_text(node["goal"])
    except ProgramError as exc:
        return [f"{path}: unreadable goal {node['goal']!r}: {exc.message}"]
    if type(lit) is not Comparison:
        return [f"{path}: a builtin node's goal must be a comparison, found {node['goal']!r}"]
    engine = _Engine((), Budget())
    dummy = _ClauseInfo(Clause(Atom("check"), (lit,), 0))
    ready, outcome = engine.compare(lit, {}, dummy)
    if not ready or outcome is not None:
        return [f"{path}: `{node['goal']}` does not hold"]
    return []


def _instance_of(specific: Atom, general: Atom) -> bool:
    """``specific`` is ``general`` with some of its variables replaced (one-way matching)."""
    if specific.pred != general.pred or len(specific.args) != len(general.args):
        return False
    sigma: dict = {}

    def match(p: Any, t: Any) -> bool:
        if type(p) is Var:
            bound = sigma.setdefault(p, t)
            return type(bound) is type(t) and bound == t
        if type(p) is Expr:
            return type(t) is Expr and p.op == t.op and len(p.args) == len(t.args) and all(match(x, y) for x, y in zip(p.args, t.args))
        return type(p) is type(t) and p == t

    try:
        general_args = tuple(_eval_ground_exprs(a) for a in general.args)
    except _Undefined:
        return False
    return all(match(p, t) for p, t in zip(general_args, specific.args))


def _apart(t: Any) -> Any:
    """Variables of a parsed binding value, renamed apart from any clause variable."""
    if type(t) is Var:
        return Var("?" + t.name, t.anon)
    if type(t) is Expr:
        return Expr(t.op, tuple(_apart(a) for a in t.args))
    return t


def _variants(xs: list, ys: list) -> bool:
    """Equal lists of literals up to one consistent bijective renaming of variables."""
    fwd: dict = {}
    bwd: dict = {}

    def same(a: Any, b: Any) -> bool:
        ta, tb = type(a), type(b)
        if ta in _VARS or tb in _VARS:
            if not (ta in _VARS and tb in _VARS):
                return False
            return fwd.setdefault(a, b) == b and bwd.setdefault(b, a) == a
        if ta is Expr:
            return tb is Expr and a.op == b.op and len(a.args) == len(b.args) and all(same(x, y) for x, y in zip(a.args, b.args))
        return ta is tb and a == b

    def lit_terms(lit: Any) -> tuple | None:
        if type(lit) is Atom:
            return ("atom", lit.pred, lit.args)
        if type(lit) is Naf:
            return ("naf", lit.atom.pred, lit.atom.args)
        return ("cmp", lit.op, (lit.left, lit.right))

    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        kx, ky = lit_terms(x), lit_terms(y)
        if kx[0] != ky[0] or kx[1] != ky[1] or len(kx[2]) != len(ky[2]):
            return False
        if not all(same(a, b) for a, b in zip(kx[2], ky[2])):
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
        through negation. ``proof`` is the JSON of ``{"proved", "answers", "tree",
        "missing", "unproved", "kind", "steps", "issues"}``.
    """
    with Stopwatch() as sw:
        try:
            program = parse(text)
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
        return Outcome(status=Status.RUNTIME_ERROR, error_kind=ErrorKind.UNSUPPORTED.value,
                       error_message=f"{what}: {detail}", error_line=_first_line(result.issues), **common)
    if result.proved or kind == "complete":
        answer = "True" if result.proved else "False"
        try:  # the proof-tree certificate (symbolkg.solvers.certificates.symba_tree); none if it cannot be built
            from symbolkg.solvers.certificates import symba_tree

            certificate = symba_tree.certificate(program, result, answer)
        except Exception:  # noqa: BLE001 - solve never raises; an answer without a certificate is still an answer
            certificate = None
        status = Status.PROVED if result.proved else Status.DISPROVED
        return Outcome(status=status, answer=answer, certificate=certificate, **common)
    limit = {"depth": f"depth budget ({budget.max_depth} nested calls)", "steps": f"step budget ({budget.max_steps} steps)",
             "wall": f"time budget ({budget.timeout_s:g} s)"}[kind]
    return Outcome(status=Status.TIMEOUT, error_kind=ErrorKind.TIMEOUT.value,
                   error_message=f"{limit} exhausted after {result.steps} steps without a proof of {format_goal(program.goal)}; "
                                 "a rule may generate unboundedly many values (e.g. arithmetic in a recursive rule)",
                   **common)


def _first_line(issues: list) -> int | None:
    for msg in issues:
        m = re.match(r"line (\d+):", msg)
        if m:
            return int(m.group(1))
    return None
