"""Tests of the "prolog" language and the SWI-Prolog backend (a real swipl process)."""

from __future__ import annotations

import os
import shutil
import stat
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from symbolkg.solvers.lp import swipl as lp
from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError, Status
from symbolkg.solvers.prolog import language as prolog

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("SYMBOLKG_SWIPL") or "swipl") is None, reason="SWI-Prolog not installed"
)

# Every answer test below finishes far inside this limit: the slowest call takes 0.16 s (measured:
# test_clpfd_and_residual_constraints, library loading included), 30x under it.
LIMITS = Limits(timeout_s=5)


@pytest.fixture(scope="module")
def session() -> Iterator[prolog.QueryHarness]:
    with prolog.QueryHarness() as s:
        yield s


def program(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


FAMILY = program(
    """
    parent(tom, bob).
    parent(bob, ann).
    parent(bob, pat).
    grandparent(X, Z) :- parent(X, Y), parent(Y, Z).
    """
)


def test_solutions_and_bindings(session: prolog.QueryHarness) -> None:
    out = prolog.solve(FAMILY + "% query: grandparent(tom, Who)\n", LIMITS, session=session)
    assert (out.status, out.answer) == (Status.PROVED, "True")
    assert out.proof.splitlines()[0] == "Who = ann"  # first solution
    assert "2 solutions" in out.proof
    assert out.backend == "swipl" and out.seconds > 0


def test_run_query_enumerates_in_order_with_variable_names(session: prolog.QueryHarness) -> None:
    result = prolog.run_query(FAMILY, "parent(P, C)", LIMITS, session=session)
    assert result.status == "ok" and result.complete
    assert [s.bindings for s in result.solutions] == [
        (("P", "tom"), ("C", "bob")),
        (("P", "bob"), ("C", "ann")),
        (("P", "bob"), ("C", "pat")),
    ]


def test_max_answers_bounds_enumeration(session: prolog.QueryHarness) -> None:
    result = prolog.run_query("", "between(1, inf, X)", Limits(timeout_s=5, max_answers=3), session=session)
    assert [s.bindings[0][1] for s in result.solutions] == ["1", "2", "3"]
    assert not result.complete


def test_failure_is_false_closed_world(session: prolog.QueryHarness) -> None:
    out = prolog.solve(FAMILY + "% query: grandparent(ann, _)\n", LIMITS, session=session)
    assert (out.status, out.answer) == (Status.DISPROVED, "False")


def test_ground_goal_proof_is_true(session: prolog.QueryHarness) -> None:
    out = prolog.solve(FAMILY + "% query: grandparent(tom, pat).\n", LIMITS, session=session)  # trailing '.' allowed
    assert (out.answer, out.proof) == ("True", "true")


def test_clpfd_and_residual_constraints(session: prolog.QueryHarness) -> None:
    text = ":- use_module(library(clpfd)).\nsmall(X) :- X in 1..3, X #> 1.\n% query: small(X), label([X])\n"
    out = prolog.solve(text, LIMITS, session=session)
    assert out.proof.splitlines()[0] == "X = 2"
    result = prolog.run_query(":- use_module(library(clpfd)).\n", "X #> 3", LIMITS, session=session)
    assert result.solutions[0].residual  # the domain constraint on X


def test_printed_output_is_captured_not_mixed_into_the_protocol(session: prolog.QueryHarness) -> None:
    result = prolog.run_query("p(a).\n", 'p(X), write(hello), nl, format("~w~n", [X])', LIMITS, session=session)
    assert result.status == "ok" and result.output == "hello\na\n"


# ----------------------------------------------------------------------------- errors


def test_syntax_error_reported_by_swipl_with_line(session: prolog.QueryHarness) -> None:
    text = "p(a).\np(b).\nq(X) :- p(X) p(X).\n% query: q(X)\n"
    out = prolog.solve(text, LIMITS, session=session)
    assert (out.status, out.error_kind, out.error_line) == (Status.PARSE_ERROR, "syntax", 3)
    assert "Operator expected" in out.error_message


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("p(a).\nq(X) :- p(X.\nr(b).\n% query: q(X)\n", 2, "not closed"),
        ("p(a).\nq(X) :- p(X)\n% query: q(X)\n", 2, "does not end with a period"),
        ("p(a)).\n% query: p(X)\n", 1, "no open bracket"),
        ("p('abc).\n% query: p(X)\n", 1, "unterminated quoted"),
        ("p([a, b)).\n% query: p(X)\n", 1, "closes the '['"),
    ],
)
def test_lexical_errors_are_caught_before_running(text: str, line: int, words: str) -> None:
    with pytest.raises(ProgramError) as info:
        prolog.parse(text)
    assert info.value.line == line and words in info.value.message
    out = prolog.solve(text, LIMITS)
    assert (out.status, out.error_line) == (Status.PARSE_ERROR, line)


