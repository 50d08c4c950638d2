"""Tests of SMT-LIB2 scripts on Z3 (symbolkg.solvers.smt.smtlib): verdicts, errors with lines, limits, goals."""

from __future__ import annotations

import time

import pytest
import z3

from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError, SolveRequest, Status
from symbolkg.solvers.registry import run
from symbolkg.solvers.smt import smtlib

# Every answer test below finishes far inside this limit: the slowest call takes 0.21 s (measured:
# test_a_timed_out_check_then_a_quick_one_answers, its 0.2 s per-check timeout included).
LIMITS = Limits(timeout_s=10)

# x^3 + y^3 = z^3 with x, y, z > 1 has no integer solution (Euler's proof of Fermat's n = 3 case),
# so Z3 can never answer sat, and refuting it takes that proof, beyond Z3's nonlinear integer
# arithmetic (the real relaxation has solutions, e.g. x = y = 2, z = 16^(1/3), so branching on it
# never closes). Its check only ends at a timeout: measured, still running at a 30 s limit.
FERMAT = """(declare-const x Int)
(declare-const y Int)
(declare-const z Int)
(assert (> x 1))
(assert (> y 1))
(assert (> z 1))
(assert (= (+ (* x x x) (* y y y)) (* z z z)))
(check-sat)
"""


def test_sat_with_model_in_proof() -> None:
    out = smtlib.solve("(declare-const x Int)\n(assert (> x 2))\n(assert (< x 4))\n(check-sat)", LIMITS)
    assert (out.status, out.answer) == (Status.SAT, "sat")
    assert out.executed
    assert out.backend == "z3"
    assert out.seconds > 0
    # x is forced to 3, and the model is appended because the script did not ask for it.
    assert "define-fun x () Int" in out.proof and "3" in out.proof


def test_unsat() -> None:
    out = smtlib.solve("(declare-const p Bool)\n(assert p)\n(assert (not p))\n(check-sat)", LIMITS)
    assert (out.status, out.answer) == (Status.UNSAT, "unsat")
    assert out.error_kind is None


def test_unsat_core_when_requested() -> None:
    script = """(set-option :produce-unsat-cores true)
(declare-const x Int)
(assert (! (> x 2) :named big))
(assert (! (< x 0) :named negative))
(assert (! (> x -5) :named loose))
(check-sat)
(get-unsat-core)"""
    out = smtlib.solve(script, LIMITS)
    assert out.status is Status.UNSAT
    assert "big" in out.proof and "negative" in out.proof


def test_last_check_sat_decides_and_push_pop_scopes() -> None:
    script = """(declare-const x Int)
(assert (> x 0))
(push 1)
(assert (< x 0))
(check-sat)
(pop 1)
(check-sat)
(get-value (x))"""
    out = smtlib.solve(script, LIMITS)
    # The first check-sat (inside the scope) is unsat, the last one (after pop) sat.
    assert (out.status, out.answer) == (Status.SAT, "sat")
    assert out.proof.splitlines()[:2] == ["unsat", "sat"]
    assert "((x " in out.proof


def test_last_check_sat_unsat_after_sat() -> None:
    out = smtlib.solve("(declare-const x Int)\n(check-sat)\n(assert (distinct x x))\n(check-sat)", LIMITS)
    assert out.answer == "unsat"


def test_check_sat_assuming() -> None:
    script = "(declare-const p Bool)\n(declare-const q Bool)\n(assert (=> p q))\n(check-sat-assuming (p (not q)))"
    assert smtlib.solve(script, LIMITS).answer == "unsat"


def test_get_model_after_unsat_does_not_spoil_the_verdict() -> None:
    out = smtlib.solve("(assert false)\n(check-sat)\n(get-model)", LIMITS)
    assert (out.status, out.answer) == (Status.UNSAT, "unsat")
    assert "model is not available" in out.proof


def test_print_success_is_filtered() -> None:
    out = smtlib.solve("(set-option :print-success true)\n(declare-const p Bool)\n(assert p)\n(check-sat)", LIMITS)
    assert out.answer == "sat"
    assert "success" not in out.proof


def test_script_without_check_sat_has_no_answer() -> None:
    out = smtlib.solve("(declare-const p Bool)\n(assert p)", LIMITS)
    assert out.status is Status.UNKNOWN
    assert out.answer is None
    assert out.error_kind == ErrorKind.NO_ANSWER.value
    assert "(check-sat)" in out.error_message


