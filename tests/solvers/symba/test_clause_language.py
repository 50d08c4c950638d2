"""SymBa's whole clause language: quoted sentences, denials, body disjunction, #count, pooling, `is`,
comparisons between any values, numeric strings; their proofs, certificates and a constructed set.

The constructed set (tests/fixtures/symba/fair_trial) is in SymBa's record format (string ids,
statements without a description, two named world rule sets, a numeric answer) and uses every
construct; the solver given every statement up front answers each record as labelled, and each
answer's certificate is verified by the bottom-up checker.
"""

from __future__ import annotations

import copy
import json
import textwrap

import pytest

from symbolkg.solvers import registry
from symbolkg.solvers.certificates import check
from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError, SolveRequest, Status
from symbolkg.solvers.symba.engine import Budget, head_unifies, prove
from symbolkg.solvers.symba.syntax import parse, parse_clause, parse_goal
from symbolkg.solvers.symba.terms_syntax import Str, format_clause, format_program
from tests.conftest import FIXTURES

FAIR_TRIAL = FIXTURES / "symba" / "fair_trial"
LIMITS = Limits(timeout_s=10)


def solve(text: str):
    """The registry's outcome for ``text`` and the certificate checker's verdict on its answer."""
    text = textwrap.dedent(text)
    out = registry.run(SolveRequest("p", "symba", text, LIMITS))
    verdict = (
        check(copy.deepcopy(out.certificate), language="symba", program=text, answer=out.answer)
        if out.executed
        else None
    )
    return out, verdict


def clauses(text: str) -> list[str]:
    return [format_clause(c) for c in parse_clause(text)]


# --------------------------------------------------------------------------- reading


def test_quoted_sentences_are_terms_and_numeric_strings_are_numbers():
    (c,) = parse_clause('checkIf("The applicant was informed promptly.", Ans).')
    assert c.head.args[0] == Str("The applicant was informed promptly.")
    assert parse_clause('d("18", "-2.50", "1e3", "2010-03-18", "").')[0].head.args == (
        18,
        -2.5,
        Str("1e3"),
        Str("2010-03-18"),
        Str(""),
    )
    goal = parse_goal('checkIf("The applicant was informed promptly.", A)')
    assert head_unifies(c, goal) and not head_unifies(c, parse_goal('checkIf("Another sentence.", A)'))


def test_body_disjunction_and_count_read_as_one_clause_per_alternative():
    assert clauses("h :- a, {b; c, d}, e.") == ["h :- a, b, e.", "h :- a, c, d, e."]
    assert clauses("h :- {p(X) : q(X); r}.") == ["h :- p(X), q(X).", "h :- r."]
    for text in (
        "h :- #count{X : p(X); Y : q(Y), s(Y)} >= 1.",
        "h :- 1 <= #count{X : p(X); Y : q(Y), s(Y)}.",
        "h :- #count{X : p(X); Y : q(Y), s(Y)} > 0.",
        "h :- #count{X : p(X); Y : q(Y), s(Y)}.",
    ):
        assert clauses(text) == ["h :- p(X).", "h :- q(Y), s(Y)."], text
    assert clauses("h :- #count{p(1); p(2)} != 0.") == ["h :- p(1).", "h :- p(2)."]
    # with pooling inside an alternative: every combination
    assert clauses("h(X) :- {p(X, (a;b)); q(X)}.") == ["h(X) :- p(X, a).", "h(X) :- p(X, b).", "h(X) :- q(X)."]


def test_denials_are_read_and_printed_apart_from_rules():
    p = parse("not eats(bald_eagle, mouse).\nnot p(X) :- q(X), X != a.\np(b).\n?- p(b).")
    assert [format_clause(c) for c in p.clauses] == ["p(b)."]
    assert [format_clause(d) for d in p.denials] == ["not eats(bald_eagle, mouse).", "not p(X) :- q(X), X != a."]
    assert [d.source_line for d in p.denials] == [1, 2]
    again = parse(format_program(p))
    assert [format_clause(d) for d in again.denials] == [format_clause(d) for d in p.denials]
    assert clauses("not(p(a)).") == ["not p(a)."] and clauses("\\+ p(a).") == ["not p(a)."]


