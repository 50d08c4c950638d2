"""A multi-node Ray cluster on one machine, started the way a user starts a real one: ``ray start``.

One head and N worker nodes, each a ``ray start --block`` process with its own temp dir, ports and
a custom resource naming it (``head``, ``worker_0``, ``worker_1``, ...), so work can be pinned to a
node and a test can see which node ran it::

    python -m symbolkg.cluster.local up --workers 1          # prints the address on stdout
    RAY_ADDRESS=$(python -m symbolkg.cluster.local status --address) symbolkg solve ... --executor ray --llm-actor
    python -m symbolkg.cluster.local down

or from Python (tests)::

    with LocalCluster(workers=1, num_cpus_per_node=1) as cluster:
        ray.init(address=cluster.address)
        ...
        cluster.kill_worker(0)                      # node loss: SIGKILL of every process of the node

Choices that keep it from touching anything else on a shared machine:

* Nothing is found or stopped by name: ``ray stop`` would stop every Ray on the machine. Each node
  runs in its own session (``setsid``), and only processes in the recorded sessions are signalled.
* Every port is chosen free (GCS unless ``--port`` is given, dashboard, Ray client server, dashboard
  agent), and the temp dirs are private: no clash with another Ray on the machine, and a plain
  ``ray.init()`` elsewhere does not join this cluster (it follows ``/tmp/ray/ray_current_cluster``,
  which these nodes never write); drivers join through the address.
* A :class:`LocalCluster` used from Python dies with the process that started it (Linux
  ``PR_SET_PDEATHSIG``): no orphan raylets when a test run is killed. The processes ``up`` starts
  from the command line outlive it, until ``down``.
* ``RAY_AUTH_MODE`` defaults to ``disabled`` for these nodes, because in Ray 2.60 a
  ``ray start --head`` turns token authentication on by itself when ``~/.ray/auth_token`` exists,
  but neither a joining ``ray start`` nor ``ray.init(address=...)`` does: the worker node could not
  join. Set ``RAY_AUTH_MODE=token`` in the environment of ``up`` *and* of every driver to require
  the token instead.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

HEAD_RESOURCE = "head"
STATE_FILE = "cluster.json"
# Ray's unix socket paths (session dir + "/sockets/plasma_store") must stay under ~107 bytes, so
# temp dirs live directly under /tmp, not under a long $TMPDIR (macOS: /var/folders/...).
_SHORT_TMP = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
DEFAULT_STATE_DIR = os.path.join(_SHORT_TMP, f"symbolkg-ray-{os.getuid()}")
_MAX_SOCKET_PATH = 107  # AF_UNIX path limit on Linux (108 with the terminating NUL)
_SESSION_AND_SOCKET = "session_2026-01-01_00-00-00_000000_4194304/sockets/plasma_store"  # longest pid: 2^22
_PR_SET_PDEATHSIG = 1


class LocalClusterError(RuntimeError):
    """The cluster could not be started, found or stopped; the message says why and what to do."""


def worker_resource(index: int) -> str:
    """The custom resource (amount 1) that only worker node ``index`` has."""
    return f"worker_{index}"


@dataclass(frozen=True)
class NodeProcess:
    """One node: the ``ray start --block`` process, which leads the session of all its processes.

    Attributes:
        name: ``head`` or ``worker-<i>``.
        resource: the custom resource only this node has (amount 1).
        pid: the ``ray start`` process; its session id, too (it was started with ``setsid``).
        temp_dir: the node's Ray temp dir (session dirs, logs, sockets).
        log: ``ray start``'s own output.
    """

    name: str
    resource: str
    pid: int
    temp_dir: str
    log: str


class LocalCluster:
    """A head and ``workers`` worker nodes on this machine, each a real ``ray start`` process.

    Args:
        workers: worker nodes besides the head (>= 0).
        num_cpus_per_node: logical CPUs each node advertises, the head included (>= 0). Nodes
            advertise no GPUs: on one host each would claim all of the host's GPUs.
        port: GCS port of the head; None picks a free one. A busy port is an error.
        object_store_mb: object store per node in MiB (Ray's minimum is ~75). Small by default:
            the default (30% of RAM per node) would reserve most of /dev/shm for a few nodes.
        state_dir: where temp dirs, logs and ``cluster.json`` go. None: a fresh dir under /tmp,
            removed by :meth:`down`. Keep the path short (unix socket length limit).
        start_timeout_s: how long one node may take to start (seconds). Measured on a 2-core
            machine: the head about 11 s, a worker about 7 s, up to about 14 s seen under load. The
            default, 180 s, is over 10x the slowest of those, so a busy machine does not fail a start
            that is merely slow (90 s, the former default, was only about 6x).
        dashboard: also serve the dashboard and the jobs API on 127.0.0.1 (:attr:`dashboard_url`,
            for ``ray job submit``); costs a few hundred MB more on the head.
        fate_share: Linux: the nodes get SIGTERM when the thread that called :meth:`up` ends (so
            it must be the main thread), even if the process is killed without cleanup. The
            command line turns it off: its cluster outlives ``up``.

    Raises:
        ValueError: a bad argument.
    """

    def __init__(
        self,
        workers: int = 1,
        *,
        num_cpus_per_node: int = 1,
        port: int | None = None,
        object_store_mb: int = 100,
        state_dir: str | os.PathLike[str] | None = None,
        start_timeout_s: float = 180.0,
        dashboard: bool = False,
        fate_share: bool = True,
    ) -> None:
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        if num_cpus_per_node < 0:
            raise ValueError(f"num_cpus_per_node must be >= 0, got {num_cpus_per_node}")
        if port is not None and not 1024 <= port <= 65535:
            raise ValueError(f"port must be in 1024..65535 (or None for a free one), got {port}")
        if object_store_mb < 75:
            raise ValueError(f"object_store_mb must be >= 75 (Ray's minimum), got {object_store_mb}")
        self.workers = workers
        self.num_cpus_per_node = num_cpus_per_node
        self.port = port
        self.object_store_mb = object_store_mb
        self.start_timeout_s = start_timeout_s
        self.dashboard = dashboard
        self.fate_share = fate_share and sys.platform.startswith("linux")
        self._state_dir = Path(state_dir) if state_dir is not None else None
        self._owns_state_dir = state_dir is None
        self.address: str | None = None
        self.dashboard_url: str | None = None
        self.nodes: list[NodeProcess] = []
        self._children: dict[int, subprocess.Popen] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def state_dir(self) -> Path | None:
        """Temp dirs, logs and ``cluster.json``; None before :meth:`up` when it is auto-created."""
        return self._state_dir

    def up(self) -> str:
        """Start the head, then the workers; return the cluster address (``ip:port``).

        Every node is registered with the head when this returns (``ray start`` waits for that).
        If anything fails, whatever was started is stopped before the error propagates.

        Raises:
            LocalClusterError: Ray is not installed, the port is busy, ``state_dir`` is too long for
                Ray's socket paths or already records a cluster, or a node did not start (the
                message ends with its log).
            RuntimeError: ``fate_share`` and not on the main thread.
        """
        if self.nodes:
            raise LocalClusterError(f"this cluster is already up at {self.address}")
        if importlib.util.find_spec("ray") is None:
            raise LocalClusterError(
                f"Ray is not installed for {sys.executable}; install the project "
                "(`pip install -e .`, or run cluster/setup_node.sh)"
            )
        if self.fate_share and threading.current_thread() is not threading.main_thread():
            raise RuntimeError(
                "start a fate-shared LocalCluster on the main thread: its processes die with the "
                f"thread that started them (this is {threading.current_thread().name!r})"
            )
        if self.port is not None and not _port_is_free(self.port):
            raise LocalClusterError(
                f"port {self.port} is in use (another Ray head? see `python -m symbolkg.cluster.local "
                "status`); pass another --port, or none to get a free one"
            )
        if self._state_dir is None:
            self._state_dir = Path(tempfile.mkdtemp(prefix="skg-ray-", dir=_SHORT_TMP))
        else:
            longest = self._state_dir.absolute() / f"worker-{max(self.workers - 1, 0)}" / _SESSION_AND_SOCKET
            if len(str(longest)) > _MAX_SOCKET_PATH:
                raise LocalClusterError(
                    f"state dir {self._state_dir} is too long for Ray's unix socket paths "
                    f"({len(str(longest))} > {_MAX_SOCKET_PATH} bytes, e.g. {longest}); "
                    "pick a shorter one, e.g. under /tmp"
                )
            self._state_dir.mkdir(parents=True, exist_ok=True)
            recorded = self._state_dir / STATE_FILE
            if recorded.exists():
                raise LocalClusterError(
                    f"a cluster is already recorded in {recorded}; stop it first "
                    f"(`python -m symbolkg.cluster.local down --state-dir {self._state_dir}`)"
                )
        state_dir = self._state_dir
        try:
            gcs_port = self.port if self.port is not None else _free_port()
            # The dashboard and the Ray client server default to fixed ports (8265, 10001) that another
            # Ray on the machine may hold (and `ray start` checks the dashboard's even when it is off).
            dashboard_port, client_port = _free_port(), _free_port()
            head_args = [
                "--head",
                f"--port={gcs_port}",
                f"--include-dashboard={str(self.dashboard).lower()}",
                "--dashboard-host=127.0.0.1",
                f"--dashboard-port={dashboard_port}",
                f"--ray-client-server-port={client_port}",
            ]
            head = self._start_node(state_dir, "head", HEAD_RESOURCE, head_args)
            self.address = (Path(head.temp_dir) / "ray_current_cluster").read_text().strip()
            if self.dashboard:
                self.dashboard_url = f"http://127.0.0.1:{dashboard_port}"
            self._write_state(state_dir)
            for i in range(self.workers):
                self._start_node(state_dir, f"worker-{i}", worker_resource(i), [f"--address={self.address}"])
        except BaseException:
            self.down()
            raise
        return self.address

    def down(self, grace_s: float = 15.0) -> None:
        """Stop every process of every node; remove the state (and the state dir if it was auto-created).

        SIGTERM first (``ray start --block`` then stops its node's processes), SIGKILL after
        ``grace_s``. Only processes in the sessions of the recorded ``ray start`` processes are
        signalled.

        Raises:
            LocalClusterError: some processes survived SIGKILL (their pids are listed).
        """
        for node in self.nodes:
            self._signal(node, signal.SIGTERM)
        self._wait_gone(self.nodes, grace_s)
        for node in self.nodes:
            self._signal(node, signal.SIGKILL)
        survivors = self._wait_gone(self.nodes, 5.0)
        if survivors:
            raise LocalClusterError(f"Ray processes survived SIGKILL: {sorted(survivors)}")
        if self._state_dir is not None:
            if self._owns_state_dir:
                shutil.rmtree(self._state_dir, ignore_errors=True)
                self._state_dir = None
            else:
                (self._state_dir / STATE_FILE).unlink(missing_ok=True)
                for node in self.nodes:
                    shutil.rmtree(node.temp_dir, ignore_errors=True)
                    Path(node.log).unlink(missing_ok=True)
        self.nodes = []
        self.address = self.dashboard_url = None

    def kill_worker(self, index: int) -> None:
        """Simulate the loss of worker node ``index``: SIGKILL every process of it, no goodbye to the head.

        The head notices through its health checks: ~15 s with Ray's defaults.

        Raises:
            IndexError: no such worker.
            LocalClusterError: some of its processes survived SIGKILL.
        """
        node = self.node(f"worker-{index}")
        self._signal(node, signal.SIGKILL)
        survivors = self._wait_gone([node], 5.0)
        if survivors:
            raise LocalClusterError(f"processes of {node.name} survived SIGKILL: {sorted(survivors)}")

    def __enter__(self) -> LocalCluster:
        self.up()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.down()

    # ------------------------------------------------------------------ inspection

    def node(self, name: str) -> NodeProcess:
        """The node called ``name`` (``head``, ``worker-0``, ...). Raises IndexError if there is none."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise IndexError(f"no node {name!r} in this cluster (nodes: {', '.join(n.name for n in self.nodes) or 'none'})")

    def processes(self, node: NodeProcess | None = None) -> set[int]:
        """Live pids of ``node`` (default: of all nodes): every process in the node's session."""
        nodes = [node] if node is not None else self.nodes
        return {pid for n in nodes for pid in _node_pids(n)}

    def is_alive(self, node: NodeProcess) -> bool:
        """Whether the node's ``ray start`` process still runs (process level; the GCS may lag)."""
        return node.pid in self.processes(node)

    @classmethod
    def attach(cls, state_dir: str | os.PathLike[str] = DEFAULT_STATE_DIR) -> LocalCluster:
        """The cluster recorded in ``state_dir`` by an earlier :meth:`up` (another process, usually).

        Raises:
            LocalClusterError: nothing is recorded there.
        """
        path = Path(state_dir) / STATE_FILE
        if not path.exists():
            raise LocalClusterError(
                f"no local cluster is recorded in {state_dir} (start one with `python -m symbolkg.cluster.local up`)"
            )
        state = json.loads(path.read_text())
        cluster = cls(
            state["workers"],
            num_cpus_per_node=state["num_cpus_per_node"],
            object_store_mb=state["object_store_mb"],
            state_dir=state_dir,
            dashboard=state["dashboard_url"] is not None,
            fate_share=False,
        )
        cluster.address = state["address"]
        cluster.dashboard_url = state["dashboard_url"]
        cluster.nodes = [NodeProcess(**n) for n in state["nodes"]]
        return cluster

    # ------------------------------------------------------------------ internals

    def _start_node(self, state_dir: Path, name: str, resource: str, extra_args: list[str]) -> NodeProcess:
        temp_dir = state_dir / name
        temp_dir.mkdir()
        log_path = state_dir / f"{name}.log"
        # `ray start`, run by this interpreter so that nodes and drivers have the same Ray. No GPUs:
        # every node on one host would claim all of the host's GPUs, counting each several times.
        cmd = [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "start",
            "--block",
            *extra_args,
            f"--num-cpus={self.num_cpus_per_node}",
            "--num-gpus=0",
            f"--resources={json.dumps({resource: 1})}",
            f"--object-store-memory={self.object_store_mb * 1024 * 1024}",
            f"--temp-dir={temp_dir}",
            f"--dashboard-agent-listen-port={_free_port()}",
            # Worker processes bind random ports: several raylets on one host share the port range.
            "--min-worker-port=0",
            "--max-worker-port=0",
            "--disable-usage-stats",
        ]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_node_env(),
                start_new_session=True,
                preexec_fn=_die_with_parent if self.fate_share else None,
            )
        self._children[proc.pid] = proc
        node = NodeProcess(name, resource, proc.pid, str(temp_dir), str(log_path))
        self.nodes.append(node)
        self._write_state(state_dir)  # at once: if this process is killed now, `down` still finds the node
        # `ray start` writes the address file once its node is registered with the GCS.
        ready = temp_dir / "ray_current_cluster"
        deadline = time.monotonic() + self.start_timeout_s
        while not ready.exists():
            if proc.poll() is not None:
                raise LocalClusterError(
                    f"{name} did not start (`ray start` exited {proc.returncode}); "
                    f"its log {log_path} ends:\n{_tail(log_path)}"
                )
            if time.monotonic() > deadline:
                raise LocalClusterError(
                    f"{name} did not start within {self.start_timeout_s:.0f} s; "
                    f"its log {log_path} ends:\n{_tail(log_path)}"
                )
            time.sleep(0.2)
        return node

    def _write_state(self, state_dir: Path) -> None:
        state = {
            "address": self.address,
            "dashboard_url": self.dashboard_url,
            "workers": self.workers,
            "num_cpus_per_node": self.num_cpus_per_node,
            "object_store_mb": self.object_store_mb,
            "nodes": [asdict(n) for n in self.nodes],
        }
        tmp = state_dir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(state_dir / STATE_FILE)

    def _signal(self, node: NodeProcess, sig: signal.Signals) -> None:
        for pid in _node_pids(node):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def _wait_gone(self, nodes: list[NodeProcess], timeout_s: float) -> set[int]:
        """Wait until the nodes have no live process (reaping our own children); return the survivors."""
        deadline = time.monotonic() + timeout_s
        while True:
            for pid, proc in list(self._children.items()):
                if proc.poll() is not None:
                    del self._children[pid]
            alive = {pid for n in nodes for pid in _node_pids(n)}
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.2)


