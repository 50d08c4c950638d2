"""How long a command takes to start: ``symbolkg --help``, ``solve --help``, and an MCP server's ``initialize``.

    python benchmarks/startup.py [--runs 20] [--peer-cmd "CMD"] [--baseline DIR] [--quiet-load 3.0]

Each measure is a fresh process, timed from its start (``Popen``) to its answer, ``--runs`` times,
all targets interleaved run by run (so that they meet the same load moment by moment); the table
shows the median and the spread (p10-p90) of each, with the CPU time and peak RSS of the process:

* ``symbolkg --help`` and ``symbolkg solve --help`` (the venv's ``symbolkg`` script): wall time to exit;
* ``mcp serve``: the time to the answer to ``initialize`` (what an MCP client waits for before
  anything else), and to the answer to the first ``tools/list`` sent right after it (``ready``:
  when a client can call a tool). Ours (``symbolkg mcp serve``) and, with ``--peer-cmd``, the
  peer's (default: the Node.js SWI-Prolog server of ``../shared/peers`` if installed at /tmp/peer,
  started as its README says), side by side. After each run stdin is closed and the server's
  process group is waited for (and killed after 20 s), so that no run's leftovers load the next.

``--baseline DIR``: a source tree of another version (e.g. ``git archive <commit> | tar -x -C DIR``)
measured the same way in the same runs, through ``PYTHONPATH`` (its ``symbolkg`` package found
before the installed one): before/after numbers from one machine state.

Writes benchmarks/out/startup.json and benchmarks/out/startup.png and prints the table. Wall
times on a shared machine are noisy; the CPU time of the process varies less (both are recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "out"
REPO = Path(__file__).resolve().parents[1]
SYMBOLKG = Path(sys.executable).with_name("symbolkg")
PEER_JS = Path("/tmp/peer/node_modules/@vpursuit/swipl-mcp-server/lib/index.js")
PEER_CMD = (
    f"env HOME=/tmp/peer/home MCP_LOG_LEVEL=warn SWI_MCP_QUERY_TIMEOUT_MS=5000 node {PEER_JS}"
    if PEER_JS.is_file()
    else None
)
PACKAGES = ("jobs", "actors", "retrieval", "solvers", "cluster")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "startup-benchmark", "version": "1"},
    },
}
EXIT_WAIT_S = 20.0


@dataclass
class Target:
    """One thing to start: a command line, and whether it is an MCP server (timed to its answers) or a CLI call."""

    name: str
    argv: list[str]
    mcp: bool = False
    env: dict[str, str] | None = None
    samples: list[dict[str, float]] = field(default_factory=list)


def cli_argv(*args: str) -> list[str]:
    return [str(SYMBOLKG), *args] if SYMBOLKG.is_file() else [sys.executable, "-m", "symbolkg.jobs.cli", *args]


def _reap(proc: subprocess.Popen[bytes], *, block: bool = False) -> tuple[float, float]:
    """Wait for ``proc`` (``block``: at once, else polling and killing its group after ``EXIT_WAIT_S``);
    its CPU seconds and peak RSS in MB (``wait4``: this child's own, not every child's so far)."""
    deadline = time.monotonic() + EXIT_WAIT_S
    while True:
        pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything the server left in its group (a spare swipl, ...)
    except ProcessLookupError:
        pass
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def time_cli(target: Target) -> dict[str, float]:
    """Wall seconds from start to exit (stdout discarded), CPU seconds, peak RSS."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        target.argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        env=target.env,
        start_new_session=True,
    )
    cpu, rss = _reap(proc, block=True)  # the exit is the measure: no polling delay
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{target.name}: exit status {proc.returncode}")
    return {"wall_s": wall, "cpu_s": cpu, "rss_mb": rss}


def _reply(proc: subprocess.Popen[bytes], request_id: int) -> dict[str, Any]:
    """The next JSON-RPC response with ``request_id`` on the server's stdout (notifications skipped)."""
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server closed its stdout before answering")
        message = json.loads(line)
        if message.get("id") == request_id:
            if "error" in message:
                raise RuntimeError(f"the server answered with an error: {message['error']}")
            return message["result"]


