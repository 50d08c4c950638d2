"""Constraint certificates: option answers of ``logiclm-csp`` and ``logiclm-smt``, re-checked without Z3.

Both languages pick one answer option by satisfiability questions about the program's constraints
``C`` (Z3 answers them). The certificate records, for every such question the answer rests on, the
evidence: a **model** (the question is satisfiable) or an **unsatisfiable core** (it is not). The
checker (:func:`check`) re-reads the program with our own parser, re-evaluates every model with a
plain Python evaluator of the parsed AST, and re-proves every core unsatisfiable with its own
exhaustive backtracking search over the finite domains (no Z3 anywhere).

Fields (``version`` 1)::

    {"kind": "constraint", "version": 1, "producer": "z3",
     "language": "logiclm-csp" | "logiclm-smt",
     "answer": "C",
     "constraints": [{"id": 7, "text": "blue_book > green_book"}, ...],   # EVERY constraint of the program
     "model": {...},                    # a model of all constraints that agrees with the chosen option
     "options": [{"letter": "A", "line": 14, "text": "...", "check": "entailed" | "is_sat" | ...,
                  "passes": false,
                  "facts": [{"query": "negation", "sat": true, "model": {...}},
                            {"query": "option", "sat": false, "core": [7, 9], "minimal": true}]}, ...]}

* ``constraints``: constraint ids are the 1-based program lines, with the text as written (CSP: the
  line before ``:::``; DSL: the line without its ``:::`` and ``#`` comments). The list must be exactly
  the program's constraints (the checker compares both ways).
* ``model``: CSP: ``{variable: value}`` (int or string). DSL: ``{function: [value, ...]}``, the values in
  ``itertools.product`` order of the parameters' members (declaration order; ``bool`` is
  ``[false, true]``), one value for a constant; values are ints, booleans or member names. Applications
  to arguments outside a parameter's sort (``f(b + 1)`` at the last ``b``: Z3 gives them a value of the
  carrier sort, unrestricted by the declaration) that the formulas read are listed under ``"@outside"``
  as ``[function, [args], value]``. DSL certificates also carry ``signatures`` (each function's parameter
  member lists) for :func:`explain_lines` only; the checker takes the sorts from the program.
* A fact is the answer to one *query* ``C and q``: ``option`` (q = the option's formula e),
  ``negation`` (not e), ``item`` with ``index`` i (the i-th formula of ``is_accurate_list``), ``none``
  (not Or(items)). ``sat: true`` comes with a ``model`` of ``C and q``; ``sat: false`` with a ``core``:
  constraint ids such that ``core and bounds and q`` has no solution; ``minimal: true`` claims that
  dropping any one id of ``core`` makes it satisfiable (``false``: the producer did not minimise; the
  checker then skips minimality and says so). ``bounds`` (DSL programs with integer-valued functions
  only) lists the lines that bound those integers (``1 <= f(p) <= 6``, ``f(a) == 2``, ...): the checker's
  finite search needs them, so they are cited beside the core and kept when minimality is checked.

Per question type (what a passing / failing option needs; the checker derives each option's verdict
from its facts and rejects the certificate when a needed fact is missing):

* CSP (``check: "entailed"``): an option passes iff it holds in every solution: ``negation`` unsat
  (a core) passes, ``negation`` sat (a counter-model) fails.
* DSL ``is_sat(e)``: ``option`` sat passes (model), unsat fails (core). ``is_unsat(e)``: the reverse.
* DSL ``is_valid(e)`` ("must be true"): ``negation`` unsat passes (core), sat fails (counter-model).
* DSL ``is_accurate_list([e1..en])``: passes iff ``none`` is unsat and every ``item`` is sat; one
  failing fact suffices to fail it.
* DSL ``is_exception(check)``: the inner check's facts, verdict negated ("... EXCEPT" questions).

The answer is the only passing option. The top-level ``model`` shows the constraints consistent (so
no verdict holds vacuously); it must satisfy the chosen option's formula (``Or`` of the items for a
list) when the check's polarity is positive (entailed, is_sat, is_valid, is_accurate_list) and its
negation when negative (is_unsat; ``is_exception`` flips the polarity).

The checker's search (:class:`_Search`) is a backtracking search over the cells (CSP variables; DSL
function applications to members) that a cited formula reads, with three-valued evaluation (booleans,
integer intervals, sets of names) for pruning; it is complete over finite domains. Integer-valued DSL
functions without a declared range get their domain from bounds stated in the cited constraints
themselves (top-level ``lo <= f(a) <= hi``, ``f(a) == k``, ``f(a) in [..]``, also under ``ForAll`` /
``And``); a core whose search reads an integer cell without such a bound is ``unverifiable``. When
dropping one constraint leaves a cell unbounded, the full core's bounds serve as a window: a model
found there shows the constraint needed; none found leaves minimality open, which the verdict reason
reports (``minimality open for N of M cores``) without failing. Programs with quantifiers or function
parameters over ``int`` and ``%`` by zero are ``unverifiable`` (the evaluator cannot tabulate them), as
is a search past ``limits.timeout_s`` (all searches of one certificate share it).

Producers keep certificates under :data:`MAX_CERTIFICATE_CHARS` (measured: at most 2.9 KB on the GPT-4
LogicalDeduction and AR-LSAT programs) and attach none when Z3 cannot finish them in the call's time.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from symbolkg.solvers.certificates import Verdict
from symbolkg.solvers.outcomes import CertificateError, Limits, ProgramError

VERSION = 1
CHECKER = "python-search"
#: the question words of facts
QUERIES = ("option", "negation", "item", "none")
_POSITIVE = {"entailed": True, "is_sat": True, "is_valid": True, "is_accurate_list": True, "is_unsat": False}
#: The model key of applications to arguments outside the parameter sorts (``f(b + 1)`` at the last ``b``):
#: ``[[function, [args], value], ...]``. The declaration restricts only member arguments; Z3 gives the others
#: values of the carrier sort, which the evaluator then reads.
OUTSIDE = "@outside"
#: Certificates above this many characters are a producer defect (they go into every Parquet row).
MAX_CERTIFICATE_CHARS = 20_000


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


class _OutOfTime(Exception):
    pass


def _iv(x: Any) -> Iv:
    if isinstance(x, Iv):
        return x
    if x is None:  # an unknown condition counted as 0 or 1
        return Iv(0, 1)
    return Iv(int(x), int(x))


def _exact(lo: float, hi: float) -> Any:
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
        return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if op == "//" else 0,
                "%": a % b if op == "%" else 0}[op]
    x, y = _iv(a), _iv(b)
    if op == "+":
        return _exact(x.lo + y.lo, x.hi + y.hi)
    if op == "-":
        return _exact(x.lo - y.hi, x.hi - y.lo)
    if op == "*":
        products = [_mul(p, q) for p in (x.lo, x.hi) for q in (y.lo, y.hi)]
        return _exact(min(products), max(products))
    if op == "//" and y.lo == y.hi and y.lo > 0:
        d = int(y.lo)
        return _exact(x.lo // d if math.isfinite(x.lo) else -INF, x.hi // d if math.isfinite(x.hi) else INF)
    if op == "%" and y.lo == y.hi and y.lo > 0:
        return Iv(0, int(y.lo) - 1)
    return TOP


def neg(a: Any) -> Any:
    if isinstance(a, Iv) or a is None:
        x = _iv(a)
        return _exact(-x.hi, -x.lo)
    return -int(a)


def absolute(a: Any) -> Any:
    if isinstance(a, Iv) or a is None:
        x = _iv(a)
        if x.lo >= 0:
            return x
        if x.hi <= 0:
            return _exact(-x.hi, -x.lo)
        return Iv(0, max(-x.lo, x.hi))
    return abs(int(a))


def minmax(func: str, values: Sequence[Any]) -> Any:
    if all(not isinstance(v, Iv) and v is not None for v in values):
        return (min if func == "min" else max)(int(v) for v in values)
    ivs = [_iv(v) for v in values]
    pick = min if func == "min" else max
    return _exact(pick(i.lo for i in ivs), pick(i.hi for i in ivs))


def total(values: Iterable[Any]) -> Any:
    lo = hi = 0
    for v in values:
        x = _iv(v)
        lo, hi = lo + x.lo, hi + x.hi
    return _exact(lo, hi)


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
    if (a is None or isinstance(a, bool)) and (b is None or isinstance(b, bool)) and op in ("==", "!=") \
            and (a is None or b is None):
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
    return _exact(min(x.lo, y.lo), max(x.hi, y.hi))


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
    """A satisfiability question for :class:`_Search`.

    Attributes:
        formulas: each a function ``(assignment, blockers) -> bool | None``; unknown (None) only when
            it read an unassigned cell, which it appends to ``blockers``.
        domains: the values of each cell the formulas may read (``None``: unbounded).
    """

    formulas: list[Callable[[dict, list], Any]]
    domains: Callable[[Any], Sequence[Any] | None]


class _Search:
    """Backtracking over cells with three-valued pruning; complete over the given domains."""

    def __init__(self, problem: Problem, deadline: float) -> None:
        self.problem = problem
        self.deadline = deadline
        self.nodes = 0

    def model(self) -> dict | None:
        """A satisfying assignment of the cells read, or None when there is none."""
        assignment: dict = {}
        return dict(assignment) if self._dfs(assignment) else None

    def _dfs(self, assignment: dict) -> bool:
        self.nodes += 1
        if self.nodes % 256 == 0 and time.monotonic() > self.deadline:
            raise _OutOfTime()
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


# --------------------------------------------------------------------------- helpers shared with producers


def minimise(core: Sequence[int], unsat: Callable[[list[int]], bool]) -> list[int]:
    """Deletion-based minimisation: drop each id whose removal keeps ``unsat`` true."""
    kept = list(core)
    for cid in list(kept):
        trial = [c for c in kept if c != cid]
        if unsat(trial):
            kept = trial
    return kept


def dsl_line_text(program: str, line: int) -> str:
    """The text of DSL program ``line`` as written, without its ``:::`` and ``#`` comments."""
    lines = program.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    return lines[line - 1].split(":::", 1)[0].split("#", 1)[0].strip()


