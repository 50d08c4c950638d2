"""A session's limits hold whatever the goal does with them (issue 30): no catcher swallows or delays them.

Each goal below tries to outlive its 1 s ``time_limit`` by catching the limit's exception, looping in
a recovery or in a cleanup, or reaching SWI-Prolog's own catch/3 through a module qualification.
The call must come back with outcome ``timeout`` (or ``depth_exceeded`` / ``inference_limit``) within
1.5 s of the Prolog process's CPU time (wall time is the machine's load; it must only stay below the
kill), and the session must be exactly as before: it answers ``member(X, [1,2])``, its source is
unchanged. Without the guards each of these runs until the process is killed (``session_lost``,
after ``time_limit + kill_grace_s`` = 6 s) or is reported as ``success``.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psutil
import pytest

from symbolkg.solvers.prolog.session import PrologSession, PrologToolError

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("SYMBOLKG_SWIPL") or "swipl") is None, reason="SWI-Prolog not installed"
)

SOURCE = """\
:- dynamic log/1.
r :- r0.
r0 :- repeat, fail.
l :- l2.
l2 :- l.
fact(1).
deep(N) :- N1 is N + 1, deep(N1).
c :- catch(c, _, c).
"""

LIMIT_S = 1.0
BOUND_S = 1.5  # CPU seconds: the limit plus the documented grace
KILL_S = 6.0  # wall seconds: time_limit + kill_grace_s, when a goal the guards miss is killed


@contextmanager
def bounded(session: PrologSession, cpu_s: float = BOUND_S) -> Iterator[None]:
    """What runs inside costs the session's Prolog process under ``cpu_s`` of CPU time, and ends
    before the kill. CPU time, not wall time: a loaded machine stretches the wall clock (the limit is
    an alarm on it) but only lowers the CPU time a goal gets before it fires."""
    proc = psutil.Process(session.pid)
    c0, t0 = sum(proc.cpu_times()[:2]), time.monotonic()
    yield
    cpu, wall = sum(proc.cpu_times()[:2]) - c0, time.monotonic() - t0
    assert cpu < cpu_s and wall < KILL_S, f"{cpu:.2f} s CPU, {wall:.2f} s wall"


CATCH_PATTERNS = [
    "catch(r, _, r)",
    "repeat, catch(l, _, true), fail",
    "setup_call_cleanup(true, r, r)",
    "catch(call_with_time_limit(100, r), _, true)",
    "catch(r, _, true)",
    "catch(r, E, (E = skg_limit(_) -> r ; true))",
    "catch_with_backtrace(r, _, r)",
    "call_cleanup(r, r)",
    "call_cleanup(r, _, r)",
    "setup_call_catcher_cleanup(true, r, _, r)",
    "setup_call_cleanup(true, true, r)",
    "setup_call_cleanup(r, true, true)",
    "setup_call_cleanup(true, throw(x), r)",
    "catch(setup_call_cleanup(true, throw(x), r), _, r)",
    "setup_call_cleanup(true, member(_, [1, 2]), r), throw(x)",
    "catch(call_with_time_limit(0.2, r), time_limit_exceeded, r)",
    "catch(call_with_time_limit(100, catch(r, _, r)), _, r)",
    "findall(X, catch(r, _, r), _)",
    "forall(member(_, [1]), catch(r, _, r))",
    "aggregate_all(count, catch(r, _, r), _)",
    "\\+ catch(r, _, r)",
    "\\+ \\+ catch(throw(x), _, r)",
    "catch(\\+ catch(r, _, fail), _, r)",
    "catch(findall(X, between(1, inf, X), _), _, r)",
    "c",
    "call_with_depth_limit(catch(r, _, r), 1000000000, _)",
    'format("~@", [catch(r, _, r)])',
    "with_output_to(string(_), catch(r, _, r))",
]


@pytest.fixture(scope="module")
def session() -> Iterator[PrologSession]:
    with PrologSession() as s:
        s.consult_text(SOURCE)
        yield s


def assert_intact(s: PrologSession, source: str) -> None:
    r = s.run_goal("member(X, [1,2])")
    assert r["outcome"] == "success" and [a["X"] for a in r["answers"]] == [1, 2]
    assert s.get_source()["source_text"] == source
    assert s.alive()


@pytest.mark.parametrize("goal", CATCH_PATTERNS)
def test_no_catcher_outlives_the_time_limit(session: PrologSession, goal: str) -> None:
    source = session.get_source()["source_text"]
    # "c" recurses through catch/3 until the depth limit cuts it (before or after the time limit); at
    # 100,000 levels, so that unwinding the stack (time proportional to its depth, docs/MCP.md) stays small.
    depth = 100_000 if goal == "c" else 1_000_000
    with bounded(session):
        r = session.run_goal(goal, time_limit=LIMIT_S, max_depth=depth)
    expected = {"timeout", "depth_exceeded"} if goal == "c" else {"timeout"}
    assert r["outcome"] in expected, r
    assert_intact(session, source)


def test_the_cleanup_of_a_cut_is_bounded_by_inferences(session: PrologSession) -> None:
    """It runs with signals blocked (no time limit reaches it): its inference budget stops it."""
    source = session.get_source()["source_text"]
    with bounded(session):
        r = session.run_goal("setup_call_cleanup(true, member(_, [1, 2]), r), !", time_limit=LIMIT_S)
    assert r["outcome"] == "inference_limit", r
    assert_intact(session, source)


def test_a_nested_depth_limit_cannot_lift_the_requests(session: PrologSession) -> None:
    source = session.get_source()["source_text"]
    for goal in (
        "call_with_depth_limit(deep(0), 1000000000, _)",
        "catch(call_with_depth_limit(deep(0), 100000, R), _, true)",
    ):
        with bounded(session):
            r = session.run_goal(goal, time_limit=LIMIT_S, max_depth=1000)
        assert r["outcome"] == "depth_exceeded" and r["depth_limited"], (goal, r)
    assert_intact(session, source)


@pytest.mark.parametrize(
    "goal",
    [
        "system:catch(r, _, r)",
        "call(system:catch, r, _, r)",
        "apply:maplist(catch(r, _), [r])",
        "system:setup_call_cleanup(true, r, r)",
        "'$syspreds':call_with_depth_limit(r, 10, _)",
    ],
)
def test_swi_prologs_own_catchers_are_out_of_reach(session: PrologSession, goal: str) -> None:
    with pytest.raises(PrologToolError) as err:
        session.run_goal(goal, time_limit=LIMIT_S)
    assert err.value.kind == "permission_error"


def test_a_clause_that_qualifies_a_catcher_is_not_loaded() -> None:
    with PrologSession() as s:
        r = s.consult_text("r :- repeat, fail.\nescape :- system:catch(r, _, r).\nok(1).\n")
        assert [(m["line"], m["kind"], m["severity"]) for m in r["messages"]] == [(2, "permission_error", "error")], r
        assert "clause not loaded" in r["messages"][0]["message"] and "catch/3" in r["messages"][0]["message"]
        assert s.inspect_predicate("escape", 0)["found"] is False
        assert s.run_goal("ok(X)")["answers"] == [{"X": 1}]


def test_catch_and_cleanup_keep_their_meaning(session: PrologSession) -> None:
    cases = {
        "catch(throw(foo(1)), foo(Y), true)": [{"Y": 1}],
        "catch(catch(throw(a), b, true), a, Y = outer)": [{"Y": "outer"}],
        "catch(call_with_time_limit(0.05, r), time_limit_exceeded, Y = timed)": [{"Y": "timed"}],
        "retractall(log(_)), setup_call_cleanup(true, true, assertz(log(exit))), findall(L, log(L), Y)": [
            {"Y": ["exit"]}
        ],
        "retractall(log(_)), (setup_call_cleanup(true, fail, assertz(log(fail))) ; true), findall(L, log(L), Y)": [
            {"Y": ["fail"]}
        ],
        "retractall(log(_)), once(setup_call_cleanup(true, member(_, [1,2]), assertz(log(cut)))), "
        "findall(L, log(L), Y)": [{"Y": ["cut"]}],
        "retractall(log(_)), catch(setup_call_cleanup(true, throw(e), assertz(log(exc))), e, findall(L, log(L), Y))": [
            {"Y": ["exc"]}
        ],
        "retractall(log(_)), catch(setup_call_catcher_cleanup(true, throw(e), exception(E), assertz(log(E))), "
        "_, true), findall(L, log(L), Y)": [{"Y": ["e"]}],
        "findall(X-D, call_with_depth_limit(member(X, [a]), 10, D), Y)": [{"Y": [{"functor": "-", "args": ["a", 2]}]}],
    }
    for goal, answers in cases.items():
        got = session.run_goal(goal)["answers"]
        assert [{"Y": a["Y"]} for a in got] == answers, goal
    with pytest.raises(PrologToolError) as err:
        session.run_goal("catch(abort, _, true)")
    assert err.value.kind == "execution_exception" and "abort" in err.value.message


def test_paging_trace_and_tests_have_the_same_limit(session: PrologSession) -> None:
    source = session.get_source()["source_text"]
    first = session.run_goal("(X = 1 ; X = 2 ; catch(r, _, r))", max_answers=2, time_limit=LIMIT_S)
    assert first["outcome"] == "success" and first["cursor"]
    with bounded(session, BOUND_S + LIMIT_S):  # the re-run replays the first answers, then the limit
        assert session.next_answers(first["cursor"], max_answers=1)["outcome"] == "timeout"
    with bounded(session):
        assert session.trace_goal("catch(r, _, r)", time_limit=LIMIT_S)["outcome"] == "timeout"
    tests = ":- begin_tests(t).\ntest(loops) :- catch(r, _, r).\ntest(fine) :- true.\n:- end_tests(t).\n"
    with PrologSession() as s:
        s.consult_text(SOURCE)
        with bounded(s):
            r = s.run_tests(tests, time_limit=LIMIT_S)
        by_name = {x["test"]: x for x in r["results"]}
        assert by_name["loops"]["status"] == "failed" and "time limit" in by_name["loops"]["message"]
        assert by_name["fine"]["status"] in ("passed", "skipped")  # skipped when the limit used all the time
    assert_intact(session, source)
