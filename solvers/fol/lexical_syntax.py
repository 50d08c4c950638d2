"""The lexical layer of Logic-LM's FOL language: a program's lines into sections, a formula into tokens.

The language itself (grammar, readings, what is refused and why) is specified in
:mod:`symbolkg.solvers.fol.syntax`; this module holds the two text-level steps under its parser:

* :func:`split_sections` reads a program's lines into its ``Predicates:`` / ``Premises:`` /
  ``Conclusion:`` sections, skipping what is not a formula: comments (after ``:::`` or ``//``,
  whole ``#`` / ``//`` lines), code fences, Markdown header decoration, list markers;
* :func:`tokenize` splits one formula into tokens, normalising the spellings the language
  accepts (``->``, ``/\\``, ``!``, ...) and refusing, with a suggested rewrite, notation no
  prover can interpret (comparisons, subset, ellipses, ``_``).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field

from symbolkg.solvers.outcomes import ErrorKind, ProgramError

#: Longest program text accepted (a guard against pathological input; real ones are a few KB).
#: Shared by the ``logiclm-fol`` and ``prover9`` languages.
MAX_PROGRAM_CHARS = 1_000_000


# --------------------------------------------------------------------------- tokens


class Tok(str, enum.Enum):
    QUANT = "quantifier"
    NOT = "'¬'"
    BINOP = "connective"
    LPAREN = "'('"
    RPAREN = "')'"
    COMMA = "','"
    EQ = "'='"
    NEQ = "'≠'"
    IN = "'∈'"
    NAME = "name"
    NUMBER = "number"
    STRING = "quoted name"
    SEP = "'.' or ':' after a quantified variable"
    END = "end of formula"


@dataclass(frozen=True)
class Token:
    kind: Tok
    text: str
    col: int  # 1-based column in the program line
    value: str = ""  # normalised: the connective / quantifier symbol


_SYMBOLS: list[tuple[str, Tok, str]] = [
    # Longest spellings first so "<->" is not read as "<" then "->".
    ("<->", Tok.BINOP, "↔"),
    ("<=>", Tok.BINOP, "↔"),  # before "<=" (refused as a comparison) and "=>"
    ("->", Tok.BINOP, "→"),
    ("=>", Tok.BINOP, "→"),  # before "="
    ("/\\", Tok.BINOP, "∧"),
    ("\\/", Tok.BINOP, "∨"),
    ("!=", Tok.NEQ, "≠"),
    ("!", Tok.NOT, "¬"),  # after "!="
    ("∀", Tok.QUANT, "∀"),
    ("∃", Tok.QUANT, "∃"),
    ("¬", Tok.NOT, "¬"),
    ("~", Tok.NOT, "¬"),
    ("∧", Tok.BINOP, "∧"),
    ("&", Tok.BINOP, "∧"),
    ("∨", Tok.BINOP, "∨"),
    ("|", Tok.BINOP, "∨"),
    ("⊕", Tok.BINOP, "⊕"),
    ("⊻", Tok.BINOP, "⊕"),
    ("→", Tok.BINOP, "→"),
    ("⇒", Tok.BINOP, "→"),
    ("↔", Tok.BINOP, "↔"),
    ("⇔", Tok.BINOP, "↔"),
    ("(", Tok.LPAREN, "("),
    (")", Tok.RPAREN, ")"),
    (",", Tok.COMMA, ","),
    ("=", Tok.EQ, "="),
    ("≠", Tok.NEQ, "≠"),
    ("∈", Tok.IN, "∈"),
    ("∉", Tok.IN, "∉"),
    (".", Tok.SEP, "."),  # after the ellipsis check in tokenize; only valid after a quantifier's variables
    (":", Tok.SEP, ":"),
]

# Connectives written as a word; a word is one only where a connective is expected (between two
# formulas), where a name cannot stand, so predicates and constants of that name keep working.
WORD_CONNECTIVES = {"xor": "⊕"}
# Quantifiers written as a word (NLTK, Z3, textbooks); one only where a formula is expected and a
# variable name follows, where a name followed by a name is otherwise an error.
WORD_QUANTIFIERS = {"forall": "∀", "all": "∀", "exists": "∃"}
_ELLIPSES = ("...", "…")

# Valid-looking notation Prover9 cannot interpret, with the rewrite to suggest.
_ELLIPSIS_HINT = "an ellipsis cannot be solved; write out every item explicitly"
_UNSUPPORTED: list[tuple[str, str]] = [
    ("...", _ELLIPSIS_HINT),
    ("…", _ELLIPSIS_HINT),
    ("≤", "arithmetic comparison is not supported; express it with a predicate, e.g. AtMost42Billion(x)"),
    ("≥", "arithmetic comparison is not supported; express it with a predicate, e.g. AtLeast9(x)"),
    ("<=", "arithmetic comparison is not supported; express it with a predicate, e.g. AtMost300(x)"),
    (">=", "arithmetic comparison is not supported; express it with a predicate, e.g. AtLeast9(x)"),
    (
        ">",
        "arithmetic comparison is not supported; express it with a predicate, e.g. RatingAbove9(x) or MoreThan(a, b) "
        "with facts about a and b",
    ),
    ("<", "arithmetic comparison is not supported; express it with a predicate, e.g. CostsBelow300(x)"),
    ("⊆", "subset is not supported; write it as ∀z (In(z, a) → In(z, b))"),
]

_NAME = re.compile(r"[^\W\d]\w*")
# A name in double quotes, straight or curly ("The Secret Dude Society"): a constant (syntax docstring).
_STRING = re.compile(r'"([^"\n]*)"|“([^”\n]*)”')
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[^\W\d]\w*)?")
_WS = re.compile(r"\s+")


def tokenize(text: str, line: int, col0: int) -> list[Token]:
    """Split one formula into tokens; ``col0`` is the column of ``text[0]`` in its line."""
    tokens: list[Token] = []
    i = 0
    while i < len(text):
        ws = _WS.match(text, i)
        if ws:
            i = ws.end()
            continue
        col = col0 + i
        if text.startswith(_ELLIPSES, i):  # before the symbols: "..." is not three '.'
            raise ProgramError(f"{snippet(text, i)}: {_ELLIPSIS_HINT}", line, ErrorKind.UNSUPPORTED)
        for spelling, kind, value in _SYMBOLS:  # before _UNSUPPORTED: "<->" is not "<"
            if text.startswith(spelling, i):
                tokens.append(Token(kind, spelling, col, value))
                i += len(spelling)
                break
        else:
            for spelling, hint in _UNSUPPORTED:
                if text.startswith(spelling, i):
                    raise ProgramError(f"{snippet(text, i)}: {hint}", line, ErrorKind.UNSUPPORTED)
            if text[i] in '"“':
                m = _STRING.match(text, i)
                if m is None:
                    raise ProgramError(f"{snippet(text, i)}: a quoted name has no closing quote", line)
                name = " ".join((m.group(1) if m.group(1) is not None else m.group(2)).split())
                if not name:
                    raise ProgramError(f"{snippet(text, i)}: an empty quoted name names nothing", line)
                tokens.append(Token(Tok.STRING, m.group(), col, name))
                i = m.end()
                continue
            m = _NAME.match(text, i)
            if m:
                if m.group() == "_" or set(m.group()) == {"_"}:
                    raise ProgramError(
                        f"{snippet(text, i)}: '_' is not a term; to say 'some value', bind a new variable with ∃ "
                        "(e.g. ∃z Piloted(y, z, bbcTwo)), or name the individual with a constant",
                        line,
                    )
                tokens.append(Token(Tok.NAME, m.group(), col))
                i = m.end()
                continue
            m = _NUMBER.match(text, i)
            if m:
                tokens.append(Token(Tok.NUMBER, m.group(), col))
                i = m.end()
                continue
            raise ProgramError(
                f"{snippet(text, i)}: unexpected character {text[i]!r}; formulas use names, ( ) , "
                "and ∀ ∃ ¬ ∧ ∨ ⊕ → ↔ = ≠" + (" (a comment goes after ':::' or '//')" if text[i] in "#%" else ""),
                line,
            )
    tokens.append(Token(Tok.END, "", col0 + len(text)))
    return tokens


def snippet(text: str, i: int) -> str:
    """Where in a formula an error is, for messages: the LLM sees the formula and the spot."""
    start = max(0, i - 25)
    around = ("…" if start else "") + text[start : i + 25] + ("…" if i + 25 < len(text) else "")
    return f"in {text.strip()!r}, near {around.strip()!r} (character {i + 1})"


# --------------------------------------------------------------------------- sections


# A section header: its name (singular or plural, any case), then ':' (the formula may follow it on the
# same line), or in Markdown: '#'-'######' before it and/or '**' / '__' around it, with or without ':'.
_HEADER = re.compile(
    r"^(?P<hashes>\s*#{1,6})?[ \t]*(?P<em>\*\*|__)?[ \t]*(?P<name>predicates?|premises?|conclusions?)[ \t]*"
    r"(?(em)(?P<colon_in>:)?[ \t]*(?P=em)[ \t]*(?P<colon_out>:)?|(?P<colon>:)?)\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_CODE_FENCE = re.compile(r"^\s*```[\w+-]*\s*$")
# A comment in the formula part of a line ('/' is no part of a formula). A '#' after a formula is refused:
# in Prover9's syntax it attaches attributes (P(a) # answer(a)), which would change what the formula asks.
_LINE_COMMENT = re.compile(r"//")
_COMMENT_LINE = re.compile(r"^\s*(#|//)")
# A list marker before a formula or declaration: "1." "1)" "(1)" "-" "*" "•", then white space.
_LIST_MARKER = re.compile(r"^(?P<marker>\d+[.)]|\(\d+\)|[-*•])[ \t]+(?=\S)")


@dataclass
class Sections:
    """A program's formula lines by section, each as (line, formula text, comment, column of the formula)."""

    predicates: list[tuple[int, str, str, int]] = field(default_factory=list)  # line, formula, comment, col0
    premises: list[tuple[int, str, str, int]] = field(default_factory=list)
    conclusion: list[tuple[int, str, str, int]] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)
    markers: list[tuple[int, str | None]] = field(default_factory=list)  # each entry's line and list marker


