"""The Logic-LM logic-programming language ("logiclm-lp") and its forward chainer.

This is the language Logic-LM asks an LLM to write for ProntoQA and ProofWriter::

    Predicates:
    Cold($x, bool) ::: Is x cold?
    Likes($x, $y, bool) ::: Does x like y?

    Facts:
    Cold(Bob, True) ::: Bob is cold.

    Rules:
    Cold($x, True) && Likes($x, Bob, True) >>> Red($x, False) ::: If something ...

    Query:
    Red(Anne, False) ::: Anne is not red.

Grammar, as GPT-4 actually writes it (all 1,100 recorded programs parse):

* Four section headers, each ``Name:`` alone on a line (case-insensitive, Markdown
  ``**Facts:**`` too; ``Query: Atom`` on one line is accepted). Text before the
  first header is ignored, as Logic-LM ignored it. A section may be repeated or empty.
* ``:::`` starts a comment that runs to the end of the line; blank lines, trailing
  spaces and a final ``.`` are ignored; so are lines starting with ``#`` or ``//``.
* An atom is ``Pred(arg, ..., True|False)``: the last argument is the truth value,
  the others are constants (``Bob``, ``cat``) or variables (``$x``). ``!Pred(..., True)``
  (also ``¬``/``~``) is read as ``Pred(..., False)`` and vice versa; GPT-4 wrote it
  in six ProofWriter programs, which Logic-LM could not run.
* A rule is ``Atom && Atom ... >>> Atom && ...``; a conjunctive head asserts each
  conjunct. A rule line in ``Facts:`` is a rule, an atom line in ``Rules:`` is a fact.
* Declarations are ``Pred($x, ..., bool)``. Undeclared predicates are accepted
  (GPT-4 often leaves ProntoQA's class predicates undeclared, and Logic-LM/Pyke ran
  them); a predicate used with two different arities, or with an arity other than
  its declaration, is an error (``ErrorKind.TYPE``), since it is unclear which is meant.
* Predicate names are case-sensitive (``Impus`` and ``impus`` are two predicates;
  :func:`lint` points such pairs out).
* A variable in a rule head that does not occur in the body (or a variable in a
  fact) ranges over every constant of the program, i.e. ``Big($x, True)`` as a fact
  means "everything is big". (Logic-LM silently dropped such facts.)

Variants other models write, accepted because each has exactly one reading (the parser
turns each into the form above, so :func:`solve` and the SWI-Prolog path,
:mod:`symbolkg.solvers.lp.swipl`, see the same program):

* **Multi-word constants.** ``Big(bald eagle, True)``: the words of an argument form
  one constant. Two spellings are the same constant when they differ only in case,
  in runs of spaces/tabs, or in ``_`` for a space (``bald eagle``, ``Bald  Eagle``,
  ``bald_eagle``), everywhere in the program; the first spelling written names it.
  (No recorded program has two constants that differ only so.)
* **Omitted truth value.** ``Eats(bear, cow)`` (in a fact, rule or the query) is
  ``Eats(bear, cow, True)`` when its arguments number exactly the predicate's arity.
  The arity is the declared one (``Eats($x, $y, bool)``); for an undeclared predicate
  it is fixed by the atoms written with True/False, and only if there are none by
  the atoms written without (which must then agree). An atom without a truth value
  that has one argument more than that arity has its last argument where the truth
  value goes (``Cold(Bob, X)`` for a declared ``Cold($x, bool)``): refused, see below.
* **Not wrappers.** ``Not(P(x, True))``, ``Not(P(x, True), True)`` and ``not P(x, True)``
  are ``P(x, False)``; ``Not(P(x, True), False)`` is ``P(x, True)``; they nest and combine
  with ``!``. (A ``Not`` whose first argument is not an atom, ``Not(Bob, True)``, is an
  ordinary predicate called ``Not``.)
* **Connectives.** ``=>``, ``==>``, ``->``, ``-->``, ``→``, ``⇒`` for ``>>>``;
  ``&``, ``∧``, ``and`` and a comma between atoms for ``&&``. None of them can occur
  inside an atom, and only connectives outside parentheses count. Parentheses around
  a whole conjunction or atom are dropped.
* **Layout.** Headers without the colon (``Facts`` or ``## Facts`` alone on a line) and
  in the singular (``Fact:``); comments after ``#``, ``//`` or ``%`` anywhere on a line
  (none of them can occur in an atom); list markers (``- ``, ``* ``, ``1. ``) and
  statement labels (``Rule 3:``); inline-code
  backticks; Markdown code-fence lines; a final ``?``; tabs, CRLF line ends.

Refused, because they have no reading or more than one (``ErrorKind.SYNTAX`` unless said):

* **A sentence in place of an atom** (``Sally is a Yumpus``). Which predicate and
  constant it names is a guess: plural and case forms (``Yumpus``/``Yumpuses``),
  ``not``, quantifiers (``Every yumpus is ...`` is a rule), articles. The error
  suggests the atom (``Yumpus(Sally, True)``) for the refine stage to confirm.
* **A non-value in the truth-value place**: ``bool``/``boolean`` (the declaration's
  type, copied), ``Unknown``/``Uncertain``/``None``/``null`` (the language has no
  unknown atoms: leaving the atom out is how to say it), and, where the arity shows
  the place is the truth value's, anything else (``X``, ``$v``): whether the atom
  holds or not is not said. For an undeclared predicate written only without truth
  values, ``Cold(Bob, X)`` is the binary atom ``Cold(Bob, X, True)``.
* **A multi-word argument containing True or False** (``Cold(Bob True)``): a
  missing comma or a constant named ``Bob True``.
* **Disjunction** (``||``, ``|``, ``∨``, ``or``; ``ErrorKind.UNSUPPORTED``): not
  expressible as Horn rules; the message says to split the rule.
* **An atom without arguments** (``Cold(True)``, ``Cold()``), and a predicate whose
  atoms without truth values disagree on the arity (``ErrorKind.TYPE``).

Semantics: ``Pred(c, True)`` and ``Pred(c, False)`` are two independent atoms
(explicit negation, open world). :func:`solve` computes the least fixpoint of the
facts under the rules (Datalog: always finite, so cyclic rule sets terminate) and
answers the query ``Pred(c, V)``:

* ``"True"`` (``Status.PROVED``) if ``Pred(c, V)`` was derived;
* ``"False"`` (``Status.DISPROVED``) if ``Pred(c, not V)`` was derived;
* ``"Unknown"`` (``Status.UNKNOWN``) if neither was.

If both were derived, the program contradicts itself on the very atom asked about;
the call returns ``Status.UNSAT`` (the program ran: its verdict is "contradictory",
as for CSP and AR-LSAT programs whose constraints clash) with no answer,
``ErrorKind.NO_ANSWER``, a message naming the atom and both derivations in
``proof``, so the refine stage can show the LLM where its translation went wrong. (Logic-LM took ``True and False``, i.e. "False",
as the atom's value; on the one recorded program that hits this, ProntoQA_404, a
wrong rule subject causes it and Logic-LM's answer is wrong.) Contradictions on
other atoms do not matter: nothing is derived from them (no ex falso).

``Outcome.proof`` holds the derivation of the answer: every fact and rule
instance used, in the order they build on each other. ``Outcome.certificate`` holds it
in a form another engine re-checks (:mod:`symbolkg.solvers.certificates.derivation`): the
proof tree for True/False (both for an inconsistent program), the closure for Unknown.

:func:`to_prolog` translates a parsed program into tabled SWI-Prolog text for
:mod:`symbolkg.solvers.prolog.language`; :func:`solve_with_prolog` runs a program through that path.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from dataclasses import dataclass, field, replace
from typing import Iterator, Sequence, Union

from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

BACKEND = "forward-chainer"

#: Answers of an entailment query (see symbolkg.solvers.outcomes).
ANSWER_TRUE, ANSWER_FALSE, ANSWER_UNKNOWN = "True", "False", "Unknown"

SECTIONS = ("Predicates", "Facts", "Rules", "Query")


@dataclass(frozen=True)
class Var:
    """A rule variable such as ``$x`` (``name`` without the dollar)."""

    name: str

    def __str__(self) -> str:
        return f"${self.name}"


#: An argument: a constant (plain string) or a variable.
Term = Union[str, Var]


@dataclass(frozen=True)
class Atom:
    """``predicate(args..., value)``; ``value`` is the truth value argument.

    Attributes:
        predicate: predicate name, e.g. ``"Cold"``.
        args: the arguments before the truth value (constants or :class:`Var`).
        value: the truth value (``!P(x, True)`` is stored as ``P(x, False)``).
        line: 1-based line of the program it was written on.
        value_written: False when the atom was written without its truth value
            (``Cold(Bob)``, read as ``Cold(Bob, True)``); the arity check needs to
            know, and it is not part of the atom's identity.
    """

    predicate: str
    args: tuple[Term, ...]
    value: bool
    line: int = 0
    value_written: bool = field(default=True, compare=False, repr=False)

    @property
    def is_ground(self) -> bool:
        return not any(isinstance(a, Var) for a in self.args)

    def variables(self) -> list[Var]:
        return [a for a in self.args if isinstance(a, Var)]

    def __str__(self) -> str:
        return _format_atom(self.predicate, tuple(str(a) for a in self.args), self.value)


@dataclass(frozen=True)
class PredicateDecl:
    """A line of ``Predicates:``: ``Likes($x, $y, bool) ::: Does x like y?``.

    Attributes:
        name: predicate name.
        params: parameter names before the truth value (``("$x", "$y")``).
        description: the ``:::`` comment, if any.
        line: 1-based line number.
    """

    name: str
    params: tuple[str, ...]
    description: str = ""
    line: int = 0

    @property
    def arity(self) -> int:
        """Number of arguments before the truth value."""
        return len(self.params)


@dataclass(frozen=True)
class Rule:
    """``body[0] && ... >>> head[0] && ...`` (an empty body makes a universal fact).

    Attributes:
        body: the premises, all of which must hold.
        head: the conclusions, each asserted when the body holds.
        line: 1-based line number.
        text: the rule as written (without its comment), for derivation traces.
    """

    body: tuple[Atom, ...]
    head: tuple[Atom, ...]
    line: int = 0
    text: str = ""


@dataclass(frozen=True)
class LPProgram:
    """A parsed Logic-LM LP program.

    Attributes:
        predicates: the declarations, in order.
        facts: the ground facts, in order.
        rules: the rules (and non-ground facts, as body-less rules), in order.
        query: the atom asked about (ground).
    """

    predicates: tuple[PredicateDecl, ...]
    facts: tuple[Atom, ...]
    rules: tuple[Rule, ...]
    query: Atom

    def constants(self) -> list[str]:
        """Every constant of the program, in order of first appearance."""
        seen: dict[str, None] = {}
        atoms = list(self.facts) + [a for r in self.rules for a in (*r.body, *r.head)] + [self.query]
        for atom in atoms:
            for arg in atom.args:
                if isinstance(arg, str):
                    seen.setdefault(arg, None)
        return list(seen)


# --------------------------------------------------------------------------- parsing

_HEADER_RE = re.compile(r"^[#*\s]*(predicates?|facts?|rules?|query|queries)\s*\**\s*(?::\s*\**\s*(.*))?$", re.IGNORECASE)
_SECTION_OF = {"predicate": "Predicates", "fact": "Facts", "rule": "Rules", "query": "Query", "querie": "Query"}
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VAR_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_WORD = r"[A-Za-z0-9_][A-Za-z0-9_\-']*"
#: A constant: one word, or several separated by spaces (``bald eagle``).
_CONST_RE = re.compile(rf"{_WORD}(?:\s+{_WORD})*")
_ATOM_RE = re.compile(r"(?P<name>[^\s(]*)\s*\((?P<args>[^()]*)\)")
_NOT_CALL_RE = re.compile(r"not\s*\((?P<inner>.*)\)", re.IGNORECASE | re.DOTALL)
_NOT_WORD_RE = re.compile(r"not\s+(?=[A-Za-z_])", re.IGNORECASE)
_ARROW_RE = re.compile(r">>>|==>|=>|-->|->|→|⇒|⟹")
_AND_RE = re.compile(r"&&|&|∧|,|(?<=[\s)])and(?=\s)", re.IGNORECASE)
_OR_RE = re.compile(r"\|\||\||∨|(?<=[\s)])or(?=\s)", re.IGNORECASE)
_COMMA_RE = re.compile(",")
_PAREN_RE = re.compile(r"[()]")
_SEPARATORS_RE = re.compile(r"[\s_]+")
_INLINE_COMMENT_RE = re.compile(r"#|//|%")
#: List markers (``- ``, ``* ``, ``1. ``) and statement labels (``Rule 3:``, ``Fact1.``) before a statement.
_LIST_MARKER_RE = re.compile(r"^(?:(?:[-*•]|\d{1,3}[.)])\s+|(?:facts?|rules?|premises?|query)\s*\d{1,3}\s*[:.)]\s*)", re.IGNORECASE)
_SENTENCE_RE = re.compile(r"(?P<subject>.+?)\s+(?:is|are)\s+(?P<neg>not\s+)?(?:(?:a|an|the)\s+)?(?P<pred>[A-Za-z_]\w*)", re.IGNORECASE)
_TRUTH = {"true": True, "false": False}
#: Words written where the truth value goes that say nothing about it. In that place they are
#: refused, never read as a constant (see "Refused" in the module docstring).
_NOT_A_VALUE = {
    "bool": "'bool' is the type written in Predicates: declarations",
    "boolean": "'boolean' is the type written in Predicates: declarations",
    "unknown": "there are no Unknown atoms: leave the atom out, the open world makes it unknown",
    "uncertain": "there are no Uncertain atoms: leave the atom out, the open world makes it unknown",
    "none": "'None' is not a truth value",
    "null": "'null' is not a truth value",
}
_MAX_NESTING = 16
_EXAMPLE = "expected an atom like Pred(Bob, True) or Pred($x, $y, False)"


def _format_atom(predicate: str, args: tuple[str, ...], value: bool) -> str:
    return f"{predicate}({', '.join((*args, str(value)))})"


def _as_written(atom: Atom) -> str:
    """The atom in the form it was written: without its truth value if it had none."""
    if atom.value_written:
        return str(atom)
    return f"{atom.predicate}({', '.join(str(a) for a in atom.args)})"


def _top_level(text: str, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """The matches of ``pattern`` in ``text`` that lie outside every parenthesis."""
    depth = pos = 0
    for m in pattern.finditer(text):
        # str.count runs in C: one pass over the line in all, however many matches.
        depth += text.count("(", pos, m.start()) - text.count(")", pos, m.start())
        pos = m.start()
        if depth == 0:
            yield m


def _split_top(text: str, pattern: re.Pattern[str]) -> list[str]:
    """Split ``text`` at the matches of ``pattern`` that lie outside every parenthesis."""
    parts, start = [], 0
    for m in _top_level(text, pattern):
        parts.append(text[start : m.start()])
        start = m.end()
    parts.append(text[start:])
    return parts


def _balanced(text: str) -> bool:
    """Every parenthesis closes one opened before it, and all are closed."""
    if text.count("(") != text.count(")"):
        return False
    depth = 0
    for m in _PAREN_RE.finditer(text):
        depth += 1 if m.group() == "(" else -1
        if depth < 0:
            return False
    return True


def _unwrap_parens(text: str) -> str:
    """``(A && B)`` -> ``A && B``: drop parentheses that enclose the whole text.

    At most ``_MAX_NESTING`` layers (each costs a pass over the text); deeper
    nesting is left for the atom parser to refuse.
    """
    text = text.strip()
    for _ in range(_MAX_NESTING):
        if not (text.startswith("(") and text.endswith(")") and _balanced(text[1:-1])):
            break
        text = text[1:-1].strip()
    return text


def _clean(raw: str) -> str:
    """A line's content: without comments, list markers, code quotes and a final period."""
    text = raw.split(":::", 1)[0].strip()
    if text.startswith("```"):
        return ""  # a Markdown code fence
    for m in _top_level(text, _INLINE_COMMENT_RE):  # '#', '//' and '%' never occur inside an atom
        text = text[: m.start()]
        break
    text = _LIST_MARKER_RE.sub("", text.strip(), count=1)
    # Inline-code quotes, a Prolog-style final period ("Cold(Bob, True).") or a question mark
    # change nothing.
    return text.rstrip(".?` \t").lstrip("` \t")


