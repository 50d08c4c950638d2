"""Logic-LM's SAT/SMT option DSL for AR-LSAT on Z3 (language ``logiclm-smt``): the registry entry ``parse``/``solve``.

The language, its semantics and the answer selection are specified in :mod:`symbolkg.solvers.smt.lsat_syntax`.
:func:`solve` compiles the typed program into Z3 terms in a fresh ``z3.Context`` (quantifiers over
finite sorts expanded; each term built once, through the C API where the operands' types already
agree), checks every option in one solver (:class:`_Session`), and writes the ``constraint``
certificate of a selected answer (:mod:`symbolkg.solvers.certificates.constraint`) from the answers
those checks found, minimising their unsat cores in the same solver.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import z3

from symbolkg.solvers.certificates import constraint as cc
from symbolkg.solvers.certificates import constraint_lsat
from symbolkg.solvers.certificates.constraint_search import Unsupported
from symbolkg.solvers.outcomes import CertificateError, ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch
from symbolkg.solvers.smt.lsat_formula_syntax import (
    Apply,
    Check,
    Expr,
    FunctionDecl,
    Lit,
    MemberRef,
    Op,
    Scoped,
    VarRef,
)
from symbolkg.solvers.smt.lsat_syntax import LANGUAGE, Option, Program, parse
from symbolkg.solvers.smt.z3_watchdog import CHECK_RLIMIT, out_of_budget

__all__ = ["BACKEND", "parse", "solve"]

BACKEND = "z3"

# past this many nodes the program is reported instead of exhausting memory.
_MAX_TERM_NODES = 1_000_000

# Share of the worker's memory limit given to Z3 itself, so that Z3 reports
# "memory" cleanly before the process limit kills the worker.
_Z3_MEMORY_SHARE = 0.75


# ------------------------------------------------------------------ solving


class _Timeout(Exception):
    """The call's deadline passed while building or checking."""


class _TooLarge(Exception):
    """Expanding quantifiers produced more than :data:`_MAX_TERM_NODES` terms."""


