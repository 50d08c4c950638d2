"""Logic-LM's constraint language (LogicalDeduction, language ``logiclm-csp``): its typed AST and parser.

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

What a program answers, and how Z3 finds it: :mod:`symbolkg.solvers.csp.engine`.

One module, long because it is one grammar read top to bottom: the typed AST, the section
splitter and the whitelisting walk over Python's ``ast`` of each constraint share the line numbers
every error names.
"""

from __future__ import annotations

import ast
import difflib
import enum
import itertools
import keyword
import re
from dataclasses import dataclass

from symbolkg.solvers.outcomes import ErrorKind, ProgramError

_HEADER = re.compile(r"^(?P<name>domain|variables|constraints|query)\s*:\s*(?P<rest>.*)$", re.IGNORECASE)
_VARIABLE = re.compile(r"^(?P<name>.*?)\s*\[\s*in\s*\]\s*(?P<domain>.*)$", re.IGNORECASE)
#: ``name in domain``, ``name IN domain``, ``name ∈ domain``, ``name: domain``.
_VARIABLE_OTHER = re.compile(r"^(?P<name>.*?)(?:\s+in\b|\s*∈|\s*:)\s*(?P<domain>.*)$", re.IGNORECASE)
#: ``A) e``, ``(A) e``, ``A. e``, ``A: e``, ``Option A: e``, ``Option A) e``, ``Option (A): e``.
_OPTION = re.compile(
    r"^(?:option\s+)?(?:\(\s*(?P<boxed>[A-Za-z])\s*\)\s*:?|(?P<letter>[A-Za-z])\s*(?:\)|:|\.(?=\s)))"
    r"\s*(?P<expr>.*)$",
    re.IGNORECASE,
)
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
        raise ProgramError(
            f"the program has {len(text):,} characters; the limit is {MAX_PROGRAM_CHARS:,}", 1, ErrorKind.UNSUPPORTED
        )
    lines = text.splitlines()
    sections, header_lines = _split_sections(lines)
    end_line = max(len(lines), 1)
    for name in ("Variables", "Constraints", "Query"):
        if name not in sections:
            raise ProgramError(
                f"missing section '{name}:'; a program has the sections Domain:, Variables:, Constraints: and Query:",
                end_line,
            )
    if not sections["Variables"]:
        raise ProgramError(
            "the 'Variables:' section is empty; declare variables like 'green_book [IN] [1, 2, 3, 4, 5]'",
            header_lines["Variables"],
        )
    if not sections["Query"]:
        raise ProgramError(
            "the 'Query:' section is empty; write one option per line like 'A) green_book == 2'", header_lines["Query"]
        )
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

_MARKDOWN_HEADER = re.compile(
    r"^(?P<hashes>#{1,6}\s*)?(?P<open>\*\*|__)?\s*(?P<name>domain|variables|constraints|query)"
    r"\s*:?\s*(?P<close>\*\*|__)?\s*:?$",
    re.IGNORECASE,
)
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
                raise ProgramError(
                    f"section '{name}:' appears twice (first on line {header_lines[name]}); merge the two sections",
                    number,
                )
            if rest:
                raise ProgramError(
                    f"put the contents of '{name}:' on the lines after the header, one item per line", number
                )
            header_lines[name] = number
            sections[name] = []
            current = name
            continue
        if not body:
            continue
        if current is None:
            raise ProgramError(
                f"text before the first section header: {body!r}; a program starts with 'Domain:' or 'Variables:'",
                number,
            )
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
            return body[:index].rstrip(), body[index + 1 :].strip()
    return body, ""


_LIST_MARKER = re.compile(r"^(?P<marker>[-*•+]|\d{1,3}[.)])\s+(?=\S)")


def _strip_list_markers(section: str, entries: list[_Entry]) -> list[_Entry]:
    """Items without their list markers (``- ``, ``* ``, ``1. `` ...) and inline-code backticks (module docstring)."""
    marked = [_LIST_MARKER.match(body) for _, body, _ in entries]
    if section == "Domain":  # '1: leftmost' is a note; only bullet markers are layout there
        marked = [m if m and not m.group("marker")[0].isdigit() else None for m in marked]
    whole_list = bool(entries) and all(marked)
    out: list[_Entry] = []
    for (number, body, comment), match in zip(entries, marked, strict=True):
        if match is not None:
            if section == "Constraints" and match.group("marker") == "-" and not whole_list:
                raise ProgramError(
                    f"{body!r} starts with '- ', which reads as a list marker or as a minus sign "
                    f"('{body[1:].strip()}' or '-{body[1:].strip()}'); other constraints have no "
                    "list marker: drop the '- ', or write a minus sign without the blank",
                    number,
                )
            body = body[match.end() :]
        if len(body) > 2 and body[0] == body[-1] == "`" and "`" not in body[1:-1]:
            body = body[1:-1].strip()  # `a > b`: Markdown inline code
        out.append((number, body, comment))
    return out