def _constant_key(name: str) -> str:
    """Two spellings of a constant with the same key are the same constant."""
    return _SEPARATORS_RE.sub("_", name).casefold()


def _not_an_atom(text: str, line: int) -> ProgramError:
    """The error for a line without parentheses: a bare name, or an English sentence."""
    if len(text.split()) < 2:
        return ProgramError(f"{_EXAMPLE}, found {text!r} (arguments in parentheses are missing)", line)
    match = _SENTENCE_RE.fullmatch(text)
    example = f" such as {match.group('pred')}({match.group('subject')}, {not match.group('neg')})" if match else ""
    return ProgramError(
        f"found the sentence {text!r} where an atom belongs; write it as an atom{example}. Sentences are not read: "
        "which predicate and constant a sentence names is a guess (plural and case forms, 'not', 'every', 'the')",
        line,
    )


def _strip_negations(text: str, line: int) -> tuple[str, bool]:
    """``!A``, ``Not(A)``, ``Not(A, True|False)``, ``not A``, nested: the atom text and whether it is negated."""
    negated = False
    for _ in range(_MAX_NESTING):
        if text[:1] in ("!", "¬", "~"):
            negated, text = not negated, _unwrap_parens(text[1:])
            continue
        wrapper = _NOT_CALL_RE.fullmatch(text)
        if wrapper and "(" in wrapper.group("inner") and _balanced(wrapper.group("inner")):
            # Not(P(x, True)), Not(P(x, True), True): P(x, False); Not(P(x, True), False): P(x, True).
            parts = [p.strip() for p in _split_top(wrapper.group("inner"), _COMMA_RE)]
            if len(parts) > 2 or (len(parts) == 2 and parts[1].lower() not in _TRUTH):
                raise ProgramError(f"{text!r}: Not(...) takes one atom and optionally True or False, as in Not(Cold(Bob, True), True)", line)
            if len(parts) == 1 or _TRUTH[parts[1].lower()]:
                negated = not negated
            text = _unwrap_parens(parts[0])
            continue
        prefix = _NOT_WORD_RE.match(text)
        if prefix and "(" in text:
            negated, text = not negated, text[prefix.end() :].strip()
            continue
        return text, negated
    raise ProgramError(f"{text[:200]!r}: more than {_MAX_NESTING} negations around one atom", line)


