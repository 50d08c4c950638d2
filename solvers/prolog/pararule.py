"""PARARULE-Plus as Prolog: the formalizer agent's prompt and parser, and a deterministic translator.

Three things live here, beside each other because they share one encoding:

* **The encoding.** PARARULE-Plus reads negation in two ways (PrologMCP, arXiv 2606.14935, §4.2):
  a ``not`` in a rule body holds when the atom is absent from the *initial* facts (the
  extensional database, as in semi-positive Datalog), while a ``not`` in the question holds when
  the atom is neither stated nor derivable (the closure). So every stated fact is written twice,
  ``kind(anne).`` and ``initially(kind, anne).``, every body negation becomes
  ``\\+ initially(kind, X)``, and the question's negation stays ``\\+ kind(anne)``. Binary
  relations ("the wolf sees the mouse"), which the paper's encoding leaves out, get
  ``initially/3``: ``sees(wolf, mouse).`` and ``initially(sees, wolf, mouse).``. Predicates in a
  recursive cycle of rules (``All quiet people are smart.`` / ``If someone is smart then they are
  quiet.``) are tabled, so the program terminates whatever the cycle. A negated body literal is
  guarded by ``entity(X)`` (every individual the context names), so a rule stays range-restricted
  and answers open queries too. Predicates used but never defined are declared ``dynamic`` (they
  fail instead of raising ``existence_error``).

  :func:`encode` also writes the *plain SLDNF* alternative (``negation="closure"``: ``\\+ kind(X)``
  in rule bodies too, no tabling), which the agent runs beside the intended program to report, per
  question, whether standard negation as failure would answer differently or not terminate (the
  paper's Sample B analysis).

* **The translator** (:func:`parse_context`, :func:`parse_question`, :func:`translate`): a pure,
  deterministic reader of PARARULE-Plus's templated English. It knows every sentence template of the
  depth 2-4 test files (:data:`TEMPLATES`) and raises :class:`TranslationError` naming any sentence
  it cannot read, never guessing. The ``pararule-template`` engine answers the agent's prompts with
  it: a stand-in for a model that formalizes perfectly.

* **The agent's messages and parser** (the prompt text is :data:`symbolkg.solvers.prolog.prompts.SYSTEM_PROMPT`;
  :func:`formalize_messages`, :func:`repair_message`,
  :func:`parse_response`, :func:`read_request`): the model writes ``<prolog>...</prolog>`` (the
  knowledge base of the context) and ``<goal_true>...</goal_true>`` (a goal that succeeds iff the
  statement is true); a missing or malformed tag is a :class:`FormatError`, which the agent sends
  back to the model like a Prolog error.

Example::

    >>> t = translate("Anne is kind. If someone is not big then they are nice.", "Anne is not nice.")
    >>> print(t.program, end="")
    % facts are stated twice: as themselves and as initially/2,3 (the initial fact base)
    :- dynamic initially/2, initially/3.
    entity(anne).
    kind(anne).
    initially(kind, anne).
    nice(X) :- entity(X), \\+ initially(big, X).
    >>> t.goal
    '\\\\+ nice(anne)'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal as TypingLiteral

from symbolkg.solvers.prolog.prompts import SYSTEM_PROMPT

__all__ = [
    "LOOP_MARK",
    "TEMPLATES",
    "Atom",
    "Fact",
    "Formalization",
    "FormatError",
    "Literal",
    "Rule",
    "Theory",
    "Translation",
    "TranslationError",
    "encode",
    "formalize_messages",
    "goal_text",
    "parse_context",
    "parse_question",
    "parse_response",
    "read_request",
    "render_response",
    "repair_message",
    "sldnf_probe",
    "split_sentences",
    "translate",
]

Negation = TypingLiteral["initial", "closure"]
VAR = "X"


class TranslationError(ValueError):
    """A sentence the translator cannot read (the message quotes it and names the templates)."""


class FormatError(ValueError):
    """A model's answer without a well-formed ``<prolog>`` or ``<goal_true>`` tag."""


