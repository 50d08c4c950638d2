"""LogicGraph proofs: the seven rule shapes, and the step and path checks of a model's proofs.

The search that builds proofs and groups them into families is :mod:`symbolkg.solvers.logicgraph.proof_search`.

LogicGraph (:mod:`symbolkg.solvers.logicgraph.instances`) asks for every minimal premise set that
entails the goal, each written as a stepwise proof whose steps use seven argument forms:

====  ===============================  ==========================
MP    ``P→Q``, ``P``                   ⊢ ``Q``
MT    ``P→Q``, ``¬Q``                  ⊢ ``¬P``
DS    ``P∨Q``, ``¬P``                  ⊢ ``Q``  (either disjunct)
HS    ``P→Q``, ``Q→R``                 ⊢ ``P→R``
CD    ``P→R``, ``Q→S``, ``P∨Q``        ⊢ ``R∨S``
DE    ``P∨Q``, ``P→R``, ``Q→R``        ⊢ ``R``
RAA   ``X→Y``, ``X→¬Y``                ⊢ ``¬X``
====  ===============================  ==========================

Formulas are compared after removing double negations (:func:`same`): the dataset writes
MT's ``(¬G → A1)``, ``¬A1`` ⊢ ``G`` and RAA's ``¬(A4 → A6) → …`` ⊢ ``(A4 → A6)`` that way.
Cited premises may come in any order, and a disjunction is read as unordered in every rule
(``Q∨P`` is ``P∨Q``). Contraposition (``P→Q`` ⊢ ``¬Q→¬P``) is not one of the seven and is
rejected by default; see :data:`CONTRAPOSITION`.

This module holds three things, all plain Python without a solver process:

* **checks**: :func:`matching_rules` (shape), :func:`check_step` (shape + local validity
  with :func:`~symbolkg.solvers.logicgraph.propositional.entails`) and :func:`check_path`, which
  checks one untrusted answer proof (any JSON) against an instance and labels each failed
  step with the paper's logical-execution error types (:data:`LABELS`);
* **search**: :func:`prove`, a shortest stepwise proof from exactly one premise set using
  only the seven rules (Knuth's generalisation of Dijkstra over derivable formulas);
* **families**: :func:`families`, the dataset's grouping of proofs into a core proof and
  branches that rejoin it (``family_id`` / ``path_type`` / ``branch_from``).

>>> from symbolkg.solvers.logicgraph.propositional import parse
>>> matching_rules([parse("(-G -> A1)"), parse("-A1")], parse("G"))
('MT',)
>>> matching_rules([parse("(A1 | A2)"), parse("(A1 -> G)"), parse("(A2 -> G)")], parse("G"))
('DE',)
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from symbolkg.solvers.logicgraph.instances import DERIVED, RULES, Instance, Premise
from symbolkg.solvers.logicgraph.propositional import (
    Formula,
    FormulaSyntaxError,
    Implies,
    Not,
    Or,
    atoms,
    entails,
    parse,
    satisfiable,
    strip_double_negation,
    to_prover9,
)

__all__ = [
    "CONTRAPOSITION",
    "FACT_HALLUCINATION",
    "INSUFFICIENT_PREMISE",
    "INVALID_DEDUCTION",
    "LABELS",
    "MALFORMED",
    "RULE_MISAPPLICATION",
    "PathCheck",
    "StepCheck",
    "check_path",
    "check_step",
    "matching_rules",
    "same",
]

#: Fact Hallucination: a cited id that is not in the knowledge base, a cited formula that is
#: not the knowledge-base item with that id, a ``Derived`` premise that is no earlier step's
#: conclusion, or a formula that mentions an atom the instance does not have.
FACT_HALLUCINATION = "Fact Hallucination"
#: Invalid Deduction: the conclusion does not follow from the cited premises, and not even
#: from them together with the whole knowledge base (see :func:`check_path`).
INVALID_DEDUCTION = "Invalid Deduction"
#: Insufficient Premise: the conclusion does not follow from the cited premises alone, but does
#: once other knowledge-base items (or sound earlier conclusions) are added to them.
INSUFFICIENT_PREMISE = "Insufficient Premise"
#: Rule Misapplication: the conclusion follows from the cited premises, but the step does not
#: have the shape of the rule it names (or names no rule of the seven).
RULE_MISAPPLICATION = "Rule Misapplication"
#: the error labels a program can assign, in the order a step is checked.
LABELS: tuple[str, ...] = (FACT_HALLUCINATION, INVALID_DEDUCTION, INSUFFICIENT_PREMISE, RULE_MISAPPLICATION)
#: not a label of the paper's taxonomy: the proof or step is not in the answer format at all
#: (no steps, a conclusion that does not parse, ...). Such a path is invalid.
MALFORMED = "Malformed"

#: Rule name accepted for contraposition (``P→Q`` ⊢ ``¬Q→¬P``) when a check is called with
#: ``allow_contraposition=True``. Off by default: the task defines proofs over the seven forms
#: only, the reference proofs never use it, and MT already covers its one use in this
#: system (``P→Q``, ``¬Q`` ⊢ ``¬P``); accepting an eighth form would mark as rule-conforming
#: steps that the prompt's rule set forbids. With it off, a contraposition step is locally
#: valid and labelled Rule Misapplication.
CONTRAPOSITION = "CP"


# ------------------------------------------------------------------ formulas


def _norm(formula: Formula) -> Formula:
    return strip_double_negation(formula)


# Pure memos (formulas are immutable and hashable): answers repeat the same premise strings and
# the same steps many times (branches share their tails with the core), and parsing plus a DPLL
# call per step is most of the verifier's time.
@functools.lru_cache(maxsize=1 << 16)
def _parse(text: str) -> Formula:
    return parse(text)


@functools.lru_cache(maxsize=1 << 16)
def _entails(premises: tuple[Formula, ...], conclusion: Formula) -> bool:
    return entails(premises, conclusion)


def negate(formula: Formula) -> Formula:
    """Negation of an already normalised formula, normalised (``¬¬P`` becomes ``P``); the proof search's too."""
    return formula.arg if isinstance(formula, Not) else Not(formula)