@functools.lru_cache(maxsize=4)
def _producer_reader(program: str) -> _DslReader:
    # One parse per program for the producer helpers below (each model asks again).
    return _DslReader(program)


def dsl_bounding_lines(program: str) -> list[int]:
    """The constraint lines of a DSL program that give some integer-valued function application a finite
    domain in the checker's sense (a producer cites them as a core's ``bounds``)."""
    reader = _producer_reader(program)
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


def dsl_outside_cells(program: str, model: dict[str, Any], lookup: Callable[[str, tuple], Any]) -> list[list[Any]]:
    """The ``@outside`` entries a DSL model needs: the applications outside the parameter sorts that evaluating
    every constraint and every option formula reads, each valued by ``lookup(function, args)`` (the producer's
    model). The checker's evaluation of the same model reads no others (it evaluates the same formulas)."""
    reader = _producer_reader(program)
    table = reader.decode_model(model, "the model")
    found: dict[tuple, Any] = {}

    class _Recording(_DslEval):
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


def polarity(check: str, negated: bool = False) -> bool:
    """True when a passing option of ``check`` is one whose formula holds in some model."""
    return _POSITIVE[check] != negated


# --------------------------------------------------------------------------- checking


@dataclass
class _Ctx:
    """One check's state: its deadline and what minimality checks could not settle."""

    deadline: float
    cores: int = 0
    minimality_open: int = 0
    minimality_skipped: int = 0
    open_reason: str = ""


