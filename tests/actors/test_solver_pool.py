"""The Ray solver pool: real Ray, real worker processes, actors killed mid-run."""

from __future__ import annotations

import os
import signal

import pytest

ray = pytest.importorskip("ray")

from symbolkg.actors.solver_pool import RaySolverPool, make_solver_pool  # noqa: E402
from symbolkg.solvers.outcomes import SolveRequest, Status  # noqa: E402
from symbolkg.solvers.runtime.local_pool import LocalSolverPool  # noqa: E402
from tests.actors.ray_wait import kill_and_wait_until_dead  # noqa: E402
from tests.conftest import lp_problem  # noqa: E402


def requests(n: int):
    for i in range(n):
        p = lp_problem(i)
        yield SolveRequest(p["id"], p["program"]["language"], p["program"]["text"])


@pytest.fixture(scope="module")
def ray_local():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


def check_complete(results, n):
    ids = [r.request.problem_id for r in results]
    assert len(ids) == n and len(set(ids)) == n
    for r in results:
        i = int(r.request.problem_id.split("-")[1])
        assert r.outcome.status is (Status.PROVED if i % 2 == 0 else Status.DISPROVED), r


def test_pool_solves_everything_once(ray_local):
    with RaySolverPool(2) as pool:
        results = list(pool.imap_unordered(requests(50)))
    check_complete(results, 50)
    assert len({r.worker.split("/")[0] for r in results}) == 2


def test_killing_an_actor_mid_run_loses_no_problem(ray_local):
    with RaySolverPool(2) as pool:
        results = []
        for i, r in enumerate(pool.imap_unordered(requests(60))):
            results.append(r)
            if i == 10:
                # Dead before more requests go out: the ones still to come must meet the dead actor.
                kill_and_wait_until_dead(pool.actors[0], "worker_pid")
        assert pool.replaced >= 1
    check_complete(results, 60)


def test_killing_a_worker_process_mid_run_loses_no_problem(ray_local):
    with RaySolverPool(1) as pool:
        results = []
        for i, r in enumerate(pool.imap_unordered(requests(30))):
            results.append(r)
            if i == 5:
                os.kill(ray.get(pool.actors[0].worker_pid.remote()), signal.SIGKILL)
    check_complete(results, 30)


def test_make_solver_pool_picks_the_executor_the_flag_names(ray_local):
    with make_solver_pool("local", 1, memory_mb=1024) as local:
        assert isinstance(local, LocalSolverPool) and local.workers == 1
        check_complete(list(local.imap_unordered(requests(4))), 4)
    with make_solver_pool("ray", 1, memory_mb=1024, cpus_per_worker=0.5) as remote:
        assert isinstance(remote, RaySolverPool) and remote.workers == 1
        check_complete(list(remote.imap_unordered(requests(4))), 4)
    with pytest.raises(ValueError, match="unknown executor 'dask'"):
        make_solver_pool("dask", 1)
