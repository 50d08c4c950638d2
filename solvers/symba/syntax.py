"""The SymBa clause language ("symba"): its parser, which says what is wrong and where.

SymBa (symbolic backward chaining) proves a goal top-down; where a subgoal has no clause, its
method asks an LLM for one statement and retries. This module reads the language of those
statements: SymBa's own solver's language (clingo's syntax, read top-down), written anew. The
terms, clauses and printer are in :mod:`.terms_syntax`, arithmetic in :mod:`.arith_eval`, the
prover in :mod:`.engine`.

Language
--------

A program is a sequence of statements, each ending in ``.``, and exactly one query::

    % ProofWriter record 243 (left-recursive rule)
    is(mouse, blue). is(mouse, red).
    eats(X, mouse) :- is(X, red).
    is(mouse, nice) :- eats(X, mouse).
    is(bear, red) :- is(X, red), chases(X, bear).
    chases(X, bear) :- is(X, nice), is(X, blue).
    ?- eats(bear, mouse).

* ``%`` starts a comment that runs to the end of the line, except between two
  arithmetic operands on one line (``X = Y % 3``), where it is the modulo operator.
  Whitespace and line breaks are free; a statement may span lines.
* Terms: constants are lower-case identifiers (``bald_eagle``), numbers (``3``,
  ``-2``, ``2.5``, ``1e-3``) or double-quoted strings (``"New York"``, escapes
  ``\\"``, ``\\\\``, ``\\n``, ``\\t``); variables start with an upper-case letter
  or ``_``; each ``_`` alone is a fresh anonymous variable. There are no function
  symbols: ``f(a)`` as an argument is an error (arithmetic aside, below). A quoted
  string that spells a number (``"18"``, ``"-2.5"``: digits, an optional sign and
  fraction) is that number, as SymBa's solver reads it: numbers and strings compare
  by value (``"18" = 18`` holds). Any other string is a value of its own, distinct
  from the identifier with the same letters, and may be any text: a whole sentence
  (``checkIf("The applicant was informed promptly.", Ans)``) is an argument like any other.
* Atoms: ``pred(arg, ...)`` or a bare ``pred``. ``-pred(...)`` is classical
  negation: a predicate of its own, named ``-pred``, usable wherever an atom is
  (heads, bodies, under ``not``, the query). Nothing relates ``p`` and ``-p``: a
  program may derive both (no consistency check, unlike an answer-set solver).
* Clauses: facts ``h.`` and rules ``h :- b1, ..., bn.`` A body item is a literal:
  an atom, ``not atom`` (negation as failure; ``\\+ atom``, ``not(atom)`` too), or a
  comparison ``L op R`` with ``op`` in ``= != < <= > >=`` (also written ``==``,
  ``\\=``, ``<>``, ``=<``, and Prolog's ``X is Expr`` for ``=``); or one of:

  - a *disjunction in braces* ``{e1; e2; ...}``: ``h :- a, {b; c, d}.`` holds when
    ``a`` and (``b`` or both ``c`` and ``d``) hold; an element may also be written
    ``l : c1, ..., cn`` (``l`` with its condition: all of them). The statement reads as
    one clause per alternative (``h :- a, b.`` and ``h :- a, c, d.``), as SymBa's solver
    unpacks it.
  - a *count aggregate* ``#count{T1, ..., Tk : c1, ..., cn; ...} >= 1`` (also ``> 0``,
    ``!= 0``, ``1 <= #count{...}``, or no guard, which SymBa's solver reads the same way):
    at least one element's condition holds, so it reads as the disjunction of the
    conditions (an element without ``:`` is its literals). Any other guard (``>= 2``,
    ``= 0``) is refused (``unsupported``): SymBa's solver would read it as the same
    disjunction, which is not what it says.
* Denials: ``not h.`` and ``not h :- b1, ..., bn.`` (``not`` before the head) state
  that ``h`` is false (where the body holds), as SymBa's data writes a negative
  sentence ("The bald eagle does not eat the mouse." is ``not eats(bald_eagle, mouse).``).
  Their meaning, as SymBa's solver reads them: a denial is an integrity constraint
  ``:- b1, ..., bn, h.`` -- it derives nothing (``not h`` in a body is negation as
  failure either way: it holds exactly when ``h`` has no proof), but a program in which
  some instance of the body holds and the same instance of ``h`` is provable is
  *inconsistent*, and SymBa's solver then proves no query at all (its consistency check
  runs first). So a denial changes an answer only by making the program inconsistent:
  the query is then not proved (``False``; :mod:`.engine` says which denial, on which
  line). (SymBa's solver also lets a failing denial body make ``not h`` fail when ``h``
  has no rule of its own; that reading depends on which unrelated rules exist, and is
  not followed here.)
* Arithmetic, in comparisons and in atom arguments: numbers, variables, ``+ - * /
  ** %``, parentheses, unary minus, ``round(E)``, ``max(E, ...)``, ``min(E, ...)``,
  ``abs(E)``. ``**`` binds tighter than unary minus (``-2 ** 2`` is ``-4``) and
  groups to the right. ``/`` is true division (``7 / 2`` is ``3.5``), ``round``
  rounds halves away from zero (:mod:`.arith_eval`).
* Comparisons hold between any two ground values: ``=``/``!=`` are identity of values,
  ``< <= > >=`` follow one total order (numbers by value, then identifier constants,
  then strings, each in the order of their text; :func:`.arith_eval.compare`).
* Pooling, as in clingo: ``(a;b)`` in an argument, or ``p(a;b)`` / ``p(a, b; c, d)``
  (``;`` between whole argument tuples), expands the statement into one clause per
  combination, in heads and bodies alike (``p :- q(1;2).`` is ``p :- q(1).`` and
  ``p :- q(2).``; under ``not`` too).
* The query ``?- goal.`` is one literal: an atom (``is(bob, red)``, or with
  variables, ``answer(X)``, which enumerates the bindings) or ``not atom``.
* Not supported, with a message that says so: integrity constraints written ``:- b.``,
  disjunctive or choice heads, aggregates other than ``#count{...} >= 1``, conjunctive
  queries, function symbols.

Malformed text raises :class:`~symbolkg.solvers.outcomes.ProgramError` with the line
number; :func:`parse` never raises anything else. :func:`.terms_syntax.format_clause` and
friends print terms back in the same syntax (``parse(format(p)) == p``).
:func:`parse_term` and :func:`parse_literal` read one term or literal as the printer writes
it (proof trees and certificates). :func:`from_prolog` rewrites a pure Prolog program into
this language.

One module, long because it is one grammar read top to bottom: the tokenizer, the recursive-descent
parser and the expansion of pools, disjunctions in braces and anonymous variables into plain
clauses share the token positions every error message names. The terms and their printer are
apart (:mod:`.terms_syntax`), and so is arithmetic (:mod:`.arith_eval`).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from symbolkg.solvers.outcomes import ErrorKind, ProgramError
from symbolkg.solvers.symba.terms_syntax import (
    ARITH_FUNCS,
    Atom,
    Clause,
    Comparison,
    Expr,
    Goal,
    Literal,
    Naf,
    Program,
    Str,
    Term,
    Undefined,
    Var,
    format_atom,
    format_term,
    is_number,
    normalize_number,
)

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<nl>\n)
  | (?P<comment>%[^\n]*)
  | (?P<num>\d+\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)
  | (?P<name>[a-z][A-Za-z0-9_]*)
  | (?P<var>[A-Z_][A-Za-z0-9_]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<op>:-|\?-|\\\+|\*\*|<=|>=|=<|!=|\\=|<>|==|\#count\b|[().,;:{}<>=+\-*/])
  | (?P<bad>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_MOD_NEXT_RE = re.compile(r"[ \t]*(?:\d|[A-Z_]|\(|-|(?:round|max|min|abs)\s*\()")
_CMP_TOKENS = {
    "=": "=",
    "==": "=",
    "!=": "!=",
    "\\=": "!=",
    "<>": "!=",
    "<": "<",
    "<=": "<=",
    "=<": "<=",
    ">": ">",
    ">=": ">=",
}
_ARG_END = frozenset({",", ")", ";"})
#: ``n op #count{...}`` read as ``#count{...} op' n``.
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
#: The guards of a ``#count`` that mean "at least one element holds".
_AT_LEAST_ONE = frozenset({(">=", 1), (">", 0), ("!=", 0)})
#: A body item: its alternatives, each a conjunction of literals (each literal with its pooled options).
_Item = list
_MAX_EXPANSION = 10_000
_MAX_NESTING = 100


class _Tok(NamedTuple):
    kind: str  # num, name, var, str, op, eof
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class _Pool:
    options: tuple


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    append = toks.append
    line, pos = 1, 0
    while True:
        for m in _TOKEN_RE.finditer(text, pos):
            kind = m.lastgroup
            if kind == "ws":
                continue
            if kind == "nl":
                line += 1
                continue
            if kind == "comment":
                # `%` between two operands on one line is the modulo operator: emit it and
                # tokenize the rest of the line again.
                prev = toks[-1] if toks else None
                start = m.start()
                if (
                    prev is not None
                    and prev.line == line
                    and (prev.kind in ("num", "var") or prev.text == ")")
                    and _MOD_NEXT_RE.match(text, start + 1)
                ):
                    append(_Tok("op", "%", line))
                    pos = start + 1
                    break
                continue
            if kind == "bad":
                raise _bad_character(text, m.start(), line)
            append(_Tok(kind, m.group(), line))
        else:
            break
    append(_Tok("eof", "", line))
    return toks


def _bad_character(text: str, pos: int, line: int) -> ProgramError:
    ch = text[pos]
    snippet = text[pos : pos + 12].split("\n")[0]
    hint = ""
    if ch == "'":
        hint = '; quote strings with double quotes ("...")'
    elif ch == '"':
        hint = "; a string must close on the same line"
    elif ch == "#":
        hint = "; the only aggregate is #count{...}"
    elif ch.isalpha():
        hint = "; identifiers use ASCII letters, digits and '_'"
    return ProgramError(f"unexpected character {ch!r} at {snippet!r}{hint}", line)


def _number(text: str) -> int | float:
    if re.fullmatch(r"\d+", text):
        return normalize_number(int(text))
    return normalize_number(float(text))


def _string(value: str, line: int) -> Term:
    """A quoted string; one that spells a number (``"18"``, ``"-2.5"``) is that number (as SymBa reads it)."""
    if _NUMERIC_STRING_RE.fullmatch(value):
        try:
            return normalize_number(int(value) if "." not in value else float(value))
        except Undefined:
            raise ProgramError(f"number {value} is too large", line) from None
    return Str(value)


_NUMERIC_STRING_RE = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _unescape(body: str, line: int) -> str:
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            nxt = body[i + 1]
            if nxt not in _ESCAPES:
                raise ProgramError(f'unknown escape \\{nxt} in a string (use \\" \\\\ \\n \\t)', line)
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}


def _element_has_terms(toks: list[_Tok], i: int) -> bool:
    """Whether the ``#count`` element starting at token ``i`` is ``terms : condition`` (a ':' before its end)."""
    depth = 0
    for tok in toks[i:]:
        if tok.kind == "eof":
            return False
        if tok.kind == "op":
            if tok.text == "(":
                depth += 1
            elif tok.text == ")":
                depth -= 1
            elif depth == 0 and tok.text in (";", "}"):
                return False
            elif depth == 0 and tok.text == ":":
                return True
    return False