def _parse_atom(text: str, line: int, *, section: str, constants: dict[str, str]) -> Atom:
    """Parse one atom; raise a ProgramError that says what is wrong with it.

    ``constants`` maps :func:`_constant_key` to the first spelling seen in the program;
    each constant is replaced by that spelling, and new ones are added.
    """
    text = _unwrap_parens(text)
    negated = False
    match = _ATOM_RE.fullmatch(text)
    if not (match and _NAME_RE.fullmatch(match.group("name"))):  # nearly every atom is plain: no negation to look for
        text, negated = _strip_negations(text, line)
        match = _ATOM_RE.fullmatch(text)
    if not match:
        if "(" not in text:
            raise _not_an_atom(text, line)
        raise ProgramError(f"{_EXAMPLE}, found {text!r} in {section}", line)
    name = match.group("name")
    if not _NAME_RE.fullmatch(name):
        raise ProgramError(f"invalid predicate name {name!r} in {text!r}: use letters, digits and '_', starting with a letter", line)
    raw_args = [a.strip() for a in match.group("args").split(",")]
    last = raw_args[-1].lower()
    if last in _TRUTH:
        value, raw_terms, written = _TRUTH[last], raw_args[:-1], True
        if not raw_terms:
            raise ProgramError(f"{text!r} has no argument before its truth value: write e.g. {name}(Bob, {raw_args[-1]})", line)
    elif last in _NOT_A_VALUE:
        raise ProgramError(
            f"{text!r}: the last argument must be True or False, found {raw_args[-1]!r} ({_NOT_A_VALUE[last]}); "
            f"e.g. {name}({', '.join(raw_args[:-1] or ['Bob'])}, True)",
            line,
        )
    else:
        # No truth value: the atom asserts/asks that it holds. _check_arities makes sure that
        # the last argument is not sitting where the truth value belongs.
        value, raw_terms, written = True, raw_args, False
        if raw_terms == [""]:
            raise ProgramError(f"{text!r} has no arguments: write e.g. {name}(Bob, True)", line)
    args: list[Term] = []
    for raw in raw_terms:
        if raw.startswith("$"):
            var = _VAR_RE.fullmatch(raw)
            if not var:
                raise ProgramError(f"invalid variable {raw!r} in {text!r}: variables look like $x or $y", line)
            args.append(Var(var.group(1)))
        elif raw == "":
            raise ProgramError(f"empty argument in {text!r}", line)
        elif _CONST_RE.fullmatch(raw):
            words = raw.split()
            if len(words) > 1 and any(w.lower() in _TRUTH for w in words):
                raise ProgramError(
                    f"argument {raw!r} in {text!r} mixes a name with True/False: is a comma missing? "
                    f"(e.g. {name}({' '.join(w for w in words if w.lower() not in _TRUTH)}, True))",
                    line,
                )
            args.append(constants.setdefault(_constant_key(raw), " ".join(words)))
        else:
            raise ProgramError(
                f"invalid argument {raw!r} in {text!r}: constants are names like Bob, cat or bald eagle, variables look like $x",
                line,
            )
    return Atom(name, tuple(args), value != negated, line, value_written=written)


