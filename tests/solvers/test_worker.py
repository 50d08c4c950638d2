"""The worker process: isolation, watchdog, crash recovery, memory limits."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from symbolkg.solvers.records import ErrorKind, Limits, SolveRequest, Status
from symbolkg.solvers.worker import SolverProcess

# x^3 + y^3 = z^3 over positive integers: no solution, and Z3 cannot prove that; it searches until stopped.
FERMAT3 = """(declare-const x Int) (declare-const y Int) (declare-const z Int)
(assert (> x 0)) (assert (> y 0)) (assert (> z 0))
(assert (= (+ (* x x x) (* y y y)) (* z z z)))
(check-sat)
"""
SAT = "(declare-const x Int)\n(assert (> x 1))\n(check-sat)\n"


@pytest.fixture
def proc():
    p = SolverProcess(memory_mb=2048, name="test")
    p.start()
    yield p
    p.kill()


def test_runs_programs_in_another_process(proc):
    out = proc.solve(SolveRequest("a", "smtlib2", SAT))
    assert out.status is Status.SAT
    assert proc.pid != os.getpid()


def test_solver_timeout_is_recorded_and_worker_stays_usable(proc):
    t0 = time.monotonic()
    out = proc.solve(SolveRequest("a", "smtlib2", FERMAT3, Limits(timeout_s=1.0)))
    assert out.status is Status.TIMEOUT
    assert time.monotonic() - t0 < 1.0 + Limits().kill_grace_s + 1.0
    assert proc.solve(SolveRequest("b", "smtlib2", SAT)).status is Status.SAT


def test_watchdog_kills_a_call_that_ignores_its_limit(proc):
    pid = proc.pid
    os.kill(pid, signal.SIGSTOP)  # a worker that never answers
    t0 = time.monotonic()
    out = proc.solve(SolveRequest("a", "smtlib2", SAT, Limits(timeout_s=0.5, kill_grace_s=0.5)))
    assert out.status is Status.TIMEOUT and out.backend == "watchdog"
    assert 0.9 < time.monotonic() - t0 < 5
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the old worker is gone ...
    assert proc.solve(SolveRequest("b", "smtlib2", SAT)).status is Status.SAT  # ... and a new one answers
    assert proc.pid != pid and proc.restarts == 1


def test_worker_killed_mid_call_is_recorded_as_crash(proc):
    pid = proc.pid
    threading.Timer(0.5, os.kill, args=(pid, signal.SIGTERM)).start()
    out = proc.solve(SolveRequest("a", "smtlib2", FERMAT3, Limits(timeout_s=20)))
    assert out.status is Status.RUNTIME_ERROR and out.error_kind == ErrorKind.WORKER_CRASH.value
    assert proc.solve(SolveRequest("b", "smtlib2", SAT)).status is Status.SAT


def test_unknown_language_is_an_outcome_not_an_exception(proc):
    out = proc.solve(SolveRequest("a", "cobol", "MOVE A TO B."))
    assert out.status is Status.PARSE_ERROR and "cobol" in out.error_message


def test_worker_environment_is_scrubbed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "secret")
    with SolverProcess(name="env") as p:
        environ = open(f"/proc/{p.pid}/environ", "rb").read().split(b"\0")
        limits = open(f"/proc/{p.pid}/limits").read()
        cwd = os.readlink(f"/proc/{p.pid}/cwd")
    assert not any(e.startswith(b"OPENAI_API_KEY") for e in environ)
    assert "symbolkg-worker-" in cwd
    as_line = next(line for line in limits.splitlines() if line.startswith("Max address space"))
    assert str(2048 * 1024 * 1024) in as_line


def test_memory_limit_rejects_tiny_budgets():
    with pytest.raises(ValueError, match="memory_mb"):
        SolverProcess(memory_mb=16)


# 2048-bit multiplications: bit-blasting needs far more than the 600 MB the worker may use.
BV_MEMORY_EATER = (
    "(declare-const x (_ BitVec 2048)) (declare-const y (_ BitVec 2048)) (declare-const z (_ BitVec 2048))\n"
    "(assert (= (bvmul x (bvmul y z)) (bvmul z (bvmul x (bvadd y #x" + "0" * 511 + "1)))))\n"
    "(assert (distinct x #x" + "0" * 512 + "))\n(check-sat)\n"
)


@pytest.mark.parametrize(
    "language,text",
    [("smtlib2", BV_MEMORY_EATER), ("prolog", "p(L) :- length(L, 200000000).\n% query: p(_)\n")],
)
def test_memory_eaters_are_stopped_within_the_limit_and_the_worker_survives(language, text):
    limits = Limits(timeout_s=30, memory_mb=600)
    with SolverProcess(memory_mb=600, name="mem") as p:
        t0 = time.monotonic()
        out = p.solve(SolveRequest("m", language, text, limits))
        assert out.status is Status.MEMORY and out.error_kind == "memory", out
        assert time.monotonic() - t0 < 30
        assert p.solve(SolveRequest("ok", "smtlib2", SAT)).status is Status.SAT
