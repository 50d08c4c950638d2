"""Logic-LM's first-order logic language (FOLIO): its syntax tree, parser and readings.

A program has three sections; text after ``:::`` on a line is a comment::

    Predicates:
    Dog(x) ::: x is a dog.
    Premises:
    ∀x (Dog(x) → Animal(x)) ::: All dogs are animals.
    Dog(rex) ::: Rex is a dog.
    Conclusion:
    Animal(rex) ::: Rex is an animal.

The answer is ``"True"`` when the premises entail the conclusion, ``"False"``
when they entail its negation and ``"Unknown"`` otherwise, decided by Prover9
(:mod:`symbolkg.solvers.fol.engine`, language ``logiclm-fol``) or by Z3
(:mod:`symbolkg.solvers.fol.z3_engine`, ``logiclm-fol-z3``). This module is the language's
syntax: the tree, the parser and the readings below; the text layer under it (sections, tokens)
is :mod:`symbolkg.solvers.fol.lexical_syntax`, the translation to Prover9's notation
:func:`symbolkg.solvers.fol.prover9_syntax.to_prover9`.

Grammar (a precedence-climbing parser; binding from tightest to loosest)::

    ¬  >  ∧  >  ∨  >  ⊕  >  →  >  ↔

``∧ ∨ ⊕ ↔`` group to the left, ``→`` to the right (``a → b → c`` is
``a → (b → c)``). A quantifier ``∀x`` / ``∃x`` takes everything to its right up
to the end of the enclosing parentheses (``∀x P(x) → Q(x)`` is
``∀x (P(x) → Q(x))``), the usual textbook convention and the one Logic-LM's
grammar encodes. Logic-LM itself gives all binary connectives one precedence
and groups them to the left, so ``A → B ∧ C`` means ``(A → B) ∧ C`` there; the
few recorded GPT-4 formulas where the two readings differ (FOLIO_dev_84/86,
"popular → rated ∧ above 9") mean the standard one, and the common
``A ∧ B → C`` reads the same either way.

Beyond Logic-LM's grammar this parser accepts (each with a test):

* quantifiers anywhere (``P(a) ∧ ∀x (...)``, ``∀x (A(x) → ∃y B(x, y))``),
  stacked (``∀x ∀y``, ``∀x∃y``, ``∀x, y``) or negated (``¬∃x``);
* ``¬`` before any formula, parenthesised or not; redundant parentheses;
* equality ``=`` and ``≠`` between terms;
* function terms ``Love(x, motherOf(x))``; predicates with no arguments;
* ASCII spellings ``~ & | -> <-> ⇒ ⇔`` and a stray trailing period.

Other models write the same logic in other spellings; each of these has one
reading, the one given (tests/solvers/fol/test_fol_robustness.py rewrites recorded
programs into them and requires the same formulas and answers):

* ``/\\`` is ``∧``, ``\\/`` is ``∨``, ``=>`` is ``→``, ``<=>`` is ``↔``, ``⊻`` is ``⊕``,
  and ``!`` is ``¬`` (``!=`` stays ``≠``);
* ``xor`` (any case) is ``⊕`` where a connective is expected, between two
  formulas, where a name cannot stand; elsewhere it is a name (``Xor(a)``);
* the quantifier words ``forall``, ``all`` (the universal) and ``exists`` (any
  case: ``ForAll``, ``EXISTS``) are ``∀`` / ``∃`` where a formula is expected
  and a name follows (``forall x P(x)``); elsewhere they are names;
* a ``.`` or ``:`` after a quantifier's variables (``∀x. P(x)``, ``∀x: P(x)``,
  NLTK's ``all x. P(x)`` and ``all x y. R(x, y)``) changes nothing: the
  quantifier still takes everything to its right, as it does without it. A
  ``.`` or ``:`` anywhere else is refused (``P(a). Q(a)`` is two sentences);
* Markdown section headers: ``### Premises``, ``**Premises:**``,
  ``**Premises**:``, ``__Premises__`` (with ``#`` or emphasis the ``:`` may be
  left out), and the singular ``Premise:`` / ``Predicate:``; a bare
  ``Premises`` line without ``:`` or Markdown stays what it was (a proposition);
* code fence lines (`````` ``` ``````, `````` ```fol ``````) are skipped;
* comments besides ``:::``: after ``//``, and whole lines starting with ``#`` or
  ``//`` (that are not headers). A ``#`` after a formula stays refused: Prover9
  writes attributes there (``P(a) # answer(a)``), which change what is asked;
* list markers before a formula or declaration: ``1.`` ``1)`` ``(1)`` ``*``
  ``•`` and ``-``, each followed by white space. Prover9 writes negation as
  ``-``, so a ``-`` marker is read only when every formula line of the program
  is a list item; a ``- `` line among unmarked ones is refused.

* a name in double quotes, straight or curly (``WorkingTitle("The Secret Dude
  Society", badults)``), is a constant named by the quoted text (white space
  runs read as one space), distinct from every unquoted name; only where a term
  stands: a quoted name where a formula is expected is refused;
* one surplus ``)`` at the end of a formula (``∀x (A(x) → (B(x) ∧ C(x))))``) is
  dropped when the formula means the same wherever the missing ``(`` is put
  (every placement that parses gives one formula); otherwise (``A ∧ B → C)``:
  ``(A ∧ B) → C`` or ``A ∧ (B → C)``) it is refused, as is more than one;
* ``Not(φ)`` / ``not(φ)`` (any case) around a formula with a predicate
  application, a connective, a quantifier or an equality in it is ``¬φ``
  (``Not(Dog(rex))``, ``not(P(a) ∧ Q(a))``): a predicate named ``not`` cannot
  take a formula as its argument. ``Not(rex)`` and ``Not(a, b)`` stay a
  predicate ``Not`` of constants, as in Logic-LM's grammar.

``not`` without parentheses is not negation: ``not P(x)`` is refused, asking
for ``¬`` (``not`` followed by a name would otherwise be a proposition named
``not`` and a missing connective). Nor are ``and``/``or``/``implies`` read as
words.

It also reads, each by one rule fixed by the notation (not by the data):

* **free variables in a premise.** A free ``x``, ``y``, ``z``, ``u``, ``v``,
  ``w`` (optionally with digits: Prover9's own variable letters) that no
  quantifier binds is universally quantified at the outermost level of its
  premise, ``DesignStyle(zaha, y) ⊕ DesignStyle(kelly, y)`` is
  ``∀y (DesignStyle(zaha, y) ⊕ DesignStyle(kelly, y))``. This is how Prover9
  reads free variables in assumptions, hence how Logic-LM's own pipeline
  (NLTK passing the formula through to Prover9) solved these programs; each
  premise is closed on its own.
* **free variables in the conclusion** have two readings: the recorded
  conclusions mean "every" in some programs (``Koala(x) ∧ Sleep(x)`` for
  "koalas sleep") and "some" or one individual in others (``Visit(juan, y) ∧
  Range(y)`` for "Juan visited a range"). The conclusion is decided under both,
  ∀ (``FolProgram.conclusion``) and ∃ (``FolProgram.existential_conclusion``);
  when they give the same answer that answer does not depend on the reading
  and stands (the proof says so; the certificate is the ∀ reading's), otherwise
  the program is refused (PARSE_ERROR, :class:`ErrorKind.UNDECLARED`) with both
  answers, so a repair knows which quantifier matters.
* **ellipses in a conjunction**: a premise ``A ∧ B ∧ ... ∧ C`` whose ``...``
  (or ``…``) is a conjunct of its top-level ``∧`` chain (parentheses around the
  whole premise change nothing) states at least ``A ∧ B
  ∧ C``; the elided conjuncts are unknown, so that is what it is read as. More
  premises only add consequences, so a True or False answer from the written
  conjuncts also holds with the elided ones; Uncertain might not, and is refused
  (PARSE_ERROR, :class:`ErrorKind.UNSUPPORTED`, naming the line). An ellipsis
  anywhere else (a disjunction, whose written part would say more than the
  sentence; inside parentheses; the conclusion) is refused.
* **membership** ``a ∈ S`` is ``S(a)`` when ``S`` is a unary predicate of the
  program (declared with one argument, or applied to one somewhere): the set
  is the predicate's extension. Any other ``a ∈ b`` (``y ∈ x`` with ``x`` a
  language family) is a binary relation ``∈`` between individuals that no
  program can otherwise name; without set axioms in the program that is all
  ``∈`` can mean. ``a ∉ b`` is ``¬(a ∈ b)``.

It rejects, with the line and a suggested rewrite: arithmetic comparisons
(``>``, ``<``, ``≤``, ``≥``) and subset (``⊆``), which Prover9 cannot
interpret; other ellipses (``...``) and ``_`` placeholders, whose meaning is a
guess (which items an ellipsis stands for; whether ``_`` is "some" or "any");
a predicate used with different
numbers of arguments, or against its declaration in ``Predicates:``
(:class:`ErrorKind.TYPE`); and anything that is not a formula. Other names
outside quantifiers are constants (``a``, ``bonnie``, ``GRE``, ``2000``);
predicates need no declaration.

One module, long because it is one grammar: the syntax tree, the formula and program parsers, the
printer (:func:`format_formula`, which reads back as it prints) and the symbol checks of a program
change together. Lexical normalisation is apart (:mod:`.lexical_syntax`), and so is the Prover9
notation (:mod:`.prover9_syntax`).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, replace

from symbolkg.solvers.fol.lexical_syntax import (
    MAX_PROGRAM_CHARS,
    WORD_CONNECTIVES,
    WORD_QUANTIFIERS,
    Tok,
    Token,
    snippet,
    split_sections,
    tokenize,
)
from symbolkg.solvers.outcomes import ErrorKind, ProgramError

# --------------------------------------------------------------------------- AST


@dataclass(frozen=True)
class Var:
    """A variable bound by an enclosing quantifier."""

    name: str


@dataclass(frozen=True)
class Const:
    """An individual constant (any name not bound by a quantifier)."""

    name: str


@dataclass(frozen=True)
class Func:
    """A function application used as a term, e.g. ``motherOf(x)``."""

    name: str
    args: tuple[Term, ...]


Term = Var | Const | Func


@dataclass(frozen=True)
class Atom:
    """A predicate applied to terms; ``args`` is empty for a proposition."""

    predicate: str
    args: tuple[Term, ...]


@dataclass(frozen=True)
class Equals:
    """Equality of two terms (``≠`` parses as ``Not(Equals(...))``)."""

    left: Term
    right: Term


@dataclass(frozen=True)
class Not:
    body: Formula


class Connective(str, enum.Enum):
    AND = "∧"
    OR = "∨"
    XOR = "⊕"
    IMPLIES = "→"
    IFF = "↔"


@dataclass(frozen=True)
class Binary:
    op: Connective
    left: Formula
    right: Formula


class Quantifier(str, enum.Enum):
    FORALL = "∀"
    EXISTS = "∃"


@dataclass(frozen=True)
class Quantified:
    quantifier: Quantifier
    var: str
    body: Formula


Formula = Atom | Equals | Not | Binary | Quantified

# The predicate name of ``a ∈ b`` when b is not a unary predicate: a binary relation no
# program can name otherwise (names are letters, digits and '_').
MEMBER = "∈"


@dataclass(frozen=True)
class Statement:
    """One premise or the conclusion.

    Attributes:
        formula: the parsed formula.
        line: 1-based line of the program it came from.
        text: the formula as written (comment removed).
        comment: the text after ``:::`` (the natural-language reading).
    """

    formula: Formula
    line: int
    text: str
    comment: str = ""


@dataclass(frozen=True)
class PredicateDecl:
    """A line of the ``Predicates:`` section (documentation plus an arity)."""

    name: str
    arity: int
    line: int
    description: str = ""


@dataclass(frozen=True)
class FolProgram:
    """A parsed FOLIO program.

    Attributes:
        open_conclusion: the conclusion's free variables, in order of first use; ``conclusion``
            reads them as ∀ (see "free variables in the conclusion" in the module docstring).
        elided: lines of premises whose ``...`` conjuncts were dropped (see "ellipses").
    """

    predicates: tuple[PredicateDecl, ...]
    premises: tuple[Statement, ...]
    conclusion: Statement
    open_conclusion: tuple[str, ...] = ()
    elided: tuple[int, ...] = ()

    def existential_conclusion(self) -> Formula:
        """The conclusion with its free variables read as ∃ instead of ∀ (itself when it has none)."""
        formula = self.conclusion.formula
        body = formula
        for _ in self.open_conclusion:
            assert isinstance(body, Quantified) and body.quantifier is Quantifier.FORALL
            body = body.body
        for name in reversed(self.open_conclusion):
            body = Quantified(Quantifier.EXISTS, name, body)
        return body


# --------------------------------------------------------------------------- parser

# Binding power and right-associativity of each binary connective.
_BINDING: dict[str, tuple[int, bool]] = {
    "↔": (1, False),
    "→": (2, True),
    "⊕": (3, False),
    "∨": (4, False),
    "∧": (5, False),
}
_CONNECTIVES = {c.value: c for c in Connective}

# Real formulas nest a dozen levels; these bounds keep the recursive parser and the
# recursive translation far from Python's recursion limit on adversarial input.
_MAX_NESTING = 100  # open parentheses / negations / quantifiers / right-nested → at once
_MAX_DEPTH = 200  # depth of the finished syntax tree (long ∧ chains nest to the left)


class _FormulaParser:
    """Recursive descent over one formula's tokens, resolving names against bound variables."""

    def __init__(
        self, text: str, line: int, col0: int, *, close_free: bool = False, tokens: list[Token] | None = None
    ) -> None:
        self.text = text
        self.line = line
        self.col0 = col0
        self.tokens = tokens if tokens is not None else tokenize(text, line, col0)
        self.pos = 0
        self.bound: list[str] = []  # quantified variables in scope, innermost last
        self.nesting = 0
        # Premises read a free variable as universally quantified over the whole formula
        # (Prover9's convention); the conclusion refuses it (see the module docstring).
        self.close_free = close_free
        self.free: list[str] = []  # free variables met so far, in order of first use

    # -- helpers
    def peek(self) -> Token:
        return self.tokens[self.pos]

    def advance(self) -> Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def error(self, tok: Token, message: str, kind: ErrorKind = ErrorKind.SYNTAX) -> ProgramError:
        return ProgramError(f"{snippet(self.text, tok.col - self.col0)}: {message}", self.line, kind)

    # -- grammar
    def parse(self) -> Formula:
        if self.peek().kind is Tok.END:
            raise ProgramError("empty formula: write a formula before ':::'", self.line)
        formula = self.formula(0)
        tok = self.peek()
        if tok.kind is not Tok.END:
            if tok.kind is Tok.RPAREN:
                if self.tokens[self.pos + 1].kind is Tok.END and self._surplus_paren_has_one_reading():
                    return self._closed(formula)
                raise self.error(tok, "unbalanced ')': it closes no '('; remove it or add the matching '('")
            raise self.error(
                tok, f"expected a connective (∧ ∨ ⊕ → ↔) or the end of the formula, found {_describe(tok)}"
            )
        return self._closed(formula)

    def _closed(self, formula: Formula) -> Formula:
        for name in reversed(self.free):  # ∀x ∀y (...) in order of first use
            formula = Quantified(Quantifier.FORALL, name, formula)
        return formula

    def _surplus_paren_has_one_reading(self) -> bool:
        """Whether a formula with one surplus ``)`` at its end means the same wherever its ``(`` went.

        The ``(`` it closes may be missing anywhere a formula can start; the formula is read
        without the surplus only when every placement that parses gives that same formula
        (``∀x (A(x) → (B(x) ∧ C(x))))``: one reading). ``A ∧ B → C)`` has two (``(A ∧ B) → C``
        and ``A ∧ (B → C)``) and is refused.
        """

        def reading(tokens: list[Token]) -> Formula | None:
            parser = _FormulaParser(self.text, self.line, self.col0, close_free=self.close_free, tokens=tokens)
            try:
                return parser.parse()
            except ProgramError:
                return None

        body, surplus = self.tokens[:-2], self.tokens[-2]
        without = reading([*body, self.tokens[-1]])
        if without is None:
            return False
        for p in range(len(body)):
            opened = [*body[:p], Token(Tok.LPAREN, "(", body[p].col), *body[p:], surplus, self.tokens[-1]]
            other = reading(opened)
            if other is not None and other != without:
                return False
        return True

    def nest(self) -> None:
        self.nesting += 1
        if self.nesting > _MAX_NESTING:
            raise self.error(
                self.peek(),
                f"the formula is nested more than {_MAX_NESTING} levels deep; "
                "simplify it or split it into several premises",
            )

    def formula(self, min_bp: int) -> Formula:
        self.nest()
        try:
            return self._formula(min_bp)
        finally:
            self.nesting -= 1

    def _formula(self, min_bp: int) -> Formula:
        left = self.unary()
        while True:
            tok = self.peek()
            op = _connective(tok)
            if op is None:
                if tok.kind in (Tok.NAME, Tok.NUMBER, Tok.STRING, Tok.QUANT, Tok.NOT, Tok.LPAREN):
                    if isinstance(left, Atom) and not left.args and left.predicate.lower() == "not":
                        raise self.error(tok, "'not' is not read as negation without parentheses: write ¬F or not(F)")
                    raise self.error(tok, f"missing connective before {_describe(tok)}: join formulas with ∧ ∨ ⊕ → ↔")
                if tok.kind is Tok.SEP:
                    raise self.error(tok, _SEP_MISPLACED)
                return left
            bp, right_assoc = _BINDING[op]
            if bp < min_bp:
                return left
            self.advance()
            right = self.formula(bp if right_assoc else bp + 1)
            left = Binary(_CONNECTIVES[op], left, right)

    def unary(self) -> Formula:
        tok = self.peek()
        if tok.kind is Tok.NOT:
            self.advance()
            self.nest()
            try:
                return Not(self.unary())
            finally:
                self.nesting -= 1
        if tok.kind is Tok.QUANT or self._word_quantifier():
            return self.quantified()
        if tok.kind is Tok.LPAREN:
            self.advance()
            inner = self.formula(0)
            close = self.peek()
            if close.kind is not Tok.RPAREN:
                raise self.error(
                    close,
                    f"missing ')' to close the '(' at character {tok.col - self.col0 + 1}; found {_describe(close)}",
                )
            self.advance()
            return inner
        if tok.kind in (Tok.NAME, Tok.NUMBER, Tok.STRING):
            return self.atomic()
        if tok.kind is Tok.END:
            raise self.error(
                tok, "the formula ends where a formula was expected (a connective or quantifier has nothing after it)"
            )
        if tok.kind is Tok.SEP:
            raise self.error(tok, _SEP_MISPLACED)
        raise self.error(
            tok, f"expected a formula (a predicate like P(x), '¬', '(', ∀ or ∃) but found {_describe(tok)}"
        )

    def _word_quantifier(self) -> bool:
        """Whether the current token is a quantifier word (``forall x``, ``exists x``, ``all x.``)."""
        tok = self.peek()
        return (
            tok.kind is Tok.NAME and tok.text.lower() in WORD_QUANTIFIERS and self.tokens[self.pos + 1].kind is Tok.NAME
        )

    def quantified(self) -> Formula:
        quant = self.advance()
        symbol = quant.value or WORD_QUANTIFIERS[quant.text.lower()]
        names: list[Token] = []
        while True:
            var = self.peek()
            if var.kind is not Tok.NAME:
                raise self.error(var, f"expected a variable name after {quant.text}, found {_describe(var)}")
            self.advance()
            names.append(var)
            # "∀x, y (...)" binds both; a comma cannot otherwise follow a variable here.
            if self.peek().kind is Tok.COMMA and self.tokens[self.pos + 1].kind is Tok.NAME:
                self.advance()
                continue
            # "all x y. P(x, y)" (NLTK) binds both: names separated by spaces, ended by '.' or ':'.
            if self.peek().kind is Tok.NAME and self._names_then_sep():
                continue
            break
        if self.peek().kind is Tok.SEP:  # "∀x. P(x)", "∀x: P(x)", "all x. P(x)": the same scope as "∀x P(x)"
            self.advance()
        self.bound.extend(n.text for n in names)
        try:
            if self.peek().kind is Tok.END:
                space = " " if quant.kind is Tok.NAME else ""  # "all x", "∀x"
                raise self.error(
                    self.peek(), f"the quantifier {quant.text}{space}{names[-1].text} has no formula after it"
                )
            # The body extends as far right as possible: parse a whole formula.
            body = self.formula(0)
        finally:
            del self.bound[len(self.bound) - len(names) :]
        for name in reversed(names):
            body = Quantified(Quantifier(symbol), name.text, body)
        return body

    def _names_then_sep(self) -> bool:
        """Whether the tokens from here are names up to a '.' or ':' (more variables of one quantifier)."""
        i = self.pos
        while self.tokens[i].kind is Tok.NAME and _looks_like_variable(self.tokens[i].text):
            i += 1
        return self.tokens[i].kind is Tok.SEP

    def atomic(self) -> Formula:
        head = self.peek()
        wrapped = self._negation_call()
        if wrapped is not None:
            return wrapped
        term = self.term()
        op = self.peek()
        if op.kind in (Tok.EQ, Tok.NEQ):
            self.advance()
            right_tok = self.peek()
            right = self.resolve(self.term(), right_tok)
            equality = Equals(self.resolve(term, head), right)
            return Not(equality) if op.kind is Tok.NEQ else equality
        if op.kind is Tok.IN:
            # a ∈ b: the membership relation (see _read_membership for b a unary predicate).
            self.advance()
            right_tok = self.peek()
            right = self.resolve(self.term(), right_tok)
            member = Atom(MEMBER, (self.resolve(term, head), right))
            return Not(member) if op.value == "∉" else member
        if head.kind is Tok.NUMBER:
            raise self.error(head, f"a number ({head.text}) is not a formula; numbers can only be arguments")
        if head.kind is Tok.STRING:
            raise self.error(head, f"a quoted name ({head.text}) is not a formula; it can only be an argument")
        if isinstance(term, Var):
            raise self.error(
                head,
                f"'{head.text}' is a quantified variable, not a formula; apply a predicate to it, e.g. P({head.text})",
            )
        if isinstance(term, _Application):
            return Atom(term.name, term.args)
        return Atom(term.name, ())  # a bare name: a proposition (0-ary predicate)

    def _negation_call(self) -> Formula | None:
        """``Not(φ)`` / ``not(φ)`` (any case) around a formula that is more than a bare name: ``¬φ``.

        Read only when the parenthesised text is one formula with a predicate application, a
        connective, a quantifier or an equality in it (``Not(Dog(rex))``, ``not(P(a) ∧ Q(a))``) and
        no ``=``/``∈`` follows; then no predicate named ``not`` can be meant (its argument would
        be a formula). Anything else (``Not(rex)``, ``Not(a, b)``) is read as before: a predicate.
        """
        head = self.peek()
        if not (head.kind is Tok.NAME and head.text.lower() == "not" and self.tokens[self.pos + 1].kind is Tok.LPAREN):
            return None
        start, free = self.pos, list(self.free)
        self.pos += 2
        try:
            inner = self.formula(0)
            closed = self.peek().kind is Tok.RPAREN
        except ProgramError:
            inner, closed = None, False
        if closed:
            self.advance()
        bare = isinstance(inner, Atom) and not inner.args
        if inner is None or not closed or bare or self.peek().kind in (Tok.EQ, Tok.NEQ, Tok.IN):
            self.pos, self.free = start, free
            return None
        return Not(inner)

    def term(self) -> Term | _Application | _BareName:
        tok = self.peek()
        if tok.kind is Tok.NUMBER:
            self.advance()
            return Const(tok.text)
        if tok.kind is Tok.STRING:  # a constant named by the quoted text (module docstring)
            self.advance()
            return Const(f'"{tok.value}"')
        if tok.kind is not Tok.NAME:
            raise self.error(tok, f"expected a term (a constant, a variable or f(...)) but found {_describe(tok)}")
        self.advance()
        if self.peek().kind is Tok.LPAREN:
            self.nest()
            try:
                return self._application(tok)
            finally:
                self.nesting -= 1
        if tok.text in self.bound:
            return Var(tok.text)
        return _BareName(tok.text, tok)

    def _application(self, tok: Token) -> _Application:
        """``name(arg, ...)``; the current token is the ``(``."""
        open_tok = self.advance()
        args: list[Term] = []
        if self.peek().kind is Tok.RPAREN:
            raise self.error(
                self.peek(),
                f"'{tok.text}()' has empty parentheses; write '{tok.text}' for a proposition or give arguments",
            )
        while True:
            arg_tok = self.peek()
            arg = self.term()
            args.append(self.resolve(arg, arg_tok))
            nxt = self.peek()
            if nxt.kind is Tok.COMMA:
                self.advance()
                continue
            if nxt.kind is Tok.RPAREN:
                self.advance()
                break
            if nxt.kind is Tok.NAME:
                raise self.error(
                    nxt,
                    f"missing ',' between arguments of {tok.text}; names cannot contain spaces (write e.g. dcUniverse)",
                )
            if nxt.kind in (Tok.BINOP, Tok.NOT, Tok.QUANT):
                raise self.error(
                    nxt,
                    f"a connective cannot appear inside the arguments of {tok.text}(...); arguments are terms, "
                    "close ')' first",
                )
            opened_at = open_tok.col - self.col0 + 1
            raise self.error(
                nxt,
                f"expected ',' or ')' in the arguments of {tok.text}(...) opened at character {opened_at}, "
                f"found {_describe(nxt)}",
            )
        return _Application(tok.text, tuple(args))

    def resolve(self, term: Term | _Application | _BareName, tok: Token) -> Term:
        """Turn a parsed argument into a term: applications are functions, free names constants."""
        if isinstance(term, _Application):
            return Func(term.name, term.args)
        if isinstance(term, _BareName):
            if _looks_like_variable(term.name):
                if self.close_free:
                    if term.name not in self.free:
                        self.free.append(term.name)
                    return Var(term.name)
                raise self.error(
                    tok,
                    f"'{term.name}' looks like a variable but no quantifier binds it here; a free variable is read "
                    f"only in a premise (as ∀ over it), here it could mean 'every' or 'some': add ∀{term.name} or "
                    f"∃{term.name} around this formula (or inside the parentheses where it is used), or use a "
                    "descriptive constant name",
                    ErrorKind.UNDECLARED,
                )
            return Const(term.name)
        return term


