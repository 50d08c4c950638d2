"""The constraint checker's reader of ``logiclm-csp`` programs: their constraints, options and models,
evaluated three-valued over the parsed AST of :mod:`symbolkg.solvers.csp.syntax` (no Z3)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from symbolkg.solvers.certificates.constraint_search import (
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
    minmax,
    need,
    neg,
    negate,
    reparse,
)
from symbolkg.solvers.csp import syntax as csp
from symbolkg.solvers.outcomes import CertificateError, Deadline


class CspReader(Reader):
    def __init__(self, text: str) -> None:
        self.program = reparse(csp.parse, text)
        self.vars = {v.name: v for v in self.program.variables}
        self.by_line = {c.line: c for c in self.program.constraints}
        self.by_letter = {o.letter: o for o in self.program.options}

    def constraint_texts(self) -> dict[int, str]:
        return {c.line: c.text for c in self.program.constraints}

    def check_supported(self) -> None:
        return None

    def options(self) -> dict[str, tuple[int, str]]:
        return {o.letter: (o.line, o.text) for o in self.program.options}

    def check_kind(self, letter: str) -> tuple[str, bool]:
        return "entailed", False

    def items(self, letter: str) -> int:
        return 1

    def option_formula(self, letter: str) -> Any:
        return self.by_letter[letter].expr

    def query_formula(self, letter: str, query: str, index: int) -> Any:
        need(query == "negation", f"option {letter}: a CSP option is decided by its 'negation' query, not {query!r}")
        return csp.Not(self.by_letter[letter].expr)

    def decode_model(self, raw: Any, what: str) -> dict:
        need(isinstance(raw, dict), f"{what} must be an object of variable values")
        need(set(raw) == set(self.vars), f"{what} must give exactly the variables {sorted(self.vars)}")
        for name, value in raw.items():
            var = self.vars[name]
            ok = (type(value) is str) if var.type is csp.Type.STR else (type(value) is int)
            need(ok and value in var.domain, f"{what} gives {name} = {value!r}, outside its domain")
        return dict(raw)

    def _eval(self, expr: Any, a: dict, blockers: list | None) -> Any:
        return CspEval(self, a, blockers).value(expr)

    def holds(self, formula: Any, model: dict) -> bool:
        value = self._eval(formula, model, None)
        if value is None:
            raise Unsupported("a formula stayed undecided under a complete model")
        return bool(value)

    def require_model(self, model: dict, query: Any, what: str) -> None:
        for c in self.program.constraints:
            need(self.holds(c.expr, model), f"{what} breaks constraint line {c.line}: {c.text}")
        if query is not None:
            need(self.holds(query, model), f"{what} does not satisfy the query it answers")

    def search(self, core: list[int], query: Any, deadline: Deadline, window: list[int] | None = None) -> dict | None:
        exprs = [self.by_line[c].expr for c in core] + [query]
        formulas = [lambda a, b, e=e: CspEval(self, a, b).value(e) for e in exprs]

        def domain(name: str) -> Sequence[Any]:
            return self.vars[name].domain

        return Search(Problem(formulas, domain), deadline).model()

    def show_cell(self, cell: Any) -> str:
        return str(cell)

    def show_assignment(self, assignment: dict | None) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in sorted((assignment or {}).items()))


class CspEval:
    def __init__(self, reader: CspReader, assignment: dict, blockers: list | None) -> None:
        self.r, self.a, self.blockers = reader, assignment, blockers

    def number(self, expr: Any) -> Any:
        v = self.value(expr)
        if isinstance(v, bool):
            return int(v)
        if v is None:
            return Iv(0, 1)
        return v

    def value(self, e: Any) -> Any:
        if isinstance(e, (csp.IntLit, csp.StrLit, csp.BoolLit)):
            return e.value
        if isinstance(e, csp.VarRef):
            if e.name in self.a:
                return self.a[e.name]
            if self.blockers is None:
                raise CertificateError(f"the model gives no value to {e.name}")
            self.blockers.append(e.name)
            var = self.r.vars[e.name]
            if var.type is csp.Type.STR:
                return frozenset(var.domain)
            d = var.domain
            return Iv(d[0], d[-1]) if isinstance(d, range) else Iv(min(d), max(d))
        if isinstance(e, csp.Neg):
            return neg(self.number(e.operand))
        if isinstance(e, csp.Arith):
            return arith(e.op, self.number(e.left), self.number(e.right))
        if isinstance(e, csp.Call):
            args = [self.number(x) for x in e.args]
            return absolute(args[0]) if e.func == "abs" else minmax(e.func, args)
        if isinstance(e, csp.Compare):
            return conj(self._pairs(e))
        if isinstance(e, csp.Member):
            x = self.number(e.element)
            return (negate if e.negated else (lambda v: v))(disj(compare("==", x, self.number(c)) for c in e.choices))
        if isinstance(e, csp.BoolOp):
            parts = (self.value(o) for o in e.operands)
            return conj(parts) if e.op == "and" else disj(parts)
        if isinstance(e, csp.Not):
            return negate(self.value(e.operand))
        if isinstance(e, csp.AllDifferent):
            return distinct([self.number(o) for o in e.operands])
        raise Unsupported(f"unknown expression {type(e).__name__}")

    def _pairs(self, e: Any) -> Iterable[bool | None]:
        for op, a, b in zip(e.ops, e.operands, e.operands[1:], strict=False):
            yield compare(op, self.number(a), self.number(b))
