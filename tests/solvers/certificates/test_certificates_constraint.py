"""Tests of constraint certificates (solvers/certificates/constraint.py) for the CSP and AR-LSAT DSL answers.

Each certificate comes from the real producer (``csp.solve`` / ``lsat.solve``) and is re-checked by the
Python search; the corruption tests change one thing in a verified certificate and expect ``failed``.
"""

from __future__ import annotations

import copy
import json
import textwrap

import pytest

from symbolkg.solvers.certificates import check
from symbolkg.solvers.certificates import constraint as cc
from symbolkg.solvers.csp import engine as csp
from symbolkg.solvers.outcomes import Limits, Status
from symbolkg.solvers.smt import lsat_engine as lsat

LIMITS = Limits(timeout_s=10)


def program(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


# Entailment of A needs two constraints together (a > b and b > 1 give a == 3).
CSP_TWO = program("""
    Variables:
    a [IN] [1, 2, 3]
    b [IN] [1, 2, 3]
    c [IN] ["x", "y"]
    Constraints:
    a > b ::: a after b
    b > 1 ::: b is not first
    c != "x" ::: c is y
    Query:
    A) a == 3 ::: a is last
    B) a == 2
    C) c == "x"
""")

BOOKS = program("""
    Domain:
    1: leftmost
    5: rightmost
    Variables:
    green_book [IN] [1, 2, 3, 4, 5]
    blue_book [IN] [1, 2, 3, 4, 5]
    white_book [IN] [1, 2, 3, 4, 5]
    purple_book [IN] [1, 2, 3, 4, 5]
    yellow_book [IN] [1, 2, 3, 4, 5]
    Constraints:
    blue_book > yellow_book ::: The blue book is to the right of the yellow book.
    white_book < yellow_book ::: The white book is to the left of the yellow book.
    blue_book == 4 ::: The blue book is the second from the right.
    purple_book == 2 ::: The purple book is the second from the left.
    AllDifferentConstraint([green_book, blue_book, white_book, purple_book, yellow_book]) ::: All different.
    Query:
    A) green_book == 5
    B) blue_book == 2
    C) white_book == 2
    D) purple_book == 3
    E) yellow_book == 2
""")

ROOMS_DECLARED = """\
# Declarations
people = EnumSort([Ann, Bob, Cid])
rooms = EnumSort([red, blue])
in_room = Function([people] -> [rooms])

# Constraints
in_room(Ann) != in_room(Bob) ::: Ann and Bob are in different rooms
in_room(Bob) == red ::: Bob is in the red room
"""
ROOMS = ROOMS_DECLARED + "\n# Options\n"

# Integer-valued function bounded by a declaration-section line; positions b + 1 reach outside the sort.
ORDER = program("""
    # Declarations
    people = EnumSort([Ann, Bob, Cid])
    slots = EnumSort([1, 2, 3])
    pos = Function([people] -> [int])
    at = Function([slots] -> [people])
    ForAll([p:people], And(1 <= pos(p), pos(p) <= 3))

    # Constraints
    Distinct([p:people], pos(p)) ::: one person per place
    pos(Ann) < pos(Bob) ::: Ann before Bob
    pos(Cid) == 1 ::: Cid first
    ForAll([s:slots], at(s) != at(s + 1)) ::: neighbours differ (at(4) is outside the sort)

    # Options
    Question ::: Which one of the following must be true?
    is_valid(pos(Ann) == 2) ::: (A)
    is_valid(pos(Bob) == 2) ::: (B)
    is_valid(pos(Cid) == 3) ::: (C)
""")

LSAT_PROGRAMS = {
    # Bob red -> Ann blue; Cid is free.
    "is_valid": ROOMS_DECLARED
    + "in_room(Cid) == in_room(Ann) ::: Cid is with Ann\n\n# Options\n"
    + (
        "is_valid(in_room(Ann) == red) ::: (A)\nis_valid(in_room(Ann) == blue) ::: (B)\n"
        "is_valid(in_room(Cid) == red) ::: (C)\n"
    ),
    "is_sat": ROOMS
    + (
        "is_sat(in_room(Ann) == red) ::: (A)\nis_sat(in_room(Cid) == red) ::: (B)\n"
        "is_sat(in_room(Ann) == in_room(Bob)) ::: (C)\n"
    ),
    "is_unsat": ROOMS
    + (
        "is_unsat(in_room(Ann) == blue) ::: (A)\nis_unsat(in_room(Cid) == red) ::: (B)\n"
        "is_unsat(in_room(Ann) == red) ::: (C)\n"
    ),
    "is_exception": ROOMS
    + (
        "is_exception(is_sat(in_room(Cid) == red)) ::: (A)\n"
        "is_exception(is_sat(in_room(Ann) == red)) ::: (B)\n"
        "is_exception(is_sat(in_room(Cid) == blue)) ::: (C)\n"
    ),
    "is_accurate_list": ROOMS
    + (
        "is_accurate_list([in_room(Cid) == red, in_room(Cid) == blue]) ::: (A)\n"
        "is_accurate_list([in_room(Ann) == red, in_room(Ann) == blue]) ::: (B)\n"
        "is_accurate_list([in_room(Cid) == red]) ::: (C)\n"
    ),
    "int-bounds-and-outside": ORDER,
}
LSAT_ANSWERS = {
    "is_valid": "B",
    "is_sat": "B",
    "is_unsat": "C",
    "is_exception": "B",
    "is_accurate_list": "A",
    "int-bounds-and-outside": "A",
}


def csp_cert(text: str) -> tuple[str, dict]:
    out = csp.solve(text, LIMITS)
    assert out.status is Status.PROVED and out.certificate is not None
    return out.answer, out.certificate


def lsat_cert(text: str) -> tuple[str, dict]:
    out = lsat.solve(text, LIMITS)
    assert out.status is Status.PROVED, out.error_message
    assert out.certificate is not None
    return out.answer, out.certificate


def verdict(cert: dict, language: str, text: str, answer: str | None, limits: Limits = LIMITS):
    # through the package dispatcher, as `symbolkg verify` calls it; a JSON round trip as in the Parquet column
    return check(json.loads(json.dumps(cert)), language=language, program=text, answer=answer, limits=limits)


def option(cert: dict, letter: str) -> dict:
    return next(o for o in cert["options"] if o["letter"] == letter)


# ----------------------------------------------------------------- verified certificates


@pytest.mark.parametrize("text, expected", [(CSP_TWO, "A"), (BOOKS, "A")])
def test_csp_certificate_is_verified(text, expected):
    answer, cert = csp_cert(text)
    assert answer == expected
    assert (cert["kind"], cert["version"], cert["producer"]) == ("constraint", 1, "z3")
    assert [c["id"] for c in cert["constraints"]] == [c.line for c in csp.parse(text).constraints]
    chosen = option(cert, answer)
    assert chosen["passes"] and chosen["facts"][0]["sat"] is False
    assert all(o["facts"][0]["sat"] for o in cert["options"] if o["letter"] != answer)
    v = verdict(cert, "logiclm-csp", text, answer)
    assert (v.status, v.reason, v.checker) == ("verified", "", "python-search")
    assert len(json.dumps(cert)) < cc.MAX_CERTIFICATE_CHARS


def test_csp_core_is_minimal_and_cites_both_needed_lines():
    _, cert = csp_cert(CSP_TWO)
    assert option(cert, "A")["facts"][0]["core"] == [6, 7]  # a > b, b > 1 (not c != "x")


@pytest.mark.parametrize("kind", sorted(LSAT_PROGRAMS))
def test_lsat_certificate_is_verified_for_each_question_type(kind):
    text = LSAT_PROGRAMS[kind]
    answer, cert = lsat_cert(text)
    assert answer == LSAT_ANSWERS[kind]
    v = verdict(cert, "logiclm-smt", text, answer)
    assert v.status == "verified", v.reason
    assert len(json.dumps(cert)) < cc.MAX_CERTIFICATE_CHARS


def test_lsat_int_functions_cite_their_bounds_and_outside_values():
    _, cert = lsat_cert(ORDER)
    fact = option(cert, "A")["facts"][0]
    # the ForAll range line of the declarations and pos(Cid) == 1 bound the integers; the core is minimal given them
    assert fact["sat"] is False and fact["bounds"] == [6, 11] and fact["core"] == [9, 10]
    assert cc.OUTSIDE in cert["model"]  # at(4) is read by line 12 and valued by Z3
    assert [entry[:2] for entry in cert["model"][cc.OUTSIDE]] == [["at", [4]]]


def test_lsat_text_of_a_constraint_is_the_line_without_comments():
    _, cert = lsat_cert(LSAT_PROGRAMS["is_sat"])
    assert {"id": 7, "text": "in_room(Ann) != in_room(Bob)"} in cert["constraints"]


# ----------------------------------------------------------------- corrupted certificates fail


def corrupt_model_csp(cert: dict) -> None:
    cert["model"]["a"], cert["model"]["b"] = 3, 3  # breaks a > b


def drop_needed_core_line_csp(cert: dict) -> None:
    option(cert, "A")["facts"][0]["core"] = [6]  # b > 1 is needed too


def alter_text_csp(cert: dict) -> None:
    cert["constraints"][0]["text"] = "a >= b"


def extra_core_line_csp(cert: dict) -> None:
    option(cert, "A")["facts"][0]["core"] = [6, 7, 8]


def counter_model_that_satisfies_option(cert: dict) -> None:
    option(cert, "B")["facts"][0]["model"] = {"a": 2, "b": 1, "c": "y"}  # breaks b > 1


def claim_rejected_passes(cert: dict) -> None:
    option(cert, "B")["passes"] = True


def drop_constraint(cert: dict) -> None:
    cert["constraints"].pop()


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (corrupt_model_csp, "breaks constraint line 6"),
        (drop_needed_core_line_csp, "is satisfiable"),
        (alter_text_csp, "cited constraint line 6 reads 'a >= b'"),
        (extra_core_line_csp, "not minimal"),
        (counter_model_that_satisfies_option, "breaks constraint line 7"),
        (claim_rejected_passes, "claimed to pass"),
        (drop_constraint, "leaves out the program's constraints on lines [8]"),
    ],
)
def test_corrupted_csp_certificate_fails(corrupt, message):
    answer, cert = csp_cert(CSP_TWO)
    bad = copy.deepcopy(cert)
    corrupt(bad)
    v = verdict(bad, "logiclm-csp", CSP_TWO, answer)
    assert v.status == "failed" and message in v.reason, v.reason


