"""Prover9's notation: the native ``prover9`` input language, and FOL formulas to and from it.

Syntax only (nothing here runs Prover9; the backend is :mod:`symbolkg.solvers.fol.prover9`):

* :func:`parse` reads a native Prover9 input (``formulas(assumptions)`` / ``formulas(goals)``
  lists, ``set``/``clear``/``assign`` options) into a :class:`Prover9Problem`; the formulas
  themselves are checked by Prover9 when the problem runs (its parser is the reference);
* :func:`input_text` writes the input file of one Prover9 run (our limits after the user's options);
* :func:`to_prover9` translates a ``logiclm-fol`` program (:mod:`symbolkg.solvers.fol.syntax`)
  into Prover9 formulas;
* :func:`read_formula` reads one Prover9 formula back into our FOL syntax tree (the entailment
  certificate checker reads ``prover9`` programs with it, and the backend uses it to look for
  countermodels of an Unknown answer).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from symbolkg.solvers.fol.lexical_syntax import MAX_PROGRAM_CHARS
from symbolkg.solvers.fol.syntax import (
    Atom,
    Binary,
    Connective,
    Const,
    Equals,
    FolProgram,
    Formula,
    Func,
    Not,
    Quantified,
    Quantifier,
    Term,
    Var,
)
from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError

# --------------------------------------------------------------------------- the "prover9" language


@dataclass(frozen=True)
class Prover9Formula:
    """One formula of a Prover9 input, with the line it starts on (1-based)."""

    text: str
    line: int


@dataclass(frozen=True)
class Prover9Problem:
    """A parsed native Prover9 input.

    Attributes:
        assumptions: the formulas of ``formulas(assumptions)`` (or ``sos``) lists.
        goal: the single formula of ``formulas(goals)``.
        options: ``set``/``clear``/``assign`` commands, passed on to Prover9
            (our time and memory limits are applied after them and win).
    """

    assumptions: tuple[Prover9Formula, ...]
    goal: Prover9Formula
    options: tuple[str, ...] = ()


_LIST_START = re.compile(r"^formulas\s*\(\s*(\w+)\s*\)$")
_OPTION = re.compile(r"^(set|clear|assign)\s*\(.*\)$", re.DOTALL)
_LIMIT_OPTION = re.compile(r"^assign\s*\(\s*(max_seconds|max_megs)\b")


_SIGNIFICANT = re.compile(r'%[^\n]*|"[^"\n]*"?|[()\[\]{}]+|\.(?=\s|\Z)|\n')


def _statements(text: str) -> Iterator[tuple[str, int]]:
    """Split Prover9 input into period-terminated statements with their start lines.

    ``%`` starts a comment to the end of the line (outside double quotes); a
    period ends a statement when it is followed by white space or the end of
    the text and is outside parentheses, as in Prover9's own reader. Scans with
    one regular expression and yields as it goes, so an error early in a large
    input is reported without reading the rest.
    """
    buf: list[str] = []
    start_line: int | None = None
    line = 1
    depth = 0
    pos = 0

    def take(segment: str) -> None:
        nonlocal start_line
        if start_line is None and segment.strip():
            start_line = line
        buf.append(segment)

    for match in _SIGNIFICANT.finditer(text):
        if match.start() > pos:
            take(text[pos : match.start()])
        pos = match.end()
        token = match.group()
        if token == "\n":
            buf.append(token)
            line += 1
        elif token.startswith("%"):
            continue
        elif token.startswith('"'):
            if len(token) < 2 or not token.endswith('"'):
                raise ProgramError("unterminated double-quoted symbol: close it with '\"' on the same line", line)
            take(token)
        elif token == ".":
            if depth <= 0:
                yield "".join(buf).strip(), start_line or line
                buf, start_line, depth = [], None, 0
            else:
                take(token)
        else:  # a run of brackets
            opened = token.count("(") + token.count("[") + token.count("{")
            depth += 2 * opened - len(token)
            take(token)
    take(text[pos:])
    rest = "".join(buf).strip()
    if rest:
        raise ProgramError(
            f"the input ends inside a statement: {rest[:80]!r} has no terminating period "
            "(every formula and command must end with '.')",
            start_line,
        )


def parse(text: str) -> Prover9Problem:
    """Parse a native Prover9 input into assumptions, one goal and options.

    Formulas themselves are checked by Prover9 when the problem runs (its
    parser is the reference); this function checks the list structure.

    Raises:
        ProgramError: a statement outside a list, an unknown list, a missing
            ``end_of_list``, or a goals list without exactly one formula.
    """
    if len(text) > MAX_PROGRAM_CHARS:
        raise ProgramError(
            f"the input has {len(text):,} characters; the limit is {MAX_PROGRAM_CHARS:,}", None, ErrorKind.UNSUPPORTED
        )
    assumptions: list[Prover9Formula] = []
    goals: list[Prover9Formula] = []
    options: list[str] = []
    current: str | None = None
    current_line = 0
    goals_line: int | None = None
    for stmt, line in _statements(text):
        swallowed = re.search(r"\n\s*(end_of_list|formulas\s*\()", stmt)
        if swallowed:  # a forgotten period joins a formula with the next list line
            raise ProgramError(
                f"missing '.' at the end of {stmt[: swallowed.start()].strip()[:80]!r}; "
                "every formula ends with a period",
                line,
            )
        if current is None:
            start = _LIST_START.match(stmt)
            if start:
                kind = start.group(1)
                if kind not in ("assumptions", "sos", "goals"):
                    raise ProgramError(
                        f"unsupported list formulas({kind}); use formulas(assumptions) and formulas(goals)",
                        line,
                        ErrorKind.UNSUPPORTED,
                    )
                current, current_line = kind, line
                if kind == "goals":
                    goals_line = line
            elif _OPTION.match(stmt):
                if not _LIMIT_OPTION.match(stmt):  # time and memory limits are set by the caller
                    options.append(stmt)
            elif stmt == "end_of_list":
                raise ProgramError("end_of_list without a matching formulas(...) line", line)
            else:
                raise ProgramError(
                    f"statement {stmt[:80]!r} is outside a list; put formulas between 'formulas(assumptions).' or "
                    "'formulas(goals).' and 'end_of_list.' (only set/clear/assign commands may stand outside lists)",
                    line,
                )
        elif stmt == "end_of_list":
            current = None
        elif _LIST_START.match(stmt):
            raise ProgramError(
                f"formulas(...) list opened on line {current_line} is not closed with 'end_of_list.' before this line",
                line,
            )
        else:
            (goals if current == "goals" else assumptions).append(Prover9Formula(stmt, line))
    if current is not None:
        raise ProgramError(f"formulas({current}) list is not closed: add 'end_of_list.'", current_line)
    if len(goals) != 1:
        found = "no goal" if not goals else f"{len(goals)} goals"
        raise ProgramError(
            f"expected exactly one formula in formulas(goals), found {found}; "
            "state the single statement to prove or refute",
            goals[1].line if len(goals) > 1 else goals_line,
            ErrorKind.NO_ANSWER,
        )
    return Prover9Problem(assumptions=tuple(assumptions), goal=goals[0], options=tuple(options))


# --------------------------------------------------------------------------- one run's input file


#: Given clauses one Prover9 search may select (``assign(max_given, n)``): the search's deterministic
#: budget, so that a search ends the same way on a fast and on a loaded machine (``max_seconds`` and
#: the wall clock stay as a safety net). Every recorded FOLIO program of three models (1,136 searches)
#: ended within 73 given clauses (proofs within 9); the one search that never ends (FOLIO_dev_120's
#: negation side) reaches 200 in about 1.2 s here, and then slows down steeply (400 take 22 s). A
#: native ``prover9`` program may set its own ``assign(max_given, n)``, which wins.
MAX_GIVEN = 200


def input_text(assumptions: Sequence[str], goals: Sequence[str], limits: Limits, options: Sequence[str] = ()) -> str:
    """The input file of one Prover9 run: our search budget, ``options``, our limits and settings, the lists."""
    max_seconds = max(1, math.ceil(limits.timeout_s))
    # Leave head-room under RLIMIT_AS so Prover9 stops cleanly (exit max_megs) first.
    max_megs = max(16, int(limits.memory_mb * 0.8))
    # The budget first, so that an option of the program's own overrides it (the limits below win).
    lines = [f"assign(max_given, {MAX_GIVEN})."]
    lines += [f"{opt.rstrip('.').strip()}." for opt in options]
    lines += [
        f"assign(max_seconds, {max_seconds}).",
        f"assign(max_megs, {max_megs}).",
        # One proof decides the answer. By default Prover9's auto_denials raises max_proofs
        # for Horn sets with several negative clauses and keeps searching after the first.
        "clear(auto_denials).",
        "assign(max_proofs, 1).",
        # The given-clause trace can reach megabytes in a long search; the proof is what we keep.
        "clear(print_given).",
        "formulas(assumptions).",
    ]
    lines += [f"{strip_period(a)}." for a in assumptions]
    lines += ["end_of_list.", "formulas(goals)."]
    lines += [f"{strip_period(g)}." for g in goals]
    lines.append("end_of_list.")
    return "\n".join(lines) + "\n"


def strip_period(formula: str) -> str:
    """``formula`` without its terminating period (Prover9 ends every statement with one)."""
    text = formula.strip()
    return text[:-1].rstrip() if text.endswith(".") else text


# --------------------------------------------------------------------------- logiclm-fol -> Prover9

# Symbols are renamed for Prover9 deterministically (Prover9 reads a free symbol starting with
# ``u``-``z`` as a variable, so the constant ``yale`` must not reach it unchanged): constants become
# ``c_<name>`` unless they start with ``a``-``t``; bound variables keep their name when it starts
# with ``u``-``z`` and become ``v_<name>`` otherwise; predicates and functions keep their names
# (``p_``/``f_`` prefixes only where Prover9 would misread them). ``⊕`` becomes ``-(a <-> b)``.


@dataclass(frozen=True)
class Prover9Translation:
    """The program in Prover9 syntax.

    Attributes:
        assumptions: one Prover9 formula per premise, in order.
        goal: the conclusion.
        lines: program line of each assumption, then of the goal.
        symbols: original name -> Prover9 name, for every renamed symbol.
    """

    assumptions: tuple[str, ...]
    goal: str
    lines: tuple[int, ...]
    symbols: dict[str, str]


_PROVER9_RESERVED = {"all", "exists", "end_of_list", "formulas"}


def _ascii(name: str) -> str:
    decomposed = unicodedata.normalize("NFKD", name)
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return re.sub(r"[^A-Za-z0-9_]", "_", plain)


class _Namer:
    """Deterministic, collision-free Prover9 names for each kind of symbol."""

    def __init__(self) -> None:
        self.names: dict[tuple[str, str], str] = {}
        self.taken: set[str] = set()

    def name(self, kind: str, original: str) -> str:
        key = (kind, original)
        if key in self.names:
            return self.names[key]
        base = _ascii(original)
        if kind == "var":
            # Prover9 reads u-z names as variables; quantifiers bind any name, but keep it uniform.
            good = re.fullmatch(r"[u-z][A-Za-z0-9_]*", base)
            candidate = base if good else f"v_{base}"
        elif kind == "const":
            good = re.fullmatch(r"[a-t][A-Za-z0-9_]*", base)
            candidate = base if good else f"c_{base}"
        else:  # predicates and functions: only a u-z initial or a non-letter start confuses Prover9
            good = re.fullmatch(r"[A-Za-t][A-Za-z0-9_]*", base)
            candidate = base if good else f"{kind[0]}_{base}"
        if candidate in _PROVER9_RESERVED:
            candidate = f"{kind[0]}_{candidate}"
        # Variables may repeat across formulas; other symbols must not collide with each other.
        unique, k = candidate, 2
        while kind != "var" and unique in self.taken:
            unique, k = f"{candidate}_{k}", k + 1
        if kind != "var":
            self.taken.add(unique)
        self.names[key] = unique
        return unique


def to_prover9(program: FolProgram) -> Prover9Translation:
    """Translate a parsed program into Prover9 formulas (fully parenthesised)."""
    namer = _Namer()

    def term(t: Term) -> str:
        if isinstance(t, Var):
            return namer.name("var", t.name)
        if isinstance(t, Const):
            return namer.name("const", t.name)
        return f"{namer.name('func', t.name)}({', '.join(term(a) for a in t.args)})"

    def formula(f: Formula) -> str:
        if isinstance(f, Atom):
            name = namer.name("pred", f.predicate)
            return f"{name}({', '.join(term(a) for a in f.args)})" if f.args else name
        if isinstance(f, Equals):
            return f"({term(f.left)} = {term(f.right)})"
        if isinstance(f, Not):
            return f"-({formula(f.body)})"
        if isinstance(f, Quantified):
            word = "all" if f.quantifier is Quantifier.FORALL else "exists"
            return f"({word} {namer.name('var', f.var)} {formula(f.body)})"
        left, right = formula(f.left), formula(f.right)
        if f.op is Connective.XOR:
            return f"-({left} <-> {right})"
        op = {Connective.AND: "&", Connective.OR: "|", Connective.IMPLIES: "->", Connective.IFF: "<->"}[f.op]
        return f"({left} {op} {right})"

    assumptions = tuple(formula(p.formula) for p in program.premises)
    goal = formula(program.conclusion.formula)
    lines = tuple(p.line for p in program.premises) + (program.conclusion.line,)
    renamed = {orig: new for (kind, orig), new in namer.names.items() if kind != "var" and orig != new}
    return Prover9Translation(assumptions, goal, lines, renamed)


# --------------------------------------------------------------------------- Prover9 -> our FOL syntax tree


class Unreadable(Exception):
    """Prover9 input :func:`read_formula` does not cover (user-declared operators, ``$T``/``$F``)."""


def read_formula(text: str) -> Formula:
    """One Prover9 formula as our FOL syntax tree (free ``u``-``z`` variables closed with ∀).

    Raises:
        Unreadable: input the reader does not cover.
    """
    return _Prover9Reader(text).read()


_P9_TOKEN = re.compile(r"\s*(<->|->|<-|!=|\$T|\$F|[()\-&|=,]|\"[^\"]*\"|[A-Za-z0-9_$.']+)")


class _Prover9Reader:
    """Reads one Prover9 formula (standard LADR operators) into our FOL syntax tree.

    Precedences as in LADR: ``<-> -> <-`` (800, not associative) > ``|`` (790, right) >
    ``&`` (780, right) > ``= !=`` between terms; ``-`` and the quantifiers ``all x`` /
    ``exists x`` bind tightest (``all x P(x) -> Q(x)`` is ``(all x P(x)) -> Q(x)``). Free
    names starting with ``u``-``z`` are variables, universally quantified around the formula.
    Anything else (user-declared operators, ``$T``/``$F``) raises :class:`Unreadable`.
    """

    def __init__(self, text: str) -> None:
        body = re.split(r"\s#\s*\w+\(", " " + text, maxsplit=1)[0]  # drop attributes (# label(...))
        self.tokens: list[str] = []
        pos = 0
        body = body.strip().rstrip(".").strip()
        while pos < len(body):
            m = _P9_TOKEN.match(body, pos)
            if not m or not m.group(1):
                raise Unreadable(f"cannot read the Prover9 formula {text[:80]!r} near {body[pos : pos + 20]!r}")
            self.tokens.append(m.group(1))
            pos = m.end()
            while pos < len(body) and body[pos].isspace():
                pos += 1
        self.pos = 0
        self.bound: list[str] = []
        self.free: list[str] = []
        self.text = text

    def fail(self, why: str) -> Unreadable:
        return Unreadable(f"cannot read the Prover9 formula {self.text[:80]!r}: {why}")

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise self.fail(f"expected {expected or 'more'}, found {tok!r}")
        self.pos += 1
        return tok

    def read(self) -> Formula:
        formula = self.formula()
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek()!r}")
        for name in reversed(self.free):
            formula = Quantified(Quantifier.FORALL, name, formula)
        return formula

    def formula(self) -> Formula:
        left = self.disjunction()
        op = self.peek()
        if op in ("<->", "->", "<-"):
            self.take()
            right = self.disjunction()
            if op == "<-":
                return Binary(Connective.IMPLIES, right, left)
            return Binary(Connective.IFF if op == "<->" else Connective.IMPLIES, left, right)
        return left

    def disjunction(self) -> Formula:
        left = self.conjunction()
        if self.peek() == "|":
            self.take()
            return Binary(Connective.OR, left, self.disjunction())
        return left

    def conjunction(self) -> Formula:
        left = self.unary()
        if self.peek() == "&":
            self.take()
            return Binary(Connective.AND, left, self.conjunction())
        return left

    def unary(self) -> Formula:
        tok = self.peek()
        if tok == "-":
            self.take()
            return Not(self.unary())
        if tok in ("all", "exists"):
            self.take()
            var = self.take()
            self.bound.append(var)
            try:
                body = self.unary()
            finally:
                self.bound.pop()
            return Quantified(Quantifier.FORALL if tok == "all" else Quantifier.EXISTS, var, body)
        if tok == "(":
            self.take()
            inner = self.formula()
            self.take(")")
            return inner
        if tok in ("$T", "$F"):
            raise self.fail("$T / $F are not supported")
        left = self.term_or_atom()
        if self.peek() in ("=", "!="):
            op = self.take()
            right = self.term(self.term_or_atom())
            eq = Equals(self.term(left), right)
            return Not(eq) if op == "!=" else eq
        return self.atom(left)

    def term_or_atom(self) -> tuple[str, tuple[Term, ...] | None]:
        name = self.take()
        if not re.fullmatch(r"[A-Za-z0-9_$.']+|\"[^\"]*\"", name):
            raise self.fail(f"expected a name, found {name!r}")
        if self.peek() != "(":
            return name, None
        self.take("(")
        args = [self.term(self.term_or_atom())]
        while self.peek() == ",":
            self.take()
            args.append(self.term(self.term_or_atom()))
        self.take(")")
        return name, tuple(args)

    def term(self, raw: tuple[str, tuple[Term, ...] | None]) -> Term:
        name, args = raw
        if args is not None:
            return Func(name, args)
        if name in self.bound:
            return Var(name)
        if re.match(r"[u-z]", name):
            if name not in self.free:
                self.free.append(name)
            return Var(name)
        return Const(name)

    def atom(self, raw: tuple[str, tuple[Term, ...] | None]) -> Atom:
        name, args = raw
        return Atom(name, args or ())
