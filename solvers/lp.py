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
* Constants and predicate names are case-sensitive.
* A variable in a rule head that does not occur in the body (or a variable in a
  fact) ranges over every constant of the program, i.e. ``Big($x, True)`` as a fact
  means "everything is big". (Logic-LM silently dropped such facts.)

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
instance used, in the order they build on each other.

:func:`to_prolog` translates a parsed program into tabled SWI-Prolog text for
:mod:`symbolkg.solvers.prolog`; :func:`solve_with_prolog` runs a program through that path.
"""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass, field
from typing import Iterator, Union

from symbolkg.solvers.records import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

BACKEND = "forward-chainer"

#: Answers of an entailment query (see symbolkg.solvers.records).
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
    """

    predicate: str
    args: tuple[Term, ...]
    value: bool
    line: int = 0

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

_HEADER_RE = re.compile(r"^[#*\s]*(predicates|facts|rules|query|queries)\s*\**\s*:\s*\**\s*(.*)$", re.IGNORECASE)
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VAR_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_CONST_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-']*")
_ATOM_RE = re.compile(r"(?P<neg>[!¬~]?)\s*(?P<name>[^\s(]*)\s*\((?P<args>[^()]*)\)")
_TRUTH = {"true": True, "false": False}
_EXAMPLE = "expected an atom like Pred(Bob, True) or Pred($x, $y, False)"


def _format_atom(predicate: str, args: tuple[str, ...], value: bool) -> str:
    return f"{predicate}({', '.join((*args, str(value)))})"


def _strip_comment(raw: str) -> str:
    text = raw.split(":::", 1)[0].strip()
    if text.startswith("#") or text.startswith("//"):
        return ""
    # A Prolog-style final period ("Cold(Bob, True).") changes nothing.
    return text[:-1].rstrip() if text.endswith(".") else text


def _parse_atom(text: str, line: int, *, section: str) -> Atom:
    """Parse one atom; raise a ProgramError that says what is wrong with it."""
    text = text.strip()
    match = _ATOM_RE.fullmatch(text)
    if not match:
        if "(" not in text:
            raise ProgramError(f"{_EXAMPLE}, found {text!r} (arguments in parentheses are missing)", line)
        raise ProgramError(f"{_EXAMPLE}, found {text!r} in {section}", line)
    name = match.group("name")
    if not _NAME_RE.fullmatch(name):
        raise ProgramError(f"invalid predicate name {name!r} in {text!r}: use letters, digits and '_', starting with a letter", line)
    raw_args = [a.strip() for a in match.group("args").split(",")]
    if len(raw_args) < 2 or raw_args[-1].lower() not in _TRUTH:
        raise ProgramError(
            f"{text!r}: the last argument must be True or False (e.g. {name}({', '.join(raw_args[:-1] or ['Bob'])}, True))",
            line,
        )
    value = _TRUTH[raw_args[-1].lower()]
    if match.group("neg"):
        value = not value  # !P(x, True) reads "P(x) is not true", i.e. P(x, False)
    args: list[Term] = []
    for raw in raw_args[:-1]:
        if raw.startswith("$"):
            var = _VAR_RE.fullmatch(raw)
            if not var:
                raise ProgramError(f"invalid variable {raw!r} in {text!r}: variables look like $x or $y", line)
            args.append(Var(var.group(1)))
        elif _CONST_RE.fullmatch(raw):
            args.append(raw)
        elif raw == "":
            raise ProgramError(f"empty argument in {text!r}", line)
        else:
            raise ProgramError(
                f"invalid argument {raw!r} in {text!r}: constants are single words like Bob or cat, variables look like $x",
                line,
            )
    return Atom(name, tuple(args), value, line)


def _parse_conjunction(text: str, line: int, *, section: str) -> list[Atom]:
    parts = [p.strip() for p in re.split(r"&&|∧", text)]
    if any(p == "" for p in parts):
        raise ProgramError(f"empty conjunct in {text!r}: write 'A && B', with an atom on both sides of '&&'", line)
    return [_parse_atom(p, line, section=section) for p in parts]