class _SolverGaveUp(Exception):
    def __init__(self, status: Status, kind: ErrorKind, message: str):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class _Compiler:
    """Builds Z3 terms for one :class:`Program` inside one ``z3.Context``."""

    def __init__(self, program: Program, ctx: z3.Context, deadline: float):
        self.program = program
        self.ctx = ctx
        self.deadline = deadline
        self.nodes = 0
        self.z3_sorts: dict[str, z3.SortRef] = {"int": z3.IntSort(ctx), "bool": z3.BoolSort(ctx)}
        self.z3_members: dict[str, z3.ExprRef] = {}
        for sort in program.sorts.values():
            if sort.numeric:
                self.z3_sorts[sort.name] = z3.IntSort(ctx)
            elif sort.parent is None:
                zsort, consts = z3.EnumSort(sort.name, [str(m) for m in sort.members], ctx=ctx)
                self.z3_sorts[sort.name] = zsort
                self.z3_members.update(zip((str(m) for m in sort.members), consts, strict=True))
        for sort in program.sorts.values():
            if sort.parent is not None:
                self.z3_sorts[sort.name] = self.z3_sorts[sort.parent]
        self.z3_funcs: dict[str, z3.FuncDeclRef] = {}
        # function -> (the expression type of each parameter, the Python class of an application)
        self.signatures: dict[str, tuple[tuple[str, ...], type]] = {}
        for f in program.functions.values():
            self.z3_funcs[f.name] = z3.Function(f.name, *[self.z3_sorts[p] for p in f.params], self.z3_sorts[f.result])
            result = self.value_type(f.result)
            self.signatures[f.name] = (
                tuple(self.value_type(p) for p in f.params),
                z3.BoolRef if result == "bool" else z3.ArithRef if result == "int" else z3.DatatypeRef,
            )

    def value_type(self, sort: str) -> str:
        """The expression type (:attr:`Expr.type`) of the values of a declared or built-in sort."""
        return sort if sort in ("bool", "int") else self.program.sorts[sort].value_type

    def domain(self, sort: str) -> list[z3.ExprRef]:
        """The values a binder of ``sort`` ranges over (finite sorts and bool)."""
        if sort == "bool":
            return [z3.BoolVal(False, self.ctx), z3.BoolVal(True, self.ctx)]
        s = self.program.sorts[sort]
        if s.numeric:
            return [z3.IntVal(v, self.ctx) for v in s.members]
        return [self.z3_members[str(m)] for m in s.members]

    def range_constraints(self) -> Iterator[tuple[int, z3.BoolRef]]:
        """Restrict functions whose result is a numeric or subset sort to that sort's members."""
        for f in self.program.functions.values():
            sort = self.program.sorts.get(f.result)
            if sort is None or not (sort.numeric or sort.parent):
                continue
            values = self.domain(f.result)
            numbers = sorted(sort.members) if sort.numeric else []  # type: ignore[type-var]
            contiguous = bool(numbers) and numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # type: ignore[arg-type]
            func = self.z3_funcs[f.name]
            finite = [p != "int" for p in f.params]
            int_vars = [z3.Int(f"_{f.name}_arg{i}", self.ctx) for i, fin in enumerate(finite) if not fin]
            domains = [self.domain(p) if fin else [None] for p, fin in zip(f.params, finite, strict=True)]
            for combo in itertools.product(*domains):
                iv = iter(int_vars)
                args = [a if a is not None else next(iv) for a in combo]
                term = func(*args) if args else func()
                if contiguous:
                    cond = z3.And(numbers[0] <= term, term <= numbers[-1])
                else:
                    cond = z3.Or([term == v for v in values])
                self._tick(len(values) + 1)
                yield f.line, (z3.ForAll(int_vars, cond) if int_vars else cond)

    def _tick(self, n: int = 1) -> None:
        self.nodes += n
        if self.nodes > _MAX_TERM_NODES:
            raise _TooLarge()
        if self.nodes % 2048 < n and time.monotonic() > self.deadline:
            raise _Timeout()

    def build(self, e: Expr, env: dict[str, z3.ExprRef]) -> z3.ExprRef:
        self._tick()
        if isinstance(e, Lit):
            return z3.BoolVal(e.value, self.ctx) if e.type == "bool" else z3.IntVal(e.value, self.ctx)
        if isinstance(e, MemberRef):
            return self.z3_members[e.name]
        if isinstance(e, VarRef):
            return env[e.name]
        if isinstance(e, Apply):
            func = self.z3_funcs[e.func]
            args = [self.build(a, env) for a in e.args]
            params, result = self.signatures[e.func]
            if all(a.type == p for a, p in zip(e.args, params, strict=True)):  # the sorts agree: no casts to make
                return result(z3.Z3_mk_app(self.ctx.ref(), func.ast, len(args), _asts(args)), self.ctx)
            return func(*args) if args else func()
        if isinstance(e, Scoped):
            return self._scoped(e, env)
        assert isinstance(e, Op)
        args = [self.build(a, env) for a in e.args]
        if e.op == "pos":
            return self._position(e.type[4:], args[0])
        fast = _FAST_OPS.get(e.op)
        if fast is not None and args and fast[0](e.args):
            return fast[1](self.ctx, args)
        return _OPS[e.op](self.ctx, args)

    def _position(self, sort: str, value: z3.ExprRef) -> z3.ExprRef:
        # 0-based place in the declaration; the base never shows, as positions are only compared with positions.
        members = self.domain(sort)
        self._tick(len(members))
        if z3.is_const(value) and value.decl().kind() != z3.Z3_OP_UNINTERPRETED:
            for i, m in enumerate(members):
                if z3.eq(m, value):
                    return z3.IntVal(i, self.ctx)
        term: z3.ExprRef = z3.IntVal(len(members) - 1, self.ctx)
        for i in range(len(members) - 2, -1, -1):
            term = z3.If(value == members[i], z3.IntVal(i, self.ctx), term)
        return term

    def _scoped(self, e: Scoped, env: dict[str, z3.ExprRef]) -> z3.ExprRef:
        finite = [b for b in e.binders if b.sort != "int"]
        symbolic = [b for b in e.binders if b.sort == "int"]
        bound = {b.name: z3.Int(f"{b.name}!{id(b)}", self.ctx) for b in symbolic}
        instances = []
        for combo in itertools.product(*[self.domain(b.sort) for b in finite]):
            inner = dict(env)
            inner.update(bound)
            inner.update(zip((b.name for b in finite), combo, strict=True))
            instances.append(self.build(e.body, inner))
        fast = self._fast_scoped(e, instances)
        if fast is not None:
            return fast if not bound else (z3.ForAll if e.kind == "forall" else z3.Exists)(list(bound.values()), fast)
        if e.kind == "sum":
            return z3.Sum(instances) if instances else z3.IntVal(0, self.ctx)
        if e.kind == "count":
            one, zero = z3.IntVal(1, self.ctx), z3.IntVal(0, self.ctx)
            return z3.Sum([z3.If(i, one, zero) for i in instances]) if instances else zero
        if e.kind == "distinct":
            return z3.Distinct(*instances) if len(instances) > 1 else z3.BoolVal(True, self.ctx)
        if e.kind == "forall":
            body = z3.And(instances) if instances else z3.BoolVal(True, self.ctx)
            return z3.ForAll(list(bound.values()), body) if bound else body
        body = z3.Or(instances) if instances else z3.BoolVal(False, self.ctx)
        return z3.Exists(list(bound.values()), body) if bound else body

    def _fast_scoped(self, e: Scoped, instances: list[z3.ExprRef]) -> z3.ExprRef | None:
        """The term z3py's Sum / If / Distinct / And / Or would build of ``instances``, through the C API (their
        type is the body's, so there is nothing to cast); None where z3py must build it."""
        ctx, ref, kind, body = self.ctx, self.ctx.ref(), e.kind, e.body.type
        if not instances:
            return None
        if (kind == "sum" and body == "int") or (kind == "count" and body == "bool"):
            if kind == "count":
                one, zero = z3.IntVal(1, ctx).as_ast(), z3.IntVal(0, ctx).as_ast()
                instances = [z3.ArithRef(z3.Z3_mk_ite(ref, i.as_ast(), one, zero), ctx) for i in instances]
            return z3.z3._to_expr_ref(z3.Z3_mk_add(ref, len(instances), _asts(instances)), ctx)
        if kind == "distinct" and len(instances) > 1:
            return z3.BoolRef(z3.Z3_mk_distinct(ref, len(instances), _asts(instances)), ctx)
        if kind in ("forall", "exists") and body == "bool":
            mk = z3.Z3_mk_and if kind == "forall" else z3.Z3_mk_or
            return z3.BoolRef(mk(ref, len(instances), _asts(instances)), ctx)
        return None


