"""Entailment certificates: Prover9 answers carry them, Z3 / the evaluator re-check them, lies are caught."""

from __future__ import annotations

import copy
import json

import pytest

from symbolkg.solvers.certificates import check
from symbolkg.solvers.certificates.entailment import MAX_CERTIFICATE_BYTES
from symbolkg.solvers.fol import engine, prover9, z3_engine, z3_eval
from symbolkg.solvers.fol import syntax as fol
from symbolkg.solvers.outcomes import Limits, Status


@pytest.fixture(scope="module", autouse=True)
def _binary() -> None:
    try:
        prover9.prover9_binary()
    except prover9.Prover9NotFound as exc:
        pytest.skip(f"Prover9 not available: {exc}")


# Every call here takes well under a second (measured: Prover9 < 0.2 s, Z3 < 0.3 s on a loaded machine).
FAST = Limits(timeout_s=10)

# FOLIO-style: a premise the proofs need (line 8), distractors, and a conclusion per answer.
PROGRAM = """Predicates:
Musician(x) ::: x is a musician.
Performs(x) ::: x performs on stage.
Nervous(x) ::: x gets nervous.
Painter(x) ::: x is a painter.
Premises:
∀x (Musician(x) → Performs(x)) ::: All musicians perform on stage.
∀x (Performs(x) → ¬Nervous(x)) ::: No one who performs on stage gets nervous.
Musician(anna) ::: Anna is a musician.
Painter(ben) ::: Ben is a painter.
Painter(anna) ⊕ Nervous(ben) ::: Anna is a painter or Ben gets nervous, not both.
Conclusion:
{conclusion}
"""
TRUE = PROGRAM.format(conclusion="Performs(anna) ::: Anna performs on stage.")
FALSE = PROGRAM.format(conclusion="Nervous(anna) ::: Anna gets nervous.")
UNKNOWN = PROGRAM.format(conclusion="Nervous(ben) ::: Ben gets nervous.")


def solved(program: str, answer: str) -> dict:
    outcome = engine.solve(program, FAST)
    assert outcome.answer == answer, outcome
    assert outcome.certificate is not None
    return outcome.certificate


def verdict(cert: dict, program: str, answer: str, language: str = "logiclm-fol"):
    return check(cert, language=language, program=program, answer=answer, limits=FAST)


# --------------------------------------------------------------------------- producer


def test_true_cites_the_premises_its_proof_used():
    cert = solved(TRUE, "True")
    assert cert["kind"] == "entailment" and cert["producer"] == "prover9" and cert["claim"] == "goal"
    assert cert["goal"] == {"line": 13, "text": "Performs(anna)", "prover9": "Performs(anna)"}
    assert [p["line"] for p in cert["premises"]] == [7, 9]
    assert cert["premises"][0]["text"] == "∀x (Musician(x) → Performs(x))"
    assert cert["premises"][0]["prover9"] == "(all x (Musician(x) -> Performs(x)))"


def test_false_cites_the_chain_to_the_negated_goal():
    cert = solved(FALSE, "False")
    assert cert["claim"] == "negation"
    assert [p["line"] for p in cert["premises"]] == [7, 8, 9]


def test_unknown_carries_two_countermodels():
    cert = solved(UNKNOWN, "Unknown")
    models = cert["countermodels"]
    assert cert["premises"] == [] and cert["claim"] == "independent"
    assert models["goal_false"] is not None and models["goal_true"] is not None
    nervous_ben = [models[s]["constants"]["ben"] for s in ("goal_false", "goal_true")]
    assert [nervous_ben[0]] not in models["goal_false"]["predicates"]["Nervous"]
    assert [nervous_ben[1]] in models["goal_true"]["predicates"]["Nervous"]


def test_inconsistent_premises_get_no_answer_and_an_old_inconsistent_claim_still_verifies():
    from symbolkg.solvers.certificates import entailment as entailment_certificate

    program = "Premises:\nP(a)\n¬P(a)\nQ(b)\nConclusion:\nR(c)\n"
    outcome = engine.solve(program, FAST)
    assert (outcome.answer, outcome.error_kind, outcome.certificate) == (None, "inconsistent", None)
    # results written before inconsistent premises were refused carry such certificates
    cite = entailment_certificate.Cited
    cert = entailment_certificate.proved(
        "True",
        cite(6, "R(c)", "R(c)"),
        [cite(2, "P(a)", "P(a)"), cite(3, "¬P(a)", "-(P(a))")],
        inconsistent=True,
        producer="prover9",
    )
    assert cert["claim"] == "inconsistent"
    assert verdict(cert, program, "True").status == "verified"


def test_the_proof_text_does_not_show_our_labels():
    outcome = engine.solve(TRUE, FAST)
    assert "symbolkg_a" not in (outcome.proof or "")


def test_certificates_are_small():
    for program, answer in ((TRUE, "True"), (FALSE, "False"), (UNKNOWN, "Unknown")):
        assert len(json.dumps(solved(program, answer), ensure_ascii=False).encode()) < MAX_CERTIFICATE_BYTES


# --------------------------------------------------------------------------- checker: honest certificates


@pytest.mark.parametrize(
    ("program", "answer", "checker"), [(TRUE, "True", "z3"), (FALSE, "False", "z3"), (UNKNOWN, "Unknown", "evaluator")]
)
def test_honest_certificates_verify(program, answer, checker):
    v = verdict(solved(program, answer), program, answer)
    assert (v.status, v.checker) == ("verified", checker), v