@dataclass(frozen=True)
class _Application:
    """``name(args)`` before we know whether it is an atom or a function term."""

    name: str
    args: tuple[Term, ...]


@dataclass(frozen=True)
class _BareName:
    """A name without arguments before we know whether it is a constant or a proposition."""

    name: str
    tok: Token


def _looks_like_variable(name: str) -> bool:
    # GPT-4 and the FOLIO annotations name variables x, y, z (sometimes with a digit) and
    # constants descriptively; Prover9 itself reads u-z names as variables. A free x in a
    # premise is read as Prover9 reads it (∀ over the whole premise); in the conclusion it is
    # closed with ∀ too and solve() also decides the ∃ reading (module docstring).
    # Single letters a-t stay usable as constants (a, b, c in textbook problems).
    return re.fullmatch(r"[u-z]\d*", name) is not None


_SEP_MISPLACED = (
    "'.' and ':' may only follow a quantifier's variable (∀x. P(x) or ∀x: P(x)); "
    "remove it, or join two formulas with a connective (∧ ∨ ⊕ → ↔)"
)


def _connective(tok: Token) -> str | None:
    """The connective ``tok`` spells where a connective is expected (a symbol or a word like ``xor``)."""
    if tok.kind is Tok.BINOP:
        return tok.value
    if tok.kind is Tok.NAME:
        return WORD_CONNECTIVES.get(tok.text.lower())
    return None