def _parse_conjunction(text: str, line: int, *, section: str, constants: dict[str, str]) -> list[Atom]:
    text = _unwrap_parens(text)
    if len(_split_top(text, _OR_RE)) > 1:
        raise ProgramError(
            f"{text!r} is a disjunction ('or'), which this language cannot express: facts and rules are "
            "conjunctions ('A && B >>> C'); write 'A || B >>> C' as two rules, 'A >>> C' and 'B >>> C'",
            line,
            ErrorKind.UNSUPPORTED,
        )
    parts = [p.strip() for p in _split_top(text, _AND_RE)]
    if any(p == "" for p in parts):
        raise ProgramError(f"empty conjunct in {text!r}: write 'A && B', with an atom on both sides of '&&'", line)
    return [_parse_atom(p, line, section=section, constants=constants) for p in parts]


def _parse_rule(text: str, line: int, constants: dict[str, str]) -> Rule:
    pieces = _split_top(text, _ARROW_RE)
    if len(pieces) != 2:
        raise ProgramError(f"a rule has exactly one '>>>' between its premises and conclusion, found {len(pieces) - 1} in {text!r}", line)
    body_text, head_text = pieces
    if not body_text.strip():
        raise ProgramError(f"rule {text!r} has no premise before '>>>'", line)
    if not head_text.strip():
        raise ProgramError(f"rule {text!r} has no conclusion after '>>>'", line)
    body = _parse_conjunction(body_text, line, section="Rules", constants=constants)
    head = _parse_conjunction(head_text, line, section="Rules", constants=constants)
    return Rule(tuple(body), tuple(head), line, text)


def _parse_declaration(text: str, line: int) -> PredicateDecl:
    match = re.fullmatch(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*\((?P<params>[^()]*)\)", text)
    if not match:
        raise ProgramError(f"expected a declaration like Pred($x, bool) or Pred($x, $y, bool), found {text!r}", line)
    params = tuple(p.strip() for p in match.group("params").split(",") if p.strip())
    if params and params[-1].lower() in _TRUTH:
        raise ProgramError(f"{text!r} looks like a fact, not a declaration: declare it as {match.group('name')}($x, bool) and list the fact under 'Facts:'", line)
    if params and params[-1].lower() in ("bool", "boolean"):
        params = params[:-1]
    return PredicateDecl(match.group("name"), params, line=line)


def parse(text: str) -> LPProgram:
    """Parse a Logic-LM LP program.

    Args:
        text: the program as the LLM wrote it.

    Returns:
        The typed program.

    Raises:
        ProgramError: on a malformed line (with its 1-based number), a missing or
            ambiguous query (``ErrorKind.NO_ANSWER``), an arity mismatch
            (``ErrorKind.TYPE``) or a disjunction (``ErrorKind.UNSUPPORTED``).
    """
    section: str | None = None
    decls: list[PredicateDecl] = []
    facts: list[Atom] = []
    rules: list[Rule] = []
    queries: list[Atom] = []
    constants: dict[str, str] = {}  # one spelling per constant, the first one written
    for line_no, raw in enumerate(text.splitlines(), start=1):
        header = _HEADER_RE.match(_LIST_MARKER_RE.sub("", raw.split(":::", 1)[0].strip(), count=1))
        if header:
            section = _SECTION_OF[header.group(1).lower().rstrip("s")]
            content = _clean(header.group(2) or "")
            if not content:
                continue
        else:
            content = _clean(raw)
        if not content:
            continue
        if section is None:
            continue  # prose before the first header; Logic-LM ignored it too
        is_rule = len(_split_top(content, _ARROW_RE)) > 1
        if section == "Predicates":
            decl = _parse_declaration(content, line_no)
            comment = raw.split(":::", 1)[1].strip() if ":::" in raw else ""
            decls.append(PredicateDecl(decl.name, decl.params, comment, line_no))
        elif section == "Query":
            if is_rule:
                raise ProgramError(f"the query must be a single atom such as Pred(Bob, True), found a rule {content!r}", line_no, ErrorKind.NO_ANSWER)
            queries.extend(_parse_conjunction(content, line_no, section="Query", constants=constants))
        elif is_rule:
            rules.append(_parse_rule(content, line_no, constants))
        else:
            for atom in _parse_conjunction(content, line_no, section=section, constants=constants):
                if atom.is_ground:
                    facts.append(atom)
                else:
                    # A fact with variables is universal: make it a body-less rule.
                    rules.append(Rule((), (atom,), line_no, content))
    if not queries:
        raise ProgramError("the program has no query: add a 'Query:' section with one atom such as Pred(Bob, True)", None, ErrorKind.NO_ANSWER)
    if len(queries) > 1:
        lines = ", ".join(str(q.line) for q in queries)
        raise ProgramError(
            f"the Query section must contain exactly one atom, found {len(queries)} (lines {lines}); ask one question per program",
            queries[1].line,
            ErrorKind.NO_ANSWER,
        )
    query = queries[0]
    if not query.is_ground:
        raise ProgramError(
            f"the query {query} contains a variable; ask about a specific constant, e.g. {query.predicate}(Bob, {query.value})",
            query.line,
            ErrorKind.NO_ANSWER,
        )
    program = LPProgram(tuple(decls), tuple(facts), tuple(rules), query)
    _check_arities(program)
    return program


def _check_arities(program: LPProgram) -> None:
    """Every predicate has one arity: declared, else fixed by its atoms (see the module docstring)."""
    arity: dict[str, tuple[int, int, str]] = {}  # name -> (arity, line, how it was fixed)
    for decl in program.predicates:
        known = arity.get(decl.name)
        if known and known[0] != decl.arity:
            raise ProgramError(
                f"predicate {decl.name} is declared twice with different numbers of arguments (line {known[1]} and here)",
                decl.line,
                ErrorKind.TYPE,
            )
        arity[decl.name] = (decl.arity, decl.line, "declared")
    uses = sorted(list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)] + [program.query], key=lambda a: a.line)
    # An atom with its truth value shows the arity for sure; one without it only if nothing else does.
    for atom in uses:
        if atom.value_written:
            arity.setdefault(atom.predicate, (len(atom.args), atom.line, "first used"))
    for atom in uses:
        arity.setdefault(atom.predicate, (len(atom.args), atom.line, "first used without True/False"))
    for atom in uses:
        n = len(atom.args)
        known = arity[atom.predicate]
        if n == known[0]:
            continue
        if not atom.value_written and n == known[0] + 1:
            raise ProgramError(
                f"{_as_written(atom)}: {atom.predicate} takes {known[0]} argument(s) plus True/False ({known[2]} on line {known[1]}), "
                f"so {atom.args[-1]} stands where the truth value goes: write True or False there",
                atom.line,
            )
        raise ProgramError(
            f"{atom.predicate} takes {known[0]} argument(s) plus True/False ({known[2]} on line {known[1]}), "
            f"but {_as_written(atom)} has {n}; use the same arguments everywhere",
            atom.line,
            ErrorKind.TYPE,
        )


