"""Logic-LM's SAT/SMT option DSL for AR-LSAT (language ``"logiclm-smt"``), solved with Z3.

A program has three sections::

    # Declarations
    children = EnumSort([Fred, Juan, Marc])          # a finite sort of names
    lockers = EnumSort([1, 2, 3])                    # numbers: an integer-valued sort
    assigned = Function([children] -> [lockers])     # results may also be [int] / [bool]

    # Constraints
    ForAll([c:children], assigned(c) != 2) ::: text after ::: is a comment
    Count([c:children], assigned(c) == 1) == 1

    # Options
    Question ::: Which one of the following must be true?
    is_valid(assigned(Fred) == 1) ::: (A)
    is_sat(assigned(Juan) == 3) ::: (B)

Semantics (the same as Logic-LM's translator, ``code_translator.py``, except where
marked *differs*):

* ``EnumSort`` of names is a Z3 enumeration sort. ``EnumSort`` (or ``IntSort``) of
  integers is an integer sort: its members are plain integers (so ``l + 1`` and
  ``f(c) <= 3`` work), a function returning it is restricted to its members, and a
  quantifier over it ranges over its members only.
* An ``EnumSort`` whose members all belong to one earlier sort is a *subset* of that
  sort: ``ForAll([x:subset], ...)`` ranges over its members, and a function returning
  it is restricted to them. (*differs*: Logic-LM crashed on such quantifiers.)
* Quantifiers, ``Count`` and scoped ``Distinct`` over finite sorts are expanded over
  the members, so the problem Z3 sees is quantifier-free; only binders of the
  built-in ``int`` sort become Z3 quantifiers. ``Count``, scoped ``Distinct`` and
  scoped ``Sum`` need finite sorts.
* Lines of the Declarations section that are not declarations (LLMs put range
  constraints such as ``ForAll([p:people], And(1 <= sits(p), sits(p) <= 8))`` there)
  are asserted as constraints. (*differs*: Logic-LM parsed and then dropped them.)
* Also accepted because their meaning is unambiguous: chained comparisons
  (``1 <= x <= 5``), ``x in [a, b]`` / ``x not in [...]`` / ``x in some_sort``
  (membership, *differs*: Python's ``in`` on Z3 terms compares syntax), Python
  ``and`` / ``or`` / ``not``, ``a if c else b``, ``%``, ``Abs``, ``Sum``, ``If``,
  ``Xor`` (two arguments), and the aliases ``Iff(a, b)`` (``a == b`` on formulas) and
  ``IfThenElse`` (``If``). (*differs*: Logic-LM had no ``Iff`` / ``IfThenElse``.)
* Spellings of other languages and models, accepted because each has exactly one
  reading (*differs*: additions of this parser, not of Logic-LM's translator):

  - ``a && b`` / ``a || b``: ``And`` / ``Or``, with C's precedence, which is Python's
    ``and`` / ``or``'s (looser than comparisons, ``&&`` tighter than ``||``).
  - ``a -> b``, ``a => b``, ``a ==> b``: ``Implies(a, b)``; ``a <-> b``, ``a <=> b``:
    ``Iff(a, b)``. The arrow binds loosest: its operands run to the enclosing bracket
    or comma. Two arrows in one operand span (``a -> b -> c``) are refused.
  - ``(a + b) mod n``: ``%``. ``mod`` next to another unparenthesized arithmetic
    operator (``a + b mod n``) is refused; where the program declares or binds the
    name ``mod``, it stays a name.
  - ``is_sat(a, b, ...)``, ``is_unsat(...)``, ``is_valid(...)`` with several formulas:
    the check of ``And(a, b, ...)``, as Z3's ``Solver.add(a, b)`` asserts both (so
    ``is_unsat`` stays ``not is_sat``). ``is_accurate_list(a, b)`` is
    ``is_accurate_list([a, b])``. ``is_exception`` takes exactly one check.
  - ``If(c, a)`` with a formula ``a`` and no else branch: ``Implies(c, a)`` (an
    ``if`` without ``else`` constrains nothing when ``c`` is false).
  - ``e != None`` is ``True`` and ``e == None`` is ``False``: every term has a value
    (functions are total). ``None`` anywhere else is refused.
  - Order on a sort of names: ``<``, ``<=``, ``>``, ``>=`` compare declaration
    positions (the only order an ``EnumSort`` has: ``[Mon, Tue]`` puts Mon first).
    ``m + k`` / ``m - k`` (``m`` a name value, ``k`` an integer) is the position
    ``k`` places later / earlier and may only be compared with a name value or
    another position (``f(x) == f(y) + 1``); ``m1 - m2`` is the integer difference
    of positions. Refused: a position compared with a plain integer (``f(x) <= 2``
    or ``1 <= f(x)``: the first position's number is not written down), a
    position passed to a function (``f(d + 1)``: the last member has no
    successor) and any other arithmetic on names.
  - A range over a whole sort of names: ``lo <= f(x) <= hi``, ``And(lo <= f(x),
    f(x) <= hi)`` (or with ``>=``, either side) where ``f(x)`` has a sort of n names and
    ``hi - lo + 1 == n``, as in ``ForAll([v:vehicles], And(1 <= serviced(v),
    serviced(v) <= 6))`` over six days. The line numbers the members from ``lo``, and
    under that numbering the bounds hold for every member, so it is ``True``. Bounds
    that do not span the sort exactly (``1 <= f(x) <= 5`` over six names) would need a
    numbering the program does not write down and stay refused.
  - ``Sum([x:sort], term)``: the sum of an integer ``term`` over the members.
  - Quoted members, ``EnumSort(["Rhino Rock", 'Sammy'])``: names (not numbers even
    when quoted digits), written quoted (or, if identifiers, bare) in formulas.
  - ``_`` or a single letter bound by a quantifier's own binder list is an ordinary
    variable.
  - Option checks named in English: ``is_required`` and ``is_must`` are ``is_valid``
    (true in every model), ``is_possible`` is ``is_sat``, ``is_impossible`` is
    ``is_unsat`` (:data:`CHECK_ALIASES`).

  Still refused, each with a message saying how to fix it, because they have no
  reading or several: a variable (``_``, ``p``) used outside the quantifier that
  binds it; ``Count`` over an integer term (``Sum`` of the values, or how many are
  nonzero?); other option functions (``is_min``, ``is_max``: of what, over which
  options?; ``is_equivalent``, ``is_determined``: under which constraints?) and
  option lines that are bare formulas (``is_sat`` or ``is_valid``?); ``Implies`` with more than
  two arguments; sorts mixing numbers and names; undeclared sorts and names such as
  ``null``; unbalanced parentheses (where the missing one goes is a guess).
* Option checks, against the constraints ``C``: ``is_sat(e)``: ``C and e`` has a model;
  ``is_unsat(e)``: it has none; ``is_valid(e)``: ``C and not e`` has none (``e`` holds
  in every model of ``C``); ``is_accurate_list([e1, ...])``: ``is_valid(Or(e1, ...))``
  and every ``is_sat(ei)``; ``is_exception(check)``: the check fails (used for
  "... EXCEPT" questions). An option is named by ``::: (X)`` after it, else by
  its position (A, B, ...).
* Answer selection *differs*: Logic-LM printed every passing option and took the
  first. Here exactly one passing option gives ``Status.PROVED`` with its letter;
  none or several give ``Status.UNKNOWN``, ``answer=None``, error kind
  ``no_answer`` and a message naming the passing options. Constraints that are
  contradictory on their own (every ``is_valid`` / ``is_unsat`` would pass
  vacuously) give ``Status.UNSAT``, ``answer=None``, error kind ``no_answer`` and
  the lines of an unsatisfiable core, without checking any option. Programs whose
  checks pass no option or every option get the same treatment: the DSL has no
  reading that picks one of them, so none is guessed.

The program text is never executed: each expression is parsed with
``ast.parse(mode="eval")`` after documented token rewrites (binder lists
``[x:sort, ...]`` become ``{x:sort, ...}``, a dict display of the same length;
``&&``, ``||``, ``mod`` and infix arrows as above, with error columns mapped back
to the source) and the tree is walked with a whitelist into a
typed intermediate form (:class:`Program`), which :func:`solve` compiles into Z3
terms in a fresh ``z3.Context``.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import json
import keyword
import re
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Union

import z3

from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

#: Longest program text parse() reads. GPT-4's AR-LSAT programs are under 3,000 characters; the parser
#: is linear but slow on huge texts (~30 KB/s on a 620 KB fuzz mutant), so far larger input is refused
#: at once instead of taking tens of seconds of a worker.
MAX_PROGRAM_CHARS = 100_000

LANGUAGE = "logiclm-smt"
BACKEND = "z3"

#: Built-in sorts usable as function parameter / result sorts and binder sorts.
BUILTIN_SORTS = ("int", "bool")
#: The option checks of the DSL.
OPTION_FUNCTIONS = ("is_sat", "is_unsat", "is_valid", "is_accurate_list", "is_exception")
#: Option-check names other models write whose English has one reading: "required" / "must" (true in every
#: model) and "possible" / "impossible" (true in some / no model).
CHECK_ALIASES = {"is_required": "is_valid", "is_must": "is_valid", "is_possible": "is_sat", "is_impossible": "is_unsat"}
#: Option letters, in positional order.
LETTERS = "ABCDEFG"

# Z3-API names an LLM reaches for that this DSL does not implement; they get an
# "unsupported" error (rather than "undeclared") with a hint.
_UNSUPPORTED_CALLS = {
    "AtMost": "use Count([x:sort], cond) <= k",
    "AtLeast": "use Count([x:sort], cond) >= k",
    "PbEq": "use Count([x:sort], cond) == k",
    "Product": "multiply with *",
    "Min": "compare the values with <= instead",
    "Max": "compare the values with >= instead",
}

# Budget on the size of the ground formula (Python-side Z3 term constructions).
# Expanding quantifiers over finite sorts can blow up (nested binders multiply);
# past this many nodes the program is reported instead of exhausting memory.
_MAX_TERM_NODES = 1_000_000

# Share of the worker's memory limit given to Z3 itself, so that Z3 reports
# "memory" cleanly before the process limit kills the worker.
_Z3_MEMORY_SHARE = 0.75


# --------------------------------------------------------------------------- IR


@dataclass(frozen=True)
class Sort:
    """A declared finite sort.

    Attributes:
        name: the declared name.
        members: member names (symbolic sort) or integers (numeric sort).
        numeric: True when the members are integers (the sort's values are Z3 Ints).
        parent: for a subset sort, the name of the symbolic sort that owns its
            members; None otherwise.
        line: 1-based line of the declaration.
    """

    name: str
    members: tuple[Union[str, int], ...]
    numeric: bool
    parent: str | None
    line: int

    @property
    def base(self) -> str:
        """The sort whose Z3 sort carries this sort's values."""
        return self.parent or self.name

    @property
    def value_type(self) -> str:
        """The expression type of a value of this sort (see :data:`Expr.type`)."""
        return "int" if self.numeric else self.base


@dataclass(frozen=True)
class FunctionDecl:
    """``name = Function([params...] -> [result])``; sorts by name (incl. ``int``, ``bool``)."""

    name: str
    params: tuple[str, ...]
    result: str
    line: int


@dataclass(frozen=True)
class Binder:
    """One ``name:sort`` of a quantifier, ``Count`` or scoped ``Distinct``."""

    name: str
    sort: str


@dataclass(frozen=True)
class Expr:
    """A typed expression. ``type`` is ``"bool"``, ``"int"`` or a symbolic sort's base name."""

    type: str


@dataclass(frozen=True)
class Lit(Expr):
    value: Union[bool, int]


@dataclass(frozen=True)
class MemberRef(Expr):
    name: str


@dataclass(frozen=True)
class VarRef(Expr):
    name: str


@dataclass(frozen=True)
class Apply(Expr):
    func: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Op(Expr):
    """A built-in operation: and or not implies xor ite eq ne lt le gt ge add sub mul mod neg abs sum distinct."""

    op: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Scoped(Expr):
    """``forall`` / ``exists`` / ``count`` / ``distinct`` / ``sum`` over binders."""

    kind: str
    binders: tuple[Binder, ...]
    body: Expr


@dataclass(frozen=True)
class Constraint:
    """One asserted formula and the program line it came from."""

    line: int
    expr: Expr


@dataclass(frozen=True)
class Check:
    """An option check: ``kind`` in :data:`OPTION_FUNCTIONS`.

    ``exprs`` holds the checked formula(s) (several for ``is_accurate_list``);
    ``inner`` is the negated check of ``is_exception``.
    """

    kind: str
    exprs: tuple[Expr, ...] = ()
    inner: "Check | None" = None

    def describe(self) -> str:
        return f"is_exception({self.inner.describe()})" if self.inner else self.kind


@dataclass(frozen=True)
class Option:
    letter: str
    line: int
    check: Check


@dataclass(frozen=True)
class Program:
    """A parsed, type-checked program.

    Attributes:
        sorts: declared sorts by name, in declaration order.
        functions: declared functions by name, in declaration order.
        constraints: asserted formulas, in program order.
        question: the text of the ``Question :::`` line, if any.
        options: the option checks, in program order.
    """

    sorts: dict[str, Sort]
    functions: dict[str, FunctionDecl]
    constraints: tuple[Constraint, ...]
    question: str | None
    options: tuple[Option, ...]


# ------------------------------------------------------------------- parsing

_HEADERS = {"declarations": "# Declarations", "constraints": "# Constraints", "options": "# Options"}
_HEADER_RE = re.compile(r"^#\s*(declarations|constraints|options)\s*:?\s*$", re.IGNORECASE)
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_SORT_DECL_RE = re.compile(rf"^({_IDENT})\s*=\s*(EnumSort|IntSort)\s*\(\s*\[(.*)\]\s*\)$")
_FUNC_DECL_RE = re.compile(rf"^({_IDENT})\s*=\s*Function\s*\(\s*\[(.*?)\]\s*->\s*\[(.*)\]\s*\)$")
_DECL_LIKE_RE = re.compile(rf"^({_IDENT})\s*=(?![=>])\s*(.*)$")
# A binder list `[x:sort, y:sort]`; rewritten to `{x:sort, y:sort}` (same length).
_BINDERS_RE = re.compile(rf"\[(\s*{_IDENT}\s*:\s*{_IDENT}\s*(?:,\s*{_IDENT}\s*:\s*{_IDENT}\s*)*)\]")
_LETTER_RE = re.compile(r"^\s*\(?\s*([A-G])\s*\)")
# Infix spellings of other languages that have one reading here (see the module docstring).
_INFIX_RE = re.compile(r"&&|\|\||<=>|<->|==>|=>|->|\bmod\b")
# Finding an arrow's operands scans the line, so a line with very many arrows is refused instead.
_MAX_ARROWS = 64
_ARROWS = {"<=>": "Iff", "<->": "Iff", "==>": "Implies", "=>": "Implies", "->": "Implies"}


@dataclass(frozen=True)
class _Rewritten:
    """An expression line after the documented token rewrites, with a map back to source columns."""

    text: str
    edits: tuple[tuple[int, int, int, int], ...]  # (new start, new end, source start, source end)
    infix_mod: bool  # a `mod` was rewritten to `%` (its operands are then checked for precedence)

    def source_column(self, col: int) -> int:
        """The 0-based source column of 0-based column ``col`` of :attr:`text`."""
        shift_new, shift_src = 0, 0
        for new_start, new_end, src_start, src_end in self.edits:
            if col < new_start:
                break
            if col < new_end:
                return src_start
            shift_new, shift_src = new_end, src_end
        return shift_src + (col - shift_new)


def _rewrite(code: str, declared: Callable[[str], bool], lineno: int) -> _Rewritten:
    """Binder lists to dict displays (same length), then ``&&`` / ``||`` / ``mod`` / infix arrows."""
    code = _BINDERS_RE.sub(lambda m: "{" + m.group(1) + "}", code)
    edits: list[tuple[int, int, str]] = []  # (source start, source end, replacement)
    arrows: dict[tuple[int, int], list[str]] = {}
    infix_mod = False
    mod_is_a_name = declared("mod") or re.search(r"\bmod\s*:", code) is not None  # declared or bound
    for m in _INFIX_RE.finditer(code):
        token = m.group(0)
        if token == "&&":
            edits.append((m.start(), m.end(), " and "))
        elif token == "||":
            edits.append((m.start(), m.end(), " or "))
        elif token == "mod":
            if mod_is_a_name:
                continue
            infix_mod = True
            edits.append((m.start(), m.end(), "%"))
        else:
            if len(arrows) >= _MAX_ARROWS:
                raise ProgramError(f"more than {_MAX_ARROWS} infix arrows on one line; write Implies(a, b)", lineno)
            start, end = _operand_span(code, m.start(), m.end())
            arrows.setdefault((start, end), []).append(token)
            edits += [(start, start, _ARROWS[token] + "("), (m.start(), m.end(), ","), (end, end, ")")]
    for (start, end), tokens in arrows.items():
        if len(tokens) > 1:
            raise ProgramError(
                f"'{' ... '.join(tokens)}' chains infix implications without parentheses, which can be read two "
                "ways; write Implies(a, Implies(b, c)) or Implies(And(a, b), c)", lineno)
    if not edits:
        return _Rewritten(code, (), False)
    # Stable sort: an insertion before a replacement at the same column keeps program order.
    edits.sort(key=lambda e: (e[0], e[1] != e[0]))
    out: list[str] = []
    mapped: list[tuple[int, int, int, int]] = []
    src = new = 0
    for start, end, replacement in edits:
        out.append(code[src:start])
        new += start - src
        out.append(replacement)
        mapped.append((new, new + len(replacement), start, end))
        new += len(replacement)
        src = end
    out.append(code[src:])
    return _Rewritten("".join(out), tuple(mapped), infix_mod)


def _operand_span(code: str, arrow_start: int, arrow_end: int) -> tuple[int, int]:
    """The source span of an infix arrow's two operands: up to the enclosing bracket or a comma at its level."""
    depth, start = 0, 0
    for j in range(arrow_start - 1, -1, -1):
        c = code[j]
        if c in ")]}":
            depth += 1
        elif c in "([{" or (c == "," and depth == 0):
            if depth == 0:
                start = j + 1
                break
            depth -= 1
    depth, end = 0, len(code)
    for j in range(arrow_end, len(code)):
        c = code[j]
        if c in "([{":
            depth += 1
        elif c in ")]}" or (c == "," and depth == 0):
            if depth == 0:
                end = j
                break
            depth -= 1
    return start, end


_RESERVED = frozenset(
    {"And", "Or", "Not", "Implies", "Xor", "Iff", "If", "IfThenElse", "Distinct", "Abs", "Sum", "Count", "ForAll", "Exists",
     "True", "False", "EnumSort", "IntSort", "Function", *OPTION_FUNCTIONS, *BUILTIN_SORTS}
)


def parse(text: str) -> Program:
    """Parse and type-check a program.

    Args:
        text: the program, as written.

    Returns:
        The typed program.

    Raises:
        ProgramError: the first error (in line order), with its 1-based line and a
            message saying how to fix it; when more lines are wrong the message
            names them. Kinds: ``syntax``, ``undeclared`` (unknown name, sort or
            function), ``type`` (arity / sort mismatch), ``unsupported``.
    """
    if len(text) > MAX_PROGRAM_CHARS:
        raise ProgramError(f"the program has {len(text):,} characters; the limit is {MAX_PROGRAM_CHARS:,}", None,
                           ErrorKind.UNSUPPORTED)
    sections = _split_sections(text)
    errors: list[ProgramError] = []
    sorts: dict[str, Sort] = {}
    functions: dict[str, FunctionDecl] = {}
    members: dict[str, str] = {}  # member name -> owning (base) sort
    pending: list[tuple[int, str]] = []  # non-declaration lines of the Declarations section

    for lineno, code in sections["declarations"]:
        try:
            if not _parse_declaration(lineno, code, sorts, functions, members):
                pending.append((lineno, code))
        except ProgramError as err:
            errors.append(err)

    scope = _Scope(sorts, functions, members)
    constraints: list[Constraint] = []
    for lineno, code in pending + sections["constraints"]:
        try:
            expr = scope.expression(code, lineno)
            _require(expr, "bool", lineno, "a constraint")
            constraints.append(Constraint(lineno, expr))
        except ProgramError as err:
            errors.append(err)
    constraints.sort(key=lambda c: c.line)

    question: str | None = None
    options: list[Option] = []
    for lineno, raw in sections["options"]:
        code, _, comment = raw.partition(":::")
        if code.strip().startswith("Question"):
            question = comment.strip() or None
            continue
        try:
            check = scope.option(_strip_hash(code), lineno)
        except ProgramError as err:
            errors.append(err)
            continue
        match = _LETTER_RE.match(comment)
        letter = match.group(1) if match else (LETTERS[len(options)] if len(options) < len(LETTERS) else "?")
        options.append(Option(letter, lineno, check))

    if not errors:
        _check_option_letters(options, sections)
    if errors:
        errors.sort(key=lambda e: e.line or 0)
        first = errors[0]
        if len(errors) > 1:
            others = sorted({e.line for e in errors[1:] if e.line and e.line != first.line})
            if others:
                more = ", ".join(map(str, others[:10])) + (", ..." if len(others) > 10 else "")
                raise ProgramError(f"{first.message} (further errors on lines {more})", first.line, first.kind)
        raise first
    return Program(sorts, functions, tuple(constraints), question, tuple(options))


def _split_sections(text: str) -> dict[str, list[tuple[int, str]]]:
    """Split into sections of (1-based line, code) with ``:::`` comments removed (kept for options)."""
    sections: dict[str, list[tuple[int, str]]] = {}
    current: str | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        header = _HEADER_RE.match(stripped)
        if header:
            name = header.group(1).lower()
            if name in sections:
                raise ProgramError(f"section header '{_HEADERS[name]}' appears twice", lineno)
            expected = list(_HEADERS)[len(sections)]
            if name != expected:
                raise ProgramError(
                    f"'{_HEADERS[name]}' found where '{_HEADERS[expected]}' was expected; the sections are, in order: "
                    "# Declarations, # Constraints, # Options", lineno)
            sections[name] = []
            current = name
            continue
        if current is None:
            raise ProgramError(
                "text before the '# Declarations' header; a program starts with '# Declarations', then "
                "'# Constraints', then '# Options'", lineno)
        if current == "options":
            sections[current].append((lineno, stripped))
            continue
        code = _strip_hash(stripped.split(":::", 1)[0]).strip()
        if code:
            sections[current].append((lineno, code))
    for name, header in _HEADERS.items():
        if name not in sections:
            raise ProgramError(
                f"missing section header '{header}' (on a line of its own); a program has '# Declarations', "
                "'# Constraints' and '# Options' sections, in that order", None)
    return sections


def _strip_hash(code: str) -> str:
    # '#' starts a comment (string literals do not exist in the DSL, so no quoting to respect).
    return code.split("#", 1)[0].rstrip()


def _check_option_letters(options: list[Option], sections: dict[str, list[tuple[int, str]]]) -> None:
    if not options:
        line = sections["options"][0][0] if sections["options"] else None
        raise ProgramError(
            "the # Options section has no option lines; write one check per answer option, e.g. "
            "'is_valid(<formula>) ::: (A)'", line)
    seen: dict[str, int] = {}
    for option in options:
        if option.letter == "?":
            raise ProgramError(f"too many options (at most {len(LETTERS)})", option.line)
        if option.letter in seen:
            raise ProgramError(
                f"option ({option.letter}) is given twice (lines {seen[option.letter]} and {option.line}); "
                "write exactly one check per answer option", option.line)
        seen[option.letter] = option.line


def _parse_declaration(
    lineno: int, code: str, sorts: dict[str, Sort], functions: dict[str, FunctionDecl], members: dict[str, str]
) -> bool:
    """Record a sort or function declaration; False when ``code`` is not a declaration."""
    m = _SORT_DECL_RE.match(code)
    if m:
        _declare_sort(lineno, m.group(1), m.group(2), m.group(3), sorts, functions, members)
        return True
    m = _FUNC_DECL_RE.match(code)
    if m:
        _declare_function(lineno, m.group(1), m.group(2), m.group(3), sorts, functions, members)
        return True
    m = _DECL_LIKE_RE.match(code)
    if m:
        raise ProgramError(
            f"cannot read the declaration of '{m.group(1)}'; the declaration forms are "
            "'name = EnumSort([a, b, c])', 'name = EnumSort([1, 2, 3])' and "
            "'name = Function([sortA, sortB] -> [sortC])' (sortC may be int or bool)", lineno)
    return False


def _check_new_name(lineno: int, name: str, what: str, sorts: dict, functions: dict, members: dict) -> None:
    if keyword.iskeyword(name) or name in _RESERVED:
        raise ProgramError(f"'{name}' is a reserved word and cannot name a {what}; rename it", lineno)
    for table, kind in ((sorts, "sort"), (functions, "function"), (members, "sort member")):
        if name in table:
            raise ProgramError(f"'{name}' is already declared as a {kind}; use a different name for this {what}", lineno)


def _declare_sort(lineno: int, name: str, form: str, body: str, sorts: dict[str, Sort],
                  functions: dict[str, FunctionDecl], members: dict[str, str]) -> None:
    _check_new_name(lineno, name, "sort", sorts, functions, members)
    raw = [x.strip() for x in re.findall(r'"[^"]*"|\'[^\']*\'|[^,]+', body)] if body.strip() else []
    # A quoted member ("Rhino Rock") is a name, written quoted in expressions too.
    quoted = [len(x) >= 2 and x[0] == x[-1] and x[0] in "\"'" for x in raw]
    items = [x[1:-1].strip() if q else x for x, q in zip(raw, quoted)]
    if len(raw) != body.count(",") + 1 - sum(x.count(",") for x, q in zip(raw, quoted) if q):
        items.append("")  # an empty item between two commas
    if not items or any(not x for x in items):
        raise ProgramError(f"sort '{name}' needs a non-empty list of members, e.g. {name} = EnumSort([a, b, c])", lineno)
    if len(set(items)) != len(items):
        dup = next(x for x in items if items.count(x) > 1)
        raise ProgramError(f"member '{dup}' is listed twice in sort '{name}'", lineno)
    numbers = [not q and re.fullmatch(r"-?\d+", x) is not None for x, q in zip(items, quoted + [False])]
    if all(numbers):
        sorts[name] = Sort(name, tuple(int(x) for x in items), True, None, lineno)
        return
    bad = [x for x, is_num, q in zip(items, numbers, quoted + [False])
           if not is_num and not q and not re.fullmatch(_IDENT, x)]
    if any(numbers) or bad or form == "IntSort":
        example = bad[0] if bad else next(x for x, n in zip(items, numbers) if n == (form != "IntSort"))
        raise ProgramError(
            f"sort '{name}' has member '{example}': members must be all integers (a numeric sort) or all names "
            "(letters, digits, '_', not starting with a digit)", lineno, ErrorKind.TYPE)
    known = [x for x in items if x in members]
    if known:
        owners = {members[x] for x in known}
        if len(known) == len(items) and len(owners) == 1:
            # Every member belongs to one earlier sort: a subset of it (Logic-LM's "list").
            sorts[name] = Sort(name, tuple(items), False, owners.pop(), lineno)
            return
        raise ProgramError(
            f"member '{known[0]}' of sort '{name}' is already a member of sort '{members[known[0]]}'; a name belongs "
            "to one sort (a sort whose members all come from one earlier sort is a subset of it)", lineno, ErrorKind.TYPE)
    for x in items:
        _check_new_name(lineno, x, "sort member", sorts, functions, members)
        members[x] = name
    sorts[name] = Sort(name, tuple(items), False, None, lineno)


def _declare_function(lineno: int, name: str, params: str, result: str, sorts: dict[str, Sort],
                      functions: dict[str, FunctionDecl], members: dict[str, str]) -> None:
    _check_new_name(lineno, name, "function", sorts, functions, members)
    param_names = [x.strip() for x in params.split(",")] if params.strip() else []
    result_names = [x.strip() for x in result.split(",")]
    if "EnumSort" in result or "EnumSort" in params:
        raise ProgramError(
            f"declare the sort of '{name}' on its own line first (e.g. kinds = EnumSort([a, b])) and use its name "
            "in the Function declaration", lineno)
    if len(result_names) != 1 or not result_names[0]:
        raise ProgramError(
            f"function '{name}' must return exactly one sort, got [{result}]; declare one function per result, e.g. "
            f"{name}_a = Function([...] -> [sortA]) and {name}_b = Function([...] -> [sortB])", lineno, ErrorKind.TYPE)
    for sort in param_names + result_names:
        if not sort:
            raise ProgramError(f"empty sort name in the declaration of '{name}'", lineno)
        if sort not in sorts and sort not in BUILTIN_SORTS:
            raise ProgramError(
                f"sort '{sort}' used by function '{name}' is not declared; declare it first, e.g. "
                f"{sort} = EnumSort([...]), or use int / bool", lineno, ErrorKind.UNDECLARED)
    functions[name] = FunctionDecl(name, tuple(param_names), result_names[0], lineno)


def _require(expr: Expr, wanted: str, lineno: int, what: str) -> None:
    if expr.type != wanted:
        raise ProgramError(f"{what} must be {_type_phrase(wanted)}, but this is {_type_phrase(expr.type)}",
                           lineno, ErrorKind.TYPE)


def _type_phrase(t: str) -> str:
    if t == "bool":
        return "a Boolean formula"
    if t == "int":
        return "an integer"
    if t.startswith("pos:"):
        return f"a position in sort '{t[4:]}' (a member moved by a number, which the last members do not have)"
    return f"a value of sort '{t}'"


_CMP_OPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_CMP_TEXT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ARITH_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Mod: "mod"}


