"""Logic-LM's constraint language (LogicalDeduction) on Z3 (language ``logiclm-csp``).

A program has four sections; text after ``:::`` on a line is a comment::

    Domain:
    1: leftmost
    5: rightmost
    Variables:
    green_book [IN] [1, 2, 3, 4, 5]
    blue_book [IN] [1, 2, 3, 4, 5]
    Constraints:
    blue_book > green_book ::: The blue book is to the right of the green book.
    AllDifferentConstraint([green_book, blue_book]) ::: All books have different positions.
    Query:
    A) green_book == 2 ::: The green book is the second from the left.
    B) blue_book == 2 ::: The blue book is the second from the left.

* ``Domain:`` lines are informational (what the numbers mean) and optional.
* ``Variables:`` declares ``name [IN] domain``; a domain is a list (or tuple or
  set) of integer or string literals, or ``range(a, b[, step])``.
* ``Constraints:`` and the option expressions use Python expression syntax,
  restricted to: integer and string literals, variables, ``+ - *``, ``//`` and
  ``%`` by a positive integer literal, ``abs``/``min``/``max``, comparisons
  (chains allowed), ``in``/``not in`` a literal list, ``and``/``or``/``not``,
  and ``AllDifferentConstraint([...])``. As in Python, ``True``/``False`` count as
  1/0 in arithmetic, and strings compare lexicographically.
* ``Query:`` has one option per line, ``X) expression``.

The text is parsed with :func:`ast.parse` and the tree is checked against that
whitelist and translated to Z3 integer terms; nothing is evaluated by Python.

Spellings other models write (each has exactly one reading, and reads as the
GPT-4 spelling beside it; anything with a second reading stays refused):

* Layout: blank lines, trailing blanks, CRLF line ends; Markdown section headers
  ``### Query``, ``## Constraints:``, ``**Constraints:**``, ``**Query**`` (a
  ``#`` header has nothing after the name and names a section not opened yet,
  else it is a comment line, as before; so ``# Constraints`` then
  ``Constraints:`` opens the section once); code-fence lines
  (three backticks, optionally a language name) are skipped; an item wrapped in
  one pair of backticks is read without them.
* Comments: ``# text`` after the code of a line (outside quotes) is a comment like
  ``::: text`` (and is the line's comment when it has no ``:::``). ``//`` is
  never a comment: it is integer division.
* List markers before an item: ``* ``, ``• ``, ``+ ``, ``1. ``, ``1) `` anywhere
  (none starts a Python expression, and ``+x`` equals ``x``), and ``- ``. A
  ``- `` (dash, blank) before a constraint could also be a minus sign
  (``- a > b`` is ``(-a) > b``): it is read as a list marker when every item of the
  Constraints section starts with a list marker (a Markdown list), and refused
  otherwise; write a minus without the blank (``-a``). Before a declaration, a
  note or an option ``- `` can only be a marker. In ``Domain:`` numbered markers
  are not stripped (``1: leftmost`` is a note).
* Variables: ``name [IN] domain`` may also be written ``name IN domain``,
  ``name in domain``, ``name ∈ domain`` or ``name: domain``. Ranges with both
  ends: ``[1..5]``, ``[1...5]``, ``1..5``, ``{1..5}``, ``[1, ..., 5]``,
  ``[1, 2, ..., 5]`` (the listed values fix the step; the end must be on it) are
  the integers from the first to the last end, both included (``[5..1]`` is the
  same set). A range in round brackets (``(1..5)``, an open interval in
  mathematics) is refused.
* ``AllDifferentConstraint`` may be spelled in any case, with or without
  underscores, as ``AllDifferentConstraint``, ``AllDifferent``, ``AllDistinct``,
  ``AllDiff`` or ``Distinct`` (``all_different(...)``, ``alldifferent([...])``),
  with the variables in one list or as separate arguments.
* Comparisons: ``≠`` and ``<>`` for ``!=``, ``≤`` for ``<=``, ``≥`` for ``>=``, and a
  lone ``=`` for ``==``: in a constraint or option nothing is assigned, so ``x = 2``
  can only compare (``f(x=2)``, a keyword argument, stays refused).
* Connectives: ``&&`` for ``and``, ``||`` for ``or`` (C gives them the precedence
  Python gives ``and``/``or``: below the comparisons, ``&&`` above ``||``).
* Negation: ``!(condition)`` and ``¬(condition)`` for ``not (condition)`` when the
  parenthesised condition is followed by the end, ``)``, ``,``, ``and``/``&&`` or
  ``or``/``||``.
  ``!x == 2`` is refused: in C ``!`` binds tighter than ``==`` (``(!x) == 2``),
  in Python ``not`` looser (``not (x == 2)``).
* Options: ``A) expr`` may also be written ``(A) expr``, ``A. expr``, ``A: expr``,
  ``Option A: expr``, ``Option A) expr`` or ``Option (A): expr``; a line of the
  ``Query:`` section with no option letter is refused.

Refused, with a hint naming the spelling to use: ``&`` / ``|`` (Python binds them
tighter than ``==``), ``=>``, ``=<``, a sentence in place of a constraint.

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
  ``error_kind="no_answer"``; the message names a small set of conflicting
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

import ast
import difflib
import enum
import itertools
import json
import keyword
import re
import time
from dataclasses import dataclass

import z3

from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch
from symbolkg.solvers.smt.smtlib import Z3Watchdog

BACKEND = "z3"

_HEADER = re.compile(r"^(?P<name>domain|variables|constraints|query)\s*:\s*(?P<rest>.*)$", re.IGNORECASE)
_VARIABLE = re.compile(r"^(?P<name>.*?)\s*\[\s*in\s*\]\s*(?P<domain>.*)$", re.IGNORECASE)
#: ``name in domain``, ``name IN domain``, ``name ∈ domain``, ``name: domain``.
_VARIABLE_OTHER = re.compile(r"^(?P<name>.*?)(?:\s+in\b|\s*∈|\s*:)\s*(?P<domain>.*)$", re.IGNORECASE)
#: ``A) e``, ``(A) e``, ``A. e``, ``A: e``, ``Option A: e``, ``Option A) e``, ``Option (A): e``.
_OPTION = re.compile(r"^(?:option\s+)?(?:\(\s*(?P<boxed>[A-Za-z])\s*\)\s*:?|(?P<letter>[A-Za-z])\s*(?:\)|:|\.(?=\s)))"
                     r"\s*(?P<expr>.*)$", re.IGNORECASE)
_ALL_DIFFERENT_NAMES = ("AllDifferentConstraint", "AllDifferent", "Distinct")
#: Other spellings of AllDifferentConstraint, compared in lower case without underscores.
_ALL_DIFFERENT_SPELLINGS = frozenset({"alldifferentconstraint", "alldifferent", "alldistinct", "alldiff", "distinct"})
_FUNCTIONS = ("abs", "min", "max") + _ALL_DIFFERENT_NAMES
#: Programs longer than this are refused (an LLM-written program is a few kilobytes).
MAX_PROGRAM_CHARS = 1_000_000


# --------------------------------------------------------------------------- typed program


class Type(str, enum.Enum):
    """Type of an expression: Python ints, strings and bools."""

    INT = "int"
    STR = "str"
    BOOL = "bool"


@dataclass(frozen=True)
class IntLit:
    value: int


@dataclass(frozen=True)
class StrLit:
    value: str


@dataclass(frozen=True)
class BoolLit:
    value: bool


@dataclass(frozen=True)
class VarRef:
    name: str


@dataclass(frozen=True)
class Neg:
    operand: Expr


@dataclass(frozen=True)
class Arith:
    """``left op right`` with op in ``+ - * // %`` (``//``, ``%`` by a positive literal only)."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Call:
    """``abs(x)``, ``min(x, y, ...)``, ``max(x, y, ...)``."""

    func: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Compare:
    """A comparison chain ``operands[0] ops[0] operands[1] ops[1] ...`` (as in Python)."""

    ops: tuple[str, ...]
    operands: tuple[Expr, ...]