def test_exit_stops_the_script() -> None:
    out = smtlib.solve("(assert false)\n(check-sat)\n(exit)\n(assert (undeclared))\n(check-sat)", LIMITS)
    assert out.answer == "unsat"


def test_quantifier_script_uses_the_same_interpreter() -> None:
    script = """(declare-fun f (Int) Int)
(assert (forall ((x Int)) (= (f x) (+ x 1))))
(assert (= (f 2) 4))
(check-sat)"""
    assert smtlib.solve(script, LIMITS).answer == "unsat"


# --------------------------------------------------------------------------- errors with lines


@pytest.mark.parametrize(
    ("script", "line", "kind", "fragment"),
    [
        ("(declare-const x Int)\n(assert (> x 2)\n(check-sat)", 2, "syntax", "1 ')' missing"),
        ("(declare-const x Int)\n(assert (> x 2)))\n(check-sat)", 2, "syntax", "unexpected ')'"),
        ("(declare-const x Int)\n(frobnicate x)\n(check-sat)", 2, "syntax", "unknown command 'frobnicate'"),
        ("(declare-const x Int)\nassert (> x 2)\n(check-sat)", 2, "syntax", "expected '(' to start a command"),
        ('(echo "unterminated)\n(check-sat)', 1, "syntax", "string literal is not closed"),
        ('(include "other.smt2")', 1, "unsupported", "include"),
        ('(set-option :regular-output-channel "/tmp/out")', 1, "unsupported", "files"),
        ("(declare-const x Int)\n; goal: (> x 1)\n; goal: (> x 2)", 3, "syntax", "second '; goal:'"),
        ("(declare-const x Int)\n; goal: (> x 1", 2, "syntax", "unbalanced"),
    ],
)
def test_malformed_scripts_fail_before_running(script: str, line: int, kind: str, fragment: str) -> None:
    out = smtlib.solve(script, LIMITS)
    assert out.status is Status.PARSE_ERROR
    assert out.error_line == line
    assert out.error_kind == kind
    assert fragment in out.error_message
    with pytest.raises(ProgramError) as info:
        smtlib.parse(script)
    assert info.value.line == line


@pytest.mark.parametrize(
    ("script", "line", "kind", "fragment"),
    [
        # Undeclared constant on line 3.
        (
            "(declare-const x Int)\n(assert (> x 2))\n(assert (< y 0))\n(check-sat)",
            3,
            "undeclared",
            "unknown constant y",
        ),
        # The bad term is on line 4 of a command that starts on line 2: Z3's line is kept.
        ("(declare-const x Int)\n(assert\n  (and (> x 0)\n       (+ x 1)))\n(check-sat)", 4, "type", ""),
        ("(declare-const x Int)\n(assert (+ x 1))\n(check-sat)", 2, "type", "not Boolean"),
        ("(declare-const x Int)\n(declare-const x Int)\n(check-sat)", 2, "syntax", "already declared"),
        ("(declare-const x Int)\n(assert (> x 1))\n; goal: (> q 0)", 3, "undeclared", "goal"),
    ],
)
def test_semantic_errors_from_z3_carry_the_line(script: str, line: int, kind: str, fragment: str) -> None:
    out = smtlib.solve(script, LIMITS)
    assert out.status is Status.PARSE_ERROR
    assert not out.executed
    assert out.error_line == line
    assert out.error_kind == kind
    assert fragment in out.error_message


def test_error_line_survives_comments_and_blank_lines() -> None:
    script = "; a comment with (parentheses\n\n(declare-const x Int) ; trailing\n\n\n(assert (> x z))\n(check-sat)"
    out = smtlib.solve(script, LIMITS)
    assert (out.status, out.error_line) == (Status.PARSE_ERROR, 6)
    assert "(in (assert (> x z)))" in out.error_message


# --------------------------------------------------------------------------- time limit and isolation


@pytest.mark.timeout(60)  # an unenforced limit would never return; fail in a minute, not ten
def test_hard_nonlinear_problem_times_out_promptly() -> None:
    start = time.perf_counter()
    out = smtlib.solve(FERMAT, Limits(timeout_s=1.0))
    elapsed = time.perf_counter() - start
    assert out.status is Status.TIMEOUT
    assert out.error_kind == ErrorKind.TIMEOUT.value
    assert out.error_line == 8
    assert not out.executed
    assert elapsed < 11.0  # idle: 1.01 s; the bound is 10x that