def test_lexer_accepts_tricky_valid_syntax(session: prolog.QueryHarness) -> None:
    text = program(
        """
        /* block (comment) with ( unbalanced */
        quote(0'a, 0''', 0'\\n, "it's", 'don''t', `codes`, 16'FF, 1.5e3).  % ( in comment
        univ(T, L) :- T =.. L.
        end('.').
        % query: quote(A, B, C, D, E, F, G, H), univ(f(x), L), end(P)
        """
    )
    prolog.parse(text)  # must not raise
    out = prolog.solve(text, LIMITS, session=session)
    assert out.answer == "True", out.error_message


def test_query_line_is_required_and_unique() -> None:
    with pytest.raises(ProgramError) as info:
        prolog.parse("p(a).\n")
    assert info.value.kind is ErrorKind.NO_ANSWER
    with pytest.raises(ProgramError) as info:
        prolog.parse("p(a).\n% query: p(X)\n% query: p(a)\n")
    assert (info.value.kind, info.value.line) == (ErrorKind.NO_ANSWER, 3)
    out = prolog.solve("p(a).\n", LIMITS)
    assert (out.status, out.error_kind) == (Status.PARSE_ERROR, "no_answer")


def test_query_syntax_error_points_at_query_line(session: prolog.QueryHarness) -> None:
    out = prolog.solve("p(a).\n% query: p(X\n", LIMITS, session=session)
    assert (out.status, out.error_kind, out.error_line) == (Status.PARSE_ERROR, "syntax", 2)


def test_undefined_predicate_is_undeclared(session: prolog.QueryHarness) -> None:
    out = prolog.solve("p(X) :- q(X, 1).\n% query: p(X)\n", LIMITS, session=session)
    assert (out.status, out.error_kind) == (Status.RUNTIME_ERROR, "undeclared")
    assert "q/2" in out.error_message
    assert "tmp-" not in out.error_message  # the harness's module name is hidden


def test_dynamic_declaration_makes_an_empty_predicate_fail(session: prolog.QueryHarness) -> None:
    out = prolog.solve(":- dynamic q/1.\np(X) :- q(X).\n% query: p(X)\n", LIMITS, session=session)
    assert out.answer == "False"


def test_runtime_exception_is_a_solver_error(session: prolog.QueryHarness) -> None:
    out = prolog.solve("p(X) :- X is 1/0.\n% query: p(X)\n", LIMITS, session=session)
    assert (out.status, out.error_kind) == (Status.RUNTIME_ERROR, "solver")
    assert "zero_divisor" in out.error_message


def test_redefining_a_builtin_is_reported_with_line(session: prolog.QueryHarness) -> None:
    out = prolog.solve("p(a).\nlength(a, b).\n% query: p(X)\n", LIMITS, session=session)
    assert (out.status, out.error_line) == (Status.RUNTIME_ERROR, 2)
    assert "length/2 is a built-in" in out.error_message


# ----------------------------------------------------------------------------- limits


def test_left_recursion_terminates_with_tabling(session: prolog.QueryHarness) -> None:
    text = program(
        """
        :- table path/2.
        edge(a, b).
        edge(b, c).
        edge(c, a).
        path(X, Y) :- path(X, Z), edge(Z, Y).
        path(X, Y) :- edge(X, Y).
        """
    )
    result = prolog.run_query(text, "path(a, Y)", LIMITS, session=session)
    assert result.status == "ok"
    assert sorted(s.bindings[0][1] for s in result.solutions) == ["a", "b", "c"]
    assert prolog.solve(text + "% query: path(a, d)\n", LIMITS, session=session).answer == "False"


