"""The formalization checks of ``logiclm-lp`` (and ``logiclm-lp-swipl``, the same language): query
polarity, one name, free variables, unused symbols, disconnected premises, answer format.

Each check is defined in :mod:`symbolkg.solvers.checks`, which runs :func:`check`; it only parses
the program (:mod:`symbolkg.solvers.lp.syntax`), never runs it.
"""

from __future__ import annotations

from typing import Any

from symbolkg.solvers.findings import Finding, ProblemText
from symbolkg.solvers.lp import syntax as lp
from symbolkg.solvers.shared_checks import (
    components,
    one_name,
    parses,
    polarity_expectation,
    question_sentence,
    replace_line,
    verdict_options,
)


def check(text: str, problem: ProblemText) -> list[Finding]:
    program = lp.parse(text)
    atoms = list(program.facts) + [a for r in program.rules for a in (*r.body, *r.head)]
    arities: dict[str, set[int]] = {}
    for a in (*atoms, program.query):
        arities.setdefault(a.predicate, set()).add(len(a.args))
    for d in program.predicates:
        arities.setdefault(d.name, set()).add(d.arity)
    q = program.query
    first_use: dict[str, int] = {}
    for a in sorted((*atoms, q), key=lambda a: a.line):
        first_use.setdefault(a.predicate, a.line)
    return (
        verdict_options(problem)
        + _lp_polarity(text, program, set(arities), problem)
        + one_name(
            text,
            arities,
            program.predicates,
            {q.predicate},
            first_use,
            lambda names: min((a.line for a in atoms if a.predicate in names), default=None),
            lp.parse,
            "rules written with one never apply to facts written with another",
        )
        + _lp_free_variables(program)
        + _lp_unused(program, atoms)
        + _lp_disconnected(program)
    )


def _lp_polarity(text: str, program: Any, predicates: set[str], problem: ProblemText) -> list[Finding]:
    """``query_polarity`` for logiclm-lp."""
    q = program.query
    sentence = question_sentence(problem.question)
    if sentence is None:
        return []
    constants = [str(c) for c in q.args]
    expected = polarity_expectation(q.predicate, constants, predicates, set(program.constants()), sentence)
    if expected is None or expected == q.value:
        return []
    fixed = f"{q.predicate}({', '.join((*constants, str(expected)))})"
    correction = replace_line(text, q.line, fixed)
    check = parses(lp.parse, correction)
    ok = check is not None and check.query.predicate == q.predicate and check.query.value == expected
    return [
        Finding(
            "query_polarity",
            "error",
            f"the query {q} states the opposite of the question's statement {sentence.text!r}"
            f" ({'negative' if sentence.negated else 'positive'}); the query must be the statement itself, "
            f"{fixed}, so that True means the statement is true",
            q.line,
            correction if ok else None,
        )
    ]


def _lp_free_variables(program: Any) -> list[Finding]:
    """``free_variables`` for logiclm-lp."""
    findings = []
    for r in program.rules:
        bound = {v for a in r.body for v in a.variables()}
        free = sorted({v.name for a in r.head for v in a.variables()} - {v.name for v in bound})
        if free and r.body:
            findings.append(
                Finding(
                    "free_variables",
                    "warning",
                    f"the rule {r.text!r} concludes about {', '.join('$' + v for v in free)}, which its premises do "
                    "not mention, so it holds for every constant of the program; bind the variable in a premise",
                    r.line,
                )
            )
        elif free:
            findings.append(
                Finding(
                    "free_variables",
                    "info",
                    f"the fact {r.text!r} has a variable, so it holds for every constant of the program",
                    r.line,
                )
            )
    return findings


def _lp_unused(program: Any, atoms: list) -> list[Finding]:
    """``unused_symbols`` for logiclm-lp."""
    q = program.query
    findings = []
    concluded = {a.predicate for a in program.facts} | {h.predicate for r in program.rules for h in r.head}
    if q.predicate not in concluded:
        findings.append(
            Finding(
                "unused_symbols",
                "warning",
                f"no fact or rule concludes {q.predicate}(...), so the query {q} can only be Unknown; check the "
                "predicate's name against the premises",
                q.line,
            )
        )
    premise_constants = {c for a in atoms for c in a.args if isinstance(c, str)}
    for c in q.args:
        if isinstance(c, str) and c not in premise_constants:
            findings.append(
                Finding(
                    "unused_symbols",
                    "warning",
                    f"the query's constant {c} appears in no fact or rule; check its spelling against the premises",
                    q.line,
                )
            )
    used = {a.predicate for a in (*atoms, q)}
    for d in program.predicates:
        if d.name not in used:
            findings.append(
                Finding("unused_symbols", "info", f"the declared predicate {d.name} is used nowhere", d.line)
            )
    return findings


def _lp_disconnected(program: Any) -> list[Finding]:
    """``disconnected_premises`` for logiclm-lp."""

    def symbols(items: tuple) -> set[str]:
        return {f"p:{a.predicate}" for a in items} | {f"c:{c}" for a in items for c in a.args if isinstance(c, str)}

    premises = [(a.line, symbols((a,))) for a in program.facts] + [
        (r.line, symbols((*r.body, *r.head))) for r in program.rules
    ]
    return [
        Finding(
            "disconnected_premises",
            "info",
            f"the premise on line {line} shares no predicate or constant with the query, even through other "
            "premises, so it cannot affect the answer",
            line,
        )
        for line in components(premises, symbols((program.query,)))
    ]