def _parse_variables(entries: list[tuple[int, str, str]]) -> tuple[Variable, ...]:
    variables: dict[str, Variable] = {}
    for number, body, _ in entries:
        match = _VARIABLE.match(body) or _VARIABLE_OTHER.match(body)
        if not match:
            raise ProgramError(
                f"expected a variable declaration like 'green_book [IN] [1, 2, 3, 4, 5]', got {body!r}", number
            )
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
        raise ProgramError(
            f"variable name {name!r} is not an identifier; use letters, digits and underscores, e.g. {suggestion!r}",
            number,
        )
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
            raise ProgramError(
                f"the range {text.strip()!r} is in round brackets, which in mathematics is an open "
                "interval (both ends left out); write it with square brackets, e.g. [1..5]",
                number,
            )
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
        raise ProgramError(
            f"the values before '...' ({', '.join(map(str, before))}) do not go up or down by one step; {form}", number
        )
    if (last - before[-1]) % step or (last - before[-1]) // step < 0:
        raise ProgramError(
            f"the range {', '.join(map(str, before))}, ... (step {step}) never reaches {last}; {form}", number
        )
    span = range(before[0], last + (1 if step > 0 else -1), step)
    return span if span.step > 0 else span[::-1]


def _literal(node: ast.expr, number: int, hint: str) -> int | str:
    if isinstance(node, ast.Constant) and type(node.value) in (int, str):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
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
            raise ProgramError(f"option {letter} has no expression; write it like '{letter}) green_book == 2'", number)
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


_TOKEN = re.compile(
    r"""(?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")|(?P<op><>|!=|==|<=|>=|:=|=>|=<|&&|\|\||[≠≤≥!¬=])"""
    r"|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<name>[^\W\d]\w*)|(?P<space>\s+)|(?P<other>.)",
    re.DOTALL,
)
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
                raise ProgramError(
                    f"{what} {text!r}: '{token}' has two readings here (C reads '!x == 2' as "
                    "'(!x) == 2', Python reads 'not x == 2' as 'not (x == 2)'); put the whole "
                    "condition in parentheses, 'not (x == 2)', or write 'x != 2'",
                    number,
                )
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
        raise ProgramError(
            f"{what} {text!r} is not a condition; write a comparison such as 'x == 2' or 'x < y'",
            number,
            ErrorKind.TYPE,
        )
    return expr


def _function_name(written: str) -> str | None:
    """The function a call names: one of ``_FUNCTIONS``, or None (other AllDifferent spellings are the same)."""
    if written in _FUNCTIONS:
        return written
    if written.replace("_", "").lower() in _ALL_DIFFERENT_SPELLINGS:
        return "AllDifferentConstraint"
    return None


_COMPARE_OPS: dict[type, str] = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
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
                raise self.fail(
                    f"unknown variable {node.id!r} (declare it in 'Variables:'){hint}", ErrorKind.UNDECLARED
                )
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
                hint = {
                    "/": "; use '//' for integer division",
                    "&": "; use 'and' (with parentheses as needed)",
                    "|": "; use 'or' (with parentheses as needed)",
                }.get(symbol, "")
                raise self.fail(f"operator {symbol!r} is not supported{hint}", ErrorKind.UNSUPPORTED)
            left, right = self.build(node.left), self.build(node.right)
            if op in ("//", "%") and not (isinstance(right, IntLit) and right.value > 0):
                raise self.fail(
                    f"'{op}' is supported only by a positive integer literal, e.g. 'x % 2 == 0'", ErrorKind.UNSUPPORTED
                )
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
        described = {
            ast.Attribute: "attribute access",
            ast.Subscript: "indexing",
            ast.Lambda: "lambda",
            ast.IfExp: "conditional expressions",
            ast.NamedExpr: "assignment expressions",
        }
        what = described.get(type(node), type(node).__name__)
        raise self.fail(
            f"{what} is not supported; use comparisons, arithmetic, and/or/not and AllDifferentConstraint([...])",
            ErrorKind.UNSUPPORTED,
        )

    def _compare(self, node: ast.Compare) -> Expr:
        ops: list[str] = []
        operands: list[Expr] = [self.build(node.left)]
        last = len(node.ops) - 1
        for index, (op, right_node) in enumerate(zip(node.ops, node.comparators, strict=True)):
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
            raise self.fail(
                f"unknown function {written!r}; available: abs, min, max, AllDifferentConstraint", ErrorKind.UNSUPPORTED
            )
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
            operands = (
                (expr.operand,)
                if isinstance(expr, Neg)
                else ((expr.left, expr.right) if isinstance(expr, Arith) else expr.args)
            )
            for operand in operands:
                if self.type_of(operand) is Type.STR:
                    raise self.fail(
                        "arithmetic on a string value; only integer variables can be added or compared by position",
                        ErrorKind.TYPE,
                    )
            return Type.INT
        if isinstance(expr, Compare):
            types = [self.type_of(o) for o in expr.operands]
            for (a, b), op in zip(itertools.pairwise(types), expr.ops, strict=True):
                if (a is Type.STR) != (b is Type.STR):
                    raise self.fail(
                        f"cannot compare a string with a number using '{op}'; check the variable's domain",
                        ErrorKind.TYPE,
                    )
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
                    raise self.fail(
                        "'and' / 'or' / 'not' need conditions such as 'x == 1' on both sides", ErrorKind.TYPE
                    )
            return Type.BOOL
        if isinstance(expr, AllDifferent):
            kinds = {self.type_of(o) is Type.STR for o in expr.operands}
            if len(kinds) > 1:
                raise self.fail("AllDifferentConstraint mixes string and integer variables", ErrorKind.TYPE)
            return Type.BOOL
        raise TypeError(f"not an expression: {expr!r}")
