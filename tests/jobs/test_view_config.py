"""`symbolkg view`: the run page shows the stored config and provenance; the compare page marks what differs.

Three small runs of the same generated problems: two by `symbolkg solve` that differ in two settings
(``--timeout-s``, ``--no-corrections``), and a copy of the first with the metadata runs had before
they stored their config. The pages are read over HTTP from the viewer's server (tests/jobs/test_view.py's
:class:`Server`), and the comparison once more from the static bundle.
"""

from __future__ import annotations

import json
import re
import urllib.parse

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main
from symbolkg.jobs.pipeline.store import read_run_meta
from symbolkg.jobs.servers.view.bundle import write_bundle
from tests.conftest import lp_problem, write_jsonl
from tests.jobs.test_view import Server, text_of


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("view-config")
    src = write_jsonl(folder / "lp.jsonl", [lp_problem(i) for i in range(4)])
    common = ["solve", "--programs", str(src), "--executor", "local", "--workers", "1", "--no-progress"]
    assert main([*common, "--out", str(folder / "base.parquet"), "--timeout-s", "20"]) == 0
    assert main([*common, "--out", str(folder / "other.parquet"), "--timeout-s", "30", "--no-corrections"]) == 0
    rows = pq.read_table(folder / "base.parquet")  # the same rows, with the metadata of a run before configs
    legacy = {"source": str(src), "workers": 2, "executor": "local", "timeout_s": 20.0, "sessions": {"s": 1.0}}
    pq.write_table(rows.replace_schema_metadata({b"symbolkg": json.dumps(legacy).encode()}), folder / "legacy.parquet")
    return folder


@pytest.fixture(scope="module")
def server(runs):
    s = Server([runs])
    yield s
    s.close()


def table(html: str, table_id: str) -> list[list[str]]:
    body = html.split(f'id="{table_id}"')[1].split("</table>")[0]
    return [
        [text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
        if "<td" in tr
    ]


def test_run_page_lists_every_stored_setting_and_the_provenance(server, runs):
    status, html = server.get("/run/base")
    assert status == 200
    config = dict(table(html, "config"))
    stored = read_run_meta(runs / "base.parquet")["config"]
    assert len(config) == len(stored) and config["method"] == "recorded"
    assert config["timeout_s"] == "20.0" and config["no_corrections"] == "false" and config["limit"] == "null"
    prov = dict(table(html, "provenance"))
    assert prov["git_commit"] and prov["symbolkg_version"] and len(prov["input.fingerprint"]) == 64
    assert prov["input.files"].startswith("lp.jsonl (")
    assert "symbolkg config show" in text_of(html)
    legacy = server.get("/run/legacy")[1]
    assert 'id="config-legacy"' in legacy and dict(table(legacy, "config"))["executor"] == "local"


def test_compare_page_marks_the_settings_that_differ(server, runs):
    html = server.get("/compare?" + urllib.parse.urlencode({"a": "base", "b": "other"}))[1]
    differ = {r[0]: (r[1], r[2]) for r in table(html, "config-diff")}
    assert differ == {"timeout_s": ("20.0", "30.0"), "no_corrections": ("false", "true")}  # `out` is never compared
    assert html.count('<tr class="differs">') == 2
    same = dict(r[:2] for r in table(html, "config-same"))
    assert same["workers"] == "1" and same["method"] == "recorded" and "provenance.git_commit" in same
    assert "Config: 2 setting(s) differ" in text_of(html)
    # a run without a stored config is compared on the metadata it has
    html = server.get("/compare?" + urllib.parse.urlencode({"a": "legacy", "b": "base"}))[1]
    assert "Run A stored no config (written before runs stored theirs)" in text_of(html)
    assert any(r[0] == "workers" and r[1:] == ["2", "1"] for r in table(html, "config-diff"))


def test_the_bundle_shows_the_same_comparison(runs, tmp_path):
    out = tmp_path / "bundle"
    write_bundle([str(runs / "base.parquet"), str(runs / "other.parquet")], out)
    html = (out / "compare" / "base--other" / "index.html").read_text()
    assert {r[0] for r in table(html, "config-diff")} == {"timeout_s", "no_corrections"}
    assert 'id="config"' in (out / "runs" / "base" / "index.html").read_text()
