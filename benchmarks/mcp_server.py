"""Prolog MCP servers side by side, driven by the MCP SDK's client: speed, and what each survives.

    python benchmarks/mcp_server.py [--server-cmd "CMD"]... [--runs 3] [--queries 300] [--block 20]
                                    [--sessions 100] [--sequential-sessions 100] [--quiet-load 3.0]

Every ``--server-cmd`` is a stdio MCP server's command line (default: ours alone); with several,
each run measures every server in turn (interleaved), so that they share the machine's load.
The printed table holds only what was measured in this run; the issue's reference numbers appear
as a labelled footnote.

Honest measurement, whatever the server:

* every call's ``isError`` and structured ``ok`` are checked (clears and closes too: ``must``);
  a step the server refused is reported as refused, with its message, and never timed as if it
  had worked;
* answers are read from the structured result (our ``answers``; the peer's ``solution`` text
  ``[X=1]``), never from substrings of the text;
* the tool mapping is discovered from the server's tool list and printed: the *session*
  mapping (``consult_text`` / ``run_goal``, one call per query) or the *split* mapping
  (``knowledge_base_clear`` then ``knowledge_base_assert_many`` with every clause in one call: its
  5,000-character limit is per clause, not per call; also ``knowledge_base_load`` of a file in its
  allowed folder; ``query_start`` / ``query_next`` / ``query_close``).

Measured per server: a simple query (calls, p50/p95 ms, right answers), all servers side by side
(one connection each, blocks of ``--block`` queries in turn, so that they share the machine's load
moment by moment); loading a program of 1,000 facts (17,780 characters; its size is printed) in
one call (and, for the peer, from a file); ``--sessions`` knowledge bases at once (ours: one
connection; a server with one knowledge base per connection: that many connections);
``--sequential-sessions`` one after another, each a client's whole life (start the server,
initialize, load, query, close: what a tool-using agent that starts a server per task pays, its
start-up included); and bad inputs, each ``survived`` (the session still answers
``fact(X)`` with ``X = 1`` and the probe did no harm) or not: an infinite loop; the issue's five
catch patterns; a refused ``shell/1``; a goal smuggled after a newline or a quote that would assert
a marker fact (queried afterwards); a goal that writes 100 MB; a 1 GB list; the client killed
during a loop.

Processes, measured, never assumed. The benchmark makes itself a child subreaper (Linux), so every
process a server starts stays its descendant even when orphaned. After each step (its connections
closed) it waits up to ``LEFTOVER_GRACE_S`` for them all to exit; what still runs was *left behind*
(a verdict per server), and is then killed (its process group and itself), so that no step's
leftovers load the next and the benchmark leaves nothing behind. The killed-client probe waits for
the goal's own limit (ours: the ``time_limit`` it asked for; a server without per-call limits: its
documented query timeout) plus ``KILL_MARGIN_S`` before it decides: survived when every process of
the server ended within that bound. A server that ends them later, or never, fails, however fast
or slow the machine.

Writes benchmarks/out/<name>.json and prints the table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from mcp import Client, StdioServerParameters

OUT = Path(__file__).resolve().parent / "out"
REPO = Path(__file__).resolve().parents[1]
OURS = f"{sys.executable} -m symbolkg.jobs.cli mcp serve --max-sessions 128"
CALL_TIMEOUT_S = 30.0  # a call that hangs longer counts as not survived
GOAL_LIMIT_S = 2.0
PROBE_TIMEOUT_S = 15.0  # a bad goal's call that has not returned by then is abandoned
LEFTOVER_GRACE_S = 5.0  # after a step's connections close, their processes have this long to exit
KILL_MARGIN_S = 10.0  # the killed-client probe waits for the goal's limit plus this
CHILD_LOOP_LIMIT_S = 30.0  # the time_limit the killed client asks for (ours' default)
PEER_DEFAULT_QUERY_TIMEOUT_S = 30.0  # the peer's documented SWI_MCP_QUERY_TIMEOUT_MS default (its README)
ISSUE_REFERENCE = (
    "Reference (issue 30, not measured here; noisy 2-core machine, 4 interleaved runs): simple query 1 call "
    "(ours) vs 3 (peer), p50 4.9-12.0 ms vs 3.2-6.4 ms; 1,000 facts 33-206 ms (consult_text) vs 19 ms (peer file "
    "load) or 159 ms (assert_many); 100 sessions 3.6-7.4 s vs 32 s and 7.9 GB (74 of 100 peer connections failed)."
)
BASE = "fact(1).\nloop :- repeat, fail.\nr :- r0.\nr0 :- repeat, fail.\nl :- l2.\nl2 :- l.\n"
CATCH_PATTERNS = [
    "catch(r, _, r)",
    "repeat, catch(l, _, true), fail",
    "setup_call_cleanup(true, r, r)",
    "catch(call_with_time_limit(100, r), _, true)",
    "catch(r, _, true)",
]
SMUGGLED = [
    "fact(X).\nassertz(marker(1))",
    "fact(X)\n. assertz(marker(1))",
    "fact('a'), X = 1.\nassertz(marker(1)). %'",
]


class Refused(Exception):
    """The server answered with isError or ok: false."""


@dataclass
class Reply:
    ok: bool
    data: dict[str, Any]
    text: str


def reply_of(result: Any) -> Reply:
    data = result.structured_content if isinstance(result.structured_content, dict) else {}
    text = " ".join(getattr(c, "text", "") for c in result.content)
    return Reply(not result.is_error and data.get("ok", True) is not False, data, text)


def peer_bindings(solution: Any) -> dict[str, str]:
    """``"[X=1,Y=a]"`` -> ``{"X": "1", "Y": "a"}`` (top-level ``Name=Value`` pairs)."""
    if not isinstance(solution, str) or not solution.startswith("["):
        return {}
    out, depth, cur = {}, 0, ""
    for ch in solution[1:-1] + ",":
        if ch == "," and depth == 0:
            if "=" in cur:
                k, v = cur.split("=", 1)
                out[k.strip()] = v.strip()
            cur = ""
            continue
        depth += ch in "([{" and 1 or 0
        depth -= ch in ")]}" and 1 or 0
        cur += ch
    return out


class Server:
    """One connection to a server through the mapped tools; counts calls."""

    def __init__(self, client: Client, tools: list[Any], cmd: str) -> None:
        self.client, self.calls, self.home = client, 0, home_of(cmd)
        names = {t.name for t in tools}
        if {"consult_text", "run_goal"} <= names:
            self.mapping = "session: consult_text / run_goal (1 call per query) / close_session"
            self.split = False
        elif {"query_start", "query_next", "query_close"} <= names and "knowledge_base_assert_many" in names:
            self.mapping = (
                "split: knowledge_base_clear + knowledge_base_assert_many (every clause in one call; "
                "also knowledge_base_load of a file in its allowed folder); query_start / query_next / "
                "query_close"
            )
            self.split = True
        else:
            raise RuntimeError(f"no known tool mapping for tools {sorted(names)}")
        self.names = names
        # The split mapping has no per-call time limit: its queries end at the server's own query
        # timeout (the peer: SWI_MCP_QUERY_TIMEOUT_MS, documented default 30 s).
        m = re.search(r"\bSWI_MCP_QUERY_TIMEOUT_MS=(\d+)", cmd)
        self.query_timeout_s = int(m.group(1)) / 1000 if m else PEER_DEFAULT_QUERY_TIMEOUT_S

    def goal_limit_s(self, requested: float) -> float:
        """The limit a goal run with ``time_limit=requested`` is documented to stop at on this server."""
        return self.query_timeout_s if self.split else requested

    @classmethod
    async def connect(cls, client: Client, cmd: str) -> Server:
        return cls(client, (await client.list_tools()).tools, cmd)

    async def call(self, name: str, args: dict[str, Any], timeout_s: float = CALL_TIMEOUT_S) -> Reply:
        """One call; its reply, ``ok`` False when the server set ``isError`` (or ``ok: false``)."""
        self.calls += 1
        return reply_of(await asyncio.wait_for(self.client.call_tool(name, args), timeout_s))

    async def must(self, name: str, args: dict[str, Any], timeout_s: float = CALL_TIMEOUT_S) -> Reply:
        """:meth:`call`, raising Refused (with the server's message) when it set ``isError``: clears and closes too."""
        r = await self.call(name, args, timeout_s)
        if not r.ok:
            raise Refused(f"{name}: {r.text[:300]}")
        return r

    async def load(self, text: str) -> str | None:
        """Load ``text`` (a new knowledge base) in one call; returns our load_id (None for the peer). Raises Refused.

        Ours: ``consult_text``. The peer: ``knowledge_base_clear`` (its one knowledge base per
        connection), then ``knowledge_base_assert_many`` with every clause in one call (its
        5,000-character limit is per clause, not per call).
        """
        if not self.split:
            r = await self.must("consult_text", {"source_text": text})
            if any(m.get("severity") == "error" for m in r.data.get("messages", [])):
                raise Refused(r.text[:300])
            return r.data["load_id"]
        await self.must("knowledge_base_clear", {})
        clauses = clauses_of(text)
        r = await self.must("knowledge_base_assert_many", {"facts": clauses})
        if r.data.get("success") != len(clauses):
            raise Refused(r.text[:300])
        return None

    async def load_file(self, text: str) -> None:
        """The peer's file load: the text in a file under its allowed folder ($HOME/.swipl-mcp-server/)."""
        folder = Path(self.home) / ".swipl-mcp-server"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "bench_facts.pl"
        path.write_text(text)
        await self.must("knowledge_base_clear", {})
        await self.must("knowledge_base_load", {"filename": str(path)})

    async def query(
        self,
        sid: str | None,
        goal: str,
        *,
        max_answers: int = 1,
        time_limit: float = GOAL_LIMIT_S,
        timeout_s: float = CALL_TIMEOUT_S,
    ) -> list[dict[str, Any]]:
        """Answers of ``goal`` as {var: value} (values as JSON (ours) or text (peer)). Raises Refused."""
        if not self.split:
            r = await self.call(
                "run_goal",
                {"load_id": sid, "goal": goal, "max_answers": max_answers, "time_limit": time_limit},
                timeout_s,
            )
            if not r.ok:
                raise Refused(r.text[:300])
            if r.data.get("outcome") not in ("success", "failure"):
                raise Refused(f"outcome {r.data.get('outcome')}")
            return list(r.data.get("answers", []))
        started = await self.call("query_start", {"query": goal}, timeout_s)
        if not started.ok:  # a start that failed may still leave its query open: close it, as a client would
            closed = await self.call("query_close", {}, timeout_s)
            note = "" if closed.ok else f" (query_close: {closed.text[:120]})"
            raise Refused(f"query_start: {started.text[:300]}{note}")
        answers: list[dict[str, Any]] = []
        failure: Exception | None = None
        try:
            for _ in range(max_answers):
                n = await self.must("query_next", {}, timeout_s)
                if n.data.get("solution") is None:
                    break
                answers.append(peer_bindings(n.data["solution"]))
                if not n.data.get("more_solutions"):
                    break
        except (Refused, TimeoutError) as exc:  # the query stays open on the server: close it, then report this
            failure = exc
        closed = await self.call("query_close", {}, timeout_s)
        if failure is not None:
            raise failure
        if not closed.ok:
            raise Refused(f"query_close: {closed.text[:300]}")
        return answers

    async def fact_is_one(self, sid: str | None) -> bool:
        """The survival check: ``fact(X)`` answers ``X = 1``."""
        try:
            answers = await self.query(sid, "fact(X)", timeout_s=10)
        except (Refused, TimeoutError, Exception):  # noqa: BLE001 - a broken server is a result here
            return False
        return bool(answers) and str(answers[0].get("X")) == "1"

    async def close(self, sid: str | None) -> None:
        """Ours: ``close_session`` (checked). The peer has no sessions: its knowledge base goes with the connection."""
        if sid is not None and "close_session" in self.names:
            r = await self.must("close_session", {"load_id": sid})
            if r.data.get("closed") is not True:
                raise Refused(f"close_session: {r.text[:300]}")


def clauses_of(text: str) -> list[str]:
    return [c.strip().rstrip(".") for c in text.splitlines() if c.strip()]


def quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] if s else float("nan")


