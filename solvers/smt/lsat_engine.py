"""Logic-LM's SAT/SMT option DSL for AR-LSAT on Z3 (language ``logiclm-smt``): the registry entry ``parse``/``solve``.

The language, its semantics and the answer selection are specified in :mod:`symbolkg.solvers.smt.lsat_syntax`.
:func:`solve` compiles the typed program into Z3 terms in a fresh ``z3.Context`` (quantifiers over
finite sorts expanded), checks every option, and writes the ``constraint`` certificate of a selected
answer (:mod:`symbolkg.solvers.certificates.constraint`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from typing import Callable, Iterator

import z3

from symbolkg.solvers.certificates import constraint as cc
from symbolkg.solvers.certificates import constraint_lsat
from symbolkg.solvers.certificates.constraint_search import Unsupported
from symbolkg.solvers.outcomes import CertificateError, ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch
from symbolkg.solvers.smt.lsat_formula_syntax import Apply, Check, Expr, FunctionDecl, Lit, MemberRef, Op, Scoped, VarRef
from symbolkg.solvers.smt.lsat_syntax import LANGUAGE, Option, Program, parse

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
                self.z3_members.update(zip((str(m) for m in sort.members), consts))
        for sort in program.sorts.values():
            if sort.parent is not None:
                self.z3_sorts[sort.name] = self.z3_sorts[sort.parent]
        self.z3_funcs: dict[str, z3.FuncDeclRef] = {}
        for f in program.functions.values():
            self.z3_funcs[f.name] = z3.Function(f.name, *[self.z3_sorts[p] for p in f.params], self.z3_sorts[f.result])

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
            domains = [self.domain(p) if fin else [None] for p, fin in zip(f.params, finite)]
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
            return func(*[self.build(a, env) for a in e.args]) if e.args else func()
        if isinstance(e, Scoped):
            return self._scoped(e, env)
        assert isinstance(e, Op)
        args = [self.build(a, env) for a in e.args]
        if e.op == "pos":
            return self._position(e.type[4:], args[0])
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
            inner.update(zip((b.name for b in finite), combo))
            instances.append(self.build(e.body, inner))
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


def _distinct(ctx: z3.Context, a: list) -> z3.ExprRef:
    return z3.Distinct(*a) if len(a) > 1 else z3.BoolVal(True, ctx)


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


class _Checker:
    """Runs satisfiability checks against the constraints under one deadline."""

    def __init__(self, solver: z3.Solver, deadline: float):
        self.solver = solver
        self.deadline = deadline
        self.calls = 0

    def satisfiable(self, extra: z3.BoolRef | None) -> bool:
        remaining_ms = int((self.deadline - time.monotonic()) * 1000)
        if remaining_ms <= 0:
            raise _Timeout()
        self.solver.set("timeout", remaining_ms)
        self.calls += 1
        if extra is None:
            result = self.solver.check()
        else:
            self.solver.push()
            try:
                self.solver.add(extra)
                result = self.solver.check()
            finally:
                self.solver.pop()
        if result == z3.sat:
            return True
        if result == z3.unsat:
            return False
        reason = self.solver.reason_unknown()
        if "timeout" in reason or "canceled" in reason or time.monotonic() >= self.deadline:
            raise _Timeout()
        if "memory" in reason or "memout" in reason:
            raise _SolverGaveUp(Status.MEMORY, ErrorKind.MEMORY, f"Z3 ran out of memory ({reason})")
        raise _SolverGaveUp(Status.RUNTIME_ERROR, ErrorKind.SOLVER,
                            f"Z3 could not decide the problem ({reason}); avoid quantifiers over int")


def _evaluate(check: Check, compiler: _Compiler, checker: _Checker) -> bool:
    """Logic-LM's meaning of each option check (see the module docstring)."""
    if check.kind == "is_exception":
        assert check.inner is not None
        return not _evaluate(check.inner, compiler, checker)
    exprs = [compiler.build(e, {}) for e in check.exprs]
    if check.kind == "is_sat":
        return checker.satisfiable(exprs[0])
    if check.kind == "is_unsat":
        return not checker.satisfiable(exprs[0])
    if check.kind == "is_valid":
        return not checker.satisfiable(z3.Not(exprs[0]))
    # is_accurate_list: the listed formulas cover every model and each is possible.
    return not checker.satisfiable(z3.Not(z3.Or(exprs))) and all(checker.satisfiable(x) for x in exprs)


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
        ``no_answer``) when none or several pass; ``UNSAT`` (kind ``no_answer``) when
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
    return dataclasses.replace(outcome, proof=f"{said}\n{outcome.proof}" if outcome.proof else said)


