"""The formalization checks of ``logiclm-fol``: query polarity (a literal conclusion), one name, unused
symbols, disconnected premises, answer format.

Each check is defined in :mod:`symbolkg.solvers.checks`, which runs :func:`check`; it only parses
the program (:mod:`symbolkg.solvers.fol.syntax`), never runs it.
"""

from __future__ import annotations

import re
from typing import Any

from symbolkg.solvers.findings import Finding, ProblemText
from symbolkg.solvers.fol import syntax as fol
from symbolkg.solvers.shared_checks import (
    components,
    one_name,
    parses,
    polarity_expectation,
    question_sentence,
    replace_line,
    verdict_options,
)


def _fol_walk(formula: Any):  # type: ignore[no-untyped-def]
    yield formula
    if isinstance(formula, fol.Not):
        yield from _fol_walk(formula.body)
    elif isinstance(formula, fol.Binary):
        yield from _fol_walk(formula.left)
        yield from _fol_walk(formula.right)
    elif isinstance(formula, fol.Quantified):
        yield from _fol_walk(formula.body)


def _fol_constants(term: Any) -> set[str]:
    if isinstance(term, fol.Const):
        return {term.name}
    if isinstance(term, fol.Func):
        return {c for a in term.args for c in _fol_constants(a)}
    return set()


def _fol_symbols(formula: Any) -> tuple[dict[str, set[int]], set[str]]:
    preds: dict[str, set[int]] = {}
    consts: set[str] = set()
    for f in _fol_walk(formula):
        if isinstance(f, fol.Atom):
            preds.setdefault(f.predicate, set()).add(len(f.args))
            for t in f.args:
                consts |= _fol_constants(t)
        elif isinstance(f, fol.Equals):
            consts |= _fol_constants(f.left) | _fol_constants(f.right)
    return preds, consts


def _fol_flip(literal: str) -> str:
    """``¬P(a)`` -> ``P(a)`` and ``P(a)`` -> ``¬P(a)``, as written (the caller re-parses the result)."""
    literal = literal.strip()
    if literal[:1] in ("¬", "~", "!"):
        inner = literal[1:].strip()
        if inner.startswith("(") and inner.endswith(")"):
            inner = inner[1:-1].strip()
        return inner
    return f"¬{literal}" if re.fullmatch(r"[\w]+\s*\([^()]*\)", literal) else f"¬({literal})"


def check(text: str, problem: ProblemText) -> list[Finding]:
    program = fol.parse(text)
    concl = program.conclusion
    per_premise = [(s, *_fol_symbols(s.formula)) for s in program.premises]
    c_preds, c_consts = _fol_symbols(concl.formula)
    arities: dict[str, set[int]] = {}
    constants: set[str] = set(c_consts)
    for _, preds, consts in per_premise:
        for k, v in preds.items():
            arities.setdefault(k, set()).update(v)
        constants |= consts
    for k, v in c_preds.items():
        arities.setdefault(k, set()).update(v)
    for d in program.predicates:
        arities.setdefault(d.name, set()).add(d.arity)
    first_use: dict[str, int] = {}
    for statement, preds, _ in per_premise:
        for name in preds:
            first_use.setdefault(name, statement.line)
    return (
        verdict_options(problem)
        + _fol_polarity(text, concl, set(arities), constants, problem)
        + one_name(
            text,
            arities,
            program.predicates,
            set(c_preds),
            first_use,
            lambda names: min((s.line for s, preds, _ in per_premise if set(preds) & set(names)), default=None),
            fol.parse,
            "premises written with one say nothing about the other",
        )
        + _fol_unused(program, per_premise, c_preds, c_consts)
    )


def _fol_polarity(
    text: str, concl: Any, predicates: set[str], constants: set[str], problem: ProblemText
) -> list[Finding]:
    """``query_polarity`` for logiclm-fol: a literal conclusion about constants."""
    formula, negated = concl.formula, False
    if isinstance(formula, fol.Not):
        formula, negated = formula.body, True
    sentence = question_sentence(problem.question)
    if sentence is None or not isinstance(formula, fol.Atom) or not all(isinstance(t, fol.Const) for t in formula.args):
        return []
    names = [t.name for t in formula.args]  # type: ignore[union-attr]
    expected = polarity_expectation(formula.predicate, names, predicates, constants, sentence)
    if expected is None or expected != negated:
        return []
    fixed = _fol_flip(concl.text)
    correction = replace_line(text, concl.line, fixed)
    check = parses(fol.parse, correction)
    ok = check is not None and check.conclusion.formula == (formula if negated else fol.Not(formula))
    return [
        Finding(
            "query_polarity",
            "error",
            f"the conclusion {concl.text!r} states the opposite of the question's statement {sentence.text!r} "
            f"({'negative' if sentence.negated else 'positive'}); the conclusion must be the statement itself, "
            f"{fixed}",
            concl.line,
            correction if ok else None,
        )
    ]


def _fol_unused(program: Any, per_premise: list, c_preds: dict[str, set[int]], c_consts: set[str]) -> list[Finding]:
    """``unused_symbols`` and ``disconnected_premises`` for logiclm-fol."""
    concl = program.conclusion
    findings = []
    premise_preds = {p for _, preds, _ in per_premise for p in preds}
    premise_consts = {c for _, _, consts in per_premise for c in consts}
    for p in sorted(set(c_preds) - premise_preds):
        findings.append(
            Finding(
                "unused_symbols",
                "warning",
                f"the conclusion's predicate {p} appears in no premise, so the conclusion can only be Uncertain; check "
                "its name against the premises",
                concl.line,
            )
        )
    for c in sorted(c_consts - premise_consts):
        findings.append(
            Finding(
                "unused_symbols",
                "warning",
                f"the conclusion's constant {c} appears in no premise; check its spelling against the premises",
                concl.line,
            )
        )
    used = premise_preds | set(c_preds)
    for d in program.predicates:
        if d.name not in used:
            findings.append(
                Finding("unused_symbols", "info", f"the declared predicate {d.name} is used nowhere", d.line)
            )
    premises = [(s.line, {f"p:{p}" for p in preds} | {f"c:{c}" for c in consts}) for s, preds, consts in per_premise]
    start = {f"p:{p}" for p in c_preds} | {f"c:{c}" for c in c_consts}
    for line in components(premises, start):
        findings.append(
            Finding(
                "disconnected_premises",
                "info",
                f"the premise on line {line} shares no predicate or constant with the conclusion, even through other "
                "premises, so it cannot affect the answer",
                line,
            )
        )
    return findings