def params_for(cmd: str) -> StdioServerParameters:
    argv = shlex.split(cmd)
    return StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(REPO))


def home_of(cmd: str) -> str:
    m = re.search(r"\bHOME=(\S+)", cmd)
    return m.group(1) if m else os.path.expanduser("~")


# ------------------------------------------------------------------------------------------ processes


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux): a process a server orphans becomes our child."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def child_pids() -> set[int]:
    return {c.pid for c in psutil.Process().children()}


def running_descendants(keep: set[int] = frozenset()) -> list[psutil.Process]:
    """Every process below this one that still runs (not a zombie), except those in ``keep``."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.pid not in keep and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def tree_of(pids: set[int]) -> set[int]:
    """``pids`` and all their descendants (the live connections' servers, kept out of a settle)."""
    out = set()
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            out |= {pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))}
    return out


def cpu_s(p: psutil.Process) -> float:
    try:
        t = p.cpu_times()
        return t.user + t.system
    except psutil.Error:
        return 0.0


def describe(p: psutil.Process) -> str:
    try:
        return (" ".join(p.cmdline()) or p.name())[:110]
    except psutil.Error:
        return f"pid {p.pid}"


def kill(procs: list[psutil.Process]) -> None:
    """SIGKILL each process's group (unless it is ours) and the process itself; reap them."""
    own = os.getpgrp()
    for p in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError, psutil.Error):
            pgid = os.getpgid(p.pid)
            if pgid != own:
                os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(procs, timeout=5)