def _describe(tok: Token) -> str:
    if tok.kind is Tok.END:
        return "the end of the formula"
    if tok.kind in (Tok.NAME, Tok.NUMBER, Tok.STRING):
        return f"{tok.kind.value} '{tok.text}'"
    return f"'{tok.text}'"


def parse_formula(text: str, line: int = 1, col0: int = 1, *, close_free: bool = False) -> Formula:
    """Parse one formula (no comment, no section headers).

    Args:
        close_free: read a free variable-like name (``x``, ``y1``: see
            :func:`_looks_like_variable`) as universally quantified over the
            whole formula, as Prover9 reads free variables (used for premises);
            when False such a name is an error (used for the conclusion).

    Raises:
        ProgramError: with ``line`` and a message naming the position.
    """
    return _parse_formula(text, line, col0, close_free=close_free)[0]


def _parse_formula(text: str, line: int, col0: int, *, close_free: bool) -> tuple[Formula, tuple[str, ...]]:
    """:func:`parse_formula`, also returning the free variables it closed with ∀ (in order of first use)."""
    stripped = text.rstrip()
    # A stray full stop after a formula (as in English) is unambiguous.
    if stripped.endswith(".") and not stripped.endswith("..."):
        stripped = stripped[:-1]
    parser = _FormulaParser(stripped, line, col0, close_free=close_free)
    formula = parser.parse()
    if _tree_depth(formula) > _MAX_DEPTH:
        raise ProgramError(
            f"the formula is too long or nested too deeply (more than {_MAX_DEPTH} levels); "
            "split it into several premises",
            line,
        )
    return formula, tuple(parser.free)


