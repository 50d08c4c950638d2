"""Proof-tree certificates of the SymBa prover, and their bottom-up checker."""

from __future__ import annotations

import collections
import copy
import json
import random
import textwrap
from typing import Any

import pytest

from symbolkg.solvers.certificates import Verdict, check, derivation, symba_tree
from symbolkg.solvers.outcomes import Limits, Status
from symbolkg.solvers.symba import engine as symba
from tests.solvers.symba.test_symba_solver import GOLD_SETS, SYMBA, gold_program

LIMITS = Limits(timeout_s=10)


def program(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def solved(text: str) -> tuple[dict[str, Any], str]:
    out = symba.solve(text, LIMITS)
    assert out.status in (Status.PROVED, Status.DISPROVED), out
    assert out.certificate is not None, out
    json.dumps(out.certificate)  # JSON-serialisable, as the results column needs
    return out.certificate, out.answer


def verdict(cert: dict[str, Any], text: str, answer: str | None, limits: Limits = LIMITS) -> Verdict:
    """Through the package's dispatch (kind ``derivation``, format ``tree``), as ``symbolkg verify`` does."""
    return check(copy.deepcopy(cert), language="symba", program=text, answer=answer, limits=limits)


def nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    out, work = [], [tree]
    while work:
        node = work.pop()
        out.append(node)
        work.extend(reversed(node.get("children") or []))
    return out


# ProofWriter record 243 (left-recursive rule): a chain of four rules down to facts.
CHAIN = program(
    """
    is(mouse, blue). is(mouse, red).
    eats(X, mouse) :- is(X, red).
    is(mouse, nice) :- eats(X, mouse).
    is(bear, red) :- is(X, red), chases(X, bear).
    chases(X, bear) :- is(X, nice), is(X, blue).
    ?- eats(bear, mouse).
    """
)

BIRDS = program(
    """
    bird(tweety). bird(pingu).
    penguin(pingu).
    flies(X) :- bird(X), not penguin(X).
    ?- {query}.
    """
)

ARITH = program(
    """
    age(bob, 30).
    older(X, N) :- age(X, A), N = A + 5, N > 20.
    ?- older(bob, N).
    """
)


# --------------------------------------------------------------------------- verified


def test_rule_chain_proof_is_verified_and_explained():
    cert, answer = solved(CHAIN)
    assert answer == "True"
    assert cert["kind"] == "derivation" and cert["format"] == "tree" and cert["version"] == 1
    assert cert["producer"] == "symba-chainer" and cert["query"] == {"goal": "eats(bear, mouse)", "line": 6}
    tree = cert["tree"]
    assert (
        tree["goal"] == "eats(bear, mouse)" and tree["clause"] == "eats(X, mouse) :- is(X, red)." and tree["line"] == 2
    )
    assert tree["binding"] == {"X": "bear"}
    assert len(nodes(tree)) == 8 and {n["line"] for n in nodes(tree)} == {1, 2, 3, 4, 5}
    v = verdict(cert, CHAIN, "True")
    assert v.status == "verified", v
    assert v.checker == "bottom-up-evaluator"
    assert derivation.premise_lines(cert) == [2, 4, 1, 5, 3]
    lines = derivation.explain_lines(cert)
    assert lines[0] == "True: query eats(bear, mouse) (line 6), by symba-chainer"
    assert lines[1] == "eats(bear, mouse)  <- eats(X, mouse) :- is(X, red). [X=bear]  (line 2)"
    assert "    is(mouse, red)  <- fact, line 1" in lines  # two levels down


def test_proof_with_a_negation_leaf_is_verified():
    text = BIRDS.format(query="flies(tweety)")
    cert, answer = solved(text)
    assert answer == "True"
    leaf = cert["tree"]["children"][1]
    assert leaf == {"goal": "not penguin(tweety)", "naf": True, "atom": "penguin(tweety)"}
    v = verdict(cert, text, "True")
    assert v.status == "verified" and "1 negation leaf" in v.reason, v
    assert "  not penguin(tweety)  (negation as failure: penguin(tweety) has no proof)" in derivation.explain_lines(
        cert
    )


def test_closed_world_false_is_verified():
    text = BIRDS.format(query="flies(pingu)")
    cert, answer = solved(text)
    assert answer == "False"
    assert cert["closure"] == {"method": "negation_as_failure", "searched": "flies(pingu)"} and "tree" not in cert
    v = verdict(cert, text, "False")
    assert v.status == "verified", v
    assert derivation.premise_lines(cert) == []
    assert "found no proof" in derivation.explain_lines(cert)[1]


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("p(a).\n?- not p(b).\n", "True"),  # a negated query: one negation leaf
        ("p(a).\n?- not p(a).\n", "False"),  # ... whose atom has a proof
        ("r(X) :- s(X), not t(X, _).\ns(a). s(b). t(b, c).\n?- r(a).\n", "True"),  # a local variable under not
        ("r(X) :- s(X), not t(X, _).\ns(a). s(b). t(b, c).\n?- r(b).\n", "False"),
        # stratified by atom only
        ("is(a, big) :- not is(a, red).\nis(a, red) :- is(b, red).\n?- is(a, big).\n", "True"),
        ("p(X).\nq(Y) :- p(Y).\n?- q(Z).\n", "True"),  # a non-ground proof
        ("p(X) :- not q(X).\nq(a).\n?- p(b).\n", "True"),  # a variable bound by no positive literal
        ("p(a, b). p(c, c).\n?- p(X, X).\n", "True"),
        ("p(a, b).\n?- p(X, X).\n", "False"),
        ("p(a; b).\nq(X) :- p(X), not r(X).\nr(a).\n?- q(b).\n", "True"),  # pooling: two clauses on line 1
        (
            "-fly(X) :- penguin(X).\npenguin(pingu). bird(tweety).\nfly(X) :- bird(X), not -fly(X).\n?- fly(tweety).\n",
            "True",
        ),
        (ARITH, "True"),
    ],
)
def test_more_answers_are_verified(text, answer):
    cert, got = solved(text)
    assert got == answer
    v = verdict(cert, text, answer)
    assert v.status == "verified", v


