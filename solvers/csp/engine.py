"""Logic-LM's constraint language on Z3 (language ``logiclm-csp``): the registry entry ``parse``/``solve``.

The language (sections, expressions, accepted spellings, refusals) is :mod:`symbolkg.solvers.csp.syntax`.

Answer semantics (``solve``): the selected option is the one **entailed** by
the constraints, i.e. true in every solution:

* exactly one option entailed -> ``Status.PROVED``, answer = its letter, proof =
  one solution, and a ``constraint`` certificate (a minimised unsat core of the
  option's negation, a counter-model per other option:
  :mod:`symbolkg.solvers.certificates.constraint`);
* none or several entailed -> ``Status.UNKNOWN``, answer None,
  ``error_kind="no_answer"``; the message says which options are entailed,
  possible, or impossible and shows two solutions that differ;
* constraints unsatisfiable -> ``Status.UNSAT``, answer None,
  ``error_kind="inconsistent"``; the message names a small set of conflicting
  constraint lines (Z3 unsat core), and ``error_line`` is the first of them.

Logic-LM's own solver picks the first option of the form ``var == value``
whose variable has that single value in every solution; for options of that
form, and mutually exclusive options, the two rules agree.

Example:
    >>> from symbolkg.solvers.outcomes import Limits
    >>> program = '''Variables:
    ... a [IN] [1, 2, 3]
    ... b [IN] [1, 2, 3]
    ... Constraints:
    ... a > b
    ... b > 1
    ... Query:
    ... A) a == 3
    ... B) a == 2'''
    >>> solve(program, Limits(timeout_s=5)).answer
    'A'
"""

from __future__ import annotations

import dataclasses
import json
import time

import z3

from symbolkg.solvers.certificates import constraint as cc
from symbolkg.solvers.csp.syntax import (
    AllDifferent,
    Arith,
    BoolLit,
    BoolOp,
    Call,
    Compare,
    CspProgram,
    Expr,
    IntLit,
    Member,
    Neg,
    Not,
    Option,
    StrLit,
    Type,
    Variable,
    VarRef,
    parse,
)
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch
from symbolkg.solvers.smt.z3_watchdog import CHECK_RLIMIT, Z3Watchdog, out_of_budget

__all__ = ["BACKEND", "parse", "solve"]

BACKEND = "z3"


# --------------------------------------------------------------------------- Z3 encoding