def _header(line: str) -> tuple[str, str, int] | None:
    """A section header's name (predicates / premises / conclusion), the text after it and that text's column."""
    m = _HEADER.match(line)
    if m is None:
        return None
    colon = m.group("colon") or m.group("colon_in") or m.group("colon_out")
    rest = m.group("rest")
    if colon and rest.startswith("::"):
        return None  # "Premises ::: ..." is a (strange) formula with a comment, not a header
    if not colon and (rest.strip() or not (m.group("hashes") or m.group("em"))):
        return None  # "Premises" alone could be a proposition; "Premise(x)" is a predicate
    name = m.group("name").lower()
    name = "conclusion" if name.startswith("conclusion") else name if name.endswith("s") else name + "s"
    return name, rest, m.start("rest") + 1


def split_sections(text: str) -> Sections:
    """Read a program's lines into its sections (module docstring); raises ProgramError with the line."""
    sections = Sections()
    current: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.replace("\ufeff", "")
        if _CODE_FENCE.match(line):
            continue
        header = _header(line)
        if header is None and _COMMENT_LINE.match(line):
            continue
        rest_col = 1
        if header:
            name, line, rest_col = header
            if name in sections.seen:
                raise ProgramError(
                    f"a second '{name.capitalize()}:' section (the first is on line {sections.seen[name]}); "
                    "use each section once",
                    number,
                )
            sections.seen[name] = number
            current = name
            if not line.strip():
                continue
        formula, _, comment = line.partition(":::")
        hash_comment = _LINE_COMMENT.search(formula)
        if hash_comment:
            comment = comment or formula[hash_comment.end() :]
            formula = formula[: hash_comment.start()]
        if not formula.strip():
            if comment.strip() and not hash_comment:
                raise ProgramError(
                    f"empty formula before ':::' (comment {comment.strip()[:60]!r}); "
                    "write the formula for this sentence",
                    number,
                )
            continue
        if current is None:
            raise ProgramError(
                "text before any section; a program starts with 'Predicates:', "
                "then 'Premises:' and 'Conclusion:' lines",
                number,
            )
        col0 = rest_col + (len(formula) - len(formula.lstrip()))
        formula = formula.strip()
        marker = _LIST_MARKER.match(formula)
        if marker:
            col0 += marker.end()
            formula = formula[marker.end() :]
        sections.markers.append((number, marker.group("marker") if marker else None))
        getattr(sections, current).append((number, formula, comment.strip(), col0))
    _check_dash_markers(sections.markers)
    return sections


def _check_dash_markers(markers: list[tuple[int, str | None]]) -> None:
    """Refuse a '-' list marker unless every formula line of the program has a list marker.

    Prover9 writes negation as '-', so '- P(a)' among unmarked lines could be a negated formula;
    in a program whose every line is a list item it is a list marker.
    """
    if any(m is None for _, m in markers):
        for number, marker in markers:
            if marker == "-":
                raise ProgramError(
                    "'- ' before a formula is read as a list marker only when every line of the program has one "
                    "(here other lines do not, so it could be Prover9's negation '-'): write ¬ for a negation, "
                    "or remove the '-'",
                    number,
                )