def test_script_timeout_option_is_per_check_and_not_global() -> None:
    before = z3.get_param("timeout")
    start = time.perf_counter()
    # The script's 200 ms ends the check (idle: 0.22 s in all); without it the 60 s call limit would.
    # The bound is 10x the idle time and far below those 60 s.
    out = smtlib.solve("(set-option :timeout 200)\n" + FERMAT, Limits(timeout_s=60))
    assert out.status is Status.TIMEOUT
    assert time.perf_counter() - start < 5.0
    assert z3.get_param("timeout") == before


def test_the_call_limit_caps_a_larger_script_timeout() -> None:
    start = time.perf_counter()
    out = smtlib.solve("(set-option :timeout 60000)\n" + FERMAT, Limits(timeout_s=0.5))
    assert out.status is Status.TIMEOUT
    # Idle: 0.51 s. The bound is 10x that, and far below the script's own 60 s.
    assert time.perf_counter() - start < 6.0


def test_a_timed_out_check_then_a_quick_one_answers() -> None:
    # The per-check timeout lets the script go on; the last check-sat decides.
    script = "(set-option :timeout 200)\n" + FERMAT + "(reset)\n(assert false)\n(check-sat)\n"
    out = smtlib.solve(script, Limits(timeout_s=10))
    assert (out.status, out.answer) == (Status.UNSAT, "unsat")
    assert out.proof.splitlines()[0].startswith("unknown")


def test_global_z3_options_are_reset_after_the_call() -> None:
    out = smtlib.solve("(set-option :smt.mbqi false)\n(declare-const p Bool)\n(assert p)\n(check-sat)", LIMITS)
    assert out.answer == "sat"
    assert z3.get_param("smt.mbqi") == "true"


# --------------------------------------------------------------------------- goal convention


@pytest.mark.parametrize(
    ("goal", "status", "answer"),
    [
        ("(> x 0)", Status.PROVED, "True"),  # x > 1 entails x > 0
        ("(< x 0)", Status.DISPROVED, "False"),  # x > 1 entails not (x < 0)
        ("(> x 5)", Status.UNKNOWN, "Unknown"),  # x = 2 and x = 6 both fit
    ],
)
def test_goal_comment_asks_for_entailment(goal: str, status: Status, answer: str) -> None:
    out = smtlib.solve(f"(declare-const x Int)\n(assert (> x 1))\n; goal: {goal}", LIMITS)
    assert (out.status, out.answer) == (status, answer)
    assert out.executed


def test_goal_with_contradictory_premises() -> None:
    out = smtlib.solve("(declare-const p Bool)\n(assert p)\n(assert (not p))\n;; Goal: p", LIMITS)
    assert out.status is Status.UNSAT
    assert out.answer is None
    assert out.error_kind == "no_answer"
    assert "contradictory" in out.error_message


def test_goal_over_uninterpreted_predicates() -> None:
    # All men are mortal; Socrates is a man |- Socrates is mortal.
    script = """(declare-sort Thing 0)
(declare-fun man (Thing) Bool)
(declare-fun mortal (Thing) Bool)
(declare-const socrates Thing)
(assert (forall ((t Thing)) (=> (man t) (mortal t))))
(assert (man socrates))
; goal: (mortal socrates)"""
    out = smtlib.solve(script, LIMITS)
    assert (out.status, out.answer) == (Status.PROVED, "True")


def test_registry_runs_the_language() -> None:
    request = SolveRequest(problem_id="p", language="smtlib2", text="(assert true)\n(check-sat)", limits=LIMITS)
    out = run(request)
    assert (out.status, out.answer) == (Status.SAT, "sat")


def test_oversized_script_is_refused_quickly() -> None:
    start = time.perf_counter()
    out = smtlib.solve("(assert true)\n" * 200_000, LIMITS)
    assert (out.status, out.error_kind, out.error_line) == (Status.PARSE_ERROR, "unsupported", 1)
    assert time.perf_counter() - start < 1.0  # idle: 0.002 s (refused before Z3 reads it); > 10x


def test_strings_with_escaped_quotes_and_parentheses() -> None:
    out = smtlib.solve('(echo "a ""quoted"" (paren")\n(assert true)\n(check-sat)', LIMITS)
    assert out.answer == "sat"
    assert "quoted" in out.proof
