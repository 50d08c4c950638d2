"""Logic-LM's SAT/SMT option DSL for AR-LSAT (language ``"logiclm-smt"``): the language and its parser.

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
    ``is_unsat`` (:data:`symbolkg.solvers.smt.lsat_formula_syntax.CHECK_ALIASES`).
  - A name that a constraint binds nowhere (no declaration, no binder anywhere on its
    line) and writes as an argument of declared functions where one sort is expected:
    a constant of that sort that the program does not name. ``And(assigned(Smith, c),
    assigned(Taj, c))`` (``c`` an argument of sort ``courses``) reads as
    ``Exists([c:courses], And(assigned(Smith, c), assigned(Taj, c)))``, what Z3 does
    with a free constant; several such names are bound by one ``Exists`` in the order
    of their first use. Each constraint line is read on its own (a name free on two
    lines is two constants). The reading heads the outcome's ``proof``
    (``reading: line N: ...``), so the row records how its program was read.

  Still refused, each with a message saying how to fix it, because they have no
  reading or several: a variable (``_``, ``p``) used outside the quantifier that
  binds it; a name bound nowhere whose sort cannot be told from its uses (none of
  them a function argument, as in ``f(x) != null``, or arguments of two sorts), ``_``
  bound nowhere (a wildcard reads "anyone", under ``Not`` "no one"; a constant
  "someone"), a name bound nowhere that spells a declared member in
  another case (a misspelled member, or a constant?), and a name bound nowhere in an option line
  (``is_valid`` of "some c" is "for some c, in every model" or "in every model, for
  some c"); ``Count`` over an integer term (``Sum`` of the values, or how many are
  nonzero?); other option functions (``is_min``, ``is_max``: of what, over which
  options?; ``is_equivalent``, ``is_determined``: under which constraints?) and
  option lines that are bare formulas (``is_sat`` or ``is_valid``?); ``Implies`` with more than
  two arguments; sorts mixing numbers and names; undeclared sorts;
  unbalanced parentheses (where the missing one goes is a guess).
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
typed intermediate form (:class:`Program`; formulas: :mod:`symbolkg.solvers.smt.lsat_formula_syntax`), which
:func:`symbolkg.solvers.smt.lsat_engine.solve` compiles into Z3 terms in a fresh ``z3.Context``.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from symbolkg.solvers.outcomes import ErrorKind, ProgramError
from symbolkg.solvers.smt.lsat_formula_syntax import (
    BUILTIN_SORTS,
    IDENT,
    RESERVED,
    Check,
    Expr,
    FunctionDecl,
    Scope,
    Sort,
)

#: Longest program text parse() reads. GPT-4's AR-LSAT programs are under 3,000 characters; the parser
#: is linear but slow on huge texts (~30 KB/s on a 620 KB fuzz mutant), so far larger input is refused
#: at once instead of taking tens of seconds of a worker.
MAX_PROGRAM_CHARS = 100_000

LANGUAGE = "logiclm-smt"
#: Option letters, in positional order.
LETTERS = "ABCDEFG"


@dataclass(frozen=True)
class Constraint:
    """One asserted formula and the program line it came from."""

    line: int
    expr: Expr


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
        readings: how the parser read what the program leaves implicit (a name a constraint binds
            nowhere, read as an existential constant), one sentence each, in line order; the solver
            records them in the outcome's proof.
    """

    sorts: dict[str, Sort]
    functions: dict[str, FunctionDecl]
    constraints: tuple[Constraint, ...]
    question: str | None
    options: tuple[Option, ...]
    readings: tuple[str, ...] = ()


# ------------------------------------------------------------------- parsing

_HEADERS = {"declarations": "# Declarations", "constraints": "# Constraints", "options": "# Options"}
_HEADER_RE = re.compile(r"^#\s*(declarations|constraints|options)\s*:?\s*$", re.IGNORECASE)
_SORT_DECL_RE = re.compile(rf"^({IDENT})\s*=\s*(EnumSort|IntSort)\s*\(\s*\[(.*)\]\s*\)$")
_FUNC_DECL_RE = re.compile(rf"^({IDENT})\s*=\s*Function\s*\(\s*\[(.*?)\]\s*->\s*\[(.*)\]\s*\)$")
_DECL_LIKE_RE = re.compile(rf"^({IDENT})\s*=(?![=>])\s*(.*)$")
_LETTER_RE = re.compile(r"^\s*\(?\s*([A-G])\s*\)")


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
        raise ProgramError(
            f"the program has {len(text):,} characters; the limit is {MAX_PROGRAM_CHARS:,}", None, ErrorKind.UNSUPPORTED
        )
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

    scope = Scope(sorts, functions, members)
    constraints: list[Constraint] = []
    readings: list[tuple[int, str]] = []
    for lineno, code in pending + sections["constraints"]:
        try:
            expr, reading = scope.constraint(code, lineno)
            constraints.append(Constraint(lineno, expr))
            if reading is not None:
                readings.append((lineno, reading))
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
    return Program(
        sorts, functions, tuple(constraints), question, tuple(options), tuple(r for _, r in sorted(readings))
    )


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
                    "# Declarations, # Constraints, # Options",
                    lineno,
                )
            sections[name] = []
            current = name
            continue
        if current is None:
            raise ProgramError(
                "text before the '# Declarations' header; a program starts with '# Declarations', then "
                "'# Constraints', then '# Options'",
                lineno,
            )
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
                "'# Constraints' and '# Options' sections, in that order",
                None,
            )
    return sections


def _strip_hash(code: str) -> str:
    # '#' starts a comment (string literals do not exist in the DSL, so no quoting to respect).
    return code.split("#", 1)[0].rstrip()


