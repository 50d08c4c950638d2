"""Logic-LM's FOL language (FOLIO): parser, checks, translation, answers via Prover9.

Every program below is small enough to check by hand; the expected answer and
the reason are in the comment next to it. Programs marked "Logic-LM rejects"
use a construct outside Logic-LM's grammar (nested quantifiers, equality,
function terms, propositions, ...); the answer shows we read them correctly.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from symbolkg.solvers.fol import engine, prover9, prover9_syntax
from symbolkg.solvers.fol import syntax as fol
from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError, Status

# Every answer test below finishes far inside this limit: the slowest call takes 0.07 s
# (test_nested_quantifiers, measured), 70x under it, so an answer never depends on machine load.
LIMITS = Limits(timeout_s=5)
DATA = Path(os.environ.get("SYMBOLKG_DATA", "/work/shared/data"))
FOLIO_PROGRAMS = DATA / "logiclm" / "programs" / "FOLIO_dev_gpt-4.json"


@pytest.fixture(scope="module")
def needs_prover9() -> None:
    try:
        prover9.prover9_binary()
    except prover9.Prover9NotFound as exc:
        pytest.skip(f"Prover9 not available: {exc}")


def program(premises: list[str], conclusion: str, predicates: list[str] | None = None) -> str:
    lines = ["Predicates:", *(predicates or [])]
    lines += ["Premises:", *premises, "Conclusion:", conclusion]
    return "\n".join(lines) + "\n"


def answer(premises: list[str], conclusion: str) -> str | None:
    outcome = engine.solve(program(premises, conclusion), LIMITS)
    assert outcome.executed, outcome.error_message
    return outcome.answer


def grouping(text: str) -> str:
    return fol.format_formula(fol.parse_formula(text))


# --------------------------------------------------------------------------- parsing: grouping


@pytest.mark.parametrize(
    "text, grouped",
    [
        # ¬ > ∧ > ∨ > ⊕ > → > ↔
        ("¬A ∧ B", "(¬A ∧ B)"),
        ("A ∧ B ∨ C", "((A ∧ B) ∨ C)"),
        ("A ∨ B ∧ C", "(A ∨ (B ∧ C))"),
        ("A ∨ B ⊕ C", "((A ∨ B) ⊕ C)"),
        ("A ⊕ B → C", "((A ⊕ B) → C)"),
        ("A → B ⊕ C", "(A → (B ⊕ C))"),
        ("A → B ↔ C", "((A → B) ↔ C)"),
        ("A ∧ B → C ∧ D", "((A ∧ B) → (C ∧ D))"),
        # → groups to the right, the others to the left
        ("A → B → C", "(A → (B → C))"),
        ("A ∧ B ∧ C", "((A ∧ B) ∧ C)"),
        # quantifiers take everything to their right (within the enclosing parentheses)
        ("∀x P(x) → Q(x)", "∀x (P(x) → Q(x))"),
        ("(∀x P(x)) → Q(a)", "((∀x (P(x))) → Q(a))"),
        ("¬∀x (P(x)) ∧ Q(a)", "¬∀x (P(x) ∧ Q(a))"),
        ("P(a) ∧ ∀x (Q(x) → R(x))", "(P(a) ∧ ∀x (Q(x) → R(x)))"),
        # stacked quantifiers, with or without spaces or commas
        ("∀x∃y (R(x, y))", "∀x ∃y (R(x, y))"),
        ("∀x ∀y R(x, y)", "∀x ∀y (R(x, y))"),
        ("∀x, y R(x, y)", "∀x ∀y (R(x, y))"),
        # redundant parentheses, double negation, ASCII spellings, a trailing period
        ("((P(a)))", "P(a)"),
        ("¬¬P(a)", "¬¬P(a)"),
        ("~A & B | C -> D <-> E", "((((¬A ∧ B) ∨ C) → D) ↔ E)"),
        ("P(a).", "P(a)"),
        # terms: equality, inequality, functions, numbers; propositions
        ("∀x (x = a ∨ x ≠ b)", "∀x (x = a ∨ x ≠ b)"),
        ("Loves(a, motherOf(a))", "Loves(a, motherOf(a))"),
        ("Rent(oliveGarden, 2000)", "Rent(oliveGarden, 2000)"),
        ("Rain → Wet", "(Rain → Wet)"),
    ],
)
def test_grouping(text, grouped):
    assert grouping(text) == grouped


def _formulas(bound: tuple[str, ...] = ()) -> st.SearchStrategy[fol.Formula]:
    """Random formulas over a few predicates, constants a-c and properly bound variables."""
    terms = st.sampled_from([fol.Const(c) for c in "abc"] + [fol.Var(v) for v in bound])
    atoms = st.one_of(
        st.builds(fol.Atom, st.sampled_from(["P", "Q"]), st.tuples(terms)),
        st.builds(fol.Atom, st.just("R"), st.tuples(terms, terms)),
        st.just(fol.Atom("Rain", ())),
        st.builds(fol.Equals, terms, terms),
    )

    def extend(inner: st.SearchStrategy[fol.Formula]) -> st.SearchStrategy[fol.Formula]:
        return st.one_of(
            st.builds(fol.Not, inner),
            st.builds(fol.Binary, st.sampled_from(list(fol.Connective)), inner, inner),
        )

    formulas = st.recursive(atoms, extend, max_leaves=6)
    if len(bound) < 2:
        var = "xyz"[len(bound)]
        quantified = st.builds(
            fol.Quantified,
            st.sampled_from(list(fol.Quantifier)),
            st.just(var),
            st.deferred(lambda: _formulas((*bound, var))),
        )
        formulas = st.one_of(
            formulas, quantified, st.builds(fol.Binary, st.sampled_from(list(fol.Connective)), quantified, formulas)
        )
    return formulas


# The documented grammar: binding strength and which connectives group to the right.
PRECEDENCE = {
    fol.Connective.IFF: 1,
    fol.Connective.IMPLIES: 2,
    fol.Connective.XOR: 3,
    fol.Connective.OR: 4,
    fol.Connective.AND: 5,
}
RIGHT_ASSOC = {fol.Connective.IMPLIES}


def _strength(formula: fol.Formula) -> int:
    if isinstance(formula, fol.Binary):
        return PRECEDENCE[formula.op]
    return 0 if isinstance(formula, fol.Quantified) else 6


def _minimal(formula: fol.Formula) -> str:
    """Print with only the parentheses the documented precedence rules require."""
    if isinstance(formula, fol.Quantified):
        return f"{formula.quantifier.value}{formula.var} {_minimal(formula.body)}"
    if isinstance(formula, fol.Not):
        body = _minimal(formula.body)
        if isinstance(formula.body, fol.Equals):
            return body.replace(" = ", " ≠ ")
        return f"¬{body}" if _strength(formula.body) >= 6 or isinstance(formula.body, fol.Quantified) else f"¬({body})"
    if isinstance(formula, fol.Binary):
        bp = PRECEDENCE[formula.op]
        left, right = _minimal(formula.left), _minimal(formula.right)
        left_scope = formula.left
        while isinstance(left_scope, fol.Not):
            left_scope = left_scope.body
        if (
            _strength(formula.left) < bp
            or (_strength(formula.left) == bp and formula.op in RIGHT_ASSOC)
            or isinstance(left_scope, fol.Quantified)
        ):
            left = f"({left})"
        if _strength(formula.right) < bp or (_strength(formula.right) == bp and formula.op not in RIGHT_ASSOC):
            right = f"({right})"
        return f"{left} {formula.op.value} {right}"
    return fol.format_formula(formula)  # atoms and equalities


@settings(max_examples=300, deadline=None)
@given(_formulas())
def test_format_then_parse_gives_the_same_formula(formula):
    # Every grouping the printer writes (quantifier scope, ≠) reads back unchanged.
    assert fol.parse_formula(fol.format_formula(formula)) == formula


@settings(max_examples=300, deadline=None)
@given(_formulas())
def test_parser_follows_the_documented_precedence(formula):
    # Printed with the fewest parentheses the rules allow, each formula reads back as itself.
    assert fol.parse_formula(_minimal(formula)) == formula


def test_parse_program_sections_lines_and_comments():
    text = (
        "Predicates:\n"
        "Dog(x) ::: x is a dog.\n"
        "Likes(x, y) ::: x likes y.\n"
        "Premises:\n"
        "∀x (Dog(x) → Likes(x, bone)) ::: Dogs like bones.\n"
        "\n"
        "Dog(rex) ::: Rex is a dog.\n"
        "Conclusion:\n"
        "Likes(rex, bone) ::: Rex likes bones.\n"
    )
    parsed = fol.parse(text)
    assert [(d.name, d.arity, d.line) for d in parsed.predicates] == [("Dog", 1, 2), ("Likes", 2, 3)]
    assert [p.line for p in parsed.premises] == [5, 7]
    assert parsed.premises[0].comment == "Dogs like bones."
    assert parsed.conclusion.line == 9
    assert parsed.conclusion.formula == fol.Atom("Likes", (fol.Const("rex"), fol.Const("bone")))


def test_bound_names_are_variables_and_free_names_constants():
    formula = fol.parse_formula("∀x (Dog(x) → Likes(x, bone))")
    assert formula == fol.Quantified(
        fol.Quantifier.FORALL,
        "x",
        fol.Binary(
            fol.Connective.IMPLIES,
            fol.Atom("Dog", (fol.Var("x"),)),
            fol.Atom("Likes", (fol.Var("x"), fol.Const("bone"))),
        ),
    )


def test_a_quoted_name_is_a_constant_of_its_own():
    """``"The Secret Dude Society"`` names one individual (curly quotes and inner spacing alike),
    distinct from any unquoted name; answers follow as for any constant."""
    f = fol.parse_formula("WorkingTitle(“The  Secret Dude Society”, badults)")
    assert f == fol.Atom("WorkingTitle", (fol.Const('"The Secret Dude Society"'), fol.Const("badults")))
    assert answer(['Show("Badults")', "∀x (Show(x) → Aired(x))"], 'Aired("Badults")') == "True"
    assert answer(['Show("Badults")'], "Show(badults)") == "Unknown"


def test_one_surplus_closing_parenthesis_is_dropped_only_when_it_changes_nothing():
    one = fol.parse_formula("∀x (Enjoy(x) → (Spend(x, eating) ∧ Spend(x, friends))))")
    assert one == fol.parse_formula("∀x (Enjoy(x) → (Spend(x, eating) ∧ Spend(x, friends)))")
    assert fol.parse_formula("Move(tom) ↔ (Allowed(tom) ∧ ¬More(rent, deposit)))") == fol.parse_formula(
        "Move(tom) ↔ (Allowed(tom) ∧ ¬More(rent, deposit))"
    )
    with pytest.raises(ProgramError, match="unbalanced"):
        fol.parse_formula("Rich(a) ∨ Poor(a) → Happy(a))")  # (R ∨ P) → H, or R ∨ (P → H)


# --------------------------------------------------------------------------- parsing: errors


@pytest.mark.parametrize(
    "premise, kind, fragment",
    [
        ("(P(a) ∧ Q(a)", ErrorKind.SYNTAX, "missing ')'"),
        ("P(a) ∧ Q(a) → R(a))", ErrorKind.SYNTAX, "unbalanced ')'"),  # (P ∧ Q) → R or P ∧ (Q → R)?
        ("P(a)))", ErrorKind.SYNTAX, "unbalanced ')'"),  # one surplus at most
        ('"Rex"', ErrorKind.SYNTAX, "not a formula"),
        ('Dog("rex)', ErrorKind.SYNTAX, "no closing quote"),
        ("P(a) Q(a)", ErrorKind.SYNTAX, "missing connective"),
        ("P(a) ∧", ErrorKind.SYNTAX, "ends where a formula was expected"),
        ("∀x", ErrorKind.SYNTAX, "no formula after it"),
        ("∀ (P(a))", ErrorKind.SYNTAX, "expected a variable name"),
        ("P(a,)", ErrorKind.SYNTAX, "expected a term"),
        ("P()", ErrorKind.SYNTAX, "empty parentheses"),
        ("Visit(juan de onate, texas)", ErrorKind.SYNTAX, "missing ','"),
        ("Feud(a, ∃y Stable(y))", ErrorKind.SYNTAX, "expected a term"),
        ("P(a) # Q(a)", ErrorKind.SYNTAX, "unexpected character '#'"),
        ("Piloted(a, _, bbcTwo)", ErrorKind.SYNTAX, "'_' is not a term"),
        ("∀x (Rating(x, nine) ∧ x > 9 → Listed(x))", ErrorKind.UNSUPPORTED, "arithmetic comparison"),
        ("In(a, yale) ∧ ... ∧ In(z1, yale)", ErrorKind.UNSUPPORTED, "ellipsis"),
        ("∀x (Family(x) → Sub(x) ⊆ x)", ErrorKind.UNSUPPORTED, "subset"),
        # free variables and ∈ in premises are read: tests/solvers/fol/test_fol_recovery.py
        ("∀x x", ErrorKind.SYNTAX, "quantified variable, not a formula"),
        (":::  only a comment", ErrorKind.SYNTAX, "empty formula"),
    ],
)
def test_malformed_premise_reports_its_line(premise, kind, fragment, needs_prover9):
    text = program(["Dog(rex) ::: fine", premise, "Cat(tom) ::: fine"], "Dog(rex)")
    premise_line = 4  # Predicates:, Premises:, Dog(rex), <premise>
    with pytest.raises(ProgramError) as info:
        fol.parse(text)
    assert (info.value.line, info.value.kind) == (premise_line, kind)
    assert fragment in info.value.message
    outcome = engine.solve(text, LIMITS)  # never raises; the same error as data
    assert outcome.status is Status.PARSE_ERROR
    assert (outcome.error_line, outcome.error_kind) == (premise_line, kind.value)
    assert outcome.backend == "prover9"


def test_error_message_shows_formula_and_position():
    with pytest.raises(ProgramError) as info:
        fol.parse(program(["Big(a) ∧ (Small(b) ∨ Tall(c)"], "Big(a)"))
    message = info.value.message
    assert "'Big(a) ∧ (Small(b) ∨ Tall(c)'" in message
    assert "'(' at character 10" in message


def test_arity_mismatch_is_a_type_error_on_the_later_line():
    text = program(["Likes(a, b)", "Likes(c)"], "Likes(a, b)")
    with pytest.raises(ProgramError) as info:
        fol.parse(text)
    assert (info.value.kind, info.value.line) == (ErrorKind.TYPE, 4)
    assert "line 3" in info.value.message


def test_arity_against_declaration_is_checked():
    text = program(["Likes(a)"], "Likes(a)", predicates=["Likes(x, y) ::: x likes y"])
    with pytest.raises(ProgramError) as info:
        fol.parse(text)
    assert (info.value.kind, info.value.line) == (ErrorKind.TYPE, 4)
    assert "declared with 2" in info.value.message


def test_undeclared_predicates_are_allowed():
    # The Predicates section documents meanings; Logic-LM never required it complete.
    fol.parse(program(["Dog(rex)"], "Animal(rex)", predicates=["Dog(x) ::: x is a dog"]))


def test_predicate_used_as_function_is_a_type_error():
    with pytest.raises(ProgramError) as info:
        fol.parse(program(["Tall(a)", "Likes(b, Tall(a))"], "Tall(a)"))
    assert (info.value.kind, info.value.line) == (ErrorKind.TYPE, 4)


@pytest.mark.parametrize(
    "text, line, kind, fragment",
    [
        ("Premises:\nP(a)\n", None, ErrorKind.NO_ANSWER, "missing 'Conclusion:'"),
        ("Premises:\nP(a)\nConclusion:\n", 3, ErrorKind.NO_ANSWER, "empty"),
        ("Premises:\nP(a)\nConclusion:\nP(a)\nQ(a)\n", 5, ErrorKind.NO_ANSWER, "exactly one"),
        ("Conclusion:\nP(a)\n", None, ErrorKind.SYNTAX, "missing 'Premises:'"),
        ("P(a)\nPremises:\nP(a)\nConclusion:\nP(a)\n", 1, ErrorKind.SYNTAX, "before any section"),
        ("Premises:\nP(a)\nPremises:\nQ(a)\nConclusion:\nP(a)\n", 3, ErrorKind.SYNTAX, "second 'Premises:'"),
        ("Predicates:\nDog x\nPremises:\nP(a)\nConclusion:\nP(a)\n", 2, ErrorKind.SYNTAX, "Name(x, y)"),
    ],
)
def test_section_errors(text, line, kind, fragment):
    with pytest.raises(ProgramError) as info:
        fol.parse(text)
    assert (info.value.line, info.value.kind) == (line, kind)
    assert fragment in info.value.message


def test_header_with_formula_on_the_same_line():
    parsed = fol.parse("Premises: P(a) ::: a\nConclusion: P(a)\n")
    assert parsed.premises[0].line == 1 and parsed.conclusion.line == 2


# --------------------------------------------------------------------------- translation


def test_translation_renames_symbols_prover9_would_misread():
    parsed = fol.parse(
        program(["Big(yale) ∧ Test(GRE) ∧ Rent(olive, 2000)", "∀a (Big(a) → Old(a))", "Wet"], "Big(zurich)")
    )
    tr = prover9_syntax.to_prover9(parsed)
    # yale / zurich start with y/z (Prover9 variables), GRE and 2000 with no lower-case a-t letter.
    assert tr.assumptions[0] == "((Big(c_yale) & Test(c_GRE)) & Rent(olive, c_2000))"
    assert tr.assumptions[1] == "(all v_a (Big(v_a) -> Old(v_a)))"
    assert tr.assumptions[2] == "Wet"
    assert tr.goal == "Big(c_zurich)"
    assert tr.symbols == {"yale": "c_yale", "GRE": "c_GRE", "2000": "c_2000", "zurich": "c_zurich"}
    assert tr.lines == (3, 4, 5, 7)


def test_translation_of_xor_and_equality():
    tr = prover9_syntax.to_prover9(fol.parse(program(["A(b) ⊕ B(b)", "∀x (x ≠ b → A(x))"], "c = b")))
    assert tr.assumptions == ("-(A(b) <-> B(b))", "(all x (-((x = b)) -> A(x)))")
    assert tr.goal == "(c = b)"


def test_translation_names_never_collide():
    tr = prover9_syntax.to_prover9(fol.parse(program(["P(GRE) ∧ P(c_GRE)"], "P(GRE)")))
    assert tr.assumptions[0] == "(P(c_GRE) & P(c_GRE_2))"


# --------------------------------------------------------------------------- answers (Prover9)


@pytest.mark.usefixtures("needs_prover9")
class TestAnswers:
    def test_syllogism_true_false_unknown(self):
        rules = ["∀x (Dog(x) → Animal(x))", "∀x (Animal(x) → ¬Plant(x))", "Dog(rex)"]
        assert answer(rules, "Animal(rex)") == "True"  # Dog → Animal
        assert answer(rules, "Plant(rex)") == "False"  # Animal → ¬Plant
        assert answer(rules, "Animal(tom)") == "Unknown"  # nothing is said about tom

    def test_outcome_fields(self):
        outcome = engine.solve(program(["∀x (Dog(x) → Animal(x))", "Dog(rex)"], "Animal(rex)"), LIMITS)
        assert outcome.status is Status.PROVED
        assert outcome.backend == "prover9"
        assert outcome.seconds > 0
        assert "Animal(rex)" in outcome.proof and "$F" in outcome.proof

    def test_exclusive_or(self):
        # ∀x (A ⊕ B) and A(a): exactly one holds, so ¬B(a).
        assert answer(["∀x (Perform(x) ⊕ Inactive(x))", "Perform(bo)"], "Inactive(bo)") == "False"
        # Not an inclusive or: with both true, A ⊕ B is false.
        assert answer(["Perform(bo) ∧ Inactive(bo)"], "Perform(bo) ⊕ Inactive(bo)") == "False"
        # FOLIO's "either both or neither": (A ∧ S) ⊕ ¬(A ∨ S) with A true forces S.
        assert (
            answer(["(Attend(bo) ∧ Student(bo)) ⊕ ¬(Attend(bo) ∨ Student(bo))", "Attend(bo)"], "Student(bo)") == "True"
        )

    def test_precedence_changes_answers_where_logic_lm_reads_left_to_right(self):
        # A → B ∧ C is A → (B ∧ C); with ¬A it says nothing about C. (Logic-LM's flat
        # left grouping, (A → B) ∧ C, would make C true.)
        assert answer(["¬A(a)", "A(a) → B(a) ∧ C(a)"], "C(a)") == "Unknown"
        # A ∨ B ∧ C is A ∨ (B ∧ C); A alone satisfies it, so C is open. ((A ∨ B) ∧ C would force C.)
        assert answer(["A(a)", "A(a) ∨ B(a) ∧ C(a)"], "C(a)") == "Unknown"
        # A → B ⊕ C is A → (B ⊕ C); with ¬A, C is open. ((A → B) ⊕ C would make C false.)
        assert answer(["¬A(a)", "A(a) → B(a) ⊕ C(a)"], "C(a)") == "Unknown"
        # A → B → C is A → (B → C); with ¬A, C is open. ((A → B) → C would make C true.)
        assert answer(["¬A(a)", "A(a) → B(a) → C(a)"], "C(a)") == "Unknown"
        # ...and where the readings agree, the answer is the obvious one.
        assert answer(["A(a)", "A(a) → B(a) ∧ C(a)"], "C(a)") == "True"

    def test_quantifier_without_parentheses_scopes_to_the_right(self):
        # ∀x Dog(x) → Animal(x) is ∀x (Dog(x) → Animal(x)).
        assert answer(["∀x Dog(x) → Animal(x)", "Dog(rex)"], "Animal(rex)") == "True"

    def test_nested_quantifiers(self):  # Logic-LM rejects
        rules = ["∀x (Person(x) → ∃y (Person(y) ∧ MotherOf(y, x)))", "Person(ann)"]
        assert answer(rules, "∃y MotherOf(y, ann)") == "True"  # instantiate x := ann
        assert answer(rules, "MotherOf(bea, ann)") == "Unknown"  # the mother is not named
        # A quantifier after a fact in a conjunction (FOLIO_dev_116's shape).
        assert answer(["Man(mike) ∧ ∀x (Man(x) → Knows(mike, x))", "Man(pete)"], "Knows(mike, pete)") == "True"

    def test_stacked_and_negated_quantifiers(self):
        # ∀x∀y: parent older; ∀x, y: older is asymmetric; so from Parent(a, b), Older(b, a) is false.
        rules = ["∀x∀y (Parent(x, y) → Older(x, y))", "∀x, y (Older(x, y) → ¬Older(y, x))", "Parent(al, bo)"]
        assert answer(rules, "Older(bo, al)") == "False"
        # ¬∀x (Bird(x) → Fly(x)) is ∃x (Bird(x) ∧ ¬Fly(x)).
        assert answer(["¬∀x (Bird(x) → Fly(x))"], "∃x (Bird(x) ∧ ¬Fly(x))") == "True"
        # ¬∃x (...) → none: Tweety is a bird, so Tweety does not fly.
        assert answer(["¬∃x (Bird(x) ∧ Fly(x))", "Bird(tweety)"], "Fly(tweety)") == "False"

    def test_shadowed_variable(self):
        # The inner ∃x rebinds x: ∀x (P(x) → ∃x Q(x)) with P(a) gives ∃x Q(x), not Q(a).
        rules = ["∀x (P(x) → ∃x Q(x))", "P(a)"]
        assert answer(rules, "∃x Q(x)") == "True"
        assert answer(rules, "Q(a)") == "Unknown"

    def test_equality_and_inequality(self):  # Logic-LM rejects
        # Michael is taller than every other man; Peter is a man other than Michael.
        rules = ["Man(michael) ∧ ∀x (Man(x) ∧ x ≠ michael → Taller(michael, x))", "Man(peter)", "peter ≠ michael"]
        assert answer(rules, "Taller(michael, peter)") == "True"
        assert answer(rules, "Taller(michael, michael)") == "Unknown"  # x ≠ michael excludes him
        # Only Bob won; Alice won; so Alice is Bob.
        assert answer(["∀x (Winner(x) → x = bob)", "Winner(alice)"], "alice = bob") == "True"

    def test_function_terms(self):  # Logic-LM rejects
        assert answer(["∀x (Person(x) → Loves(x, motherOf(x)))", "Person(ann)"], "∃y Loves(ann, y)") == "True"

    def test_propositions(self):  # Logic-LM rejects (no arguments)
        assert answer(["Rain → Wet", "Rain"], "Wet") == "True"
        assert answer(["Rain → Wet", "¬Wet"], "Rain") == "False"

    def test_constants_prover9_would_read_as_variables(self):
        # Unrenamed, Prover9 reads "yale" as a universally quantified variable and
        # "Big(yale)" as "everything is big", which would make Big(zurich) True.
        assert answer(["Big(yale)"], "Big(zurich)") == "Unknown"
        assert answer(["Big(yale)"], "Big(yale)") == "True"
        assert answer(["Test(GRE)"], "Test(TOEFL)") == "Unknown"

    def test_number_like_constants(self):
        assert (
            answer(["∀x (Rent(x, 2000) → Expensive(x))", "Rent(oliveGarden, 2000)"], "Expensive(oliveGarden)") == "True"
        )
        assert answer(["Endowment(yale, 42.3billion)"], "Endowment(yale, 42.3billion)") == "True"

    def test_single_letter_constants_a_to_t(self):
        assert answer(["∀x (P(x) → Q(x))", "P(a)"], "Q(a)") == "True"
        assert answer(["∀x (P(x) → Q(x))", "P(a)"], "Q(b)") == "Unknown"

    def test_contradictory_premises_give_no_answer_and_name_the_conflict(self):
        # the premises alone refute themselves: they would entail Cat(tom) and ¬Cat(tom)
        outcome = engine.solve(program(["Dog(rex)", "Big(tom)", "¬Dog(rex)"], "Cat(tom)"), LIMITS)
        assert (outcome.status, outcome.answer, outcome.error_kind) == (Status.UNSAT, None, "inconsistent")
        assert "line 3: Dog(rex)" in outcome.error_message and "Big(tom)" not in outcome.error_message
        assert outcome.error_line == 3 and "line 5: ¬Dog(rex)" in outcome.error_message
        assert outcome.executed  # it ran: its verdict is "contradictory", scored wrong

    # Provably unbounded, so only the time limit can end it, on an idle machine as on a loaded one.
    # Skolemizing ∃z gives a binary function f, and from Num(one) both searches derive Num(t) for
    # every term t of the free magma over {one} (Catalan-many: more than 10^15 distinct ground atoms
    # under Prover9's default max_weight of 100, none subsuming another), so neither ever runs out
    # of clauses. Neither finds a proof either, because none exists on either side: with one = 1,
    # f(x, y) = x + y and Sum(x, y, z) iff z = x + y the premises hold and the conclusion is false;
    # with Sum true everywhere they hold and it is true. Measured: both searches still run at a
    # 10 s limit, and Prover9 alone at 20 s of CPU time, in 45 MB (memory does not stop it either).
    # The last three premises leave no finite model (Sum(x, y, z) → Less(x, z) with Less a strict
    # order makes every new term a new individual), so the finite-model search that races Prover9
    # cannot decide it either (none with up to 8 individuals; it has infinite ones, e.g. the
    # naturals from 1 with + and <), and the goal is about a predicate nothing else mentions.
    # (The FOLIO_dev_120-style transitive closure used before is finite: Prover9 saturates it and
    # answers Unknown in 0.7 s on an idle machine, and it has a 1-individual model.)
    RUNAWAY = program(
        [
            "∀x ∀y ((Num(x) ∧ Num(y)) → ∃z (Num(z) ∧ Sum(x, y, z)))",
            "Num(one)",
            "∀x ∀y ∀z (Sum(x, y, z) → Less(x, z))",
            "∀x ¬Less(x, x)",
            "∀x ∀y ∀z ((Less(x, y) ∧ Less(y, z)) → Less(x, z))",
        ],
        "Big(one)",
    )

    # Without enforcement the call would never return: pytest-timeout turns that into a failure
    # after 60 s instead of the suite-wide 600 s.
    @pytest.mark.timeout(60)
    def test_runaway_search_times_out_within_the_limit(self):
        start = time.perf_counter()
        outcome = engine.solve(self.RUNAWAY, Limits(timeout_s=1))
        elapsed = time.perf_counter() - start
        assert outcome.status is Status.TIMEOUT and outcome.error_kind == ErrorKind.TIMEOUT.value
        assert outcome.answer is None
        assert "both searches ran out of time" in outcome.error_message
        # Idle, the call returns 1.00-1.01 s after it starts (the 1 s limit plus killing both
        # provers); the bound is 10x that, so a loaded machine meets it and a limit that is not
        # enforced (or enforced ten times too late) does not.
        assert elapsed < 10.0
        assert 1.0 <= outcome.seconds < 10.0  # never before the limit: the search cannot end on its own


def test_registered_as_the_logiclm_fol_language(needs_prover9):
    from symbolkg.solvers import registry
    from symbolkg.solvers.outcomes import SolveRequest

    text = program(["∀x (Dog(x) → Animal(x))", "Dog(rex)"], "¬Animal(rex)")
    assert isinstance(registry.parse("logiclm-fol", text), fol.FolProgram)
    assert registry.run(SolveRequest("f1", "logiclm-fol", text, LIMITS)).answer == "False"


# --------------------------------------------------------------------------- recorded GPT-4 programs


@pytest.fixture(scope="module")
def recorded() -> list[dict]:
    if not FOLIO_PROGRAMS.is_file():
        pytest.skip(f"shared data not found at {FOLIO_PROGRAMS}")
    return json.loads(FOLIO_PROGRAMS.read_text())


def test_recorded_programs_parse_or_fail_with_line_and_kind(recorded):
    failures: dict[str, int] = {}
    for row in recorded:
        text = row["raw_logic_programs"][0]
        try:
            prover9_syntax.to_prover9(fol.parse(text))
        except ProgramError as err:
            assert err.line is not None and 1 <= err.line <= len(text.splitlines()), row["id"]
            failures[err.kind.value] = failures.get(err.kind.value, 0) + 1
    parsed = len(recorded) - sum(failures.values())
    # Measured: 196 of 204 parse (Logic-LM executed 163). Failures: 6 unsupported notation (comparisons, one
    # ellipsis in a program that also compares), 2 syntax (_ and ∃ inside a term). Free variables in a conclusion
    # parse (solved both ways: test_fol_recovery.py); so does a top-level `∧ ... ∧`.
    # (Before: 190 with 5 undeclared, 7 unsupported; before free variables in premises and ∈: 177.)
    assert parsed >= 196
    assert failures == {"unsupported": 6, "syntax": 2}


@pytest.mark.parametrize(
    "problem_id, expected",
    [
        ("FOLIO_dev_0", "Unknown"),
        ("FOLIO_dev_1", "True"),
        ("FOLIO_dev_2", "False"),
        ("FOLIO_dev_12", "True"),  # nested quantifier: Logic-LM rejects
        ("FOLIO_dev_116", "True"),  # ≠ and a quantifier inside a conjunction: Logic-LM rejects
        ("FOLIO_dev_115", "True"),  # provable as written (Michael is taller than every man)
    ],
)
def test_recorded_program_answers(recorded, needs_prover9, problem_id, expected):
    row = next(r for r in recorded if r["id"] == problem_id)
    assert engine.solve(row["raw_logic_programs"][0], LIMITS).answer == expected


@pytest.mark.slow
def test_recorded_programs_beat_logic_lm(recorded, needs_prover9):
    # Logic-LM's own solver on this file: 79.9% executed, 64.2% accurate (unexecuted = wrong).
    # Measured here: 193/204 executed (94.6%), 147 correct (72.1%; before the finite-model search
    # answered FOLIO_dev_120: 192, 147, its gold answer being False, which its program does not
    # entail; before a free conclusion was read both ways and `∧ ... ∧` read: 189, 145). No answer
    # depends on machine load: every program ends within 0.4 s on a loaded machine (FOLIO_dev_120,
    # on which Prover9 never ends, has 1-individual models on both sides: the model search answers
    # it in milliseconds, or races Prover9 if its own short budget ran out), 50x under the 20 s
    # limit. Prover9 and the model search are deterministic, and a proof and a finite countermodel
    # cannot both exist, so the counts are exact; ">=" leaves room for the solver to improve.
    option = {"True": "A", "False": "B", "Unknown": "C"}
    limits = Limits(timeout_s=20)
    executed = correct = 0
    timed_out = []
    for row in recorded:
        outcome = engine.solve(row["raw_logic_programs"][0], limits)
        executed += outcome.executed
        correct += outcome.executed and option.get(outcome.answer) == row["answer"]
        if outcome.status is Status.TIMEOUT:
            timed_out.append(row["id"])
    assert timed_out == []  # a program at the limit would make the counts luck
    assert executed >= 193 and correct >= 147 and correct / len(recorded) >= 0.72
    assert executed / len(recorded) > 0.799 and correct / len(recorded) > 0.642
