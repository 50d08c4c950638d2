"""Derivation certificates of the LP forward chainer, and their independent checker."""

from __future__ import annotations

import copy
import json
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from symbolkg.solvers.certificates import check, derivation
from symbolkg.solvers.lp import engine as lp
from symbolkg.solvers.lp import swipl
from symbolkg.solvers.outcomes import Limits, Status

DATA = Path(os.environ.get("SYMBOLKG_DATA", "/work/shared/data"))
LIMITS = Limits(timeout_s=10)


def program(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


# ProofWriter style, hand-checked: Bob is cold and quiet, Anne is red; quiet & cold -> smart,
# smart -> round, red -> not smart. So Round(Bob) True, Smart(Anne) False, Round(Anne) unknown.
WORLD = program(
    """
    Predicates:
    Cold($x, bool) ::: Is x cold?
    Quiet($x, bool) ::: Is x quiet?
    Smart($x, bool) ::: Is x smart?
    Round($x, bool) ::: Is x round?
    Red($x, bool) ::: Is x red?

    Facts:
    Cold(Bob, True) ::: Bob is cold.
    Quiet(Bob, True) ::: Bob is quiet.
    Red(Anne, True) ::: Anne is red.

    Rules:
    Quiet($x, True) && Cold($x, True) >>> Smart($x, True) ::: Quiet, cold things are smart.
    Smart($x, True) >>> Round($x, True) ::: Smart things are round.
    Red($x, True) >>> Smart($x, False) ::: Red things are not smart.

    Query:
    {query}
    """
)

# ProntoQA style: a class chain, and a relation with a variable only in the conclusion.
PRONTO = program(
    """
    Predicates:
    Jompus($x, bool)
    Wumpus($x, bool)
    Shy($x, bool)
    Sees($x, $y, bool)

    Facts:
    Jompus(Max, True) ::: Max is a jompus.
    Wumpus(Rex, True)

    Rules:
    Jompus($x, True) >>> Wumpus($x, True) ::: Jompuses are wumpuses.
    Wumpus($x, True) >>> Shy($x, False) && Sees($x, $y, True) ::: Wumpuses are not shy and see everything.

    Query:
    {query}
    """
)


def solved(text: str) -> tuple[dict[str, Any], str | None]:
    out = lp.solve(text, LIMITS)
    assert out.certificate is not None, out
    json.dumps(out.certificate)  # JSON-serialisable, as the results column needs
    return out.certificate, out.answer


def verdict(cert: dict[str, Any], text: str, answer: str | None, limits: Limits = LIMITS):
    return check(cert, language="logiclm-lp", program=text, answer=answer, limits=limits)


@pytest.mark.parametrize(
    ("text", "answer", "last"),
    [
        (WORLD.replace("{query}", "Round(Bob, True)"), "True", "Round(Bob, True)"),
        (WORLD.replace("{query}", "Smart(Anne, True) ::: Anne is smart."), "False", "Smart(Anne, False)"),
        (PRONTO.replace("{query}", "Shy(Max, True)"), "False", "Shy(Max, False)"),
        (PRONTO.replace("{query}", "Sees(Max, Rex, True)"), "True", "Sees(Max, Rex, True)"),
    ],
)
def test_true_and_false_answers_carry_a_proof_that_verifies(text: str, answer: str, last: str) -> None:
    cert, got = solved(text)
    assert got == answer and cert["answer"] == answer and cert["kind"] == "derivation"
    assert cert["producer"] == "forward-chainer" and cert["version"] == 1
    assert cert["steps"][-1]["atom"] == last
    v = verdict(cert, text, answer)
    assert (v.status, v.checker) == ("verified", "derivation-checker"), v


def test_a_proof_cites_program_lines_texts_and_bindings() -> None:
    text = WORLD.replace("{query}", "Round(Bob, True)")
    cert, _ = solved(text)
    steps = {s["atom"]: s for s in cert["steps"]}
    assert steps["Cold(Bob, True)"] == {
        "id": steps["Cold(Bob, True)"]["id"],
        "atom": "Cold(Bob, True)",
        "rule": None,
        "line": 9,
        "rule_text": "Cold(Bob, True)",
        "binding": {},
        "body": [],
    }
    smart = steps["Smart(Bob, True)"]
    assert (smart["rule"], smart["rule_text"], smart["binding"]) == (
        14,
        "Quiet($x, True) && Cold($x, True) >>> Smart($x, True)",
        {"$x": "Bob"},
    )
    assert smart["body"] == [steps["Quiet(Bob, True)"]["id"], steps["Cold(Bob, True)"]["id"]]
    assert cert["query"] == {"atom": "Round(Bob, True)", "line": 19}
    assert "Red(Anne, True)" not in steps  # only what the proof uses


def test_unknown_carries_the_closure_that_verifies() -> None:
    text = WORLD.replace("{query}", "Round(Anne, True)")
    cert, answer = solved(text)
    assert answer == "Unknown" and "steps" not in cert
    closure = cert["closure"]
    assert closure["method"] == "negation_as_failure" and closure["count"] == 6
    assert derivation.decode_atoms(closure["atoms"]) == {
        ("Cold", ("Bob",), True),
        ("Quiet", ("Bob",), True),
        ("Red", ("Anne",), True),
        ("Smart", ("Bob",), True),
        ("Round", ("Bob",), True),
        ("Smart", ("Anne",), False),
    }
    v = verdict(cert, text, "Unknown")
    assert v.status == "verified" and v.reason == "", v


def test_the_checker_does_not_run_the_forward_chainer(monkeypatch: pytest.MonkeyPatch) -> None:
    text = WORLD.replace("{query}", "Round(Bob, True)")
    cert, _ = solved(text)
    unknown_text = WORLD.replace("{query}", "Round(Anne, True)")
    unknown_cert, _ = solved(unknown_text)

    def forbidden(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the checker must not call the forward chainer")

    monkeypatch.setattr(lp, "forward_chain", forbidden)
    assert verdict(cert, text, "True").status == "verified"
    assert verdict(unknown_cert, unknown_text, "Unknown").status == "verified"


def test_an_inconsistent_program_gets_a_certificate_of_both_atoms() -> None:
    text = WORLD.replace("{query}", "Smart(Anne, True)").replace(
        "Red(Anne, True) ::: Anne is red.", "Red(Anne, True)\nQuiet(Anne, True)\nCold(Anne, True)"
    )
    out = lp.solve(text, LIMITS)
    assert out.status == Status.UNSAT and out.answer is None
    atoms = [s["atom"] for s in out.certificate["steps"]]
    assert {"Smart(Anne, True)", "Smart(Anne, False)"} <= set(atoms)
    assert verdict(out.certificate, text, None).status == "verified"
    # The same program cannot be certified as answering True: the checker finds the negation too.
    only_true = copy.deepcopy(out.certificate)
    only_true["answer"] = "True"
    only_true["steps"] = [s for s in only_true["steps"] if s["atom"] != "Smart(Anne, False)"]
    keep = [s for s in only_true["steps"] if s["atom"] == "Smart(Anne, True)"]
    only_true["steps"] = [s for s in only_true["steps"] if s["atom"] != "Smart(Anne, True)"] + keep
    v = verdict(only_true, text, "True")
    assert v.status == "failed" and "inconsistent" in v.reason, v


# ----------------------------------------------------------------------------- corruptions


TRUE_TEXT = WORLD.replace("{query}", "Round(Bob, True)")
UNKNOWN_TEXT = WORLD.replace("{query}", "Round(Anne, True)")


def _step(cert: dict[str, Any], atom: str) -> dict[str, Any]:
    return next(s for s in cert["steps"] if s["atom"] == atom)


def _drop_fact_step(c: dict[str, Any]) -> None:
    c["steps"] = [s for s in c["steps"] if s["atom"] != "Quiet(Bob, True)"]


def _drop_rule_step(c: dict[str, Any]) -> None:
    c["steps"] = [s for s in c["steps"] if s["atom"] != "Smart(Bob, True)"]


def _wrong_binding(c: dict[str, Any]) -> None:
    _step(c, "Smart(Bob, True)")["binding"] = {"$x": "Anne"}


def _extra_binding(c: dict[str, Any]) -> None:
    _step(c, "Smart(Bob, True)")["binding"]["$y"] = "Bob"


def _rule_text_altered(c: dict[str, Any]) -> None:
    _step(c, "Smart(Bob, True)")["rule_text"] = "Quiet($x, True) >>> Smart($x, True)"


def _rule_line_altered(c: dict[str, Any]) -> None:
    s = _step(c, "Smart(Bob, True)")
    s["rule"] = s["line"] = 15


def _fact_text_altered(c: dict[str, Any]) -> None:
    _step(c, "Cold(Bob, True)")["rule_text"] = "Cold(Anne, True)"


def _fact_not_in_program(c: dict[str, Any]) -> None:
    _step(c, "Cold(Bob, True)")["atom"] = "Cold(Anne, True)"


def _premises_swapped(c: dict[str, Any]) -> None:
    _step(c, "Smart(Bob, True)")["body"].reverse()


def _forward_reference(c: dict[str, Any]) -> None:
    c["steps"].insert(0, c["steps"].pop())  # the conclusion first: its premise is not yet proved


def _wrong_last_step(c: dict[str, Any]) -> None:
    c["steps"].pop()


def _answer_flipped(c: dict[str, Any]) -> None:
    c["answer"] = "False"


def _query_altered(c: dict[str, Any]) -> None:
    c["query"]["atom"] = "Round(Anne, True)"


@pytest.mark.parametrize(
    ("corrupt", "answer", "words"),
    [
        (_drop_fact_step, "True", "not an earlier step"),
        (_drop_rule_step, "True", "not an earlier step"),
        (_wrong_binding, "True", "binding gives"),
        (_extra_binding, "True", "variables"),
        (_rule_text_altered, "True", "cites the rule"),
        (_rule_line_altered, "True", "cites the rule"),
        (_fact_text_altered, "True", "cites the fact"),
        (_fact_not_in_program, "True", "not a fact of line"),
        (_premises_swapped, "True", "premises"),
        (_forward_reference, "True", "not an earlier step"),
        (_wrong_last_step, "True", "ends with"),
        (_answer_flipped, "False", "ends with"),  # the row says False too: the proof is of the wrong atom
        (_answer_flipped, "True", "the row answers"),
        (_query_altered, "True", "query"),
    ],
)
def test_a_corrupted_proof_fails(corrupt, answer: str, words: str) -> None:
    cert, _ = solved(TRUE_TEXT)
    assert verdict(cert, TRUE_TEXT, "True").status == "verified"
    bad = copy.deepcopy(cert)
    corrupt(bad)
    v = verdict(bad, TRUE_TEXT, answer)
    assert v.status == "failed" and words in v.reason, v


def test_a_proof_against_a_changed_program_fails() -> None:
    cert, _ = solved(TRUE_TEXT)
    changed = TRUE_TEXT.replace("Smart($x, True) >>> Round($x, True)", "Smart($x, True) >>> Red($x, True)")
    v = verdict(cert, changed, "True")
    assert v.status == "failed" and "query" not in v.reason, v  # the cited rule is gone


def _closure_lacks_derived(c: dict[str, Any]) -> None:
    c["closure"]["atoms"]["Round/True"].remove("Bob")  # Smart(Bob) & the rule on line 15 derive it
    c["closure"]["count"] -= 1


def _closure_lacks_fact(c: dict[str, Any]) -> None:
    c["closure"]["atoms"]["Red/True"].remove("Anne")
    c["closure"]["count"] -= 1


def _closure_holds_query(c: dict[str, Any]) -> None:
    c["closure"]["atoms"]["Round/True"].append("Anne")
    c["closure"]["count"] += 1


def _closure_count_wrong(c: dict[str, Any]) -> None:
    c["closure"]["count"] += 1


def _closure_not_nas(c: dict[str, Any]) -> None:
    c["closure"]["method"] = "guess"


@pytest.mark.parametrize(
    ("corrupt", "answer", "words"),
    [
        (_closure_lacks_derived, "Unknown", "Round(Bob, True), which it lacks"),
        (_closure_lacks_fact, "Unknown", "lacks the fact Red(Anne, True)"),
        (_closure_holds_query, "Unknown", "is derivable"),
        (_closure_count_wrong, "Unknown", "says 7"),
        (_closure_not_nas, "Unknown", "closure.method"),
        (lambda c: None, "True", "the row answers"),
    ],
)
def test_a_corrupted_closure_fails(corrupt, answer: str, words: str) -> None:
    cert, _ = solved(UNKNOWN_TEXT)
    bad = copy.deepcopy(cert)
    corrupt(bad)
    v = verdict(bad, UNKNOWN_TEXT, answer)
    assert v.status == "failed" and words in v.reason, v


def test_a_larger_closed_set_still_proves_underivability() -> None:
    # Any set containing the facts and closed under the rules contains the least fixpoint.
    cert, _ = solved(UNKNOWN_TEXT)
    cert["closure"]["atoms"]["Quiet/True"].append("Zed")
    cert["closure"]["atoms"]["Cold/True"].append("Zed")
    cert["closure"]["atoms"]["Smart/True"].append("Zed")
    cert["closure"]["atoms"]["Round/True"].append("Zed")
    cert["closure"]["count"] += 4
    assert verdict(cert, UNKNOWN_TEXT, "Unknown").status == "verified"
    cert["closure"]["atoms"]["Round/True"].remove("Zed")  # now Smart(Zed) -> Round(Zed) is missing
    cert["closure"]["count"] -= 1
    assert verdict(cert, UNKNOWN_TEXT, "Unknown").status == "failed"


def test_a_big_closure_stores_the_count_and_the_checker_recomputes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(derivation, "MAX_CLOSURE_ATOMS", 3)
    cert, _ = solved(UNKNOWN_TEXT)
    assert cert["closure"] == {"method": "negation_as_failure", "count": 6, "atoms": None}
    v = verdict(cert, UNKNOWN_TEXT, "Unknown")
    assert v.status == "verified" and "recomputed" in v.reason, v
    cert["closure"]["count"] = 5
    assert verdict(cert, UNKNOWN_TEXT, "Unknown").status == "failed"
    # Recomputing also catches a program whose query is derivable after all.
    true_cert = copy.deepcopy(cert)
    true_cert["closure"]["count"] = 6
    true_cert["query"]["atom"] = "Round(Bob, True)"
    assert verdict(true_cert, TRUE_TEXT, "Unknown").reason.endswith(
        "is derivable (it is in the closure), so the answer is not Unknown"
    )


def test_the_check_is_bounded_by_the_time_limit() -> None:
    names = [f"c{i}" for i in range(40)]  # 40 facts and 1,600 rule instances: thousands of checker steps
    text = (
        "Facts:\n"
        + "\n".join(f"P({n}, True)" for n in names)
        + ("\nRules:\nP($x, True) && P($y, True) >>> R($x, $y, True)\nQuery:\nQ(c1, True)\n")
    )
    cert, answer = solved(text)
    assert answer == "Unknown"
    v = verdict(cert, text, answer, Limits(timeout_s=1e-6))
    assert v.status == "unverifiable" and "did not finish" in v.reason, v


def test_other_languages_and_versions_are_unverifiable() -> None:
    cert, _ = solved(TRUE_TEXT)
    assert check(cert, language="prolog", program=TRUE_TEXT, answer="True").status == "unverifiable"
    cert["version"] = 99
    assert verdict(cert, TRUE_TEXT, "True").status == "unverifiable"


def test_an_unparsable_program_fails() -> None:
    cert, _ = solved(TRUE_TEXT)
    v = verdict(cert, "Facts:\nCold(Bob, bool)\nQuery:\nCold(Bob, True)\n", "True")
    assert v.status == "failed" and "does not parse" in v.reason


# ----------------------------------------------------------------------------- explain


def test_explain_lists_exactly_the_proof_steps_and_their_premises() -> None:
    cert, _ = solved(TRUE_TEXT)
    lines = derivation.explain_lines(cert)
    assert lines[0].startswith("True: query Round(Bob, True)")
    by_id = {s["id"]: s for s in cert["steps"]}
    assert len(lines) == 1 + len(cert["steps"])
    for line, step in zip(lines[1:], cert["steps"], strict=True):
        atom, _, why = line.partition("  <- ")
        assert atom == f"[{step['id']}] {step['atom']}"
        if step["rule"] is None:
            assert why == f"fact, line {step['line']}"
        else:
            assert why.startswith(step["rule_text"])
            cited = why.rsplit("from ", 1)[1].rstrip(")")
            assert [int(i.strip("[]")) for i in cited.split(", ")] == step["body"]
            assert all(i in by_id for i in step["body"])
    assert "Smart(Bob, True)  <- Quiet($x, True) && Cold($x, True) >>> Smart($x, True) [$x=Bob]" in "\n".join(lines)


def test_explain_of_unknown_lists_exactly_the_closure() -> None:
    cert, _ = solved(UNKNOWN_TEXT)
    lines = derivation.explain_lines(cert)
    assert "neither the query nor its negation is derivable" in lines[1]
    listed = {a.strip() for line in lines[2:] for a in line.split(";")}
    assert listed == {derivation.format_atom(a) for a in derivation.decode_atoms(cert["closure"]["atoms"])}


# ----------------------------------------------------------------------------- recorded programs


@pytest.mark.parametrize("dataset", ["ProntoQA", "ProofWriter"])
def test_every_recorded_answer_verifies_and_its_certificate_is_small(dataset: str) -> None:
    path = DATA / "logiclm" / "programs" / f"{dataset}_dev_gpt-4.json"
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    sizes = []
    for record in json.loads(path.read_text()):
        text = record["raw_logic_programs"][0]
        out = lp.solve(text, LIMITS)
        assert out.executed and out.certificate is not None, record["id"]
        sizes.append(len(json.dumps(out.certificate)))
        v = verdict(out.certificate, text, out.answer)
        assert v.status == "verified", (record["id"], v)
    assert max(sizes) < 20_000


# ----------------------------------------------------------------------------- SWI-Prolog


HAS_SWIPL = shutil.which(os.environ.get("SYMBOLKG_SWIPL") or "swipl") is not None
needs_swipl = pytest.mark.skipif(not HAS_SWIPL, reason="SWI-Prolog not installed")


@needs_swipl
@pytest.mark.parametrize(
    ("text", "answer"),
    [
        (TRUE_TEXT, "True"),
        (WORLD.replace("{query}", "Smart(Anne, True)"), "False"),
        (PRONTO.replace("{query}", "Sees(Max, Rex, True)"), "True"),
        (UNKNOWN_TEXT, "Unknown"),
    ],
)
def test_swipl_answers_carry_a_certificate_of_its_own_that_verifies(text: str, answer: str) -> None:
    out = swipl.solve(text, LIMITS)
    assert (out.answer, out.backend) == (answer, "swipl")
    cert = out.certificate
    assert cert is not None and cert["producer"] == "swipl" and cert["answer"] == answer
    v = check(cert, language="logiclm-lp-swipl", program=text, answer=answer, limits=LIMITS)
    assert v.status == "verified" and v.reason == "", v
    chainer = lp.solve(text, LIMITS).certificate
    if answer == "Unknown":  # the same least fixpoint, found by another engine
        assert derivation.decode_atoms(cert["closure"]["atoms"]) == derivation.decode_atoms(chainer["closure"]["atoms"])
    else:
        assert cert["steps"][-1]["atom"] == chainer["steps"][-1]["atom"]


@needs_swipl
def test_swipl_certificate_of_a_cyclic_program_ends_and_verifies() -> None:
    text = program(
        """
        Facts:
        Red(Bob, True)
        Rules:
        Red($x, True) >>> Rough($x, True)
        Rough($x, True) >>> Cold($x, True)
        Cold($x, True) >>> Red($x, True)
        Cold($x, True) && Rough($x, True) >>> Big($x, True)
        Query:
        Big(Bob, True)
        """
    )
    out = swipl.solve(text, LIMITS)
    assert out.answer == "True"
    assert [s["atom"] for s in out.certificate["steps"]] == [
        "Red(Bob, True)",
        "Rough(Bob, True)",
        "Cold(Bob, True)",
        "Big(Bob, True)",
    ]
    assert check(out.certificate, language="logiclm-lp-swipl", program=text, answer="True").status == "verified"


@needs_swipl
def test_swipl_inconsistency_and_a_cut_off_closure_are_certified() -> None:
    text = WORLD.replace("{query}", "Smart(Anne, True)").replace(
        "Red(Anne, True) ::: Anne is red.", "Red(Anne, True)\nQuiet(Anne, True)\nCold(Anne, True)"
    )
    out = swipl.solve(text, LIMITS)
    assert out.status == Status.UNSAT
    assert check(out.certificate, language="logiclm-lp-swipl", program=text, answer=None).status == "verified"
    # 1,640 atoms: more than the harness's 10,000 characters of output, so only the count is kept.
    names = [f"c{i}" for i in range(40)]
    big = (
        "Facts:\n"
        + "\n".join(f"P({n}, True)" for n in names)
        + ("\nRules:\nP($x, True) && P($y, True) >>> R($x, $y, True)\nQuery:\nQ(c1, True)\n")
    )
    out = swipl.solve(big, LIMITS)
    assert out.answer == "Unknown" and out.certificate["closure"] == {
        "method": "negation_as_failure",
        "count": 1640,
        "atoms": None,
    }
    v = check(out.certificate, language="logiclm-lp-swipl", program=big, answer="Unknown", limits=LIMITS)
    assert v.status == "verified" and "recomputed" in v.reason, v