def _describe(tok: _Tok) -> str:
    return "the end of the program" if tok.kind == "eof" else repr(tok.text)


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokenize(text)
        self.i = 0
        self.tok = self.toks[0]
        self.depth = 0
        self.saw_anon = False  # the current statement has an anonymous variable `_`
        self.vars: dict[str, Var] = {}  # one object per name: dict lookups then hit by identity

    # -- token helpers
    def peek(self, k: int = 1) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self) -> _Tok:
        t = self.tok
        if t.kind != "eof":
            self.i += 1
            self.tok = self.toks[self.i]
        return t

    def var(self, name: str) -> Var:
        if name == "_":
            self.saw_anon = True
        v = self.vars.get(name)
        if v is None:
            v = self.vars[name] = Var(name)
        return v

    def is_op(self, text: str, tok: _Tok | None = None) -> bool:
        # operator texts never collide with other tokens' texts (names, numbers, quoted strings)
        return (tok or self.tok).text == text

    def expect_op(self, text: str, what: str) -> _Tok:
        if not self.is_op(text):
            raise ProgramError(f"expected {text!r} {what}, found {_describe(self.tok)}", self.tok.line)
        return self.take()

    # -- statements
    def program(self) -> Program:
        clauses: list[Clause] = []
        goals: list[Goal] = []
        while self.tok.kind != "eof":
            if self.is_op("?-"):
                goals.append(self.query())
            else:
                clauses.extend(self.clause())
        if not goals:
            raise ProgramError(
                "the program has no query: add one line '?- goal.' such as '?- is(bob, red).'",
                None,
                ErrorKind.NO_ANSWER,
            )
        if len(goals) > 1:
            lines = ", ".join(str(g.source_line) for g in goals)
            raise ProgramError(
                f"the program must have exactly one query '?- goal.', found {len(goals)} (lines {lines})",
                goals[1].source_line,
                ErrorKind.NO_ANSWER,
            )
        rules = tuple(c for c in clauses if not c.negated)
        return Program(rules, goals[0], tuple(c for c in clauses if c.negated))

    def end_of_statement(self, start: int, what: str) -> None:
        if self.is_op("."):
            self.take()
            return
        tok = self.tok
        if tok.kind == "eof":
            raise ProgramError(f"missing '.' at the end of the {what} that starts on line {start}", tok.line)
        if self.is_op(";"):
            raise ProgramError(
                "';' is not supported here (it pools arguments, p(a;b), and separates the alternatives of a body "
                f"disjunction in braces, h :- {{a; b}}.); found in the {what} that starts on line {start}",
                tok.line,
                ErrorKind.UNSUPPORTED,
            )
        raise ProgramError(
            f"expected ',' or '.' after a literal in the {what} that starts on line {start}, "
            f"found {_describe(tok)} (missing '.' at the end of the previous statement?)",
            tok.line,
        )

    def query(self) -> Goal:
        start = self.take().line  # '?-'
        goal = self.goal_literal(start)
        if self.is_op(","):
            raise ProgramError(
                "the query must be a single atom or 'not atom', not a conjunction: "
                "define a rule for the conjunction and query its head",
                self.tok.line,
                ErrorKind.NO_ANSWER,
            )
        self.end_of_statement(start, "query")
        return goal

    def goal_literal(self, line: int) -> Goal:
        negated = False
        if self.is_naf_start():
            self.take()
            negated = True
        atoms = self.atom_with_paren(allow_paren=negated) if negated else self.atom_options(classical_ok=True)
        if len(atoms) != 1 or _has_pool(atoms[0]):
            raise ProgramError("pooling (';') is not allowed in the query: ask one goal", line, ErrorKind.NO_ANSWER)
        atom = atoms[0]
        if self.tok.kind == "op" and (self.tok.text in _CMP_TOKENS):
            raise ProgramError(
                "the query must be an atom or 'not atom', not a comparison: "
                "define a rule such as 'answer(X) :- ...' and query it",
                self.tok.line,
                ErrorKind.NO_ANSWER,
            )
        return Goal(_number_anons([_mark_anons(atom)])[0], negated, line)

    def is_naf_start(self) -> bool:
        tok = self.tok
        if tok.kind == "op" and tok.text == "\\+":
            return True
        if tok.kind == "name" and tok.text == "not":
            nxt = self.peek()
            return nxt.kind in ("name", "var") or (nxt.kind == "op" and nxt.text in ("(", "-"))
        return False

    def clause(self) -> list[Clause]:
        start = self.tok.line
        self.saw_anon = False
        if self.is_op(":-"):
            raise ProgramError(
                "integrity constraints (':- body.') are not supported: write rules that conclude an atom",
                start,
                ErrorKind.UNSUPPORTED,
            )
        if self.is_op("{") or self.is_op("#count"):
            raise ProgramError(
                "choice rules and aggregates in a head are not supported: a head is one atom "
                "(a disjunction in braces belongs in a body: h :- {a; b}.)",
                start,
                ErrorKind.UNSUPPORTED,
            )
        negated = self.is_naf_start()
        if negated:  # a denial `not h :- body.`
            self.take()
            if self.is_naf_start():
                raise ProgramError("double negation 'not not' is not supported", start, ErrorKind.UNSUPPORTED)
            heads = self.atom_with_paren(allow_paren=True)
        else:
            heads = self.atom_options(classical_ok=True, where="clause head")
        if self.tok.kind == "op" and self.tok.text in _CMP_TOKENS:
            raise ProgramError(
                f"a clause head must be an atom, found a comparison after {format_atom(heads[0])}", self.tok.line
            )
        body: list[_Item] = []
        if self.is_op(":-"):
            self.take()
            body.append(self.body_item())
            while self.is_op(","):
                self.take()
                body.append(self.body_item())
        elif self.is_op(","):
            raise ProgramError(
                "expected ':-' or '.' after the clause head, found ','; "
                "a fact states one atom (write one fact per atom)",
                self.tok.line,
            )
        self.end_of_statement(start, "clause")
        return _expand(heads, body, start, self.saw_anon, negated)

    # -- body items: a literal, a disjunction in braces, a #count aggregate
    def body_item(self) -> _Item:
        """One conjunct of a body, as its alternatives (each a conjunction of pooled literals)."""
        if self.is_op("{"):
            return self.disjunction(self.take().line, "}")
        if self.is_op("#count") or (self.peek(2).text == "#count" and self.peek().text in _CMP_TOKENS):
            return self.count_aggregate()
        return [[self.body_literal()]]

    def disjunction(self, line: int, close: str) -> _Item:
        """``{e1; e2; ...}`` after its ``{``: each element ``l1, ..., ln`` (or ``l : c1, ..., cn``) a conjunction."""
        alternatives: list[list[list[Literal]]] = []
        while True:
            if self.is_op(close):
                raise ProgramError(
                    f"an empty element in braces (expected a literal, found {_describe(self.tok)})", self.tok.line
                )
            conjunction = [self.body_literal()]
            while self.is_op(",") or self.is_op(":"):
                self.take()
                conjunction.append(self.body_literal())
            alternatives.append(conjunction)
            if self.is_op(";"):
                self.take()
                continue
            if self.is_op(close):
                self.take()
                return alternatives
            raise ProgramError(
                f"expected ';' or '{close}' in the braces opened on line {line}, found {_describe(self.tok)}",
                self.tok.line,
            )

    def count_aggregate(self) -> _Item:
        """``#count{T : C; ...} >= 1`` (or ``1 <= #count{...}``, or no guard): some element's condition holds."""
        line = self.tok.line
        guards = []
        if not self.is_op("#count"):  # a left guard `n op #count{...}`
            bound = self.expr()
            guards.append((_FLIPPED[_CMP_TOKENS[self.take().text]], bound))
        self.take()  # '#count'
        self.expect_op("{", "after #count")
        alternatives: list[list[list[Literal]]] = []
        while True:
            if _element_has_terms(self.toks, self.i):
                self.expr()  # the counted terms: only whether some tuple exists matters for '>= 1'
                while self.is_op(","):
                    self.take()
                    self.expr()
                self.expect_op(":", "after the counted terms of a #count element")
            conjunction = [self.body_literal()]
            while self.is_op(","):
                self.take()
                conjunction.append(self.body_literal())
            alternatives.append(conjunction)
            if self.is_op(";"):
                self.take()
                continue
            self.expect_op("}", f"to close the #count on line {line}")
            break
        if self.tok.kind == "op" and self.tok.text in _CMP_TOKENS:
            op = _CMP_TOKENS[self.take().text]
            guards.append((op, self.expr()))
        for op, bound in guards:
            if (op, bound) not in _AT_LEAST_ONE:
                raise ProgramError(
                    f"#count with the guard '{op} {_show(bound)}' is not supported: only 'at least one' "
                    "(#count{...} >= 1, or no guard) is, read as a disjunction of its elements",
                    line,
                    ErrorKind.UNSUPPORTED,
                )
        return alternatives

    def body_literal(self) -> list[Literal]:
        line = self.tok.line
        if self.tok.kind == "op" and self.tok.text in (".", ","):
            raise ProgramError(f"expected a literal after ':-' or ',', found {_describe(self.tok)}", line)
        if self.tok.kind == "name" and self.tok.text == "not" and self.peek().text in ("{", "#count"):
            raise ProgramError(
                "'not' applies to one atom, not to a disjunction or an aggregate: write 'not a, not b' "
                "for 'neither a nor b'",
                line,
                ErrorKind.UNSUPPORTED,
            )
        if self.tok.kind == "name" and self.tok.text == "not" and self.peek().kind in ("num", "str"):
            raise ProgramError(
                "'not' applies to atoms; for a comparison write the opposite one (e.g. X != 2 for not X = 2)",
                line,
                ErrorKind.UNSUPPORTED,
            )
        if self.is_naf_start():
            self.take()
            if self.is_naf_start():
                raise ProgramError("double negation 'not not' is not supported", line, ErrorKind.UNSUPPORTED)
            return [Naf(a) for a in self.atom_with_paren(allow_paren=True)]
        if (
            self.is_op("-")
            and self.peek().kind == "name"
            and not (self.peek().text in ARITH_FUNCS and self.is_op("(", self.peek(2)))
        ):
            return self.atom_options(classical_ok=True)
        if self.tok.kind == "name" and self.tok.text not in ARITH_FUNCS and self.peek().text == "(":
            atoms = self.atom_options(classical_ok=False)  # fast path: an atom literal
            if self.tok.kind == "op" and self.tok.text in _CMP_TOKENS:
                raise ProgramError(
                    f"{atoms[0].pred}(...) is not arithmetic: comparisons take numbers, variables, "
                    "constants and + - * / ** % round max min abs",
                    line,
                )
            return atoms
        left = self.expr()
        tok = self.tok
        op = None
        if tok.kind == "op" and tok.text in _CMP_TOKENS:
            op = _CMP_TOKENS[tok.text]
        elif tok.kind == "name" and tok.text == "is" and not self.is_op("(", self.peek()):
            op = "="
        if op is not None:
            self.take()
            right = self.expr()
            if isinstance(left, _AtomTerm) or isinstance(right, _AtomTerm):
                bad = left if isinstance(left, _AtomTerm) else right
                raise ProgramError(
                    f"{bad.text}(...) is not arithmetic: comparisons take numbers, variables, "
                    "constants and + - * / ** % round max min abs",
                    line,
                )
            return [Comparison(op, lhs, rhs) for lhs, rhs in itertools.product(_expand_term(left), _expand_term(right))]
        if isinstance(left, _AtomTerm):
            return list(left.atoms)
        if type(left) is str:
            return [Atom(left)]
        if type(left) is Expr and left.op in ARITH_FUNCS:  # a predicate named round/max/min/abs
            return _expand_atom(Atom(left.op, left.args))
        raise ProgramError(
            "expected a literal (an atom, 'not atom' or a comparison such as X = Y + 1), "
            f"found {_show(left)} followed by {_describe(tok)}",
            line,
        )

    def atom_with_paren(self, allow_paren: bool) -> list[Atom]:
        if allow_paren and self.is_op("("):
            self.take()
            atoms = self.atom_options(classical_ok=True)
            self.expect_op(")", "to close 'not('")
            return atoms
        return self.atom_options(classical_ok=True)

    def atom_options(self, classical_ok: bool, where: str = "literal") -> list[Atom]:
        line = self.tok.line
        neg = ""
        if classical_ok and self.is_op("-"):
            self.take()
            neg = "-"
        tok = self.tok
        if tok.kind != "name":
            found = _describe(tok)
            hint = " (variables cannot be predicates)" if tok.kind == "var" else ""
            raise ProgramError(f"expected an atom such as pred(a, B) as {where}, found {found}{hint}", line)
        self.take()
        if tok.text in ("not", "is") and not self.is_op("("):
            raise ProgramError(f"{tok.text!r} cannot be used as a predicate name here", tok.line)
        if not self.is_op("("):
            return [Atom(neg + tok.text)]
        tuples = self.arguments(tok.text)
        return [Atom(neg + tok.text, t) for t in tuples]

    def arguments(self, pred: str) -> list[tuple]:
        """``( tuple {';' tuple} )`` where ``tuple := arg {',' arg}``; returns each tuple."""
        open_tok = self.take()  # '('
        if self.is_op(")"):
            raise ProgramError(
                f"{pred}() has empty parentheses: write the bare name {pred} for an atom without arguments",
                open_tok.line,
            )
        tuples: list[tuple] = []
        current: list[Term] = []
        while True:
            current.append(self.argument(pred))
            if self.is_op(","):
                self.take()
                continue
            if self.is_op(";"):
                self.take()
                tuples.append(tuple(current))
                current = []
                continue
            if self.is_op(")"):
                self.take()
                tuples.append(tuple(current))
                return tuples
            raise ProgramError(
                f"expected ',' or ')' in the arguments of {pred}(...), found {_describe(self.tok)}", self.tok.line
            )

    def argument(self, pred: str) -> Term:
        tok = self.tok
        if tok.kind in ("name", "var") and self.toks[self.i + 1].text in _ARG_END:
            # fast path: a lone constant or variable
            if tok.kind == "name":
                self.take()
                return tok.text
            if tok.kind == "var":
                self.take()
                return self.var(tok.text)
        line = tok.line
        t = self.expr()
        if isinstance(t, _AtomTerm):
            raise ProgramError(
                f"function symbols are not supported: {t.text}(...) inside {pred}(...); arguments are constants, "
                "numbers, strings, variables or arithmetic",
                line,
                ErrorKind.UNSUPPORTED,
            )
        return t

    # -- arithmetic: expr := term {(+|-) term}; term := unary {(*|/|%) unary};
    #    unary := '-' unary | power; power := primary ['**' unary]
    def nest(self) -> None:
        self.depth += 1
        if self.depth > _MAX_NESTING:
            raise ProgramError("expression nested too deeply", self.tok.line)

    def expr(self) -> Any:
        self.nest()
        try:
            left = self.term()
            while self.tok.kind == "op" and self.tok.text in ("+", "-"):
                op = self.take().text
                left = _binop(op, left, self.term(), self.tok.line)
            return left
        finally:
            self.depth -= 1

    def term(self) -> Any:
        left = self.unary()
        while self.tok.kind == "op" and self.tok.text in ("*", "/", "%"):
            op = self.take().text
            left = _binop(op, left, self.unary(), self.tok.line)
        return left

    def unary(self) -> Any:
        if self.is_op("-"):
            line = self.take().line
            self.nest()
            try:
                inner = self.unary()
            finally:
                self.depth -= 1
            if is_number(inner):
                return normalize_number(-inner)
            _check_arith(inner, line)
            return Expr("neg", (inner,))
        base = self.primary()
        if self.is_op("**"):
            line = self.take().line
            self.nest()
            try:
                exponent = self.unary()
            finally:
                self.depth -= 1
            return _binop("**", base, exponent, line)
        return base

    def primary(self) -> Any:
        tok = self.tok
        if tok.kind == "num":
            self.take()
            try:
                return _number(tok.text)
            except Undefined:
                raise ProgramError(f"number {tok.text} is too large", tok.line) from None
        if tok.kind == "var":
            self.take()
            return self.var(tok.text)
        if tok.kind == "str":
            self.take()
            return _string(_unescape(tok.text[1:-1], tok.line), tok.line)
        if tok.kind == "name":
            self.take()
            if not self.is_op("("):
                return tok.text
            if tok.text in ARITH_FUNCS:
                self.take()
                args = [self.expr()]
                while self.is_op(","):
                    self.take()
                    args.append(self.expr())
                self.expect_op(")", f"to close {tok.text}(")
                if tok.text in ("round", "abs") and len(args) != 1:
                    raise ProgramError(f"{tok.text}() takes one argument, found {len(args)}", tok.line)
                for a in args:
                    _check_arith(a, tok.line)
                return Expr(tok.text, tuple(args))
            tuples = self.arguments(tok.text)
            return _AtomTerm(tok.text, [Atom(tok.text, t) for t in tuples])
        if tok.kind == "op" and tok.text == "(":
            self.take()
            options = [self.expr()]
            while self.is_op(";"):
                self.take()
                options.append(self.expr())
            if self.is_op(","):
                raise ProgramError(
                    "tuples '(a, b)' are not supported as arguments; pool alternatives with ';' as in (a;b)",
                    self.tok.line,
                    ErrorKind.UNSUPPORTED,
                )
            self.expect_op(")", "to close '('")
            if len(options) == 1:
                return options[0]
            for o in options:
                if isinstance(o, _AtomTerm):
                    raise ProgramError(
                        f"function symbols are not supported: {o.text}(...) in a pool", tok.line, ErrorKind.UNSUPPORTED
                    )
            return _Pool(tuple(options))
        raise ProgramError(
            f"expected a term (constant, number, string, variable or expression), found {_describe(tok)}", tok.line
        )