def same(a: Formula, b: Formula) -> bool:
    """Equal up to double negation (the dataset writes ``G`` where a rule yields ``¬¬G``).

    >>> from symbolkg.solvers.logicgraph.propositional import parse
    >>> same(parse("--(A1 -> G)"), parse("(A1 -> G)"))
    True
    """
    return _norm(a) == _norm(b)


def _disjuncts_equal(disjunction: Formula, left: Formula, right: Formula) -> bool:
    """``disjunction`` is ``left ∨ right`` in either order (all normalised)."""
    if not isinstance(disjunction, Or):
        return False
    return (disjunction.left, disjunction.right) in ((left, right), (right, left))


# ------------------------------------------------------------------ rule shapes
# Each matcher takes the cited premises in one fixed order (normalised) and the normalised
# conclusion; _matches tries every order of the cited premises.


def _mp(ps: Sequence[Formula], c: Formula) -> bool:
    i, p = ps
    return isinstance(i, Implies) and i.left == p and i.right == c


def _mt(ps: Sequence[Formula], c: Formula) -> bool:
    i, n = ps
    return isinstance(i, Implies) and n == negate(i.right) and c == negate(i.left)


def _ds(ps: Sequence[Formula], c: Formula) -> bool:
    d, n = ps
    if not isinstance(d, Or):
        return False
    return (n == negate(d.left) and c == d.right) or (n == negate(d.right) and c == d.left)


def _hs(ps: Sequence[Formula], c: Formula) -> bool:
    a, b = ps
    return isinstance(a, Implies) and isinstance(b, Implies) and a.right == b.left and c == Implies(a.left, b.right)


def _cd(ps: Sequence[Formula], c: Formula) -> bool:
    a, b, d = ps
    if not (isinstance(a, Implies) and isinstance(b, Implies) and isinstance(d, Or)):
        return False
    return _disjuncts_equal(d, a.left, b.left) and _disjuncts_equal(c, a.right, b.right)


def _de(ps: Sequence[Formula], c: Formula) -> bool:
    d, a, b = ps
    if not (isinstance(d, Or) and isinstance(a, Implies) and isinstance(b, Implies)):
        return False
    return _disjuncts_equal(d, a.left, b.left) and a.right == c and b.right == c