class _Encoder:
    """Builds Z3 terms for one program in one context.

    Strings become integers by their rank among all strings of the program, so
    that ``<`` on them is Python's lexicographic order.
    """

    def __init__(self, program: CspProgram, ctx: z3.Context) -> None:
        self.program = program
        self.ctx = ctx
        self.types = {v.name: v.type for v in program.variables}
        strings: set[str] = set()
        for v in program.variables:
            if v.type is Type.STR:
                strings.update(v.domain)  # type: ignore[arg-type]
        for item in [*program.constraints, *program.options]:
            strings.update(_string_literals(item.expr))
        self.rank = {s: i for i, s in enumerate(sorted(strings))}
        self.vars = {v.name: z3.Int(v.name, ctx) for v in program.variables}

    def domain(self, variable: Variable) -> z3.BoolRef:
        x = self.vars[variable.name]
        if isinstance(variable.domain, range):
            span = variable.domain
            bounds = z3.And(x >= span[0], x <= span[-1])
            return bounds if span.step == 1 else z3.And(bounds, (x - span[0]) % span.step == 0)
        values = [self.rank[v] if isinstance(v, str) else v for v in variable.domain]
        lo, hi = min(values), max(values)
        if len(values) == hi - lo + 1:  # contiguous: two bounds instead of a disjunction
            return z3.And(x >= lo, x <= hi)
        return z3.Or([x == value for value in values])

    def value_name(self, variable: Variable, value: int) -> str:
        if variable.type is Type.STR:
            inverse = {i: s for s, i in self.rank.items()}
            return repr(inverse.get(value, value))
        return str(value)

    def is_bool(self, expr: Expr) -> bool:
        return isinstance(expr, (BoolLit, Compare, Member, BoolOp, Not, AllDifferent))

    def number(self, expr: Expr) -> z3.ArithRef:
        """An expression as an integer term (a condition counts as 1 or 0, as in Python)."""
        term = self.term(expr)
        if self.is_bool(expr):
            return z3.If(term, z3.IntVal(1, self.ctx), z3.IntVal(0, self.ctx))
        return term

    def term(self, expr: Expr) -> z3.ExprRef:
        ctx = self.ctx
        if isinstance(expr, IntLit):
            return z3.IntVal(expr.value, ctx)
        if isinstance(expr, StrLit):
            return z3.IntVal(self.rank[expr.value], ctx)
        if isinstance(expr, BoolLit):
            return z3.BoolVal(expr.value, ctx)
        if isinstance(expr, VarRef):
            return self.vars[expr.name]
        if isinstance(expr, Neg):
            return -self.number(expr.operand)
        if isinstance(expr, Arith):
            left, right = self.number(expr.left), self.number(expr.right)
            # For a positive divisor Z3's div/mod agree with Python's floor // and %.
            return {
                "+": lambda: left + right,
                "-": lambda: left - right,
                "*": lambda: left * right,
                "//": lambda: left / right,
                "%": lambda: left % right,
            }[expr.op]()
        if isinstance(expr, Call):
            args = [self.number(a) for a in expr.args]
            if expr.func == "abs":
                return z3.If(args[0] >= 0, args[0], -args[0])
            result = args[0]
            for arg in args[1:]:
                result = z3.If(arg < result, arg, result) if expr.func == "min" else z3.If(arg > result, arg, result)
            return result
        if isinstance(expr, Compare):
            pairs = []
            for op, a, b in zip(expr.ops, expr.operands, expr.operands[1:], strict=False):
                pairs.append(_compare(op, self.number(a), self.number(b)))
            return pairs[0] if len(pairs) == 1 else z3.And(pairs)
        if isinstance(expr, Member):
            element = self.number(expr.element)
            member = z3.Or([element == self.number(c) for c in expr.choices])
            return z3.Not(member) if expr.negated else member
        if isinstance(expr, BoolOp):
            operands = [self.term(o) for o in expr.operands]
            return z3.And(operands) if expr.op == "and" else z3.Or(operands)
        if isinstance(expr, Not):
            return z3.Not(self.term(expr.operand))
        if isinstance(expr, AllDifferent):
            operands = [self.number(o) for o in expr.operands]
            return z3.Distinct(operands) if len(operands) > 1 else z3.BoolVal(True, ctx)
        raise TypeError(f"not an expression: {expr!r}")


def _compare(op: str, a: z3.ArithRef, b: z3.ArithRef) -> z3.BoolRef:
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


def _string_literals(expr: Expr) -> set[str]:
    if isinstance(expr, StrLit):
        return {expr.value}
    found: set[str] = set()
    for value in vars(expr).values():
        children = value if isinstance(value, tuple) else (value,)
        for child in children:
            if not isinstance(child, (str, int, bool)):
                found |= _string_literals(child)
    return found


# --------------------------------------------------------------------------- solving