@pytest.mark.parametrize(
    "text, words",
    [
        ("h :- #count{X : p(X)} >= 2.", "guard '>= 2'"),
        ("h :- #count{X : p(X)} < 1.", "guard '< 1'"),
        ("h :- 2 <= #count{X : p(X)}.", "guard '>= 2'"),
        ("h :- #sum{X : p(X)} >= 1.", "#count"),
        ("{a; b} :- c.", "choice rules"),
        ("h :- not {a; b}.", "applies to one atom"),
        ("h :- {a; {b; c}}.", "found '{'"),
        ("h :- {}.", "empty element"),
    ],
)
def test_what_the_language_refuses_it_refuses_at_its_line(text, words):
    with pytest.raises(ProgramError) as err:
        parse("p.\n" + text + "\n?- p.")
    assert err.value.line == 2 and words in err.value.message


# --------------------------------------------------------------------------- meaning and certificates


@pytest.mark.parametrize(
    "text, answer",
    [
        # a quoted-sentence goal answered by a statement, the answer compared with `!=`
        (
            'ok :- checkIf("The hearing was public.", Ans), Ans != seriously_violated.\n'
            'checkIf("The hearing was public.", complied).\n?- ok.',
            "True",
        ),
        (
            'ok :- checkIf("The hearing was public.", Ans), Ans != seriously_violated.\n'
            'checkIf("The hearing was public.", seriously_violated).\n?- ok.',
            "False",
        ),
        # disjunction: either alternative proves the head
        ("h :- {a; b, c}.\nc.\nb.\n?- h.", "True"),
        ("h :- {a; b, c}.\nb.\n?- h.", "False"),
        # #count >= 1: some element's condition holds
        ("h :- #count{X : p(X), X > 2} >= 1.\np(1). p(3).\n?- h.", "True"),
        ("h :- #count{X : p(X), X > 5} >= 1.\np(1). p(3).\n?- h.", "False"),
        # `is` arithmetic, numeric strings by value, comparisons between any values
        ('half(Y) :- n(X), Y is X / 2.\nn("9").\n?- half(4.5).', "True"),
        ('early :- on(A), on(B), A < B, A = "2010-03-01".\non("2010-03-01"). on("2010-03-18").\n?- early.', "True"),
        (
            "first(X) :- name(X), not later(X).\nlater(X) :- name(X), name(Y), Y < X.\n"
            'name(bob). name(ann). name("zed").\n'
            "?- first(ann).",
            "True",
        ),
        # denials: no effect on a consistent program, no query on an inconsistent one
        ("not p(b).\np(a).\n?- p(a).", "True"),
        ("not p(a).\np(a).\n?- p(a).", "False"),
        ("not p(a).\np(a).\n?- not p(a).", "False"),
        ("not p(X) :- q(X).\np(a). q(b).\n?- p(a).", "True"),
        ("not p(X) :- q(X).\np(a). q(a).\n?- p(a).", "False"),
        ("not p(X) :- q(X), not r(X).\np(a). q(a). r(a).\n?- p(a).", "True"),
        ("not -p(a).\n-p(a) :- q.\nq.\nh.\n?- h.", "False"),
    ],
)
def test_the_new_constructs_answer_and_their_certificates_verify(text, answer):
    out, verdict = solve(text)
    assert out.answer == answer, (text, out)
    assert verdict.status == "verified", (text, verdict)


def test_an_inconsistent_program_names_its_denial_and_proves_nothing():
    text = "p(a) :- q(a).\nq(a).\nnot p(a) :- q(a).\n?- p(a).\n"
    out, verdict = solve(text)
    proof = json.loads(out.proof)
    assert out.status == Status.DISPROVED and proof["kind"] == "inconsistent" and not proof["proved"]
    assert proof["violated"] == {"line": 3, "statement": "not p(a) :- q(a)."}
    assert out.certificate["closure"] == {"method": "inconsistent", "searched": "p(a)", "denial": proof["violated"]}
    assert verdict.status == "verified"
    r = prove(parse(text))
    assert r.tree is None and r.answers == [] and any("inconsistent" in msg and "line 3" in msg for msg in r.issues)
    # subgoals met only by the consistency check are not asked about (SymBa checks without the LLM)
    r = prove(parse("not blocked(X) :- gate(X).\nopen :- door.\n?- open."))
    assert r.unproved == ["open", "door"] and r.missing == ["door"] and r.kind == "complete"