async def settle(bound_s: float = LEFTOVER_GRACE_S, keep: set[int] = frozenset()) -> dict[str, Any]:
    """Wait up to ``bound_s`` for every descendant (but the trees of ``keep``) to exit; kill and report the rest.

    Called when a step's connections are closed (or its client killed): whatever of it still runs
    was left behind by that server. ``waited_s`` is how long the last one took to go (or the bound).
    """
    t0 = time.monotonic()
    first_cpu: dict[int, float] = {}
    while True:
        left = running_descendants(tree_of(keep))
        for p in left:
            first_cpu.setdefault(p.pid, cpu_s(p))
        if not left or time.monotonic() - t0 >= bound_s:
            break
        await asyncio.sleep(0.1)
    waited = time.monotonic() - t0
    rows = [
        {"pid": p.pid, "what": describe(p), "cpu_s_while_waited": round(cpu_s(p) - first_cpu[p.pid], 2)} for p in left
    ]
    kill(left)
    return {"left": len(left), "waited_s": round(waited, 2), "processes": rows}


# ------------------------------------------------------------------------------------------ measures


async def speed_side_by_side(servers: list[str], queries: int, block: int) -> dict[str, Any]:
    """Simple-query latency of every server, in turns of ``block`` queries (order alternating each turn).

    One connection per server, all open at once, so that every server's queries meet the same
    moment-to-moment load; each connection is closed (and settled) on its own.
    """
    conns: list[tuple[str, contextlib.AsyncExitStack, Server, str | None, set[int]]] = []
    out: dict[str, Any] = {}
    try:
        for cmd in servers:
            stack = contextlib.AsyncExitStack()
            before = child_pids()
            try:
                client = await stack.enter_async_context(Client(params_for(cmd)))
                s = await Server.connect(client, cmd)
                sid = await s.load("fact(1).\n")
                for _ in range(10):
                    await s.query(sid, "fact(X)")
            except Exception as exc:  # noqa: BLE001 - a server that fails is a result
                await stack.aclose()
                out[cmd] = {"failed": f"{type(exc).__name__}: {exc}"[:300]}
                continue
            conns.append((cmd, stack, s, sid, child_pids() - before))
        ms: dict[str, list[float]] = {c[0]: [] for c in conns}
        right = dict.fromkeys(ms, 0)
        calls0 = {c[0]: c[2].calls for c in conns}
        load0 = os.getloadavg()
        for turn in range(-(-queries // block)):
            for cmd, _, s, sid, _ in conns if turn % 2 == 0 else conns[::-1]:
                for _ in range(min(block, queries - len(ms[cmd]))):
                    t0 = time.perf_counter()
                    answers = await s.query(sid, "fact(X)")
                    ms[cmd].append((time.perf_counter() - t0) * 1000)
                    right[cmd] += bool(answers) and str(answers[0].get("X")) == "1"
        load1 = os.getloadavg()
        for cmd, _, s, _, _ in conns:
            out[cmd] = {
                "calls_per_simple_query": (s.calls - calls0[cmd]) / queries,
                "p50_ms": round(quantile(ms[cmd], 0.5), 3),
                "p95_ms": round(quantile(ms[cmd], 0.95), 3),
                "right": f"{right[cmd]}/{queries}",
                "load_avg_before": load0,
                "load_avg_after": load1,
            }
    finally:
        while conns:
            cmd, stack, s, sid, _ = conns.pop()
            with contextlib.suppress(Exception):
                await s.close(sid)
            with contextlib.suppress(Exception):
                await stack.aclose()
            out.setdefault(cmd, {})["settle"] = await settle(keep=set().union(*(c[4] for c in conns)))
    return out


async def timed_load(s: Server, how: str, text: str) -> dict[str, Any]:
    """Median of 3 loads of ``text`` (or refused), each counted back.

    ``how``: ``one_call`` (:meth:`Server.load`) or ``file`` (:meth:`Server.load_file`).
    """
    runs, counted = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        try:
            if how == "file":
                sid = None
                await s.load_file(text)
            else:
                sid = await s.load(text)
        except Refused as exc:
            return {"refused": True, "message": str(exc)[:200]}
        runs.append((time.perf_counter() - t0) * 1000)
        answers = await s.query(sid, "findall(x, f(_, _), L), length(L, N)")
        counted.append(str(answers[0].get("N")) if answers else None)
        await s.close(sid)
    return {"refused": False, "ms": round(statistics.median(runs), 1), "counted_back": counted}


def facts_program(n: int = 1000) -> str:
    """The load measure's program: ``n`` facts ``f(i, name_i).``, one per line (17,780 characters for 1,000)."""
    return "".join(f"f({i}, name_{i}).\n" for i in range(n))


async def measure_load(s: Server) -> dict[str, Any]:
    """The program of :func:`facts_program` in one call (ours ``consult_text``, the peer
    ``knowledge_base_assert_many``); for the peer also from a file in its allowed folder (``knowledge_base_load``)."""
    text = facts_program()
    out = {
        "program": {"clauses": len(clauses_of(text)), "chars": len(text), "bytes": len(text.encode())},
        "one_call": await timed_load(s, "one_call", text),
    }
    if s.split:
        out["file_load"] = await timed_load(s, "file", text)
    return out


async def measure_sessions(cmd: str, n: int) -> dict[str, Any]:
    """``n`` knowledge bases at once, each loads mine(i) and queries it; peak memory of the server's processes."""

    async def one(s: Server, i: int) -> bool:
        try:
            sid = await s.load(f"mine({i}).\n")
            answers = await s.query(sid, "mine(X)")
            await s.close(sid)
            return bool(answers) and str(answers[0].get("X")) == str(i)
        except Exception:  # noqa: BLE001 - counted as a failure
            return False

    peak = [0]
    stop = asyncio.Event()

    async def sample() -> None:
        me = psutil.Process()
        while not stop.is_set():
            total = 0
            for p in me.children(recursive=True):
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], total)
            await asyncio.sleep(0.2)

    sampler = asyncio.create_task(sample())
    t0 = time.perf_counter()
    async with Client(params_for(cmd)) as client:
        s = await Server.connect(client, cmd)
        if not s.split:
            rows = await asyncio.gather(*(one(s, i) for i in range(n)))
            connections = 1
        else:

            async def connect(i: int) -> bool:
                try:
                    async with Client(params_for(cmd)) as c:
                        return await one(await Server.connect(c, cmd), i)
                except Exception:  # noqa: BLE001 - a connection that failed to start
                    return False

            rows = await asyncio.gather(*(connect(i) for i in range(n)))
            connections = n
    wall = time.perf_counter() - t0
    stop.set()
    await sampler
    return {
        "sessions": n,
        "connections": connections,
        "wall_s": round(wall, 2),
        "right": sum(rows),
        "peak_rss_mb": round(peak[0] / 2**20),
    }