class _Scope:
    """Turns expression text into typed IR for one program's declarations."""

    def __init__(self, sorts: dict[str, Sort], functions: dict[str, FunctionDecl], members: dict[str, str]):
        self.sorts = sorts
        self.functions = functions
        self.members = members
        self._line = 0

    # -- entry points

    def expression(self, code: str, lineno: int) -> Expr:
        return self._walk(self._parse(code, lineno), {})

    def option(self, code: str, lineno: int) -> Check:
        return self._check(self._parse(code, lineno))

    # -- helpers

    def _err(self, message: str, kind: ErrorKind = ErrorKind.SYNTAX) -> ProgramError:
        return ProgramError(message, self._line, kind)

    def _parse(self, code: str, lineno: int) -> ast.expr:
        self._line = lineno
        if "{" in code or "}" in code:
            raise ProgramError("'{' and '}' are not part of the language; write binders as [x:sort]", lineno)
        if re.match(rf"^{_IDENT}\s*=(?![=>])", code):
            raise ProgramError(
                "an assignment is not a constraint; declarations belong in '# Declarations' and constraints "
                "are formulas such as f(a) == b", lineno)
        rewritten = _rewrite(code, self._declared, lineno)
        try:
            tree = ast.parse(rewritten.text, mode="eval")
        except SyntaxError as exc:
            if exc.offset:
                exc.offset = rewritten.source_column(exc.offset - 1) + 1
            raise ProgramError(_syntax_message(code, exc), lineno) from None
        except (ValueError, RecursionError, MemoryError):
            raise ProgramError("expression is too deeply nested or malformed to read", lineno) from None
        if rewritten.infix_mod:
            _check_infix_mod(tree, rewritten.text, lineno)
        return tree.body

    def _declared(self, name: str) -> bool:
        return name in self.sorts or name in self.functions or name in self.members

    def _check(self, node: ast.expr) -> Check:
        funcs = ", ".join(OPTION_FUNCTIONS)
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            raise self._err(f"an option line must be one check: {funcs}, e.g. 'is_sat(f(a) == b) ::: (A)'",
                            ErrorKind.UNSUPPORTED)
        name = CHECK_ALIASES.get(node.func.id, node.func.id)
        if name not in OPTION_FUNCTIONS:
            raise self._err(
                f"'{name}' is not an option check; use one of {funcs} (is_valid: must be true, is_sat: could be "
                "true, is_unsat: cannot be true, is_exception(is_sat(...)) for '... EXCEPT' questions)",
                ErrorKind.UNSUPPORTED)
        if node.keywords or not node.args or any(isinstance(a, ast.Starred) for a in node.args):
            raise self._err(f"{name} takes one argument: {name}(<formula>)", ErrorKind.TYPE)
        arg = node.args[0]
        if name == "is_exception":
            if len(node.args) != 1:
                raise self._err("is_exception takes exactly one check: is_exception(is_sat(<formula>))",
                                ErrorKind.TYPE)
            return Check("is_exception", inner=self._check(arg))
        if name == "is_accurate_list":
            # is_accurate_list(f1, f2) lists the same formulas as is_accurate_list([f1, f2]).
            elts = node.args if len(node.args) > 1 else arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else []
            if not elts:
                raise self._err("is_accurate_list takes a non-empty list of formulas: is_accurate_list([f1, f2])",
                                ErrorKind.TYPE)
            exprs = tuple(self._walk(e, {}) for e in elts)
        else:
            exprs = tuple(self._walk(a, {}) for a in node.args)
        for e in exprs:
            _require(e, "bool", self._line, f"the argument of {name}")
        if name != "is_accurate_list" and len(exprs) > 1:
            # Several formulas are checked together, as Z3's Solver.add(a, b) asserts their conjunction.
            exprs = (Op("bool", "and", exprs),)
        return Check(name, exprs)

    def _walk(self, node: ast.expr, env: dict[str, tuple[str, str]]) -> Expr:
        """``env`` maps bound variable names to (type, sort name)."""
        try:
            return self._walk_inner(node, env)
        except RecursionError:
            raise self._err("expression is nested too deeply") from None

    def _walk_inner(self, node: ast.expr, env: dict[str, tuple[str, str]]) -> Expr:
        walk = lambda n: self._walk_inner(n, env)  # noqa: E731 - local shorthand
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return Lit("bool", node.value)
            if isinstance(node.value, int):
                return Lit("int", node.value)
            if isinstance(node.value, str) and node.value in self.members:
                return MemberRef(self.members[node.value], node.value)
            if node.value is None:
                raise self._err("None has no value in this language: every function has a value for every argument; "
                                "only 'f(x) != None' (always true) and 'f(x) == None' (never true) are read",
                                ErrorKind.TYPE)
            raise self._err(f"the constant {node.value!r} is not supported; only integers, True and False are",
                            ErrorKind.TYPE)
        if isinstance(node, ast.Name):
            return self._name(node.id, env)
        if isinstance(node, (ast.Call, ast.Compare, ast.BoolOp)):
            whole_range = self._whole_range(node, env)
            if whole_range is not None:
                return whole_range
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, ast.Compare):
            return self._compare(node, env)
        if isinstance(node, ast.BoolOp):
            args = tuple(walk(v) for v in node.values)
            for a in args:
                _require(a, "bool", self._line, "an operand of and/or")
            return Op("bool", "and" if isinstance(node.op, ast.And) else "or", args)
        if isinstance(node, ast.UnaryOp):
            arg = walk(node.operand)
            if isinstance(node.op, ast.Not):
                _require(arg, "bool", self._line, "the operand of 'not'")
                return Op("bool", "not", (arg,))
            if isinstance(node.op, (ast.USub, ast.UAdd)):
                _require(arg, "int", self._line, "the operand of unary minus/plus")
                return arg if isinstance(node.op, ast.UAdd) else Op("int", "neg", (arg,))
            raise self._err("'~' is not supported; use Not(...)")
        if isinstance(node, ast.BinOp):
            op = _ARITH_OPS.get(type(node.op))
            if op is None:
                raise self._err("only +, -, * and % are supported on integers (no division)", ErrorKind.UNSUPPORTED)
            left, right = walk(node.left), walk(node.right)
            if left.type == right.type == "int":
                return Op("int", op, (left, right))
            moved = self._position_arith(op, left, right)
            if moved is not None:
                return moved
            for a in (left, right):
                if a.type != "int":
                    raise self._err(
                        f"arithmetic needs integers, but an operand is {_type_phrase(a.type)}"
                        + (f"; sort '{a.type}' has names, not numbers: only 'member + k', 'member - k' (a position "
                           f"k places later / earlier in its declaration) and 'member - member' are read"
                           if a.type in self.sorts else ""),
                        ErrorKind.TYPE)
            return Op("int", op, (left, right))
        if isinstance(node, ast.IfExp):
            return self._ite(walk(node.test), walk(node.body), walk(node.orelse))
        if isinstance(node, ast.Tuple):
            raise self._err("tuples such as (a, b) are not values in this language; compare each part separately",
                            ErrorKind.UNSUPPORTED)
        if isinstance(node, ast.Subscript):
            raise self._err("indexing with [...] is not supported; declare one function per component",
                            ErrorKind.UNSUPPORTED)
        if isinstance(node, ast.Dict):
            raise self._err("a binder list [x:sort] may only be the first argument of ForAll, Exists, Count or "
                            "Distinct")
        if isinstance(node, (ast.List, ast.ListComp, ast.GeneratorExp, ast.Set)):
            raise self._err("a list is only allowed as the argument of And/Or/Distinct/Sum/is_accurate_list or "
                            "after 'in'", ErrorKind.UNSUPPORTED)
        raise self._err(f"'{ast.unparse(node)}' is not supported in this language", ErrorKind.UNSUPPORTED)

    def _name(self, name: str, env: dict[str, tuple[str, str]]) -> Expr:
        if name in env:
            return VarRef(env[name][0], name)
        if name in self.members:
            return MemberRef(self.members[name], name)
        if name in self.functions:
            decl = self.functions[name]
            if not decl.params:
                return Apply(self._value_type(decl.result), name, ())
            raise self._err(f"function '{name}' needs {len(decl.params)} argument(s): {name}({', '.join(decl.params)})",
                            ErrorKind.TYPE)
        if name in self.sorts or name in BUILTIN_SORTS:
            raise self._err(f"'{name}' is a sort, not a value; quantify over it, e.g. ForAll([x:{name}], ...)",
                            ErrorKind.TYPE)
        raise self._err(f"'{name}' is not declared; declare it as a member of an EnumSort (or a Function), or bind "
                        f"it with ForAll/Exists/Count([{name}:sort], ...)", ErrorKind.UNDECLARED)

    def _value_type(self, sort: str) -> str:
        return sort if sort in BUILTIN_SORTS else self.sorts[sort].value_type

    def _binders(self, node: ast.expr, what: str, env: dict[str, tuple[str, str]],
                 finite: bool) -> tuple[tuple[Binder, ...], dict[str, tuple[str, str]]]:
        if not isinstance(node, ast.Dict):
            raise self._err(f"{what} takes its variables as a list [x:sort, y:sort] first, e.g. "
                            f"{what}([x:sort], formula)")
        binders = []
        inner = dict(env)
        for key, value in zip(node.keys, node.values):
            assert isinstance(key, ast.Name) and isinstance(value, ast.Name)  # guaranteed by _BINDERS_RE
            sort = value.id
            if sort not in self.sorts and sort not in BUILTIN_SORTS:
                raise self._err(f"sort '{sort}' (for variable '{key.id}') is not declared; declare it with "
                                f"{sort} = EnumSort([...]) or use a declared sort", ErrorKind.UNDECLARED)
            if finite and sort == "int":
                raise self._err(f"{what} needs a finite sort, but '{key.id}' ranges over int; use a declared sort",
                                ErrorKind.TYPE)
            binders.append(Binder(key.id, sort))
            inner[key.id] = (self._value_type(sort), sort)
        return tuple(binders), inner

    def _args(self, node: ast.Call, name: str, env: dict[str, tuple[str, str]], *, allow_list: bool) -> list[Expr]:
        if node.keywords:
            raise self._err(f"{name} takes no keyword arguments")
        args = node.args
        if allow_list and len(args) == 1 and isinstance(args[0], (ast.List, ast.Tuple)):
            args = args[0].elts
        if any(isinstance(a, ast.Starred) for a in args):
            raise self._err("'*' arguments are not supported", ErrorKind.UNSUPPORTED)
        return [self._walk_inner(a, env) for a in args]

    def _call(self, node: ast.Call, env: dict[str, tuple[str, str]]) -> Expr:
        if not isinstance(node.func, ast.Name):
            raise self._err(f"'{ast.unparse(node.func)}' cannot be called; call a declared function or a built-in "
                            "such as And/Or/Not/Implies/ForAll/Exists/Count", ErrorKind.UNSUPPORTED)
        name = node.func.id
        if name in env:
            raise self._err(f"'{name}' is a bound variable, not a function", ErrorKind.TYPE)
        if name in self.functions:
            return self._apply(node, env)
        if name in ("ForAll", "Exists", "Count") or (
            name in ("Distinct", "Sum") and node.args and isinstance(node.args[0], ast.Dict)
        ):
            if len(node.args) != 2 or node.keywords:
                raise self._err(f"{name} takes two arguments: {name}([x:sort, ...], formula)", ErrorKind.TYPE)
            binders, inner = self._binders(node.args[0], name, env, finite=name in ("Count", "Distinct", "Sum"))
            body = self._walk_inner(node.args[1], inner)
            if name == "Distinct":
                return Scoped("bool", "distinct", binders, body)
            if name == "Sum":
                _require(body, "int", self._line, "the term of Sum([x:sort], term)")
                return Scoped("int", "sum", binders, body)
            if name == "Count" and body.type == "int":
                # Count of a number reads as Sum (add the values) or as counting the nonzero ones: refused.
                raise self._err(
                    "the formula of Count must be a Boolean formula, but this is an integer; to add the values "
                    "write Sum([x:sort], term), to count the nonzero ones write Count([x:sort], term != 0)",
                    ErrorKind.TYPE)
            _require(body, "bool", self._line, f"the formula of {name}")
            return Scoped("int" if name == "Count" else "bool", name.lower(), binders, body)
        if name in ("And", "Or"):
            args = self._args(node, name, env, allow_list=True)
            for a in args:
                _require(a, "bool", self._line, f"an argument of {name}")
            return Op("bool", name.lower(), tuple(args))
        if name in ("Not", "Implies", "Xor", "Iff", "If", "IfThenElse", "Abs"):
            arity = {"Not": 1, "Implies": 2, "Xor": 2, "Iff": 2, "If": 3, "IfThenElse": 3, "Abs": 1}[name]
            args = self._args(node, name, env, allow_list=False)
            if name in ("If", "IfThenElse") and len(args) == 2 and all(a.type == "bool" for a in args):
                # An 'if' without 'else' constrains nothing when its condition is false: Implies.
                return Op("bool", "implies", tuple(args))
            if len(args) != arity:
                hint = {
                    "Implies": "; for several conditions use Implies(And(c1, c2), conclusion)",
                    "If": "; If(c, a, b) picks a value, and without b only a formula a has a reading "
                          "(Implies(c, a))",
                    "IfThenElse": "; IfThenElse(c, a, b) picks a value, and without b only a formula a has a "
                                  "reading (Implies(c, a))",
                    "Xor": "; for 'exactly one of' use Count or Sum(If(c, 1, 0), ...) == 1",
                    "Not": "; to negate several formulas use Not(And(...)) or Not(Or(...))",
                }.get(name, "")
                raise self._err(f"{name} takes {arity} argument(s), got {len(args)}{hint}", ErrorKind.TYPE)
            if name in ("If", "IfThenElse"):
                return self._ite(*args)
            want = "int" if name == "Abs" else "bool"
            for a in args:
                _require(a, want, self._line, f"an argument of {name}")
            if name == "Iff":
                return Op("bool", "eq", tuple(args))
            return Op(want, name.lower(), tuple(args))
        if name in ("Sum", "Distinct"):
            args = self._args(node, name, env, allow_list=True)
            if name == "Sum":
                for a in args:
                    _require(a, "int", self._line, "an argument of Sum (count conditions with Count or If(c, 1, 0))")
                return Op("int", "sum", tuple(args))
            if args and any(a.type != args[0].type for a in args):
                raise self._err("Distinct needs arguments of one sort", ErrorKind.TYPE)
            return Op("bool", "distinct", tuple(args))
        if name in _UNSUPPORTED_CALLS:
            raise self._err(f"'{name}' is not supported; {_UNSUPPORTED_CALLS[name]}", ErrorKind.UNSUPPORTED)
        if name in OPTION_FUNCTIONS:
            raise self._err(f"{name}(...) may only be used as a whole option line in '# Options'", ErrorKind.SYNTAX)
        if name in self.sorts or name in self.members:
            raise self._err(f"'{name}' is a {'sort' if name in self.sorts else 'sort member'}, not a function",
                            ErrorKind.TYPE)
        declared = ", ".join(self.functions) or "none"
        raise self._err(
            f"function '{name}' is not declared (declared functions: {declared}); declare it with "
            f"{name} = Function([sortA, ...] -> [sortB]) and constrain it, or write the condition with "
            "And/Or/Not and comparisons", ErrorKind.UNDECLARED)

    def _apply(self, node: ast.Call, env: dict[str, tuple[str, str]]) -> Expr:
        decl = self.functions[node.func.id]  # type: ignore[union-attr]
        args = self._args(node, decl.name, env, allow_list=False)
        signature = f"{decl.name}({', '.join(decl.params)})"
        if len(args) != len(decl.params):
            raise self._err(f"function '{decl.name}' takes {len(decl.params)} argument(s) ({signature}), "
                            f"got {len(args)}", ErrorKind.TYPE)
        for i, (arg, sort) in enumerate(zip(args, decl.params), start=1):
            want = self._value_type(sort)
            if arg.type != want:
                raise self._err(f"argument {i} of {signature} must be {_type_phrase(want)} (sort '{sort}'), but "
                                f"{ast.unparse(node.args[i - 1])} is {_type_phrase(arg.type)}", ErrorKind.TYPE)
            if isinstance(arg, Lit) and sort in self.sorts and arg.value not in self.sorts[sort].members:
                raise self._err(f"argument {i} of {signature} is {arg.value}, which is not a member of sort "
                                f"'{sort}' {list(self.sorts[sort].members)}", ErrorKind.TYPE)
            if isinstance(arg, MemberRef) and sort in self.sorts and arg.name not in self.sorts[sort].members:
                raise self._err(f"argument {i} of {signature} is {arg.name}, which is not a member of sort "
                                f"'{sort}' {list(self.sorts[sort].members)}", ErrorKind.TYPE)
        return Apply(self._value_type(decl.result), decl.name, tuple(args))

    def _ite(self, cond: Expr, then: Expr, other: Expr) -> Expr:
        _require(cond, "bool", self._line, "the condition of If")
        if then.type != other.type:
            raise self._err(f"the two branches of If must have one type, got {_type_phrase(then.type)} and "
                            f"{_type_phrase(other.type)}", ErrorKind.TYPE)
        return Op(then.type, "ite", (cond, then, other))

    def _compare(self, node: ast.Compare, env: dict[str, tuple[str, str]]) -> Expr:
        parts: list[Expr] = []
        none_test = self._none_test(node, env)
        if none_test is not None:
            return none_test
        left = self._walk_inner(node.left, env)
        if any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
            if len(node.ops) > 1:
                raise self._err("'in' cannot be chained with other comparisons; combine them with And(...)")
            choices = self._membership(node.comparators[0], env)
            for c in choices:
                self._same_type(left, c, "in")
            test: Expr = Op("bool", "or", tuple(Op("bool", "eq", (left, c)) for c in choices))
            return Op("bool", "not", (test,)) if isinstance(node.ops[0], ast.NotIn) else test
        for op_node, right_node in zip(node.ops, node.comparators):
            op = _CMP_OPS.get(type(op_node))
            if op is None:
                raise self._err("use == / != to compare values ('is' is not supported)", ErrorKind.UNSUPPORTED)
            right = self._walk_inner(right_node, env)
            a, b = self._positions(left, right)
            if a.type != left.type or b.type != right.type:
                parts.append(Op("bool", op, (a, b)))
                left = right
                continue
            self._same_type(left, right, _CMP_TEXT[op])
            if op in ("lt", "le", "gt", "ge") and left.type in self.sorts:
                # Names are ordered as the declaration lists them (the only order an EnumSort has).
                parts.append(Op("bool", op, (self._position(left), self._position(right))))
                left = right
                continue
            if op in ("lt", "le", "gt", "ge") and left.type != "int" and not left.type.startswith("pos:"):
                sort = left.type
                raise self._err(
                    f"'{_CMP_TEXT[op]}' orders numbers, but {ast.unparse(node)} compares {_type_phrase(sort)}"
                    + (f"; sort '{sort}' has names, not numbers: declare it with numbers (e.g. EnumSort([1, 2, 3]))"
                       " or give it a numeric position function" if sort in self.sorts else ""),
                    ErrorKind.TYPE)
            parts.append(Op("bool", op, (left, right)))
            left = right
        return parts[0] if len(parts) == 1 else Op("bool", "and", tuple(parts))

    def _whole_range(self, node: ast.expr, env: dict[str, tuple[str, str]]) -> Expr | None:
        """``lo <= t <= hi`` / ``And(lo <= t, t <= hi)`` with ``t`` of a sort of n names and
        ``hi - lo + 1 == n``: the program numbers the members from ``lo``, and under that numbering
        the bounds hold for every member, so the formula is ``True``. None for anything else."""
        bounds: list[tuple[str, str, int]] = []  # (term source, "lo"/"hi", bound)
        if isinstance(node, ast.Compare) and len(node.ops) == 2:
            parts = [ast.Compare(node.left, [node.ops[0]], [node.comparators[0]]),
                     ast.Compare(node.comparators[0], [node.ops[1]], [node.comparators[1]])]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "And"
              and "And" not in env and len(node.args) == 2 and not node.keywords):
            parts = list(node.args)
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) and len(node.values) == 2:
            parts = list(node.values)
        else:
            return None
        term_node: ast.expr | None = None
        for part in parts:
            if not (isinstance(part, ast.Compare) and len(part.ops) == 1):
                return None
            left, op, right = part.left, part.ops[0], part.comparators[0]
            if isinstance(right, ast.Constant) and type(right.value) is int:
                term, bound, flipped = left, right.value, False
            elif isinstance(left, ast.Constant) and type(left.value) is int:
                term, bound, flipped = right, left.value, True
            else:
                return None
            # lo <= t, t >= lo: a lower bound; t <= hi, hi >= t: an upper bound (only <= / >=).
            if isinstance(op, ast.LtE):
                side = "lo" if flipped else "hi"
            elif isinstance(op, ast.GtE):
                side = "hi" if flipped else "lo"
            else:
                return None
            if term_node is not None and ast.dump(term) != ast.dump(term_node):
                return None
            term_node = term
            bounds.append((ast.dump(term), side, bound))
        if term_node is None or sorted(b[1] for b in bounds) != ["hi", "lo"]:
            return None
        if any(isinstance(n, ast.Constant) and n.value is None for n in ast.walk(term_node)):
            return None
        typed = self._walk_inner(term_node, env)  # reports undeclared names / type errors in the term
        sort = self.sorts.get(typed.type)
        if sort is None or sort.numeric or typed.type not in self.sorts:
            return None
        lo = next(b for _, side, b in bounds if side == "lo")
        hi = next(b for _, side, b in bounds if side == "hi")
        members = [m for m in self.sorts.values() if m.base == typed.type and m.parent is None]
        size = len(members[0].members) if members else len(sort.members)
        if hi - lo + 1 != size:
            return None
        return Lit("bool", True)

    def _none_test(self, node: ast.Compare, env: dict[str, tuple[str, str]]) -> Expr | None:
        """``e != None`` is True and ``e == None`` False: every term has a value (functions are total)."""
        sides = [node.left, *node.comparators]
        if not any(isinstance(n, ast.Constant) and n.value is None for n in sides):
            return None
        if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            raise self._err("None can only be tested with == or != (f(x) != None is always true)", ErrorKind.TYPE)
        other = node.comparators[0] if isinstance(node.left, ast.Constant) and node.left.value is None else node.left
        if isinstance(other, ast.Constant) and other.value is None:
            raise self._err("'None == None' has no reading here", ErrorKind.TYPE)
        self._walk_inner(other, env)  # still report undeclared names and type errors on the other side
        return Lit("bool", isinstance(node.ops[0], ast.NotEq))

    def _position(self, e: Expr) -> Expr:
        """The declaration position of a name-sort value (``e`` itself when already a position)."""
        if e.type in self.sorts:
            return Op(f"pos:{e.type}", "pos", (e,))
        return e

    def _positions(self, left: Expr, right: Expr) -> tuple[Expr, Expr]:
        """Compare a member with a moved member (``f(a) == f(b) + 1``) as positions in their sort."""
        types = {left.type, right.type}
        for t in types:
            if t.startswith("pos:") and types == {t, t[4:]}:
                return self._position(left), self._position(right)
        return left, right

    def _position_arith(self, op: str, left: Expr, right: Expr) -> Expr | None:
        """``member + k`` / ``member - k`` move by k places in declaration order; ``member - member`` is a
        difference of places. None for any other mix (reported by the caller)."""
        def sort_of(e: Expr) -> str | None:
            return e.type[4:] if e.type.startswith("pos:") else e.type if e.type in self.sorts else None

        ls, rs = sort_of(left), sort_of(right)
        if op == "add" and ls and right.type == "int":
            return Op(f"pos:{ls}", "add", (self._position(left), right))
        if op == "add" and rs and left.type == "int":
            return Op(f"pos:{rs}", "add", (left, self._position(right)))
        if op == "sub" and ls and right.type == "int":
            return Op(f"pos:{ls}", "sub", (self._position(left), right))
        if op == "sub" and ls and ls == rs:
            return Op("int", "sub", (self._position(left), self._position(right)))
        return None

    def _membership(self, node: ast.expr, env: dict[str, tuple[str, str]]) -> list[Expr]:
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self._walk_inner(e, env) for e in node.elts]
        if isinstance(node, ast.Name) and node.id in self.sorts and node.id not in env:
            sort = self.sorts[node.id]
            if sort.numeric:
                return [Lit("int", v) for v in sort.members]  # type: ignore[arg-type]
            return [MemberRef(sort.base, str(m)) for m in sort.members]
        raise self._err("'in' needs a list [a, b, ...] or a sort name on its right", ErrorKind.TYPE)

    def _same_type(self, left: Expr, right: Expr, op: str) -> None:
        if left.type != right.type:
            raise self._err(f"'{op}' compares {_type_phrase(left.type)} with {_type_phrase(right.type)}; both sides "
                            "must have the same sort", ErrorKind.TYPE)