# -- the logic ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Atom:
    """``pred(args...)``: args are constants (lower-case atoms) or the rule variable :data:`VAR`."""

    pred: str
    args: tuple[str, ...]

    def text(self, prefix: str = "") -> str:
        return f"{prefix}{self.pred}({', '.join(self.args)})"

    @property
    def key(self) -> tuple[str, int]:
        return self.pred, len(self.args)


@dataclass(frozen=True)
class Literal:
    atom: Atom
    negated: bool = False


@dataclass(frozen=True)
class Fact:
    atom: Atom
    sentence: str


@dataclass(frozen=True)
class Rule:
    head: Atom
    body: tuple[Literal, ...]
    sentence: str


@dataclass(frozen=True)
class Theory:
    """A context read into facts and rules; ``entities`` in order of first mention."""

    facts: tuple[Fact, ...]
    rules: tuple[Rule, ...]
    entities: tuple[str, ...]


@dataclass(frozen=True)
class Translation:
    """The translator's answer for one question.

    Attributes:
        program: the knowledge base in the intended encoding (initial-facts negation, tabling).
        goal: succeeds iff the question's statement is true (closure negation).
        sldnf_program: the plain SLDNF alternative (closure negation in rule bodies, no tabling).
        sldnf_goal: the question's goal for it (the same text: the predicates keep their names).
    """

    program: str
    goal: str
    sldnf_program: str
    sldnf_goal: str


@dataclass(frozen=True)
class Formalization:
    """What the model wrote: the program and the goal, tags stripped."""

    program: str
    goal: str


# -- reading the templated English ----------------------------------------------------------------

_NAME = r"[A-Z][a-z]+"
_THE = r"[Tt]he (?:[a-z]+ )*?[a-z]+"
_ENTITY = rf"(?:{_THE}|{_NAME})"
_WORD = r"[a-z]+"
_KIND = r"(?:people|animals|things)"

#: Every sentence template the translator reads (``E`` an individual, ``a``/``b`` adjectives,
#: ``v`` a verb in the third person, ``o`` an individual as object). Found by scanning the depth
#: 2-4 test files; questions are ``E is a.`` or ``E is not a.`` there, relations are read too.
TEMPLATES: tuple[str, ...] = (
    "E is a.",
    "E is not a.  (questions only)",
    "E vs o.",
    "E does not v o.  (questions only)",
    "All a people|animals are b.",
    "A people|animals are b.",
    "If someone|something C then they are|it is b.",
    "If someone|something C then it vs o / they v o.",
    "C := c1 and c2 ...; c := is a | is not a | a | not a (after 'is') | vs o | does not v o",
)

_FACT_IS = re.compile(rf"^(?P<e>{_ENTITY}) is (?P<neg>not )?(?P<a>{_WORD})$")
_FACT_REL = re.compile(rf"^(?P<e>{_ENTITY}) (?P<v>{_WORD}s) (?P<o>{_ENTITY})$")
_FACT_NOT_REL = re.compile(rf"^(?P<e>{_ENTITY}) does not (?P<v>{_WORD}) (?P<o>{_ENTITY})$")
_ALL = re.compile(rf"^All (?P<a>{_WORD}) {_KIND} are (?P<b>{_WORD})$")
_GENERIC = re.compile(rf"^(?P<a>[A-Z][a-z]*) {_KIND} are (?P<b>{_WORD})$")
_IF = re.compile(r"^If (?:someone|something) (?P<cond>.+?) then (?P<then>.+)$")
_THEN_IS = re.compile(rf"^(?:they are|it is) (?P<b>{_WORD})$")
_THEN_REL = re.compile(rf"^(?:it (?P<v>{_WORD}s)|they (?P<base>{_WORD})) (?P<o>{_ENTITY})$")
_COND_IS = re.compile(rf"^(?:is )?(?P<neg>not )?(?P<a>{_WORD})$")
_COND_REL = re.compile(rf"^(?P<v>{_WORD}s) (?P<o>{_ENTITY})$")
_COND_NOT_REL = re.compile(rf"^does not (?P<v>{_WORD}) (?P<o>{_ENTITY})$")
_RESERVED = frozenset({"is", "not", "and", "then", "if", "are", "does"})