def _distinct(ctx: z3.Context, a: list) -> z3.ExprRef:
    return z3.Distinct(*a) if len(a) > 1 else z3.BoolVal(True, ctx)


def _asts(args: list[z3.ExprRef]) -> Any:
    array = (z3.Ast * len(args))()
    for i, a in enumerate(args):
        array[i] = a.as_ast()
    return array


def _all_bool(args: tuple[Expr, ...]) -> bool:
    return all(a.type == "bool" for a in args)


def _same_type(args: tuple[Expr, ...]) -> bool:
    return len(args) == 2 and args[0].type == args[1].type


def _both_int(args: tuple[Expr, ...]) -> bool:
    return len(args) == 2 and args[0].type == args[1].type == "int"


def _c_call(mk: Callable[..., Any], arity: str) -> Callable[[z3.Context, list], z3.BoolRef]:
    """The Z3 C API call that z3py's operator makes once its operands have the right sorts (the same term)."""
    if arity == "n":
        return lambda ctx, a: z3.BoolRef(mk(ctx.ref(), len(a), _asts(a)), ctx)
    if arity == "1":
        return lambda ctx, a: z3.BoolRef(mk(ctx.ref(), a[0].as_ast()), ctx)
    return lambda ctx, a: z3.BoolRef(mk(ctx.ref(), a[0].as_ast(), a[1].as_ast()), ctx)