def _run(text: str, program: Program, limits: Limits, deadline: float) -> Outcome:
    ctx = z3.Context()
    current_line: int | None = None
    try:
        compiler = _Compiler(program, ctx, deadline)
        solver = z3.Solver(ctx=ctx)
        solver.set("max_memory", max(16, int(limits.memory_mb * _Z3_MEMORY_SHARE)))
        solver.set("unsat_core", True)
        trackers: dict[str, int] = {}
        for line, formula in compiler.range_constraints():
            current_line = line
            _track(solver, trackers, formula, line, ctx)
        for c in program.constraints:
            current_line = c.line
            _track(solver, trackers, compiler.build(c.expr, {}), c.line, ctx)
        checker = _Checker(solver, deadline)
        current_line = None
        if not checker.satisfiable(None):
            core = sorted({trackers[str(t)] for t in solver.unsat_core() if str(t) in trackers})
            lines = ", ".join(map(str, core))
            where = (f"line {lines} can never hold" if len(core) == 1 else
                     f"lines {lines} cannot all hold together" if core else "they cannot all hold together")
            return Outcome(
                status=Status.UNSAT, error_kind=ErrorKind.NO_ANSWER.value, error_line=core[0] if core else None,
                error_message=(f"the constraints contradict each other ({where}), so every option would pass "
                               "vacuously; fix or drop the constraint that misstates the problem"),
                proof=f"constraints: unsatisfiable; unsat core lines {lines or '?'}", backend=BACKEND)
        verdicts: list[tuple[Option, bool]] = []
        for option in program.options:
            current_line = option.line
            verdicts.append((option, _evaluate(option.check, compiler, checker)))
    except _Timeout:
        where = f" (while at line {current_line})" if current_line else ""
        return Outcome.error(Status.TIMEOUT, ErrorKind.TIMEOUT,
                             f"time limit of {limits.timeout_s:g} s reached{where}; simplify the constraints "
                             "(fewer nested quantifiers, no quantifiers over int)", line=current_line, backend=BACKEND)
    except _TooLarge:
        return Outcome.error(Status.RUNTIME_ERROR, ErrorKind.UNSUPPORTED,
                             f"the formula at line {current_line} expands to more than {_MAX_TERM_NODES:,} terms "
                             "(nested quantifiers over large sorts); simplify it", line=current_line, backend=BACKEND)
    except _SolverGaveUp as gave_up:
        return Outcome.error(gave_up.status, gave_up.kind, gave_up.message, line=current_line, backend=BACKEND)
    except z3.Z3Exception as exc:
        message = str(exc.value if hasattr(exc, "value") else exc)
        if "memory" in message.lower():
            return Outcome.error(Status.MEMORY, ErrorKind.MEMORY, f"Z3 ran out of memory: {message}",
                                 line=current_line, backend=BACKEND)
        return Outcome.error(Status.RUNTIME_ERROR, ErrorKind.SOLVER, f"Z3 error: {message}", line=current_line,
                             backend=BACKEND)

    proof = "\n".join(
        [f"constraints: satisfiable ({len(program.constraints)} formulas)"]
        + [f"({o.letter}) line {o.line}: {o.check.describe()} -> {'passes' if ok else 'fails'}" for o, ok in verdicts])
    passing = [o.letter for o, ok in verdicts if ok]
    if len(passing) == 1:
        certificate = _certificate(text, program, compiler, passing[0], {o.letter: ok for o, ok in verdicts},
                                   limits, deadline)
        return Outcome(status=Status.PROVED, answer=passing[0], proof=proof, backend=BACKEND, certificate=certificate)
    if passing:
        message = (f"{len(passing)} options pass ({', '.join(passing)}), but exactly one must; a check is too weak "
                   "(e.g. is_sat where the question asks what must be true: use is_valid) or a constraint is missing")
    else:
        message = ("no option passes; a check is too strong (e.g. is_valid where the question asks what could be "
                   "true: use is_sat; is_exception(is_sat(...)) for 'could be true EXCEPT') or a constraint is wrong")
    return Outcome(status=Status.UNKNOWN, proof=proof, error_kind=ErrorKind.NO_ANSWER.value, error_message=message,
                   backend=BACKEND)