def entity_atom(phrase: str) -> str:
    """``"The bald eagle"`` -> ``bald_eagle``, ``"Anne"`` -> ``anne``."""
    words = phrase.split()
    if words[0].lower() == "the":
        words = words[1:]
    return "_".join(w.lower() for w in words)


def _third_person(base: str) -> str:
    """``see`` -> ``sees``: the form the relation's predicate is named after (the verbs of the data)."""
    return base + ("es" if base.endswith(("s", "sh", "ch", "x", "z")) else "s")


def _adjective(word: str, sentence: str) -> str:
    if word in _RESERVED:
        raise TranslationError(f"cannot read {sentence!r}: {word!r} is not an adjective")
    return word


def split_sentences(text: str) -> list[str]:
    """The sentences of a context (each ends with '.'; the period is dropped)."""
    parts = [p.strip() for p in re.split(r"(?<=\.)\s+", " ".join(text.split())) if p.strip()]
    out = []
    for p in parts:
        if not p.endswith("."):
            raise TranslationError(f"cannot read {p!r}: a sentence must end with '.'")
        out.append(p[:-1].strip())
    return out


def _condition(text: str, sentence: str) -> tuple[Literal, ...]:
    literals: list[Literal] = []
    after_is = False
    for i, part in enumerate(text.split(" and ")):
        part = part.strip()
        m = _COND_NOT_REL.match(part)
        if m:
            literals.append(Literal(Atom(_third_person(m["v"]), (VAR, entity_atom(m["o"]))), True))
            after_is = False
            continue
        m = _COND_REL.match(part)
        if m and not part.startswith(("is ", "not ")):
            literals.append(Literal(Atom(m["v"], (VAR, entity_atom(m["o"])))))
            after_is = False
            continue
        m = _COND_IS.match(part)
        if m and (part.startswith("is ") or (after_is and i > 0)):
            literals.append(Literal(Atom(_adjective(m["a"], sentence), (VAR,)), bool(m["neg"])))
            after_is = True
            continue
        raise TranslationError(f"cannot read the condition {part!r} of {sentence!r}; templates: {'; '.join(TEMPLATES)}")
    return tuple(literals)


def _sentence(sentence: str) -> Fact | Rule:
    m = _IF.match(sentence)
    if m:
        body = _condition(m["cond"], sentence)
        then = m["then"]
        t = _THEN_IS.match(then)
        if t:
            return Rule(Atom(_adjective(t["b"], sentence), (VAR,)), body, sentence)
        t = _THEN_REL.match(then)
        if t:
            verb = t["v"] or _third_person(t["base"])
            return Rule(Atom(verb, (VAR, entity_atom(t["o"]))), body, sentence)
        raise TranslationError(
            f"cannot read the conclusion {then!r} of {sentence!r}; templates: {'; '.join(TEMPLATES)}"
        )
    m = _ALL.match(sentence)
    if m:
        return Rule(Atom(_adjective(m["b"], sentence), (VAR,)), (Literal(Atom(m["a"], (VAR,))),), sentence)
    m = _GENERIC.match(sentence)
    if m and m["a"] not in ("All", "The"):
        return Rule(Atom(_adjective(m["b"], sentence), (VAR,)), (Literal(Atom(m["a"].lower(), (VAR,))),), sentence)
    m = _FACT_IS.match(sentence)
    if m and not m["neg"]:
        return Fact(Atom(_adjective(m["a"], sentence), (entity_atom(m["e"]),)), sentence)
    m = _FACT_REL.match(sentence)
    if m and m["v"] not in _RESERVED:
        return Fact(Atom(m["v"], (entity_atom(m["e"]), entity_atom(m["o"]))), sentence)
    raise TranslationError(f"cannot read {sentence!r}; the templates are: {'; '.join(TEMPLATES)}")