#: Operations built straight through the C API when their operands' types agree (else :data:`_OPS`):
#: op -> (the operands' condition, the builder). ``!=`` is ``distinct`` of two, as in z3py.
_FAST_OPS: dict[str, tuple[Callable[[tuple[Expr, ...]], bool], Callable[[z3.Context, list], z3.BoolRef]]] = {
    "and": (_all_bool, _c_call(z3.Z3_mk_and, "n")),
    "or": (_all_bool, _c_call(z3.Z3_mk_or, "n")),
    "not": (_all_bool, _c_call(z3.Z3_mk_not, "1")),
    "implies": (_all_bool, _c_call(z3.Z3_mk_implies, "2")),
    "eq": (_same_type, _c_call(z3.Z3_mk_eq, "2")),
    "ne": (_same_type, _c_call(z3.Z3_mk_distinct, "n")),
    "lt": (_both_int, _c_call(z3.Z3_mk_lt, "2")),
    "le": (_both_int, _c_call(z3.Z3_mk_le, "2")),
    "gt": (_both_int, _c_call(z3.Z3_mk_gt, "2")),
    "ge": (_both_int, _c_call(z3.Z3_mk_ge, "2")),
}

_OPS: dict[str, Callable[[z3.Context, list], z3.ExprRef]] = {
    "and": lambda ctx, a: z3.And(a) if a else z3.BoolVal(True, ctx),
    "or": lambda ctx, a: z3.Or(a) if a else z3.BoolVal(False, ctx),
    "not": lambda ctx, a: z3.Not(a[0]),
    "implies": lambda ctx, a: z3.Implies(a[0], a[1]),
    "xor": lambda ctx, a: z3.Xor(a[0], a[1]),
    "ite": lambda ctx, a: z3.If(a[0], a[1], a[2]),
    "eq": lambda ctx, a: a[0] == a[1],
    "ne": lambda ctx, a: a[0] != a[1],
    "lt": lambda ctx, a: a[0] < a[1],
    "le": lambda ctx, a: a[0] <= a[1],
    "gt": lambda ctx, a: a[0] > a[1],
    "ge": lambda ctx, a: a[0] >= a[1],
    "add": lambda ctx, a: a[0] + a[1],
    "sub": lambda ctx, a: a[0] - a[1],
    "mul": lambda ctx, a: a[0] * a[1],
    "mod": lambda ctx, a: a[0] % a[1],
    "neg": lambda ctx, a: -a[0],
    "abs": lambda ctx, a: z3.Abs(a[0]),
    "sum": lambda ctx, a: z3.Sum(a) if a else z3.IntVal(0, ctx),
    "distinct": _distinct,
}


@dataclasses.dataclass
class _Answer:
    """A satisfiability question's answer: its model when satisfiable, else its unsat core's constraint lines."""

    sat: bool
    model: z3.ModelRef | None = None
    core: list[int] = dataclasses.field(default_factory=list)


