"""Any stdio MCP server for Prolog, driven by the MCP SDK's client: speed and the bad inputs.

    python benchmarks/mcp_server.py [--server-cmd "python -m symbolkg.jobs.cli mcp serve"]
                                    [--queries 300] [--sessions 100]

The server is a command line (ours by default). The benchmark lists its tools and maps the
ones it needs by name and input schema: a *load* tool (``consult_text``; or any tool named
like consult / load / assert with a source-text argument), a *query* tool (``run_goal``; or
query / goal / solve with a goal argument), and, when the server splits a query into
several calls, its *next* and *close* tools (``query_next`` / ``query_close`` style).
Ours is the reference mapping; a foreign server is driven as far as its tools allow, and
what could not be measured is reported as such.

Measured:

* a simple query (``p(X)`` over a loaded fact): calls it needs, p50 / p95 ms over ``--queries``;
* loading 1,000 facts: ms (median of 5), checked by counting them back;
* ``--sessions`` sessions at once (each loads its own fact and queries it), wall time and
  whether every answer was right and no fact leaked into another session;
* the bad inputs, each ``survived`` or not: an infinite loop, then a normal query on the same
  session; a refused ``shell/1`` goal, then a normal query on the same knowledge base; a
  second command smuggled after a newline in the goal string (did it run?); the client killed
  while a loop runs (is a ``swipl`` process left spinning?).

Writes benchmarks/out/mcp_server.json and benchmarks/out/mcp_server.png and prints a table.
Reference, measured on a public peer (a Node.js SWI-Prolog MCP server, v2.0.6): a simple
query needs 3 calls, 2-7 ms p50; 1,000 facts load in 9-47 ms; after an infinite loop its
session is unusable and its swipl process keeps spinning once the client has gone; a refused
``shell`` goal kills its knowledge base; a newline in a query runs a second command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

OUT = Path(__file__).resolve().parent / "out"
REPO = Path(__file__).resolve().parents[1]
DEFAULT_SERVER = f"{sys.executable} -m symbolkg.jobs.cli mcp serve --max-sessions 128"
PEER_REFERENCE = {
    "server": "Node.js SWI-Prolog MCP server v2.0.6 (measured by the issue's author)",
    "calls_per_simple_query": 3, "simple_query_p50_ms": [2, 7], "load_1000_facts_ms": [9, 47],
    "survived": {"infinite_loop_then_query": False, "refused_shell_then_query": False,
                 "newline_smuggled_command": False, "client_killed_during_loop": False},
}
CALL_TIMEOUT_S = 20.0  # a call that hangs longer than this counts as not survived


# ------------------------------------------------------------------------------------- tool mapping


@dataclass
class ToolMap:
    """Which of the server's tools the benchmark uses, and with which argument names."""

    load: str | None = None
    load_arg: str | None = None
    query: str | None = None
    query_arg: str | None = None
    next: str | None = None
    close: str | None = None
    session_arg: str | None = None  # e.g. load_id: the query tool takes the id the load tool returned
    time_arg: str | None = None  # e.g. time_limit
    notes: list[str] = field(default_factory=list)

    @classmethod
    def discover(cls, tools: list[Any]) -> ToolMap:
        by_name = {t.name: t for t in tools}
        m = cls()

        def string_props(tool: Any) -> list[str]:
            props = (tool.input_schema or {}).get("properties", {})
            return [k for k, v in props.items() if v.get("type") == "string"]

        def pick(name_re: str, arg_re: str, prefer: str) -> tuple[str | None, str | None]:
            names = [prefer] if prefer in by_name else []
            names += sorted(n for n in by_name if re.search(name_re, n, re.IGNORECASE) and n != prefer)
            for n in names:
                args = [a for a in string_props(by_name[n]) if re.search(arg_re, a, re.IGNORECASE)]
                if args:
                    return n, args[0]
            return None, None

        m.load, m.load_arg = pick(r"consult|load|assert", r"source|text|program|content|clause|fact|code", "consult_text")
        m.query, m.query_arg = pick(r"run_goal|query|goal|solve", r"goal|query", "run_goal")
        if m.query and m.query != "run_goal":
            m.next = next((n for n in by_name if re.search(r"next", n, re.IGNORECASE)), None)
            m.close = next((n for n in by_name if re.search(r"query.*(close|end|stop)|(close|end)_query", n, re.IGNORECASE)), None)
        if m.query:
            props = (by_name[m.query].input_schema or {}).get("properties", {})
            m.session_arg = next((a for a in ("load_id", "session_id", "session") if a in props), None)
            m.time_arg = next((a for a in ("time_limit", "timeout", "timeout_s") if a in props), None)
        if m.load is None:
            m.notes.append("no tool to load source text")
        if m.query is None:
            m.notes.append("no tool to run a query")
        return m

    @property
    def calls_per_query(self) -> int:
        return 1 + (self.next is not None) + (self.close is not None)