def check(cert: dict[str, Any], *, language: str, program: str, answer: str | None, limits: Limits) -> Verdict:
    """Re-check a constraint certificate of ``program``'s ``answer`` (module docstring).

    Raises:
        CertificateError: the certificate is malformed or wrong (the verdict is ``failed``).
    """
    t0 = time.perf_counter()
    if cert.get("version") != VERSION:
        return Verdict("unverifiable", f"constraint certificate version {cert.get('version')!r} is not {VERSION}",
                       CHECKER)
    if language == "logiclm-csp":
        reader: _Reader = _CspReader(program)
    elif language == "logiclm-smt":
        reader = _DslReader(program)
    else:
        return Verdict("unverifiable", f"no constraint checker for language {language!r}", CHECKER)
    ctx = _Ctx(deadline=time.monotonic() + limits.timeout_s)
    try:
        _check(cert, reader, answer, ctx)
    except Unsupported as exc:
        return Verdict("unverifiable", f"the evaluator cannot check this program: {exc}", CHECKER)
    except Unbounded as exc:
        return Verdict("unverifiable", f"a cited core reads the integer {reader.show_cell(exc.cell)}, which no cited "
                       "constraint bounds; the finite search cannot cover it", CHECKER)
    except _OutOfTime:
        return Verdict("unverifiable", f"the independent search exceeded {limits.timeout_s:g} s", CHECKER)
    reason = ""
    if ctx.minimality_open or ctx.minimality_skipped:
        parts = []
        if ctx.minimality_open:
            parts.append(f"minimality open for {ctx.minimality_open} of {ctx.cores} cores ({ctx.open_reason})")
        if ctx.minimality_skipped:
            parts.append(f"minimality not claimed for {ctx.minimality_skipped} of {ctx.cores} cores")
        reason = "; ".join(parts)
    return Verdict("verified", reason, CHECKER, round(time.perf_counter() - t0, 6))


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise CertificateError(message)