async def measure_sequential_sessions(cmd: str, n: int) -> dict[str, Any]:
    """``n`` sessions one after another, each a client's whole life: start the server, initialize, list the tools,
    load ``mine(i).``, query it, close the session (ours) and the connection (the server exits).

    ``answered_s``: from the start to the query's answer; ``session_s``: to the end of the connection.
    A session whose any call failed (``isError`` included) counts as not right.
    """
    answered: list[float] = []
    whole: list[float] = []
    right, failures = 0, []
    t_all = time.perf_counter()
    for i in range(n):
        t0 = time.perf_counter()
        try:
            async with Client(params_for(cmd)) as client:
                s = await Server.connect(client, cmd)
                sid = await s.load(f"mine({i}).\n")
                answers = await s.query(sid, "mine(X)")
                answered.append(time.perf_counter() - t0)
                await s.close(sid)
            right += bool(answers) and str(answers[0].get("X")) == str(i)
        except Exception as exc:  # noqa: BLE001 - counted, and the first few kept
            failures.append(f"{type(exc).__name__}: {exc}"[:200])
        whole.append(time.perf_counter() - t0)
    return {
        "sessions": n,
        "wall_s": round(time.perf_counter() - t_all, 2),
        "right": right,
        "answered_s_p50": round(quantile(answered, 0.5), 3),
        "answered_s_p90": round(quantile(answered, 0.9), 3),
        "session_s_p50": round(quantile(whole, 0.5), 3),
        "session_s_p90": round(quantile(whole, 0.9), 3),
        "failures": len(failures),
        "first_failures": failures[:3],
    }