class _Session:
    """One solver for one program, asked every question the options' checks and the certificate need.

    Each range restriction of a declaration and each constraint is asserted as ``literal -> formula``,
    one literal per formula; a check assumes the literals (all of them, but for the certificate's
    deletion checks, which leave out constraint lines) and adds its question in a ``push`` scope. An
    unsat core is therefore a set of program lines, and the answers of the options' checks are kept
    (:meth:`answer`), so the certificate reuses their models and cores instead of asking again.
    """

    def __init__(self, compiler: _Compiler, limits: Limits, deadline: float):
        self.compiler = compiler
        self.deadline = deadline
        self.solver = z3.Solver(ctx=compiler.ctx)
        self.solver.set("max_memory", max(16, int(limits.memory_mb * _Z3_MEMORY_SHARE)))
        self.solver.set("unsat_core", True)
        self.calls = 0
        self.ranges: list[z3.BoolRef] = []  # literals of the declarations' range restrictions
        self.lines: dict[int, z3.BoolRef] = {}  # constraint line -> its literal
        self.line_of: dict[int, int] = {}  # AST id of a literal -> its program line
        self.ranged: set[int] = set()  # AST ids of the range restrictions' literals
        self.answers: dict[tuple[int, str, int], _Answer] = {}  # (id of a check, query, index) -> answer
        self.base: z3.ModelRef | None = None  # a model of the constraints
        self._exprs: dict[int, tuple[Check, list[z3.ExprRef]]] = {}

    def track(self, line: int, formula: z3.BoolRef, *, ranged: bool = False) -> None:
        """Assert ``formula`` of program ``line`` under a literal of its own."""
        literal = z3.Bool(f"line{line}#{len(self.line_of)}", self.compiler.ctx)
        self.line_of[literal.get_id()] = line
        if ranged:
            self.ranges.append(literal)
            self.ranged.add(literal.get_id())
        else:
            self.lines[line] = literal
        ctx = self.compiler.ctx
        if isinstance(formula, z3.BoolRef):  # literal -> formula, asserted as z3py would (nothing to cast)
            implication = z3.Z3_mk_implies(ctx.ref(), literal.as_ast(), formula.as_ast())
            z3.Z3_solver_assert(ctx.ref(), self.solver.solver, implication)
        else:
            self.solver.add(z3.Implies(literal, formula))

    def check(self, question: z3.BoolRef | None, lines: list[int] | None = None, *, evidence: bool = True) -> _Answer:
        """Are the range restrictions, the constraints of ``lines`` (default: all) and ``question`` satisfiable?
        With ``evidence``, the answer keeps the model or the unsat core."""
        remaining_ms = int((self.deadline - time.monotonic()) * 1000)
        if remaining_ms <= 0:
            raise _Timeout()
        self.solver.set("rlimit", CHECK_RLIMIT)
        self.solver.set("timeout", remaining_ms)
        self.calls += 1
        literals = self.ranges + (list(self.lines.values()) if lines is None else [self.lines[n] for n in lines])
        if question is None:
            return self._answer(self.solver.check(*literals), evidence)
        self.solver.push()
        try:
            self.solver.add(question)
            return self._answer(self.solver.check(*literals), evidence)
        finally:
            self.solver.pop()

    def _answer(self, result: z3.CheckSatResult, evidence: bool) -> _Answer:
        if result == z3.sat:
            return _Answer(True, self.solver.model() if evidence else None)
        if result == z3.unsat:
            return _Answer(
                False,
                core=sorted({self.line_of[t.get_id()] for t in self.solver.unsat_core() if t.get_id() in self.line_of})
                if evidence
                else [],
            )
        reason = self.solver.reason_unknown()
        if out_of_budget(reason) or "timeout" in reason or "canceled" in reason or time.monotonic() >= self.deadline:
            raise _Timeout()
        if "memory" in reason or "memout" in reason:
            raise _SolverGaveUp(Status.MEMORY, ErrorKind.MEMORY, f"Z3 ran out of memory ({reason})")
        raise _SolverGaveUp(
            Status.RUNTIME_ERROR,
            ErrorKind.SOLVER,
            f"Z3 could not decide the problem ({reason}); avoid quantifiers over int",
        )

    def constraint_core(self, answer: _Answer) -> list[int]:
        """The constraint lines of an unsat answer's core (the range restrictions' lines left out)."""
        return [line for line in answer.core if line in self.lines]

    def exprs(self, check: Check) -> list[z3.ExprRef]:
        """The Z3 terms of a check's formulas, built once per check."""
        found = self._exprs.get(id(check))
        if found is None:
            found = self._exprs[id(check)] = (check, [self.compiler.build(e, {}) for e in check.exprs])
        return found[1]

    def question(self, check: Check, query: str, index: int = 0) -> z3.BoolRef:
        """The formula a query of ``check`` adds to the constraints (the certificate's query names)."""
        exprs = self.exprs(check)
        if query == "option":
            return exprs[0]
        if query == "negation":
            return z3.Not(exprs[0])
        if query == "none":
            return z3.Not(z3.Or(exprs))
        return exprs[index]

    def answer(self, check: Check, query: str, index: int = 0) -> _Answer:
        """The answer to a query of ``check``, asked once."""
        key = (id(check), query, index)
        found = self.answers.get(key)
        if found is None:
            found = self.answers[key] = self.check(self.question(check, query, index))
        return found

    def satisfiable(self, check: Check, query: str, index: int = 0) -> bool:
        return self.answer(check, query, index).sat


def _evaluate(check: Check, session: _Session) -> bool:
    """Logic-LM's meaning of each option check (see the module docstring)."""
    if check.kind == "is_exception":
        assert check.inner is not None
        return not _evaluate(check.inner, session)
    session.exprs(check)
    if check.kind == "is_sat":
        return session.satisfiable(check, "option")
    if check.kind == "is_unsat":
        return not session.satisfiable(check, "option")
    if check.kind == "is_valid":
        return not session.satisfiable(check, "negation")
    # is_accurate_list: the listed formulas cover every model and each is possible.
    return not session.satisfiable(check, "none") and all(
        session.satisfiable(check, "item", i) for i in range(len(check.exprs))
    )


