"""symbolkg.cluster.local: a head and a worker as real `ray start` processes on this machine.

The slow tests start real Ray nodes (~20-40 s each on a busy 2-core box) and check afterwards that
every process they started is gone.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from symbolkg.cluster.local import HEAD_RESOURCE, LocalCluster, LocalClusterError, main, worker_resource

REPO = Path(__file__).resolve().parents[2]


def live_pids() -> set[int]:
    """Running processes; a zombie (dead, not yet reaped by its new parent, init) does not count."""
    pids = set()
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                pids.add(int(p))
        except OSError:
            continue
    return pids


def descendants(roots: set[int]) -> set[int]:
    """Every live descendant of ``roots`` (by parent pid)."""
    children: dict[int, list[int]] = {}
    for pid in live_pids():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def sid_of(pid: int) -> int | None:
    """The session of ``pid``; None if it has exited since."""
    try:
        return os.getsid(pid)
    except ProcessLookupError:
        return None


def test_a_busy_port_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as busy:
        busy.bind(("", 0))
        busy.listen()
        cluster = LocalCluster(workers=1, port=busy.getsockname()[1], state_dir=tmp_path / "state")
        with pytest.raises(LocalClusterError, match=f"port {busy.getsockname()[1]} is in use"):
            cluster.up()
    assert cluster.nodes == [] and not (tmp_path / "state").exists()


def test_a_state_dir_too_long_for_rays_sockets_is_refused(tmp_path):
    cluster = LocalCluster(workers=1, state_dir=tmp_path / ("x" * 60))
    with pytest.raises(LocalClusterError, match="too long for Ray's unix socket paths"):
        cluster.up()
    assert cluster.nodes == []


def test_cli_without_a_cluster_says_so(tmp_path, capsys):
    assert main(["down", "--state-dir", str(tmp_path)]) == 0
    assert "nothing to stop" in capsys.readouterr().err
    assert main(["status", "--state-dir", str(tmp_path)]) == 1
    assert "no local cluster is recorded" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.timeout(600)  # ~50 s idle: up, the detection below, down
def test_work_runs_on_both_nodes_a_killed_worker_is_noticed_and_down_leaves_nothing():
    import ray

    if ray.is_initialized():
        ray.shutdown()
    # A node starts in ~14 s idle (the head and one worker: 28 s); 300 s per node is over 10x that.
    cluster = LocalCluster(workers=1, num_cpus_per_node=1, start_timeout_s=300)
    cluster.up()
    started = set()
    try:
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        try:

            @ray.remote(num_cpus=0.5)
            def node_id() -> str:
                return ray.get_runtime_context().get_node_id()

            ran_on = {
                res: set(ray.get([node_id.options(resources={res: 0.01}).remote() for _ in range(3)]))
                for res in (HEAD_RESOURCE, worker_resource(0))
            }
            (head_id,), (worker_id,) = ran_on[HEAD_RESOURCE], ran_on[worker_resource(0)]
            assert head_id != worker_id
            nodes = {n["NodeID"]: n for n in ray.nodes() if n["Alive"]}
            assert nodes[head_id]["Resources"][HEAD_RESOURCE] == 1
            assert nodes[worker_id]["Resources"][worker_resource(0)] == 1

            # Everything the nodes started (GCS, raylets, agents, the task workers) is in their sessions,
            # which is what down() and kill_worker() signal.
            leaders = {n.pid for n in cluster.nodes}
            assert {sid_of(pid) for pid in descendants(leaders)} <= leaders | {None}
            started = cluster.processes()
            worker_processes = cluster.processes(cluster.node("worker-0"))
            assert len(worker_processes) >= 2  # at least `ray start` and its raylet

            cluster.kill_worker(0)
            assert not worker_processes & live_pids()
            # Ray marks a node dead after missed health checks: measured idle, 15 s after the kill.
            # The deadline is 10x that (the test's own timeout leaves room for it).
            t0 = time.monotonic()
            while any(n["NodeID"] == worker_id and n["Alive"] for n in ray.nodes()):
                assert time.monotonic() - t0 < 160, "the head never noticed the lost worker node"
                time.sleep(0.5)
            assert ray.get(node_id.options(resources={HEAD_RESOURCE: 0.01}).remote()) == head_id
        finally:
            ray.shutdown()
    finally:
        started |= cluster.processes()
        cluster.down()
    assert not started & live_pids()
    assert cluster.state_dir is None  # the auto-created temp dir is gone too


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.timeout(480)
def test_cli_up_returns_and_leaves_the_cluster_running_until_down():
    state = Path(tempfile.mkdtemp(prefix="skg-cli-", dir="/tmp"))  # short: Ray's socket paths live under it
    cli = [sys.executable, "-m", "symbolkg.cluster.local"]
    # Measured idle: up 28 s, status 0.3 s, down 4.4 s; each timeout is over 10x its command's time.
    up = subprocess.run(
        [*cli, "up", "--workers", "1", "--state-dir", str(state)], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    try:
        assert up.returncode == 0, up.stderr
        address = up.stdout.strip()
        assert address.rsplit(":", 1)[1].isdigit()  # stdout is the address alone: RAY_ADDRESS=$(... up)
        status = json.loads(
            subprocess.run(
                [*cli, "status", "--json", "--state-dir", str(state)],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout
        )
        assert status["address"] == address
        assert [(n["name"], n["alive"]) for n in status["nodes"]] == [("head", True), ("worker-0", True)]
        started = LocalCluster.attach(state).processes()
    finally:
        down = subprocess.run(
            [*cli, "down", "--state-dir", str(state)], cwd=REPO, capture_output=True, text=True, timeout=60
        )
        shutil.rmtree(state, ignore_errors=True)
    assert down.returncode == 0, down.stderr
    assert not started & live_pids()


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.timeout(420)
def test_nodes_die_with_a_killed_python_owner():
    """A test run killed hard (SIGKILL, no cleanup) leaves no Ray processes behind."""
    owner_code = (
        "import json, time\n"
        "from symbolkg.cluster.local import LocalCluster\n"
        "cluster = LocalCluster(workers=1, start_timeout_s=300)\n"
        "cluster.up()\n"
        "print(json.dumps({'state_dir': str(cluster.state_dir), 'pids': sorted(cluster.processes())}), flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", owner_code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        started = json.loads(owner.stdout.readline())
    finally:
        owner.kill()
        owner.wait()
    shutil.rmtree(started["state_dir"], ignore_errors=True)  # its logs: nothing removed them
    pids = set(started["pids"])
    t0 = time.monotonic()
    while pids & live_pids():  # measured idle: all gone 3.4 s after the owner's death; 10x that and more
        assert time.monotonic() - t0 < 40, f"orphaned Ray processes: {sorted(pids & live_pids())}"
        time.sleep(0.5)