async def probe(cmd: str, goal: str, *, marker: bool = False) -> dict[str, Any]:
    """Run a bad goal on a fresh connection and knowledge base.

    Survived: ``fact(X)`` still answers ``X = 1`` afterwards on the same knowledge base (and, for
    a smuggling probe, no ``marker/1`` fact was asserted). A fresh connection per probe keeps a
    server that one probe wedged from failing the next ones; after it closes, its processes are
    settled (``settle``: what is left behind is reported and killed).
    """
    out: dict[str, Any] = {"survived": False}
    try:
        async with Client(params_for(cmd)) as client:
            s = await Server.connect(client, cmd)
            sid = await s.load(BASE + (":- dynamic marker/1.\n" if marker and not s.split else ""))
            t0 = time.perf_counter()
            try:
                await s.query(sid, goal, time_limit=GOAL_LIMIT_S, timeout_s=PROBE_TIMEOUT_S)
                result = "answered"
            except Refused as exc:
                result = f"refused: {str(exc)[:120]}"
            except TimeoutError:
                result = f"no reply in {PROBE_TIMEOUT_S:g} s"
            out["call_s"] = round(time.perf_counter() - t0, 2)
            out["result"] = result
            if marker:
                try:
                    out["marker_asserted"] = bool(await s.query(sid, "catch(marker(X), _, fail)", timeout_s=10))
                except (Refused, TimeoutError):
                    out["marker_asserted"] = False
            out["survived"] = await s.fact_is_one(sid) and not out.get("marker_asserted", False)
            await s.close(sid)
    except Exception as exc:  # noqa: BLE001 - a server that broke is a result here
        out.setdefault("result", f"{type(exc).__name__}: {exc}"[:160])
    out["settle"] = await settle()
    return out