def _node_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)  # a node joins the head it is given, never a cluster from the caller's environment
    env.setdefault("RAY_AUTH_MODE", "disabled")  # see the module docstring
    env.setdefault("RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S", "0")  # nothing to drain on a test cluster: stop at once
    # A job's `python` (`ray job submit -- python -m symbolkg.jobs solve ...`) is the nodes'
    # interpreter, as in a cluster image.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the thread that started it ends (Linux)."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _all_pids() -> Iterator[int]:
    if os.path.isdir("/proc"):
        yield from (int(p) for p in os.listdir("/proc") if p.isdigit())
    else:
        out = subprocess.run(["ps", "-A", "-o", "pid="], capture_output=True, text=True, check=True).stdout
        yield from (int(p) for p in out.split())


def _node_pids(node: NodeProcess) -> set[int]:
    """Live processes of ``node``: its session, unless the session is gone and its id reused.

    Linux reuses a pid only once no process has it as pid, group or session id; so if the leader
    pid runs something that is not this node's `ray start`, the node's session is gone. (An exiting
    process shows an empty command line: still ours.)
    """
    pids = _session_pids(node.pid)
    if node.pid in pids:
        cmdline = _cmdline(node.pid)
        if cmdline and f"--temp-dir={node.temp_dir}" not in cmdline:
            return set()
    return pids


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return subprocess.run(["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True).stdout


def _session_pids(sid: int) -> set[int]:
    """Live processes of session ``sid`` (zombies excluded: they are dead, just not reaped)."""
    pids = set()
    for pid in _all_pids():
        try:
            if os.getsid(pid) == sid and not _is_zombie(pid):
                pids.add(pid)
        except (ProcessLookupError, PermissionError):
            continue
    return pids


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(unreadable: {exc})"


# --------------------------------------------------------------------------------- command line


def _cmd_up(args: argparse.Namespace) -> int:
    cluster = LocalCluster(
        args.workers,
        num_cpus_per_node=args.num_cpus_per_node,
        port=args.port,
        object_store_mb=args.object_store_mb,
        state_dir=args.state_dir,
        dashboard=args.dashboard,
        fate_share=False,
    )
    # A SIGTERM while starting must still stop what was started (Python's default would just exit).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    address = cluster.up()
    print(
        f"local Ray cluster up: head + {args.workers} worker(s), {args.num_cpus_per_node} CPU(s) each; "
        f"state and logs in {cluster.state_dir}",
        file=sys.stderr,
    )
    print(f"  drivers:    RAY_ADDRESS={address} symbolkg solve ... --executor ray", file=sys.stderr)
    if cluster.dashboard_url:
        print(
            f"  jobs:       ray job submit --address {cluster.dashboard_url} --working-dir . "
            "-- python -m symbolkg.jobs solve ...",
            file=sys.stderr,
        )
    print("  stop:       python -m symbolkg.cluster.local down", file=sys.stderr)
    print(address)
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    try:
        cluster = LocalCluster.attach(args.state_dir)
    except LocalClusterError:
        print(f"no local cluster recorded in {args.state_dir}; nothing to stop", file=sys.stderr)
        return 0
    address = cluster.address
    cluster.down()
    print(f"stopped the local cluster at {address}", file=sys.stderr)
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    cluster = LocalCluster.attach(args.state_dir)
    if args.address:
        print(cluster.address)
        return 0
    nodes = [
        {
            "name": n.name,
            "resource": n.resource,
            "pid": n.pid,
            "alive": cluster.is_alive(n),
            "processes": len(cluster.processes(n)),
            "log": n.log,
        }
        for n in cluster.nodes
    ]
    if args.json:
        print(json.dumps({"address": cluster.address, "dashboard_url": cluster.dashboard_url, "nodes": nodes}))
        return 0
    print(
        f"address {cluster.address}"
        + (f"   dashboard and jobs API {cluster.dashboard_url}" if cluster.dashboard_url else "")
    )
    for n in nodes:
        state = "alive" if n["alive"] else "DEAD"
        print(f"  {n['name']:<10} {state:<6} pid {n['pid']:<8} {n['processes']:>3} processes  resource {n['resource']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m symbolkg.cluster.local",
        description="A head and N worker Ray nodes on this machine (real `ray start`).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("up", help="start the cluster; print its address on stdout")
    p.add_argument("--workers", type=int, default=1, help="worker nodes besides the head (default 1)")
    p.add_argument("--num-cpus-per-node", type=int, default=1, help="logical CPUs per node, head included (default 1)")
    p.add_argument("--port", type=int, help="GCS port of the head (default: a free one)")
    p.add_argument("--object-store-mb", type=int, default=100, help="object store per node in MiB (default 100)")
    p.add_argument(
        "--dashboard", action="store_true", help="serve the dashboard and jobs API on 127.0.0.1 (for `ray job submit`)"
    )
    p.set_defaults(func=_cmd_up)
    p = sub.add_parser("down", help="stop every process of the recorded cluster")
    p.set_defaults(func=_cmd_down)
    p = sub.add_parser("status", help="the recorded cluster's address and nodes (process level)")
    p.add_argument("--address", action="store_true", help="print only the address")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_status)
    for p in sub.choices.values():
        p.add_argument(
            "--state-dir", default=DEFAULT_STATE_DIR, help=f"state, temp dirs and logs (default {DEFAULT_STATE_DIR})"
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (LocalClusterError, ValueError) as exc:
        print(f"symbolkg.cluster.local {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