def _raa(ps: Sequence[Formula], c: Formula) -> bool:
    a, b = ps
    return (
        isinstance(a, Implies)
        and isinstance(b, Implies)
        and a.left == b.left
        and b.right == negate(a.right)
        and c == negate(a.left)
    )


def _cp(ps: Sequence[Formula], c: Formula) -> bool:
    (i,) = ps
    return isinstance(i, Implies) and c == Implies(negate(i.right), negate(i.left))


#: rule -> (number of cited premises, matcher over one order of them)
_SHAPES: dict[str, tuple[int, Any]] = {
    "MP": (2, _mp),
    "MT": (2, _mt),
    "HS": (2, _hs),
    "DS": (2, _ds),
    "CD": (3, _cd),
    "DE": (3, _de),
    "RAA": (2, _raa),
    CONTRAPOSITION: (1, _cp),
}


def _matches(rule: str, premises: Sequence[Formula], conclusion: Formula) -> bool:
    arity, matcher = _SHAPES[rule]
    if len(premises) != arity:
        return False
    return any(matcher(order, conclusion) for order in itertools.permutations(premises))


def matching_rules(
    premises: Sequence[Formula], conclusion: Formula, *, allow_contraposition: bool = False
) -> tuple[str, ...]:
    """The rules (of the seven, in :data:`~symbolkg.solvers.logicgraph.instances.RULES` order) whose shape the step has.

    Args:
        premises: the cited formulas, in any order.
        conclusion: the step's conclusion.
        allow_contraposition: also try :data:`CONTRAPOSITION`.

    Returns:
        Usually one rule or none; a degenerate step can match several.
    """
    ps = [_norm(p) for p in premises]
    c = _norm(conclusion)
    names = RULES + ((CONTRAPOSITION,) if allow_contraposition else ())
    return tuple(name for name in names if _matches(name, ps, c))


def canonical_rule(name: Any) -> str | None:
    """The rule name as the dataset writes it (``"mp"``, ``"Modus Ponens"`` -> ``"MP"``), or None if unknown."""
    if not isinstance(name, str):
        return None
    key = re.sub(r"[^a-z]", "", name.lower())
    return _RULE_ALIASES.get(key)


_RULE_ALIASES: dict[str, str] = {
    **{r.lower(): r for r in RULES},
    "modusponens": "MP",
    "modustollens": "MT",
    "hypotheticalsyllogism": "HS",
    "disjunctivesyllogism": "DS",
    "constructivedilemma": "CD",
    "disjunctionelimination": "DE",
    "proofbycases": "DE",
    "reductioadabsurdum": "RAA",
    "cp": CONTRAPOSITION,
    "contraposition": CONTRAPOSITION,
}


@dataclass(frozen=True)
class StepCheck:
    """The result of checking one step.

    Attributes:
        number: the step's 1-based position in its proof (not its ``step_number`` field).
        rule: the rule name as written.
        locally_valid: the cited formulas entail the conclusion (False when the step is malformed).
        rule_match: the step has the shape of the rule it names.
        matches: the rules whose shape the step does have (helps read a Rule Misapplication).
        labels: error labels (:data:`LABELS`, or :data:`MALFORMED`); empty for a correct step.
        notes: one human-readable reason per problem found.
        missing: for Insufficient Premise, a minimal set of additional items that makes the
            step valid: knowledge-base ids, or ``"step N"`` for an earlier step's conclusion.
        conclusion: the parsed conclusion (None when it did not parse).
    """

    number: int
    rule: str
    locally_valid: bool
    rule_match: bool
    matches: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    conclusion: Formula | None = None

    @property
    def ok(self) -> bool:
        return not self.labels

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "rule": self.rule,
            "locally_valid": self.locally_valid,
            "rule_match": self.rule_match,
            "matches": list(self.matches),
            "labels": list(self.labels),
            "notes": list(self.notes),
            "missing": list(self.missing),
            "conclusion": None if self.conclusion is None else to_prover9(self.conclusion),
        }