class Driver:
    """Loads and queries through the mapped tools; counts calls."""

    def __init__(self, client: Client, tools: ToolMap, names: set[str]) -> None:
        self.client, self.map, self.names = client, tools, names
        self.calls = 0

    async def _call(self, name: str, args: dict[str, Any], timeout_s: float = CALL_TIMEOUT_S) -> Any:
        self.calls += 1
        return await asyncio.wait_for(self.client.call_tool(name, args), timeout_s)

    async def load(self, text: str) -> tuple[str | None, Any]:
        """Load ``text``; returns (session id or None, raw result)."""
        result = await self._call(self.map.load, {self.map.load_arg: text})  # type: ignore[arg-type, dict-item]
        data = result.structured_content or {}
        sid = data.get(self.map.session_arg) if self.map.session_arg else None
        return sid, result

    async def query(self, sid: str | None, goal: str, *, time_limit: float | None = None,
                    timeout_s: float = CALL_TIMEOUT_S) -> tuple[bool, str, Any]:
        """Run ``goal`` (all the calls the server needs); returns (no error, all text, the first result)."""
        args: dict[str, Any] = {self.map.query_arg: goal}  # type: ignore[dict-item]
        if self.map.session_arg and sid is not None:
            args[self.map.session_arg] = sid
        if self.map.time_arg and time_limit is not None:
            args[self.map.time_arg] = time_limit
        first = await self._call(self.map.query, args, timeout_s)  # type: ignore[arg-type]
        results = [first]
        if self.map.next:
            results.append(await self._call(self.map.next, {}, timeout_s))
        if self.map.close:
            results.append(await self._call(self.map.close, {}, timeout_s))
        ok = not any(r.is_error for r in results) and (first.structured_content or {}).get("ok", True) is not False
        return ok, " ".join(text_of(r) for r in results), first


def text_of(result: Any) -> str:
    if result.structured_content is not None:
        return json.dumps(result.structured_content)
    return " ".join(getattr(c, "text", "") for c in result.content)


def quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] if s else float("nan")


def params_for(cmd: str) -> StdioServerParameters:
    argv = shlex.split(cmd)
    return StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(REPO))


# ------------------------------------------------------------------------------------------ measures


async def measure_speed(d: Driver, queries: int) -> dict[str, Any]:
    sid, _ = await d.load("p(hello_bench).\n")
    for _ in range(10):  # warm-up
        await d.query(sid, "p(X)")
    ms, right = [], 0
    calls0 = d.calls
    for _ in range(queries):
        t0 = time.perf_counter()
        ok, text, _ = await d.query(sid, "p(X)")
        ms.append((time.perf_counter() - t0) * 1000)
        right += ok and "hello_bench" in text
    calls = (d.calls - calls0) / queries
    facts = "".join(f"fact({i}, name_{i}).\n" for i in range(1000))
    load_ms, counted = [], None
    for _ in range(5):
        t0 = time.perf_counter()
        fsid, _ = await d.load(facts)
        load_ms.append((time.perf_counter() - t0) * 1000)
        ok, text, _ = await d.query(fsid, "aggregate_all(count, fact(_, _), N)")
        counted = "1000" in text if ok else False
        await close(d, fsid)
    await close(d, sid)
    return {"calls_per_simple_query": calls, "simple_query_p50_ms": round(quantile(ms, 0.5), 3),
            "simple_query_p95_ms": round(quantile(ms, 0.95), 3), "simple_query_correct": f"{right}/{queries}",
            "simple_query_ms": [round(x, 3) for x in ms],
            "load_1000_facts_ms": round(statistics.median(load_ms), 2), "load_1000_facts_runs_ms": load_ms,
            "load_1000_facts_counted_back": counted}


async def close(d: Driver, sid: str | None) -> None:
    if sid is not None and "close_session" in d.names:
        await d.client.call_tool("close_session", {"load_id": sid})


async def measure_sessions(d: Driver, n: int) -> dict[str, Any]:
    if d.map.session_arg is None:
        return {"sessions": n, "measured": False, "why": "the server has no per-session id on its query tool"}

    async def one(i: int) -> tuple[bool, bool, str | None]:
        sid, _ = await d.load(f"mine({i}).\nsecret_{i}(yes).\n")
        ok, text, _ = await d.query(sid, "mine(X)")
        leak_ok, leak_text, _ = await d.query(sid, f"catch(secret_{(i + 1) % n}(Y), _, fail)")
        isolated = not leak_ok or '"failure"' in leak_text
        return ok and str(i) in text, isolated, sid

    t0 = time.perf_counter()
    rows = await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.perf_counter() - t0
    await asyncio.gather(*(close(d, sid) for _, _, sid in rows))
    return {"sessions": n, "measured": True, "wall_s": round(wall, 3), "correct": sum(r[0] for r in rows),
            "isolated": sum(r[1] for r in rows)}