def test_loop_without_tabling_times_out_then_the_process_still_works(session: prolog.QueryHarness) -> None:
    prolog.run_query("", "true", LIMITS, session=session)
    pid = session.pid
    # p :- p. recurses without end: stopped by the depth bound (in 3 ms, measured; 600x inside
    # the time limit, which is what makes the reason "depth limit" on any machine), reported as TIMEOUT.
    out = prolog.solve("p :- p.\n% query: p\n", Limits(timeout_s=2), session=session)
    assert (out.status, out.error_kind) == (Status.TIMEOUT, "timeout")
    assert "depth limit" in out.error_message
    # a loop at constant depth (repeat succeeds forever, fail sends it back): only the time limit stops it
    t0 = time.monotonic()
    out = prolog.solve("p :- repeat, fail.\n% query: p\n", Limits(timeout_s=0.5), session=session)
    assert out.status is Status.TIMEOUT and time.monotonic() - t0 < 6.0  # idle: 0.50 s; 10x that
    # infinite recursion building ever larger terms (stopped by the depth bound in 4 ms, measured)
    out = prolog.solve("f(X) :- f(s(X)).\n% query: f(z)\n", Limits(timeout_s=2), session=session)
    assert out.status is Status.TIMEOUT
    # the same process answers the next call
    assert prolog.solve(FAMILY + "% query: parent(tom, bob)\n", LIMITS, session=session).answer == "True"
    assert session.pid == pid


def test_solutions_found_before_a_timeout_still_prove_the_goal(session: prolog.QueryHarness) -> None:
    # After the first solution X = a, the second clause loops at constant depth (repeat succeeds
    # forever, fail sends it back), so the search can only end at the time limit, on any machine.
    # (A list-length query used before ends by itself once the lists reach the depth limit, in 7.6 s
    # measured: only 15x the limit, so a fast enough machine would see "depth limit", not "time limit".)
    text = "q(a).\nq(_) :- repeat, fail.\n% query: q(X)\n"
    out = prolog.solve(text, Limits(timeout_s=0.5), session=session)
    assert (out.status, out.answer) == (Status.PROVED, "True")
    assert out.proof.startswith("X = a") and "time limit" in out.proof


def test_stack_exhaustion_is_memory(session: prolog.QueryHarness) -> None:
    # The 64 MB stack overflows after 2 ms (measured), far inside the 5 s limit: MEMORY on any machine.
    out = prolog.solve(
        "p(L) :- length(L, 200000000).\n% query: p(_)\n", Limits(timeout_s=5, memory_mb=64), session=session
    )
    assert (out.status, out.error_kind) == (Status.MEMORY, "memory")
    assert prolog.solve("p(1).\n% query: p(1)\n", LIMITS, session=session).answer == "True"


def test_programs_do_not_leak_into_each_other(session: prolog.QueryHarness) -> None:
    assert prolog.solve("secret(42).\n% query: secret(X)\n", LIMITS, session=session).answer == "True"
    out = prolog.solve("other(1).\n% query: secret(X)\n", LIMITS, session=session)
    assert out.error_kind == "undeclared"


