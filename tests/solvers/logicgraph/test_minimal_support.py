"""Minimal supports: the elimination against brute force and the reference enumerator, its certificate
checker (tampered certificates fail), the Z3 recheck, the first-order variant."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random

import pytest

from symbolkg.solvers.logicgraph.dualize import reference_supports
from symbolkg.solvers.logicgraph.elimination import minimal_supports
from symbolkg.solvers.logicgraph.elimination_check import check_certificate
from symbolkg.solvers.logicgraph.fol_supports import minimal_supports_fol
from symbolkg.solvers.logicgraph.propositional import Formula, entails, parse
from symbolkg.solvers.logicgraph.support_check import recheck_supports
from symbolkg.solvers.logicgraph.supports_syntax import GOAL_LABEL, EliminationStep, LabelledClause, RecheckError
from symbolkg.solvers.outcomes import CertificateError


def kb(**texts: str) -> dict[str, Formula]:
    return {k: parse(v) for k, v in texts.items()}


def sets(*groups: str) -> set[frozenset[str]]:
    return {frozenset(g.split()) for g in groups}


def brute_force(premises: dict[str, Formula], goal: Formula) -> set[frozenset[str]]:
    """Every minimal support, by testing all subsets smallest first (the reference for small cases)."""
    ids = sorted(premises)
    found: list[frozenset[str]] = []
    for size in range(len(ids) + 1):
        for combo in itertools.combinations(ids, size):
            s = frozenset(combo)
            if not any(f <= s for f in found) and entails([premises[p] for p in s], goal):
                found.append(s)
    return set(found)


def solve(premises: dict[str, Formula], goal: str = "G"):
    result = minimal_supports(premises, parse(goal))
    assert result.complete and result.status == "complete" and result.rechecked
    check_certificate(premises, parse(goal), result)
    return result


def test_two_overlapping_supports_and_sorting() -> None:
    premises = kb(r1="A -> G", f1="A", r2="B -> G", f2="B", r3="C -> A", f3="C")
    result = solve(premises)
    assert set(result.supports) == sets("r1 f1", "r2 f2", "r1 r3 f3")
    assert [sorted(s) for s in result.supports] == [["f1", "r1"], ["f2", "r2"], ["f3", "r1", "r3"]]


def test_goal_is_a_premise() -> None:
    result = solve(kb(g="G", r="A -> G", a="A"))
    assert set(result.supports) == sets("g", "r a")


def test_irrelevant_premises_are_never_returned() -> None:
    premises = kb(r="A -> G", a="A", x="C", y="C -> D", z="(D | E)")
    result = solve(premises)
    assert set(result.supports) == sets("r a")
    assert result.premises_consistent is True


def test_inconsistent_premises_give_ex_falso_supports() -> None:
    # A and ¬A entail anything: with inconsistent premises the minimal inconsistent subsets are
    # supports too, and the result says the premises are inconsistent.
    premises = kb(a="A", na="-A", r="B -> G", b="B", c="C")
    result = solve(premises)
    assert set(result.supports) == sets("a na", "r b")
    assert result.premises_consistent is False
    assert set(reference_supports(premises, parse("G")).supports) == set(result.supports)


def test_non_minimal_proof_route_is_not_returned() -> None:
    # A forward chainer reaching G via A -> B -> G cites r2 and r3 as well as f; a naive "premises
    # of some proof" answer would add {f, r1, r2, r3}. Both {f, r1} and {f, r2, r3} are minimal, the
    # union of both routes is not.
    premises = kb(f="A", r1="A -> G", r2="A -> B", r3="B -> G", r4="(B | -A)")
    result = solve(premises)
    assert set(result.supports) == sets("f r1", "f r2 r3", "f r4 r3")
    assert all(not a < b for a in result.supports for b in result.supports)


def test_disjunction_elimination_and_reductio() -> None:
    # DE: (A | B), A -> G, B -> G; RAA-shaped: (X -> Y), (X -> -Y), (-X -> G)
    premises = kb(d="(A | B)", a="A -> G", b="B -> G", p="X -> Y", q="X -> -Y", n="(-X -> G)")
    result = solve(premises)
    assert set(result.supports) == sets("d a b", "p q n")


def test_valid_goal_has_the_empty_support_and_unentailed_goal_none() -> None:
    assert solve(kb(a="A"), "(G | -G)").supports == (frozenset(),)
    result = solve(kb(a="A", r="B -> G"))
    assert result.supports == ()
    assert result.certificate.steps  # the atoms were eliminated and no empty clause came out


@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force_and_the_reference_on_random_theories(seed: int) -> None:
    rng = random.Random(seed)
    names = ["A", "B", "C", "D", "G"]
    shapes = [
        "{x}",
        "-{x}",
        "({x} | {y})",
        "({x} -> {y})",
        "(-{x} -> {y})",
        "(-({x} -> {y}) -> {z})",
        "({x} -> -{y})",
        "({x} <-> {y})",
        "({x} & -{y})",
    ]
    for trial in range(12):
        premises = {}
        for i in range(rng.randint(4, 8)):
            x, y, z = rng.sample(names, 3)
            premises[f"p{i}"] = parse(rng.choice(shapes).format(x=x, y=y, z=z))
        result = minimal_supports(premises, parse("G"))
        expected = brute_force(premises, parse("G"))
        assert set(result.supports) == expected, (seed, trial, premises)
        assert set(reference_supports(premises, parse("G")).supports) == expected, (seed, trial, premises)
        check_certificate(premises, parse("G"), result)


def test_budget_stops_without_claiming_completeness() -> None:
    premises = kb(r1="A -> G", f1="A", r2="B -> G", f2="B")
    result = minimal_supports(premises, parse("G"), budget_s=0.0)
    assert result.status == "stopped_at_budget" and not result.complete
    assert set(result.supports) <= sets("r1 f1", "r2 f2")
    assert result.certificate is None
    with pytest.raises(CertificateError, match="no completeness certificate"):
        check_certificate(premises, parse("G"), result)


def _chains() -> dict[str, Formula]:
    return kb(r1="A -> G", f1="A", r2="B -> G", f2="B", r3="C -> G", f3="C", r0="(D -> A)", f0="D")


def test_certificate_checker_catches_a_dropped_or_an_added_support() -> None:
    premises = _chains()
    result = solve(premises)
    assert len(result.supports) == 4
    with pytest.raises(CertificateError, match="missing"):
        check_certificate(premises, parse("G"), dataclasses.replace(result, supports=result.supports[:3]))
    extra = (*result.supports, frozenset({"r1", "f1", "f2"}))
    with pytest.raises(CertificateError, match="extra"):
        check_certificate(premises, parse("G"), dataclasses.replace(result, supports=extra))


def test_certificate_checker_catches_a_missing_witness_and_a_missing_step() -> None:
    premises = _chains()
    result = solve(premises)
    cert = result.certificate
    # no added clause and no witness for a step's pairs: its resolvents are unaccounted for
    k = next(i for i, s in enumerate(cert.steps) if s.added)
    gutted = dataclasses.replace(cert.steps[k], added=(), dropped=(), witnesses=())
    steps = (*cert.steps[:k], gutted, *cert.steps[k + 1 :])
    with pytest.raises(CertificateError, match="not subsumed|still has literals|leaves"):
        check_certificate(
            premises, parse("G"), dataclasses.replace(result, certificate=dataclasses.replace(cert, steps=steps))
        )
    with pytest.raises(CertificateError, match="still has literals"):
        check_certificate(
            premises,
            parse("G"),
            dataclasses.replace(result, certificate=dataclasses.replace(cert, steps=cert.steps[:-1])),
        )


def test_certificate_checker_catches_a_forged_clause_and_a_forged_input() -> None:
    premises = _chains()
    result = solve(premises)
    cert = result.certificate
    # a resolvent whose label leaves out a parent's premise (it would make a smaller "support")
    k = next(i for i in range(cert.initial, len(cert.clauses)) if len(cert.clauses[i].label) > 1)
    forged = dataclasses.replace(cert.clauses[k], label=cert.clauses[k].label[1:])
    table = (*cert.clauses[:k], forged, *cert.clauses[k + 1 :])
    with pytest.raises(CertificateError, match="not the labelled resolvent"):
        check_certificate(
            premises, parse("G"), dataclasses.replace(result, certificate=dataclasses.replace(cert, clauses=table))
        )
    # an input clause that is no clause of its premise
    bogus = LabelledClause((("G", True),), ("f1",), None, "f1")
    table = (bogus, *cert.clauses[1:])
    with pytest.raises(CertificateError, match="input clause 0"):
        check_certificate(
            premises, parse("G"), dataclasses.replace(result, certificate=dataclasses.replace(cert, clauses=table))
        )
    step = EliminationStep("Nope", (), (), ())
    with pytest.raises(CertificateError, match="no atom"):
        check_certificate(
            premises,
            parse("G"),
            dataclasses.replace(result, certificate=dataclasses.replace(cert, steps=(step, *cert.steps))),
        )


def test_the_checker_does_not_import_the_producer() -> None:
    import ast
    from pathlib import Path

    import symbolkg.solvers.logicgraph.elimination_check as checker

    tree = ast.parse(Path(checker.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert not {
        m for m in imported if m and ("elimination" in m.split(".")[-1] and m != checker.__name__ or "dualize" in m)
    }
    assert imported & {"symbolkg.solvers.logicgraph.supports_syntax", "symbolkg.solvers.logicgraph.propositional"}


def test_recheck_rejects_non_minimal_and_non_entailing_sets() -> None:
    premises = kb(r="A -> G", a="A", x="C")
    recheck_supports(premises, parse("G"), [frozenset({"r", "a"})])
    with pytest.raises(RecheckError, match="not minimal"):
        recheck_supports(premises, parse("G"), [frozenset({"r", "a", "x"})])
    with pytest.raises(RecheckError, match="does not entail"):
        recheck_supports(premises, parse("G"), [frozenset({"r"})])
    with pytest.raises(RecheckError, match="not a premise"):
        recheck_supports(premises, parse("G"), [frozenset({"nope"})])


def test_bad_input_names_the_premise() -> None:
    with pytest.raises(TypeError, match="'p1'"):
        minimal_supports({"p1": "A -> G"}, parse("G"))  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="'p1'"):
        reference_supports({"p1": "A -> G"}, parse("G"))  # type: ignore[dict-item]


def test_result_serializes() -> None:
    result = solve(kb(r="A -> G", a="A", x="C"))
    doc = json.loads(json.dumps(result.to_json()))
    assert doc["supports"] == [["a", "r"]] and doc["status"] == "complete"
    assert doc["certificate"]["kind"] == "labelled-elimination"
    inputs = doc["certificate"]["clauses"][: doc["certificate"]["initial"]]
    assert {c[3] for c in inputs} == {"r", "a", "x", GOAL_LABEL}


# ------------------------------------------------------------------ first-order (Z3, SMT-LIB)

DECLS = """
(declare-sort U 0)
(declare-const a U)
(declare-const b U)
(declare-fun P (U) Bool)
(declare-fun Q (U) Bool)
(declare-fun R (U) Bool)
"""


def test_fol_two_supports_complete() -> None:
    premises = {
        "all_p_q": "(forall ((x U)) (=> (P x) (Q x)))",
        "p_a": "(P a)",
        "all_r_q": "(forall ((x U)) (=> (R x) (Q x)))",
        "r_a": "(R a)",
        "p_b": "(P b)",
    }
    result = minimal_supports_fol(premises, "(Q a)", declarations=DECLS, budget_s=20)
    assert result.status == "complete" and result.complete
    assert set(result.supports) == sets("all_p_q p_a", "all_r_q r_a")
    assert result.certificate.non_entailing  # the maximal non-entailing sets found on the way
    json.dumps(result.to_json())


def test_fol_budget_stop_and_parse_error() -> None:
    premises = {"all_p_q": "(forall ((x U)) (=> (P x) (Q x)))", "p_a": "(P a)"}
    result = minimal_supports_fol(premises, "(Q a)", declarations=DECLS, budget_s=0.0)
    assert result.status == "stopped_at_budget" and not result.complete and result.supports == ()
    with pytest.raises(ValueError, match="premise 'bad'"):
        minimal_supports_fol({"bad": "(P c)"}, "(Q a)", declarations=DECLS, budget_s=5)