def _check_option_letters(options: list[Option], sections: dict[str, list[tuple[int, str]]]) -> None:
    if not options:
        line = sections["options"][0][0] if sections["options"] else None
        raise ProgramError(
            "the # Options section has no option lines; write one check per answer option, e.g. "
            "'is_valid(<formula>) ::: (A)'",
            line,
        )
    seen: dict[str, int] = {}
    for option in options:
        if option.letter == "?":
            raise ProgramError(f"too many options (at most {len(LETTERS)})", option.line)
        if option.letter in seen:
            raise ProgramError(
                f"option ({option.letter}) is given twice (lines {seen[option.letter]} and {option.line}); "
                "write exactly one check per answer option",
                option.line,
            )
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
            "'name = Function([sortA, sortB] -> [sortC])' (sortC may be int or bool)",
            lineno,
        )
    return False


def _check_new_name(lineno: int, name: str, what: str, sorts: dict, functions: dict, members: dict) -> None:
    if keyword.iskeyword(name) or name in RESERVED:
        raise ProgramError(f"'{name}' is a reserved word and cannot name a {what}; rename it", lineno)
    for table, kind in ((sorts, "sort"), (functions, "function"), (members, "sort member")):
        if name in table:
            raise ProgramError(
                f"'{name}' is already declared as a {kind}; use a different name for this {what}", lineno
            )


def _declare_sort(
    lineno: int,
    name: str,
    form: str,
    body: str,
    sorts: dict[str, Sort],
    functions: dict[str, FunctionDecl],
    members: dict[str, str],
) -> None:
    _check_new_name(lineno, name, "sort", sorts, functions, members)
    raw = [x.strip() for x in re.findall(r'"[^"]*"|\'[^\']*\'|[^,]+', body)] if body.strip() else []
    # A quoted member ("Rhino Rock") is a name, written quoted in expressions too.
    quoted = [len(x) >= 2 and x[0] == x[-1] and x[0] in "\"'" for x in raw]
    items = [x[1:-1].strip() if q else x for x, q in zip(raw, quoted, strict=True)]
    if len(raw) != body.count(",") + 1 - sum(x.count(",") for x, q in zip(raw, quoted, strict=True) if q):
        items.append("")  # an empty item between two commas
    if not items or any(not x for x in items):
        raise ProgramError(
            f"sort '{name}' needs a non-empty list of members, e.g. {name} = EnumSort([a, b, c])", lineno
        )
    if len(set(items)) != len(items):
        dup = next(x for x in items if items.count(x) > 1)
        raise ProgramError(f"member '{dup}' is listed twice in sort '{name}'", lineno)
    numbers = [not q and re.fullmatch(r"-?\d+", x) is not None for x, q in zip(items, quoted + [False], strict=False)]
    if all(numbers):
        sorts[name] = Sort(name, tuple(int(x) for x in items), True, None, lineno)
        return
    bad = [
        x
        for x, is_num, q in zip(items, numbers, quoted + [False], strict=False)
        if not is_num and not q and not re.fullmatch(IDENT, x)
    ]
    if any(numbers) or bad or form == "IntSort":
        example = bad[0] if bad else next(x for x, n in zip(items, numbers, strict=True) if n == (form != "IntSort"))
        raise ProgramError(
            f"sort '{name}' has member '{example}': members must be all integers (a numeric sort) or all names "
            "(letters, digits, '_', not starting with a digit)",
            lineno,
            ErrorKind.TYPE,
        )
    known = [x for x in items if x in members]
    if known:
        owners = {members[x] for x in known}
        if len(known) == len(items) and len(owners) == 1:
            # Every member belongs to one earlier sort: a subset of it (Logic-LM's "list").
            sorts[name] = Sort(name, tuple(items), False, owners.pop(), lineno)
            return
        raise ProgramError(
            f"member '{known[0]}' of sort '{name}' is already a member of sort '{members[known[0]]}'; a name belongs "
            "to one sort (a sort whose members all come from one earlier sort is a subset of it)",
            lineno,
            ErrorKind.TYPE,
        )
    for x in items:
        _check_new_name(lineno, x, "sort member", sorts, functions, members)
        members[x] = name
    sorts[name] = Sort(name, tuple(items), False, None, lineno)


def _declare_function(
    lineno: int,
    name: str,
    params: str,
    result: str,
    sorts: dict[str, Sort],
    functions: dict[str, FunctionDecl],
    members: dict[str, str],
) -> None:
    _check_new_name(lineno, name, "function", sorts, functions, members)
    param_names = [x.strip() for x in params.split(",")] if params.strip() else []
    result_names = [x.strip() for x in result.split(",")]
    if "EnumSort" in result or "EnumSort" in params:
        raise ProgramError(
            f"declare the sort of '{name}' on its own line first (e.g. kinds = EnumSort([a, b])) and use its name "
            "in the Function declaration",
            lineno,
        )
    if len(result_names) != 1 or not result_names[0]:
        raise ProgramError(
            f"function '{name}' must return exactly one sort, got [{result}]; declare one function per result, e.g. "
            f"{name}_a = Function([...] -> [sortA]) and {name}_b = Function([...] -> [sortB])",
            lineno,
            ErrorKind.TYPE,
        )
    for sort in param_names + result_names:
        if not sort:
            raise ProgramError(f"empty sort name in the declaration of '{name}'", lineno)
        if sort not in sorts and sort not in BUILTIN_SORTS:
            raise ProgramError(
                f"sort '{sort}' used by function '{name}' is not declared; declare it first, e.g. "
                f"{sort} = EnumSort([...]), or use int / bool",
                lineno,
                ErrorKind.UNDECLARED,
            )
    functions[name] = FunctionDecl(name, tuple(param_names), result_names[0], lineno)