def test_csp_wrong_answer_fails():
    answer, cert = csp_cert(CSP_TWO)
    assert answer == "A"
    v = verdict(cert, "logiclm-csp", CSP_TWO, "B")
    assert v.status == "failed" and "row answers 'B'" in v.reason
    lying = copy.deepcopy(cert)
    lying["answer"] = "B"  # the certificate itself claims B: its facts show A passes and B fails
    v = verdict(lying, "logiclm-csp", CSP_TWO, "B")
    assert v.status == "failed"


def test_csp_certificate_of_another_program_fails():
    _, cert = csp_cert(CSP_TWO)
    changed = CSP_TWO.replace("b > 1 ::: b is not first", "b > 0 ::: b is anything")
    v = verdict(cert, "logiclm-csp", changed, "A")
    assert v.status == "failed" and "line 7" in v.reason


def lsat_model_breaks_constraint(cert: dict) -> None:
    cert["model"]["in_room"] = ["red", "red", "red"]  # Ann == Bob breaks line 7


def lsat_core_missing_line(cert: dict) -> None:
    option(cert, "A")["facts"][0]["core"] = []  # Ann red is excluded only with lines 7 and 8


def lsat_alter_text(cert: dict) -> None:
    cert["constraints"][1]["text"] = "in_room(Bob) == blue"