def test_unanswered_request_kills_and_restarts_the_process(tmp_path: Path) -> None:
    # A stand-in for a swipl that hangs: it greets like the harness, then never answers.
    fake = tmp_path / "hung-swipl"
    fake.write_text('#!/bin/sh\necho \'{"status": "ready"}\'\nexec sleep 60\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    with prolog.QueryHarness(swipl=str(fake)) as hung:
        t0 = time.monotonic()
        result = prolog.run_query("p.", "p", Limits(timeout_s=0.3, kill_grace_s=0.2), session=hung)
        assert result.status == "killed" and time.monotonic() - t0 < 5.0  # idle: 0.41 s; 10x that
        assert hung.pid is None  # killed
        out = prolog.to_outcome(
            result, prolog.parse("p.\n% query: p\n"), Limits(timeout_s=0.3, kill_grace_s=0.2), result.seconds
        )
        assert out.status is Status.TIMEOUT
        prolog.run_query("p.", "p", Limits(timeout_s=0.3, kill_grace_s=0.2), session=hung)
        assert hung.starts == 2  # a fresh process for the next call


def test_a_dying_process_is_reported_and_replaced(tmp_path: Path) -> None:
    fake = tmp_path / "dying-swipl"
    fake.write_text('#!/bin/sh\necho \'{"status": "ready"}\'\nread line\nexit 3\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    with prolog.QueryHarness(swipl=str(fake)) as dying:
        result = prolog.run_query("p.", "p", LIMITS, session=dying)
        assert result.status == "crashed" and "exit status 3" in result.message
        out = prolog.to_outcome(result, prolog.parse("p.\n% query: p\n"), LIMITS, result.seconds)
        assert (out.status, out.error_kind) == (Status.RUNTIME_ERROR, "solver")
        prolog.run_query("p.", "p", LIMITS, session=dying)
        assert dying.starts == 2


def test_missing_swipl_raises_unavailable() -> None:
    with prolog.QueryHarness(swipl="/nonexistent/swipl") as broken:
        with pytest.raises(prolog.PrologUnavailable):
            prolog.run_query("p.", "p", LIMITS, session=broken)


# ----------------------------------------------------------------------------- sandbox


def test_shell_is_refused_and_nothing_runs(session: prolog.QueryHarness, tmp_path: Path) -> None:
    target = tmp_path / "x"
    out = prolog.solve(f"% query: shell('touch {target}')\n", LIMITS, session=session)
    assert (out.status, out.error_kind) == (Status.RUNTIME_ERROR, "unsupported")
    assert "sandbox" in out.error_message
    out = prolog.solve(f"p :- shell('touch {target}').\n% query: p\n", LIMITS, session=session)
    assert out.error_kind == "unsupported"
    out = prolog.solve(f":- initialization(shell('touch {target}')).\np.\n% query: p\n", LIMITS, session=session)
    assert (out.error_kind, out.error_line) == ("unsupported", 1)
    assert not target.exists()


@pytest.mark.parametrize(
    "text",
    [
        "p(F) :- open(F, write, S), write(S, x), close(S).\n% query: p('/tmp/symbolkg-x')\n",
        "p(X) :- G = shell(X), call(G).\n% query: p(ls)\n",
        "% query: read(X)\n",
        '% query: format(user_output, "x", [])\n',
        "% query: set_prolog_flag(unknown, fail)\n",
        "user:p(a).\n% query: true\n",
        ":- foo.\n% query: true\n",
        "?- p.\n% query: true\n",
        "% query: abort\n",  # ends only the request's thread
    ],
)
def test_harmful_programs_are_refused(session: prolog.QueryHarness, text: str) -> None:
    out = prolog.solve(text, LIMITS, session=session)
    assert out.status is Status.RUNTIME_ERROR
    assert out.error_kind in ("unsupported", "solver")
    assert not Path("/tmp/symbolkg-x").exists()
    assert prolog.solve("p(1).\n% query: p(1)\n", LIMITS, session=session).answer == "True"


# ----------------------------------------------------------------------------- LP translation


def test_lp_program_translated_to_tabled_prolog(session: prolog.QueryHarness) -> None:
    text = (
        "Facts:\nRed(Bob, True)\n"
        "Rules:\nRed($x, True) >>> Rough($x, True)\nRough($x, True) >>> Red($x, True)\n"  # a cycle
        "Rough($x, True) >>> Cold($x, False)\n"
        "Query:\nCold(Bob, True)\n"
    )
    source = lp.to_prolog(lp.parse(text))
    result = prolog.run_query(source, lp.PROLOG_ANSWER_GOAL, LIMITS, session=session)
    assert result.solutions[0].bindings == (("Answer", "'False'"),)  # Cold(Bob, False) is derived
    out = prolog.solve(source, LIMITS, session=session)  # the translation is a complete "prolog" program
    assert out.proof == "Answer = 'False'"


def test_default_session_is_reused_and_closed() -> None:
    a = prolog.default_session()
    assert prolog.default_session() is a
    assert prolog.solve("p.\n% query: p\n", LIMITS).answer == "True"
    assert a.pid is not None
    prolog.close()
    assert a.pid is None