def check_step(
    rule: str, premises: Sequence[Formula], conclusion: Formula, *, allow_contraposition: bool = False
) -> StepCheck:
    """Shape and local validity of one step, without a knowledge base (no hallucination checks).

    Args:
        rule: the rule name as written (aliases such as ``"Modus Ponens"`` are accepted).
        premises: the cited formulas.
        conclusion: the claimed conclusion.
        allow_contraposition: accept :data:`CONTRAPOSITION` as an eighth form.

    Returns:
        A :class:`StepCheck` labelled Invalid Deduction (not entailed) or Rule Misapplication
        (entailed, wrong shape). Insufficient Premise needs the knowledge base: :func:`check_path`.
    """
    valid = _entails(tuple(premises), conclusion)
    matches = matching_rules(premises, conclusion, allow_contraposition=allow_contraposition)
    name = canonical_rule(rule)
    if name == CONTRAPOSITION and not allow_contraposition:
        name = None
    rule_match = name is not None and name in matches
    labels: list[str] = []
    notes: list[str] = []
    if not valid:
        labels.append(INVALID_DEDUCTION)
        notes.append("the conclusion does not follow from the cited premises")
    elif not rule_match:
        labels.append(RULE_MISAPPLICATION)
        notes.append(_misapplication_note(rule, name, matches))
    return StepCheck(0, rule, valid, rule_match, matches, tuple(labels), tuple(notes), (), conclusion)


def _misapplication_note(rule: str, name: str | None, matches: tuple[str, ...]) -> str:
    shape = f"it has the shape of {'/'.join(matches)}" if matches else "it has the shape of none of the seven rules"
    if name is None:
        return f"{rule!r} is not one of the rules {', '.join(RULES)}; {shape}"
    return f"the step does not have the shape of {name}; {shape}"


# ------------------------------------------------------------------ checking an answer path


@dataclass(frozen=True)
class PathCheck:
    """The result of checking one answer proof against an instance.

    Attributes:
        index: 0-based position of the proof in the answer's ``solutions``.
        steps: one check per step (empty when the proof is malformed as a whole).
        malformed: why the proof is not in the answer format, or None.
        reaches_goal: the last step's conclusion is the goal.
        valid: not malformed, at least one step, every step correct (no label; rule names
            count unless the check ran with ``strict_rules=False``), and it reaches the goal.
        sound: like ``valid`` but ignoring Rule Misapplication (every step locally valid and
            grounded): a logically correct derivation written with the wrong rule names.
        premise_ids: the knowledge-base ids the proof cites (ids that exist only).
        used_ids: the knowledge-base ids the last step depends on through ``Derived``
            citations (each resolved to the latest earlier step with that conclusion); steps
            whose conclusions are never used do not count. Equal to ``premise_ids`` for a
            proof without dead steps.
        entails_goal: the knowledge-base formulas of ``premise_ids`` entail the goal (the
            paper's global validity, independent of the steps).
        supports: the reference minimal supports contained in ``used_ids`` (valid paths only).
        minimal: ``used_ids`` is itself one of the reference minimal supports (valid paths only).
        length: number of steps as written.
    """

    index: int
    steps: tuple[StepCheck, ...]
    malformed: str | None
    reaches_goal: bool
    valid: bool
    sound: bool
    premise_ids: frozenset[str]
    used_ids: frozenset[str]
    entails_goal: bool
    supports: tuple[frozenset[str], ...] = ()
    minimal: bool = False
    length: int = 0

    def labels(self) -> tuple[str, ...]:
        """Every label of every step (with repeats) plus :data:`MALFORMED` for a malformed proof."""
        out = [MALFORMED] if self.malformed else []
        for step in self.steps:
            out.extend(step.labels)
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "valid": self.valid,
            "sound": self.sound,
            "malformed": self.malformed,
            "reaches_goal": self.reaches_goal,
            "length": self.length,
            "premise_ids": sorted(self.premise_ids),
            "used_ids": sorted(self.used_ids),
            "entails_goal": self.entails_goal,
            "supports": [sorted(s) for s in self.supports],
            "minimal": self.minimal,
            "steps": [s.to_json() for s in self.steps],
        }


@dataclass(frozen=True)
class _Cited:
    """One cited premise as parsed from an answer (``formula`` None: it did not parse)."""

    id: str
    formula: Formula | None
    note: str | None = None


def _kb_id(raw_id: Any, premises: Mapping[str, Premise]) -> str:
    """The id as written, mapped onto a knowledge-base id when only case/spacing differ."""
    text = str(raw_id).strip() if raw_id is not None else ""
    if text in premises or text == DERIVED:
        return text
    key = re.sub(r"\s+", "", text).lower()
    if key == DERIVED.lower():
        return DERIVED
    for pid in premises:
        if pid.lower() == key:
            return pid
    return text