# --------------------------------------------------------------------------- failed


def _failed(cert: dict[str, Any], text: str, answer: str, fragment: str) -> None:
    v = verdict(cert, text, answer)
    assert v.status == "failed", v
    assert fragment in v.reason, v.reason


def test_dropped_child_fails():
    cert, _ = solved(CHAIN)
    bad = copy.deepcopy(cert)
    del bad["tree"]["children"][0]["children"][1]  # is(bear, red) keeps is(mouse, red), loses chases(mouse, bear)
    _failed(bad, CHAIN, "True", "the clause has 2 body literal(s), the node 1 child(ren)")


def test_wrong_binding_fails():
    cert, _ = solved(CHAIN)
    bad = copy.deepcopy(cert)
    bad["tree"]["binding"] = {"X": "mouse"}
    _failed(
        bad, CHAIN, "True", "the binding gives the head `eats(mouse, mouse)`, not the node's goal `eats(bear, mouse)`"
    )
    missing = copy.deepcopy(cert)
    missing["tree"]["binding"] = {}
    _failed(missing, CHAIN, "True", "missing: ['X']")


def test_altered_clause_text_fails():
    cert, _ = solved(CHAIN)
    bad = copy.deepcopy(cert)
    bad["tree"]["clause"] = "eats(X, mouse) :- is(X, blue)."
    _failed(bad, CHAIN, "True", "cites the clause `eats(X, mouse) :- is(X, blue).` on line 2")
    moved = copy.deepcopy(cert)
    moved["tree"]["line"] = 3
    _failed(moved, CHAIN, "True", "on line 3, but the program has `is(mouse, nice) :- eats(X, mouse).` there")