def solve(text: str, limits: Limits) -> Outcome:
    """Parse a program, check every option with Z3, and select the answer.

    Never raises for a bad program.

    Args:
        text: the program.
        limits: ``timeout_s`` bounds the whole call (building the formulas and every
            check share one deadline); ``memory_mb`` caps Z3's own memory at a share
            of the worker limit.

    Returns:
        ``PROVED`` with the letter of the only passing option; ``UNKNOWN`` (kind
        ``no_answer``) when none or several pass; ``UNSAT`` (kind ``inconsistent``) when
        the constraints contradict each other; ``PARSE_ERROR`` for a malformed
        program; ``TIMEOUT`` / ``MEMORY`` when a limit was hit; ``RUNTIME_ERROR``
        (kind ``solver`` / ``unsupported``) when Z3 gave up or the expanded formula
        is too large. ``proof`` lists each option's verdict.
    """
    with Stopwatch() as sw:
        outcome = _solve(text, limits, time.monotonic() + limits.timeout_s)
    return dataclasses.replace(outcome, seconds=sw.seconds, backend=BACKEND)


def _solve(text: str, limits: Limits, deadline: float) -> Outcome:
    try:
        program = parse(text)
    except ProgramError as err:
        return err.to_outcome(backend=BACKEND)
    outcome = _run(text, program, limits, deadline)
    if not program.readings:
        return outcome
    # What the parser read into the program heads its proof (the row's record of how it was read).
    said = "\n".join(f"reading: {r}" for r in program.readings)
    return dataclasses.replace(
        outcome, proof=f"{said}\n{outcome.proof}" if outcome.proof else said, readings=list(program.readings)
    )


def _run(text: str, program: Program, limits: Limits, deadline: float) -> Outcome:
    ctx = z3.Context()
    current_line: int | None = None
    try:
        compiler = _Compiler(program, ctx, deadline)
        session = _Session(compiler, limits, deadline)
        for line, formula in compiler.range_constraints():
            current_line = line
            session.track(line, formula, ranged=True)
        for c in program.constraints:
            current_line = c.line
            session.track(c.line, compiler.build(c.expr, {}))
        current_line = None
        base = session.check(None)
        if not base.sat:
            lines = ", ".join(map(str, base.core))
            where = (
                f"line {lines} can never hold"
                if len(base.core) == 1
                else f"lines {lines} cannot all hold together"
                if base.core
                else "they cannot all hold together"
            )
            return Outcome(
                status=Status.UNSAT,
                error_kind=ErrorKind.INCONSISTENT.value,
                error_line=base.core[0] if base.core else None,
                error_message=(
                    f"the constraints contradict each other ({where}), so every option would pass "
                    "vacuously; fix or drop the constraint that misstates the problem"
                ),
                proof=f"constraints: unsatisfiable; unsat core lines {lines or '?'}",
                backend=BACKEND,
            )
        session.base = base.model
        verdicts: list[tuple[Option, bool]] = []
        for option in program.options:
            current_line = option.line
            verdicts.append((option, _evaluate(option.check, session)))
    except _Timeout:
        where = f" (while at line {current_line})" if current_line else ""
        return Outcome.error(
            Status.TIMEOUT,
            ErrorKind.TIMEOUT,
            f"time limit of {limits.timeout_s:g} s reached{where}; simplify the constraints "
            "(fewer nested quantifiers, no quantifiers over int)",
            line=current_line,
            backend=BACKEND,
        )
    except _TooLarge:
        return Outcome.error(
            Status.RUNTIME_ERROR,
            ErrorKind.UNSUPPORTED,
            f"the formula at line {current_line} expands to more than {_MAX_TERM_NODES:,} terms "
            "(nested quantifiers over large sorts); simplify it",
            line=current_line,
            backend=BACKEND,
        )
    except _SolverGaveUp as gave_up:
        return Outcome.error(gave_up.status, gave_up.kind, gave_up.message, line=current_line, backend=BACKEND)
    except z3.Z3Exception as exc:
        message = str(exc.value if hasattr(exc, "value") else exc)
        if "memory" in message.lower():
            return Outcome.error(
                Status.MEMORY, ErrorKind.MEMORY, f"Z3 ran out of memory: {message}", line=current_line, backend=BACKEND
            )
        return Outcome.error(
            Status.RUNTIME_ERROR, ErrorKind.SOLVER, f"Z3 error: {message}", line=current_line, backend=BACKEND
        )
    return _verdict(text, program, session, verdicts)