def _formula_of(raw: Mapping[str, Any]) -> tuple[Formula | None, str | None]:
    """The cited / concluded formula of an answer object: ``prover9``, else ``formal``/``formula``."""
    for key in ("prover9", "formal", "formula"):
        text = raw.get(key)
        if isinstance(text, str) and text.strip():
            try:
                return _parse(text), None
            except FormulaSyntaxError as exc:
                return None, f"formula {text!r} does not parse ({exc})"
    return None, None


def _cited_premises(raw_step: Mapping[str, Any], kb: Mapping[str, Premise], notes: list[str]) -> list[_Cited]:
    """The cited premises of one step as written (a knowledge-base id without a formula takes the KB's)."""
    cited: list[_Cited] = []
    cited_raw = raw_step.get("premises_used")
    if not isinstance(cited_raw, list):
        notes.append("'premises_used' is missing or not a list")
        cited_raw = []
    for item in cited_raw:
        if isinstance(item, str):  # a bare id, the common shorthand (a bare formula is no id: hallucinated)
            item = {"id": item}
        if not isinstance(item, Mapping):
            cited.append(_Cited("", None, "a cited premise is not an object"))
            continue
        pid = _kb_id(item.get("id"), kb)
        formula, parse_note = _formula_of(item)
        if formula is None and parse_note is None and pid in kb:
            formula = kb[pid].formula
        if formula is None:
            cited.append(_Cited(pid, None, parse_note or f"the cited premise {pid!r} has no formula"))
        else:
            cited.append(_Cited(pid, formula))
    return cited


def _conclusion_of(raw_step: Mapping[str, Any], notes: list[str]) -> Formula | None:
    conclusion_text = raw_step.get("conclusion")
    if isinstance(conclusion_text, str) and conclusion_text.strip():
        try:
            return _parse(conclusion_text)
        except FormulaSyntaxError as exc:
            notes.append(f"the conclusion {conclusion_text!r} does not parse ({exc})")
            return None
    notes.append("the step has no conclusion")
    return None


def _hallucinations(
    cited: Sequence[_Cited],
    conclusion: Formula | None,
    instance: Instance,
    concluded: Sequence[tuple[Formula | None, bool]],
    premise_ids: set[str],
    notes: list[str],
) -> list[str]:
    """Step 1 of :func:`check_path`: the Fact Hallucination label (at most once); adds cited KB ids."""
    kb = instance.premises
    labels: list[str] = []
    for c in cited:
        if c.id == DERIVED:
            if c.formula is not None and not any(f is not None and f == _norm(c.formula) for f, _ in concluded):
                labels.append(FACT_HALLUCINATION)
                notes.append(f"Derived {to_prover9(c.formula)} is not the conclusion of an earlier step")
        elif c.id not in kb:
            labels.append(FACT_HALLUCINATION)
            notes.append(f"{c.id!r} is not in the knowledge base" if c.id else "a cited premise has no id")
        else:
            premise_ids.add(c.id)
            if c.formula is not None and not same(c.formula, kb[c.id].formula):
                labels.append(FACT_HALLUCINATION)
                notes.append(f"{c.id} is {to_prover9(kb[c.id].formula)}, not {to_prover9(c.formula)}")
    stray: set[str] = set()
    for f in [c.formula for c in cited] + [conclusion]:
        if f is not None:
            stray |= atoms(f) - instance.atoms()
    if stray:
        labels.append(FACT_HALLUCINATION)
        notes.append(f"atoms not in the instance: {', '.join(sorted(stray))}")
    return list(dict.fromkeys(labels))  # one Fact Hallucination label per step


