"""`symbolkg view` over real runs: every page through HTTP, then in headless Chromium, then the static bundle.

The runs are made here by the real CLI and the real solvers, on small slices: Logic-LM's recorded
GPT-4 programs of FOLIO and ProntoQA (verified), ProntoQA once more with ``--no-corrections`` (the
two differ on 10 problems: the formalization checks correct negated queries) and once through the
``logiclm`` method with the recorded engine (every attempt logged), the ``symbolkg`` method with the
scripted LLM of tests/jobs/test_symbolkg.py (its LKG store and request log beside it),
``--method symba --engine gold`` and ``--method prolog-agent`` with the template engine. A server is
started on a free port over the folder; the tests read its pages and JSON. The browser tests (marked
``slow``: they need Debian's ``chromium``) drive Chromium over the DevTools protocol, assert what
the rendered DOM shows, keep screenshots in ``runs/test-artifacts/view/``
(``$SYMBOLKG_VIEW_ARTIFACTS`` overrides), and open the bundle from ``file://``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from symbolkg.actors.engines.metered import MeteredEngine, write_request_log
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.cli import main as cli
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.methods.symbolkg import SymbolKGMethod
from symbolkg.jobs.methods.symbolkg_stages import SymbolKG, SymbolKGConfig
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore
from symbolkg.jobs.servers.view import read_token
from symbolkg.jobs.servers.view.app import check_host, create_app
from symbolkg.jobs.servers.view.bundle import write_bundle
from symbolkg.retrieval.embed import make_embedder
from symbolkg.retrieval.lkg.store import LKGStore
from symbolkg.solvers.certificates import derivation, entailment
from symbolkg.solvers.outcomes import Limits
from symbolkg.solvers.runtime.local_pool import LocalSolverPool
from tests.conftest import DATA, REPO, data_or_skip
from tests.jobs.test_symbolkg import MODEL, WALK, Script, problem

PROGRAMS = DATA / "logiclm" / "programs"
ARTIFACTS = Path(os.environ.get("SYMBOLKG_VIEW_ARTIFACTS", REPO / "runs" / "test-artifacts" / "view"))


def solve(*args: str) -> None:
    assert cli(["solve", *args, "--executor", "local", "--workers", "2", "--no-progress"]) == 0


def symbolkg_run(folder: Path) -> Path:
    """The three walk-through problems of test_symbolkg.py through `--method symbolkg` with the scripted LLM."""
    out, lkg = folder / "skg-walk.parquet", folder / "skg-lkg"
    kg = SymbolKG(LKGStore(lkg), make_embedder("minilm"), SymbolKGConfig(hops=10))
    method = SymbolKGMethod(kg)
    method.extra_info = {"lkg_store": str(lkg)}
    run_info = {
        "source": "logiclm/folio,logiclm/logicaldeduction,logiclm/prontoqa",
        "method": "symbolkg",
        "engine": "scripted",
        "model": MODEL,
        "symbolkg": method.run_info(),
    }
    store = ResultStore(out, run_info=run_info)
    engine = MeteredEngine(ScriptedEngine(Script(), model=MODEL))  # the request log `profile` and the viewer read
    cfg = MethodConfig(method="symbolkg", max_refine_rounds=2, limits=Limits(timeout_s=20))
    pool = LocalSolverPool(2)
    try:
        asyncio.run(run_method_job([problem(p) for p in WALK], store, cfg, engine, pool, progress=False, method=method))
    finally:
        pool.close()
        write_request_log(out, engine.records)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A folder of real runs (module docstring); about 25 s on 2 cores."""
    data_or_skip("logiclm", "programs", "FOLIO_dev_gpt-4.json")
    folder = tmp_path_factory.mktemp("view") / "runs"
    folder.mkdir()
    solve(
        "--programs",
        str(PROGRAMS / "FOLIO_dev_gpt-4.json"),
        "--out",
        str(folder / "folio-gpt4.parquet"),
        "--limit",
        "8",
    )
    solve(
        "--programs",
        str(PROGRAMS / "ProntoQA_dev_gpt-4.json"),
        "--out",
        str(folder / "pq-gpt4.parquet"),
        "--limit",
        "30",
    )
    solve(
        "--programs",
        str(PROGRAMS / "ProntoQA_dev_gpt-4.json"),
        "--out",
        str(folder / "pq-asis.parquet"),
        "--limit",
        "30",
        "--no-corrections",
    )
    for name in ("folio-gpt4", "pq-gpt4"):
        assert cli(["verify", str(folder / f"{name}.parquet"), "--executor", "local", "--no-progress"]) == 0
    solve(
        "--method",
        "logiclm",
        "--engine",
        "recorded",
        "--recorded",
        str(PROGRAMS / "ProntoQA_dev_gpt-4.json"),
        "--dataset",
        "logiclm/prontoqa",
        "--limit",
        "30",
        "--max-refine-rounds",
        "1",
        "--out",
        str(folder / "pq-logiclm.parquet"),
    )
    solve(
        "--method",
        "symba",
        "--engine",
        "gold",
        "--dataset",
        "symba/clutrr",
        "--limit",
        "4",
        "--out",
        str(folder / "symba-gold.parquet"),
    )
    solve(
        "--method",
        "prolog-agent",
        "--engine",
        "pararule-template",
        "--dataset",
        "pararule_plus/depth2",
        "--limit",
        "4",
        "--out",
        str(folder / "agent.parquet"),
    )
    symbolkg_run(folder)
    return folder