async def bad_inputs(cmd: str) -> dict[str, dict[str, Any]]:
    out = {"infinite_loop": await probe(cmd, "loop")}
    for i, goal in enumerate(CATCH_PATTERNS, 1):
        out[f"catch_{i}: {goal}"] = await probe(cmd, goal)
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "shell_ran"
        r = await probe(cmd, f"shell('touch {target}')")
        r["survived"] = r["survived"] and not target.exists()
        out["refused_shell"] = r
    for i, goal in enumerate(SMUGGLED, 1):
        out[f"smuggled_{i}"] = await probe(cmd, goal, marker=True)
    out["write_100MB"] = await probe(cmd, "forall(between(1, 1000000, _), write('" + "x" * 100 + "'))")
    out["list_1GB"] = await probe(cmd, "length(L, 50000000), maplist(=(a), L)")
    return out


async def client_killed_during_loop(cmd: str) -> dict[str, Any]:
    """A client (a child process) starts an endless goal and is SIGKILLed: do the server's processes end?

    Survived: every process of the server has ended within the goal's documented limit (ours: the
    ``time_limit`` the client asked for; a server without per-call limits: its query timeout) plus
    ``KILL_MARGIN_S``, measured from the kill; the time they took is reported. The loop must be seen
    running first (the server's processes burn 0.3 s of CPU), so that a loop that never started is not
    taken for one that stopped.
    """
    child = subprocess.Popen(
        [sys.executable, __file__, "--server-cmd", cmd, "--child-loop"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
    )
    spun = False
    try:
        try:
            line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 120) if child.stdout else ""
        except TimeoutError:
            line = "(no line in 120 s)"
        if line.startswith("looping"):
            tree = [psutil.Process(child.pid), *psutil.Process(child.pid).children(recursive=True)]
            cpu0, deadline = sum(map(cpu_s, tree[1:])), time.monotonic() + 20
            while not spun and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
                spun = sum(map(cpu_s, tree[1:])) - cpu0 >= 0.3
    finally:
        child.kill()
        child.wait()
    if not line.startswith("looping") or not spun:
        why = "the child client never started the loop" if not line.startswith("looping") else "the loop never ran"
        return {"survived": False, "result": f"{why}: {line.strip()!r}", "settle": await settle()}
    limit = float(line.split()[1])
    bound = limit + KILL_MARGIN_S
    gone = await settle(bound)
    if gone["left"] == 0:
        result = (
            f"every process ended {gone['waited_s']:.1f} s after the kill (bound: "
            f"its {limit:g} s limit + {KILL_MARGIN_S:g} s)"
        )
    else:
        result = (
            f"{gone['left']} process(es) still running {bound:g} s after the kill (its {limit:g} s limit + "
            f"{KILL_MARGIN_S:g} s): "
            + "; ".join(f"{r['what'][:60]} ({r['cpu_s_while_waited']} s CPU)" for r in gone["processes"])
        )
    return {"survived": gone["left"] == 0, "result": result, "limit_s": limit, "bound_s": bound, "settle": gone}


async def child_loop(cmd: str) -> None:
    """(--child-loop) Connect, load a loop, start it, say "looping <its limit>", and wait to be killed."""
    async with Client(params_for(cmd)) as client:
        s = await Server.connect(client, cmd)
        sid = await s.load("loop :- repeat, fail.\n")
        task = asyncio.create_task(s.query(sid, "loop", time_limit=CHILD_LOOP_LIMIT_S, timeout_s=3600))
        await asyncio.sleep(0.5)
        print(f"looping {s.goal_limit_s(CHILD_LOOP_LIMIT_S)}", flush=True)
        with contextlib.suppress(Exception):
            await task
        await asyncio.sleep(3600)  # the parent kills us; never close the connection ourselves


async def guarded(label: str, doc: dict[str, Any], coro: Any) -> None:
    """``doc[label] = await coro``, or the server's failure recorded there (a crashed server is a result)."""
    try:
        doc[label] = await coro
    except Exception as exc:  # noqa: BLE001
        doc[label] = {"failed": f"{type(exc).__name__}: {exc}"[:300]}