def lsat_model_outside_sort(cert: dict) -> None:
    option(cert, "B")["facts"][0]["model"]["in_room"] = ["red", "green", "red"]


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lsat_model_breaks_constraint, "breaks constraint line 7"),
        (lsat_core_missing_line, "is satisfiable"),
        (lsat_alter_text, "cited constraint line 8 reads 'in_room(Bob) == blue'"),
        (lsat_model_outside_sort, "not a value of sort rooms"),
    ],
)
def test_corrupted_lsat_certificate_fails(corrupt, message):
    text = LSAT_PROGRAMS["is_sat"]
    answer, cert = lsat_cert(text)
    assert option(cert, "A")["facts"][0]["core"] == [7, 8]
    bad = copy.deepcopy(cert)
    corrupt(bad)
    v = verdict(bad, "logiclm-smt", text, answer)
    assert v.status == "failed" and message in v.reason, v.reason


def test_lsat_wrong_answer_fails():
    text = LSAT_PROGRAMS["is_valid"]
    answer, cert = lsat_cert(text)
    assert answer == "B"
    assert verdict(cert, "logiclm-smt", text, "A").status == "failed"


def test_lsat_dropped_bound_is_unverifiable_not_verified():
    answer, cert = lsat_cert(ORDER)
    bad = copy.deepcopy(cert)
    option(bad, "A")["facts"][0]["bounds"] = []
    v = verdict(bad, "logiclm-smt", ORDER, answer)
    assert v.status == "unverifiable" and "no cited constraint bounds" in v.reason