def test_prover9_language_certificate_verifies_with_its_own_reader():
    program = (
        "formulas(assumptions).\nall x (man(x) -> mortal(x)).\nman(socrates).\nhappy(plato).\nend_of_list.\n"
        "formulas(goals).\nmortal(socrates).\nend_of_list.\n"
    )
    outcome = prover9.solve(program, FAST)
    assert outcome.answer == "True"
    assert [p["line"] for p in outcome.certificate["premises"]] == [2, 3]
    assert verdict(outcome.certificate, program, "True", language="prover9").status == "verified"
    # Prover9's quantifiers bind tightly: "all x man(x) -> mortal(x)" is "(all x man(x)) -> mortal(x)".
    loose = program.replace("all x (man(x) -> mortal(x))", "all x man(x) -> mortal(x)")
    assert prover9.solve(loose, FAST).answer == "Unknown"


def test_prover9_language_unknown_carries_countermodels_that_verify():
    program = (
        "formulas(assumptions).\nall x (dog(x) -> animal(x)).\ndog(rex).\nend_of_list.\n"
        "formulas(goals).\ncat(rex).\nend_of_list.\n"
    )
    outcome = prover9.solve(program, FAST)
    models = outcome.certificate["countermodels"]
    assert outcome.answer == "Unknown" and models["goal_false"] and models["goal_true"]
    v = verdict(outcome.certificate, program, "Unknown", language="prover9")
    assert (v.status, v.checker) == ("verified", "evaluator"), v
    # A countermodel that breaks a premise (rex a dog but not an animal) is caught.
    models["goal_false"]["predicates"]["animal"] = []
    assert verdict(outcome.certificate, program, "Unknown", language="prover9").status == "failed"


# --------------------------------------------------------------------------- checker: corrupted certificates


def test_dropping_a_needed_premise_fails():
    cert = solved(TRUE, "True")
    cert["premises"] = [p for p in cert["premises"] if p["line"] != 9]  # Musician(anna)
    v = verdict(cert, TRUE, "True")
    assert v.status == "failed" and "do not support" in v.reason


def test_an_altered_premise_text_fails():
    cert = solved(FALSE, "False")
    cert["premises"][0]["text"] = "∀x (Musician(x) → Nervous(x))"
    v = verdict(cert, FALSE, "False")
    assert v.status == "failed" and "line 7" in v.reason


def test_a_premise_that_is_not_in_the_program_fails():
    cert = solved(TRUE, "True")
    cert["premises"].append({"line": 3, "text": "Performs(anna)", "prover9": "Performs(anna)"})
    assert verdict(cert, TRUE, "True").status == "failed"


def test_a_goal_that_is_not_the_conclusion_fails():
    cert = solved(TRUE, "True")
    cert["goal"]["text"] = "Musician(anna)"
    assert verdict(cert, TRUE, "True").status == "failed"


def test_a_countermodel_with_one_tuple_flipped_fails():
    cert = solved(UNKNOWN, "Unknown")
    model = cert["countermodels"]["goal_false"]
    ben = model["constants"]["ben"]
    flipped = copy.deepcopy(cert)
    flipped["countermodels"]["goal_false"]["predicates"]["Nervous"].append([ben])  # now the goal holds in it
    v = verdict(flipped, UNKNOWN, "Unknown")
    assert v.status == "failed" and "goal_false" in v.reason
    broken = copy.deepcopy(cert)
    broken["countermodels"]["goal_true"]["predicates"]["Painter"].remove(
        [broken["countermodels"]["goal_true"]["constants"]["ben"]]
    )
    v = verdict(broken, UNKNOWN, "Unknown")
    assert v.status == "failed" and "line 10" in v.reason  # Painter(ben) is now false


def test_a_wrong_answer_fails():
    cert = solved(TRUE, "True")
    assert verdict(cert, TRUE, "False").status == "failed"  # the row says False, the certificate True
    lie = {**cert, "answer": "False", "claim": "negation"}  # certificate and row agree on a wrong answer
    v = verdict(lie, TRUE, "False")
    assert v.status == "failed" and "Z3 found a model" in v.reason


def test_an_unknown_without_countermodels_is_unverifiable_with_the_reason():
    cert = solved(UNKNOWN, "Unknown")
    cert["countermodels"] = {"goal_false": None, "goal_true": cert["countermodels"]["goal_true"], "reason": "budget"}
    v = verdict(cert, UNKNOWN, "Unknown")
    assert v.status == "unverifiable" and "budget" in v.reason


# --------------------------------------------------------------------------- the Z3 prover (cross-check)


@pytest.mark.parametrize(
    ("program", "answer", "status"),
    [(TRUE, "True", Status.PROVED), (FALSE, "False", Status.DISPROVED), (UNKNOWN, "Unknown", Status.UNKNOWN)],
)
def test_z3_language_answers_like_prover9(program, answer, status):
    outcome = z3_engine.solve(program, FAST)
    assert (outcome.status, outcome.answer, outcome.backend) == (status, answer, "z3")


def test_z3_language_reports_parse_errors_like_the_prover9_path():
    outcome = z3_engine.solve("Premises:\nP(a) ∧\nConclusion:\nP(a)\n", FAST)
    assert outcome.status is Status.PARSE_ERROR and outcome.error_line == 2


def test_find_model_gives_none_for_an_unsatisfiable_set():
    a = fol.Atom("P", (fol.Const("a"),))
    search = z3_eval.find_model([a, fol.Not(a)], 2.0, max_size=3)
    assert search.model is None and "at most 3" in search.reason