def _check(cert: dict[str, Any], reader: _Reader, answer: str | None, ctx: _Ctx) -> None:
    _need(isinstance(cert.get("constraints"), list) and isinstance(cert.get("options"), list),
          "a constraint certificate needs the lists 'constraints' and 'options'")
    # 1. every cited constraint is in the program, line and text, and all of them are cited
    cited: dict[int, str] = {}
    for entry in cert["constraints"]:
        _need(isinstance(entry, dict) and type(entry.get("id")) is int and isinstance(entry.get("text"), str),
              f"a constraint entry must be {{'id': line, 'text': ...}}, got {entry!r}"[:200])
        cited[entry["id"]] = entry["text"]
    actual = reader.constraint_texts()
    for cid, text in cited.items():
        _need(cid in actual, f"cited constraint line {cid} is not a constraint of the program")
        _need(actual[cid] == text, f"cited constraint line {cid} reads {text!r}, the program has {actual[cid]!r}")
    missing = sorted(set(actual) - set(cited))
    _need(not missing, f"the certificate leaves out the program's constraints on lines {missing}")
    reader.check_supported()
    # 2. the top-level model satisfies every constraint and agrees with the chosen option
    chosen = cert.get("answer")
    _need(isinstance(chosen, str), "the certificate names no answer")
    _need(answer == chosen, f"the certificate is for answer {chosen!r}, the row answers {answer!r}")
    options = reader.options()
    _need(chosen in options, f"answer {chosen!r} is not an option of the program")
    model = reader.decode_model(cert.get("model"), "the top-level model")
    reader.require_model(model, None, "the top-level model")
    want = polarity(*reader.check_kind(chosen))
    formula = reader.option_formula(chosen)
    _need(reader.holds(formula, model) == want,
          f"the top-level model does not make option {chosen}'s formula {'true' if want else 'false'}")
    # 3. every option's verdict from its facts
    seen: set[str] = set()
    passing: list[str] = []
    for entry in cert["options"]:
        _need(isinstance(entry, dict) and isinstance(entry.get("letter"), str) and isinstance(entry.get("facts"), list),
              "an option entry needs 'letter' and 'facts'")
        letter = entry["letter"]
        _need(letter in options and letter not in seen, f"option {letter!r} is not in the program or is given twice")
        seen.add(letter)
        line, text = options[letter]
        _need(entry.get("line") == line and entry.get("text") == text,
              f"option {letter} is cited as line {entry.get('line')} {entry.get('text')!r}; the program has line "
              f"{line} {text!r}")
        kind, negated = reader.check_kind(letter)
        described = f"is_exception({kind})" if negated else kind
        _need(entry.get("check") == described, f"option {letter} is cited as {entry.get('check')!r}, the program "
              f"checks {described}")
        facts = _facts(entry["facts"], letter, reader, set(cited), ctx)
        verdict = _verdict(kind, reader.items(letter), facts)
        _need(verdict is not None, f"the facts of option {letter} do not decide its {described} check")
        passes = verdict != negated
        _need(entry.get("passes") is passes, f"option {letter} is claimed to {'pass' if entry.get('passes') else 'fail'}"
              f", its facts show it {'passes' if passes else 'fails'}")
        if passes:
            passing.append(letter)
    _need(seen == set(options), f"the certificate leaves out options {sorted(set(options) - seen)}")
    _need(passing == [chosen], f"the options that pass are {passing}, not exactly the answer {chosen}")


def _verdict(kind: str, items: int, facts: dict[tuple[str, int], bool]) -> bool | None:
    """The check's verdict (before ``is_exception``) from the satisfiability facts; None if undecided."""
    def sat(query: str, index: int = 0) -> bool | None:
        return facts.get((query, index))

    if kind in ("entailed", "is_valid"):
        return negate(sat("negation"))
    if kind == "is_sat":
        return sat("option")
    if kind == "is_unsat":
        return negate(sat("option"))
    # is_accurate_list
    return conj([negate(sat("none"))] + [sat("item", i) for i in range(items)])