def parse_context(text: str) -> Theory:
    """Read a PARARULE-Plus context into facts and rules.

    Raises:
        TranslationError: a sentence fits no template (the message quotes it).
    """
    facts: list[Fact] = []
    rules: list[Rule] = []
    entities: dict[str, None] = {}
    for sentence in split_sentences(text):
        item = _sentence(sentence)
        if isinstance(item, Fact):
            facts.append(item)
            entities.update(dict.fromkeys(item.atom.args))
        else:
            rules.append(item)
            for atom in (item.head, *(lit.atom for lit in item.body)):
                entities.update(dict.fromkeys(a for a in atom.args if a != VAR))
    if not facts and not rules:
        raise TranslationError("the context has no sentence")
    return Theory(tuple(facts), tuple(rules), tuple(entities))


def parse_question(text: str) -> Literal:
    """Read a question (``"The lion is not heavy."``) into a ground literal.

    Raises:
        TranslationError: the question fits no template.
    """
    sentences = split_sentences(text)
    if len(sentences) != 1:
        raise TranslationError(f"a question is one sentence, got {text!r}")
    s = sentences[0]
    m = _FACT_IS.match(s)
    if m:
        return Literal(Atom(_adjective(m["a"], s), (entity_atom(m["e"]),)), bool(m["neg"]))
    m = _FACT_NOT_REL.match(s)
    if m:
        return Literal(Atom(_third_person(m["v"]), (entity_atom(m["e"]), entity_atom(m["o"]))), True)
    m = _FACT_REL.match(s)
    if m and m["v"] not in _RESERVED:
        return Literal(Atom(m["v"], (entity_atom(m["e"]), entity_atom(m["o"]))))
    raise TranslationError(f"cannot read the question {text!r}; the templates are: {'; '.join(TEMPLATES)}")


# -- writing Prolog -------------------------------------------------------------------------------


def _recursive(rules: Sequence[Rule]) -> set[tuple[str, int]]:
    """Predicates on a cycle of the positive dependency graph of ``rules``.

    Positive edges only: in the intended encoding a negated literal calls ``initially/2,3``,
    never the predicate, so negation cannot close a cycle there.
    """
    edges: dict[tuple[str, int], set[tuple[str, int]]] = {}
    for r in rules:
        edges.setdefault(r.head.key, set()).update(lit.atom.key for lit in r.body if not lit.negated)
    cyclic: set[tuple[str, int]] = set()
    for start, successors in edges.items():
        stack, seen = list(successors), set()
        while stack:
            node = stack.pop()
            if node == start:
                cyclic.add(start)
                break
            if node in seen:
                continue
            seen.add(node)
            stack.extend(edges.get(node, ()))
    return cyclic


def _indicators(keys: Iterable[tuple[str, int]], prefix: str) -> str:
    return ", ".join(f"{prefix}{p}/{n}" for p, n in sorted(keys))