def test_tampered_certificates_of_the_new_constructs_fail():
    inconsistent = "p(a).\nnot p(a).\nnot p(b).\n?- p(a).\n"
    out, _ = solve(inconsistent)
    for edit, words in [
        (lambda c: c["closure"]["denial"].update(line=3, statement="not p(b)."), "not violated"),
        (lambda c: c["closure"]["denial"].update(statement="not p(c)."), "cites the denial"),
        (lambda c: c["closure"].update(method="negation_as_failure"), "derivable"),
    ]:
        cert = copy.deepcopy(out.certificate)
        edit(cert)
        verdict = check(cert, language="symba", program=inconsistent, answer="False")
        assert verdict.status == "failed" and words in verdict.reason, (words, verdict)
    # a True answer whose program violates a denial is refused, though its tree is sound
    consistent = "p(a).\nq(a).\nnot p(a) :- r(a).\n?- p(a).\n"
    out, verdict = solve(consistent)
    assert out.answer == "True" and verdict.status == "verified"
    violated = consistent.replace("q(a).", "r(a).")
    verdict = check(copy.deepcopy(out.certificate), language="symba", program=violated, answer="True")
    assert verdict.status == "failed" and "inconsistent" in verdict.reason
    # a disjunction alternative that is not the one cited
    text = "h :- {a; b}.\nb.\n?- h.\n"
    out, _ = solve(text)
    cert = copy.deepcopy(out.certificate)
    cert["tree"]["clause"] = "h :- a."
    assert check(cert, language="symba", program=text, answer="True").status == "failed"


def test_consistency_undecided_within_the_budget_is_no_answer():
    text = "n(0).\nn(Y) :- n(X), Y = X + 1.\nok.\nnot ok :- n(X), X > 10 ** 6.\n?- ok.\n"
    r = prove(parse(text), Budget(max_steps=5_000))
    assert not r.proved and r.kind == "steps"
    out = registry.run(SolveRequest("p", "symba", text, Limits(timeout_s=2)))
    assert out.status == Status.TIMEOUT and out.answer is None


def test_a_query_with_undefined_arithmetic_is_a_syntax_error_at_its_line():
    out = registry.run(SolveRequest("p", "symba", "p(1).\n?- p(1 / 0).", LIMITS))
    assert out.status == Status.PARSE_ERROR and out.error_line == 2 and "undefined" in out.error_message
    assert out.error_kind == ErrorKind.SYNTAX.value


# --------------------------------------------------------------------------- the constructed set


def _records() -> tuple[list[dict], dict[str, list[str]]]:
    world = {
        w["name"]: [s["statement"] for s in w["statements"]]
        for w in json.loads((FAIR_TRIAL / "world_data.json").read_text())
    }
    return json.loads((FAIR_TRIAL / "test_data.json").read_text()), world


def test_the_constructed_set_uses_every_construct():
    records, world = _records()
    text = "\n".join(
        [s["statement"] for r in records for s in r["program"]] + [x for rules in world.values() for x in rules]
    )
    for construct in (
        'checkIf("',
        "!= seriously_violated",
        "{",
        "#count{",
        "(regional_court;court_of_appeal)",
        " is ",
        "<=",
        '"30"',
        "not checkIf(",
    ):
        assert construct in text, construct
    assert all(isinstance(r["id"], str) for r in records) and len(world) == 2
    assert any("description" not in s for r in records for s in r["program"])
    assert any(r["goal"].startswith("not ") for r in records) and any("goal_solved" in r for r in records)


def test_the_constructed_set_is_answered_as_labelled_and_every_answer_verifies():
    records, world = _records()
    kinds = set()
    for r in records:
        lines = [s["statement"] for s in r["program"]] + [x for name in r["world_model"] for x in world[name]]
        out, verdict = solve("\n".join(lines + [f"?- {r['goal']}."]) + "\n")
        assert out.answer == ("True" if r["label"] else "False"), (r["id"], out)
        assert verdict.status == "verified", (r["id"], verdict)
        proof = json.loads(out.proof)
        kinds.add(proof["kind"])
        if "goal_solved" in r:
            assert parse_goal(r["goal_solved"]).atom.args[0] == next(iter(proof["answers"][0].values()))
    assert kinds == {"complete", "inconsistent"}
