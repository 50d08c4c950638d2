"""The Logic-LM logic-programming language ("logiclm-lp"): its AST, parser and lint.

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
turns each into the form above, so the forward chainer, :mod:`symbolkg.solvers.lp.engine`, and the SWI-Prolog path,
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

The meaning of a program and the engines that answer it: :mod:`symbolkg.solvers.lp.engine` (the forward
chainer) and :mod:`symbolkg.solvers.lp.swipl` (SWI-Prolog).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from symbolkg.solvers.outcomes import ErrorKind, ProgramError

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
Term = str | Var

#: A ground atom as the engines and certificates store it: (predicate, args, value).
GroundAtom = tuple[str, tuple[str, ...], bool]


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
        return format_atom(self.predicate, tuple(str(a) for a in self.args), self.value)


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

_HEADER_RE = re.compile(
    r"^[#*\s]*(predicates?|facts?|rules?|query|queries)\s*\**\s*(?::\s*\**\s*(.*))?$", re.IGNORECASE
)
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
_LIST_MARKER_RE = re.compile(
    r"^(?:(?:[-*•]|\d{1,3}[.)])\s+|(?:facts?|rules?|premises?|query)\s*\d{1,3}\s*[:.)]\s*)", re.IGNORECASE
)
_SENTENCE_RE = re.compile(
    r"(?P<subject>.+?)\s+(?:is|are)\s+(?P<neg>not\s+)?(?:(?:a|an|the)\s+)?(?P<pred>[A-Za-z_]\w*)", re.IGNORECASE
)
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


def format_atom(predicate: str, args: tuple[str, ...], value: bool) -> str:
    """``("Cold", ("Bob",), True)`` -> ``"Cold(Bob, True)"``: an atom as the language writes it."""
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
                raise ProgramError(
                    f"{text!r}: Not(...) takes one atom and optionally True or False, as in Not(Cold(Bob, True), True)",
                    line,
                )
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
        raise ProgramError(
            f"invalid predicate name {name!r} in {text!r}: use letters, digits and '_', starting with a letter", line
        )
    raw_args = [a.strip() for a in match.group("args").split(",")]
    last = raw_args[-1].lower()
    if last in _TRUTH:
        value, raw_terms, written = _TRUTH[last], raw_args[:-1], True
        if not raw_terms:
            raise ProgramError(
                f"{text!r} has no argument before its truth value: write e.g. {name}(Bob, {raw_args[-1]})", line
            )
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
                f"invalid argument {raw!r} in {text!r}: constants are names like Bob, cat or bald eagle, "
                "variables look like $x",
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
        raise ProgramError(
            f"a rule has exactly one '>>>' between its premises and conclusion, found {len(pieces) - 1} in {text!r}",
            line,
        )
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
        raise ProgramError(
            f"{text!r} looks like a fact, not a declaration: declare it as {match.group('name')}($x, bool) "
            "and list the fact under 'Facts:'",
            line,
        )
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
                raise ProgramError(
                    f"the query must be a single atom such as Pred(Bob, True), found a rule {content!r}",
                    line_no,
                    ErrorKind.NO_ANSWER,
                )
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
        raise ProgramError(
            "the program has no query: add a 'Query:' section with one atom such as Pred(Bob, True)",
            None,
            ErrorKind.NO_ANSWER,
        )
    if len(queries) > 1:
        lines = ", ".join(str(q.line) for q in queries)
        raise ProgramError(
            f"the Query section must contain exactly one atom, found {len(queries)} (lines {lines}); "
            "ask one question per program",
            queries[1].line,
            ErrorKind.NO_ANSWER,
        )
    query = queries[0]
    if not query.is_ground:
        raise ProgramError(
            f"the query {query} contains a variable; ask about a specific constant, "
            f"e.g. {query.predicate}(Bob, {query.value})",
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
                f"predicate {decl.name} is declared twice with different numbers of arguments "
                f"(line {known[1]} and here)",
                decl.line,
                ErrorKind.TYPE,
            )
        arity[decl.name] = (decl.arity, decl.line, "declared")
    uses = sorted(
        list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)] + [program.query],
        key=lambda a: a.line,
    )
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
                f"{_as_written(atom)}: {atom.predicate} takes {known[0]} argument(s) plus True/False "
                f"({known[2]} on line {known[1]}), so {atom.args[-1]} stands where the truth value goes: "
                "write True or False there",
                atom.line,
            )
        raise ProgramError(
            f"{atom.predicate} takes {known[0]} argument(s) plus True/False ({known[2]} on line {known[1]}), "
            f"but {_as_written(atom)} has {n}; use the same arguments everywhere",
            atom.line,
            ErrorKind.TYPE,
        )


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
                hints.append(
                    f"predicates {a} (line {names[a]}) and {b} (line {names[b]}) look like the same concept; "
                    "use one name"
                )
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
        hints.append(
            f"no fact or rule concludes {program.query.predicate}(...), so the query cannot be answered; "
            "check the predicate name"
        )
    return hints