@dataclass(frozen=True)
class Member:
    """``element in [choices]`` (``negated`` for ``not in``)."""

    element: Expr
    choices: tuple[Expr, ...]
    negated: bool


@dataclass(frozen=True)
class BoolOp:
    op: str  # "and" | "or"
    operands: tuple[Expr, ...]


@dataclass(frozen=True)
class Not:
    operand: Expr


@dataclass(frozen=True)
class AllDifferent:
    operands: tuple[Expr, ...]


Expr = IntLit | StrLit | BoolLit | VarRef | Neg | Arith | Call | Compare | Member | BoolOp | Not | AllDifferent


#: The values of a variable: integers, strings, or an integer range (kept unexpanded).
Domain = tuple[int, ...] | tuple[str, ...] | range


@dataclass(frozen=True)
class Variable:
    """A declared variable, its domain (all ints or all strings) and its line."""

    name: str
    domain: Domain
    type: Type
    line: int


@dataclass(frozen=True)
class Constraint:
    """One constraint line: the expression, its source text and ``:::`` comment."""

    expr: Expr
    text: str
    comment: str
    line: int


@dataclass(frozen=True)
class Option:
    """One query option ``X) expr ::: comment``."""

    letter: str
    expr: Expr
    text: str
    comment: str
    line: int


@dataclass(frozen=True)
class DomainNote:
    """An informational ``Domain:`` line such as ``1: leftmost``."""

    text: str
    line: int


@dataclass(frozen=True)
class CspProgram:
    """A parsed, type-checked program."""

    notes: tuple[DomainNote, ...]
    variables: tuple[Variable, ...]
    constraints: tuple[Constraint, ...]
    options: tuple[Option, ...]


# --------------------------------------------------------------------------- parsing


def parse(text: str) -> CspProgram:
    """Parse and type-check a Logic-LM CSP program.

    Args:
        text: the program (see the module docstring for the format).

    Returns:
        The typed :class:`CspProgram`.

    Raises:
        ProgramError: for the first problem found, with its 1-based line and a
            message saying how to fix it.
    """
    if len(text) > MAX_PROGRAM_CHARS:
        raise ProgramError(f"the program has {len(text):,} characters; the limit is {MAX_PROGRAM_CHARS:,}", 1,
                           ErrorKind.UNSUPPORTED)
    lines = text.splitlines()
    sections, header_lines = _split_sections(lines)
    end_line = max(len(lines), 1)
    for name in ("Variables", "Constraints", "Query"):
        if name not in sections:
            raise ProgramError(f"missing section '{name}:'; a program has the sections Domain:, Variables:, "
                               "Constraints: and Query:", end_line)
    if not sections["Variables"]:
        raise ProgramError("the 'Variables:' section is empty; declare variables like "
                           "'green_book [IN] [1, 2, 3, 4, 5]'", header_lines["Variables"])
    if not sections["Query"]:
        raise ProgramError("the 'Query:' section is empty; write one option per line like 'A) green_book == 2'",
                           header_lines["Query"])
    sections = {name: _strip_list_markers(name, entries) for name, entries in sections.items()}

    notes = tuple(DomainNote(body, number) for number, body, _ in sections.get("Domain", []))
    variables = _parse_variables(sections["Variables"])
    env = {v.name: v for v in variables}
    constraints = tuple(
        Constraint(_parse_bool_expr(body, number, env, "constraint"), body, comment, number)
        for number, body, comment in sections["Constraints"]
    )
    options = _parse_options(sections["Query"], env)
    return CspProgram(notes=notes, variables=variables, constraints=constraints, options=options)