@dataclass
class _AtomTerm:
    """``name(args)`` met where a term or a literal may stand (the caller decides which)."""

    text: str
    atoms: list


def _show(t: Any) -> str:
    if type(t) is _Pool:
        return "(" + ";".join(_show(o) for o in t.options) + ")"
    if isinstance(t, _AtomTerm):
        return f"{t.text}(...)"
    try:
        return format_term(t)
    except TypeError:  # an expression with a pool inside
        return "an expression"


def _check_arith(t: Any, line: int) -> None:
    if isinstance(t, _AtomTerm):
        raise ProgramError(
            f"{t.text}(...) is not arithmetic: expressions take numbers, variables and + - * / ** % round max min abs",
            line,
        )


def _binop(op: str, left: Any, right: Any, line: int) -> Expr:
    _check_arith(left, line)
    _check_arith(right, line)
    return Expr(op, (left, right))


def _has_pool(x: Any) -> bool:
    if type(x) is _Pool:
        return True
    if type(x) is Expr:
        return any(_has_pool(a) for a in x.args)
    if type(x) is Atom:
        return any(_has_pool(a) for a in x.args)
    return False


def _expand_term(t: Any) -> list:
    if type(t) is _Pool:
        return [x for o in t.options for x in _expand_term(o)]
    if type(t) is Expr:
        return [Expr(t.op, args) for args in itertools.product(*[_expand_term(a) for a in t.args])]
    return [t]