_ELLIPSIS = re.compile(r"^\s*(?:\.\.\.|…)\s*$")
_TOP_AND = re.compile(r"∧|&|/\\")


def _split_top_and(text: str) -> list[str]:
    """The parts of ``text`` between ∧ (or ``&``, ``/\\``) outside parentheses."""
    parts, depth, start = [], 0, 0
    for m in re.finditer(r"[()]|" + _TOP_AND.pattern, text):
        if m.group() == "(":
            depth += 1
        elif m.group() == ")":
            depth -= 1
        elif depth == 0:
            parts.append(text[start : m.start()])
            start = m.end()
    parts.append(text[start:])
    return parts


def _strip_outer_parens(text: str) -> str:
    """``text`` without parentheses around the whole of it (``((A ∧ B))`` -> ``A ∧ B``)."""
    text = text.strip()
    while text.startswith("(") and _closing_paren(text) == len(text) - 1:  # not "(A) ∧ (B)"
        text = text[1:-1].strip()
    return text


def _closing_paren(text: str) -> int | None:
    """Index of the ')' that closes the '(' at ``text[0]``; None when it is never closed."""
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return i
    return None


def _conjuncts(formula: Formula) -> int:
    """How many leaves the ∧ chain at the top of ``formula`` has (1 when it is not a conjunction)."""
    if isinstance(formula, Binary) and formula.op is Connective.AND:
        return _conjuncts(formula.left) + _conjuncts(formula.right)
    return 1