# --------------------------------------------------------------------------- chaining

#: A ground atom as the chainer stores it: (predicate, args, value).
GroundAtom = tuple[str, tuple[str, ...], bool]


@dataclass
class Derivation:
    """How a ground atom was first obtained.

    Attributes:
        line: program line of the fact or rule.
        rule: the rule, or None for a fact.
        binding: the rule's variable values (names without ``$``).
        premises: the ground body atoms the rule instance used.
    """

    line: int
    rule: Rule | None = None
    binding: dict[str, str] = field(default_factory=dict)
    premises: tuple[GroundAtom, ...] = ()


class ChainingTimeout(Exception):
    """The forward chainer's deadline passed before the fixpoint."""


class TooManyAtoms(Exception):
    """The forward chainer derived more atoms than its budget allows."""


@dataclass
class Fixpoint:
    """Everything a program derives, with the first derivation of each atom.

    Attributes:
        derived: every ground atom that holds, mapped to how it was derived.
        rounds: how many semi-naive rounds the fixpoint took.
    """

    derived: dict[GroundAtom, Derivation]
    rounds: int

    def holds(self, predicate: str, args: tuple[str, ...], value: bool) -> bool:
        return (predicate, args, value) in self.derived

    def proof_order(self, goals: Sequence[GroundAtom]) -> list[GroundAtom]:
        """Every atom the derivations of ``goals`` use, premises before conclusions, each once."""
        order: list[GroundAtom] = []
        seen: set[GroundAtom] = set()
        stack: list[tuple[GroundAtom, bool]] = [(goal, False) for goal in reversed(goals)]
        while stack:  # iterative post-order DFS: long chains must not hit the recursion limit
            atom, expanded = stack.pop()
            if expanded:
                order.append(atom)
                continue
            if atom in seen:
                continue
            seen.add(atom)
            stack.append((atom, True))
            for premise in reversed(self.derived[atom].premises):
                if premise not in seen:
                    stack.append((premise, False))
        return order

    def explain(self, goal: GroundAtom) -> str:
        """The derivation of ``goal``: each fact and rule instance used, premises first."""
        lines = []
        for atom in self.proof_order([goal]):
            how = self.derived[atom]
            text = _format_atom(*atom)
            if how.rule is None:
                lines.append(f"{text}    [fact, line {how.line}]")
            else:
                bind = ", ".join(f"${k}={v}" for k, v in how.binding.items())
                from_text = ", ".join(_format_atom(*p) for p in how.premises) or "(no premises)"
                lines.append(f"{text}    [rule, line {how.line}: {how.rule.text}" + (f" with {bind}" if bind else "") + f"; from {from_text}]")
        return "\n".join(lines)


def forward_chain(program: LPProgram, *, deadline: float | None = None, max_facts: int | None = None) -> Fixpoint:
    """Compute every atom the program derives (semi-naive, deterministic).

    Args:
        program: a parsed program.
        deadline: ``time.perf_counter()`` value after which to give up.
        max_facts: give up when more atoms than this have been derived.

    Returns:
        The fixpoint with derivations.

    Raises:
        ChainingTimeout: the deadline passed.
        TooManyAtoms: more than ``max_facts`` atoms were derived.
    """
    domain = tuple(program.constants())
    derived: dict[GroundAtom, Derivation] = {}
    # (predicate, value) -> list of args: rules join over this index.
    index: dict[tuple[str, bool], list[tuple[str, ...]]] = {}
    ticks = itertools.count()

    def tick() -> None:
        if deadline is not None and next(ticks) % 256 == 0 and time.perf_counter() > deadline:
            raise ChainingTimeout

    def add(atom: GroundAtom, how: Derivation, delta: list[GroundAtom]) -> None:
        if atom in derived:
            return
        derived[atom] = how
        index.setdefault((atom[0], atom[2]), []).append(atom[1])
        delta.append(atom)
        if max_facts is not None and len(derived) > max_facts:
            raise TooManyAtoms

    def match(pattern: Atom, args: tuple[str, ...], binding: dict[str, str]) -> dict[str, str] | None:
        if len(args) != len(pattern.args):
            return None
        out = binding
        for p, a in zip(pattern.args, args):
            if isinstance(p, Var):
                bound = out.get(p.name)
                if bound is None:
                    if out is binding:
                        out = dict(binding)
                    out[p.name] = a
                elif bound != a:
                    return None
            elif p != a:
                return None
        return out

    def solutions(body: tuple[Atom, ...], i: int, pinned: int, pinned_args: tuple[str, ...], binding: dict[str, str], bound_atoms: list[GroundAtom]) -> Iterator[tuple[dict[str, str], list[GroundAtom]]]:
        if i == len(body):
            yield binding, bound_atoms
            return
        atom = body[i]
        candidates = [pinned_args] if i == pinned else index.get((atom.predicate, atom.value), ())
        # The list grows while we iterate (fire() adds atoms); bound the loop by its
        # length now. Atoms added meanwhile are in the next delta, so none is missed.
        for k in range(len(candidates)):
            tick()
            args = candidates[k]
            b = match(atom, args, binding)
            if b is not None:
                yield from solutions(body, i + 1, pinned, pinned_args, b, bound_atoms + [(atom.predicate, args, atom.value)])

    def fire(rule: Rule, binding: dict[str, str], premises: list[GroundAtom], delta: list[GroundAtom]) -> None:
        free = sorted({v.name for h in rule.head for v in h.variables() if v.name not in binding})
        for values in itertools.product(domain, repeat=len(free)):
            tick()
            full = {**binding, **dict(zip(free, values))}
            for head in rule.head:
                args = tuple(full[a.name] if isinstance(a, Var) else a for a in head.args)
                add((head.predicate, args, head.value), Derivation(rule.line, rule, full, tuple(premises)), delta)

    delta: list[GroundAtom] = []
    for fact in program.facts:
        add((fact.predicate, tuple(str(a) for a in fact.args), fact.value), Derivation(fact.line), delta)
    for rule in program.rules:
        if not rule.body:
            fire(rule, {}, [], delta)
    rounds = 0
    while delta:
        rounds += 1
        new: list[GroundAtom] = []
        by_key: dict[tuple[str, bool], list[tuple[str, ...]]] = {}
        for atom in delta:
            by_key.setdefault((atom[0], atom[2]), []).append(atom[1])
        for rule in program.rules:
            # Semi-naive: each instance must use at least one atom new in the last round.
            for pinned, atom in enumerate(rule.body):
                for args in by_key.get((atom.predicate, atom.value), ()):
                    for binding, premises in solutions(rule.body, 0, pinned, args, {}, []):
                        fire(rule, binding, premises, new)
        delta = new
    return Fixpoint(derived, rounds)