def _expand_atom(a: Atom) -> list:
    if not any(_has_pool(x) for x in a.args):
        return [a]
    return [Atom(a.pred, args) for args in itertools.product(*[_expand_term(x) for x in a.args])]


def _expand_literal(lit: Literal) -> list:
    if type(lit) is Atom:
        return _expand_atom(lit)
    if type(lit) is Naf:
        return [Naf(a) for a in _expand_atom(lit.atom)]
    pairs = itertools.product(_expand_term(lit.left), _expand_term(lit.right))
    return [Comparison(lit.op, lhs, rhs) for lhs, rhs in pairs]


def _number_anons(items: list) -> list:
    """Renumber the anonymous variables of one clause (head and body) in order of appearance."""
    counter = itertools.count(1)

    def term(t: Any) -> Any:
        if type(t) is Var and t.anon:
            return Var("_", next(counter))
        if type(t) is Expr:
            return Expr(t.op, tuple(term(a) for a in t.args))
        return t

    def lit(x: Any) -> Any:
        if type(x) is Atom:
            return Atom(x.pred, tuple(term(a) for a in x.args))
        if type(x) is Naf:
            return Naf(lit(x.atom))
        return Comparison(x.op, term(x.left), term(x.right))

    return [lit(x) for x in items]


def _mark_anons(x: Any) -> Any:
    """Turn parsed ``Var('_')`` into anonymous variables (numbered later, per clause)."""
    if type(x) is Var:
        return Var("_", -1) if x.name == "_" else x
    if type(x) is Expr:
        return Expr(x.op, tuple(_mark_anons(a) for a in x.args))
    if type(x) is _Pool:
        return _Pool(tuple(_mark_anons(a) for a in x.options))
    if type(x) is Atom:
        return Atom(x.pred, tuple(_mark_anons(a) for a in x.args))
    if type(x) is Naf:
        return Naf(_mark_anons(x.atom))
    if type(x) is Comparison:
        return Comparison(x.op, _mark_anons(x.left), _mark_anons(x.right))
    return x


