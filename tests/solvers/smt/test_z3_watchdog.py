"""The Z3 watchdog (solvers/smt/z3_watchdog.py): one thread per process ends guarded Z3 calls at their deadline."""

from __future__ import annotations

import os
import threading
import time

import z3

from symbolkg.solvers.smt.z3_watchdog import Z3Watchdog


def _pigeonhole(ctx: z3.Context, holes: int) -> z3.Solver:
    """``holes + 1`` pigeons in ``holes`` holes: unsatisfiable, and hard for Z3's SAT core at 11 holes."""
    solver = z3.Solver(ctx=ctx)
    p = [[z3.Bool(f"p{i}_{j}", ctx) for j in range(holes)] for i in range(holes + 1)]
    for row in p:
        solver.add(z3.Or(row))
    for j in range(holes):
        for i in range(holes + 1):
            for k in range(i + 1, holes + 1):
                solver.add(z3.Or(z3.Not(p[i][j]), z3.Not(p[k][j])))
    return solver


def _watchdog_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "z3-watchdog")


def test_a_guarded_check_ends_at_its_deadline() -> None:
    ctx = z3.Context()
    solver = _pigeonhole(ctx, 11)
    with Z3Watchdog(ctx) as dog:
        t0 = time.monotonic()
        with dog.guard(t0 + 0.3):
            result = solver.check()
        elapsed = time.monotonic() - t0
    assert result == z3.unknown and solver.reason_unknown() in ("canceled", "interrupted")
    assert elapsed < 2.0


def test_one_thread_serves_every_watchdog_and_a_disarmed_context_runs_on() -> None:
    for _ in range(20):
        ctx = z3.Context()
        with Z3Watchdog(ctx) as dog:
            with dog.guard(time.monotonic() + 5):
                x = z3.Int("x", ctx)
                solver = z3.Solver(ctx=ctx)
                solver.add(x > 2)
                assert solver.check() == z3.sat
    assert _watchdog_threads() == 1
    # A call past an earlier guard's deadline, but not guarded itself, is not interrupted.
    ctx = z3.Context()
    with Z3Watchdog(ctx) as dog:
        with dog.guard(time.monotonic() + 0.05):
            pass
        time.sleep(0.15)
        solver = _pigeonhole(ctx, 6)
        assert solver.check() == z3.unsat


def test_two_watchdogs_each_keep_their_own_deadline() -> None:
    slow_ctx, quick_ctx = z3.Context(), z3.Context()
    results: dict[str, z3.CheckSatResult] = {}

    def run(name: str, ctx: z3.Context, holes: int, budget_s: float) -> None:
        solver = _pigeonhole(ctx, holes)
        with Z3Watchdog(ctx) as dog:
            with dog.guard(time.monotonic() + budget_s):
                results[name] = solver.check()

    slow = threading.Thread(target=run, args=("slow", slow_ctx, 11, 30.0))
    slow.start()
    run("quick", quick_ctx, 11, 0.2)  # interrupted at its own deadline, the other call keeps running
    assert results["quick"] == z3.unknown
    assert slow.is_alive()
    slow_ctx.interrupt()
    slow.join(10)
    assert results["slow"] == z3.unknown


def test_a_forked_child_gets_a_watchdog_of_its_own() -> None:
    ctx = z3.Context()
    with Z3Watchdog(ctx) as dog:
        with dog.guard(time.monotonic() + 5):
            pass
    pid = os.fork()
    if pid == 0:  # the child: its guarded call must still be interrupted
        code = 1
        try:
            child_ctx = z3.Context()
            solver = _pigeonhole(child_ctx, 11)
            with Z3Watchdog(child_ctx) as child_dog:
                with child_dog.guard(time.monotonic() + 0.3):
                    code = 0 if solver.check() == z3.unknown else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