def _track(solver: z3.Solver, trackers: dict[str, int], formula: z3.BoolRef, line: int, ctx: z3.Context) -> None:
    # One tracking literal per formula, so that an unsat core names program lines.
    name = f"line{line}#{len(trackers)}"
    trackers[name] = line
    solver.assert_and_track(formula, z3.Bool(name, ctx))


def _certificate(text: str, program: Program, compiler: _Compiler, answer: str, verdicts: dict[str, bool],
                 limits: Limits, deadline: float) -> dict | None:
    """The ``constraint`` certificate (:mod:`symbolkg.solvers.certificates.constraint`) of ``answer``.

    Its own solver (range restrictions of the declarations asserted, each constraint line guarded by a
    literal) answers every query the options' checks ask: a model when satisfiable, else a core minimised
    by deletion. None when Z3 cannot finish within the call's deadline (the answer stands; the row is
    then unverifiable) or the certificate would be too large.
    """
    try:
        writer = _CertificateWriter(text, program, compiler, limits, deadline)
        options = []
        chosen_model: dict | None = None
        for option in program.options:
            facts, model = writer.option_facts(option, chosen=option.letter == answer)
            if option.letter == answer:
                if model is None:
                    return None  # cannot happen: the option passed against satisfiable constraints
                chosen_model = model
            options.append({"letter": option.letter, "line": option.line,
                            "text": constraint_lsat.dsl_line_text(text, option.line),
                            "check": option.check.describe(), "passes": verdicts[option.letter], "facts": facts})
    except (_Timeout, _TooLarge, _SolverGaveUp, z3.Z3Exception, Unsupported, CertificateError, RecursionError):
        return None  # no certificate (the row is then unverifiable); the answer stands
    cert = {"kind": "constraint", "version": cc.VERSION, "producer": BACKEND, "language": LANGUAGE, "answer": answer,
            "constraints": [{"id": c.line, "text": constraint_lsat.dsl_line_text(text, c.line)} for c in program.constraints],
            "model": chosen_model, "options": options,
            "signatures": {f.name: [[m if isinstance(m, (int, bool)) else str(m) for m in
                                     ((False, True) if p == "bool" else program.sorts[p].members)] for p in f.params]
                           for f, _ in writer.tables}}
    return cert if len(json.dumps(cert)) <= cc.MAX_CERTIFICATE_CHARS else None