#: One item of a section: (1-based line, code, comment).
_Entry = tuple[int, str, str]

_MARKDOWN_HEADER = re.compile(r"^(?P<hashes>#{1,6}\s*)?(?P<open>\*\*|__)?\s*(?P<name>domain|variables|constraints|query)"
                              r"\s*:?\s*(?P<close>\*\*|__)?\s*:?$", re.IGNORECASE)
_CODE_FENCE = re.compile(r"^```[\w+-]*$")


def _split_sections(lines: list[str]) -> tuple[dict[str, list[_Entry]], dict[str, int]]:
    """The items of each section (comments removed) and the line of each section header."""
    sections: dict[str, list[_Entry]] = {}
    header_lines: dict[str, int] = {}
    current: str | None = None
    for number, raw in enumerate(lines, start=1):
        body, _, comment = raw.partition(":::")
        body, comment = body.strip(), comment.strip()
        if not body or _CODE_FENCE.match(body):
            continue
        if body.startswith("#"):
            header = _header(body)  # '### Query'
            if header is None or header[0] in header_lines:
                continue  # a comment line (also '# Query' after 'Query:', e.g. '# Query' then 'Query:')
        else:
            body, hash_comment = _split_hash_comment(body)
            comment = comment or hash_comment
            header = _header(body)
        if header is not None:
            name, rest = header
            if name == current and not sections[name]:
                continue  # the same header again right after itself ('# Query' then 'Query:'): one header
            if name in header_lines:
                raise ProgramError(f"section '{name}:' appears twice (first on line {header_lines[name]}); "
                                   "merge the two sections", number)
            if rest:
                raise ProgramError(f"put the contents of '{name}:' on the lines after the header, one item per "
                                   "line", number)
            header_lines[name] = number
            sections[name] = []
            current = name
            continue
        if not body:
            continue
        if current is None:
            raise ProgramError(f"text before the first section header: {body!r}; a program starts with "
                               "'Domain:' or 'Variables:'", number)
        sections[current].append((number, body, comment))
    return sections, header_lines


def _header(body: str) -> tuple[str, str] | None:
    """``(section name, text after the colon)`` if ``body`` is a section header, else None.

    ``Constraints:`` (the GPT-4 spelling) or a Markdown header: ``### Constraints``,
    ``**Constraints:**``, ``**Constraints**:``; a Markdown header has nothing after the name.
    """
    plain = _HEADER.match(body)
    if plain:
        return plain.group("name").capitalize(), plain.group("rest")
    marked = _MARKDOWN_HEADER.match(body)
    if marked and (marked.group("hashes") or (marked.group("open") and marked.group("open") == marked.group("close"))):
        return marked.group("name").capitalize(), ""
    return None


def _split_hash_comment(body: str) -> tuple[str, str]:
    """``code  # comment`` -> ``("code", "comment")``; a ``#`` inside quotes is part of the code."""
    quote: str | None = None
    for index, char in enumerate(body):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#":
            return body[:index].rstrip(), body[index + 1:].strip()
    return body, ""


_LIST_MARKER = re.compile(r"^(?P<marker>[-*•+]|\d{1,3}[.)])\s+(?=\S)")


def _strip_list_markers(section: str, entries: list[_Entry]) -> list[_Entry]:
    """Items without their list markers (``- ``, ``* ``, ``1. `` ...) and inline-code backticks (module docstring)."""
    marked = [_LIST_MARKER.match(body) for _, body, _ in entries]
    if section == "Domain":  # '1: leftmost' is a note; only bullet markers are layout there
        marked = [m if m and not m.group("marker")[0].isdigit() else None for m in marked]
    whole_list = bool(entries) and all(marked)
    out: list[_Entry] = []
    for (number, body, comment), match in zip(entries, marked):
        if match is not None:
            if section == "Constraints" and match.group("marker") == "-" and not whole_list:
                raise ProgramError(f"{body!r} starts with '- ', which reads as a list marker or as a minus sign "
                                   f"('{body[1:].strip()}' or '-{body[1:].strip()}'); other constraints have no "
                                   "list marker: drop the '- ', or write a minus sign without the blank", number)
            body = body[match.end():]
        if len(body) > 2 and body[0] == body[-1] == "`" and "`" not in body[1:-1]:
            body = body[1:-1].strip()  # `a > b`: Markdown inline code
        out.append((number, body, comment))
    return out


def _parse_variables(entries: list[tuple[int, str, str]]) -> tuple[Variable, ...]:
    variables: dict[str, Variable] = {}
    for number, body, _ in entries:
        match = _VARIABLE.match(body) or _VARIABLE_OTHER.match(body)
        if not match:
            raise ProgramError(f"expected a variable declaration like 'green_book [IN] [1, 2, 3, 4, 5]', got {body!r}",
                               number)
        name, domain_text = match.group("name"), match.group("domain")
        _check_name(name, number)
        if name in variables:
            raise ProgramError(f"variable {name!r} is declared twice (first on line {variables[name].line})", number)
        domain = _parse_domain(domain_text, number)
        kind = Type.STR if isinstance(domain, tuple) and isinstance(domain[0], str) else Type.INT
        variables[name] = Variable(name=name, domain=domain, type=kind, line=number)
    return tuple(variables.values())


def _check_name(name: str, number: int) -> None:
    if not name.isidentifier():
        suggestion = re.sub(r"\W+", "_", name.strip()).strip("_") or "x"
        raise ProgramError(f"variable name {name!r} is not an identifier; use letters, digits and underscores, "
                           f"e.g. {suggestion!r}", number)
    if keyword.iskeyword(name) or name in _FUNCTIONS:
        raise ProgramError(f"variable name {name!r} is a reserved word; rename it (e.g. {name + '_'!r})", number)