def _answer(program: LPProgram, fixpoint: Fixpoint) -> tuple[Status, GroundAtom | None, GroundAtom | None]:
    """The query's status, and the derived atom(s) that decide it (both when inconsistent)."""
    q = program.query
    args = tuple(str(a) for a in q.args)
    positive: GroundAtom = (q.predicate, args, q.value)
    negative: GroundAtom = (q.predicate, args, not q.value)
    has_pos, has_neg = positive in fixpoint.derived, negative in fixpoint.derived
    if has_pos and has_neg:
        return Status.RUNTIME_ERROR, positive, negative
    if has_pos:
        return Status.PROVED, positive, None
    if has_neg:
        return Status.DISPROVED, negative, None
    return Status.UNKNOWN, None, None


_ANSWERS = {Status.PROVED: ANSWER_TRUE, Status.DISPROVED: ANSWER_FALSE, Status.UNKNOWN: ANSWER_UNKNOWN}


def solve(text: str, limits: Limits) -> Outcome:
    """Parse and run an LP program with the forward chainer. Never raises for a bad program.

    Args:
        text: the program.
        limits: ``timeout_s`` bounds the chaining; ``memory_mb`` bounds the number
            of derived atoms (about 2,000 per MB).

    Returns:
        The outcome (see the module docstring for the answer and status mapping).
    """
    with Stopwatch() as sw:
        try:
            program = parse(text)
        except ProgramError as exc:
            return exc.to_outcome(seconds=sw.elapsed(), backend=BACKEND)
        try:
            fixpoint = forward_chain(program, deadline=time.perf_counter() + limits.timeout_s - sw.elapsed(), max_facts=limits.memory_mb * 2000)
        except ChainingTimeout:
            return Outcome.error(Status.TIMEOUT, ErrorKind.TIMEOUT, f"forward chaining did not reach a fixpoint within {limits.timeout_s:g} s", seconds=sw.elapsed(), backend=BACKEND)
        except TooManyAtoms:
            return Outcome.error(Status.MEMORY, ErrorKind.MEMORY, f"the rules derive more than {limits.memory_mb * 2000} atoms; check for rules with variables only in the conclusion", seconds=sw.elapsed(), backend=BACKEND)
        status, first, second = _answer(program, fixpoint)
    if first is not None and second is not None:
        message = (
            f"the program is inconsistent: it derives both {_format_atom(*first)} and {_format_atom(*second)}; "
            "a fact or rule contradicts another (check the True/False values against the text)"
        )
        proof = f"{fixpoint.explain(first)}\n--- and ---\n{fixpoint.explain(second)}"
        return Outcome(
            status=Status.UNSAT,
            proof=proof,
            error_kind=ErrorKind.NO_ANSWER.value,
            error_message=message,
            error_line=program.query.line,
            seconds=sw.seconds,
            backend=BACKEND,
            certificate=derivation_certificate(text, program, fixpoint, None, (first, second)),
        )
    if first is not None:
        proof = fixpoint.explain(first)
    else:
        proof = f"neither {program.query} nor its negation is derivable ({len(fixpoint.derived)} atoms derived)"
        proof += "".join(f"\nhint: {hint}" for hint in lint(program))
    certificate = derivation_certificate(text, program, fixpoint, _ANSWERS[status], () if first is None else (first,))
    return Outcome(status=status, answer=_ANSWERS[status], proof=proof, seconds=sw.seconds, backend=BACKEND,
                   certificate=certificate)


def derivation_certificate(text: str, program: LPProgram, fixpoint: Fixpoint, answer: str | None,
                           goals: tuple[GroundAtom, ...], *, producer: str = BACKEND) -> dict:
    """The ``derivation`` certificate of an answer (:mod:`symbolkg.solvers.certificates.derivation`).

    Args:
        text: the program text (facts are cited by their line's text).
        program: ``text`` parsed.
        fixpoint: what the program derives, with the first derivation of each atom.
        answer: ``True``, ``False``, ``Unknown``, or None for an inconsistent program.
        goals: the deciding atom (the query for True, its negation for False); none for
            Unknown; both for an inconsistent program.
        producer: the backend that answered.

    Returns:
        For True/False the proof tree of the goal, premises first, each atom once (for an
        inconsistent program, of both); for Unknown the closure (every derived atom), which
        shows that neither atom is derivable.
    """
    from symbolkg.solvers.certificates import derivation  # a certificate module; the chainer stays import-light

    q = program.query
    query: GroundAtom = (q.predicate, tuple(str(a) for a in q.args), q.value)
    if not goals:
        return derivation.closure_certificate(producer=producer, query=query, query_line=q.line, atoms=fixpoint.derived)
    lines = text.splitlines()
    ids: dict[GroundAtom, int] = {}
    steps = []
    for atom in fixpoint.proof_order(goals):
        how = fixpoint.derived[atom]
        ids[atom] = len(ids) + 1
        if how.rule is None:
            fact_text = lines[how.line - 1].split(":::", 1)[0].strip()
            steps.append({"id": ids[atom], "atom": _format_atom(*atom), "rule": None, "line": how.line,
                          "rule_text": fact_text, "binding": {}, "body": []})
        else:
            steps.append({"id": ids[atom], "atom": _format_atom(*atom), "rule": how.line, "line": how.line,
                          "rule_text": how.rule.text, "binding": {f"${k}": v for k, v in sorted(how.binding.items())},
                          "body": [ids[p] for p in how.premises]})
    return derivation.proof_certificate(producer=producer, answer=answer, query=query, query_line=q.line, steps=steps)


def lint(program: LPProgram) -> list[str]:
    """Likely translation mistakes worth showing the LLM when the answer is Unknown.

    Hints only: the program's meaning does not change. Two kinds are frequent
    in GPT-4's ProntoQA programs: predicate names that differ only by case or a
    plural ending (``Impus`` / ``Impuses``), which split one concept in two; and a
    query predicate that no fact or rule concludes. A third: constants that differ
    only in ways the parser does not merge (``BaldEagle`` / ``bald eagle``,
    ``x-ray`` / ``xray``; the parser merges case, spaces and underscores only).

    Args:
        program: a parsed program.

    Returns:
        Human-readable hints, possibly none.
    """
    names: dict[str, int] = {}
    atoms = list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)] + [program.query]
    for atom in atoms:
        names.setdefault(atom.predicate, atom.line)
    for decl in program.predicates:
        names.setdefault(decl.name, decl.line)
    hints = []
    ordered = sorted(names)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            la, lb = a.lower(), b.lower()
            if la == lb or lb in (la + "s", la + "es") or la in (lb + "s", lb + "es"):
                hints.append(f"predicates {a} (line {names[a]}) and {b} (line {names[b]}) look like the same concept; use one name")
    spellings: dict[str, dict[str, int]] = {}  # constants equal but for case and separators
    for atom in sorted(atoms, key=lambda a: a.line):
        for arg in atom.args:
            if isinstance(arg, str):
                spellings.setdefault(re.sub(r"[^0-9a-z]", "", arg.casefold()), {}).setdefault(arg, atom.line)
    for found in spellings.values():
        if len(found) > 1:
            shown = " and ".join(f"{c} (line {n})" for c, n in found.items())
            hints.append(f"constants {shown} look like the same entity; use one name")
    concluded = {a.predicate for a in program.facts} | {h.predicate for r in program.rules for h in r.head}
    if program.query.predicate not in concluded:
        hints.append(f"no fact or rule concludes {program.query.predicate}(...), so the query cannot be answered; check the predicate name")
    return hints


# --------------------------------------------------------------------------- Prolog