def _verdict(text: str, program: Program, session: _Session, verdicts: list[tuple[Option, bool]]) -> Outcome:
    """The outcome of the options' verdicts: the only passing option with its certificate, else no answer."""
    proof = "\n".join(
        [f"constraints: satisfiable ({len(program.constraints)} formulas)"]
        + [f"({o.letter}) line {o.line}: {o.check.describe()} -> {'passes' if ok else 'fails'}" for o, ok in verdicts]
    )
    passing = [o.letter for o, ok in verdicts if ok]
    if len(passing) == 1:
        certificate = _certificate(text, program, session, passing[0], {o.letter: ok for o, ok in verdicts})
        return Outcome(status=Status.PROVED, answer=passing[0], proof=proof, backend=BACKEND, certificate=certificate)
    if passing:
        message = (
            f"{len(passing)} options pass ({', '.join(passing)}), but exactly one must; a check is too weak "
            "(e.g. is_sat where the question asks what must be true: use is_valid) or a constraint is missing"
        )
    else:
        message = (
            "no option passes; a check is too strong (e.g. is_valid where the question asks what could be "
            "true: use is_sat; is_exception(is_sat(...)) for 'could be true EXCEPT') or a constraint is wrong"
        )
    return Outcome(
        status=Status.UNKNOWN, proof=proof, error_kind=ErrorKind.NO_ANSWER.value, error_message=message, backend=BACKEND
    )


def _certificate(text: str, program: Program, session: _Session, answer: str, verdicts: dict[str, bool]) -> dict | None:
    """The ``constraint`` certificate (:mod:`symbolkg.solvers.certificates.constraint`) of ``answer``.

    Every query the options' checks ask gets its answer from the session (the options' checks asked
    most of them already): a model when satisfiable, else the core of the check, minimised by deletion
    in the same solver. None when Z3 cannot finish within the call's deadline (the answer stands; the
    row is then unverifiable) or the certificate would be too large.
    """
    try:
        writer = _CertificateWriter(text, program, session)
        options = []
        chosen_model: dict | None = None
        for option in program.options:
            facts, model = writer.option_facts(option, chosen=option.letter == answer)
            if option.letter == answer:
                if model is None:
                    return None  # no model of the constraints agrees with the chosen option's check
                chosen_model = model
            options.append(
                {
                    "letter": option.letter,
                    "line": option.line,
                    "text": constraint_lsat.dsl_line_text(text, option.line),
                    "check": option.check.describe(),
                    "passes": verdicts[option.letter],
                    "facts": facts,
                }
            )
    except (_Timeout, _TooLarge, _SolverGaveUp, z3.Z3Exception, Unsupported, CertificateError, RecursionError):
        return None  # no certificate (the row is then unverifiable); the answer stands
    cert = {
        "kind": "constraint",
        "version": cc.VERSION,
        "producer": BACKEND,
        "language": LANGUAGE,
        "answer": answer,
        "constraints": [
            {"id": c.line, "text": constraint_lsat.dsl_line_text(text, c.line)} for c in program.constraints
        ],
        "model": chosen_model,
        "options": options,
        "signatures": {
            f.name: [
                [
                    m if isinstance(m, (int, bool)) else str(m)
                    for m in ((False, True) if p == "bool" else program.sorts[p].members)
                ]
                for p in f.params
            ]
            for f, _ in writer.tables
        },
    }
    return cert if len(json.dumps(cert)) <= cc.MAX_CERTIFICATE_CHARS else None