_RANGE_DOTS = re.compile(r"(?<=\d)\s*,?\s*\.{2,3}\s*,?\s*(?=-?\d)")


def _parse_domain(text: str, number: int) -> Domain:
    hint = "write a domain like [1, 2, 3, 4, 5], [1..5] or range(1, 6)"
    spelled = text.strip()
    if "'" not in spelled and '"' not in spelled:
        spelled = _RANGE_DOTS.sub(", ..., ", spelled)  # [1..5] -> [1, ..., 5]
    tree = _parse_python(spelled, number, "domain", shown=text)
    node = tree.body
    values: list[object]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and any(_is_ellipsis(elt) for elt in node.elts):
        if spelled.startswith("("):
            raise ProgramError(f"the range {text.strip()!r} is in round brackets, which in mathematics is an open "
                               "interval (both ends left out); write it with square brackets, e.g. [1..5]", number)
        return _dotted_range(node.elts, number, hint)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        values = [_literal(elt, number, hint) for elt in node.elts]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        if node.keywords or not 1 <= len(node.args) <= 3:
            raise ProgramError(f"range() takes 1 to 3 integer arguments; {hint}", number)
        bounds = [_literal(arg, number, hint) for arg in node.args]
        if not all(isinstance(b, int) for b in bounds) or (len(bounds) == 3 and bounds[2] == 0):
            raise ProgramError(f"range() needs integer arguments and a non-zero step; {hint}", number)
        span = range(*bounds)  # type: ignore[arg-type]
        if not span:
            raise ProgramError(f"the domain {text!r} is empty; {hint}", number)
        # Kept as a range: Z3 gets bounds (and a step condition), never the list of values.
        return span if span.step > 0 else span[::-1]
    else:
        raise ProgramError(f"unsupported domain {text!r}; {hint}", number)
    if not values:
        raise ProgramError(f"the domain is empty; {hint}", number)
    if all(isinstance(v, int) for v in values):
        return tuple(dict.fromkeys(v for v in values if isinstance(v, int)))
    if all(isinstance(v, str) for v in values):
        return tuple(dict.fromkeys(v for v in values if isinstance(v, str)))
    raise ProgramError("a domain must hold only integers or only strings, not a mix", number, ErrorKind.TYPE)


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _dotted_range(elts: list[ast.expr], number: int, hint: str) -> range:
    """``[a, ..., c]`` / ``[a, b, ..., c]``: the integers from ``a`` to ``c`` (both included) in steps of ``b - a``.

    With one value before the dots the step is 1 (or -1 when ``c < a``); ``c`` must be on the step.
    """
    form = "a range is its first value (or first values), '...' and its last value, e.g. [1, ..., 5] or [1..5]"
    if len(elts) < 3 or sum(_is_ellipsis(e) for e in elts) != 1 or not _is_ellipsis(elts[-2]):
        raise ProgramError(f"{form}; {hint}", number)
    ends = [_literal(e, number, hint) for e in elts if not _is_ellipsis(e)]
    if not all(isinstance(v, int) for v in ends):
        raise ProgramError(f"a range with '...' needs integers; {hint}", number)
    *before, last = [int(v) for v in ends]
    step = before[1] - before[0] if len(before) > 1 else (1 if last >= before[0] else -1)
    if step == 0 or any(b - a != step for a, b in itertools.pairwise(before)):
        raise ProgramError(f"the values before '...' ({', '.join(map(str, before))}) do not go up or down by one "
                           f"step; {form}", number)
    if (last - before[-1]) % step or (last - before[-1]) // step < 0:
        raise ProgramError(f"the range {', '.join(map(str, before))}, ... (step {step}) never reaches {last}; {form}",
                           number)
    span = range(before[0], last + (1 if step > 0 else -1), step)
    return span if span.step > 0 else span[::-1]


def _literal(node: ast.expr, number: int, hint: str) -> int | str:
    if isinstance(node, ast.Constant) and type(node.value) in (int, str):
        return node.value
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int):
        return -node.operand.value
    raise ProgramError(f"domain values must be integer or string literals; {hint}", number)


def _parse_options(entries: list[tuple[int, str, str]], env: dict[str, Variable]) -> tuple[Option, ...]:
    options: dict[str, Option] = {}
    for number, body, comment in entries:
        match = _OPTION.match(body)
        if not match:
            raise ProgramError(f"expected an option like 'A) green_book == 2', got {body!r}", number)
        letter = (match.group("boxed") or match.group("letter")).upper()
        if letter in options:
            raise ProgramError(f"option {letter} appears twice (first on line {options[letter].line})", number)
        expr_text = match.group("expr").strip()
        if not expr_text:
            raise ProgramError(f"option {letter} has no expression; write it like '{letter}) green_book == 2'",
                               number)
        expr = _parse_bool_expr(expr_text, number, env, f"option {letter}")
        options[letter] = Option(letter=letter, expr=expr, text=expr_text, comment=comment, line=number)
    return tuple(options.values())


def _parse_python(text: str, number: int, what: str, shown: str | None = None) -> ast.Expression:
    """``text`` parsed as one Python expression; errors quote ``shown`` (the text as written), if given."""
    written = text if shown is None else shown
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError as err:
        hint = ""
        if re.search(r"(?<![=!<>:])=(?![=>])", written):
            hint = "; use '==' to compare (a single '=' is assignment)"
        elif "&&" in written or "||" in written:
            hint = "; use 'and' / 'or' instead of '&&' / '||'"
        column = f" at column {err.offset}" if err.offset and written == text else ""
        read_as = f" (read as {text!r})" if written != text else ""
        raise ProgramError(f"invalid {what} {written!r}{read_as}: {err.msg}{column}{hint}", number) from None
    except (ValueError, MemoryError, RecursionError) as err:
        raise ProgramError(f"invalid {what} {written!r}: {err}", number) from None