def _expand(heads: list, body: list, line: int, anon: bool = True, negated: bool = False) -> list:
    """One clause per combination of pooled and disjunctive alternatives, anonymous variables numbered per clause."""
    mark = _mark_anons if anon else (lambda x: x)
    head_opts = [h2 for h in heads for h2 in _expand_atom(mark(h))]
    item_opts = []  # per body item: its alternatives, each a tuple of literals
    for item in body:
        alternatives: list[tuple] = []
        for conjunction in item:
            per_literal = [[l2 for lit in options for l2 in _expand_literal(mark(lit))] for options in conjunction]
            alternatives.extend(itertools.product(*per_literal))
        item_opts.append(alternatives)
    total = len(head_opts)
    for opts in item_opts:
        total *= len(opts)
    if total > _MAX_EXPANSION:
        raise ProgramError(
            f"pooling and disjunction expand this statement into {total} clauses (more than {_MAX_EXPANSION})",
            line,
            ErrorKind.UNSUPPORTED,
        )
    out = []
    for head in head_opts:
        for combo in itertools.product(*item_opts):
            literals = [lit for conjunction in combo for lit in conjunction]
            if anon:
                items = _number_anons([head, *literals])
                out.append(Clause(items[0], tuple(items[1:]), line, negated))
            else:
                out.append(Clause(head, tuple(literals), line, negated))
    return out


