"""Propositional formulas: one small typed AST, two notations, clauses and evaluation.

LogicGraph writes every premise twice: ``formal`` in Unicode (``(A2 ∨ ¬A1)``, ``(¬G → A1)``)
and ``prover9`` in Prover9's ASCII (``(A2 | -A1)``, ``(-G -> A1)``). Both parse to the same
:class:`Formula`; :func:`to_prover9` prints the canonical ASCII form the dataset uses in proof
steps, so a parsed-and-printed conclusion compares equal to the reference string.

Atoms are names (``A1``, ``G``) or ground first-order atoms (``has_funding(Team, Grant)``):
an atom is an opaque token here, which is what "propositional" means for a ground theory.

Precedence, tightest first, as in Prover9: ``¬``/``-``, ``∧``/``&``, ``∨``/``|``, ``→``/``->``
(right-associative), ``↔``/``<->``.

>>> f = parse("(¬G → A1)")
>>> to_prover9(f)
'(-G -> A1)'
>>> parse("(-G -> A1)") == f
True
>>> sorted(atoms(f))
['A1', 'G']
>>> evaluate(f, {"G": False, "A1": False})
False
>>> sorted(sorted(c) for c in clauses(f))
[[('A1', True), ('G', True)]]
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "And",
    "Atom",
    "Clause",
    "Formula",
    "FormulaSyntaxError",
    "Iff",
    "Implies",
    "Literal",
    "Not",
    "Or",
    "atoms",
    "clauses",
    "entails",
    "evaluate",
    "negate",
    "parse",
    "require_formulas",
    "satisfiable",
    "strip_double_negation",
    "to_prover9",
    "to_unicode",
    "to_z3",
]


@dataclass(frozen=True, slots=True)
class Atom:
    name: str


@dataclass(frozen=True, slots=True)
class Not:
    arg: Formula


@dataclass(frozen=True, slots=True)
class And:
    left: Formula
    right: Formula


@dataclass(frozen=True, slots=True)
class Or:
    left: Formula
    right: Formula


@dataclass(frozen=True, slots=True)
class Implies:
    left: Formula
    right: Formula


@dataclass(frozen=True, slots=True)
class Iff:
    left: Formula
    right: Formula


Formula = Atom | Not | And | Or | Implies | Iff

#: ``(atom name, polarity)``; polarity True is the positive literal.
Literal = tuple[str, bool]
#: a disjunction of literals; the empty clause is false.
Clause = frozenset[Literal]


class FormulaSyntaxError(ValueError):
    """The text is not a formula in either notation; the message says where."""

    def __init__(self, text: str, position: int, message: str) -> None:
        super().__init__(f"{message} at column {position + 1} of {text!r}")
        self.text = text
        self.position = position


# ------------------------------------------------------------------ parsing

_TOKEN_RE = re.compile(
    r"\s*(?:"
    r"(?P<iff><->|↔)"
    r"|(?P<imp>->|→)"
    r"|(?P<or>\||∨)"
    r"|(?P<and>&|∧)"
    r"|(?P<not>-|¬|~)"
    r"|(?P<lp>\()"
    r"|(?P<rp>\))"
    # a name, optionally applied to a flat argument list: A1, G, p(a, b)
    r"|(?P<atom>[A-Za-z_][A-Za-z0-9_]*(?:\s*\([^()]*\))?)"
    r")"
)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        match = _TOKEN_RE.match(text, pos)
        if match is None or match.end() == pos:
            start = pos + (len(text[pos:]) - len(text[pos:].lstrip()))
            raise FormulaSyntaxError(text, start, f"unexpected character {text[start]!r}")
        kind = match.lastgroup
        assert kind is not None
        value = match.group(kind)
        if kind == "atom":
            value = re.sub(r"\s+", "", value).replace(",", ", ")
        out.append((kind, value, match.start(kind)))
        pos = match.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    def peek(self) -> str | None:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else None

    def error(self, message: str) -> FormulaSyntaxError:
        pos = self.tokens[self.i][2] if self.i < len(self.tokens) else len(self.text)
        return FormulaSyntaxError(self.text, pos, message)

    def parse(self) -> Formula:
        if not self.tokens:
            raise FormulaSyntaxError(self.text, 0, "empty formula")
        formula = self.iff()
        if self.i != len(self.tokens):
            raise self.error(f"unexpected {self.tokens[self.i][1]!r}")
        return formula

    def iff(self) -> Formula:
        left = self.implies()
        while self.peek() == "iff":
            self.i += 1
            left = Iff(left, self.implies())
        return left

    def implies(self) -> Formula:
        left = self.disjunction()
        if self.peek() == "imp":
            self.i += 1
            return Implies(left, self.implies())
        return left

    def disjunction(self) -> Formula:
        left = self.conjunction()
        while self.peek() == "or":
            self.i += 1
            left = Or(left, self.conjunction())
        return left

    def conjunction(self) -> Formula:
        left = self.unary()
        while self.peek() == "and":
            self.i += 1
            left = And(left, self.unary())
        return left

    def unary(self) -> Formula:
        kind = self.peek()
        if kind == "not":
            self.i += 1
            return Not(self.unary())
        if kind == "lp":
            self.i += 1
            inner = self.iff()
            if self.peek() != "rp":
                raise self.error("missing ')'")
            self.i += 1
            return inner
        if kind == "atom":
            name = self.tokens[self.i][1]
            self.i += 1
            return Atom(name)
        raise self.error("expected an atom, '¬' or '('" if kind is None else f"unexpected {self.tokens[self.i][1]!r}")


def parse(text: str) -> Formula:
    """Parse a formula in Unicode (``¬ ∧ ∨ → ↔``) or Prover9 ASCII (``- & | -> <->``) notation.

    Both notations may be mixed. A trailing ``.`` (Prover9's clause terminator) is accepted.

    Raises:
        FormulaSyntaxError: the text is not a formula; the message gives the column.
    """
    if not isinstance(text, str):
        raise TypeError(f"formula text must be a string, got {type(text).__name__}")
    return _parse_cached(text)


@functools.lru_cache(maxsize=1 << 16)
def _parse_cached(text: str) -> Formula:
    # formulas are immutable, so one parse per distinct text is safe to share (premises recur
    # in every proof step that cites them); errors are not cached
    stripped = text.strip()
    stripped = stripped.removesuffix(".")
    return _Parser(stripped).parse()


# ------------------------------------------------------------------ printing

_BINARY: dict[type, tuple[str, str]] = {
    And: (" & ", " ∧ "),
    Or: (" | ", " ∨ "),
    Implies: (" -> ", " → "),
    Iff: (" <-> ", " ↔ "),
}


def _show(formula: Formula, ascii_: bool) -> str:
    if isinstance(formula, Atom):
        return formula.name
    if isinstance(formula, Not):
        return ("-" if ascii_ else "¬") + _show(formula.arg, ascii_)
    op = _BINARY[type(formula)][0 if ascii_ else 1]
    return "(" + _show(formula.left, ascii_) + op + _show(formula.right, ascii_) + ")"


def to_prover9(formula: Formula) -> str:
    """Prover9 ASCII, every binary connective in parentheses: ``(-(A4 -> A6) -> A7)``."""
    return _show(formula, True)


def to_unicode(formula: Formula) -> str:
    """The dataset's ``formal`` notation: ``(¬(A4 → A6) → A7)``."""
    return _show(formula, False)


# ------------------------------------------------------------------ semantics


def atoms(formula: Formula) -> frozenset[str]:
    """The atom names a formula mentions."""
    if isinstance(formula, Atom):
        return frozenset((formula.name,))
    if isinstance(formula, Not):
        return atoms(formula.arg)
    return atoms(formula.left) | atoms(formula.right)


def evaluate(formula: Formula, assignment: Mapping[str, bool]) -> bool:
    """Truth value under ``assignment`` (every atom of the formula must be assigned).

    Raises:
        KeyError: an atom of the formula has no value.
    """
    if isinstance(formula, Atom):
        return bool(assignment[formula.name])
    if isinstance(formula, Not):
        return not evaluate(formula.arg, assignment)
    left = evaluate(formula.left, assignment)
    if isinstance(formula, And):
        return left and evaluate(formula.right, assignment)
    if isinstance(formula, Or):
        return left or evaluate(formula.right, assignment)
    if isinstance(formula, Implies):
        return (not left) or evaluate(formula.right, assignment)
    return left == evaluate(formula.right, assignment)


def negate(formula: Formula) -> Formula:
    """``¬formula``, removing a double negation instead of adding one."""
    return formula.arg if isinstance(formula, Not) else Not(formula)


def strip_double_negation(formula: Formula) -> Formula:
    """Remove every ``¬¬`` (the dataset writes RAA's and MT's conclusions without them)."""
    if isinstance(formula, Atom):
        return formula
    if isinstance(formula, Not):
        inner = strip_double_negation(formula.arg)
        return inner.arg if isinstance(inner, Not) else Not(inner)
    return type(formula)(strip_double_negation(formula.left), strip_double_negation(formula.right))


def _nnf(formula: Formula, positive: bool) -> Formula:
    """Negation normal form over ``And``/``Or``/literals."""
    if isinstance(formula, Atom):
        return formula if positive else Not(formula)
    if isinstance(formula, Not):
        return _nnf(formula.arg, not positive)
    if isinstance(formula, Implies):
        return _nnf(Or(Not(formula.left), formula.right), positive)
    if isinstance(formula, Iff):
        both = And(Implies(formula.left, formula.right), Implies(formula.right, formula.left))
        return _nnf(both, positive)
    left, right = _nnf(formula.left, positive), _nnf(formula.right, positive)
    if isinstance(formula, And) == positive:
        return And(left, right)
    return Or(left, right)


def _cnf(nnf: Formula) -> list[frozenset[Literal]]:
    if isinstance(nnf, Atom):
        return [frozenset(((nnf.name, True),))]
    if isinstance(nnf, Not):
        assert isinstance(nnf.arg, Atom)
        return [frozenset(((nnf.arg.name, False),))]
    left, right = _cnf(nnf.left), _cnf(nnf.right)
    if isinstance(nnf, And):
        return left + right
    return [a | b for a in left for b in right]


def _one_clause(formula: Formula, positive: bool, out: set[Literal]) -> bool:
    """Add the literals of ``formula`` (negated when not ``positive``) to ``out`` if it is one
    disjunction; False when it is not (then :func:`clauses` does the general CNF)."""
    if isinstance(formula, Atom):
        out.add((formula.name, positive))
        return True
    if isinstance(formula, Not):
        return _one_clause(formula.arg, not positive, out)
    if isinstance(formula, Or) and positive or isinstance(formula, And) and not positive:
        return _one_clause(formula.left, positive, out) and _one_clause(formula.right, positive, out)
    if isinstance(formula, Implies) and positive:
        return _one_clause(formula.left, False, out) and _one_clause(formula.right, True, out)
    return False


def clauses(formula: Formula) -> frozenset[Clause]:
    """The formula's clauses (CNF by distribution; tautologies dropped, subsumed ones kept out).

    Distribution is exponential in the worst case and fine for the short premises of
    LogicGraph and of ground theories; use a Tseitin encoding (e.g. :func:`to_z3`) for big ones.
    Most LogicGraph premises are one disjunction (``A -> B``, ``(A | -B)``): those take a fast path.
    """
    lits: set[Literal] = set()
    if _one_clause(formula, True, lits):
        if any((name, not sign) in lits for name, sign in lits):
            return frozenset()  # a tautology
        return frozenset((frozenset(lits),))
    out: set[Clause] = set()
    for clause in _cnf(_nnf(formula, True)):
        if any((name, not sign) in clause for name, sign in clause):
            continue  # tautology
        out.add(clause)
    return frozenset(c for c in out if not any(o < c for o in out))


def to_z3(formula: Formula, ctx: Any = None, cache: dict[str, Any] | None = None) -> Any:
    """The formula as a Z3 Boolean expression (atoms become Bool constants of the same name).

    Args:
        formula: the formula.
        ctx: a ``z3.Context`` (one per thread; see the Z3 docs); None for the default one.
        cache: atom name -> Z3 constant, shared between calls that build one problem.
    """
    import z3

    cache = {} if cache is None else cache

    def go(f: Formula) -> Any:
        if isinstance(f, Atom):
            if f.name not in cache:
                cache[f.name] = z3.Bool(f.name, ctx)
            return cache[f.name]
        if isinstance(f, Not):
            return z3.Not(go(f.arg))
        left, right = go(f.left), go(f.right)
        if isinstance(f, And):
            return z3.And(left, right)
        if isinstance(f, Or):
            return z3.Or(left, right)
        if isinstance(f, Implies):
            return z3.Implies(left, right)
        return left == right

    return go(formula)


def require_formulas(premises: Mapping[str, Any], goal: Any) -> None:
    """Raise ``TypeError`` naming the first premise (or the goal) that is not a :data:`Formula`."""
    kinds = (Atom, Not, And, Or, Implies, Iff)
    for pid, formula in premises.items():
        if not isinstance(formula, kinds):
            raise TypeError(f"premise {pid!r}: expected a propositional Formula, got {type(formula).__name__}")
    if not isinstance(goal, kinds):
        raise TypeError(f"goal: expected a propositional Formula, got {type(goal).__name__}")


def parse_all(texts: Iterable[str]) -> Iterator[Formula]:
    """Parse several formulas (each error names the formula's own text)."""
    for text in texts:
        yield parse(text)


# ------------------------------------------------------------------ satisfiability


def _dpll(clause_list: list[Clause], assignment: dict[str, bool]) -> dict[str, bool] | None:
    """Plain DPLL with unit propagation; clauses are small and few, so no learning is needed."""
    while True:
        simplified: list[Clause] = []
        unit: Literal | None = None
        for clause in clause_list:
            if any(assignment.get(name) == sign for name, sign in clause):
                continue
            rest = frozenset(lit for lit in clause if lit[0] not in assignment)
            if not rest:
                return None
            if len(rest) == 1 and unit is None:
                unit = next(iter(rest))
            simplified.append(rest)
        if not simplified:
            return assignment
        if unit is None:
            break
        assignment[unit[0]] = unit[1]
        clause_list = simplified
    # branch on the most frequent atom of the shortest clauses
    shortest = min(len(c) for c in simplified)
    counts: dict[str, int] = {}
    for clause in simplified:
        if len(clause) == shortest:
            for name, _ in clause:
                counts[name] = counts.get(name, 0) + 1
    name = max(counts, key=lambda n: (counts[n], n))
    for value in (True, False):
        found = _dpll(simplified, {**assignment, name: value})
        if found is not None:
            return found
    return None


def satisfiable(formulas: Iterable[Formula]) -> dict[str, bool] | None:
    """A model of all the formulas (every atom they mention assigned), or None when unsatisfiable.

    >>> satisfiable([parse("A -> B"), parse("A")]) == {"A": True, "B": True}
    True
    >>> satisfiable([parse("A"), parse("-A")]) is None
    True
    """
    formulas = list(formulas)
    clause_list = [c for f in formulas for c in clauses(f)]
    model = _dpll(clause_list, {})
    if model is None:
        return None
    for f in formulas:  # atoms that only occurred in dropped tautologies
        for name in atoms(f):
            model.setdefault(name, False)
    return model


def entails(premises: Iterable[Formula], goal: Formula) -> bool:
    """True when every model of ``premises`` satisfies ``goal`` (premises ∪ {¬goal} unsatisfiable).

    >>> entails([parse("A -> B"), parse("-B")], parse("-A"))
    True
    >>> entails([parse("A | B")], parse("A"))
    False
    """
    return satisfiable([*premises, negate(goal)]) is None