def _pl_atom(name: str) -> str:
    """A quoted Prolog atom: keeps LP case and avoids clashes with built-ins."""
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _pl_term(term: Term) -> str:
    return f"V_{term.name}" if isinstance(term, Var) else _pl_atom(term)


def _pl_goal(atom: Atom) -> str:
    args = [_pl_term(a) for a in atom.args] + ["true" if atom.value else "false"]
    return f"{_pl_atom(atom.predicate)}({', '.join(args)})"


#: The goal of to_prolog's query line. Its helpers (lp_answer/1, lp_holds/0,
#: lp_negated/0, lp_const/1) cannot clash with LP predicates, which always have
#: at least two arguments (one or more terms plus the truth value).
PROLOG_ANSWER_GOAL = "lp_answer(Answer)"


def to_prolog(program: LPProgram) -> str:
    """Translate an LP program into tabled SWI-Prolog text for :mod:`symbolkg.solvers.prolog.language`.

    Every predicate ``P`` becomes ``'P'(Args..., true|false)`` and is tabled, so
    cyclic rules terminate (the same least fixpoint the forward chainer computes).
    Head variables that do not occur in the body range over ``lp_const/1``, the
    program's constants. The ``% query:`` line asks ``lp_answer(Answer)``, which
    binds ``Answer`` to ``'True'``, ``'False'``, ``'Unknown'`` or ``'Inconsistent'``
    with the same meaning as :func:`solve`.

    Args:
        program: a parsed program.

    Returns:
        Prolog source text.
    """
    arity: dict[str, int] = {}
    atoms = list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)] + [program.query]
    for atom in atoms:
        arity.setdefault(atom.predicate, len(atom.args) + 1)
    for decl in program.predicates:
        arity.setdefault(decl.name, decl.arity + 1)
    out = ["% Translated from a Logic-LM LP program (symbolkg.solvers.lp.language.to_prolog)."]
    for name, n in arity.items():
        out.append(f":- table {_pl_atom(name)}/{n}.")
        # dynamic: a predicate with no clauses fails instead of raising an existence error.
        out.append(f":- dynamic {_pl_atom(name)}/{n}.")
    out.append(":- dynamic lp_const/1.")
    for const in program.constants():
        out.append(f"lp_const({_pl_atom(const)}).")
    for fact in program.facts:
        out.append(f"{_pl_goal(fact)}.  % LP line {fact.line}")
    for rule in program.rules:
        body_vars = {v.name for a in rule.body for v in a.variables()}
        for head in rule.head:
            goals = [_pl_goal(a) for a in rule.body]
            free = sorted({v.name for v in head.variables()} - body_vars)
            goals += [f"lp_const(V_{v})" for v in free]
            body = ", ".join(goals) if goals else "true"
            out.append(f"{_pl_goal(head)} :- {body}.  % LP line {rule.line}")
    q = program.query
    negated = Atom(q.predicate, q.args, not q.value, q.line)
    out += [
        f"lp_holds :- {_pl_goal(q)}.",
        f"lp_negated :- {_pl_goal(negated)}.",
        "lp_answer(A) :-",
        "    (   lp_holds, lp_negated -> A = 'Inconsistent'",
        "    ;   lp_holds -> A = 'True'",
        "    ;   lp_negated -> A = 'False'",
        "    ;   A = 'Unknown'",
        "    ).",
        f"% query: {PROLOG_ANSWER_GOAL}",
    ]
    return "\n".join(out) + "\n"


def solve_with_prolog(text: str, limits: Limits) -> Outcome:
    """Like :func:`solve`, but runs the :func:`to_prolog` translation in SWI-Prolog.

    Statuses and answers match :func:`solve`; ``backend`` is ``"swipl"``. ``proof`` holds
    the answer binding; ``certificate`` the derivation certificate SWI-Prolog finds in a second
    query (:func:`_prolog_certificate`; None when that runs out of the time the answer left).
    ``seconds`` is the time of the answer alone.

    Args:
        text: the LP program.
        limits: passed to :func:`symbolkg.solvers.prolog.language.run_query`.

    Returns:
        The outcome.

    Raises:
        symbolkg.solvers.prolog.language.PrologUnavailable: SWI-Prolog cannot be started.
    """
    from symbolkg.solvers.prolog import language as prolog  # only this path needs SWI-Prolog; the chainer must not import it

    with Stopwatch() as sw:
        try:
            program = parse(text)
        except ProgramError as exc:
            return exc.to_outcome(seconds=sw.elapsed(), backend=prolog.BACKEND)
        source = to_prolog(program)
        query_line = source.count("\n")  # the '% query:' line is the last one
        result = prolog.run_query(source, PROLOG_ANSWER_GOAL, limits)
    answer = result.solutions[0].bindings[0][1] if result.status == "ok" and result.solutions else None
    certificate = None
    left_s = limits.timeout_s - sw.seconds
    if answer in _PROLOG_ANSWERS and left_s > 0.01:
        # A second query, in the time the answer left: a certificate search that runs out costs no answer,
        # and both calls together stay inside the worker pool's limit.
        try:
            certificate = _prolog_certificate(text, program, source, _PROLOG_ANSWERS[answer], replace(limits, timeout_s=left_s))
        except (RecursionError, ValueError):  # a proof too deep to read back, or output cut off mid-line: no certificate
            certificate = None
    mapping = {"'True'": (Status.PROVED, ANSWER_TRUE), "'False'": (Status.DISPROVED, ANSWER_FALSE), "'Unknown'": (Status.UNKNOWN, ANSWER_UNKNOWN)}
    if answer in mapping:
        status, value = mapping[answer]
        return Outcome(status=status, answer=value, proof=f"Answer = {answer}", seconds=sw.seconds, backend=prolog.BACKEND,
                       certificate=certificate)
    if answer == "'Inconsistent'":
        return Outcome(
            status=Status.UNSAT,
            proof=f"Answer = {answer}",
            error_kind=ErrorKind.NO_ANSWER.value,
            error_message=f"the program is inconsistent: it derives both {program.query} and its negation",
            error_line=program.query.line,
            seconds=sw.seconds,
            backend=prolog.BACKEND,
            certificate=certificate,
        )
    return prolog.to_outcome(result, prolog.PrologProgram(source, PROLOG_ANSWER_GOAL, query_line), limits, sw.seconds)


_PROLOG_ANSWERS = {"'True'": ANSWER_TRUE, "'False'": ANSWER_FALSE, "'Unknown'": ANSWER_UNKNOWN, "'Inconsistent'": None}