def test_lsat_missing_outside_value_fails():
    answer, cert = lsat_cert(ORDER)
    bad = copy.deepcopy(cert)
    del bad["model"][cc.OUTSIDE]
    v = verdict(bad, "logiclm-smt", ORDER, answer)
    assert v.status == "failed" and "at(4)" in v.reason


# ----------------------------------------------------------------- limits


def test_search_past_the_time_limit_is_unverifiable():
    # Pigeonhole: g must be 7 because a..f take 1..6; the negation's core makes the search try every injection.
    names = "abcdefg"
    text = (
        "\n".join(
            ["Variables:"]
            + [f"{n} [IN] [1, 2, 3, 4, 5, 6, 7]" for n in names]
            + ["Constraints:"]
            + [f"AllDifferentConstraint([{', '.join(names)}])"]
            + [f"{n} <= 6" for n in names[:-1]]
            + ["Query:", "A) g == 7", "B) a == 1"]
        )
        + "\n"
    )
    answer, cert = csp_cert(text)
    assert answer == "A"
    v = verdict(cert, "logiclm-csp", text, answer, Limits(timeout_s=0.01))
    assert v.status == "unverifiable" and "exceeded" in v.reason


# ----------------------------------------------------------------- explain


@pytest.mark.parametrize(
    "language, text",
    [
        ("logiclm-csp", BOOKS),
        ("logiclm-csp", CSP_TWO),
        ("logiclm-smt", LSAT_PROGRAMS["is_sat"]),
        ("logiclm-smt", ORDER),
    ],
)
def test_explain_lists_exactly_the_certificates_constraints(language, text):
    answer, cert = (csp_cert if language == "logiclm-csp" else lsat_cert)(text)
    lines = cc.explain_lines(cert)
    cited = {
        cid for o in cert["options"] for f in o["facts"] if not f["sat"] for cid in f["core"] + f.get("bounds", [])
    }
    assert cc.constraint_ids_in_explanation(lines) == cited
    texts = {c["id"]: c["text"] for c in cert["constraints"]}
    for cid in cited:
        assert any(f"line {cid}: {texts[cid]}" in line for line in lines)
    assert lines[0].startswith(f"answer {answer}")
    assert any(line.startswith(f"option {answer} ") and "PASSES" in line for line in lines)
