"""Fuzz: random clause texts using SymBa's whole language each end as an Outcome with a kind.

Programs are drawn from a small grammar of the constructs (quoted sentences, numeric strings,
denials, body disjunctions in braces, #count, pooling, `is`, comparisons between any values,
negation, classical negation), then some are mutated (characters dropped, pieces spliced in).
Every text goes through the registry in-process: never an exception, always an outcome with a
status (and an error kind when it is not an answer); every answer's certificate is verified or
unverifiable, never failed; and the parser raises nothing but ProgramError.
"""

from __future__ import annotations

import copy
import random

from symbolkg.solvers import registry
from symbolkg.solvers.certificates import check
from symbolkg.solvers.outcomes import Limits, ProgramError, SolveRequest, Status
from symbolkg.solvers.symba.syntax import parse

CONSTANTS = ["a", "b", "bob", '"A sentence: with punctuation."', '"7"', '"2010-03-18"', "3", "2.5", "-1"]
PREDICATES = [("p", 1), ("q", 1), ("r", 2), ("checkIf", 2), ("-p", 1)]
VARIABLES = ["X", "Y", "_"]
SPLICES = [
    "{",
    "}",
    ";",
    "#count{",
    ":",
    "not ",
    "(a;b)",
    " is ",
    '"',
    "\\",
    ":-",
    ".",
    ">= 2",
    "1 <=",
    "X / 0",
    "10 ** 400",
    "\n",
    "not not",
    "?- p(X).",
    "%",
]


def _term(rng: random.Random, variables: bool = True) -> str:
    pool = CONSTANTS + (VARIABLES if variables else [])
    if rng.random() < 0.1:
        return f"({rng.choice(CONSTANTS)};{rng.choice(CONSTANTS)})"
    return rng.choice(pool)


def _atom(rng: random.Random, variables: bool = True) -> str:
    name, arity = rng.choice(PREDICATES)
    return f"{name}({', '.join(_term(rng, variables) for _ in range(arity))})"


def _literal(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.5:
        return _atom(rng)
    if roll < 0.65:
        return "not " + _atom(rng)
    if roll < 0.8:
        op = rng.choice(["=", "!=", "<", "<=", ">", ">=", "is"])
        return f"{rng.choice(['X', 'Y'])} {op} {rng.choice(['X + 1', 'Y * 2', *CONSTANTS])}"
    if roll < 0.9:
        return (
            "{"
            + "; ".join(", ".join(_atom(rng) for _ in range(rng.randint(1, 2))) for _ in range(rng.randint(1, 3)))
            + "}"
        )
    return "#count{X : " + _atom(rng) + "; Y : " + _atom(rng) + "} >= 1"


def _statement(rng: random.Random) -> str:
    head = _atom(rng, variables=rng.random() < 0.5)
    if rng.random() < 0.15:
        head = "not " + head
    if rng.random() < 0.4:
        return head + "."
    return f"{head} :- {', '.join(_literal(rng) for _ in range(rng.randint(1, 3)))}."


def _program(rng: random.Random) -> str:
    lines = [_statement(rng) for _ in range(rng.randint(1, 8))]
    lines.append(f"?- {'not ' if rng.random() < 0.2 else ''}{_atom(rng)}.")
    text = "\n".join(lines)
    for _ in range(rng.choice([0, 0, 0, 1, 2])):
        i = rng.randrange(len(text) + 1)
        text = text[:i] + (rng.choice(SPLICES) if rng.random() < 0.7 else "") + text[i + rng.randrange(0, 3) :]
    return text


def test_random_clause_texts_of_the_whole_language_each_end_as_an_outcome_with_a_kind():
    rng = random.Random(27)
    statuses: dict[str, int] = {}
    kinds: set[str] = set()
    for i in range(400):
        text = _program(rng)
        try:
            parse(text)
        except ProgramError as exc:
            assert exc.message and (exc.line is None or exc.line >= 1), text
        out = registry.run(SolveRequest(f"f{i}", "symba", text, Limits(timeout_s=2)))
        assert isinstance(out.status, Status), text
        statuses[out.status.value] = statuses.get(out.status.value, 0) + 1
        assert out.error_kind != "internal", (text, out.error_message)
        if out.answer is None:
            assert out.error_kind, (text, out)
            kinds.add(out.error_kind)
            continue
        assert out.answer in ("True", "False") and out.certificate is not None, text
        verdict = check(copy.deepcopy(out.certificate), language="symba", program=text, answer=out.answer)
        assert verdict.status in ("verified", "unverifiable"), (text, verdict)
    # the grammar reaches every kind of ending: answers both ways, refusals and runtime errors
    assert statuses.get("proved", 0) > 20 and statuses.get("disproved", 0) > 20, statuses
    assert statuses.get("parse_error", 0) > 20, statuses
    assert {"syntax", "unsupported"} <= kinds, kinds