#: The proof search added to :func:`to_prolog`'s text for a certificate. ``'lp-rule'(Kind, Head, Body,
#: Binding)`` lists every fact (``fact(Line)``) and rule head (``rule(Index)``, the index into
#: ``LPProgram.rules``); ``'lp-call'/1`` calls a (tabled) LP atom. The search proves a ground goal
#: by a rule whose body atoms all hold (the tables say which), never using a goal inside its own
#: proof, so it ends on cyclic rules; the tree is written as JSON, one line per goal. The names
#: contain '-', so no LP predicate can clash with them.
_PROLOG_PROOF = r"""
'lp-prove'(G, Anc, node(K, G, B, Ps)) :- 'lp-rule'(K, G, Body, B), 'lp-prove-all'(Body, [G|Anc], Ps).
'lp-prove-all'([], _, []).
'lp-prove-all'([G|Gs], Anc, [P|Ps]) :-
    'lp-call'(G), \+ memberchk(G, Anc), once('lp-prove'(G, Anc, P)), 'lp-prove-all'(Gs, Anc, Ps).
'lp-certificate'(Goals) :- forall(member(G, Goals), (once('lp-prove'(G, [], P)), 'lp-json'(P), nl)), write(end), nl.
'lp-closure'(N) :-
    findall(G, 'lp-call'(G), Gs0), sort(Gs0, Gs), length(Gs, N),
    forall(member(G, Gs), ('lp-json-atom'(G), nl)), write(end), nl.
'lp-json'(node(K, G, B, Ps)) :-
    write('{"k":'), 'lp-json-kind'(K), write(',"a":'), 'lp-json-atom'(G),
    write(',"b":['), 'lp-json-binding'(B), write('],"p":['), 'lp-json-list'(Ps), write(']}').
'lp-json-kind'(fact(L)) :- write('["fact",'), write(L), write(']').
'lp-json-kind'(rule(I)) :- write('["rule",'), write(I), write(']').
'lp-json-atom'(G) :- G =.. [P|Args], write('["'), write(P), write('",['), 'lp-json-strs'(Args), write(']]').
'lp-json-strs'([]).
'lp-json-strs'([A]) :- !, write('"'), write(A), write('"').
'lp-json-strs'([A|As]) :- write('"'), write(A), write('",'), 'lp-json-strs'(As).
'lp-json-binding'([]).
'lp-json-binding'([N-V]) :- !, write('["'), write(N), write('","'), write(V), write('"]').
'lp-json-binding'([N-V|Bs]) :- write('["'), write(N), write('","'), write(V), write('"],'), 'lp-json-binding'(Bs).
'lp-json-list'([]).
'lp-json-list'([P]) :- !, 'lp-json'(P).
'lp-json-list'([P|Ps]) :- 'lp-json'(P), write(','), 'lp-json-list'(Ps).
"""


def _prolog_certificate(text: str, program: LPProgram, source: str, answer: str | None, limits: Limits) -> dict | None:
    """The derivation certificate of SWI-Prolog's ``answer`` (:func:`derivation_certificate`'s format).

    SWI-Prolog itself finds the proof tree (True/False; both trees for an inconsistent program)
    or the set of all atoms it derives (Unknown), with the search of :data:`_PROLOG_PROOF` run on
    the same tabled translation that answered. None when that query fails, runs out of limits,
    or its output is cut off (the harness keeps 10,000 characters); a closure that is cut off
    keeps its count only, which the checker recomputes.
    """
    from symbolkg.solvers.prolog import language as prolog
    from symbolkg.solvers.certificates import derivation

    q = program.query
    query: GroundAtom = (q.predicate, tuple(str(a) for a in q.args), q.value)
    negation: GroundAtom = (q.predicate, query[1], not q.value)
    arity: dict[str, int] = {}
    for atom in list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)] + [program.query]:
        arity.setdefault(atom.predicate, len(atom.args) + 1)
    for decl in program.predicates:
        arity.setdefault(decl.name, decl.arity + 1)
    out = [_PROLOG_PROOF]
    for name, n in arity.items():
        params = ", ".join(f"A{i}" for i in range(n))
        out.append(f"'lp-call'({_pl_atom(name)}({params})) :- {_pl_atom(name)}({params}).")
    for fact in program.facts:
        out.append(f"'lp-rule'(fact({fact.line}), {_pl_goal(fact)}, [], []).")
    for index, rule in enumerate(program.rules):
        names = sorted({v.name for a in (*rule.body, *rule.head) for v in a.variables()})
        binding = "[" + ", ".join(f"{_pl_atom(v)}-V_{v}" for v in names) + "]"
        body = "[" + ", ".join(_pl_goal(a) for a in rule.body) + "]"
        for head in rule.head:
            out.append(f"'lp-rule'(rule({index}), {_pl_goal(head)}, {body}, {binding}).")
    cert_source = source + "\n".join(out) + "\n"

    def ground(atom: GroundAtom) -> str:
        return _pl_goal(Atom(atom[0], atom[1], atom[2]))

    if answer == ANSWER_UNKNOWN:
        result = prolog.run_query(cert_source, "'lp-closure'(N)", limits)
        if result.status != "ok" or not result.solutions:
            return None
        count = int(result.solutions[0].bindings[0][1])
        lines = result.output.splitlines()
        if not lines or lines[-1] != "end":  # cut off: keep the count, the checker recomputes the atoms
            return derivation.closure_certificate(producer=prolog.BACKEND, query=query, query_line=q.line, atoms=None,
                                                  count=count)
        atoms = [_json_atom(json.loads(line)) for line in lines[:-1]]
        if len(atoms) != count:
            return None
        return derivation.closure_certificate(producer=prolog.BACKEND, query=query, query_line=q.line, atoms=atoms)
    goals = {ANSWER_TRUE: (query,), ANSWER_FALSE: (negation,), None: (query, negation)}[answer]
    result = prolog.run_query(cert_source, f"'lp-certificate'([{', '.join(ground(g) for g in goals)}])", limits)
    lines = result.output.splitlines()
    if result.status != "ok" or not result.solutions or not lines or lines[-1] != "end":
        return None
    steps: list[dict] = []
    ids: dict[GroundAtom, int] = {}
    source_lines = text.splitlines()
    for line in lines[:-1]:  # one tree per goal; for True/False the goal's step comes last
        _flatten_proof(json.loads(line), program, source_lines, ids, steps)
    return derivation.proof_certificate(producer=prolog.BACKEND, answer=answer, query=query, query_line=q.line, steps=steps)


def _json_atom(encoded: list) -> GroundAtom:
    """``["Cold", ["Bob", "true"]]`` (as :data:`_PROLOG_PROOF` writes an atom) -> ``("Cold", ("Bob",), True)``."""
    predicate, args = encoded
    return (predicate, tuple(args[:-1]), args[-1] == "true")


def _flatten_proof(node: dict, program: LPProgram, lines: list[str], ids: dict[GroundAtom, int], steps: list[dict]) -> int:
    """Add the steps of SWI-Prolog's proof tree ``node`` (premises first, each atom once); returns its id."""
    atom = _json_atom(node["a"])
    if atom in ids:
        return ids[atom]
    # The search never uses a goal inside its own proof, so ``atom`` is not among its premises' steps.
    body = [_flatten_proof(child, program, lines, ids, steps) for child in node["p"]]
    ids[atom] = len(ids) + 1
    kind, where = node["k"]
    if kind == "fact":
        steps.append({"id": ids[atom], "atom": _format_atom(*atom), "rule": None, "line": where,
                      "rule_text": lines[where - 1].split(":::", 1)[0].strip(), "binding": {}, "body": []})
    else:
        rule = program.rules[where]
        steps.append({"id": ids[atom], "atom": _format_atom(*atom), "rule": rule.line, "line": rule.line,
                      "rule_text": rule.text, "binding": {f"${k}": v for k, v in sorted(node["b"])}, "body": body})
    return ids[atom]
