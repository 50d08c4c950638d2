"""The language-independent half of the constraint checker (:mod:`symbolkg.solvers.certificates.constraint`).

Three-valued values (booleans with unknown, integer intervals, sets of names) for pruning, the
backtracking :class:`Search` over finite domains that re-proves cores unsatisfiable, and the
:class:`Reader` interface each program language implements for the checker
(:mod:`symbolkg.solvers.certificates.constraint_csp`, :mod:`symbolkg.solvers.certificates.constraint_lsat`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from symbolkg.solvers.outcomes import CertificateError, Deadline, ProgramError

# --------------------------------------------------------------------------- three-valued values


@dataclass(frozen=True)
class Iv:
    """An integer known only to lie in ``[lo, hi]`` (either end may be infinite)."""

    lo: float
    hi: float


INF = math.inf
TOP = Iv(-INF, INF)


class Unsupported(Exception):
    """The evaluator cannot evaluate this (int quantifier, mod by zero, ...): the check is unverifiable."""


class Unbounded(Exception):
    """The search would branch on an integer cell with no finite domain."""

    def __init__(self, cell: Any) -> None:
        super().__init__(f"no finite domain for {cell}")
        self.cell = cell


def _iv(x: Any) -> Iv:
    if isinstance(x, Iv):
        return x
    if x is None:  # an unknown condition counted as 0 or 1
        return Iv(0, 1)
    return Iv(int(x), int(x))


def exact(lo: float, hi: float) -> Any:
    return int(lo) if lo == hi and math.isfinite(lo) else Iv(lo, hi)


def _mul(a: float, b: float) -> float:
    if a == 0 or b == 0:
        return 0
    return a * b


def arith(op: str, a: Any, b: Any) -> Any:
    """``a op b`` for ``+ - * // %`` (``//`` and ``%`` as in Python; DSL ``%`` passes ``abs`` divisors)."""
    if not isinstance(a, Iv) and not isinstance(b, Iv) and a is not None and b is not None:
        a, b = int(a), int(b)
        if op in ("//", "%") and b == 0:
            raise Unsupported("division or remainder by zero")
        return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if op == "//" else 0, "%": a % b if op == "%" else 0}[
            op
        ]
    x, y = _iv(a), _iv(b)
    if op == "+":
        return exact(x.lo + y.lo, x.hi + y.hi)
    if op == "-":
        return exact(x.lo - y.hi, x.hi - y.lo)
    if op == "*":
        products = [_mul(p, q) for p in (x.lo, x.hi) for q in (y.lo, y.hi)]
        return exact(min(products), max(products))
    if op == "//" and y.lo == y.hi and y.lo > 0:
        d = int(y.lo)
        return exact(x.lo // d if math.isfinite(x.lo) else -INF, x.hi // d if math.isfinite(x.hi) else INF)
    if op == "%" and y.lo == y.hi and y.lo > 0:
        return Iv(0, int(y.lo) - 1)
    return TOP


def neg(a: Any) -> Any:
    if isinstance(a, Iv) or a is None:
        x = _iv(a)
        return exact(-x.hi, -x.lo)
    return -int(a)


def absolute(a: Any) -> Any:
    if isinstance(a, Iv) or a is None:
        x = _iv(a)
        if x.lo >= 0:
            return x
        if x.hi <= 0:
            return exact(-x.hi, -x.lo)
        return Iv(0, max(-x.lo, x.hi))
    return abs(int(a))


def minmax(func: str, values: Sequence[Any]) -> Any:
    if all(not isinstance(v, Iv) and v is not None for v in values):
        return (min if func == "min" else max)(int(v) for v in values)
    ivs = [_iv(v) for v in values]
    pick = min if func == "min" else max
    return exact(pick(i.lo for i in ivs), pick(i.hi for i in ivs))


def total(values: Iterable[Any]) -> Any:
    lo = hi = 0
    for v in values:
        x = _iv(v)
        lo, hi = lo + x.lo, hi + x.hi
    return exact(lo, hi)


def compare(op: str, a: Any, b: Any) -> bool | None:
    """``a op b`` on ints / intervals, strings / sets of strings, booleans / None (unknown)."""
    sym = isinstance(a, (str, frozenset)) or isinstance(b, (str, frozenset))
    if sym:
        sa = a if isinstance(a, frozenset) else frozenset([a])
        sb = b if isinstance(b, frozenset) else frozenset([b])
        if len(sa) * len(sb) > 256:
            return None
        results = {_py_compare(op, x, y) for x in sa for y in sb}
        return results.pop() if len(results) == 1 else None
    if isinstance(a, bool) and isinstance(b, bool) and op in ("==", "!="):
        return (a == b) if op == "==" else (a != b)
    if (
        (a is None or isinstance(a, bool))
        and (b is None or isinstance(b, bool))
        and op in ("==", "!=")
        and (a is None or b is None)
    ):
        return None
    if not isinstance(a, Iv) and not isinstance(b, Iv) and a is not None and b is not None:
        return _py_compare(op, int(a), int(b))
    x, y = _iv(a), _iv(b)
    if op == "==":
        return False if x.hi < y.lo or y.hi < x.lo else None
    if op == "!=":
        return True if x.hi < y.lo or y.hi < x.lo else None
    if op == "<":
        return True if x.hi < y.lo else False if x.lo >= y.hi else None
    if op == "<=":
        return True if x.hi <= y.lo else False if x.lo > y.hi else None
    if op == ">":
        return True if x.lo > y.hi else False if x.hi <= y.lo else None
    return True if x.lo >= y.hi else False if x.hi < y.lo else None


def _py_compare(op: str, a: Any, b: Any) -> bool:
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def conj(values: Iterable[bool | None]) -> bool | None:
    unknown = False
    for v in values:
        if v is False:
            return False
        if v is None:
            unknown = True
    return None if unknown else True


def disj(values: Iterable[bool | None]) -> bool | None:
    unknown = False
    for v in values:
        if v is True:
            return True
        if v is None:
            unknown = True
    return None if unknown else False


def negate(v: bool | None) -> bool | None:
    return None if v is None else not v


def distinct(values: Sequence[Any]) -> bool | None:
    known = [v for v in values if not isinstance(v, (Iv, frozenset)) and v is not None]
    if len(set(known)) < len(known):
        return False
    if len(known) == len(values):
        return True
    return None


def join(a: Any, b: Any) -> Any:
    """A value that covers both ``a`` and ``b`` (the branches of an undecided ``If``)."""
    if a == b and not isinstance(a, Iv):
        return a
    if isinstance(a, (str, frozenset)) or isinstance(b, (str, frozenset)):
        sa = a if isinstance(a, frozenset) else frozenset([a])
        sb = b if isinstance(b, frozenset) else frozenset([b])
        return sa | sb
    if (a is None or isinstance(a, bool)) and (b is None or isinstance(b, bool)):
        return None
    x, y = _iv(a), _iv(b)
    return exact(min(x.lo, y.lo), max(x.hi, y.hi))


def ite(cond: bool | None, then: Callable[[], Any], other: Callable[[], Any]) -> Any:
    if cond is True:
        return then()
    if cond is False:
        return other()
    return join(then(), other())


def known(v: Any) -> bool:
    return not isinstance(v, (Iv, frozenset)) and v is not None


# --------------------------------------------------------------------------- search


@dataclass
class Problem:
    """A satisfiability question for :class:`Search`.

    Attributes:
        formulas: each a function ``(assignment, blockers) -> bool | None``; unknown (None) only when
            it read an unassigned cell, which it appends to ``blockers``.
        domains: the values of each cell the formulas may read (``None``: unbounded).
    """

    formulas: list[Callable[[dict, list], Any]]
    domains: Callable[[Any], Sequence[Any] | None]


class Search:
    """Backtracking over cells with three-valued pruning; complete over the given domains."""

    def __init__(self, problem: Problem, deadline: Deadline) -> None:
        self.problem = problem
        self.deadline = deadline
        self.nodes = 0

    def model(self) -> dict | None:
        """A satisfying assignment of the cells read, or None when there is none."""
        assignment: dict = {}
        return dict(assignment) if self._dfs(assignment) else None

    def _dfs(self, assignment: dict) -> bool:
        self.nodes += 1
        self.deadline.tick()  # TimeoutError once the check's time is spent
        best: list | None = None
        for formula in self.problem.formulas:
            blockers: list = []
            value = formula(assignment, blockers)
            if value is False:
                return False
            if value is None:
                if not blockers:
                    raise Unsupported("a formula stayed undecided with every cell it reads assigned")
                if best is None or len(set(blockers)) < len(set(best)):
                    best = blockers
        if best is None:
            return True
        cell = best[0]
        domain = self.problem.domains(cell)
        if domain is None:
            raise Unbounded(cell)
        for value in domain:
            assignment[cell] = value
            if self._dfs(assignment):
                return True
        assignment.pop(cell, None)
        return False


def need(cond: bool, message: str) -> None:
    if not cond:
        raise CertificateError(message)


# --------------------------------------------------------------------------- language readers


class Reader:
    """What the checker needs from one language: constraints, options, models, evaluation, search."""

    def constraint_texts(self) -> dict[int, str]:
        raise NotImplementedError

    def check_supported(self) -> None:
        raise NotImplementedError

    def options(self) -> dict[str, tuple[int, str]]:
        raise NotImplementedError

    def check_kind(self, letter: str) -> tuple[str, bool]:
        raise NotImplementedError

    def items(self, letter: str) -> int:
        raise NotImplementedError

    def option_formula(self, letter: str) -> Any:
        raise NotImplementedError

    def query_formula(self, letter: str, query: str, index: int) -> Any:
        raise NotImplementedError

    def decode_model(self, raw: Any, what: str) -> dict:
        raise NotImplementedError

    def holds(self, formula: Any, model: dict) -> bool:
        raise NotImplementedError

    def require_model(self, model: dict, query: Any, what: str) -> None:
        raise NotImplementedError

    def search(self, core: list[int], query: Any, deadline: Deadline, window: list[int] | None = None) -> dict | None:
        raise NotImplementedError

    def show_cell(self, cell: Any) -> str:
        raise NotImplementedError

    def show_assignment(self, assignment: dict | None) -> str:
        raise NotImplementedError


def reparse(parse: Callable[[str], Any], program: str) -> Any:
    try:
        return parse(program)
    except ProgramError as err:
        raise CertificateError(f"the program does not parse: {err}") from None