async def bad_inputs(d: Driver) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    base = "fact(1).\nloop :- repeat, fail.\n"

    async def normal(sid: str | None) -> bool:
        try:
            ok, text, _ = await d.query(sid, "fact(X)", time_limit=5.0)
            return ok and "1" in text
        except (TimeoutError, Exception):  # noqa: BLE001 - a broken server is a result here
            return False

    # 1. an infinite loop, then a normal query on the same session
    sid, _ = await d.load(base)
    t0 = time.perf_counter()
    try:
        ok, text, _ = await d.query(sid, "loop", time_limit=2.0, timeout_s=CALL_TIMEOUT_S)
        loop_result = text[:200]
    except (TimeoutError, Exception) as exc:  # noqa: BLE001
        loop_result = f"{type(exc).__name__}: {exc}"
    loop_s = time.perf_counter() - t0
    out["infinite_loop_then_query"] = {"survived": await normal(sid), "loop_call_s": round(loop_s, 2),
                                       "loop_result": loop_result}
    # 2. a refused shell goal, then a normal query on the same knowledge base
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "shell_ran"
        try:
            ok, text, _ = await d.query(sid, f"shell('touch {target}')", time_limit=5.0)
            refused = not ok
        except (TimeoutError, Exception):  # noqa: BLE001
            refused, text = True, "(call failed)"
        out["refused_shell_then_query"] = {"survived": refused and not target.exists() and await normal(sid),
                                           "refused": refused, "shell_ran": target.exists(), "reply": text[:200]}
        # 3. a second command smuggled after a newline
        target = Path(tmp) / "smuggled_ran"
        goal = f"fact(X).\nopen('{target}', write, S), close(S)"
        try:
            ok, text, _ = await d.query(sid, goal, time_limit=5.0)
        except (TimeoutError, Exception) as exc:  # noqa: BLE001
            text = f"{type(exc).__name__}"
        ran = target.exists()
        out["newline_smuggled_command"] = {"survived": not ran and await normal(sid), "second_command_ran": ran,
                                           "reply": text[:200]}
    await close(d, sid)
    return out