async def measure(cmd: str, args: argparse.Namespace) -> dict[str, Any]:
    """Everything but the speed (measured side by side): loads, bad inputs, sessions; steps settled one by one."""
    doc: dict[str, Any] = {"mapping": "?", "steps_settled": {}}
    try:
        async with Client(params_for(cmd)) as client:
            s = await Server.connect(client, cmd)
            doc["mapping"] = s.mapping
            await guarded("load_1000", doc, measure_load(s))
    except Exception as exc:  # noqa: BLE001 - the connection itself failed
        doc["connection"] = f"{type(exc).__name__}: {exc}"[:300]
    doc["steps_settled"]["load_1000"] = await settle()
    if not args.skip_bad:
        await guarded("bad_inputs", doc, bad_inputs(cmd))
        for name, r in doc["bad_inputs"].items():
            if isinstance(r, dict) and "settle" in r:
                doc["steps_settled"][f"probe {name}"] = r["settle"]
    await guarded("sessions", doc, measure_sessions(cmd, args.sessions))
    doc["steps_settled"]["sessions"] = await settle()
    if args.sequential_sessions:
        await guarded("sequential_sessions", doc, measure_sequential_sessions(cmd, args.sequential_sessions))
        doc["steps_settled"]["sequential_sessions"] = await settle()
    if not args.skip_bad and "failed" not in doc["bad_inputs"]:
        doc["bad_inputs"]["client_killed_during_loop"] = await client_killed_during_loop(cmd)
    return doc


# ------------------------------------------------------------------------------------------ reporting


def load_cell(r: dict[str, Any]) -> str:
    if r.get("refused"):
        return "refused"
    return f"{r['ms']:.0f} ms ({'/'.join(sorted(set(map(str, r['counted_back']))))})"


def left_behind(d: dict[str, Any]) -> str:
    """The verdict on processes left running after a server's connections closed (every step settled)."""
    steps = d.get("steps_settled", {})
    bad = {k: v["left"] for k, v in steps.items() if v.get("left")}
    if not bad:
        return f"none ({len(steps)} steps)"
    return f"FAILED: {sum(bad.values())} after {len(bad)} of {len(steps)} steps"


def table(servers: list[str], runs: list[dict[str, Any]]) -> str:
    labels = [f"[{i + 1}]" for i in range(len(servers))]
    rows: list[tuple[str, list[str]]] = []
    for k, run in enumerate(runs, 1):
        sp = next((run[s]["speed"] for s in servers if "load_avg_before" in run[s].get("speed", {})), {})
        during = f", speed step {sp['load_avg_before'][0]:.1f}->{sp['load_avg_after'][0]:.1f}" if sp else ""
        rows.append((f"run {k} (load avg {run['_load'][0]:.1f}/{run['_load'][1]:.1f}{during})", ["" for _ in servers]))
        docs = [run[s] for s in servers]

        def cell(d: dict[str, Any], part: str, fmt: Any) -> str:
            got = d.get(part)
            if not isinstance(got, dict) or "failed" in got:
                return "server failed"
            try:
                return fmt(got)
            except (KeyError, TypeError):
                return "-"

        rows.append(
            (
                "  calls per simple query",
                [cell(d, "speed", lambda x: f"{x['calls_per_simple_query']:.0f}") for d in docs],
            )
        )
        rows.append(
            (
                "  simple query p50 / p95 ms",
                [cell(d, "speed", lambda x: f"{x['p50_ms']:.2f} / {x['p95_ms']:.2f}") for d in docs],
            )
        )
        rows.append(("  simple query right answers", [cell(d, "speed", lambda x: x["right"]) for d in docs]))
        rows.append(
            ("  1,000 facts in one call", [cell(d, "load_1000", lambda x: load_cell(x["one_call"])) for d in docs])
        )
        rows.append(
            ("  1,000 facts, file load", [cell(d, "load_1000", lambda x: load_cell(x["file_load"])) for d in docs])
        )
        n = next((d["sessions"]["sessions"] for d in docs if "sessions" in d.get("sessions", {})), "?")
        rows.append(
            (
                f"  {n} sessions at once: wall s / right / MB",
                [cell(d, "sessions", lambda x: f"{x['wall_s']} / {x['right']} / {x['peak_rss_mb']}") for d in docs],
            )
        )
        m = next(
            (d["sequential_sessions"]["sessions"] for d in docs if "sessions" in d.get("sequential_sessions", {})), None
        )
        if m is not None:
            rows.append(
                (
                    f"  {m} sessions one after another: wall s / right",
                    [cell(d, "sequential_sessions", lambda x: f"{x['wall_s']} / {x['right']}") for d in docs],
                )
            )
            rows.append(
                (
                    "    per session p50 / p90 s (to answer)",
                    [
                        cell(
                            d,
                            "sequential_sessions",
                            lambda x: (
                                f"{x['session_s_p50']:.2f} / {x['session_s_p90']:.2f} ({x['answered_s_p50']:.2f})"
                            ),
                        )
                        for d in docs
                    ],
                )
            )
        names = next((list(d["bad_inputs"]) for d in docs if "failed" not in d.get("bad_inputs", {"failed": 1})), [])
        for name in names:
            rows.append(
                (
                    f"  {name}"[:46],
                    [
                        cell(d, "bad_inputs", lambda x, k=name: "survived" if x[k]["survived"] else "FAILED")
                        for d in docs
                    ],
                )
            )
        rows.append(("  processes left behind", [left_behind(d) for d in docs]))
    width = max(len(r[0]) for r in rows) + 2
    col = max(16, *(len(c) + 2 for _, cells in rows for c in cells))
    lines = [f"{'':{width}s}" + "".join(f"{lab:>{col}s}" for lab in labels)]
    lines += [f"{name:{width}s}" + "".join(f"{c:>{col}s}" for c in cells) for name, cells in rows]
    return "\n".join(lines)


