"""Terms, literals, clauses and programs of the SymBa clause language, and their printer.

The data types every part of ``symba`` shares (the parser, :mod:`.syntax`; the evaluator,
:mod:`.arith_eval`; the engine, :mod:`.engine`; and the certificate checker,
:mod:`symbolkg.solvers.certificates.symba_tree`), printed back in program syntax by
:func:`format_term` and friends (``parse(format_program(p)) == p``). The language itself is
specified in :mod:`.syntax`.

Numbers are normalised once, where they are read (:func:`normalize_number`): a float with an
integral value is the int (``5.0`` is ``5``), floats keep 12 significant digits, and a value
beyond 1e100 in magnitude is :class:`Undefined`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

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
    """A fact (empty body) or rule, after pooling and disjunction expansion.

    Attributes:
        head: the conclusion.
        body: the literals, in order.
        source_line: 1-based line of the program where the statement starts.
        negated: a ``not head :- body.`` statement (a *denial*: the head is false where the
            body holds; see :mod:`symbolkg.solvers.symba.syntax`), not a rule for ``head``.
    """

    head: Atom
    body: tuple = ()
    source_line: int = 0
    negated: bool = False


@dataclass(frozen=True)
class Goal:
    """The query: ``atom`` or, with ``negated``, ``not atom``."""

    atom: Atom
    negated: bool = False
    source_line: int = 0


@dataclass(frozen=True)
class Program:
    """A parsed program: the clauses (pooling expanded), the query, and the denials.

    Attributes:
        clauses: the facts and rules (``negated`` false).
        goal: the query.
        denials: the ``not head :- body.`` statements (``negated`` true), in program order.
    """

    clauses: tuple
    goal: Goal
    denials: tuple = ()


# Engine-only variables: a tabled call's variables (canonical, numbered by first
# occurrence) and fresh renamings of non-ground answers.
@dataclass(frozen=True, slots=True)
class AVar:
    index: int

    def __hash__(self) -> int:
        return self.index


class Fresh:
    __slots__ = ()


#: The types of a variable: a clause's, a tabled call's canonical one, a fresh renaming.
VAR_TYPES = frozenset({Var, AVar, Fresh})
#: The types of a ground value: identifier constant, number, quoted string.
CONST_TYPES = frozenset({str, int, float, Str})

# --------------------------------------------------------------------------- formatting

CMP_OPS = ("=", "!=", "<", "<=", ">", ">=")
BIN_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2, "**": 4}
ARITH_FUNCS = frozenset({"round", "max", "min", "abs"})


def _var_letters(i: int) -> str:
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 26] + (str(i // 26) if i >= 26 else "")


def _prec(t: Term) -> int:
    if type(t) is Expr:
        if t.op in BIN_PREC:
            return BIN_PREC[t.op]
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
    if tt is AVar:
        return _var_letters(t.index)
    if tt is Fresh:
        return "_"
    if tt is Expr:
        op, args = t.op, t.args
        if op in ARITH_FUNCS:
            return f"{op}({', '.join(format_term(a) for a in args)})"
        if op == "neg":
            inner = format_term(args[0])
            return "-" + (f"({inner})" if _prec(args[0]) <= 4 else inner)
        left, right = args
        p = BIN_PREC[op]
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
    """``head.`` or ``head :- l1, ..., ln.`` (``not head ...`` for a denial)."""
    head = ("not " if c.negated else "") + format_atom(c.head)
    if not c.body:
        return head + "."
    return f"{head} :- {', '.join(format_literal(b) for b in c.body)}."


def format_goal(g: Goal) -> str:
    return ("not " if g.negated else "") + format_atom(g.atom)


def format_program(p: Program) -> str:
    """The whole program, one clause per line (the denials after the rules), then the query."""
    statements = (*p.clauses, *p.denials)
    return "".join(format_clause(c) + "\n" for c in statements) + f"?- {format_goal(p.goal)}.\n"


# --------------------------------------------------------------------------- numbers


class Undefined(Exception):
    """An arithmetic value that does not exist (division by zero, a non-number, overflow).

    The literal that needs it fails (as in clingo); the engine records the reason.
    """


#: Magnitude beyond which a number is :class:`Undefined`.
LIMIT = 1e100


def normalize_number(x: int | float) -> int | float:
    """``x`` as the language stores numbers: integral floats as ints, 12 significant digits.

    Raises:
        Undefined: beyond :data:`LIMIT` in magnitude, or not a number (NaN).
    """
    if type(x) is int:
        if -(10**100) <= x <= 10**100:
            return x
        raise Undefined("result too large (beyond 1e100)")
    if math.isnan(x) or not -LIMIT <= x <= LIMIT:
        raise Undefined("result too large or not a number")
    x = float(f"{x:.12g}")
    if x.is_integer():
        return int(x)
    return x


def is_number(x: Any) -> bool:
    """An int or a float (never a bool, never a numeric string: those are read as numbers)."""
    return type(x) is int or type(x) is float
