"""Tests of stateful SWI-Prolog sessions (real ``swipl`` processes, no mocks)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from symbolkg.solvers.prolog.session import PrologSession, PrologToolError, SessionLimits
from symbolkg.solvers.prolog.session_registry import SessionRegistry

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("SYMBOLKG_SWIPL") or "swipl") is None, reason="SWI-Prolog not installed"
)

FAMILY = textwrap.dedent(
    """\
    parent(tom, bob).
    parent(bob, ann).
    parent(bob, pat).
    grandparent(X, Z) :- parent(X, Y), parent(Y, Z).
    """
)


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@pytest.fixture(scope="module")
def shared() -> Iterator[PrologSession]:
    """One session for tests that only read the knowledge base (FAMILY)."""
    with PrologSession() as s:
        s.consult_text(FAMILY)
        yield s


@pytest.fixture
def session() -> Iterator[PrologSession]:
    with PrologSession() as s:
        yield s


def values(result: dict, var: str) -> list:
    return [a[var] for a in result["answers"]]


def assert_answers_normally(s: PrologSession) -> None:
    """The session still works: a fresh knowledge-base query succeeds."""
    r = s.run_goal("X = ok, atom_length(X, N)")
    assert r["outcome"] == "success" and r["answers"] == [{"X": "ok", "N": 2}]


# --------------------------------------------------------------------------- round trips


def test_consult_run_and_results_shape(shared: PrologSession) -> None:
    r = shared.run_goal("grandparent(tom, Who)")
    assert r["outcome"] == "success"
    assert values(r, "Who") == ["ann", "pat"]
    assert r["truncated"] is False and r["cursor"] is None
    assert r["output"] == "" and r["elapsed_s"] > 0
    assert shared.run_goal("grandparent(ann, _)")["outcome"] == "failure"
    assert shared.alive() and shared.load_id.startswith("s-")


def test_consult_is_non_fatal_with_line_and_column(session: PrologSession) -> None:
    text = src(
        """
        good(1).
        good(2).
        bad(   .
        also_good(X) :- good(X).
        :- initialization(main).
        lonely(X, Y) :- good(X).
        """
    )
    r = session.consult_text(text, include_predicates=True)
    assert r["load_id"] == session.load_id and r["module_name"] == session.module_name
    assert r["clause_count"] == 4  # good x2, also_good, lonely
    assert set(r["predicates"]) == {"good/1", "also_good/1", "lonely/2"}
    by_line = {m["line"]: m for m in r["messages"]}
    syntax = by_line[3]
    assert (syntax["severity"], syntax["kind"], syntax["column"]) == ("error", "syntax_error", 8)
    assert by_line[5]["kind"] == "permission_error" and "initialization" in by_line[5]["message"]
    assert by_line[6]["kind"] == "singleton" and by_line[6]["severity"] == "warning" and "Y" in by_line[6]["message"]
    assert values(session.run_goal("also_good(X)"), "X") == [1, 2]
    # messages accumulate and filter by severity
    errors = session.list_messages("error")["messages"]
    assert {m["line"] for m in errors} == {3, 5}
    assert len(session.list_messages("warning")["messages"]) == 3
    assert len(session.list_messages("info")["messages"]) == 3
    with pytest.raises(PrologToolError) as exc:
        session.list_messages("loud")
    assert exc.value.kind == "bad_argument"


def test_consult_replaces_the_knowledge_base_add_clauses_appends(session: PrologSession) -> None:
    session.consult_text("a(1).\n")
    session.add_clauses("a(2).\nb(x).\n")
    assert values(session.run_goal("a(X)"), "X") == [1, 2]
    session.consult_text("a(3).\n")
    assert values(session.run_goal("a(X)"), "X") == [3]
    with pytest.raises(PrologToolError) as exc:
        session.run_goal("b(_)")
    assert exc.value.kind == "existence_error" and "b/1" in exc.value.message


def test_thousand_facts_tables_and_library_names(session: PrologSession) -> None:
    facts = "".join(f"fact({i}, item_{i}, 'Name {i}').\n" for i in range(1000))
    r = session.consult_text(facts)
    assert r["clause_count"] == 1000 and r["messages"] == []
    assert session.run_goal("fact(500, X, Y)")["answers"] == [{"X": "item_500", "Y": "Name 500"}]
    assert session.run_goal("aggregate_all(count, fact(_, _, _), N)")["answers"] == [{"N": 1000}]
    graph = (
        ":- table path/2.\nedge(a, b). edge(b, c). edge(c, a).\npath(X, Y) :- edge(X, Y).\n"
        "path(X, Y) :- path(X, Z), edge(Z, Y).\n"
    )
    for _ in range(2):  # reconsulting a tabled (left-recursive) program works
        r = session.consult_text(graph)
        assert r["messages"] == [] and r["clause_count"] == 5
        assert sorted(values(session.run_goal("path(a, Y)"), "Y")) == ["a", "b", "c"]
    # a library predicate's name may be reused (it is local to the session); a built-in's may not
    r = session.add_clauses("append([], L, L).\nappend([H|T], L, [H|R]) :- append(T, L, R).\nwrite(x).\n")
    assert r["clause_count"] == 2 and [m["line"] for m in r["messages"]] == [3]
    assert session.inspect_predicate("append", 3)["type"] == "user"


def test_typed_answers(shared: PrologSession) -> None:
    r = shared.run_goal(
        'A = 42, B = 2.5, C = hello, D = "text", E = [1, [x]], F = point(1, "s"), G = f(V, V, _W), H = [], '
        "I is 2**70, J = inf"
    )
    (a,) = r["answers"]
    assert a["A"] == 42 and a["B"] == 2.5 and a["C"] == "hello"
    assert a["D"] == {"string": "text"}
    assert a["E"] == [1, ["x"]]
    assert a["F"] == {"functor": "point", "args": [1, {"string": "s"}]}
    g_args = a["G"]["args"]
    assert g_args[0] == g_args[1] == a["V"] and "var" in g_args[0] and g_args[2] != g_args[0]
    assert "_W" not in a  # variables starting with _ are not reported
    assert a["H"] == [] and a["I"] == 2**70 and a["J"] == "inf"
    cyclic = shared.run_goal("X = f(X)")["answers"][0]["X"]
    assert "term" in cyclic
    r = shared.run_goal('X = "true", Y = true, Z = null')
    assert r["answers"] == [{"X": {"string": "true"}, "Y": "true", "Z": "null"}]  # atoms are never JSON literals


def test_residual_constraints(session: PrologSession) -> None:
    session.consult_text(":- use_module(library(clpfd)).\n")
    r = session.run_goal("X #= Y + 1, Y in 0..2")
    assert r["outcome"] == "success"
    assert "in 0..2" in r["residuals"][0] and "var" in r["answers"][0]["X"]


def test_output_capture_and_cap() -> None:
    with PrologSession(limits=SessionLimits(max_output_chars=100)) as s:
        r = s.run_goal("forall(between(1, 3, I), (write(I), nl))")
        assert r["output"] == "1\n2\n3\n" and r["output_truncated"] is False
        r = s.run_goal("forall(between(1, 2000, _), write(abcde))")
        assert r["outcome"] == "success" and len(r["output"]) == 100 and r["output_truncated"] is True


# --------------------------------------------------------------------------- goals as data


@pytest.mark.parametrize(
    "goal",
    [
        "true\nhalt",
        "true. halt.",
        "true.\nhalt.",
        "true. halt",
        "foo('a'), halt, '",
        'X = "a". halt.',
        "",
    ],
)
def test_smuggled_second_command_is_a_syntax_error(shared: PrologSession, goal: str) -> None:
    with pytest.raises(PrologToolError) as exc:
        shared.run_goal(goal)
    assert exc.value.kind == "syntax_error"
    assert shared.alive()
    assert_answers_normally(shared)


def test_goal_with_trailing_period_and_comment(shared: PrologSession) -> None:
    assert values(shared.run_goal("parent(tom, X)."), "X") == ["bob"]
    assert values(shared.run_goal("parent(tom, X) % who?"), "X") == ["bob"]
    assert values(shared.run_goal("atom_length('a. halt.', N)"), "N") == [8]  # quoted text stays data


@pytest.mark.parametrize(
    ("goal", "kind"),
    [
        ("atom_length(X, Y)", "instantiation_error"),
        ("atom_length(abc, foo)", "type_error"),
        ("no_such_predicate(1)", "existence_error"),
        ("X is 1/0", "execution_exception"),
        ("throw(my_ball)", "execution_exception"),
        ("length(L, 1000000000000)", "resource_error"),
        ("X", "instantiation_error"),
        ("42", "type_error"),
    ],
)
def test_error_kinds(shared: PrologSession, goal: str, kind: str) -> None:
    with pytest.raises(PrologToolError) as exc:
        shared.run_goal(goal, time_limit=10)
    assert exc.value.kind == kind, exc.value.to_dict()
    assert exc.value.message
    assert_answers_normally(shared)


def test_error_carries_prolog_term(shared: PrologSession) -> None:
    with pytest.raises(PrologToolError) as exc:
        shared.run_goal("atom_length(abc, foo)")
    assert exc.value.prolog_term is not None and exc.value.prolog_term.startswith("error(type_error(integer,foo)")
    d = exc.value.to_dict()
    assert set(d) == {"kind", "message", "prolog_term"}


def test_error_term_reads_the_same_in_every_session() -> None:
    """The session module's name is new each time; an error term carries none of it (prompts replay)."""
    terms = []
    for _ in range(2):
        with PrologSession() as s:
            s.consult_text("small(X) :- cute(X).\n")
            with pytest.raises(PrologToolError) as exc:
                s.run_goal("small(dog)")
            assert exc.value.kind == "existence_error"
            assert s.module_name not in exc.value.prolog_term, exc.value.prolog_term
            terms.append(exc.value.prolog_term)
    assert terms[0] == terms[1] and "cute(" in terms[0], terms


# --------------------------------------------------------------------------- isolation


def escape_goals(target: Path) -> list[str]:
    t = str(target)
    return [
        f"shell('touch {t}')",
        f"shell('touch {t}', _)",
        f"process_create(path(touch), ['{t}'], [])",
        f"open('{t}', write, S), format(S, 'x', []), close(S)",
        f"open('{t}', write, S, [])",
        "format(user_output, 'x~n', [])",
        "format(user_error, 'x~n', [])",
        f"tell('{t}'), write(x), told",
        "consult('/etc/passwd')",
        "['/etc/passwd']",
        "[library(process)]",
        "use_module(library(process))",
        "use_module(library(filesex))",
        f"see('{t}')",
        "halt",
        "halt(1)",
        "assertz(user:foo)",
        "assertz(system:foo)",
        "assertz(lists:append(a, b, c))",
        "assertz((bar :- shell(ls)))",
        "setenv('PATH', '/tmp')",
        "set_prolog_flag(stack_limit, 10000000000)",
        "set_prolog_flag(unknown, fail)",
        "thread_create(true, _, [])",
        "tcp_socket(_)",
        "process_kill(999999, kill)",
        "process:process_kill(999999, kill)",
        "getenv('HOME', X)",
        "skg_session:handle(_, _)",
        "user:shell(ls)",
    ]


def test_escape_attempts_are_refused_and_the_session_survives(session: PrologSession, tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    session.consult_text("ok(1).\n")
    for goal in escape_goals(target):
        with pytest.raises(PrologToolError) as exc:
            session.run_goal(goal)
        assert exc.value.kind == "permission_error", (goal, exc.value.to_dict())
        assert values(session.run_goal("ok(X)"), "X") == [1], goal
    assert not target.exists()
    assert os.listdir(tmp_path) == []
    assert_answers_normally(session)


def test_escape_attempts_in_consulted_text(session: PrologSession, tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    text = src(
        f"""
        :- shell('touch {target}').
        :- initialization(shell('touch {target}')).
        :- set_prolog_flag(double_quotes, codes).
        :- open('{target}', write, _).
        :- consult('/etc/passwd').
        :- use_module(library(process)).
        :- ['/etc/passwd'].
        user:foo(1).
        system:bar.
        atom_length(a, 1).
        p :- shell('touch {target}').
        q :- use_module(library(process)).
        :- dynamic(user:evil/1).
        :- op(700, xfx, user:(===>)).
        fine(1).
        """
    )
    r = session.consult_text(text)
    errors = [m for m in r["messages"] if m["severity"] == "error"]
    assert [m["line"] for m in errors] == list(range(1, 15))
    assert all(m["kind"] in ("permission_error", "type_error") for m in errors), errors
    assert r["clause_count"] == 1  # only fine/1
    assert not target.exists()
    assert values(session.run_goal("fine(X)"), "X") == [1]
    for goal in ("p", "q", "user:foo(X)", "bar"):
        with pytest.raises(PrologToolError) as exc:
            session.run_goal(goal)
        assert exc.value.kind in ("existence_error", "permission_error"), goal
    assert not target.exists()


def test_assert_only_into_the_session_module(session: PrologSession) -> None:
    session.consult_text(":- dynamic fact/1.\n")
    r = session.run_goal("assertz(fact(1)), assertz(fact(2)), retract(fact(1))")
    assert r["outcome"] == "success"
    assert values(session.run_goal("fact(X)"), "X") == [2]
    assert session.inspect_predicate("fact", 1)["type"] == "dynamic"


def test_sessions_are_isolated(tmp_path: Path) -> None:
    with PrologSession() as a, PrologSession() as b:
        a.consult_text("secret(alpha).\n")
        b.consult_text("secret(beta).\n")
        assert values(a.run_goal("secret(X)"), "X") == ["alpha"]
        assert values(b.run_goal("secret(X)"), "X") == ["beta"]
        with pytest.raises(PrologToolError) as exc:
            b.run_goal(f"{a.module_name}:secret(X)")  # another session's module: not even in this process
        assert exc.value.kind == "permission_error"
        a.run_goal("true")
        with PrologSession() as c:
            with pytest.raises(PrologToolError) as exc:
                c.run_goal("secret(X)")
            assert exc.value.kind == "existence_error"
        assert a.pid != b.pid and a.temp_dir != b.temp_dir


def test_process_limits_and_working_directory() -> None:
    limits = SessionLimits(memory_mb=512, cpu_s=100)
    with PrologSession(limits=limits) as s:
        text = Path(f"/proc/{s.pid}/limits").read_text()
        address = next(line for line in text.splitlines() if line.startswith("Max address space"))
        assert str(512 * 1024 * 1024) in address
        cpu = next(line for line in text.splitlines() if line.startswith("Max cpu time"))
        assert " 100 " in cpu
        assert os.readlink(f"/proc/{s.pid}/cwd") == s.temp_dir
        assert os.getpgid(s.pid) == s.pid  # its own process group
        env = Path(f"/proc/{s.pid}/environ").read_bytes().split(b"\0")
        assert not any(e.startswith(b"SYMBOLKG_") for e in env)
        with pytest.raises(PrologToolError) as exc:
            s.run_goal("length(L, 100000000000)")
        assert exc.value.kind == "resource_error" and "256 MB" in exc.value.message
        assert_answers_normally(s)
        tmp = s.temp_dir
    assert not os.path.exists(tmp)


def test_abort_ends_the_goal_not_the_session(session: PrologSession) -> None:
    with pytest.raises(PrologToolError) as exc:
        session.run_goal("abort")
    assert exc.value.kind == "execution_exception"
    assert_answers_normally(session)


# --------------------------------------------------------------------------- limits, cancel, death


def test_timeout_session_survives(shared: PrologSession) -> None:
    start = time.monotonic()
    r = shared.run_goal("repeat, fail", time_limit=0.3)
    assert r["outcome"] == "timeout" and time.monotonic() - start < 3
    r = shared.run_goal("between(1, inf, X), X > 3, (X < 5 -> true ; repeat, fail)", time_limit=0.3, max_answers=5)
    assert r["outcome"] == "timeout" and values(r, "X") == [4]  # answers found before the limit are kept
    assert values(shared.run_goal("parent(tom, X)"), "X") == ["bob"]


def test_depth_exceeded(session: PrologSession) -> None:
    session.consult_text("loop(X) :- loop(X).\nnat(0).\nnat(N) :- nat(M), N is M + 1.\n")
    r = session.run_goal("loop(a)", max_depth=200)
    assert r["outcome"] == "depth_exceeded" and r["answers"] == []
    r = session.run_goal("nat(X)", max_depth=20, max_answers=100)
    assert r["outcome"] == "success" and r["depth_limited"] and r["truncated"]
    assert len(r["answers"]) < 100


def test_cancel_from_another_thread(session: PrologSession) -> None:
    timer = threading.Timer(0.3, session.cancel)
    timer.start()
    start = time.monotonic()
    r = session.run_goal("repeat, fail", time_limit=30)
    assert r["outcome"] == "cancelled" and time.monotonic() - start < 5
    assert session.cancel() is False  # nothing running: a no-op, and it does not hit the next goal
    assert_answers_normally(session)


def test_cancel_only_the_callers_goal(session: PrologSession) -> None:
    caller: list[int] = []
    sent: list[bool] = []

    def cancel_other_then_caller() -> None:
        time.sleep(0.3)
        sent.append(session.cancel(thread_ident=-1))  # another caller's token: not this goal
        time.sleep(0.3)
        sent.append(session.cancel(thread_ident=caller[0]))

    caller.append(threading.get_ident())
    t = threading.Thread(target=cancel_other_then_caller)
    t.start()
    start = time.monotonic()
    r = session.run_goal("repeat, fail", time_limit=30)
    t.join()
    assert r["outcome"] == "cancelled" and sent == [False, True] and time.monotonic() - start >= 0.5


def test_kill_9_gives_session_lost_and_others_are_untouched() -> None:
    with SessionRegistry(max_sessions=4, prestart=0) as reg:
        a = reg.create()
        b = reg.create()
        a.consult_text("x(1).\n")
        b.consult_text("x(2).\n")
        os.kill(a.pid, signal.SIGKILL)
        with pytest.raises(PrologToolError) as exc:
            a.run_goal("x(X)")
        assert exc.value.kind == "session_lost"
        with pytest.raises(PrologToolError) as exc:
            reg.get(a.load_id)
        assert exc.value.kind == "session_lost"
        assert values(reg.get(b.load_id).run_goal("x(X)"), "X") == [2]
        assert [s["load_id"] for s in reg.list()] == [b.load_id]


def test_killed_during_a_goal_gives_session_lost(session: PrologSession) -> None:
    threading.Timer(0.3, os.kill, (session.pid, signal.SIGKILL)).start()
    with pytest.raises(PrologToolError) as exc:
        session.run_goal("repeat, fail", time_limit=30)
    assert exc.value.kind == "session_lost"
    assert not session.alive()


def test_swipl_exits_when_its_parent_dies(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(
        "from symbolkg.solvers.prolog.session import PrologSession\n"
        "s = PrologSession()\n"
        "print(s.pid, flush=True)\n"
        "s.run_goal('repeat, fail', time_limit=60)\n"
    )
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        pid = int(child.stdout.readline())
        time.sleep(0.3)
        child.kill()
        child.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _running(pid):
            time.sleep(0.05)
        assert not _running(pid), "swipl kept running after its parent died"
    finally:
        child.kill()


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# --------------------------------------------------------------------------- cursors


def test_cursor_paging(shared: PrologSession) -> None:
    r = shared.run_goal("between(1, 25, X)", max_answers=10)
    assert values(r, "X") == list(range(1, 11)) and r["truncated"] and r["cursor"]
    r2 = shared.next_answers(r["cursor"], max_answers=10)
    assert values(r2, "X") == list(range(11, 21)) and r2["truncated"]
    r3 = shared.next_answers(r2["cursor"], max_answers=10)
    assert values(r3, "X") == list(range(21, 26)) and r3["truncated"] is False and r3["cursor"] is None
    # a deterministic goal that gives exactly max_answers is not truncated
    r = shared.run_goal("member(X, [a, b])", max_answers=2)
    assert r["truncated"] is False and r["cursor"] is None


def test_cursor_invalidated_by_a_knowledge_base_change(session: PrologSession) -> None:
    session.consult_text("n(1).\nn(2).\nn(3).\n")
    r = session.run_goal("n(X)", max_answers=1)
    assert r["cursor"]
    session.add_clauses("n(4).\n")
    with pytest.raises(PrologToolError) as exc:
        session.next_answers(r["cursor"])
    assert exc.value.kind == "cursor_invalid"
    with pytest.raises(PrologToolError) as exc:
        session.next_answers("c-nonsense")
    assert exc.value.kind == "cursor_invalid"
    # a goal that changes the knowledge base moves the generation on, too
    session.consult_text(":- dynamic m/1.\nn(1).\nn(2).\n")
    r = session.run_goal("n(X)", max_answers=1)
    session.run_goal("assertz(m(1))")
    with pytest.raises(PrologToolError) as exc:
        session.next_answers(r["cursor"])
    assert exc.value.kind == "cursor_invalid"


# --------------------------------------------------------------------------- editing and inspecting


def test_replace_predicate_is_atomic(session: PrologSession) -> None:
    session.consult_text(FAMILY)
    before = session.get_source()["source_text"]
    for bad in (
        "parent(a, b).\nparent(b, .\n",  # syntax error in the second clause
        "parent(a, b).\nchild(b, a).\n",  # a clause of another predicate
        "parent(a, b).\nparent(X, Y) :- shell(ls).\n",  # refused body
        "parent(a, b).\n:- dynamic foo/1.\n",  # a directive
    ):
        r = session.replace_predicate("parent", 2, bad)
        assert r["replaced"] is False and r["messages"], bad
        assert any(m["severity"] == "error" for m in r["messages"])
        assert session.get_source()["source_text"] == before
        assert values(session.run_goal("grandparent(tom, X)"), "X") == ["ann", "pat"]
    r = session.replace_predicate("parent", 2, "parent(tom, liz).\nparent(liz, joe).\n")
    assert r == {"replaced": True, "clause_count": 2, "messages": [], "predicate": "parent/2"}
    assert values(session.run_goal("grandparent(tom, X)"), "X") == ["joe"]
    with pytest.raises(PrologToolError):
        session.run_goal("child(_, _)")
    r = session.replace_predicate("atom_length", 2, "atom_length(a, 1).\n")
    assert r["replaced"] is False and r["messages"][0]["kind"] == "permission_error"


def test_inspect_predicate(shared: PrologSession) -> None:
    r = shared.inspect_predicate("grandparent", 2)
    assert r["found"] and r["type"] == "user" and r["clause_count"] == 1 and r["exported"] is False
    assert r["clauses"] == ["grandparent(X, Z) :-\n    parent(X, Y),\n    parent(Y, Z)."]
    miss = shared.inspect_predicate("grandparnet", 2)
    assert miss["found"] is False and miss["type"] is None and miss["candidates"][0] == "grandparent/2"
    assert shared.inspect_predicate("parent", 3)["candidates"][0] == "parent/2"
    assert shared.inspect_predicate("atom_length", 2)["type"] == "builtin"
    assert shared.inspect_predicate("append", 3)["type"] == "library"


def test_get_source_reloads_to_the_same_knowledge_base(session: PrologSession) -> None:
    session.consult_text(
        src(
            """
            :- dynamic seen/1.
            :- table path/2.
            edge(a, b). edge(b, c). edge(c, a).
            path(X, Y) :- edge(X, Y).
            path(X, Y) :- path(X, Z), edge(Z, Y).
            greeting --> [hello], who.
            who --> [world].
            """
        )
    )
    text = session.get_source()["source_text"]
    assert ":- dynamic seen/1." in text and ":- table path/2." in text
    assert "path(X, Y) :-\n    path(X, Z),\n    edge(Z, Y)." in text  # the source's variable names
    with PrologSession() as other:
        r = other.consult_text(text)
        assert [m for m in r["messages"] if m["severity"] == "error"] == []
        for s in (session, other):
            assert sorted(values(s.run_goal("path(a, X)"), "X")) == ["a", "b", "c"]
            assert s.run_goal("phrase(greeting, [hello, world])")["outcome"] == "success"


def test_run_tests(session: PrologSession) -> None:
    session.consult_text(FAMILY)
    tests = src(
        """
        :- begin_tests(family).
        test(gp) :- grandparent(tom, ann).
        test(all_gp, all(X == [ann, pat])) :- grandparent(tom, X).
        test(wrong) :- grandparent(ann, _).
        test(no_child, fail) :- parent(ann, _).
        test(eq, X == 3) :- X is 1 + 2.
        test(err, error(instantiation_error)) :- atom_length(_, _).
        test(later, blocked(not_yet)) :- true.
        test(unsafe) :- shell(ls).
        :- end_tests(family).
        """
    )
    r = session.run_tests(tests)
    status = {x["test"]: x["status"] for x in r["results"]}
    assert status == {
        "gp": "passed",
        "all_gp": "passed",
        "wrong": "failed",
        "no_child": "passed",
        "eq": "passed",
        "err": "passed",
        "later": "skipped",
        "unsafe": "failed",
    }
    assert (r["passed"], r["failed"], r["skipped"], r["total"]) == (5, 2, 1, 8)
    unsafe = next(x for x in r["results"] if x["test"] == "unsafe")
    assert "sandbox" in unsafe["message"] and unsafe["line"] == 9
    again = session.run_tests()  # the tests now live in the session
    assert (again["passed"], again["failed"], again["skipped"]) == (5, 2, 1)


def test_trace_goal_tree_and_bounds(session: PrologSession) -> None:
    session.consult_text(FAMILY + "anc(X, Y) :- parent(X, Y).\nanc(X, Y) :- parent(X, Z), anc(Z, Y).\n")
    r = session.trace_goal("grandparent(tom, W)")
    assert r["outcome"] == "success" and r["node_count"] == 3
    tree = r["tree"]
    assert tree["goal"] == "grandparent(tom,ann)" and tree["rule"].startswith("grandparent(X, Z) :-")
    assert [c["goal"] for c in tree["children"]] == ["parent(tom,bob)", "parent(bob,ann)"]
    assert tree["children"][0]["rule"] == "parent(tom, bob)." and not (r["depth_cut"] or r["node_cut"])
    deep = session.trace_goal("anc(tom, ann)", max_depth=2)
    assert deep["outcome"] == "success" and deep["depth_cut"] and not deep["node_cut"]
    small = session.trace_goal("anc(tom, ann)", max_nodes=2)
    assert small["outcome"] == "success" and small["node_cut"] and small["node_count"] <= 2
    assert session.trace_goal("grandparent(ann, _)")["tree"] is None
    builtin = session.trace_goal("X is 1 + 2")["tree"]
    assert builtin == {"goal": "3 is 1+2", "rule": None, "children": [], "truncated": False}
    with pytest.raises(PrologToolError) as exc:
        session.trace_goal("shell(ls)")
    assert exc.value.kind == "permission_error"


# --------------------------------------------------------------------------- registry


def test_registry_lru_ttl_and_gone_kinds() -> None:
    with SessionRegistry(max_sessions=2, idle_ttl_s=3600, prestart=0) as reg:
        a = reg.create()
        b = reg.create(module_name="kb_b")
        assert b.module_name == "kb_b"
        reg.get(a.load_id)  # a is now the most recently used: b goes first
        c = reg.create()
        with pytest.raises(PrologToolError) as exc:
            reg.get(b.load_id)
        assert exc.value.kind == "session_evicted"
        assert not b.alive()
        with pytest.raises(PrologToolError) as exc:
            b.run_goal("true")
        assert exc.value.kind == "session_evicted"
        assert {s["load_id"] for s in reg.list()} == {a.load_id, c.load_id}
        listed = reg.list()[0]
        assert set(listed) >= {"load_id", "module_name", "pid", "clause_count", "idle_s", "age_s"}
        reg.idle_ttl_s = 0.05
        time.sleep(0.1)
        assert set(reg.reap()) == {a.load_id, c.load_id}
        with pytest.raises(PrologToolError) as exc:
            reg.get(a.load_id)
        assert exc.value.kind == "session_expired"
        with pytest.raises(PrologToolError) as exc:
            reg.get("s-0000000000000000")
        assert exc.value.kind == "session_not_found"
        d = reg.create()
        assert reg.close(d.load_id) is True and reg.close(d.load_id) is False
        with pytest.raises(PrologToolError) as exc:
            reg.get(d.load_id)
        assert exc.value.kind == "session_not_found"
        with pytest.raises(PrologToolError) as exc:
            reg.create(module_name="user")
        assert exc.value.kind == "bad_argument"


def test_registry_reaper_thread_expires_idle_sessions() -> None:
    with SessionRegistry(idle_ttl_s=0.2, reap_interval_s=0.05, prestart=0) as reg:
        s = reg.create()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(reg):
            time.sleep(0.05)
        with pytest.raises(PrologToolError) as exc:
            reg.get(s.load_id)
        assert exc.value.kind == "session_expired"


def test_registry_warm_spares_and_parallel_sessions() -> None:
    with SessionRegistry(max_sessions=16, prestart=2) as reg:
        errors: list[BaseException] = []

        def work(i: int) -> None:
            try:
                s = reg.create()
                s.consult_text(f"mine({i}).\nshared(x).\n")
                for _ in range(5):
                    assert values(reg.get(s.load_id).run_goal("mine(X)"), "X") == [i]
                assert values(s.run_goal("shared(X)"), "X") == ["x"]
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert errors == []
        assert len(reg) == 8 and len({s["pid"] for s in reg.list()}) == 8


def test_calls_on_one_session_are_serialised(shared: PrologSession) -> None:
    results: list[list] = []

    def work() -> None:
        for _ in range(10):
            results.append(values(shared.run_goal("parent(bob, X)"), "X"))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [["ann", "pat"]] * 40


def test_bad_arguments(shared: PrologSession) -> None:
    for call in (
        lambda: shared.run_goal("true", max_answers=0),
        lambda: shared.run_goal("true", time_limit=-1),
        lambda: shared.run_goal(123),  # type: ignore[arg-type]
        lambda: shared.inspect_predicate("p", -1),
        lambda: shared.trace_goal("true", max_nodes=0),
    ):
        with pytest.raises(PrologToolError) as exc:
            call()
        assert exc.value.kind == "bad_argument"
    with pytest.raises(PrologToolError) as exc:
        PrologSession(module_name="system")
    assert exc.value.kind == "bad_argument"