def _judge(
    number: int,
    rule: str,
    cited: Sequence[_Cited],
    conclusion: Formula,
    kb: Mapping[str, Premise],
    concluded: Sequence[tuple[Formula | None, bool]],
    labels: list[str],
    notes: list[str],
    allow_contraposition: bool,
) -> StepCheck:
    """Steps 2 and 3 of :func:`check_path` for a well-formed step: local validity, then the rule's shape."""
    formulas = [c.formula for c in cited if c.formula is not None]
    base = check_step(rule, formulas, conclusion, allow_contraposition=allow_contraposition)
    missing: tuple[str, ...] = ()
    if not base.locally_valid:
        missing = _missing_premises(formulas, conclusion, kb, concluded)
        if missing:
            labels.append(INSUFFICIENT_PREMISE)
            notes.append("the conclusion follows only with " + ", ".join(missing) + " added")
        else:
            labels.append(INVALID_DEDUCTION)
            notes.append(
                "the conclusion does not follow from the cited premises, nor with the rest of the knowledge base"
            )
    else:
        labels.extend(base.labels)
        notes.extend(base.notes)
    return StepCheck(
        number,
        rule,
        base.locally_valid,
        base.rule_match,
        base.matches,
        tuple(labels),
        tuple(notes),
        missing,
        conclusion,
    )


@dataclass
class _PathState:
    """What checking the steps of one path accumulates."""

    checks: list[StepCheck] = field(default_factory=list)
    # per step: (normalised conclusion or None, sound?) for Derived lookups and Insufficient Premise
    concluded: list[tuple[Formula | None, bool]] = field(default_factory=list)
    cited_ids_per_step: list[list[tuple[str, Formula | None]]] = field(default_factory=list)
    premise_ids: set[str] = field(default_factory=set)


def _check_one_step(
    instance: Instance, raw_step: Any, number: int, state: _PathState, allow_contraposition: bool
) -> None:
    if not isinstance(raw_step, Mapping):
        state.checks.append(StepCheck(number, "", False, False, (), (MALFORMED,), ("the step is not an object",)))
        state.concluded.append((None, False))
        state.cited_ids_per_step.append([])
        return
    rule = str(raw_step.get("rule_applied", raw_step.get("rule", "")) or "")
    notes: list[str] = []
    conclusion = _conclusion_of(raw_step, notes)
    cited = _cited_premises(raw_step, instance.premises, notes)
    malformed = (
        conclusion is None
        or any(c.formula is None for c in cited)
        or not isinstance(raw_step.get("premises_used"), list)
    )
    notes.extend(c.note for c in cited if c.note)
    labels = _hallucinations(cited, conclusion, instance, state.concluded, state.premise_ids, notes)
    state.cited_ids_per_step.append([(c.id, None if c.formula is None else _norm(c.formula)) for c in cited])
    if malformed:
        state.checks.append(
            StepCheck(number, rule, False, False, (), tuple(labels) + (MALFORMED,), tuple(notes), (), conclusion)
        )
        state.concluded.append((None if conclusion is None else _norm(conclusion), False))
        return
    assert conclusion is not None
    check = _judge(
        number, rule, cited, conclusion, instance.premises, state.concluded, labels, notes, allow_contraposition
    )
    state.checks.append(check)
    sound = check.locally_valid and all(lab == RULE_MISAPPLICATION for lab in check.labels)
    state.concluded.append((_norm(conclusion), sound))