def _facts(entries: list[Any], letter: str, reader: _Reader, ids: set[int], ctx: _Ctx) -> dict[tuple[str, int], bool]:
    found: dict[tuple[str, int], bool] = {}
    for fact in entries:
        _need(isinstance(fact, dict) and fact.get("query") in QUERIES and isinstance(fact.get("sat"), bool),
              f"a fact of option {letter} needs 'query' (one of {QUERIES}) and 'sat'")
        query, index = fact["query"], fact.get("index", 0)
        _need(type(index) is int, f"option {letter}: a fact's index must be an integer")
        q = reader.query_formula(letter, query, index)
        what = f"option {letter}'s {query}" + (f" {index}" if query == "item" else "")
        if fact["sat"]:
            model = reader.decode_model(fact.get("model"), f"the model of {what}")
            reader.require_model(model, q, f"the model of {what}")
        else:
            core, bounds = fact.get("core"), fact.get("bounds", [])
            for name, listed in (("core", core), ("bounds", bounds)):
                _need(isinstance(listed, list) and all(type(c) is int for c in listed),
                      f"the {name} of {what} must list constraint ids")
                _need(set(listed) <= ids,
                      f"the {name} of {what} cites lines {sorted(set(listed) - ids)} that are not constraints")
            _check_core(reader, sorted(set(core)), sorted(set(bounds) - set(core)), q, what,
                        fact.get("minimal") is not False, ctx)
        found[(query, index)] = fact["sat"]
    return found


def _check_core(reader: _Reader, core: list[int], bounds: list[int], query: Any, what: str, minimal: bool,
                ctx: _Ctx) -> None:
    """``core + bounds`` with ``query`` has no solution; by default, no line of ``core`` can be dropped."""
    ctx.cores += 1
    witness = reader.search(core + bounds, query, ctx.deadline)
    cited = core + [f"{b} (bound)" for b in bounds]  # type: ignore[list-item]
    _need(witness is None, f"the core {cited} of {what} is satisfiable: {reader.show_assignment(witness)}")
    if not minimal:
        ctx.minimality_skipped += 1
        return
    still_open = False
    for cid in core:
        rest = [c for c in core if c != cid] + bounds
        try:
            witness = reader.search(rest, query, ctx.deadline)
        except Unbounded as exc:
            try:  # a model within the full core's bounds still shows the dropped line needed
                witness = reader.search(rest, query, ctx.deadline, window=core + bounds)
            except Unbounded:
                witness = None
            if witness is None:
                still_open = True
                ctx.open_reason = f"dropping a bound leaves {reader.show_cell(exc.cell)} unbounded"
                continue
        _need(witness is not None, f"the core {cited} of {what} is not minimal: it stays unsatisfiable without "
              f"line {cid}")
    ctx.minimality_open += still_open


# --------------------------------------------------------------------------- language readers


class _Reader:
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

    def search(self, core: list[int], query: Any, deadline: float, window: list[int] | None = None) -> dict | None:
        raise NotImplementedError

    def show_cell(self, cell: Any) -> str:
        raise NotImplementedError

    def show_assignment(self, assignment: dict | None) -> str:
        raise NotImplementedError


def _reparse(parse: Callable[[str], Any], program: str) -> Any:
    try:
        return parse(program)
    except ProgramError as err:
        raise CertificateError(f"the program does not parse: {err}") from None


# ---- CSP


class _CspReader(_Reader):
    def __init__(self, text: str) -> None:
        from symbolkg.solvers.csp import language as csp

        self.csp = csp
        self.program = _reparse(csp.parse, text)
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
        _need(query == "negation", f"option {letter}: a CSP option is decided by its 'negation' query, not {query!r}")
        return self.csp.Not(self.by_letter[letter].expr)

    def decode_model(self, raw: Any, what: str) -> dict:
        _need(isinstance(raw, dict), f"{what} must be an object of variable values")
        _need(set(raw) == set(self.vars), f"{what} must give exactly the variables {sorted(self.vars)}")
        for name, value in raw.items():
            var = self.vars[name]
            ok = (type(value) is str) if var.type is self.csp.Type.STR else (type(value) is int)
            _need(ok and value in var.domain, f"{what} gives {name} = {value!r}, outside its domain")
        return dict(raw)

    def _eval(self, expr: Any, a: dict, blockers: list | None) -> Any:
        return _CspEval(self, a, blockers).value(expr)

    def holds(self, formula: Any, model: dict) -> bool:
        value = self._eval(formula, model, None)
        if value is None:
            raise Unsupported("a formula stayed undecided under a complete model")
        return bool(value)

    def require_model(self, model: dict, query: Any, what: str) -> None:
        for c in self.program.constraints:
            _need(self.holds(c.expr, model), f"{what} breaks constraint line {c.line}: {c.text}")
        if query is not None:
            _need(self.holds(query, model), f"{what} does not satisfy the query it answers")

    def search(self, core: list[int], query: Any, deadline: float, window: list[int] | None = None) -> dict | None:
        exprs = [self.by_line[c].expr for c in core] + [query]
        formulas = [lambda a, b, e=e: _CspEval(self, a, b).value(e) for e in exprs]

        def domain(name: str) -> Sequence[Any]:
            return self.vars[name].domain

        return _Search(Problem(formulas, domain), deadline).model()

    def show_cell(self, cell: Any) -> str:
        return str(cell)

    def show_assignment(self, assignment: dict | None) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in sorted((assignment or {}).items()))