_TOKEN = re.compile(r"""(?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")|(?P<op><>|!=|==|<=|>=|:=|=>|=<|&&|\|\||[≠≤≥!¬=])"""
                    r"|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<name>[^\W\d]\w*)|(?P<space>\s+)|(?P<other>.)", re.DOTALL)
_SAME_AS = {"≠": "!=", "<>": "!=", "≤": "<=", "≥": ">=", "&&": " and ", "||": " or "}


def _python_spelling(text: str, number: int, what: str) -> str:
    """``text`` with the other models' operators in Python spelling (module docstring): ``≠``/``<>`` -> ``!=``,
    ``≤`` -> ``<=``, ``≥`` -> ``>=``, ``&&`` -> ``and``, ``||`` -> ``or``, ``!(c)``/``¬(c)`` -> ``not (c)``, a lone
    ``=`` -> ``==`` (not in a call's arguments); string literals are left as they are."""
    tokens = [(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(text)]
    out: list[str] = []
    frames: list[str] = []  # the open brackets: 'call', 'group' or 'list'
    previous = ("space", "")
    for index, (kind, token) in enumerate(tokens):
        if kind == "open":
            called = previous[0] == "close" or (previous[0] == "name" and not keyword.iskeyword(previous[1]))
            frames.append("list" if token != "(" else "call" if called else "group")
        elif kind == "close" and frames:
            frames.pop()
        if kind != "space":
            previous = (kind, token)
        if kind == "op" and token == "=":
            # 'x = 2' can only compare; 'f(x=2)' is a keyword argument, refused as before
            out.append("=" if frames and frames[-1] == "call" else "==")
        elif kind == "op" and token in _SAME_AS:
            out.append(_SAME_AS[token])
        elif kind == "op" and token in ("!", "¬"):
            if not _negates_a_condition(tokens, index):
                raise ProgramError(f"{what} {text!r}: '{token}' has two readings here (C reads '!x == 2' as "
                                   "'(!x) == 2', Python reads 'not x == 2' as 'not (x == 2)'); put the whole "
                                   "condition in parentheses, 'not (x == 2)', or write 'x != 2'", number)
            out.append(" not ")
        else:
            out.append(token)
    return "".join(out).strip()


def _negates_a_condition(tokens: list[tuple[str, str]], index: int) -> bool:
    """Whether the ``!`` at ``tokens[index]`` is followed by ``(...)`` that ends an operand of and/or/not."""
    significant = [i for i in range(index + 1, len(tokens)) if tokens[i][0] != "space"]
    if not significant:
        return False
    first = significant[0]
    if tokens[first] in (("op", "!"), ("op", "¬")):
        return True  # '!!(c)': the inner one is checked on its own
    if tokens[first] != ("open", "("):
        return False
    depth = 0
    for position in significant:
        kind = tokens[position][0]
        depth += (kind == "open") - (kind == "close")
        if depth == 0:
            after = [i for i in significant if i > position]
            if not after:
                return True
            kind, token = tokens[after[0]]
            return kind == "close" or token in (",", "&&", "||") or (kind == "name" and token in ("and", "or"))
    return True  # unbalanced brackets: Python reports them


def _parse_bool_expr(text: str, number: int, env: dict[str, Variable], what: str) -> Expr:
    tree = _parse_python(_python_spelling(text, number, what), number, what, shown=text)
    builder = _Builder(env, number)
    try:
        expr = builder.build(tree.body)
        found = builder.type_of(expr)
    except RecursionError:
        raise ProgramError(f"{what} is nested too deeply; write it flatter", number, ErrorKind.UNSUPPORTED) from None
    if found is not Type.BOOL:
        raise ProgramError(f"{what} {text!r} is not a condition; write a comparison such as 'x == 2' or 'x < y'",
                           number, ErrorKind.TYPE)
    return expr


def _function_name(written: str) -> str | None:
    """The function a call names: one of ``_FUNCTIONS``, or None (other AllDifferent spellings are the same)."""
    if written in _FUNCTIONS:
        return written
    if written.replace("_", "").lower() in _ALL_DIFFERENT_SPELLINGS:
        return "AllDifferentConstraint"
    return None


_COMPARE_OPS: dict[type, str] = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
                                 ast.GtE: ">="}
_ARITH_OPS: dict[type, str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}


