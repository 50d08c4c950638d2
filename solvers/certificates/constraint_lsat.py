"""The constraint checker's reader of ``logiclm-smt`` (AR-LSAT DSL) programs, and the DSL helpers producers share.

Constraints, options and models of a program parsed by :mod:`symbolkg.solvers.smt.lsat_syntax`, evaluated
three-valued over its typed IR (no Z3); integer cells get finite domains from the bounds the cited
constraints state. The producer helpers (:func:`dsl_line_text`, :func:`dsl_bounding_lines`,
:func:`dsl_outside_cells`) let :mod:`symbolkg.solvers.smt.lsat_engine` write what this reader checks.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from symbolkg.solvers.certificates.constraint_search import (
    INF,
    TOP,
    Iv,
    Problem,
    Reader,
    Search,
    Unsupported,
    absolute,
    arith,
    compare,
    conj,
    disj,
    distinct,
    exact,
    ite,
    known,
    need,
    neg,
    negate,
    reparse,
    total,
)
from symbolkg.solvers.outcomes import CertificateError, Deadline
from symbolkg.solvers.smt.lsat_formula_syntax import Apply, Lit, MemberRef, Op, Scoped, VarRef
from symbolkg.solvers.smt.lsat_syntax import Program, parse

#: The model key of applications to arguments outside the parameter sorts (``f(b + 1)`` at the last ``b``):
#: ``[[function, [args], value], ...]``. The declaration restricts only member arguments; Z3 gives the others
#: values of the carrier sort, which the evaluator then reads.
OUTSIDE = "@outside"


def dsl_line_text(program: str, line: int) -> str:
    """The text of DSL program ``line`` as written, without its ``:::`` and ``#`` comments."""
    lines = program.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    return lines[line - 1].split(":::", 1)[0].split("#", 1)[0].strip()


_READERS: dict[str, DslReader] = {}  # the producer helpers' readers of the last few programs


def _producer_reader(program: str, parsed: Program | None) -> DslReader:
    # One parse per program for the producer helpers below (each model asks again); a producer that parsed
    # the program with the same parser hands its parse over. The checker always parses for itself.
    reader = _READERS.get(program)
    if reader is None:
        reader = DslReader(program, parsed)
        while len(_READERS) >= 4:
            _READERS.pop(next(iter(_READERS)))
        _READERS[program] = reader
    return reader


def dsl_bounding_lines(program: str, parsed: Program | None = None) -> list[int]:
    """The constraint lines of a DSL program that give some integer-valued function application a finite
    domain in the checker's sense (a producer cites them as a core's ``bounds``). ``parsed``: the program
    as :func:`~symbolkg.solvers.smt.lsat_syntax.parse` read it, if the caller has it."""
    reader = _producer_reader(program, parsed)
    if all(f.result != "int" for f in reader.program.functions.values()):
        return []
    found = []
    for c in reader.program.constraints:
        try:
            if reader.bounds([c.expr]):
                found.append(c.line)
        except (Unsupported, CertificateError):
            continue
    return found


def dsl_outside_cells(
    program: str, model: dict[str, Any], lookup: Callable[[str, tuple], Any], parsed: Program | None = None
) -> list[list[Any]]:
    """The ``@outside`` entries a DSL model needs: the applications outside the parameter sorts that evaluating
    every constraint and every option formula reads, each valued by ``lookup(function, args)`` (the producer's
    model). The checker's evaluation of the same model reads no others (it evaluates the same formulas).
    ``parsed``: as for :func:`dsl_bounding_lines`."""
    reader = _producer_reader(program, parsed)
    table = reader.decode_model(model, "the model")
    found: dict[tuple, Any] = {}

    class _Recording(DslEval):
        def read(self, cell: tuple) -> Any:
            if cell in self.a:
                return self.a[cell]
            if cell not in found:
                found[cell] = lookup(*cell)
            return found[cell]

    formulas = [c.expr for c in reader.program.constraints]
    for option in reader.program.options:
        check = option.check.inner if option.check.kind == "is_exception" else option.check
        formulas.extend(check.exprs)
    for formula in formulas:
        _Recording(reader, table, None).value(formula, {})
    return [[name, list(args), value] for (name, args), value in found.items()]