class _CspEval:
    def __init__(self, reader: _CspReader, assignment: dict, blockers: list | None) -> None:
        self.r, self.a, self.blockers = reader, assignment, blockers

    def number(self, expr: Any) -> Any:
        v = self.value(expr)
        if isinstance(v, bool):
            return int(v)
        if v is None:
            return Iv(0, 1)
        return v

    def value(self, e: Any) -> Any:
        csp = self.r.csp
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
        for op, a, b in zip(e.ops, e.operands, e.operands[1:]):
            yield compare(op, self.number(a), self.number(b))


# ---- the AR-LSAT DSL


class _DslReader(_Reader):
    def __init__(self, text: str) -> None:
        from symbolkg.solvers.smt import lsat

        self.lsat = lsat
        self.text = text
        self.program = _reparse(lsat.parse, text)
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
        return exprs[0] if len(exprs) == 1 else self.lsat.Op("bool", "or", tuple(exprs))

    def query_formula(self, letter: str, query: str, index: int) -> Any:
        lsat = self.lsat
        check = self._check(letter)
        allowed = {"is_sat": ("option",), "is_unsat": ("option",), "is_valid": ("negation",),
                   "is_accurate_list": ("none", "item")}[check.kind]
        _need(query in allowed, f"option {letter}: a {check.kind} check is decided by {allowed}, not {query!r}")
        if query == "option":
            return check.exprs[0]
        if query == "negation":
            return lsat.Op("bool", "not", (check.exprs[0],))
        if query == "none":
            return lsat.Op("bool", "not", (lsat.Op("bool", "or", tuple(check.exprs)),))
        _need(0 <= index < len(check.exprs), f"option {letter}: item {index} is not in its list")
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
        return all(self.inside(a, p) for a, p in zip(cell[1], self.program.functions[cell[0]].params))

    def cells(self, func: str) -> list[tuple[Any, ...]]:
        return list(itertools.product(*[self.members(p) for p in self.program.functions[func].params]))

    def decode_model(self, raw: Any, what: str) -> dict:
        _need(isinstance(raw, dict), f"{what} must be an object of function tables")
        raw = dict(raw)
        outside = raw.pop(OUTSIDE, [])
        _need(set(raw) == set(self.program.functions),
              f"{what} must give exactly the functions {sorted(self.program.functions)}")
        model: dict = {}
        _need(isinstance(outside, list), f"{what}: {OUTSIDE} must be a list of [function, [args], value]")
        for entry in outside:
            _need(isinstance(entry, list) and len(entry) == 3 and entry[0] in self.program.functions
                  and isinstance(entry[1], list), f"{what}: {OUTSIDE} entry {entry!r} is not [function, [args], value]")
            name, args = entry[0], tuple(entry[1])
            params = self.program.functions[name].params
            _need(len(args) == len(params) and not self.is_inside((name, args)),
                  f"{what}: {OUTSIDE} entry {entry!r} is not an application outside the parameter sorts")
            domain = self.cell_domain(name, False)
            value = entry[2]
            ok = type(value) is bool if self.program.functions[name].result == "bool" else (
                type(value) is int if domain is None else type(value) in (int, str) and value in domain)
            _need(ok, f"{what} gives {self.show_cell((name, args))} = {value!r}, not a value of its sort")
            model[(name, args)] = value
        for name, values in raw.items():
            cells = self.cells(name)
            _need(isinstance(values, list) and len(values) == len(cells),
                  f"{what}: {name} needs a list of {len(cells)} values")
            domain = self.result_domain(name)
            result = self.program.functions[name].result
            for args, value in zip(cells, values):
                if result == "bool":
                    ok = type(value) is bool
                elif domain is None:
                    ok = type(value) is int
                else:
                    ok = type(value) in (int, str) and value in domain
                _need(ok, f"{what} gives {self.show_cell((name, args))} = {value!r}, not a value of sort {result}")
                model[(name, args)] = value
        return model

    def holds(self, formula: Any, model: dict) -> bool:
        value = _DslEval(self, model, None).value(formula, {})
        if value is None:
            raise Unsupported("a formula stayed undecided under a complete model")
        return bool(value)

    def require_model(self, model: dict, query: Any, what: str) -> None:
        for c in self.program.constraints:
            _need(self.holds(c.expr, model),
                  f"{what} breaks constraint line {c.line}: {dsl_line_text(self.text, c.line)}")
        if query is not None:
            _need(self.holds(query, model), f"{what} does not satisfy the query it answers")

    def search(self, core: list[int], query: Any, deadline: float, window: list[int] | None = None) -> dict | None:
        exprs = [self.by_line[c].expr for c in core] + [query]
        bounds = self.bounds(exprs)
        fallback = self.bounds([self.by_line[c].expr for c in window] + [query]) if window is not None else {}

        def domain(cell: tuple[str, tuple]) -> Sequence[Any] | None:
            fixed = self.cell_domain(cell[0], self.is_inside(cell))
            if fixed is not None:
                return fixed
            return bounds[cell] if cell in bounds else fallback.get(cell)  # [] (no value) is a domain too

        formulas = [lambda a, b, e=e: _DslEval(self, a, b, domain).value(e, {}) for e in exprs]
        return _Search(Problem(formulas, domain), deadline).model()

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
        lsat = self.lsat
        stack = [(e, {}) for e in exprs]
        while stack:
            e, env = stack.pop()
            if isinstance(e, lsat.Op) and e.op == "and":
                stack.extend((a, env) for a in e.args)
            elif isinstance(e, lsat.Scoped) and e.kind == "forall" and all(b.sort != "int" for b in e.binders):
                for combo in itertools.product(*[self.members(b.sort) for b in e.binders]):
                    inner = dict(env)
                    inner.update(zip((b.name for b in e.binders), combo))
                    stack.append((e.body, inner))
            else:
                yield e, env

    def _ground_cell(self, e: Any, env: dict) -> tuple | None:
        lsat = self.lsat
        if not isinstance(e, lsat.Apply) or self.program.functions[e.func].result != "int":
            return None
        try:
            args = tuple(_DslEval(self, {}, None).value(a, env) for a in e.args)
        except CertificateError:  # an argument reads a cell: not a fixed cell
            return None
        return (e.func, args)

    def _constant(self, e: Any, env: dict) -> int | None:
        try:
            v = _DslEval(self, {}, None).value(e, env)
        except CertificateError:
            return None
        return v if type(v) is int else None

    def _bound(self, e: Any, env: dict, lo: dict, hi: dict, sets: dict) -> None:
        lsat = self.lsat
        if not isinstance(e, lsat.Op):
            return
        if e.op == "or":
            cells = set()
            values = set()
            for a in e.args:
                if not (isinstance(a, lsat.Op) and a.op == "eq"):
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