class _CertificateWriter:
    """The facts and the model encoding behind :func:`_certificate`: one per certificate."""

    def __init__(self, text: str, program: Program, session: _Session) -> None:
        self.text, self.program, self.session = text, program, session
        compiler = self.compiler = session.compiler
        self.ctx = compiler.ctx
        self.bounding = constraint_lsat.dsl_bounding_lines(text, program)
        self.tables: list[tuple[FunctionDecl, list[z3.ExprRef]]] = []  # each function's applications to members
        for f in program.functions.values():
            if "int" not in f.params:
                func = compiler.z3_funcs[f.name]
                cells = itertools.product(*[compiler.domain(p) for p in f.params])
                self.tables.append((f, [func(*args) if args else func() for args in cells]))
        self._json: dict[z3.ModelRef, dict] = {}

    def option_facts(self, option: Option, *, chosen: bool) -> tuple[list[dict], dict | None]:
        """The facts of ``option``'s check, and for the ``chosen`` option a model that agrees with it."""
        check = option.check.inner if option.check.kind == "is_exception" else option.check
        assert check is not None
        negated = option.check.kind == "is_exception"
        if check.kind in ("is_sat", "is_unsat"):
            facts = [self.fact(check, "option")]
        elif check.kind == "is_valid":
            facts = [self.fact(check, "negation")]
        else:
            facts = [self.fact(check, "none")]
            facts += [self.fact(check, "item", i) for i in range(len(check.exprs))]
        if not chosen:
            return facts, None
        exprs = self.session.exprs(check)
        formula = exprs[0] if len(exprs) == 1 else z3.Or(exprs)
        wanted = formula if cc.polarity(check.kind, negated) else z3.Not(formula)
        model = self.agreeing_model(wanted)
        return facts, None if model is None else self.model_json(model)

    def agreeing_model(self, wanted: z3.BoolRef) -> z3.ModelRef | None:
        """A model of the constraints in which ``wanted`` holds: one the checks found, else Z3's."""
        session = self.session
        found = [session.base] + [a.model for a in session.answers.values() if a.sat]
        for model in found:
            if model is not None and z3.is_true(model.eval(wanted, model_completion=True)):
                return model
        answer = session.check(wanted)
        return answer.model if answer.sat else None

    def fact(self, check: Check, query: str, index: int | None = None) -> dict:
        entry: dict = {"query": query}
        if index is not None:
            entry["index"] = index
        answer = self.session.answer(check, query, index or 0)
        if answer.sat:
            if answer.model is None:
                raise _Timeout()  # cannot happen: a question's satisfiable answer keeps its model
            entry.update(sat=True, model=self.model_json(answer.model))
            return entry
        entry.update(
            sat=False, core=self.minimal_core(self.session.question(check, query, index or 0), answer), minimal=True
        )
        if self.bounding:
            entry["bounds"] = self.bounding
        return entry

    def minimal_core(self, question: z3.BoolRef, answer: _Answer) -> list[int]:
        """The constraint lines of ``answer``'s core, minimised by deletion (the bounding lines stay on: the
        checker's finite search needs them); every line kept is shown needed by a satisfiable check."""
        session, bounding = self.session, self.bounding
        start = [line for line in session.constraint_core(answer) if line not in bounding]
        session.solver.push()
        try:
            session.solver.add(question)
            return cc.minimise(start, lambda lines: not session.check(None, lines + bounding, evidence=False).sat)
        finally:
            session.solver.pop()

    def model_json(self, model: z3.ModelRef) -> dict:
        found = self._json.get(model)
        if found is not None:
            return found
        out: dict = {
            f.name: [self.value_json(f, model.eval(term, model_completion=True)) for term in terms]
            for f, terms in self.tables
        }

        def lookup(name: str, args: tuple) -> object:
            z3_args = [
                z3.BoolVal(a, self.ctx)
                if isinstance(a, bool)
                else z3.IntVal(a, self.ctx)
                if isinstance(a, int)
                else self.compiler.z3_members[a]
                for a in args
            ]
            return self.value_json(
                self.program.functions[name], model.eval(self.compiler.z3_funcs[name](*z3_args), model_completion=True)
            )

        outside = constraint_lsat.dsl_outside_cells(self.text, out, lookup, self.program)
        if outside:
            out[constraint_lsat.OUTSIDE] = outside
        self._json[model] = out
        return out

    @staticmethod
    def value_json(f: FunctionDecl, v: z3.ExprRef) -> object:
        return z3.is_true(v) if f.result == "bool" else v.as_long() if z3.is_int_value(v) else str(v)