class _Stop(Exception):
    """Ends a solve early with the outcome to return (time limit, memory, solver failure)."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.error_message)
        self.outcome = outcome


class _Session:
    """One solver over the program's constraints, checked option by option.

    The domains are asserted; each constraint line ``c`` as ``guard_c -> c``, and every check assumes
    the guards it needs (all of them, but for the certificate's deletion checks). So the unsat core of
    an option's check is a set of constraint lines, and the certificate minimises it in the same solver.
    """

    def __init__(self, program: CspProgram, ctx: z3.Context, dog: Z3Watchdog, deadline: float) -> None:
        self.program = program
        self.encoder = _Encoder(program, ctx)
        self.dog = dog
        self.deadline = deadline
        self.solver = z3.Solver(ctx=ctx)
        self.solver.set("core.minimize", True)
        self.guards: dict[int, z3.BoolRef] = {}  # constraint line -> its guard
        self.line_of: dict[int, int] = {}  # AST id of a guard -> its constraint line
        self.model_: z3.ModelRef | None = None  # model of the last sat check
        self.core_: list[int] = []  # constraint lines of the last unsat check's core
        self.cores: dict[str, list[int]] = {}  # option letter -> core of its negation (when entailed)
        self.option_terms = {o.letter: self.encoder.term(o.expr) for o in program.options}
        self._values: dict[z3.ModelRef, list[int]] = {}  # a model -> its variable values
        for variable in program.variables:
            self.solver.add(self.encoder.domain(variable))
        for constraint in program.constraints:
            guard = z3.Bool(f"line_{constraint.line}", ctx)
            self.guards[constraint.line] = guard
            self.line_of[guard.get_id()] = constraint.line
            self.solver.add(z3.Implies(guard, self.encoder.term(constraint.expr)))

    def check(
        self, extra: z3.BoolRef | None = None, lines: list[int] | None = None, *, model: bool = True, core: bool = False
    ) -> z3.CheckSatResult:
        """Check the domains, the guarded ``lines`` (default: all) and ``extra``; keeps the model when
        ``model``, and the unsat core when ``core`` (Z3 minimises it, which costs checks of its own)."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise _Stop(_timeout_outcome())
        self.solver.set("rlimit", CHECK_RLIMIT)
        self.solver.set("timeout", max(1, int(remaining * 1000)))
        guards = list(self.guards.values()) if lines is None else [self.guards[line] for line in lines]
        try:
            with self.dog.guard(self.deadline):
                if extra is None:
                    result = self._check(guards, model, core)
                else:
                    self.solver.push()
                    try:
                        self.solver.add(extra)
                        result = self._check(guards, model, core)
                    finally:
                        self.solver.pop()
        except z3.Z3Exception as exc:
            message = str(exc)
            if "memory" in message.lower():
                raise _Stop(
                    Outcome.error(Status.MEMORY, ErrorKind.MEMORY, "out of memory in Z3", backend=BACKEND)
                ) from None
            raise _Stop(
                Outcome.error(Status.RUNTIME_ERROR, ErrorKind.SOLVER, f"Z3 failed: {message}", backend=BACKEND)
            ) from None
        if result == z3.unknown:
            self._unknown()
        return result

    def _check(self, guards: list[z3.BoolRef], model: bool, core: bool) -> z3.CheckSatResult:
        result = self.solver.check(*guards)
        self.model_ = self.solver.model() if model and result == z3.sat else None
        self.core_ = (
            sorted(self.line_of[t.get_id()] for t in self.solver.unsat_core()) if core and result == z3.unsat else []
        )
        return result

    def _unknown(self) -> None:
        reason = self.solver.reason_unknown()
        if "memory" in reason or "memout" in reason:
            raise _Stop(Outcome.error(Status.MEMORY, ErrorKind.MEMORY, "out of memory in Z3", backend=BACKEND))
        if out_of_budget(reason) or "timeout" in reason or "canceled" in reason or time.monotonic() >= self.deadline:
            raise _Stop(_timeout_outcome())
        raise _Stop(
            Outcome.error(
                Status.UNKNOWN,
                ErrorKind.SOLVER,
                f"Z3 could not decide the constraints (reason: {reason}); avoid multiplying two variables",
                backend=BACKEND,
            )
        )

    def values(self, model: z3.ModelRef) -> list[int]:
        """The model's value of every variable, in declaration order (once per model)."""
        found = self._values.get(model)
        if found is None:
            found = self._values[model] = [
                model.eval(self.encoder.vars[v.name], model_completion=True).as_long() for v in self.program.variables
            ]
        return found

    def model_text(self, model: z3.ModelRef) -> str:
        return ", ".join(
            f"{v.name}={self.encoder.value_name(v, value)}"
            for v, value in zip(self.program.variables, self.values(model), strict=True)
        )

    def holds(self, model: z3.ModelRef, option: Option) -> bool:
        return z3.is_true(model.eval(self.option_terms[option.letter], model_completion=True))

    def run(self) -> Outcome:
        if self.check(core=True) == z3.unsat:
            return self.contradiction()
        base = self.model_
        if base is None:  # sat always comes with a model; guard against a Z3 surprise
            raise _Stop(Outcome.error(Status.RUNTIME_ERROR, ErrorKind.SOLVER, "Z3 gave no model", backend=BACKEND))
        entailed: list[Option] = []
        counter_models: dict[str, z3.ModelRef] = {}
        for option in self.program.options:
            if not self.holds(base, option):
                counter_models[option.letter] = base
                continue
            # True in one solution; entailed iff no solution makes it false.
            if self.check(z3.Not(self.option_terms[option.letter]), core=True) == z3.unsat:
                entailed.append(option)
                self.cores[option.letter] = self.core_
            elif self.model_ is not None:
                counter_models[option.letter] = self.model_
        if len(entailed) == 1:
            return self.answer(entailed[0], base, counter_models)
        return self.no_unique_answer(entailed, base, counter_models)

    def answer(self, option: Option, model: z3.ModelRef, counter_models: dict[str, z3.ModelRef]) -> Outcome:
        block = z3.Or([var != model.eval(var, model_completion=True) for var in self.encoder.vars.values()])
        unique = self.check(block, model=False) == z3.unsat
        proof = (
            f"option {option.letter} ({option.text}) holds in every solution: the constraints together with "
            f"its negation are unsatisfiable.\n"
            f"{'the only solution' if unique else 'one solution (there are several)'}: {self.model_text(model)}"
        )
        return Outcome(
            status=Status.PROVED,
            answer=option.letter,
            proof=proof,
            backend=BACKEND,
            certificate=self.certificate(option, model, counter_models),
        )

    def model_json(self, model: z3.ModelRef) -> dict[str, int | str]:
        inverse = {i: s for s, i in self.encoder.rank.items()}
        return {
            v.name: inverse[value] if v.type is Type.STR else value
            for v, value in zip(self.program.variables, self.values(model), strict=True)
        }

    def certificate(self, chosen: Option, model: z3.ModelRef, counter_models: dict[str, z3.ModelRef]) -> dict | None:
        """The ``constraint`` certificate (:mod:`symbolkg.solvers.certificates.constraint`) of ``chosen``.

        The chosen option's negation gets the core of its entailment check, minimised by deletion in the
        same solver; every other option a counter-model (a model the checks found). None when Z3 cannot
        finish in time (the answer stands; the row is then unverifiable).
        """
        try:
            core = self.minimal_core(z3.Not(self.option_terms[chosen.letter]), self.cores[chosen.letter])
        except _Stop:
            return None
        options = []
        for option in self.program.options:
            if option is chosen:
                fact = {"query": "negation", "sat": False, "core": core, "minimal": True}
            else:
                fact = {"query": "negation", "sat": True, "model": self.model_json(counter_models[option.letter])}
            options.append(
                {
                    "letter": option.letter,
                    "line": option.line,
                    "text": option.text,
                    "check": "entailed",
                    "passes": option is chosen,
                    "facts": [fact],
                }
            )
        cert = {
            "kind": "constraint",
            "version": cc.VERSION,
            "producer": BACKEND,
            "language": "logiclm-csp",
            "answer": chosen.letter,
            "constraints": [{"id": c.line, "text": c.text} for c in self.program.constraints],
            "model": self.model_json(model),
            "options": options,
        }
        return cert if len(json.dumps(cert)) <= cc.MAX_CERTIFICATE_CHARS else None

    def minimal_core(self, query: z3.BoolRef, core: list[int]) -> list[int]:
        """``core`` (constraint lines that with ``query`` are unsatisfiable, from Z3) minimised by deletion.

        Every line kept is shown needed by a check of ``query`` with the other kept lines (satisfiable);
        a line whose removal leaves them unsatisfiable is dropped.
        """

        def unsat(lines: list[int]) -> bool:
            return self.check(None, lines, model=False) == z3.unsat

        self.solver.push()
        try:
            self.solver.add(query)
            return cc.minimise(core, unsat)
        finally:
            self.solver.pop()

    def no_unique_answer(
        self, entailed: list[Option], base: z3.ModelRef, counter_models: dict[str, z3.ModelRef]
    ) -> Outcome:
        possible: list[str] = []
        impossible: list[str] = []
        witnesses = [m for m in counter_models.values() if m is not base]
        for option in self.program.options:
            if option in entailed:
                continue
            if self.holds(base, option) or any(self.holds(m, option) for m in witnesses):
                possible.append(option.letter)
            elif self.check(self.option_terms[option.letter]) == z3.sat:
                possible.append(option.letter)
                if self.model_ is not None:
                    witnesses.append(self.model_)
            else:
                impossible.append(option.letter)
        line: int | None = None
        if entailed:
            letters = ", ".join(o.letter for o in entailed)
            message = (
                f"options {letters} all hold in every solution, so no single option is selected; the "
                "options must exclude each other - check the Query expressions and the constraints"
            )
            line = entailed[1].line
        else:
            message = "no option holds in every solution: the constraints allow more than one arrangement"
            if possible:
                message += f"; options that hold in some but not all solutions: {', '.join(possible)}"
            if impossible:
                message += f"; options that hold in no solution: {', '.join(impossible)}"
            if witnesses:
                message += (
                    f". For example both [{self.model_text(base)}] and [{self.model_text(witnesses[0])}] "
                    "satisfy every constraint"
                )
            message += ". Add the missing facts from the problem as constraints, or fix a wrong one"
        return Outcome(
            status=Status.UNKNOWN,
            error_kind=ErrorKind.NO_ANSWER.value,
            error_message=message,
            error_line=line,
            proof=f"one solution: {self.model_text(base)}",
            backend=BACKEND,
        )

    def contradiction(self) -> Outcome:
        by_line = {c.line: c for c in self.program.constraints}
        core = [by_line[line] for line in self.core_]
        if core:
            listed = "; ".join(f"line {c.line}: {c.text}" + (f" ({c.comment})" if c.comment else "") for c in core)
            message = (
                f"the constraints are contradictory (no assignment satisfies them). These conflict with each "
                f"other and the variable domains: {listed}. Fix or remove the wrong one"
            )
            line = core[0].line
        else:
            message = "the variable domains alone cannot be satisfied; check the 'Variables:' section"
            line = self.program.variables[0].line
        return Outcome(
            status=Status.UNSAT,
            error_kind=ErrorKind.INCONSISTENT.value,
            error_message=message,
            error_line=line,
            backend=BACKEND,
        )


def _timeout_outcome() -> Outcome:
    return Outcome.error(
        Status.TIMEOUT,
        ErrorKind.TIMEOUT,
        "time limit reached while solving the constraints; use smaller domains or fewer constraints",
        backend=BACKEND,
    )


def solve(text: str, limits: Limits) -> Outcome:
    """Parse a Logic-LM CSP program and select the option its constraints entail.

    Never raises for a bad program (module docstring lists the outcomes).

    Args:
        text: the program.
        limits: ``timeout_s`` bounds the whole call (all checks together).

    Returns:
        The :class:`Outcome` with ``backend="z3"`` and the call's wall time.
    """
    with Stopwatch() as sw:
        deadline = time.monotonic() + limits.timeout_s
        try:
            program = parse(text)
        except ProgramError as err:
            outcome = err.to_outcome(backend=BACKEND)
        else:
            outcome = _solve(program, deadline)
    return dataclasses.replace(outcome, seconds=sw.seconds)


def _solve(program: CspProgram, deadline: float) -> Outcome:
    ctx = z3.Context()
    try:
        with Z3Watchdog(ctx) as dog:
            return _Session(program, ctx, dog, deadline).run()
    except _Stop as stop:
        return stop.outcome
    except MemoryError:
        return Outcome.error(
            Status.MEMORY, ErrorKind.MEMORY, "out of memory (worker memory limit reached)", backend=BACKEND
        )
    except RecursionError:
        return Outcome.error(
            Status.PARSE_ERROR,
            ErrorKind.UNSUPPORTED,
            "an expression is nested too deeply; write it flatter",
            backend=BACKEND,
        )
