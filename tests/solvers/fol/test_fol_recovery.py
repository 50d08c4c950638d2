"""Readings the FOL parser adds for recorded programs (see ``solvers/fol/syntax.py``'s docstring).

Each rule has one reading fixed by the notation: a free variable in a premise is
universally quantified over that premise (Prover9's convention), ``a ∈ S`` with S a
unary predicate is ``S(a)`` and any other ``a ∈ b`` is a binary relation. A free
variable in the conclusion has two readings (∀, ∃): it is answered only when both give
the same answer, else refused with both answers named. A premise ``A ∧ ... ∧ B`` states
at least its written conjuncts: True and False follow from them whatever was elided,
Uncertain might not, so Uncertain is refused.
"""

from __future__ import annotations

import pytest

from symbolkg.solvers.fol import engine, prover9, z3_engine
from symbolkg.solvers.fol import syntax as fol
from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError, Status

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
    outcome = engine.solve(program(premises, conclusion, predicates), LIMITS)
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


def test_free_variable_in_the_conclusion_parses_as_forall_and_keeps_the_exists_reading():
    parsed = fol.parse(program(["Koala(kim)"], "∃x (Bred(x, y) ∧ Animal(x))"))
    assert parsed.open_conclusion == ("y",)
    assert fol.format_formula(parsed.conclusion.formula) == "∀y ∃x (Bred(x, y) ∧ Animal(x))"
    assert fol.format_formula(parsed.existential_conclusion()) == "∃y ∃x (Bred(x, y) ∧ Animal(x))"


@pytest.mark.parametrize(
    "premises, conclusion, expected",
    [
        # Every koala is a quokka's opposite: "x is a koala and a quokka" is False for every x and for some x.
        (["∀x (Koala(x) → ¬Quokka(x))"], "Koala(x) ∧ Quokka(x)", "False"),
        # Both readings true: everything is an animal.
        (["∀x Animal(x)"], "Animal(x)", "True"),
        # Both readings open.
        (["Koala(kim)"], "Sleep(x)", "Unknown"),
    ],
)
def test_free_variable_in_the_conclusion_is_answered_when_both_readings_agree(
    premises, conclusion, expected, needs_prover9
):
    outcome = engine.solve(program(premises, conclusion), LIMITS)
    assert outcome.answer == expected
    assert "read as ∀ and as ∃, both give " + expected in (outcome.proof or "")


@pytest.mark.parametrize(
    "conclusion, forall, exists", [("Koala(x)", "Unknown", "True"), ("Visit(kim, y) ∧ Koala(y)", "Unknown", "True")]
)
def test_free_variable_in_the_conclusion_is_refused_when_the_readings_differ(conclusion, forall, exists, needs_prover9):
    outcome = engine.solve(program(["Koala(kim)", "Visit(kim, kim)"], conclusion), LIMITS)
    assert (outcome.status, outcome.error_kind, outcome.error_line) == (Status.PARSE_ERROR, "undeclared", 6)
    assert (
        f"it is {forall}, with ∃" in outcome.error_message
        and f"it is {exists}; add the quantifier" in outcome.error_message
    )


def test_the_z3_prover_reads_free_conclusions_the_same_way():
    agree = z3_engine.solve(program(["∀x (Koala(x) → ¬Quokka(x))"], "Koala(x) ∧ Quokka(x)"), LIMITS)
    assert agree.answer == "False" and "both give False" in agree.proof
    differ = z3_engine.solve(program(["Koala(kim)"], "Koala(x)"), LIMITS)
    assert differ.status is Status.PARSE_ERROR and "with ∀x it is Unknown, with ∃x it is True" in differ.error_message


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
        (
            ["∀x ∀y ((Family(x) ∧ y ∈ x) → Related(y, x))", "Family(romance)", "french ∈ romance"],
            "Related(french, romance)",
            "True",
        ),
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


# --------------------------------------------------------------------------- ellipses


YALE = [
    "University(yale) ∧ Moved(yale, newHaven)",
    "College(yale, franklin) ∧ College(yale, berkeley) ∧ ... ∧ College(yale, trumbull)",
]


def test_an_elided_conjunct_is_dropped_from_a_top_level_conjunction():
    parsed = fol.parse(program(YALE, "College(yale, berkeley)"))
    assert parsed.elided == (4,)
    assert fol.format_formula(parsed.premises[1].formula).count("College(") == 3


@pytest.mark.parametrize(
    "conclusion, expected",
    [
        ("College(yale, trumbull)", "True"),
        ("∃x (University(x) ∧ Moved(x, newHaven))", "True"),
        ("¬College(yale, franklin)", "False"),
    ],
)
def test_true_and_false_from_the_written_conjuncts_stand(conclusion, expected, needs_prover9):
    assert answer(YALE, conclusion) == expected


def test_uncertain_with_an_ellipsis_is_refused(needs_prover9):
    outcome = engine.solve(program(YALE, "College(yale, pierson)"), LIMITS)
    assert (outcome.status, outcome.error_kind, outcome.error_line) == (Status.PARSE_ERROR, "unsupported", 4)
    assert "elides conjuncts that might decide it" in outcome.error_message


@pytest.mark.parametrize(
    "premise",
    [
        "College(yale, a) ∨ ... ∨ College(yale, b)",  # a disjunction would be stronger
        "Big(a) ∧ (Small(b) ∨ ...)",  # not a conjunct at the top
        "... ∧ Big(a)",  # nothing left to conjoin
    ],
)
def test_other_ellipses_are_still_refused(premise):
    with pytest.raises(ProgramError) as info:
        fol.parse(program([premise], "Big(a)"))
    assert (info.value.line, info.value.kind) == (3, ErrorKind.UNSUPPORTED)