def _parse_rule(text: str, line: int) -> Rule:
    if text.count(">>>") != 1:
        raise ProgramError(f"a rule has exactly one '>>>' between its premises and conclusion, found {text.count('>>>')} in {text!r}", line)
    body_text, head_text = text.split(">>>")
    if not body_text.strip():
        raise ProgramError(f"rule {text!r} has no premise before '>>>'", line)
    if not head_text.strip():
        raise ProgramError(f"rule {text!r} has no conclusion after '>>>'", line)
    body = _parse_conjunction(body_text, line, section="Rules")
    head = _parse_conjunction(head_text, line, section="Rules")
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
            ambiguous query (``ErrorKind.NO_ANSWER``) or an arity mismatch
            (``ErrorKind.TYPE``).
    """
    section: str | None = None
    decls: list[PredicateDecl] = []
    facts: list[Atom] = []
    rules: list[Rule] = []
    queries: list[Atom] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        header = _HEADER_RE.match(raw.split(":::", 1)[0])
        if header:
            section = header.group(1).capitalize()
            section = "Query" if section == "Queries" else section
            rest = _strip_comment(header.group(2))
            if not rest:
                continue
            content = rest
        else:
            content = _strip_comment(raw)
        if not content:
            continue
        if section is None:
            continue  # prose before the first header; Logic-LM ignored it too
        if section == "Predicates":
            decl = _parse_declaration(content, line_no)
            comment = raw.split(":::", 1)[1].strip() if ":::" in raw else ""
            decls.append(PredicateDecl(decl.name, decl.params, comment, line_no))
        elif section == "Query":
            if ">>>" in content:
                raise ProgramError(f"the query must be a single atom such as Pred(Bob, True), found a rule {content!r}", line_no, ErrorKind.NO_ANSWER)
            queries.extend(_parse_conjunction(content, line_no, section="Query"))
        elif ">>>" in content:
            rules.append(_parse_rule(content, line_no))
        else:
            for atom in _parse_conjunction(content, line_no, section=section):
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
    uses = list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)] + [program.query]
    for atom in sorted(uses, key=lambda a: a.line):
        n = len(atom.args)
        known = arity.get(atom.predicate)
        if known is None:
            arity[atom.predicate] = (n, atom.line, "first used")
        elif known[0] != n:
            raise ProgramError(
                f"{atom.predicate} takes {known[0]} argument(s) plus True/False ({known[2]} on line {known[1]}), "
                f"but {atom} has {n}; use the same arguments everywhere",
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

    def explain(self, goal: GroundAtom) -> str:
        """The derivation of ``goal``: each fact and rule instance used, premises first."""
        order: list[GroundAtom] = []
        seen: set[GroundAtom] = set()
        stack: list[tuple[GroundAtom, bool]] = [(goal, False)]
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
        lines = []
        for atom in order:
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
        )
    if first is not None:
        proof = fixpoint.explain(first)
    else:
        proof = f"neither {program.query} nor its negation is derivable ({len(fixpoint.derived)} atoms derived)"
        proof += "".join(f"\nhint: {hint}" for hint in lint(program))
    return Outcome(status=status, answer=_ANSWERS[status], proof=proof, seconds=sw.seconds, backend=BACKEND)


def lint(program: LPProgram) -> list[str]:
    """Likely translation mistakes worth showing the LLM when the answer is Unknown.

    Hints only: the program's meaning does not change. Two kinds, both frequent
    in GPT-4's ProntoQA programs: predicate names that differ only by case or a
    plural ending (``Impus`` / ``Impuses``), which split one concept in two; and a
    query predicate that no fact or rule concludes.

    Args:
        program: a parsed program.

    Returns:
        Human-readable hints, possibly none.
    """
    names: dict[str, int] = {}
    for atom in list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)] + [program.query]:
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
    """Translate an LP program into tabled SWI-Prolog text for :mod:`symbolkg.solvers.prolog`.

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
    out = ["% Translated from a Logic-LM LP program (symbolkg.solvers.lp.to_prolog)."]
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

    Statuses and answers match :func:`solve`; ``backend`` is ``"swipl"``. There is
    no derivation trace (``proof`` holds the answer binding).

    Args:
        text: the LP program.
        limits: passed to :func:`symbolkg.solvers.prolog.run_query`.

    Returns:
        The outcome.

    Raises:
        symbolkg.solvers.prolog.PrologUnavailable: SWI-Prolog cannot be started.
    """
    from symbolkg.solvers import prolog  # only this path needs SWI-Prolog; the chainer must not import it

    with Stopwatch() as sw:
        try:
            program = parse(text)
        except ProgramError as exc:
            return exc.to_outcome(seconds=sw.elapsed(), backend=prolog.BACKEND)
        source = to_prolog(program)
        query_line = source.count("\n")  # the '% query:' line is the last one
        result = prolog.run_query(source, PROLOG_ANSWER_GOAL, limits)
    answer = result.solutions[0].bindings[0][1] if result.status == "ok" and result.solutions else None
    mapping = {"'True'": (Status.PROVED, ANSWER_TRUE), "'False'": (Status.DISPROVED, ANSWER_FALSE), "'Unknown'": (Status.UNKNOWN, ANSWER_UNKNOWN)}
    if answer in mapping:
        status, value = mapping[answer]
        return Outcome(status=status, answer=value, proof=f"Answer = {answer}", seconds=sw.seconds, backend=prolog.BACKEND)
    if answer == "'Inconsistent'":
        return Outcome(
            status=Status.UNSAT,
            proof=f"Answer = {answer}",
            error_kind=ErrorKind.NO_ANSWER.value,
            error_message=f"the program is inconsistent: it derives both {program.query} and its negation",
            error_line=program.query.line,
            seconds=sw.seconds,
            backend=prolog.BACKEND,
        )
    return prolog.to_outcome(result, prolog.PrologProgram(source, PROLOG_ANSWER_GOAL, query_line), limits, sw.seconds)