class _DslEval:
    """Three-valued evaluation of the DSL's typed IR (``blockers is None``: a complete model)."""

    def __init__(self, reader: _DslReader, assignment: dict, blockers: list | None,
                 domains: Callable[[Any], Sequence[Any] | None] | None = None) -> None:
        self.r, self.a, self.blockers, self.domains = reader, assignment, blockers, domains

    def value(self, e: Any, env: dict) -> Any:
        lsat = self.r.lsat
        if isinstance(e, lsat.Lit):
            return e.value
        if isinstance(e, lsat.MemberRef):
            return e.name
        if isinstance(e, lsat.VarRef):
            return env[e.name]
        if isinstance(e, lsat.Apply):
            return self._apply(e, env)
        if isinstance(e, lsat.Scoped):
            return self._scoped(e, env)
        if not isinstance(e, lsat.Op):
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
            return ite(self.value(e.args[0], env), lambda: self.value(e.args[1], env),
                       lambda: self.value(e.args[2], env))
        if op in ("eq", "ne", "lt", "le", "gt", "ge"):
            sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
            return compare(sym, self.value(e.args[0], env), self.value(e.args[1], env))
        if op in ("add", "sub", "mul"):
            return arith({"add": "+", "sub": "-", "mul": "*"}[op], self.value(e.args[0], env),
                         self.value(e.args[1], env))
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
            return _exact(min(places), max(places))
        raise Unsupported(f"unknown operation {op!r}")

    def read(self, cell: tuple) -> Any:
        """The assigned value of ``cell``, or :data:`_MISSING`."""
        return self.a.get(cell, _MISSING)

    def _apply(self, e: Any, env: dict) -> Any:
        args = tuple(self.value(a, env) for a in e.args)
        params = self.r.program.functions[e.func].params
        inside = all(self.r.inside(a, sort) for a, sort in zip(args, params))
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
            inner.update(zip((b.name for b in e.binders), combo))
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