def check_path(
    instance: Instance,
    raw: Any,
    *,
    index: int = 0,
    reference_supports: Sequence[frozenset[str]] | None = None,
    strict_rules: bool = True,
    allow_contraposition: bool = False,
) -> PathCheck:
    """Check one answer proof (untrusted JSON in the dataset's proof format) step by step.

    A step is checked in this order, and can carry a comprehension label and an execution
    label at once (the paper's two axes are independent):

    1. **Fact Hallucination** (comprehension): a cited id that is neither a knowledge-base
       id nor ``"Derived"``; a cited formula that differs (beyond double negation) from the
       knowledge-base item with that id; a ``Derived`` formula that is not the conclusion of
       an earlier step of this proof; an atom in a cited formula or the conclusion that the
       instance does not have. The step is then checked with the formulas *as written*.
    2. Local validity, ``cited ⊨ conclusion``. If it fails: **Insufficient Premise** when
       ``cited ∪ KB`` is satisfiable and entails the conclusion (the missing items are
       reported: a minimal set of knowledge-base items and sound earlier conclusions),
       else **Invalid Deduction**.
    3. If locally valid and the step does not have the named rule's shape (or the name is
       not one of the seven): **Rule Misapplication**.

    A knowledge-base id cited without a formula takes the knowledge-base formula (lenient
    on format, strict on logic); a ``Derived`` premise without a formula, a conclusion that
    is missing or does not parse, or a step that is not an object make the step Malformed.

    Args:
        instance: the instance the answer is for.
        raw: one element of the answer's ``solutions``: ``{"steps": [...]}`` (a bare list of
            steps is accepted too).
        index: the proof's position in the answer (reported back).
        reference_supports: the minimal supports to match against; default the instance's
            reference supports.
        strict_rules: a Rule Misapplication makes the path invalid (default). False counts
            sound paths as valid.
        allow_contraposition: accept :data:`CONTRAPOSITION` steps.

    Returns:
        A :class:`PathCheck`; never raises on malformed input.
    """
    steps_raw = raw.get("steps") if isinstance(raw, Mapping) else raw
    if not isinstance(steps_raw, list) or not steps_raw:
        why = "no steps" if isinstance(steps_raw, list) else "expected an object with a 'steps' list"
        return PathCheck(index, (), why, False, False, False, frozenset(), frozenset(), False)
    state = _PathState()
    for number, raw_step in enumerate(steps_raw, 1):
        _check_one_step(instance, raw_step, number, state, allow_contraposition)
    checks, concluded = state.checks, state.concluded
    last = concluded[-1][0]
    reaches_goal = last is not None and last == _norm(instance.goal)
    allowed = set() if strict_rules else {RULE_MISAPPLICATION}
    valid = all(set(c.labels) <= allowed for c in checks) and reaches_goal
    sound = all(set(c.labels) <= {RULE_MISAPPLICATION} for c in checks) and reaches_goal
    used = _used_ids(state.cited_ids_per_step, concluded) if sound else frozenset(state.premise_ids)
    kb = instance.premises
    entails_goal = _entails(tuple(kb[i].formula for i in sorted(state.premise_ids)), instance.goal)
    refs = instance.reference_supports() if reference_supports is None else list(reference_supports)
    supports = tuple(s for s in refs if s <= used) if valid else ()
    minimal = valid and used in refs
    return PathCheck(
        index,
        tuple(checks),
        None,
        reaches_goal,
        valid,
        sound,
        frozenset(state.premise_ids),
        used,
        entails_goal,
        supports,
        minimal,
        len(checks),
    )


def _missing_premises(
    cited: Sequence[Formula],
    conclusion: Formula,
    kb: Mapping[str, Premise],
    concluded: Sequence[tuple[Formula | None, bool]],
) -> tuple[str, ...]:
    """A minimal set of extra items that makes ``cited ⊨ conclusion``, or () when none does.

    The pool is the knowledge base plus the conclusions of earlier *sound* steps (an unsound
    earlier conclusion could contradict the knowledge base, and everything follows from a
    contradiction). If ``cited ∪ KB`` is unsatisfiable the cited formulas contradict the
    knowledge base: that is an Invalid Deduction, not a missing premise.
    Greedy deletion drops knowledge-base items first, so an earlier conclusion that suffices
    is what gets reported ("step 2") rather than the premises it came from.
    """
    pool: list[tuple[str, Formula]] = [(pid, p.formula) for pid, p in kb.items()]
    pool += [(f"step {k}", f) for k, (f, ok) in enumerate(concluded, 1) if ok and f is not None]
    everything = [f for _, f in pool]
    if satisfiable([*cited, *everything]) is None or not entails([*cited, *everything], conclusion):
        return ()
    keep = list(pool)
    for item in list(pool):
        trial = [x for x in keep if x is not item]
        if entails([*cited, *(f for _, f in trial)], conclusion):
            keep = trial
    return tuple(name for name, _ in keep)


def _used_ids(
    cited: Sequence[Sequence[tuple[str, Formula | None]]], concluded: Sequence[tuple[Formula | None, bool]]
) -> frozenset[str]:
    """Knowledge-base ids the last step depends on.

    ``Derived`` resolves to the latest earlier step with that conclusion.
    """
    used: set[str] = set()
    todo = [len(cited) - 1]
    seen: set[int] = set()
    while todo:
        k = todo.pop()
        if k in seen:
            continue
        seen.add(k)
        for pid, formula in cited[k]:
            if pid != DERIVED:
                used.add(pid)
                continue
            for j in range(k - 1, -1, -1):
                if concluded[j][0] == formula:
                    todo.append(j)
                    break
    return frozenset(used)