def test_child_that_proves_another_atom_fails():
    cert, _ = solved(CHAIN)
    bad = copy.deepcopy(cert)
    fact = bad["tree"]["children"][0]["children"][0]
    assert fact["goal"] == "is(mouse, red)"
    fact["goal"] = "is(mouse, blue)"  # a fact of line 1, but not the premise the rule needs
    _failed(bad, CHAIN, "True", "needs `is(mouse, red)` here, the node proves `is(mouse, blue)`")


def test_negation_leaf_of_a_derivable_atom_fails():
    """The proof of flies(tweety), renamed to pingu: every step fits, but penguin(pingu) is derivable."""
    good, _ = solved(BIRDS.format(query="flies(tweety)"))
    text = BIRDS.format(query="flies(pingu)")
    forged = json.loads(json.dumps(good).replace("tweety", "pingu"))
    _failed(forged, text, "True", "`penguin(pingu)` is derivable")


def test_false_claimed_for_a_derivable_goal_fails():
    text = BIRDS.format(query="flies(tweety)")
    forged = symba_tree.certificate(symba.parse(text), _no_proof(), "False")
    _failed(forged, text, "False", "`flies(tweety)` is derivable")
    negated = "p(a).\n?- not p(b).\n"  # False for `not g` claims a proof of g
    _failed(
        symba_tree.certificate(symba.parse(negated), _no_proof(), "False"), negated, "False", "`p(b)` is not derivable"
    )


def test_builtin_leaf_that_does_not_hold_fails():
    cert, _ = solved(ARITH)
    bad = json.loads(json.dumps(cert).replace("35", "36"))  # N=36 everywhere: the instance fits, the sum does not
    _failed(bad, ARITH, "True", "`36 = 30 + 5` does not hold")


def test_answer_query_and_root_must_be_the_programs():
    cert, _ = solved(CHAIN)
    _failed(cert, CHAIN, "False", "the certificate proves 'True', the row answers 'False'")
    other = CHAIN.replace("?- eats(bear, mouse).", "?- eats(mouse, mouse).")
    _failed(cert, other, "True", "is not the program's, `eats(mouse, mouse)`")
    forged = copy.deepcopy(cert)
    forged["query"]["goal"] = "eats(mouse, mouse)"
    _failed(forged, other, "True", "the proof's root `eats(bear, mouse)` is not an instance of the query")


# --------------------------------------------------------------------------- unverifiable


def _no_proof() -> symba.ProofResult:
    return symba.ProofResult(proved=False, answers=[], tree=None, missing=[], kind="complete", steps=0, seconds=0.0)


def test_arithmetic_that_generates_values_without_end_is_unverifiable():
    text = "n(0).\nn(X) :- n(Y), X = Y + 1.\n?- n(-1).\n"
    cert = symba_tree.certificate(symba.parse(text), _no_proof(), "False")
    v = verdict(cert, text, "False", Limits(timeout_s=1))
    assert v.status == "unverifiable" and "did not close" in v.reason, v


def test_unbounded_domain_with_arithmetic_is_unverifiable():
    """SymBa proves this top-down (the bound argument shrinks); bottom-up, X ranges over all numbers."""
    text = "even(0).\neven(X) :- X > 0, Y = X - 2, even(Y).\nr :- not even(3).\n?- r.\n"
    cert, answer = solved(text)
    assert answer == "True"
    v = verdict(cert, text, "True")
    assert v.status == "unverifiable" and "X is bound by no positive literal" in v.reason, v


def test_recursion_through_negation_is_unverifiable():
    text = "p :- not q.\nq :- not p.\n?- p.\n"
    assert symba.solve(text, LIMITS).certificate is None  # the prover refuses it too
    cert = symba_tree.certificate(symba.parse(text), _no_proof(), "False")
    v = verdict(cert, text, "False")
    assert v.status == "unverifiable" and "no two-valued" in v.reason, v