class _CertificateWriter:
    """The solver and the model encoding behind :func:`_certificate`: one per certificate."""

    def __init__(self, text: str, program: Program, compiler: _Compiler, limits: Limits, deadline: float) -> None:
        self.text, self.program, self.compiler, self.deadline = text, program, compiler, deadline
        ctx = self.ctx = compiler.ctx
        self.solver = z3.Solver(ctx=ctx)
        self.solver.set("max_memory", max(16, int(limits.memory_mb * _Z3_MEMORY_SHARE)))
        self.guards: dict[int, z3.BoolRef] = {}
        for _, formula in compiler.range_constraints():
            self.solver.add(formula)
        for c in program.constraints:
            guard = z3.Bool(f"cert_line{c.line}", ctx)
            self.guards[c.line] = guard
            self.solver.add(z3.Implies(guard, compiler.build(c.expr, {})))
        self.bounding = constraint_lsat.dsl_bounding_lines(text)
        self.tables = [(f, list(itertools.product(*[compiler.domain(p) for p in f.params])))
                       for f in program.functions.values() if "int" not in f.params]

    def option_facts(self, option: Option, *, chosen: bool) -> tuple[list[dict], dict | None]:
        """The facts of ``option``'s check, and for the ``chosen`` option a model that agrees with it."""
        check = option.check.inner if option.check.kind == "is_exception" else option.check
        negated = option.check.kind == "is_exception"
        exprs = [self.compiler.build(e, {}) for e in check.exprs]
        if check.kind in ("is_sat", "is_unsat"):
            facts = [self.fact("option", exprs[0])]
        elif check.kind == "is_valid":
            facts = [self.fact("negation", z3.Not(exprs[0]))]
        else:
            facts = [self.fact("none", z3.Not(z3.Or(exprs)))]
            facts += [self.fact("item", x, i) for i, x in enumerate(exprs)]
        if not chosen:
            return facts, None
        formula = exprs[0] if len(exprs) == 1 else z3.Or(exprs)
        wanted = formula if cc.polarity(check.kind, negated) else z3.Not(formula)
        _, model, _ = self.run(wanted, list(self.guards))
        return facts, None if model is None else self.model_json(model)

    def fact(self, query_name: str, query: z3.BoolRef, index: int | None = None) -> dict:
        entry: dict = {"query": query_name}
        if index is not None:
            entry["index"] = index
        sat, model, core = self.run(query, list(self.guards))
        if sat:
            entry.update(sat=True, model=self.model_json(model))
            return entry
        # Lines that bound integer functions stay on (the checker's finite search needs them); the rest is
        # minimised by deletion.
        bounding = self.bounding
        core = cc.minimise([line for line in core if line not in bounding],
                           lambda lines: not self.run(query, lines + bounding)[0])
        entry.update(sat=False, core=core, minimal=True)
        if bounding:
            entry["bounds"] = bounding
        return entry

    def run(self, query: z3.BoolRef, lines: list[int]) -> tuple[bool, z3.ModelRef | None, list[int]]:
        """(satisfiable, its model, else its core) of the guarded lines ``lines`` and ``query``."""
        remaining_ms = int((self.deadline - time.monotonic()) * 1000)
        if remaining_ms <= 0:
            raise _Timeout()
        self.solver.set("timeout", remaining_ms)
        self.solver.push()
        try:
            self.solver.add(query)
            result = self.solver.check(*[self.guards[line] for line in lines])
            if result == z3.unknown:
                raise _Timeout()
            if result == z3.sat:
                return True, self.solver.model(), []
            return False, None, sorted({int(str(t)[len("cert_line"):]) for t in self.solver.unsat_core()})
        finally:
            self.solver.pop()

    def model_json(self, model: z3.ModelRef) -> dict:
        out: dict = {}
        for f, cells in self.tables:
            func = self.compiler.z3_funcs[f.name]
            out[f.name] = [self.value_json(f, model.eval(func(*args) if args else func(), model_completion=True))
                           for args in cells]

        def lookup(name: str, args: tuple) -> object:
            z3_args = [z3.BoolVal(a, self.ctx) if isinstance(a, bool) else z3.IntVal(a, self.ctx) if isinstance(a, int)
                       else self.compiler.z3_members[a] for a in args]
            return self.value_json(self.program.functions[name],
                                   model.eval(self.compiler.z3_funcs[name](*z3_args), model_completion=True))

        outside = constraint_lsat.dsl_outside_cells(self.text, out, lookup)
        if outside:
            out[constraint_lsat.OUTSIDE] = outside
        return out

    @staticmethod
    def value_json(f: FunctionDecl, v: z3.ExprRef) -> object:
        return z3.is_true(v) if f.result == "bool" else v.as_long() if z3.is_int_value(v) else str(v)
