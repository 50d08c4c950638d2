"""LocalSolverPool: same contract as the Ray pool, without Ray."""

from __future__ import annotations

import os
import signal

from symbolkg.solvers.outcomes import SolveRequest, Status
from symbolkg.solvers.runtime.local_pool import LocalSolverPool
from tests.conftest import lp_problem


def requests(n: int):
    for i in range(n):
        p = lp_problem(i)
        yield SolveRequest(p["id"], p["program"]["language"], p["program"]["text"])


def test_every_request_gets_exactly_one_result():
    with LocalSolverPool(2) as pool:
        results = list(pool.imap_unordered(requests(40)))
    ids = [r.request.problem_id for r in results]
    assert sorted(ids) == sorted(f"gen-{i:05d}" for i in range(40))
    by_id = {r.request.problem_id: r.outcome for r in results}
    assert by_id["gen-00000"].answer == "True" and by_id["gen-00001"].answer == "False"
    assert {r.worker.split("/")[0] for r in results} <= {"local-0", "local-1"}


def test_requests_are_pulled_lazily_with_bounded_in_flight():
    pulled = 0

    def gen():
        nonlocal pulled
        for r in requests(100):
            pulled += 1
            yield r

    with LocalSolverPool(2, max_in_flight=4) as pool:
        it = pool.imap_unordered(gen())
        next(it)
        assert pulled <= 4 + 1
        rest = list(it)
    assert len(rest) == 99


def test_killed_worker_process_loses_no_request():
    with LocalSolverPool(1) as pool:
        proc = pool.processes[0]
        proc.start()
        killed: list[int] = []
        results = []
        for i, r in enumerate(pool.imap_unordered(requests(30))):
            results.append(r)
            if i == 5:
                # Killed here, in the consumer, not from a thread that may run late: the pool pulls
                # requests lazily (at most max_in_flight = 2 ahead), so at this point at most 8 of
                # the 30 have been handed out and 22 or more are still to run, however fast or
                # loaded the machine is. (A killer thread could run after the pool had finished.)
                assert proc.pid is not None
                killed.append(proc.pid)
                os.kill(proc.pid, signal.SIGKILL)
    assert killed
    assert len(results) == 30 and len({r.request.problem_id for r in results}) == 30
    bad = [r for r in results if r.outcome.status not in (Status.PROVED, Status.DISPROVED)]
    assert not bad
    # The requests handed out after the kill ran in a new worker process.
    assert proc.restarts >= 1
    assert results[-1].worker.split("/")[1] != str(killed[0])