def test_truncated_tree_is_unverifiable():
    cert, _ = solved(CHAIN)
    cut = copy.deepcopy(cert)
    cut["tree"]["children"][0]["truncated"] = True
    v = verdict(cut, CHAIN, "True")
    assert v.status == "unverifiable" and "truncated" in v.reason, v


def test_timeout_and_unanswered_programs_carry_no_certificate():
    out = symba.solve("n(0).\nn(X) :- n(Y), X = Y + 1.\n?- n(-1).\n", Limits(timeout_s=0.5))
    assert out.status == Status.TIMEOUT and out.certificate is None


# --------------------------------------------------------------------------- random programs


def _random_program(rng: random.Random) -> str:
    """Facts, rules with `not` and comparisons over three predicates and a few constants."""
    arity = {"p": 1, "q": 1, "r": 2, "t": 0}

    def atom(variables: bool) -> str:
        pred = rng.choice(list(arity))
        args = [
            rng.choice(["X", "Y", "Z"] if variables and rng.random() < 0.6 else ["a", "b", "c", "1", "2"])
            for _ in range(arity[pred])
        ]
        return f"{pred}({', '.join(args)})" if args else pred

    def clause() -> str:
        if rng.random() < 0.4:
            return atom(rng.random() < 0.1) + "."
        body = []
        for _ in range(rng.randint(1, 3)):
            x = rng.random()
            if x < 0.6:
                body.append(atom(True))
            elif x < 0.85:
                body.append("not " + atom(True))
            else:
                body.append(
                    f"{rng.choice('XYZ')} {rng.choice(['!=', '=', '<'])} {rng.choice(['a', '1', '2', 'X', 'Y'])}"
                )
        return f"{atom(True)} :- {', '.join(body)}."

    query = ("not " if rng.random() < 0.2 else "") + atom(True)
    return "\n".join([clause() for _ in range(rng.randint(2, 8))] + [f"?- {query}."]) + "\n"


def test_random_programs_answers_verify():
    """The top-down prover and the bottom-up checker agree on every answer of 400 random programs."""
    answered, disagreements = 0, []
    for seed in range(400):
        text = _random_program(random.Random(seed))
        out = symba.solve(text, Limits(timeout_s=2))
        if out.answer not in ("True", "False"):
            continue
        answered += 1
        v = verdict(out.certificate, text, out.answer, Limits(timeout_s=2))
        if v.status != "verified":
            disagreements.append((seed, out.answer, v.status, v.reason))
    assert answered > 300
    assert disagreements == []


# --------------------------------------------------------------------------- the SymBa gold programs


def test_gold_program_answers_all_verify():
    """All 1,000 gold records (502 True, 498 False under the closed world): every certificate verifies."""
    world = (
        {
            w["name"]: [s["statement"] for s in w["statements"]]
            for w in json.loads((SYMBA / "clutrr" / "world_data.json").read_text())
        }
        if (SYMBA / "clutrr").exists()
        else {}
    )
    counts: collections.Counter[str] = collections.Counter()
    reasons: collections.Counter[str] = collections.Counter()
    for name in GOLD_SETS:
        path = SYMBA / name / "test_data.json"
        if not path.exists():
            pytest.skip(f"SymBa data not found: {path}")
        for rec in json.loads(path.read_text()):
            text = gold_program(rec, world)
            out = symba.solve(text, LIMITS)
            if out.answer not in ("True", "False"):
                continue
            counts["answered"] += 1
            counts[out.answer] += 1
            v = verdict(out.certificate, text, out.answer)
            counts[v.status] += 1
            if v.status != "verified":
                reasons[f"{name} {rec['id']}: {v.status}: {v.reason}"] += 1
    print(dict(counts))
    assert counts["answered"] == 1000 and counts["True"] == 502
    assert counts["verified"] == counts["answered"], list(reasons)[:10]