def time_mcp(target: Target) -> dict[str, float]:
    """Seconds from start to the answer to ``initialize``, and to the answer to the first ``tools/list``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        target.argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        env=target.env,
        start_new_session=True,
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        version = _reply(proc, 1)["protocolVersion"]
        t_init = time.perf_counter() - t0
        proc.stdin.write(
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
        )
        proc.stdin.flush()
        tools = len(_reply(proc, 2)["tools"])
        t_ready = time.perf_counter() - t0
    finally:
        proc.stdin.close()
        cpu, rss = _reap(proc)
        if proc.stdout is not None:
            proc.stdout.close()
    return {
        "initialize_s": t_init,
        "ready_s": t_ready,
        "cpu_s": cpu,
        "rss_mb": rss,
        "tools": tools,
        "protocol": version,
    }  # type: ignore[dict-item]


def baseline_env(tree: Path, folder: Path) -> dict[str, str]:
    """An environment in which ``symbolkg`` imports from the source tree ``tree`` (through symlinks in ``folder``)."""
    pkg = folder / "symbolkg"
    pkg.mkdir(parents=True, exist_ok=True)
    for name in PACKAGES:
        if (tree / name).is_dir():
            (pkg / name).symlink_to(tree.resolve() / name)
    return {**os.environ, "PYTHONPATH": str(folder)}


def targets(args: argparse.Namespace, scratch: Path) -> list[Target]:
    found = [
        Target("symbolkg --help", cli_argv("--help")),
        Target("symbolkg solve --help", cli_argv("solve", "--help")),
        Target("mcp serve (ours)", cli_argv("mcp", "serve"), mcp=True),
    ]
    if args.baseline:
        env = baseline_env(Path(args.baseline), scratch)
        found += [Target(f"{t.name} [baseline]", t.argv, t.mcp, env) for t in found[:3]]
    peer = args.peer_cmd or PEER_CMD
    if peer and not args.no_peer:
        found.append(Target("mcp serve (peer)", shlex.split(peer), mcp=True))
    return found


def summary(samples: list[dict[str, Any]], key: str) -> dict[str, float]:
    values = sorted(s[key] for s in samples)
    q = statistics.quantiles(values, n=10) if len(values) > 1 else [values[0]] * 9
    return {
        "median": round(statistics.median(values), 4),
        "p10": round(q[0], 4),
        "p90": round(q[-1], 4),
        "min": round(values[0], 4),
        "max": round(values[-1], 4),
    }


def wait_for_quiet(below: float | None, max_s: float) -> float | None:
    """Wait until the 1-minute load average is under ``below``; seconds waited (None: not asked)."""
    if below is None:
        return None
    t0 = time.monotonic()
    while os.getloadavg()[0] >= below and time.monotonic() - t0 < max_s:
        time.sleep(5)
    return round(time.monotonic() - t0, 1)


def measure(found: list[Target], runs: int) -> None:
    """``runs`` rounds; each round starts every target once, the order alternating round by round."""
    for k in range(runs):
        for target in found if k % 2 == 0 else found[::-1]:
            target.samples.append(time_mcp(target) if target.mcp else time_cli(target))


def report(found: list[Target]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t in found:
        keys = ("initialize_s", "ready_s") if t.mcp else ("wall_s",)
        out[t.name] = {
            "argv": t.argv,
            "baseline": t.env is not None,
            **{k: summary(t.samples, k) for k in (*keys, "cpu_s", "rss_mb")},
            "samples": t.samples,
        }
    return out


def table(results: dict[str, Any]) -> str:
    width = max(len(name) for name in results) + len(": first tools/list") + 1
    lines = [f"{'':{width}s} {'median s':>9s} {'p10-p90 s':>13s} {'CPU s':>7s} {'RSS MB':>7s}"]
    for name, r in results.items():
        for key, label in (("wall_s", "exit"), ("initialize_s", "initialize"), ("ready_s", "first tools/list")):
            if key in r:
                s = r[key]
                lines.append(
                    f"{name + ': ' + label:{width}s} {s['median']:9.3f} {s['p10']:6.3f}-{s['p90']:<6.3f} "
                    f"{r['cpu_s']['median']:7.3f} {r['rss_mb']['median']:7.0f}"
                )
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib  # plotting only here

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [
        (
            f"{name.replace(' [baseline]', '')}\n{label}" + ("\n(baseline)" if r["baseline"] else ""),
            [s[key] for s in r["samples"]],
        )
        for name, r in results.items()
        for key, label in (("wall_s", "to exit"), ("initialize_s", "to initialize"), ("ready_s", "to tools/list"))
        if key in r
    ]
    fig, ax = plt.subplots(figsize=(max(7.0, 1.25 * len(series)), 4.2))
    ax.boxplot([v for _, v in series], whis=(10, 90), showfliers=True)
    ax.set_xticks(range(1, len(series) + 1), [n for n, _ in series], fontsize=7)
    ax.set_ylabel("seconds from process start")
    ax.set_yscale("log")
    ax.set_title(f"Start-up, {len(series[0][1])} runs each (box: quartiles, whiskers: p10-p90)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="starts of each target (default 20)")
    ap.add_argument("--peer-cmd", help=f"the peer MCP server's command line (default: {PEER_CMD or 'none installed'})")
    ap.add_argument("--no-peer", action="store_true", help="measure ours only")
    ap.add_argument(
        "--baseline", metavar="DIR", help="also measure the source tree DIR (another version), side by side"
    )
    ap.add_argument("--quiet-load", type=float, help="first wait until the 1-minute load average is under this")
    ap.add_argument("--name", default="startup", help="output file stem under benchmarks/out/")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as scratch:
        found = targets(args, Path(scratch))
        waited = wait_for_quiet(args.quiet_load, 3600)
        load0, t0 = os.getloadavg(), time.monotonic()
        measure(found, args.runs)
        load1 = os.getloadavg()
    results = report(found)
    doc = {
        "benchmark": "startup",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "runs": args.runs,
        "load_avg_before": load0,
        "load_avg_after": load1,
        "waited_for_quiet_s": waited,
        "total_s": round(time.monotonic() - t0, 1),
        "baseline_tree": args.baseline,
        "results": results,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.name}.json").write_text(json.dumps(doc, indent=1))
    plot(results, OUT / f"{args.name}.png")
    print(
        f"{args.runs} runs each, interleaved; load average {load0[0]:.1f} -> {load1[0]:.1f} ({os.cpu_count()} CPUs)\n"
    )
    print(table(results))
    print(f"\nwrote {OUT / (args.name + '.json')} and {OUT / (args.name + '.png')}  ({doc['total_s']} s)")


if __name__ == "__main__":
    main()