class DslReader(Reader):
    def __init__(self, text: str, program: Program | None = None) -> None:
        """Read ``text`` (the checker: always parsed here; a producer helper may pass its own parse)."""
        self.text = text
        self.program = program if program is not None else reparse(parse, text)
        self.by_line = {c.line: c for c in self.program.constraints}
        self.by_letter = {o.letter: o for o in self.program.options}

    # -- program facts

    def constraint_texts(self) -> dict[int, str]:
        return {c.line: dsl_line_text(self.text, c.line) for c in self.program.constraints}

    def check_supported(self) -> None:
        for f in self.program.functions.values():
            if "int" in f.params:
                raise Unsupported(f"function {f.name} takes an int argument")

    def options(self) -> dict[str, tuple[int, str]]:
        return {o.letter: (o.line, dsl_line_text(self.text, o.line)) for o in self.program.options}

    def _check(self, letter: str) -> Any:
        check = self.by_letter[letter].check
        return check.inner if check.kind == "is_exception" else check

    def check_kind(self, letter: str) -> tuple[str, bool]:
        return self._check(letter).kind, self.by_letter[letter].check.kind == "is_exception"

    def items(self, letter: str) -> int:
        return len(self._check(letter).exprs)

    def option_formula(self, letter: str) -> Any:
        exprs = self._check(letter).exprs
        return exprs[0] if len(exprs) == 1 else Op("bool", "or", tuple(exprs))

    def query_formula(self, letter: str, query: str, index: int) -> Any:
        check = self._check(letter)
        allowed = {
            "is_sat": ("option",),
            "is_unsat": ("option",),
            "is_valid": ("negation",),
            "is_accurate_list": ("none", "item"),
        }[check.kind]
        need(query in allowed, f"option {letter}: a {check.kind} check is decided by {allowed}, not {query!r}")
        if query == "option":
            return check.exprs[0]
        if query == "negation":
            return Op("bool", "not", (check.exprs[0],))
        if query == "none":
            return Op("bool", "not", (Op("bool", "or", tuple(check.exprs)),))
        need(0 <= index < len(check.exprs), f"option {letter}: item {index} is not in its list")
        return check.exprs[index]

    # -- cells and domains

    def members(self, sort: str) -> tuple[Any, ...]:
        if sort == "bool":
            return (False, True)
        if sort == "int":
            raise Unsupported("a quantifier over int")
        return self.program.sorts[sort].members

    def result_domain(self, func: str) -> tuple[Any, ...] | None:
        result = self.program.functions[func].result
        return None if result == "int" else self.members(result)

    def inside(self, value: Any, sort: str) -> bool:
        """True when ``value`` (possibly abstract) is surely a member of ``sort``."""
        if sort in ("bool", "int"):
            return True
        members = self.members(sort)
        if isinstance(value, frozenset):
            return value <= set(members)
        if isinstance(value, Iv):
            if not (math.isfinite(value.lo) and math.isfinite(value.hi)) or value.hi - value.lo > 1000:
                return False
            return all(v in members for v in range(int(value.lo), int(value.hi) + 1))
        return value in members

    def cell_domain(self, func: str, inside: bool) -> tuple[Any, ...] | None:
        """The values of an application of ``func``: its result sort's members when the arguments are members
        of the parameter sorts (the declaration restricts only those), else the carrier: a symbolic sort's base
        members, any integer (None) for a numeric sort."""
        result = self.program.functions[func].result
        if result == "int":
            return None
        if result == "bool" or inside:
            return self.members(result)
        sort = self.program.sorts[result]
        return None if sort.numeric else self.members(sort.base)

    def is_inside(self, cell: tuple) -> bool:
        return all(self.inside(a, p) for a, p in zip(cell[1], self.program.functions[cell[0]].params, strict=False))

    def cells(self, func: str) -> list[tuple[Any, ...]]:
        return list(itertools.product(*[self.members(p) for p in self.program.functions[func].params]))

    def decode_model(self, raw: Any, what: str) -> dict:
        need(isinstance(raw, dict), f"{what} must be an object of function tables")
        raw = dict(raw)
        outside = raw.pop(OUTSIDE, [])
        need(
            set(raw) == set(self.program.functions),
            f"{what} must give exactly the functions {sorted(self.program.functions)}",
        )
        model: dict = {}
        need(isinstance(outside, list), f"{what}: {OUTSIDE} must be a list of [function, [args], value]")
        for entry in outside:
            need(
                isinstance(entry, list)
                and len(entry) == 3
                and entry[0] in self.program.functions
                and isinstance(entry[1], list),
                f"{what}: {OUTSIDE} entry {entry!r} is not [function, [args], value]",
            )
            name, args = entry[0], tuple(entry[1])
            params = self.program.functions[name].params
            need(
                len(args) == len(params) and not self.is_inside((name, args)),
                f"{what}: {OUTSIDE} entry {entry!r} is not an application outside the parameter sorts",
            )
            domain = self.cell_domain(name, False)
            value = entry[2]
            ok = (
                type(value) is bool
                if self.program.functions[name].result == "bool"
                else (type(value) is int if domain is None else type(value) in (int, str) and value in domain)
            )
            need(ok, f"{what} gives {self.show_cell((name, args))} = {value!r}, not a value of its sort")
            model[(name, args)] = value
        for name, values in raw.items():
            cells = self.cells(name)
            need(
                isinstance(values, list) and len(values) == len(cells),
                f"{what}: {name} needs a list of {len(cells)} values",
            )
            domain = self.result_domain(name)
            result = self.program.functions[name].result
            for args, value in zip(cells, values, strict=True):
                if result == "bool":
                    ok = type(value) is bool
                elif domain is None:
                    ok = type(value) is int
                else:
                    ok = type(value) in (int, str) and value in domain
                need(ok, f"{what} gives {self.show_cell((name, args))} = {value!r}, not a value of sort {result}")
                model[(name, args)] = value
        return model

    def holds(self, formula: Any, model: dict) -> bool:
        value = DslEval(self, model, None).value(formula, {})
        if value is None:
            raise Unsupported("a formula stayed undecided under a complete model")
        return bool(value)

    def require_model(self, model: dict, query: Any, what: str) -> None:
        for c in self.program.constraints:
            need(
                self.holds(c.expr, model), f"{what} breaks constraint line {c.line}: {dsl_line_text(self.text, c.line)}"
            )
        if query is not None:
            need(self.holds(query, model), f"{what} does not satisfy the query it answers")

    def search(self, core: list[int], query: Any, deadline: Deadline, window: list[int] | None = None) -> dict | None:
        exprs = [self.by_line[c].expr for c in core] + [query]
        bounds = self.bounds(exprs)
        fallback = self.bounds([self.by_line[c].expr for c in window] + [query]) if window is not None else {}

        def domain(cell: tuple[str, tuple]) -> Sequence[Any] | None:
            fixed = self.cell_domain(cell[0], self.is_inside(cell))
            if fixed is not None:
                return fixed
            return bounds[cell] if cell in bounds else fallback.get(cell)  # [] (no value) is a domain too

        formulas = [lambda a, b, e=e: DslEval(self, a, b, domain).value(e, {}) for e in exprs]
        return Search(Problem(formulas, domain), deadline).model()

    def bounds(self, exprs: list[Any]) -> dict:
        """Finite domains of integer cells from top-level bounds in ``exprs`` (sound: every model obeys them)."""
        lo: dict = {}
        hi: dict = {}
        sets: dict = {}
        for e, env in self._conjuncts(exprs):
            self._bound(e, env, lo, hi, sets)
        domains: dict = {}
        for cell in set(lo) & set(hi) | set(sets):
            values = sets.get(cell)
            if values is None:
                if hi[cell] - lo[cell] > 10_000:
                    continue
                values = range(int(lo[cell]), int(hi[cell]) + 1)
            domains[cell] = [v for v in values if lo.get(cell, -INF) <= v <= hi.get(cell, INF)]
        return domains

    def _conjuncts(self, exprs: list[Any]) -> Iterable[tuple[Any, dict]]:
        stack = [(e, {}) for e in exprs]
        while stack:
            e, env = stack.pop()
            if isinstance(e, Op) and e.op == "and":
                stack.extend((a, env) for a in e.args)
            elif isinstance(e, Scoped) and e.kind == "forall" and all(b.sort != "int" for b in e.binders):
                for combo in itertools.product(*[self.members(b.sort) for b in e.binders]):
                    inner = dict(env)
                    inner.update(zip((b.name for b in e.binders), combo, strict=True))
                    stack.append((e.body, inner))
            else:
                yield e, env

    def _ground_cell(self, e: Any, env: dict) -> tuple | None:
        if not isinstance(e, Apply) or self.program.functions[e.func].result != "int":
            return None
        try:
            args = tuple(DslEval(self, {}, None).value(a, env) for a in e.args)
        except CertificateError:  # an argument reads a cell: not a fixed cell
            return None
        return (e.func, args)

    def _constant(self, e: Any, env: dict) -> int | None:
        try:
            v = DslEval(self, {}, None).value(e, env)
        except CertificateError:
            return None
        return v if type(v) is int else None

    def _bound(self, e: Any, env: dict, lo: dict, hi: dict, sets: dict) -> None:
        if not isinstance(e, Op):
            return
        if e.op == "or":
            cells = set()
            values = set()
            for a in e.args:
                if not (isinstance(a, Op) and a.op == "eq"):
                    return
                cell, k = self._cell_and_constant(a.args[0], a.args[1], env)
                if cell is None:
                    return
                cells.add(cell)
                values.add(k)
            if len(cells) == 1:
                cell = cells.pop()
                sets[cell] = sorted(values) if cell not in sets else sorted(set(sets[cell]) & values)
            return
        flip = {"le": "ge", "lt": "gt", "ge": "le", "gt": "lt", "eq": "eq"}
        if e.op not in flip or len(e.args) != 2:
            return
        op = e.op
        cell, k = self._cell_and_constant(e.args[0], e.args[1], env)
        if cell is None:
            cell, k = self._cell_and_constant(e.args[1], e.args[0], env)
            op = flip[op]
            if cell is None:
                return
        if op in ("le", "lt", "eq"):
            hi[cell] = min(hi.get(cell, INF), k - (op == "lt"))
        if op in ("ge", "gt", "eq"):
            lo[cell] = max(lo.get(cell, -INF), k + (op == "gt"))

    def _cell_and_constant(self, a: Any, b: Any, env: dict) -> tuple[Any, Any]:
        cell = self._ground_cell(a, env)
        if cell is None:
            return None, None
        k = self._constant(b, env)
        return (cell, k) if k is not None else (None, None)

    def show_cell(self, cell: Any) -> str:
        if isinstance(cell, tuple) and len(cell) == 2:
            name, args = cell
            return f"{name}({', '.join(map(str, args))})"
        return str(cell)

    def show_assignment(self, assignment: dict | None) -> str:
        items = sorted((self.show_cell(k), v) for k, v in (assignment or {}).items())
        shown = ", ".join(f"{k}={v!r}" for k, v in items[:20])
        return shown + (", ..." if len(items) > 20 else "")