async def one_run(servers: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """The speed of all servers side by side, then each server's other measures in turn."""
    run: dict[str, Any] = {"_load": os.getloadavg()}
    try:
        speed = await speed_side_by_side(servers, args.queries, args.block)
    except Exception as exc:  # noqa: BLE001 - recorded, the other measures still run
        speed = {cmd: {"failed": f"{type(exc).__name__}: {exc}"[:300]} for cmd in servers}
        speed["_settle"] = await settle()
    for cmd in servers:
        doc = await measure(cmd, args)
        doc["speed"] = dict(speed.get(cmd, {"failed": "not measured"}))
        if "settle" in doc["speed"]:
            doc["steps_settled"]["speed"] = doc["speed"].pop("settle")
        run[cmd] = doc
    run["_load_end"] = os.getloadavg()
    return run


def wait_for_quiet(below: float | None, max_s: float) -> float | None:
    """Wait until the 1-minute load average is under ``below`` (other users of the machine); seconds waited."""
    if below is None:
        return None
    t0 = time.monotonic()
    while os.getloadavg()[0] >= below and time.monotonic() - t0 < max_s:
        time.sleep(5)
    return round(time.monotonic() - t0, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--server-cmd", action="append", help="a stdio MCP server's command line (repeatable; default: ours)"
    )
    ap.add_argument("--runs", type=int, default=1, help="interleaved runs over all servers")
    ap.add_argument("--queries", type=int, default=300, help="simple queries timed per server")
    ap.add_argument("--block", type=int, default=20, help="simple queries per server per turn of the side-by-side step")
    ap.add_argument("--sessions", type=int, default=100, help="knowledge bases at once")
    ap.add_argument(
        "--sequential-sessions",
        type=int,
        default=100,
        help="sessions one after another, each with a server of its own (0: none)",
    )
    ap.add_argument("--skip-bad", action="store_true", help="no bad inputs")
    ap.add_argument(
        "--quiet-load",
        type=float,
        default=None,
        help="before each run, wait until the 1-minute load average is below this (recorded per run)",
    )
    ap.add_argument("--quiet-wait-s", type=float, default=3600, help="give up waiting for --quiet-load after this")
    ap.add_argument("--name", default="mcp_server", help="output file stem under benchmarks/out/")
    ap.add_argument("--child-loop", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    servers = args.server_cmd or [OURS]
    if args.child_loop:
        asyncio.run(child_loop(servers[0]))
        return
    subreaper = become_subreaper()
    t0 = time.monotonic()
    runs = []
    for _ in range(args.runs):
        waited = wait_for_quiet(args.quiet_load, args.quiet_wait_s)
        runs.append(asyncio.run(one_run(servers, args)))
        runs[-1]["_waited_for_quiet_s"] = waited
    final = asyncio.run(settle(0))  # nothing may be left by now; if anything is, it is reported and killed
    doc = {
        "benchmark": "mcp_server",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "servers": servers,
        "runs": runs,
        "total_s": round(time.monotonic() - t0, 1),
        "subreaper": subreaper,
        "left_at_exit": final,
        "issue_reference": ISSUE_REFERENCE,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.name}.json").write_text(json.dumps(doc, indent=1, default=str))
    for i, cmd in enumerate(servers, 1):
        print(f"[{i}] {cmd}\n    mapping: {runs[0][cmd]['mapping']}")
        program = runs[0][cmd].get("load_1000", {}).get("program")
        if program:
            print(
                f"    program loaded by the load step: {program['clauses']:,} clauses, {program['chars']:,} characters "
                f"({program['bytes']:,} bytes), in one call"
            )
    print()
    print(table(servers, runs))
    for k, run in enumerate(runs, 1):
        for i, cmd in enumerate(servers, 1):
            killed = run[cmd].get("bad_inputs", {}).get("client_killed_during_loop")
            if isinstance(killed, dict):
                print(f"run {k} [{i}] client killed during a loop: {killed['result']}")
    if not subreaper:
        print("\nNote: not a child subreaper (not Linux?): processes orphaned by a server may go unseen.")
    print(f"\nLeft at exit (killed): {final['left']}")
    print(f"\nFootnote. {ISSUE_REFERENCE}")
    print(f"\nwrote {OUT / (args.name + '.json')}  ({doc['total_s']} s)")


if __name__ == "__main__":
    main()