def _check_infix_mod(tree: ast.AST, text: str, lineno: int) -> None:
    """Refuse ``a + b mod c``: ``mod`` written as a word has no agreed precedence against + - *."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.BinOp, ast.UnaryOp)):
            continue
        children = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.operand]
        for child in children:
            if not (isinstance(child, ast.BinOp) and child.end_col_offset is not None):
                continue
            if _neighbour(text, child.end_col_offset, 1) == ")" and _neighbour(text, child.col_offset - 1, -1) == "(":
                continue
            if isinstance(child.op, ast.Mod) or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)):
                raise ProgramError(
                    "'mod' next to another arithmetic operator can be read two ways; add parentheses, e.g. "
                    "(a + b) % c or a + (b % c)", lineno)


def _neighbour(text: str, i: int, step: int) -> str:
    """The first non-blank character from ``text[i]`` on in direction ``step`` ('' at either end)."""
    while 0 <= i < len(text) and text[i].isspace():
        i += step
    return text[i] if 0 <= i < len(text) else ""


def _syntax_message(code: str, exc: SyntaxError) -> str:
    col = f" at column {exc.offset}" if exc.offset else ""
    hint = ""
    if "assignment" in exc.msg or re.search(r"(?<![=<>!])=(?!=)", code):
        hint = "; compare with '==', not '='"
    elif re.search(r"\)\s+(Or|And|Implies|Xor)\b|\b\w+\s+(Or|And)\s+\w", code):
        hint = "; And/Or/Implies are functions: write Or(a, b), not 'a Or b'"
    elif re.search(r"\bmod\b", code):
        hint = "; write the remainder as a % b, not 'a mod b'"
    elif re.search(r"\bif\b|\bthen\b", code) and "If(" not in code:
        hint = "; write a condition as Implies(cond, consequence) or If(cond, a, b)"
    elif code.count("(") != code.count(")"):
        hint = f"; the parentheses are unbalanced ({code.count('(')} '(' vs {code.count(')')} ')')"
    elif re.search(r"\w'", code):
        hint = "; names cannot contain quotes"
    return f"cannot parse this formula{col}: {exc.msg}{hint}"


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
    from symbolkg.solvers.certificates import constraint as cc

    ctx = compiler.ctx
    solver = z3.Solver(ctx=ctx)
    solver.set("max_memory", max(16, int(limits.memory_mb * _Z3_MEMORY_SHARE)))
    guards: dict[int, z3.BoolRef] = {}
    try:
        for _, formula in compiler.range_constraints():
            solver.add(formula)
        for c in program.constraints:
            guard = z3.Bool(f"cert_line{c.line}", ctx)
            guards[c.line] = guard
            solver.add(z3.Implies(guard, compiler.build(c.expr, {})))
        bounding = cc.dsl_bounding_lines(text)
        tables = [(f, list(itertools.product(*[compiler.domain(p) for p in f.params])))
                  for f in program.functions.values() if "int" not in f.params]

        def model_json(model: z3.ModelRef) -> dict:
            out: dict = {}
            for f, cells in tables:
                func = compiler.z3_funcs[f.name]
                values = []
                for args in cells:
                    v = model.eval(func(*args) if args else func(), model_completion=True)
                    values.append(value_json(f, v))
                out[f.name] = values

            def lookup(name: str, args: tuple) -> object:
                z3_args = [z3.BoolVal(a, ctx) if isinstance(a, bool) else z3.IntVal(a, ctx) if isinstance(a, int)
                           else compiler.z3_members[a] for a in args]
                return value_json(program.functions[name], model.eval(compiler.z3_funcs[name](*z3_args),
                                                                      model_completion=True))

            outside = cc.dsl_outside_cells(text, out, lookup)
            if outside:
                out[cc.OUTSIDE] = outside
            return out

        def value_json(f: FunctionDecl, v: z3.ExprRef) -> object:
            return z3.is_true(v) if f.result == "bool" else v.as_long() if z3.is_int_value(v) else str(v)

        def run(query: z3.BoolRef, lines: list[int]) -> tuple[bool, z3.ModelRef | None, list[int]]:
            """(satisfiable, its model, else its core) of the guarded lines ``lines`` and ``query``."""
            remaining_ms = int((deadline - time.monotonic()) * 1000)
            if remaining_ms <= 0:
                raise _Timeout()
            solver.set("timeout", remaining_ms)
            solver.push()
            try:
                solver.add(query)
                result = solver.check(*[guards[line] for line in lines])
                if result == z3.unknown:
                    raise _Timeout()
                if result == z3.sat:
                    return True, solver.model(), []
                return False, None, sorted({int(str(t)[len("cert_line"):]) for t in solver.unsat_core()})
            finally:
                solver.pop()

        def fact(query_name: str, query: z3.BoolRef, index: int | None = None) -> dict:
            entry: dict = {"query": query_name}
            if index is not None:
                entry["index"] = index
            sat, model, core = run(query, list(guards))
            if sat:
                entry.update(sat=True, model=model_json(model))
                return entry
            # Lines that bound integer functions stay on (the checker's finite search needs them); the rest is
            # minimised by deletion.
            core = cc.minimise([line for line in core if line not in bounding],
                               lambda lines: not run(query, lines + bounding)[0])
            entry.update(sat=False, core=core, minimal=True)
            if bounding:
                entry["bounds"] = bounding
            return entry

        options = []
        chosen_model: dict | None = None
        for option in program.options:
            check = option.check.inner if option.check.kind == "is_exception" else option.check
            negated = option.check.kind == "is_exception"
            exprs = [compiler.build(e, {}) for e in check.exprs]
            if check.kind in ("is_sat", "is_unsat"):
                facts = [fact("option", exprs[0])]
            elif check.kind == "is_valid":
                facts = [fact("negation", z3.Not(exprs[0]))]
            else:
                facts = [fact("none", z3.Not(z3.Or(exprs)))]
                facts += [fact("item", x, i) for i, x in enumerate(exprs)]
            if option.letter == answer:
                formula = exprs[0] if len(exprs) == 1 else z3.Or(exprs)
                wanted = formula if cc.polarity(check.kind, negated) else z3.Not(formula)
                _, model, _ = run(wanted, list(guards))
                if model is None:
                    return None  # cannot happen: the option passed against satisfiable constraints
                chosen_model = model_json(model)
            options.append({"letter": option.letter, "line": option.line, "text": cc.dsl_line_text(text, option.line),
                            "check": option.check.describe(), "passes": verdicts[option.letter], "facts": facts})
    except (_Timeout, _TooLarge, _SolverGaveUp, z3.Z3Exception, cc.Unsupported, cc.CertificateError, RecursionError):
        return None  # no certificate (the row is then unverifiable); the answer stands
    cert = {"kind": "constraint", "version": cc.VERSION, "producer": BACKEND, "language": LANGUAGE, "answer": answer,
            "constraints": [{"id": c.line, "text": cc.dsl_line_text(text, c.line)} for c in program.constraints],
            "model": chosen_model, "options": options,
            "signatures": {f.name: [[m if isinstance(m, (int, bool)) else str(m) for m in
                                     ((False, True) if p == "bool" else program.sorts[p].members)] for p in f.params]
                           for f, _ in tables}}
    return cert if len(json.dumps(cert)) <= cc.MAX_CERTIFICATE_CHARS else None
