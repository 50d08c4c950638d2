"""The worker process: isolation, watchdog, crash recovery, memory limits."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from symbolkg.solvers.outcomes import ErrorKind, Limits, SolveRequest, Status
from symbolkg.solvers.runtime.worker import SolverProcess

# x^3 + y^3 = z^3 over positive integers: no solution (Euler's proof of Fermat's n = 3 case), so Z3
# can never answer sat, and refuting it takes that proof, beyond Z3's nonlinear integer arithmetic:
# it searches until stopped (measured: still running at a 30 s limit).
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


def _cpu_ticks(pid: int) -> int:
    """CPU time (user + system) a process has used, in clock ticks, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_solver_timeout_is_recorded_and_worker_stays_usable(proc):
    pid = proc.pid
    t0 = time.monotonic()
    # The watchdog is 30 s behind the limit, so what ends the call is Z3's own timeout however slow
    # the machine is, and the backend says so (the watchdog's outcomes say "watchdog").
    out = proc.solve(SolveRequest("a", "smtlib2", FERMAT3, Limits(timeout_s=1.0, kill_grace_s=30)))
    assert out.status is Status.TIMEOUT and out.backend == "z3"
    assert time.monotonic() - t0 < 11.0  # idle: 1.01 s; the bound is 10x that
    assert proc.pid == pid and proc.restarts == 0  # no kill, no restart
    assert proc.solve(SolveRequest("b", "smtlib2", SAT)).status is Status.SAT


def test_watchdog_kills_a_call_that_ignores_its_limit(proc):
    pid = proc.pid
    os.kill(pid, signal.SIGSTOP)  # a worker that never answers
    t0 = time.monotonic()
    out = proc.solve(SolveRequest("a", "smtlib2", SAT, Limits(timeout_s=0.5, kill_grace_s=0.5)))
    assert out.status is Status.TIMEOUT and out.backend == "watchdog"
    # Not before timeout + grace (1 s); idle it is killed 1.02 s after the call; the bound is 10x that.
    assert 0.9 < time.monotonic() - t0 < 12.0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the old worker is gone ...
    assert proc.solve(SolveRequest("b", "smtlib2", SAT)).status is Status.SAT  # ... and a new one answers
    assert proc.pid != pid and proc.restarts == 1


def test_worker_killed_mid_call_is_recorded_as_crash(proc):
    pid = proc.pid
    idle_ticks = _cpu_ticks(pid)  # the worker waits for a request without using CPU
    solving: list[bool] = []

    def kill_while_solving() -> None:
        # Mid-call means Z3 is running on the request: poll until the worker has used 0.1 s of CPU
        # since it was idle (a deadline, not a guess at how soon that happens on this machine).
        ticks = max(1, os.sysconf("SC_CLK_TCK") // 10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if _cpu_ticks(pid) >= idle_ticks + ticks:
                solving.append(True)
                break
            time.sleep(0.01)
        os.kill(pid, signal.SIGTERM)

    killer = threading.Thread(target=kill_while_solving)
    killer.start()
    # FERMAT3 never ends by itself and its limit is beyond the killer's deadline: the kill lands mid-call.
    out = proc.solve(SolveRequest("a", "smtlib2", FERMAT3, Limits(timeout_s=120)))
    killer.join()
    assert solving, "the worker never started solving"
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


# 2048-bit multiplications: bit-blasting needs far more than the 600 MB the worker may use. Measured:
# Z3 reaches that limit after 3.7-4.5 s (and the Prolog case below after 0.2 s); the 120 s time limit
# is far above both, so the outcome is MEMORY on a loaded machine too, never TIMEOUT.
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
    limits = Limits(timeout_s=120, memory_mb=600)
    with SolverProcess(memory_mb=600, name="mem") as p:
        t0 = time.monotonic()
        out = p.solve(SolveRequest("m", language, text, limits))
        assert out.status is Status.MEMORY and out.error_kind == "memory", out
        assert time.monotonic() - t0 < 60  # idle: at most 4.5 s; the bound is over 10x that
        assert p.solve(SolveRequest("ok", "smtlib2", SAT)).status is Status.SAT