class _Builder:
    """Turns a whitelisted Python expression tree into the typed AST, checking types."""

    def __init__(self, env: dict[str, Variable], line: int) -> None:
        self.env = env
        self.line = line

    def fail(self, message: str, kind: ErrorKind = ErrorKind.SYNTAX) -> ProgramError:
        return ProgramError(message, self.line, kind)

    def build(self, node: ast.expr) -> Expr:
        expr = self._build(node)
        self.type_of(expr)  # type-check every node as it is built
        return expr

    def _build(self, node: ast.expr) -> Expr:
        if isinstance(node, ast.Constant):
            if type(node.value) is bool:
                return BoolLit(node.value)
            if type(node.value) is int:
                return IntLit(node.value)
            if type(node.value) is str:
                return StrLit(node.value)
            raise self.fail(f"unsupported literal {node.value!r}; use integers or strings", ErrorKind.UNSUPPORTED)
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                close = difflib.get_close_matches(node.id, list(self.env), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; declared variables: {', '.join(self.env)}"
                raise self.fail(f"unknown variable {node.id!r} (declare it in 'Variables:'){hint}",
                                ErrorKind.UNDECLARED)
            return VarRef(node.id)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return Not(self.build(node.operand))
            if isinstance(node.op, ast.USub):
                operand = self.build(node.operand)
                return IntLit(-operand.value) if isinstance(operand, IntLit) else Neg(operand)
            if isinstance(node.op, ast.UAdd):
                return self.build(node.operand)
            raise self.fail("the '~' operator is not supported; use 'not' for negation", ErrorKind.UNSUPPORTED)
        if isinstance(node, ast.BinOp):
            op = _ARITH_OPS.get(type(node.op))
            if op is None:
                symbol = {ast.Div: "/", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|"}.get(type(node.op), "this")
                hint = {"/": "; use '//' for integer division", "&": "; use 'and' (with parentheses as needed)",
                        "|": "; use 'or' (with parentheses as needed)"}.get(symbol, "")
                raise self.fail(f"operator {symbol!r} is not supported{hint}", ErrorKind.UNSUPPORTED)
            left, right = self.build(node.left), self.build(node.right)
            if op in ("//", "%") and not (isinstance(right, IntLit) and right.value > 0):
                raise self.fail(f"'{op}' is supported only by a positive integer literal, e.g. 'x % 2 == 0'",
                                ErrorKind.UNSUPPORTED)
            return Arith(op, left, right)
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            return BoolOp(op, tuple(self.build(v) for v in node.values))
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            raise self.fail("a list is allowed only after 'in' or inside AllDifferentConstraint([...])")
        described = {ast.Attribute: "attribute access", ast.Subscript: "indexing", ast.Lambda: "lambda",
                     ast.IfExp: "conditional expressions", ast.NamedExpr: "assignment expressions"}
        what = described.get(type(node), type(node).__name__)
        raise self.fail(f"{what} is not supported; use comparisons, arithmetic, and/or/not and "
                        "AllDifferentConstraint([...])", ErrorKind.UNSUPPORTED)

    def _compare(self, node: ast.Compare) -> Expr:
        ops: list[str] = []
        operands: list[Expr] = [self.build(node.left)]
        last = len(node.ops) - 1
        for index, (op, right_node) in enumerate(zip(node.ops, node.comparators)):
            if isinstance(op, (ast.In, ast.NotIn)):
                if index != last:
                    raise self.fail("'in' must be the last operator of a comparison; split the condition with 'and'")
                if not isinstance(right_node, (ast.List, ast.Tuple, ast.Set)) or not right_node.elts:
                    raise self.fail("'in' needs a non-empty literal list on its right, e.g. 'x in [1, 2]'")
                member = Member(operands[-1], tuple(self.build(e) for e in right_node.elts), isinstance(op, ast.NotIn))
                # Python reads 'a < b in [..]' as 'a < b and b in [..]'.
                return BoolOp("and", (Compare(tuple(ops), tuple(operands)), member)) if ops else member
            symbol = _COMPARE_OPS.get(type(op))
            if symbol is None:
                raise self.fail("'is' / 'is not' are not supported; use '==' / '!='", ErrorKind.UNSUPPORTED)
            ops.append(symbol)
            operands.append(self.build(right_node))
        return Compare(tuple(ops), tuple(operands))

    def _call(self, node: ast.Call) -> Expr:
        name = _function_name(node.func.id) if isinstance(node.func, ast.Name) else None
        if name is None:
            written = node.func.id if isinstance(node.func, ast.Name) else ast.dump(node.func)[:40]
            raise self.fail(f"unknown function {written!r}; available: abs, min, max, AllDifferentConstraint",
                            ErrorKind.UNSUPPORTED)
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(f"{name}() takes plain positional arguments", ErrorKind.UNSUPPORTED)
        if name in _ALL_DIFFERENT_NAMES:
            items = node.args
            if len(items) == 1 and isinstance(items[0], (ast.List, ast.Tuple, ast.Set)):
                items = items[0].elts
            if not items:
                raise self.fail("AllDifferentConstraint needs variables, e.g. AllDifferentConstraint([a, b, c])")
            return AllDifferent(tuple(self.build(item) for item in items))
        args = tuple(self.build(a) for a in node.args)
        if name == "abs" and len(args) != 1:
            raise self.fail("abs() takes exactly one argument", ErrorKind.TYPE)
        if name in ("min", "max") and len(args) < 2:
            raise self.fail(f"{name}() takes at least two arguments, e.g. {name}(a, b)", ErrorKind.TYPE)
        return Call(name, args)

    def type_of(self, expr: Expr) -> Type:
        """The type of an already built expression; raises ProgramError on a type mismatch."""
        if isinstance(expr, IntLit):
            return Type.INT
        if isinstance(expr, StrLit):
            return Type.STR
        if isinstance(expr, BoolLit):
            return Type.BOOL
        if isinstance(expr, VarRef):
            return self.env[expr.name].type
        if isinstance(expr, (Neg, Arith, Call)):
            operands = (expr.operand,) if isinstance(expr, Neg) else (
                (expr.left, expr.right) if isinstance(expr, Arith) else expr.args)
            for operand in operands:
                if self.type_of(operand) is Type.STR:
                    raise self.fail("arithmetic on a string value; only integer variables can be added or compared "
                                    "by position", ErrorKind.TYPE)
            return Type.INT
        if isinstance(expr, Compare):
            types = [self.type_of(o) for o in expr.operands]
            for (a, b), op in zip(itertools.pairwise(types), expr.ops):
                if (a is Type.STR) != (b is Type.STR):
                    raise self.fail(f"cannot compare a string with a number using '{op}'; check the variable's "
                                    "domain", ErrorKind.TYPE)
            return Type.BOOL
        if isinstance(expr, Member):
            element = self.type_of(expr.element)
            for choice in expr.choices:
                if (self.type_of(choice) is Type.STR) != (element is Type.STR):
                    raise self.fail("'in' list mixes strings and numbers with the value tested", ErrorKind.TYPE)
            return Type.BOOL
        if isinstance(expr, (BoolOp, Not)):
            operands = expr.operands if isinstance(expr, BoolOp) else (expr.operand,)
            for operand in operands:
                if self.type_of(operand) is not Type.BOOL:
                    raise self.fail("'and' / 'or' / 'not' need conditions such as 'x == 1' on both sides",
                                    ErrorKind.TYPE)
            return Type.BOOL
        if isinstance(expr, AllDifferent):
            kinds = {self.type_of(o) is Type.STR for o in expr.operands}
            if len(kinds) > 1:
                raise self.fail("AllDifferentConstraint mixes string and integer variables", ErrorKind.TYPE)
            return Type.BOOL
        raise TypeError(f"not an expression: {expr!r}")


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
            return {"+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
                    "//": lambda: left / right, "%": lambda: left % right}[expr.op]()
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
            for op, a, b in zip(expr.ops, expr.operands, expr.operands[1:]):
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
    """One solver over the program's constraints, checked option by option."""

    def __init__(self, program: CspProgram, ctx: z3.Context, dog: Z3Watchdog, deadline: float) -> None:
        self.program = program
        self.encoder = _Encoder(program, ctx)
        self.dog = dog
        self.deadline = deadline
        self.solver = z3.Solver(ctx=ctx)
        self.solver.set("core.minimize", True)
        self.trackers: dict[str, Constraint] = {}
        self.model_: z3.ModelRef | None = None  # model of the last sat check
        for variable in program.variables:
            self.solver.add(self.encoder.domain(variable))
        for constraint in program.constraints:
            tracker = z3.Bool(f"line_{constraint.line}", ctx)
            self.trackers[str(tracker)] = constraint
            self.solver.assert_and_track(self.encoder.term(constraint.expr), tracker)

    def check(self, *extra: z3.BoolRef) -> z3.CheckSatResult:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise _Stop(_timeout_outcome())
        self.solver.set("timeout", max(1, int(remaining * 1000)))
        try:
            with self.dog.guard(self.deadline):
                if extra:
                    self.solver.push()
                    try:
                        self.solver.add(*extra)
                        result = self.solver.check()
                        self.model_ = self.solver.model() if result == z3.sat else None
                    finally:
                        self.solver.pop()
                else:
                    result = self.solver.check()
                    self.model_ = self.solver.model() if result == z3.sat else None
        except z3.Z3Exception as exc:
            message = str(exc)
            if "memory" in message.lower():
                raise _Stop(Outcome.error(Status.MEMORY, ErrorKind.MEMORY, "out of memory in Z3",
                                          backend=BACKEND)) from None
            raise _Stop(Outcome.error(Status.RUNTIME_ERROR, ErrorKind.SOLVER, f"Z3 failed: {message}",
                                      backend=BACKEND)) from None
        if result == z3.unknown:
            reason = self.solver.reason_unknown()
            if "memory" in reason or "memout" in reason:
                raise _Stop(Outcome.error(Status.MEMORY, ErrorKind.MEMORY, "out of memory in Z3", backend=BACKEND))
            if "timeout" in reason or "canceled" in reason or time.monotonic() >= self.deadline:
                raise _Stop(_timeout_outcome())
            raise _Stop(Outcome.error(Status.UNKNOWN, ErrorKind.SOLVER, f"Z3 could not decide the constraints "
                                      f"(reason: {reason}); avoid multiplying two variables", backend=BACKEND))
        return result

    def model_text(self, model: z3.ModelRef) -> str:
        parts = []
        for variable in self.program.variables:
            value = model.eval(self.encoder.vars[variable.name], model_completion=True).as_long()
            parts.append(f"{variable.name}={self.encoder.value_name(variable, value)}")
        return ", ".join(parts)

    def holds(self, model: z3.ModelRef, option: Option) -> bool:
        return z3.is_true(model.eval(self.encoder.term(option.expr), model_completion=True))

    def run(self) -> Outcome:
        if self.check() == z3.unsat:
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
            if self.check(z3.Not(self.encoder.term(option.expr))) == z3.unsat:
                entailed.append(option)
            elif self.model_ is not None:
                counter_models[option.letter] = self.model_
        if len(entailed) == 1:
            return self.answer(entailed[0], base, counter_models)
        return self.no_unique_answer(entailed, base, counter_models)

    def answer(self, option: Option, model: z3.ModelRef, counter_models: dict[str, z3.ModelRef]) -> Outcome:
        block = z3.Or([var != model.eval(var, model_completion=True) for var in self.encoder.vars.values()])
        unique = self.check(block) == z3.unsat
        proof = (f"option {option.letter} ({option.text}) holds in every solution: the constraints together with "
                 f"its negation are unsatisfiable.\n"
                 f"{'the only solution' if unique else 'one solution (there are several)'}: {self.model_text(model)}")
        return Outcome(status=Status.PROVED, answer=option.letter, proof=proof, backend=BACKEND,
                       certificate=self.certificate(option, model, counter_models))

    def model_json(self, model: z3.ModelRef) -> dict[str, int | str]:
        inverse = {i: s for s, i in self.encoder.rank.items()}
        values: dict[str, int | str] = {}
        for variable in self.program.variables:
            value = model.eval(self.encoder.vars[variable.name], model_completion=True).as_long()
            values[variable.name] = inverse[value] if variable.type is Type.STR else value
        return values

    def certificate(self, chosen: Option, model: z3.ModelRef,
                    counter_models: dict[str, z3.ModelRef]) -> dict | None:
        """The ``constraint`` certificate (:mod:`symbolkg.solvers.certificates.constraint`) of ``chosen``.

        The chosen option's negation gets a minimised unsat core (its own solver, constraints guarded by
        one literal per line); every other option a counter-model. None when Z3 cannot finish in time
        (the answer stands; the row is then unverifiable).
        """
        from symbolkg.solvers.certificates import constraint as cc

        try:
            core = self.minimal_core(z3.Not(self.encoder.term(chosen.expr)), cc.minimise)
        except _Stop:
            return None
        options = []
        for option in self.program.options:
            if option is chosen:
                fact = {"query": "negation", "sat": False, "core": core, "minimal": True}
            else:
                fact = {"query": "negation", "sat": True, "model": self.model_json(counter_models[option.letter])}
            options.append({"letter": option.letter, "line": option.line, "text": option.text, "check": "entailed",
                            "passes": option is chosen, "facts": [fact]})
        cert = {"kind": "constraint", "version": cc.VERSION, "producer": BACKEND, "language": "logiclm-csp",
                "answer": chosen.letter,
                "constraints": [{"id": c.line, "text": c.text} for c in self.program.constraints],
                "model": self.model_json(model), "options": options}
        return cert if len(json.dumps(cert)) <= cc.MAX_CERTIFICATE_CHARS else None

    def minimal_core(self, query: z3.BoolRef, minimise) -> list[int]:
        """Constraint lines that with ``query`` are unsatisfiable, minimised by deletion."""
        ctx = self.encoder.ctx
        solver = z3.Solver(ctx=ctx)
        for variable in self.program.variables:
            solver.add(self.encoder.domain(variable))
        solver.add(query)
        guards: dict[int, z3.BoolRef] = {}
        for constraint in self.program.constraints:
            guard = z3.Bool(f"cert_line_{constraint.line}", ctx)
            guards[constraint.line] = guard
            solver.add(z3.Implies(guard, self.encoder.term(constraint.expr)))

        def unsat(lines: list[int]) -> bool:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise _Stop(_timeout_outcome())
            solver.set("timeout", max(1, int(remaining * 1000)))
            with self.dog.guard(self.deadline):
                result = solver.check(*[guards[line] for line in lines])
            if result == z3.unknown:
                raise _Stop(_timeout_outcome())
            return result == z3.unsat

        if not unsat(list(guards)):
            raise _Stop(_timeout_outcome())  # cannot happen: the option was found entailed
        first = sorted({int(str(t)[len("cert_line_"):]) for t in solver.unsat_core()})
        return minimise(first, unsat)

    def no_unique_answer(self, entailed: list[Option], base: z3.ModelRef,
                         counter_models: dict[str, z3.ModelRef]) -> Outcome:
        possible: list[str] = []
        impossible: list[str] = []
        witnesses = [m for m in counter_models.values() if m is not base]
        for option in self.program.options:
            if option in entailed:
                continue
            if self.holds(base, option) or any(self.holds(m, option) for m in witnesses):
                possible.append(option.letter)
            elif self.check(self.encoder.term(option.expr)) == z3.sat:
                possible.append(option.letter)
                if self.model_ is not None:
                    witnesses.append(self.model_)
            else:
                impossible.append(option.letter)
        line: int | None = None
        if entailed:
            letters = ", ".join(o.letter for o in entailed)
            message = (f"options {letters} all hold in every solution, so no single option is selected; the "
                       "options must exclude each other - check the Query expressions and the constraints")
            line = entailed[1].line
        else:
            message = "no option holds in every solution: the constraints allow more than one arrangement"
            if possible:
                message += f"; options that hold in some but not all solutions: {', '.join(possible)}"
            if impossible:
                message += f"; options that hold in no solution: {', '.join(impossible)}"
            if witnesses:
                message += (f". For example both [{self.model_text(base)}] and [{self.model_text(witnesses[0])}] "
                            "satisfy every constraint")
            message += ". Add the missing facts from the problem as constraints, or fix a wrong one"
        return Outcome(status=Status.UNKNOWN, error_kind=ErrorKind.NO_ANSWER.value, error_message=message,
                       error_line=line, proof=f"one solution: {self.model_text(base)}", backend=BACKEND)

    def contradiction(self) -> Outcome:
        core = sorted((self.trackers[str(t)] for t in self.solver.unsat_core() if str(t) in self.trackers),
                      key=lambda c: c.line)
        if core:
            listed = "; ".join(f"line {c.line}: {c.text}" + (f" ({c.comment})" if c.comment else "") for c in core)
            message = (f"the constraints are contradictory (no assignment satisfies them). These conflict with each "
                       f"other and the variable domains: {listed}. Fix or remove the wrong one")
            line = core[0].line
        else:
            message = "the variable domains alone cannot be satisfied; check the 'Variables:' section"
            line = self.program.variables[0].line
        return Outcome(status=Status.UNSAT, error_kind=ErrorKind.NO_ANSWER.value, error_message=message,
                       error_line=line, backend=BACKEND)


def _timeout_outcome() -> Outcome:
    return Outcome.error(Status.TIMEOUT, ErrorKind.TIMEOUT, "time limit reached while solving the constraints; "
                         "use smaller domains or fewer constraints", backend=BACKEND)


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
    data = outcome.to_dict()
    data["seconds"] = sw.seconds
    return Outcome.from_dict(data)


def _solve(program: CspProgram, deadline: float) -> Outcome:
    ctx = z3.Context()
    try:
        with Z3Watchdog(ctx) as dog:
            return _Session(program, ctx, dog, deadline).run()
    except _Stop as stop:
        return stop.outcome
    except MemoryError:
        return Outcome.error(Status.MEMORY, ErrorKind.MEMORY, "out of memory (worker memory limit reached)",
                             backend=BACKEND)
    except RecursionError:
        return Outcome.error(Status.PARSE_ERROR, ErrorKind.UNSUPPORTED, "an expression is nested too deeply; write "
                             "it flatter", backend=BACKEND)