def parse(text: str) -> Program:
    """Parse a SymBa program (see the module docstring for the language).

    Args:
        text: the program text, as written.

    Returns:
        The typed program, with pooling expanded.

    Raises:
        ProgramError: on malformed text, with the 1-based line; ``ErrorKind.NO_ANSWER``
            when the query is missing, repeated or not a single literal,
            ``ErrorKind.UNSUPPORTED`` for constructs outside the language.
    """
    if not isinstance(text, str):
        raise ProgramError(f"the program must be text, got {type(text).__name__}")
    try:
        return _Parser(text).program()
    except RecursionError:
        raise ProgramError("program nested too deeply to parse") from None


def parse_clause(text: str) -> list[Clause]:
    """Parse one statement (a fact or rule; the final ``.`` may be omitted).

    Args:
        text: e.g. ``"is(X, blue) :- is(X, cold)."``.

    Returns:
        The clauses it stands for (several when it uses pooling).

    Raises:
        ProgramError: malformed text, a query, or more than one statement.
    """
    text = text.strip() if isinstance(text, str) else text
    if not isinstance(text, str) or not text:
        raise ProgramError("empty statement: expected a fact 'pred(a).' or a rule 'head :- body.'")
    if not text.endswith("."):
        text += "."
    p = _Parser(text)
    if p.is_op("?-"):
        raise ProgramError("expected a fact or rule, found a query '?- ...'", 1)
    try:
        clauses = p.clause()
    except RecursionError:
        raise ProgramError("statement nested too deeply to parse") from None
    if p.tok.kind != "eof":
        raise ProgramError(f"expected one statement, found more text after '.': {_describe(p.tok)}", p.tok.line)
    return clauses