# --------------------------------------------------------------------------- explain


def explain_lines(cert: dict[str, Any]) -> list[str]:
    """The certificate, readably: the chosen option with its model, each other option with its evidence.

    Every constraint the certificate cites (a core or its bounds) is listed by line and text under the
    option it decides, and no other constraint is.
    """
    texts = {c["id"]: c["text"] for c in cert.get("constraints", [])}
    signatures = cert.get("signatures")
    head = (f"answer {cert.get('answer')} ({cert.get('language')}, {cert.get('producer')}): "
            f"{len(texts)} constraints, {len(cert.get('options', []))} options")
    lines = [head]
    lines.append(f"  a solution of all constraints: {_show_model(cert.get('model'), signatures)}")
    for option in cert.get("options", []):
        lines.append(f"option {option.get('letter')} (line {option.get('line')}: {option.get('text')}) "
                     f"[{option.get('check')}] {'PASSES' if option.get('passes') else 'fails'}")
        for fact in option.get("facts", []):
            query = _QUERY_WORDS.get(fact.get("query"), str(fact.get("query")))
            if fact.get("query") == "item":
                query += f" {fact.get('index')}"
            if fact.get("sat"):
                lines.append(f"  {query} is possible, e.g. {_show_model(fact.get('model'), signatures)}")
                continue
            lines.append(f"  {query} is impossible given these constraints together:")
            for cid in fact.get("core", []):
                lines.append(f"    line {cid}: {texts.get(cid, '?')}")
            for cid in fact.get("bounds", []):
                lines.append(f"    line {cid}: {texts.get(cid, '?')} (bounds the integers)")
            if not fact.get("core") and not fact.get("bounds"):
                lines.append("    (no constraint needed: it contradicts itself)")
    return lines


_QUERY_WORDS = {"option": "the option's formula", "negation": "its negation", "none": "none of the listed formulas",
                "item": "listed formula"}


def _show_model(model: Any, signatures: dict[str, Any] | None, limit: int = 600) -> str:
    """``x=1, y=2``; DSL tables as ``f(a)=v`` (booleans: the true applications only)."""
    if not isinstance(model, dict):
        return repr(model)
    parts = []
    for name, value in model.items():
        if name == OUTSIDE and isinstance(value, list):
            parts += [f"{e[0]}({', '.join(map(str, e[1]))})={e[2]}" for e in value if isinstance(e, list) and len(e) == 3]
        elif signatures is not None and name in signatures and isinstance(value, list):
            cells = list(itertools.product(*signatures[name]))
            for args, v in zip(cells, value):
                call = f"{name}({', '.join(map(str, args))})" if args else name
                if v is True:
                    parts.append(call)
                elif v is not False:
                    parts.append(f"{call}={v}")
        else:
            parts.append(f"{name}={value}")
    text = ", ".join(parts) or "(all false)"
    return text if len(text) <= limit else text[:limit] + " ..."


def constraint_ids_in_explanation(lines: list[str]) -> set[int]:
    """The constraint ids :func:`explain_lines` lists (for tests and tools)."""
    found = set()
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("line ") and ":" in stripped:
            head = stripped[5:].split(":", 1)[0]
            if head.isdigit():
                found.add(int(head))
    return found


def premise_lines(cert: dict[str, Any]) -> list[int]:
    """Program lines of the constraints the answer rests on: every core and bound the facts cite.

    A fact shown by a model rests on every constraint (the model satisfies them all), so when no
    fact cites a core, all constraints are listed.
    """
    cited: set[int] = set()
    facts = [f for o in cert.get("options") or [] if isinstance(o, dict) for f in o.get("facts") or []]
    for fact in facts:
        if isinstance(fact, dict):
            cited.update(i for i in (fact.get("core") or []) + (fact.get("bounds") or []) if isinstance(i, int))
    if not cited:
        cited = {c["id"] for c in cert.get("constraints") or [] if isinstance(c, dict) and isinstance(c.get("id"), int)}
    return sorted(cited)
