"""LocalSolverPool: same contract as the Ray pool, without Ray."""

from __future__ import annotations

import os
import signal
import threading

from symbolkg.solvers.pool import LocalSolverPool
from symbolkg.solvers.records import SolveRequest, Status
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
        killed = []

        def kill_once():
            if proc.pid:
                killed.append(proc.pid)
                os.kill(proc.pid, signal.SIGKILL)

        results = []
        for i, r in enumerate(pool.imap_unordered(requests(30))):
            results.append(r)
            if i == 5:
                threading.Thread(target=kill_once).start()
    assert len({r.request.problem_id for r in results}) == 30
    bad = [r for r in results if r.outcome.status not in (Status.PROVED, Status.DISPROVED)]
    assert not bad
    assert killed