def encode(
    theory: Theory,
    *,
    negation: Negation = "initial",
    extra_entities: Sequence[str] = (),
    extra_predicates: Iterable[tuple[str, int]] = (),
    prefix: str = "",
) -> str:
    """The Prolog program of ``theory``.

    Args:
        theory: the context, read.
        negation: ``"initial"``: the dataset's reading (body negation over the initial facts,
            ``initially/2,3``; recursive predicates tabled). ``"closure"``: plain SLDNF (body
            negation over everything derivable, no tabling): the alternative the agent reports.
        extra_entities: individuals to add to ``entity/1`` (a question's, when the context
            never names it).
        extra_predicates: ``(name, arity)`` that must exist (the question's): declared
            ``dynamic`` when no clause defines them, so that they fail instead of raising.
        prefix: prepended to every predicate name (to load both encodings in one module).

    Returns:
        The program text, one clause per line.
    """
    if negation not in ("initial", "closure"):
        raise ValueError(f"negation must be 'initial' or 'closure', got {negation!r}")
    lines: list[str] = []
    defined = {f.atom.key for f in theory.facts} | {r.head.key for r in theory.rules}
    # what is called: positive body literals, negated ones too under the closure reading
    used = {lit.atom.key for r in theory.rules for lit in r.body if negation == "closure" or not lit.negated}
    used |= set(extra_predicates)
    initially = f"{prefix}initially"
    if negation == "initial":
        lines.append(f"% facts are stated twice: as themselves and as {initially}/2,3 (the initial fact base)")
        lines.append(f":- dynamic {initially}/2, {initially}/3.")
        cyclic = _recursive(theory.rules)
        if cyclic:
            lines.append(f":- table {_indicators(cyclic, prefix)}.")
    else:
        lines.append("% plain SLDNF: negation in rule bodies over everything derivable, no tabling")
    undefined = used - defined
    if undefined:
        lines.append(f":- dynamic {_indicators(undefined, prefix)}.")
    entities = list(dict.fromkeys([*theory.entities, *extra_entities]))
    lines.extend(f"{prefix}entity({e})." for e in entities)
    for f in theory.facts:
        lines.append(f"{f.atom.text(prefix)}.")
        if negation == "initial":
            lines.append(f"{initially}({f.atom.pred}, {', '.join(f.atom.args)}).")
    for r in theory.rules:
        # positive literals first, so X is bound before any \+ (the same meaning for ground calls);
        # a rule with negations only is guarded by entity(X): range-restricted
        positive = [lit for lit in r.body if not lit.negated]
        body = [lit.atom.text(prefix) for lit in positive]
        if not positive:
            body.append(f"{prefix}entity({VAR})")
        for lit in (x for x in r.body if x.negated):
            if negation == "initial":
                body.append(f"\\+ {initially}({lit.atom.pred}, {', '.join(lit.atom.args)})")
            else:
                body.append(f"\\+ {lit.atom.text(prefix)}")
        lines.append(f"{r.head.text(prefix)} :- {', '.join(body)}.")
    return "\n".join(lines) + "\n"


def goal_text(question: Literal, prefix: str = "") -> str:
    """The goal that succeeds iff the question's statement is true (closure negation)."""
    text = question.atom.text(prefix)
    return f"\\+ {text}" if question.negated else text


#: the binding :func:`sldnf_probe`'s ``R`` gets when the goal ran out of inferences: plain SLDNF loops.
LOOP_MARK = "inference_limit_exceeded"


def sldnf_probe(goal: str, inferences: int = 1_000_000) -> str:
    """``goal`` under an inference limit: the way to tell a loop of plain SLDNF from a verdict.

    A depth limit cannot: inside ``\\+`` a branch cut by the depth limit just fails, so the
    negation *succeeds* and a loop reads as "true". The inference limit raises instead, through
    any negation, and ``call_with_inference_limit/3`` (sandbox-safe) catches it: the goal
    succeeds with ``R = inference_limit_exceeded`` (:data:`LOOP_MARK`) when it looped, with
    ``R = true`` or ``R = !`` when it is true, and fails when it is false. No proof of these
    programs needs more than a few thousand inferences; a loop reaches a million in ~0.1 s.
    """
    if inferences < 1:
        raise ValueError(f"inferences must be >= 1, got {inferences}")
    return f"call_with_inference_limit(({goal}), {inferences}, R)"


def translate(context: str, question: str) -> Translation:
    """The intended program and goal for a question, and the plain SLDNF alternative.

    The program depends on the question only when the question names an individual the
    context does not (it joins ``entity/1``), so the questions of a context share one program.

    Raises:
        TranslationError: a sentence of the context or the question fits no template.
    """
    theory = parse_context(context)
    q = parse_question(question)
    extra = [a for a in q.atom.args if a not in theory.entities]
    goal = goal_text(q)
    program = encode(theory, extra_entities=extra, extra_predicates=[q.atom.key])
    sldnf = encode(theory, negation="closure", extra_entities=extra, extra_predicates=[q.atom.key])
    return Translation(program, goal, sldnf, goal)