_MISSING = object()


class DslEval:
    """Three-valued evaluation of the DSL's typed IR (``blockers is None``: a complete model)."""

    def __init__(
        self,
        reader: DslReader,
        assignment: dict,
        blockers: list | None,
        domains: Callable[[Any], Sequence[Any] | None] | None = None,
    ) -> None:
        self.r, self.a, self.blockers, self.domains = reader, assignment, blockers, domains

    def value(self, e: Any, env: dict) -> Any:
        if isinstance(e, Lit):
            return e.value
        if isinstance(e, MemberRef):
            return e.name
        if isinstance(e, VarRef):
            return env[e.name]
        if isinstance(e, Apply):
            return self._apply(e, env)
        if isinstance(e, Scoped):
            return self._scoped(e, env)
        if not isinstance(e, Op):
            raise Unsupported(f"unknown expression {type(e).__name__}")
        op = e.op
        if op == "and":
            return conj(self.value(a, env) for a in e.args)
        if op == "or":
            return disj(self.value(a, env) for a in e.args)
        if op == "not":
            return negate(self.value(e.args[0], env))
        if op == "implies":
            return disj([negate(self.value(e.args[0], env)), self.value(e.args[1], env)])
        if op == "xor":
            a, b = self.value(e.args[0], env), self.value(e.args[1], env)
            return None if a is None or b is None else a != b
        if op == "ite":
            return ite(
                self.value(e.args[0], env), lambda: self.value(e.args[1], env), lambda: self.value(e.args[2], env)
            )
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
            return compare(sym, self.value(e.args[0], env), self.value(e.args[1], env))
        if op in ("add", "sub", "mul"):
            return arith(
                {"add": "+", "sub": "-", "mul": "*"}[op], self.value(e.args[0], env), self.value(e.args[1], env)
            )
        if op == "mod":
            a, d = self.value(e.args[0], env), self.value(e.args[1], env)
            if known(d):
                if d == 0:
                    raise Unsupported("'%' by zero (Z3 leaves it unspecified)")
                return arith("%", a, abs(d))  # SMT-LIB mod: 0 <= r < |d|
            return TOP
        if op == "neg":
            return neg(self.value(e.args[0], env))
        if op == "abs":
            return absolute(self.value(e.args[0], env))
        if op == "sum":
            return total(self.value(a, env) for a in e.args)
        if op == "distinct":
            return distinct([self.value(a, env) for a in e.args])
        if op == "pos":
            members = self.r.members(e.type[4:])
            v = self.value(e.args[0], env)
            if known(v):
                return members.index(v)
            places = [members.index(m) for m in v]
            return exact(min(places), max(places))
        raise Unsupported(f"unknown operation {op!r}")

    def read(self, cell: tuple) -> Any:
        """The assigned value of ``cell``, or :data:`_MISSING`."""
        return self.a.get(cell, _MISSING)

    def _apply(self, e: Any, env: dict) -> Any:
        args = tuple(self.value(a, env) for a in e.args)
        params = self.r.program.functions[e.func].params
        inside = all(self.r.inside(a, sort) for a, sort in zip(args, params, strict=True))
        if not all(known(a) for a in args):
            return self._abstract(e.func, inside, None)
        cell = (e.func, args)
        value = self.read(cell)
        if value is not _MISSING:
            return value
        if self.blockers is None:
            raise CertificateError(f"the model gives no value to {self.r.show_cell(cell)}")
        self.blockers.append(cell)
        return self._abstract(e.func, inside, cell)

    def _abstract(self, func: str, inside: bool, cell: tuple | None) -> Any:
        """What an unassigned application may be: its cell's domain (``inside``: arguments within the sorts)."""
        if self.r.program.functions[func].result == "bool":
            return None
        domain = self.r.cell_domain(func, inside)
        if domain is None:  # an integer: the search's domain (bounds of the cited lines) when it has one
            searched = self.domains(cell) if self.domains is not None and cell is not None else None
            return Iv(min(searched), max(searched)) if searched else TOP
        if all(type(v) is int for v in domain):
            return Iv(min(domain), max(domain))
        return frozenset(domain)

    def _scoped(self, e: Any, env: dict) -> Any:
        if any(b.sort == "int" for b in e.binders):
            raise Unsupported("a quantifier over int")
        values = []
        for combo in itertools.product(*[self.r.members(b.sort) for b in e.binders]):
            inner = dict(env)
            inner.update(zip((b.name for b in e.binders), combo, strict=True))
            values.append(self.value(e.body, inner))
            if e.kind == "forall" and values[-1] is False:
                return False
            if e.kind == "exists" and values[-1] is True:
                return True
        if e.kind == "forall":
            return conj(values)
        if e.kind == "exists":
            return disj(values)
        if e.kind == "count":
            return total(values)
        if e.kind == "sum":
            return total(values)
        return distinct(values)