class Server:
    """The viewer's app under uvicorn in a thread, on a free loopback port."""

    def __init__(self, paths: list[Path], token: str | None = None) -> None:
        import uvicorn

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        app = create_app([str(p) for p in paths], token=token)
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the viewer did not start"
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def get(self, path: str, headers: dict | None = None, method: str = "GET") -> tuple[int, str]:
        req = urllib.request.Request(self.url + path, headers=headers or {}, method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def json(self, path: str) -> dict:
        status, body = self.get(path)
        assert status == 200, body
        return json.loads(body)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def server(runs):
    s = Server([runs])
    yield s
    s.close()


def text_of(html: str) -> str:
    """The words of a page, tags removed (what the tests look for)."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).replace("&#39;", "'").replace("&amp;", "&").split())


def report_json(run: Path, capsys) -> dict:
    capsys.readouterr()
    assert cli(["report", str(run), "--json", "--no-plot"]) == 0
    return json.loads(capsys.readouterr().out)


# --------------------------------------------------------------------------- HTTP


def test_runs_page_lists_every_run_with_the_report_numbers(server, runs, capsys):
    status, html = server.get("/")
    assert status == 200
    listed = server.json("/api/runs")
    assert {r["id"] for r in listed} == {
        "folio-gpt4",
        "pq-gpt4",
        "pq-asis",
        "pq-logiclm",
        "symba-gold",
        "agent",
        "skg-walk",
    }
    for r in listed:
        rep = report_json(runs / f"{r['id']}.parquet", capsys)
        assert (r["problems"], r["accuracy"], r["execution_rate"]) == (
            rep["problems"],
            rep["accuracy"],
            rep["execution_rate"],
        )
        assert r["tokens"] == rep["prompt_tokens"] + rep["completion_tokens"] and r["status"] == "finished"
        assert f'data-run="{r["id"]}"' in html
    by = {r["id"]: r for r in listed}
    assert by["folio-gpt4"]["verified"] == by["folio-gpt4"]["certified"] == 8 and by["agent"]["verify"] is None
    assert by["skg-walk"]["methods"] == ["symbolkg"] and by["skg-walk"]["models"] == [MODEL]
    assert by["symba-gold"]["engine"] == "gold" and by["pq-logiclm"]["methods"] == ["logiclm"]
    page = text_of(html)
    assert "folio-gpt4" in page and "75.0%" in page or "%" in page
    assert "pq-gpt4" in page and "pq-logiclm" in page  # same dataset: offered for comparison
    assert server.get("/compare?a=pq-asis&b=pq-gpt4")[0] == 200


def test_run_page_shows_the_reports_numbers_and_the_plots_as_svg(server, runs, capsys):
    rep = report_json(runs / "folio-gpt4.parquet", capsys)
    status, html = server.get("/run/folio-gpt4")
    assert status == 200
    page = text_of(html)
    assert f"{100 * rep['accuracy']:.1f}%" in page and f"{100 * rep['execution_rate']:.1f}%" in page
    assert "logiclm/folio" in page and "verified · 0 failed" in page
    charts = dict(re.findall(r'<div class="chart" id="chart-(\w+)">(.*?)</div>\n', html, re.S))
    assert "<svg" in charts["accuracy"] and ">logiclm/folio<" in charts["accuracy"]  # text kept as text
    assert "no stage timings" in charts["stages"] and "no LLM request log" in charts["llm"]
    status, html = server.get("/run/skg-walk")
    charts = dict(re.findall(r'<div class="chart" id="chart-(\w+)">(.*?)</div>\n', html, re.S))
    for name in ("accuracy", "stages", "llm", "throughput"):
        assert "<svg" in charts[name], name
    assert ">formalize<" in charts["stages"] and "requests" in charts["llm"]
    assert "Prefix-cache hit rate" in charts["prefix"]  # the scripted engine does not report it: said so
    rep = report_json(runs / "skg-walk.parquet", capsys)
    stage_rows = re.findall(r"<tr><td>(\w+)</td><td class=\"num\">([\d.]+) s</td>", html)
    assert [s for s, _ in stage_rows] == list(rep["stage_latency"])
    for stage, mean in stage_rows:
        assert float(mean) == pytest.approx(rep["stage_latency"][stage]["mean_s"], abs=2e-3)


def test_problem_table_filters_sorts_searches_and_pages(server, runs):
    rows = pq.read_table(runs / "pq-gpt4.parquet").to_pylist()
    everything = server.json("/api/run/pq-gpt4/problems?page_size=100")
    assert everything["total"] == everything["matched"] == len(rows) == 30
    assert [r["problem_id"] for r in everything["rows"]] == [r["problem_id"] for r in rows]
    right = server.json("/api/run/pq-gpt4/problems?outcome=correct")
    assert right["matched"] == sum(r["correct"] for r in rows)
    verified = server.json("/api/run/pq-gpt4/problems?verdict=verified")["matched"]
    assert verified == pq.read_table(runs / "pq-gpt4.verify.parquet").to_pandas().verdict.eq("verified").sum()
    slow = server.json("/api/run/pq-gpt4/problems?sort=-latency&page_size=5")["rows"]
    assert [r["latency_seconds"] for r in slow] == sorted((r["latency_seconds"] for r in rows), reverse=True)[:5]
    pages = [server.json(f"/api/run/pq-gpt4/problems?page_size=7&page={n}") for n in (1, 2, 5)]
    assert [p["pages"] for p in pages] == [5, 5, 5] and len(pages[2]["rows"]) == 2
    assert pages[1]["rows"][0]["problem_id"] == rows[7]["problem_id"]
    # full-text search in the question (from the dataset) and in the program, every word, any case
    one = rows[3]
    entity = re.search(r"\b([A-Z][a-z]+)\b", one["program"].split("Query:")[1]).group(1)
    hits = server.json(f"/api/run/pq-gpt4/problems?q={entity.lower()}&page_size=100")["rows"]
    assert one["problem_id"] in {h["problem_id"] for h in hits}
    assert all(
        entity.lower()
        in (h["question"] + next(r["program"] for r in rows if r["problem_id"] == h["problem_id"])).lower()
        for h in hits
    )
    assert server.json("/api/run/pq-gpt4/problems?q=zzqqxx")["matched"] == 0
    combined = server.json("/api/run/pq-asis/problems?outcome=wrong&rounds=1&backend=forward-chainer")
    want = [
        r
        for r in pq.read_table(runs / "pq-asis.parquet").to_pylist()
        if not r["correct"] and r["predicted"] is not None and r["rounds"] == 1 and r["backend"] == "forward-chainer"
    ]
    assert combined["matched"] == len(want) > 0


def test_problem_page_draws_the_entailment_certificate_with_premises_linked_to_sentences(server, runs):
    rows = pq.read_table(runs / "folio-gpt4.parquet").to_pylist()
    row = next(r for r in rows if r["answer"] in ("True", "False") and r["certificate"])
    cert = json.loads(row["certificate"])
    status, html = server.get(f"/run/folio-gpt4/problem/{row['problem_id']}")
    assert status == 200
    page = text_of(html)
    assert "Based on the above information" in page and "A) True" in page  # question and options from the data
    assert f"predicted {row['predicted']}" in page and f"gold {row['gold']}" in page
    cited = [int(n) for n in re.findall(r'<tr><td><a href="#L(\d+)">\d+</a></td>', html)]
    assert cited == entailment.premise_lines(cert) and cited
    for n in cited:  # each cited program line is marked and links to a context sentence
        assert re.search(rf'<tr id="L{n}" class="[^"]*cited', html)
    assert re.findall(r'href="#s(\d+)"', html) and 'id="s0"' in html
    assert "verified" in text_of(html.split('id="verdict"')[1][:600])
    unknown = next(r for r in rows if r["answer"] == "Unknown")
    page = text_of(server.get(f"/run/folio-gpt4/problem/{unknown['problem_id']}")[1])
    assert "a model of the premises where the goal is false" in page and "true of" in page


def test_problem_page_shows_the_proof_tree_and_every_attempt_with_the_failing_line(server, runs):
    rows = pq.read_table(runs / "pq-gpt4.parquet").to_pylist()
    row = next(r for r in rows if r["certificate"] and json.loads(r["certificate"]).get("steps"))
    html = server.get(f"/run/pq-gpt4/problem/{row['problem_id']}")[1]
    cert = json.loads(row["certificate"])
    assert html.count('<span class="goal">') == tree_size(cert) and cert["steps"][-1]["atom"] in html
    assert derivation.premise_lines(cert)
    # the symbolkg run: LogicalDeduction's first program names an undeclared variable; the repair runs
    html = server.get("/run/skg-walk/problem/logical_deduction_256")[1]
    first = html.split('id="attempt-1"')[1].split('id="attempt-2"')[0]
    bad = re.search(r'<tr id="a1L(\d+)" class="error', first)
    assert bad and "Joe" in text_of(first) and "error-box" in first
    assert "prompt (rebuilt with the method's prompt builder)" in first and "Question:" in first
    assert "#2 refine" in text_of(html) and "The solver could not run the program" in html.split('id="attempt-2"')[1]


def tree_size(cert: dict) -> int:
    by_id = {s["id"]: s for s in cert["steps"]}

    def size(step: dict) -> int:
        return 1 + sum(size(by_id[i]) for i in step["body"])

    return size(cert["steps"][-1])


def test_symbolkg_problem_page_draws_the_retrieved_subgraph(server, runs):
    html = server.get("/run/skg-walk/problem/ProntoQA_14")[1]
    lkg = html.split('id="lkg"')[1].split("<h2>")[0]
    trace = json.loads(
        next(r for r in pq.read_table(runs / "skg-walk.parquet").to_pylist() if r["problem_id"] == "ProntoQA_14")[
            "trace"
        ]
    )
    assert "<svg" in lkg and "Entity: Fae" in lkg
    assert f"{len(trace['retrieve']['hull'])} node(s) in the hull" in text_of(lkg)
    assert text_of(lkg).count("anchor") >= 1 and "kept" in lkg
    page = text_of(html)
    assert "via LKG" in page  # the sentences the graph selected for the formalizer


def test_symba_page_lists_the_statements_the_llm_contributed_and_their_sentences(server, runs):
    rows = pq.read_table(runs / "symba-gold.parquet").to_pylist()
    row = next(r for r in rows if json.loads(r["trace"]).get("statements"))
    statements = json.loads(row["trace"])["statements"]
    html = server.get(f"/run/symba-gold/problem/{row['problem_id']}")[1]
    table = html.split('id="statements"')[1].split("</table>")[0]
    assert table.count("<tr><td") == len(statements)
    for s in statements:
        assert s["statement"].replace("'", "&#39;") in table and s["sentence"].split("]")[0] in table
    assert '<ul class="tree" id="proof">' in html


def test_prolog_agent_page_lists_the_mcp_calls(server, runs):
    row = pq.read_table(runs / "agent.parquet").to_pylist()[0]
    trace = json.loads(row["trace"])
    html = server.get(f"/run/agent/problem/{row['problem_id']}")[1]
    table = html.split('id="mcp"')[1].split("</table>")[0]
    calls = len(trace["mcp_calls"]) + len((trace.get("sldnf") or {}).get("mcp_calls") or [])
    assert table.count("<tr><td>") == calls and "run_goal" in table
    assert "goal: <code>" in html  # the attempt's goal


def test_two_runs_side_by_side_show_which_flipped(server, runs):
    a = {r["problem_id"]: r for r in pq.read_table(runs / "pq-asis.parquet").to_pylist()}
    b = {r["problem_id"]: r for r in pq.read_table(runs / "pq-gpt4.parquet").to_pylist()}
    fixed = sorted(p for p in a if not a[p]["correct"] and b[p]["correct"])
    assert len(fixed) == 10
    got = server.json("/api/compare?a=pq-asis&b=pq-gpt4&flip=fixed&page_size=50")
    assert sorted(r["problem_id"] for r in got["rows"]) == fixed and got["total"] == 30
    assert server.json("/api/compare?a=pq-asis&b=pq-gpt4&flip=regressed")["matched"] == 0
    assert server.json("/api/compare?a=pq-asis&b=pq-gpt4&flip=fixed&verdict_b=verified")["matched"] == 10
    page = text_of(server.get("/compare?a=pq-asis&b=pq-gpt4")[1])
    assert "10 fixed" in page
    html = server.get("/compare/problem?" + urllib.parse.urlencode({"a": "pq-asis", "b": "pq-gpt4", "id": fixed[0]}))[1]
    side_a, side_b = html.split('id="side-a"')[1].split('id="side-b"')
    assert "wrong" in side_a[:1500] and "correct" in side_b[:1500]
    assert "Formalization checks (corrections applied)" in side_b and "corrections applied" not in side_a
    # the logiclm method's rows log every attempt, with the prompt rebuilt
    html = server.get(f"/run/pq-logiclm/problem/{fixed[0]}")[1]
    assert "#1 formulate" in text_of(html) and "prompt (rebuilt with the method's prompt builder)" in html


def test_read_only_token_rule_and_a_broken_run_never_take_the_server_down(runs, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(runs / "folio-gpt4.parquet", folder / "good.parquet")
    (folder / "corrupt.parquet").write_bytes(b"PAR1 this is not a parquet file")
    parts = folder / "live.parquet.parts"  # a run being written: only its part files so far
    parts.mkdir()
    shutil.copy(runs / "symba-gold.parquet", parts / "part-1-a-000000.parquet")
    with pytest.raises(ValueError, match="non-loopback"):
        check_host("0.0.0.0", None)
    check_host("127.0.0.1", None)
    check_host("0.0.0.0", "secret")
    token_file = tmp_path / "tok"
    token_file.write_text("secret\n")
    assert read_token(str(token_file)) == "secret"
    s = Server([folder], token="secret")
    try:
        assert s.get("/")[0] == 401 and s.get("/api/runs")[0] == 401
        auth = {"Authorization": "Bearer secret"}
        assert s.get("/", {"Authorization": "Bearer wrong"})[0] == 401
        assert s.get("/", auth, method="POST")[0] == 405
        status, html = s.get("/?token=secret")
        assert status == 200
        listed = {r["id"]: r for r in json.loads(s.get("/api/runs", auth)[1])}
        assert listed["corrupt"]["error"] and listed["good"]["error"] is None
        assert listed["live"]["status"] == "running" and listed["live"]["problems"] == 4
        status, html = s.get("/run/corrupt", auth)
        assert status == 500 and "cannot read corrupt.parquet" in text_of(html)
        status, html = s.get("/run/live", auth)
        assert status == 200 and "Being written: 4 rows" in text_of(html) and 'http-equiv="refresh"' in html
        assert s.get("/run/good", auth)[0] == 200 and s.get("/run/nope", auth)[0] == 404
        assert s.get("/run/good/problem/nope", auth)[0] == 404
    finally:
        s.close()


# --------------------------------------------------------------------------- the browser


class Chromium:
    """Headless Chromium driven over the DevTools protocol (``websockets``), one tab."""

    FLAGS = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--remote-debugging-port=0",
        "--window-size=1400,1000",
    ]

    def __init__(self, profile: Path) -> None:
        from websockets.sync.client import connect

        exe = shutil.which("chromium")
        if exe is None:
            pytest.skip("Debian's chromium is not installed (cluster/setup_node.sh installs it)")
        self.proc = subprocess.Popen(
            [exe, *self.FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            assert time.monotonic() < deadline and self.proc.poll() is None, "chromium did not start"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            target = next(t for t in json.load(r) if t["type"] == "page")
        self.ws = connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=10)
        self.seq = 0

    def call(self, method: str, **params) -> dict:
        self.seq += 1
        self.ws.send(json.dumps({"id": self.seq, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == self.seq:
                assert "error" not in msg, msg
                return msg.get("result", {})

    def eval(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def open(self, url: str, ready: str = "true", timeout_s: float = 30) -> None:
        """Load ``url`` and wait until the page is loaded and the JS condition ``ready`` holds."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout_s
        while not self.eval(
            f"document.readyState === 'complete' && location.href.startsWith({json.dumps(url.split('#')[0])}) "
            f"&& !!({ready})"
        ):
            assert time.monotonic() < deadline, f"{url}: not ready ({ready})"
            time.sleep(0.1)

    def text(self, selector: str = "body") -> str:
        return self.eval(f"document.querySelector({json.dumps(selector)}).innerText")

    def screenshot(self, path: Path) -> None:
        height = self.eval("Math.min(document.documentElement.scrollHeight, 6000)")
        self.call(
            "Emulation.setDeviceMetricsOverride", width=1400, height=int(height), deviceScaleFactor=1, mobile=False
        )
        import base64

        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        self.call("Emulation.clearDeviceMetricsOverride")

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    b = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield b
    b.close()


TABLE_READY = "document.querySelector('#problems[data-state=ready]')"


def table_ids(b: Chromium) -> list[str]:
    return b.eval("Array.from(document.querySelectorAll('#problems tbody tr')).map(r => r.dataset.id)")


@pytest.mark.slow
def test_browser_renders_runs_run_table_filters_and_problem_pages(server, runs, browser):
    browser.open(server.url + "/", "document.querySelector('#runs')")
    shown = browser.text("#runs")
    assert all(name in shown for name in ("folio-gpt4", "pq-gpt4", "pq-asis", "skg-walk", "symba-gold", "agent"))
    browser.screenshot(ARTIFACTS / "runs.png")

    rows = pq.read_table(runs / "pq-asis.parquet").to_pylist()
    browser.open(server.url + "/run/pq-asis", TABLE_READY)
    assert table_ids(browser) == [r["problem_id"] for r in rows]
    assert browser.eval("document.querySelectorAll('#charts svg').length") >= 2
    assert "30 of 30 problems match" in browser.text("#table-status")
    # choose "wrong" in the outcome filter as a user would: the table re-queries the server
    browser.eval(
        "(() => { const s = document.querySelector('select[name=outcome]'); s.value = 'wrong';"
        " s.dispatchEvent(new Event('input', {bubbles: true})); })()"
    )
    browser.open(browser.eval("location.href"), TABLE_READY + " && location.hash.includes('outcome=wrong')")
    wrong = [r["problem_id"] for r in rows if not r["correct"] and r["predicted"] is not None]
    deadline = time.monotonic() + 20
    while table_ids(browser) != wrong:
        assert time.monotonic() < deadline, (table_ids(browser), wrong)
        time.sleep(0.1)
    assert f"{len(wrong)} of 30 problems match" in browser.text("#table-status")
    browser.screenshot(ARTIFACTS / "run-filtered.png")
    # paging, in the URL
    browser.open(server.url + "/run/pq-gpt4#page_size=7&page=2", TABLE_READY)
    assert table_ids(browser) == [r["problem_id"] for r in pq.read_table(runs / "pq-gpt4.parquet").to_pylist()][7:14]

    browser.open(server.url + "/run/skg-walk/problem/logical_deduction_256", "document.querySelector('#lkg svg')")
    seen = browser.text("body")
    assert (
        "LKG subgraph retrieved" in seen and "Amy finished below Ana" in seen and "Premises the answer rests on" in seen
    )
    assert browser.eval("document.querySelectorAll('table.program tr.error').length") >= 1
    browser.screenshot(ARTIFACTS / "problem-symbolkg.png")
    browser.open(server.url + "/run/folio-gpt4/problem/FOLIO_dev_3", "document.querySelector('#certificate')")
    assert "Countermodels" in browser.text("#certificate")
    browser.screenshot(ARTIFACTS / "problem-folio.png")


@pytest.mark.slow
def test_bundle_opens_from_disk_and_filters_without_a_server(runs, browser, tmp_path):
    out = tmp_path / "bundle"
    summary = write_bundle([str(runs / "pq-asis.parquet"), str(runs / "pq-gpt4.parquet")], out, max_problem_pages=12)
    assert summary == {
        "runs": 2,
        "problem_pages": 24,
        "compare_pages": 1,
        "notes": [
            f"{r}: problem pages for the first 12 of 30 rows (--bundle-max-problems); the table lists all"
            for r in ("pq-asis", "pq-gpt4")
        ],
    }
    browser.open((out / "index.html").as_uri(), "document.querySelector('#runs')")
    assert "pq-asis" in browser.text("#runs") and "static bundle" in browser.text("header")
    rows = pq.read_table(runs / "pq-asis.parquet").to_pylist()
    browser.open((out / "runs" / "pq-asis" / "index.html").as_uri() + "#outcome=wrong", TABLE_READY)
    assert table_ids(browser) == [r["problem_id"] for r in rows if not r["correct"] and r["predicted"] is not None]
    browser.screenshot(ARTIFACTS / "bundle-run.png")
    browser.open((out / "runs" / "pq-asis" / "index.html").as_uri() + "#q=" + rows[0]["problem_id"], TABLE_READY)
    assert table_ids(browser)[0] == rows[0]["problem_id"]
    first = browser.eval("document.querySelector('#problems tbody a').href")
    browser.open(first, "document.querySelector('#problem-id')")
    assert rows[0]["problem_id"] in browser.text("#problem-id") and "Certificate" in browser.text("body")
    assert browser.eval("getComputedStyle(document.querySelector('header.top')).display") == "flex"  # the CSS loaded
    pair = out / "compare" / "pq-asis--pq-gpt4"  # A before B by path, as the runs list offers them
    browser.open((pair / "index.html").as_uri() + "#flip=fixed", TABLE_READY)
    assert len(table_ids(browser)) == 10
    browser.open((out / "runs" / "pq-gpt4" / "index.html").as_uri() + "#q=zzqqxx", TABLE_READY)
    assert table_ids(browser) == [] and "0 of 30" in browser.text("#table-status")