def _parse_premise(text: str, line: int, col0: int) -> tuple[Formula, bool]:
    """A premise's formula, and whether ``...`` conjuncts were dropped from it (see "ellipses")."""
    parts = _split_top_and(_strip_outer_parens(text))
    written = [part for part in parts if not _ELLIPSIS.match(part)]
    if len(written) == len(parts) or len(written) < 2:
        return parse_formula(text, line, col0, close_free=True), False
    try:
        formula = parse_formula(" ∧ ".join(part.strip() for part in written), line, col0, close_free=True)
    except ProgramError:
        formula = None
    if formula is None or _conjuncts(formula) < len(written):
        # The ellipsis is not a conjunct of a top-level ∧ chain: refused as before (with its position).
        return parse_formula(text, line, col0, close_free=True), False
    return formula, True


def _tree_depth(formula: Formula) -> int:
    """Depth of the syntax tree, computed without recursion (the check guards recursive code)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(formula, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, (Atom, Func)):
            children: tuple[object, ...] = node.args
        elif isinstance(node, Equals):
            children = (node.left, node.right)
        elif isinstance(node, (Not, Quantified)):
            children = (node.body,)
        elif isinstance(node, Binary):
            children = (node.left, node.right)
        else:
            children = ()
        stack.extend((child, depth + 1) for child in children)
    return deepest


def format_formula(formula: Formula) -> str:
    """Write a formula back in the FOLIO notation, fully parenthesised (shows how it was grouped).

    >>> format_formula(parse_formula("∀x P(x) ∧ Q(x) → R(x)"))
    '∀x ((P(x) ∧ Q(x)) → R(x))'
    """
    if isinstance(formula, Atom) and formula.predicate == MEMBER:
        return f"{_format_term(formula.args[0])} ∈ {_format_term(formula.args[1])}"
    if isinstance(formula, Atom):
        return (
            f"{formula.predicate}({', '.join(map(_format_term, formula.args))})" if formula.args else formula.predicate
        )
    if isinstance(formula, Equals):
        return f"{_format_term(formula.left)} = {_format_term(formula.right)}"
    if isinstance(formula, Not):
        if isinstance(formula.body, Equals):
            return f"{_format_term(formula.body.left)} ≠ {_format_term(formula.body.right)}"
        return f"¬{format_formula(formula.body)}"
    if isinstance(formula, Quantified):
        body = format_formula(formula.body)
        if not isinstance(formula.body, Quantified) and not body.startswith("("):
            body = f"({body})"
        return f"{formula.quantifier.value}{formula.var} {body}"
    left = format_formula(formula.left)
    if _opens_scope(formula.left):  # "∀x P(x) ∧ Q" would pull Q into the quantifier
        left = f"({left})"
    return f"({left} {formula.op.value} {format_formula(formula.right)})"


def _opens_scope(formula: Formula) -> bool:
    while isinstance(formula, Not):
        formula = formula.body
    return isinstance(formula, Quantified)


def _format_term(term: Term) -> str:
    if isinstance(term, Func):
        return f"{term.name}({', '.join(map(_format_term, term.args))})"
    return term.name


# --------------------------------------------------------------------------- program


def parse(text: str) -> FolProgram:
    """Parse a FOLIO program into a typed :class:`FolProgram`.

    Raises:
        ProgramError: a malformed formula or section (kind SYNTAX, UNSUPPORTED
            or UNDECLARED), a predicate used with different arities (TYPE),
            or a missing / multiple conclusion (NO_ANSWER); ``line`` is the
            1-based program line.
    """
    if len(text) > MAX_PROGRAM_CHARS:
        raise ProgramError(
            f"the program has {len(text):,} characters; the limit is {MAX_PROGRAM_CHARS:,}", None, ErrorKind.UNSUPPORTED
        )
    sections = split_sections(text)
    if "premises" not in sections.seen:
        raise ProgramError("missing 'Premises:' section; list the premises under a 'Premises:' line", None)
    if "conclusion" not in sections.seen:
        raise ProgramError(
            "missing 'Conclusion:' section; state the statement to check under a 'Conclusion:' line",
            None,
            ErrorKind.NO_ANSWER,
        )
    if not sections.conclusion:
        raise ProgramError(
            "the 'Conclusion:' section is empty; write the one formula to check",
            sections.seen["conclusion"],
            ErrorKind.NO_ANSWER,
        )
    if len(sections.conclusion) > 1:
        raise ProgramError(
            f"the 'Conclusion:' section has {len(sections.conclusion)} formulas; "
            "give exactly one (one program per question)",
            sections.conclusion[1][0],
            ErrorKind.NO_ANSWER,
        )
    decls = tuple(_parse_declaration(*entry) for entry in sections.predicates)
    premises, elided = [], []
    for n, f, cm, c in sections.premises:
        formula, dropped = _parse_premise(f, n, c)
        premises.append(Statement(formula, n, f, cm))
        if dropped:
            elided.append(n)
    n, f, cm, c = sections.conclusion[0]
    formula, free = _parse_formula(f, n, c, close_free=True)
    conclusion = Statement(formula, n, f, cm)
    program = _read_membership(
        FolProgram(
            predicates=decls,
            premises=tuple(premises),
            conclusion=conclusion,
            open_conclusion=free,
            elided=tuple(elided),
        )
    )
    _check_symbols(program)
    return program


def _parse_declaration(line: int, text: str, comment: str, col0: int) -> PredicateDecl:
    tokens = tokenize(text.rstrip(".").rstrip(), line, col0)
    if tokens[0].kind is not Tok.NAME:
        raise ProgramError(f"a predicate declaration should look like Name(x, y), found {text!r}", line)
    name = tokens[0].text
    if tokens[1].kind is Tok.END:
        return PredicateDecl(name, 0, line, comment)
    # Name(x, y, ...) with simple argument names.
    ok = tokens[1].kind is Tok.LPAREN and tokens[-2].kind is Tok.RPAREN and len(tokens) >= 5
    inner = tokens[2:-2]
    ok = ok and all(
        t.kind in (Tok.NAME, Tok.NUMBER) if i % 2 == 0 else t.kind is Tok.COMMA for i, t in enumerate(inner)
    )
    if not ok:
        raise ProgramError(f"a predicate declaration should look like Name(x, y) ::: meaning, found {text!r}", line)
    return PredicateDecl(name, (len(inner) + 1) // 2, line, comment)


# --------------------------------------------------------------------------- symbol checks


def _read_membership(program: FolProgram) -> FolProgram:
    """Read ``a ∈ S`` as ``S(a)`` where S is a unary predicate of the program.

    S is a unary predicate when it is declared with one argument in
    ``Predicates:`` or applied to one argument in some formula; its set is then
    its extension. Any other ``a ∈ b`` stays the binary relation :data:`MEMBER`.
    """
    unary = {d.name for d in program.predicates if d.arity == 1}
    for stmt in (*program.premises, program.conclusion):
        unary.update(
            n.predicate
            for n in _walk(stmt.formula)
            if isinstance(n, Atom) and len(n.args) == 1 and n.predicate != MEMBER
        )

    def rewrite(f: Formula) -> Formula:
        if isinstance(f, Atom):
            right = f.args[1] if f.predicate == MEMBER else None
            if isinstance(right, Const) and right.name in unary:
                return Atom(right.name, (f.args[0],))
            return f
        if isinstance(f, Not):
            return Not(rewrite(f.body))
        if isinstance(f, Binary):
            return Binary(f.op, rewrite(f.left), rewrite(f.right))
        if isinstance(f, Quantified):
            return Quantified(f.quantifier, f.var, rewrite(f.body))
        return f

    def statement(stmt: Statement) -> Statement:
        return replace(stmt, formula=rewrite(stmt.formula))

    return replace(program, premises=tuple(map(statement, program.premises)), conclusion=statement(program.conclusion))


def _walk_terms(term: Term):  # type: ignore[no-untyped-def]
    yield term
    if isinstance(term, Func):
        for arg in term.args:
            yield from _walk_terms(arg)


def _walk(formula: Formula):  # type: ignore[no-untyped-def]
    """Yield every sub-formula and every term of ``formula``."""
    yield formula
    if isinstance(formula, Atom):
        for arg in formula.args:
            yield from _walk_terms(arg)
    elif isinstance(formula, Equals):
        yield from _walk_terms(formula.left)
        yield from _walk_terms(formula.right)
    elif isinstance(formula, Not):
        yield from _walk(formula.body)
    elif isinstance(formula, Binary):
        yield from _walk(formula.left)
        yield from _walk(formula.right)
    elif isinstance(formula, Quantified):
        yield from _walk(formula.body)


def _check_symbols(program: FolProgram) -> None:
    """One arity per predicate and per function; no name both a predicate and a function.

    A predicate's declaration in ``Predicates:`` fixes its arity. Using a
    predicate that is not declared is allowed: the section documents meanings
    and Logic-LM never required it to be complete.
    """
    predicates: dict[str, tuple[int, int]] = {}  # name -> (arity, first line)
    functions: dict[str, tuple[int, int]] = {}
    for decl in program.predicates:
        seen = predicates.setdefault(decl.name, (decl.arity, decl.line))
        if seen[0] != decl.arity:
            raise ProgramError(
                f"predicate '{decl.name}' is declared with {decl.arity} argument(s) here but with {seen[0]} "
                f"on line {seen[1]}; declare each predicate once",
                decl.line,
                ErrorKind.TYPE,
            )
    declared_lines = {decl.line for decl in program.predicates}
    for stmt in (*program.premises, program.conclusion):
        for node in _walk(stmt.formula):
            if isinstance(node, Atom):
                table, other, what = predicates, functions, "predicate"
            elif isinstance(node, Func):
                table, other, what = functions, predicates, "function"
            else:
                continue
            name, arity = (node.predicate, len(node.args)) if isinstance(node, Atom) else (node.name, len(node.args))
            if name in other and other[name][0] == arity:
                raise ProgramError(
                    f"'{name}' is used as a {what} here but as a {'function' if what == 'predicate' else 'predicate'} "
                    f"on line {other[name][1]}; a term inside a predicate's arguments cannot itself be a predicate "
                    "(use a constant or a separate predicate)",
                    stmt.line,
                    ErrorKind.TYPE,
                )
            seen = table.setdefault(name, (arity, stmt.line))
            if seen[0] != arity:
                where = "declared" if what == "predicate" and seen[1] in declared_lines else "used"
                raise ProgramError(
                    f"{what} '{name}' is used with {arity} argument(s) here but {where} with {seen[0]} "
                    f"on line {seen[1]}; use one number of arguments per predicate (or give the two meanings "
                    "different names)",
                    stmt.line,
                    ErrorKind.TYPE,
                )