#: Prolog directives that do not change what a pure program derives (dropped by :func:`from_prolog`).
PROLOG_DECLARATIONS = ("dynamic", "table", "discontiguous")
#: The clause :func:`from_prolog` adds when a Prolog goal is more than one literal.
PROLOG_GOAL = "symbolkg_goal"


def from_prolog(text: str) -> str:
    """A Prolog knowledge base with a final ``?- goal.`` line, as a program of this language.

    For pure Prolog (facts, rules, ``\\+``, comparisons) the two read the same: SLDNF with
    tabling here, and on a stratified program SWI-Prolog's answer is the same. The rewriting
    keeps every line number: a declaration directive (``:- dynamic p/1.``, ``:- table``,
    ``:- discontiguous``: they change what fails or terminates, not what holds) becomes an empty
    line; a goal with several literals (``?- big(a), \\+ red(a).``) becomes the clause
    ``symbolkg_goal :- big(a), \\+ red(a).`` on its own line and the query
    ``?- symbolkg_goal.`` after it. Anything else outside this language (cuts, ``;``, lists,
    other directives) is left for :func:`parse` to refuse.

    Raises:
        ProgramError: a directive other than the declarations, or no ``?-`` goal line.
    """
    lines = text.splitlines()
    goal_at = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].lstrip().startswith("?-")), None)
    if goal_at is None:
        raise ProgramError(
            "a Prolog program to re-derive needs its goal as a final '?- goal.' line", None, ErrorKind.NO_ANSWER
        )
    out = []
    for number, line in enumerate(lines, start=1):
        directive = re.match(r"\s*:-\s*(\w+)", line)
        if directive and number - 1 != goal_at:
            if directive.group(1) not in PROLOG_DECLARATIONS:
                raise ProgramError(
                    f"the directive ':- {directive.group(1)}' is not part of this language "
                    f"(only {', '.join(PROLOG_DECLARATIONS)} declarations are dropped)",
                    number,
                    ErrorKind.UNSUPPORTED,
                )
            line = ""
        out.append(line)
    goal = out[goal_at].strip().removeprefix("?-").strip().removesuffix(".").strip()
    try:
        parse_goal(goal)
    except ProgramError:  # several literals: a clause of its own names the conjunction
        out[goal_at] = f"{PROLOG_GOAL} :- {goal}."
        out.append(f"?- {PROLOG_GOAL}.")
    return "\n".join(out) + "\n"