# -- the agent's prompt and its parser ------------------------------------------------------------

_TAG = {name: re.compile(rf"<{name}>(?P<body>.*?)</{name}>", re.DOTALL) for name in ("prolog", "goal_true")}
_CONTEXT_MARK, _STATEMENT_MARK = "CONTEXT:", "STATEMENT:"


def formalize_messages(context: str, question: str) -> list[tuple[str, str]]:
    """The first request of a problem: (role, content) pairs."""
    user = f"{_CONTEXT_MARK}\n{' '.join(context.split())}\n\n{_STATEMENT_MARK}\n{' '.join(question.split())}"
    return [("system", SYSTEM_PROMPT), ("user", user)]


def repair_message(stage: str, error: dict) -> str:
    """The user turn that sends an attempt's error back to the model.

    Args:
        stage: where it failed: ``"format"``, ``"consult"`` or ``"goal"``.
        error: ``{kind, message, prolog_term?}`` (a tool's structured error, or the parser's).
    """
    term = error.get("prolog_term")
    where = {
        "format": "Your answer could not be read",
        "consult": "Your program did not load cleanly",
        "goal": "Your goal could not be run",
    }.get(stage, "Your attempt failed")
    lines = [f"{where}: {error.get('kind', 'error')}: {error.get('message', '')}".rstrip()]
    if term:
        lines.append(f"Prolog error term: {term}")
    lines.append("Fix it and answer again with the complete <prolog> and <goal_true> tags.")
    return "\n".join(lines)


def _strip_fences(text: str) -> str:
    text = text.strip()
    text = re.sub(r"^```[a-zA-Z]*\s*\n?", "", text)
    return re.sub(r"\n?```\s*$", "", text).strip()


def parse_response(text: str) -> Formalization:
    """The program and goal of a model's answer.

    The goal may carry a leading ``?-`` and a trailing ``.``; both are dropped.

    Raises:
        FormatError: a tag is missing, repeated or empty, or the goal has more than one clause.
    """
    found: dict[str, str] = {}
    for name, pattern in _TAG.items():
        matches = pattern.findall(text or "")
        if not matches:
            raise FormatError(f"no <{name}>...</{name}> tag in the answer")
        if len(matches) > 1:
            raise FormatError(f"{len(matches)} <{name}> tags in the answer; write exactly one")
        body = _strip_fences(matches[0])
        if not body:
            raise FormatError(f"the <{name}> tag is empty")
        found[name] = body
    goal = found["goal_true"].strip()
    goal = goal[2:].strip() if goal.startswith("?-") else goal
    goal = goal[:-1].rstrip() if goal.endswith(".") else goal
    if not goal:
        raise FormatError("the <goal_true> tag holds no goal")
    if re.search(r"\.\s", re.sub(r"'[^']*'", "''", goal) + " "):
        # a period followed by white space, outside quotes, ends a clause: more than one goal
        raise FormatError("the <goal_true> tag holds more than one clause; write one goal (use ',' for 'and')")
    program = found["prolog"]
    return Formalization(program if program.endswith("\n") else program + "\n", goal)


def render_response(program: str, goal: str) -> str:
    """An answer in the agent's format (what the template engine writes)."""
    return f"<prolog>\n{program.rstrip()}\n</prolog>\n<goal_true>{goal}</goal_true>"


def read_request(content: str) -> tuple[str, str]:
    """(context, statement) from the first user message of a request.

    Raises:
        ValueError: the message is not one :func:`formalize_messages` wrote.
    """
    if _CONTEXT_MARK not in content or _STATEMENT_MARK not in content:
        raise ValueError("not a prolog-agent formalization request (no CONTEXT:/STATEMENT: sections)")
    head, _, statement = content.partition(f"\n\n{_STATEMENT_MARK}\n")
    context = head.split(f"{_CONTEXT_MARK}\n", 1)[-1]
    return context.strip(), statement.strip()
