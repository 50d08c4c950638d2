"""The pool on a real two-node local Ray cluster; a node is removed mid-run."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from symbolkg.actors.solver_pool import RaySolverPool  # noqa: E402
from tests.actors.test_solver_pool import check_complete, requests  # noqa: E402

pytestmark = pytest.mark.cluster


def test_node_loss_mid_run_loses_no_problem():
    if ray.is_initialized():
        ray.shutdown()
    # The head has no CPUs, so every solver actor lands on the worker node.
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    worker = cluster.add_node(num_cpus=2)
    try:
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        cluster.wait_for_nodes()
        with RaySolverPool(2, max_attempts=3) as pool:
            results = []
            for i, r in enumerate(pool.imap_unordered(requests(60))):
                results.append(r)
                if i == 8:
                    # The node dies; a replacement node joins (what an autoscaler does).
                    cluster.remove_node(worker)
                    cluster.add_node(num_cpus=2)
            replaced = pool.replaced
        check_complete(results, 60)
        assert replaced >= 1
    finally:
        ray.shutdown()
        cluster.shutdown()


def test_index_actors_on_a_lost_node_are_replaced_and_every_search_is_answered():
    import asyncio

    from symbolkg.actors.retrieval_actor import RetrievalService
    from tests.actors.test_retrieval_actor import CONFIG, QUERIES, expected, search_all, summary

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})  # index actors land on the worker
    worker = cluster.add_node(num_cpus=2)
    try:
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        cluster.wait_for_nodes()
        service = RetrievalService.actors(CONFIG, 2, num_cpus=0.5, restarts=2)
        try:
            before = asyncio.run(search_all(service))
            cluster.remove_node(worker)  # both index actors die with their node; a new node joins
            cluster.add_node(num_cpus=2)
            after = asyncio.run(search_all(service, QUERIES * 2))
        finally:
            service.close()
        assert [summary(r) for r in before] == expected()
        assert [summary(r) for r in after] == expected() * 2
        assert service.stats.restarts == 2 and service.stats.failed == 0
    finally:
        ray.shutdown()
        cluster.shutdown()