def parse_goal(text: str) -> Goal:
    """Parse a goal: ``atom`` or ``not atom``, optionally written ``?- goal.``.

    Raises:
        ProgramError: malformed text or not a single literal.
    """
    if not isinstance(text, str) or not text.strip():
        raise ProgramError("empty goal: expected an atom such as is(bob, red)", None, ErrorKind.NO_ANSWER)
    text = text.strip()
    if not text.startswith("?-"):
        text = "?- " + text
    if not text.endswith("."):
        text += "."
    p = _Parser(text)
    p.take()
    goal = p.goal_literal(1)
    if p.is_op(","):
        raise ProgramError("the goal must be a single atom or 'not atom'", p.tok.line, ErrorKind.NO_ANSWER)
    p.end_of_statement(1, "goal")
    if p.tok.kind != "eof":
        raise ProgramError(f"expected one goal, found more text: {_describe(p.tok)}", p.tok.line, ErrorKind.NO_ANSWER)
    return goal


def parse_term(text: str) -> Term:
    """One term as :func:`format_term` prints it (for proof-tree bindings)."""
    p = _Parser(text)
    t = p.expr()
    if isinstance(t, _AtomTerm) or type(t) is _Pool or p.tok.kind != "eof":
        raise ProgramError(f"not a term: {text!r}")
    return _mark_anons(t)


def parse_literal(text: str) -> Literal:
    p = _Parser(text + ".")
    lits = p.body_literal()
    if len(lits) != 1 or not p.is_op("."):
        raise ProgramError(f"not a single literal: {text!r}")
    p.take()
    if p.tok.kind != "eof":
        raise ProgramError(f"not a single literal: {text!r}")
    return _number_anons([_mark_anons(lits[0])])[0]