def client_killed_during_loop(server_cmd: str, tools: ToolMap) -> dict[str, Any]:
    """Start a client in a child process, let it start an endless goal, SIGKILL it: swipl left spinning?"""
    import psutil

    child = subprocess.Popen([sys.executable, __file__, "--server-cmd", server_cmd, "--child-loop"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO)
    try:
        line = child.stdout.readline() if child.stdout else ""  # "looping" once the goal runs
        time.sleep(1.5)
        swipls = [p for p in psutil.Process(child.pid).children(recursive=True) if "swipl" in p.name()]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    if not line.startswith("looping"):
        return {"survived": False, "why": f"the child client never started the loop: {line.strip()!r}"}
    deadline = time.monotonic() + 10
    spinning: list[int] = []
    while time.monotonic() < deadline:
        spinning = []
        for p in swipls:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE and p.cpu_percent(interval=0.3) > 20:
                    spinning.append(p.pid)
            except psutil.NoSuchProcess:
                pass
        if not spinning:
            break
        time.sleep(0.5)
    for pid in spinning:  # clean up after a server that did not
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {"survived": bool(swipls) and not spinning, "swipl_processes_seen": len(swipls),
            "left_spinning_after_10s": len(spinning)}


async def child_loop(server_cmd: str) -> None:
    """(--child-loop) Connect, load a loop, say "looping", run it forever: the parent kills us."""
    async with Client(params_for(server_cmd)) as client:
        tools = (await client.list_tools()).tools
        d = Driver(client, ToolMap.discover(tools), {t.name for t in tools})
        sid, _ = await d.load("loop :- repeat, fail.\n")
        task = asyncio.create_task(d.query(sid, "loop", time_limit=600.0, timeout_s=3600))
        await asyncio.sleep(0.5)
        print("looping", flush=True)
        await task


# ------------------------------------------------------------------------------------------ reporting


def plot(doc: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 4.5))
    speed = doc["speed"]
    ms = sorted(speed["simple_query_ms"])
    ax1.plot(ms, [(i + 1) / len(ms) for i in range(len(ms))], label=f"this server ({speed['calls_per_simple_query']:.0f} call/query)")
    lo, hi = PEER_REFERENCE["simple_query_p50_ms"]
    ax1.axvspan(lo, hi, color="red", alpha=0.15, label="peer p50 range (3 calls/query)")
    ax1.set_xlim(0, max(ms[-1], hi) * 1.1)
    ax1.set_xlabel("ms per simple query (all the calls it needs)")
    ax1.set_ylabel("fraction of queries")
    ax1.set_title("Simple query latency")
    ax1.legend(fontsize=8)
    ax2.bar(["this server"], [speed["load_1000_facts_ms"]], color="tab:blue")
    lo, hi = PEER_REFERENCE["load_1000_facts_ms"]
    ax2.axhspan(lo, hi, color="red", alpha=0.15, label="peer range")
    ax2.set_ylabel("ms to load 1,000 facts (median of 5)")
    ax2.set_title(f"Load 1,000 facts; {doc['sessions']['sessions']} sessions at once: "
                  f"{doc['sessions'].get('wall_s', 'n/a')} s")
    ax2.legend(fontsize=8)
    names = list(doc["bad_inputs"])
    cells = [[n.replace("_", " "), "survived" if doc["bad_inputs"][n]["survived"] else "FAILED",
              "survived" if PEER_REFERENCE["survived"].get(n) else "failed"] for n in names]
    ax3.axis("off")
    table = ax3.table(cellText=cells, colLabels=["bad input", "this server", "peer v2.0.6"], loc="center",
                      colWidths=[0.56, 0.22, 0.22],
                      cellLoc="left")
    table.auto_set_font_size(False)
    table.set_fontsize(9)
    table.scale(1, 1.6)
    for (row, col), cell in table.get_celld().items():
        if row > 0 and col > 0:
            cell.set_facecolor("#d8f0d8" if cell.get_text().get_text() == "survived" else "#f6d0d0")
    ax3.set_title("Bad inputs")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    async with Client(params_for(args.server_cmd)) as client:
        tools = (await client.list_tools()).tools
        m = ToolMap.discover(tools)
        doc: dict[str, Any] = {"tools": sorted(t.name for t in tools), "mapping": asdict(m)}
        if m.load is None or m.query is None:
            doc["error"] = "cannot drive this server: " + "; ".join(m.notes)
            return doc
        d = Driver(client, m, {t.name for t in tools})
        doc["speed"] = await measure_speed(d, args.queries)
        doc["sessions"] = await measure_sessions(d, args.sessions)
        doc["bad_inputs"] = await bad_inputs(d)
    doc["bad_inputs"]["client_killed_during_loop"] = client_killed_during_loop(args.server_cmd, m)
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server-cmd", default=DEFAULT_SERVER, help="the stdio MCP server's command line")
    ap.add_argument("--queries", type=int, default=300, help="simple queries timed")
    ap.add_argument("--sessions", type=int, default=100, help="sessions opened at once")
    ap.add_argument("--name", default="mcp_server", help="output file stem under benchmarks/out/")
    ap.add_argument("--child-loop", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_loop:
        asyncio.run(child_loop(args.server_cmd))
        return
    t0 = time.monotonic()
    doc = asyncio.run(run(args))
    doc = {"benchmark": "mcp_server", "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
           "cpus": os.cpu_count(), "python": platform.python_version(), "server_cmd": args.server_cmd,
           "total_s": round(time.monotonic() - t0, 1), "peer_reference": PEER_REFERENCE, **doc}
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.name}.json").write_text(json.dumps(doc, indent=1))
    if "error" in doc:
        print(doc["error"])
        return
    s, ss = doc["speed"], doc["sessions"]
    print(f"\nserver: {args.server_cmd}\ntools mapped: load={doc['mapping']['load']} query={doc['mapping']['query']} "
          f"next={doc['mapping']['next']} close={doc['mapping']['close']}")
    print(f"\n{'measure':34s} {'this server':>16s} {'peer (v2.0.6)':>16s}")
    print(f"{'calls per simple query':34s} {s['calls_per_simple_query']:16.0f} {3:16d}")
    print(f"{'simple query p50 / p95 ms':34s} {s['simple_query_p50_ms']:7.2f} /{s['simple_query_p95_ms']:7.2f} {'2-7 (p50)':>16s}")
    print(f"{'load 1,000 facts ms':34s} {s['load_1000_facts_ms']:16.1f} {'9-47':>16s}")
    if ss.get("measured"):
        print(f"{'sessions at once: wall s':34s} {ss['wall_s']:16.2f} {'':>16s}")
        print(f"{'  correct / isolated':34s} {ss['correct']:>7d} /{ss['isolated']:>7d} {'':>16s}")
    for name, r in doc["bad_inputs"].items():
        peer = "survived" if PEER_REFERENCE["survived"][name] else "failed"
        print(f"{name:34s} {'survived' if r['survived'] else 'FAILED':>16s} {peer:>16s}")
    plot(doc, OUT / f"{args.name}.png")
    print(f"\nwrote {OUT / (args.name + '.json')} and {OUT / (args.name + '.png')}  ({doc['total_s']} s)")


if __name__ == "__main__":
    main()
