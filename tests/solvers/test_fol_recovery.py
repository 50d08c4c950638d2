"""Readings the FOL parser adds for recorded programs (see ``solvers/fol.py``'s docstring).

Each rule has one reading fixed by the notation: a free variable in a premise is
universally quantified over that premise (Prover9's convention), ``a ∈ S`` with S a
unary predicate is ``S(a)`` and any other ``a ∈ b`` is a binary relation. What has
more than one reading (a free variable in the conclusion) is still refused with the
line and the variable named.
"""

from __future__ import annotations

import pytest

from symbolkg.solvers import fol, prover9
from symbolkg.solvers.records import ErrorKind, Limits, ProgramError, Status

LIMITS = Limits(timeout_s=5)


@pytest.fixture(scope="module")
def needs_prover9() -> None:
    try:
        prover9.prover9_binary()
    except prover9.Prover9NotFound as exc:
        pytest.skip(f"Prover9 not available: {exc}")


def program(premises: list[str], conclusion: str, predicates: list[str] | None = None) -> str:
    lines = ["Predicates:", *(predicates or []), "Premises:", *premises, "Conclusion:", conclusion]
    return "\n".join(lines) + "\n"


def answer(premises: list[str], conclusion: str, predicates: list[str] | None = None) -> str | None:
    outcome = fol.solve(program(premises, conclusion, predicates), LIMITS)
    assert outcome.executed, outcome.error_message
    return outcome.answer


# --------------------------------------------------------------------------- free variables in premises


def test_free_variable_in_premise_is_universal_over_the_whole_premise():
    parsed = fol.parse(program(["Style(zaha, y) ⊕ Style(kelly, y)"], "Style(zaha, modern)"))
    assert fol.format_formula(parsed.premises[0].formula) == "∀y (Style(zaha, y) ⊕ Style(kelly, y))"
    assert parsed.premises[0].text == "Style(zaha, y) ⊕ Style(kelly, y)"  # the text stays as written


def test_free_variables_close_in_order_of_first_use_around_bound_ones():
    parsed = fol.parse(program(["∀x (BornIn(x, y) → Likes(x, z1))"], "Likes(a, b)"))
    assert fol.format_formula(parsed.premises[0].formula) == "∀y ∀z1 ∀x (BornIn(x, y) → Likes(x, z1))"


def test_each_premise_is_closed_on_its_own():
    # ∀x Dog(x) and ∀x ¬Cat(x) are consistent; sharing one x would not change that, but a
    # separate closure is what Prover9 does: both are about every individual.
    parsed = fol.parse(program(["Dog(x)", "¬Cat(x)"], "Dog(rex)"))
    assert [fol.format_formula(p.formula) for p in parsed.premises] == ["∀x (Dog(x))", "∀x (¬Cat(x))"]


@pytest.mark.parametrize(
    "premises, conclusion, expected",
    [
        # ∀x (¬B34(x) → ¬B35(x)); tom is not B34 -> tom is not B35.
        (["¬B34(x) → ¬B35(x)", "¬B34(tom)"], "B35(tom)", "False"),
        # ∀x (F(x) ⊕ M(x)); coco is not M -> coco is F.
        (["F(x) ⊕ M(x)", "¬M(coco)"], "F(coco)", "True"),
        # The universal reading, not "some x": from ∀x P(x), P(anything) follows.
        (["P(x)"], "P(bob)", "True"),
        # A free variable does not become a constant shared with the conclusion.
        (["Q(x) → R(x)"], "∃y (Q(y) ∧ ¬R(y))", "False"),
    ],
)
def test_free_variable_premises_answer_as_prover9_reads_them(premises, conclusion, expected, needs_prover9):
    assert answer(premises, conclusion) == expected


@pytest.mark.parametrize("conclusion, name", [("Koala(x) ∧ Sleep(x)", "x"), ("∃x (Bred(x, y) ∧ Animal(x))", "y")])
def test_free_variable_in_the_conclusion_is_refused_with_its_line(conclusion, name):
    text = program(["Koala(kim)"], conclusion)
    with pytest.raises(ProgramError) as info:
        fol.parse(text)
    assert (info.value.line, info.value.kind) == (5, ErrorKind.UNDECLARED)
    assert f"'{name}' looks like a variable" in info.value.message
    assert "read only in a premise" in info.value.message
    outcome = fol.solve(text, LIMITS)
    assert outcome.status is Status.PARSE_ERROR and outcome.error_line == 5


def test_standalone_formula_still_refuses_free_variables_by_default():
    with pytest.raises(ProgramError, match="'y' looks like a variable"):
        fol.parse_formula("∀x (Rating(x, y) → Listed(x))")


# --------------------------------------------------------------------------- membership


def test_membership_in_a_unary_predicate_is_that_predicate():
    parsed = fol.parse(program(["rex ∈ Dog", "∀x (x ∈ Dog → Animal(x))"], "rex ∉ Animal", ["Dog(x) ::: x is a dog."]))
    assert [fol.format_formula(p.formula) for p in parsed.premises] == ["Dog(rex)", "∀x (Dog(x) → Animal(x))"]
    assert fol.format_formula(parsed.conclusion.formula) == "¬Animal(rex)"


def test_membership_in_a_predicate_only_used_unary_is_that_predicate():
    parsed = fol.parse(program(["Cat(tom)", "felix ∈ Cat"], "Cat(felix)"))
    assert fol.format_formula(parsed.premises[1].formula) == "Cat(felix)"


def test_membership_in_an_individual_is_a_binary_relation():
    parsed = fol.parse(program(["∀x ∀y ((Family(x) ∧ y ∈ x) → Related(y, x))"], "Related(a, b)"))
    formula = parsed.premises[0].formula
    assert fol.format_formula(formula) == "∀x ∀y ((Family(x) ∧ y ∈ x) → Related(y, x))"
    assert fol.parse_formula(fol.format_formula(formula)) == formula  # round trip
    assert any(isinstance(n, fol.Atom) and n.predicate == fol.MEMBER and len(n.args) == 2 for n in fol._walk(formula))


@pytest.mark.parametrize(
    "premises, conclusion, expected",
    [
        (["∀x ∀y ((Family(x) ∧ y ∈ x) → Related(y, x))", "Family(romance)", "french ∈ romance"], "Related(french, romance)", "True"),
        (["∀x ∀y ((Family(x) ∧ y ∈ x) → Related(y, x))", "Family(romance)"], "Related(french, romance)", "Unknown"),
        (["rex ∈ Dog", "∀x (Dog(x) → Animal(x))"], "rex ∉ Animal", "False"),
    ],
)
def test_membership_answers(premises, conclusion, expected, needs_prover9):
    assert answer(premises, conclusion) == expected


def test_membership_relation_does_not_clash_with_a_user_predicate(needs_prover9):
    # The user's own MemberOf is a different symbol from the relation written ∈.
    assert answer(["MemberOf(a, b)"], "a ∈ b") == "Unknown"


def test_subset_is_still_refused_with_its_line():
    with pytest.raises(ProgramError) as info:
        fol.parse(program(["Dog(rex)", "dogs ⊆ animals"], "Dog(rex)"))
    assert (info.value.line, info.value.kind) == (4, ErrorKind.UNSUPPORTED)
