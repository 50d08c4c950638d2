"""`symbolkg view --bundle OUT`: the viewer as a static folder that opens from disk and can be published.

The same templates as the server render every page to a file; links are relative, so the folder
works from ``file://`` and from any web server or path. The problem tables cannot ask a server,
so each table page gets its rows in a script beside it (``rows.js``: the filter and sort columns,
and the question and program text the search looks in), and ``static/table.js`` filters, sorts,
searches and pages them in the browser the way the server's DuckDB queries do. Layout::

    OUT/index.html                          the runs list
    OUT/static/                             stylesheet and table script
    OUT/runs/<run>/index.html, rows.js      a run: numbers, plots, problem table
    OUT/runs/<run>/p/<problem>.html         one problem (at most --bundle-max-problems per run)
    OUT/compare/<a>--<b>/index.html, rows.js, p/<problem>.html   two runs over the same datasets
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from symbolkg.jobs.servers.view.app import (
    HERE,
    Viewer,
    compare_page_context,
    compare_problem_context,
    environment,
    problem_page_context,
    run_page_context,
)
from symbolkg.jobs.servers.view.pages import safe_name


class BundleLinks:
    """Relative URLs between the bundle's files, from a page ``depth`` folders below the bundle's root."""

    bundle = True

    def __init__(self, depth: int) -> None:
        self.prefix = "../" * depth

    def home(self) -> str:
        return self.prefix + "index.html"

    def run(self, rid: str) -> str:
        return f"{self.prefix}runs/{rid}/index.html"

    def problem(self, rid: str, pid: str) -> str:
        return f"{self.prefix}runs/{rid}/p/{safe_name(pid)}.html"

    def compare(self, a: str, b: str) -> str:
        return f"{self.prefix}compare/{a}--{b}/index.html"

    def compare_problem(self, a: str, b: str, pid: str) -> str:
        return f"{self.prefix}compare/{a}--{b}/p/{safe_name(pid)}.html"

    def static(self, name: str) -> str:
        return f"{self.prefix}static/{name}"

    def api_problems(self, rid: str) -> str:
        return ""

    def api_compare(self, a: str, b: str) -> str:
        return ""


def _rows_js(rows: list[dict[str, Any]]) -> str:
    return "window.SKG_ROWS = " + json.dumps(rows, ensure_ascii=False, default=str, separators=(",", ":")) + ";\n"


def _text(*parts: Any) -> str:
    return " ".join(str(p) for p in parts if p).lower()


def write_bundle(
    paths: list[str], out: Path, *, data_dir: str | None = None, max_problem_pages: int = 5000
) -> dict[str, Any]:
    """Write the static viewer of the runs under ``paths`` to ``out`` (replacing the files it writes).

    Returns:
        ``{"runs", "problem_pages", "compare_pages", "notes"}``; a run that cannot be read is listed
        with its error and noted.
    """
    writer = _Writer(Viewer([str(p) for p in paths], data_dir), out, max_problem_pages)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(HERE / "static", out / "static", dirs_exist_ok=True)
    summaries = writer.viewer.summaries()
    pairs = writer.viewer.compare_suggestions(summaries)
    writer.write(out / "index.html", "runs.html", {"runs": summaries, "pairs": pairs, "paths": []}, 0)
    for s in summaries:
        writer.run(s)
    compare_pages = sum(writer.comparison(a, b) for a, b in pairs)
    for s in writer.viewer.sources():
        s.close()
    return {
        "runs": len(summaries),
        "problem_pages": writer.problem_pages,
        "compare_pages": compare_pages,
        "notes": writer.notes,
    }


class _Writer:
    """Writes the bundle's pages (one method per kind of page)."""

    def __init__(self, viewer: Viewer, out: Path, max_problem_pages: int) -> None:
        self.viewer, self.out, self.max_pages = viewer, out, max_problem_pages
        self.env = environment()
        self.notes: list[str] = []
        self.problem_pages = 0

    def write(self, path: Path, template: str, ctx: dict[str, Any], depth: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        html = self.env.get_template(template).render(**ctx, links=BundleLinks(depth), live=False)
        path.write_text(html, encoding="utf-8")

    def run(self, s: dict[str, Any]) -> None:
        rid = s["id"]
        run_dir = self.out / "runs" / rid
        source = None if s.get("error") else self.viewer.source(rid)
        if source is None:
            self.write(run_dir / "index.html", "error.html", {"message": s.get("error") or "not found", "run": s}, 2)
            self.notes.append(f"{rid}: {s.get('error')}")
            return
        try:
            self.write(
                run_dir / "index.html",
                "run.html",
                {**run_page_context(self.viewer, source, BundleLinks(2)), "refresh": False},
                2,
            )
            rows = source.all_rows(with_program=True)
        except Exception as exc:  # noqa: BLE001 - the run's error on its page, the bundle goes on
            self.write(run_dir / "index.html", "error.html", {"message": str(exc), "run": s}, 2)
            self.notes.append(f"{rid}: {exc}")
            return
        for i, r in enumerate(rows):
            r["href"] = None
            if i < self.max_pages:
                ctx = problem_page_context(self.viewer, source, r["problem_id"], BundleLinks(3))
                if ctx is not None:
                    self.write(run_dir / "p" / f"{safe_name(r['problem_id'])}.html", "problem.html", ctx, 3)
                    self.problem_pages += 1
                    r["href"] = f"p/{safe_name(r['problem_id'])}.html"
            r["text"] = _text(r["problem_id"], r.get("question"), r.pop("program", None))
            r["question"] = (r.get("question") or "")[:160]
        if len(rows) > self.max_pages:
            self.notes.append(
                f"{rid}: problem pages for the first {self.max_pages} of {len(rows)} rows "
                "(--bundle-max-problems); the table lists all"
            )
        (run_dir / "rows.js").write_text(_rows_js(rows), encoding="utf-8")

    def comparison(self, a_sum: dict[str, Any], b_sum: dict[str, Any]) -> int:
        """Write one comparison; 1 if written, 0 if it could not be."""
        a, b = self.viewer.source(a_sum["id"]), self.viewer.source(b_sum["id"])
        if a is None or b is None:
            return 0
        cdir = self.out / "compare" / f"{a_sum['id']}--{b_sum['id']}"
        try:
            ctx = compare_page_context(self.viewer, a, b, BundleLinks(2))
            rows = self.viewer.comparison(a, b).all_pairs()
        except Exception as exc:  # noqa: BLE001
            self.notes.append(f"compare {a_sum['id']} vs {b_sum['id']}: {exc}")
            return 0
        self.write(cdir / "index.html", "compare.html", ctx, 2)
        for i, r in enumerate(rows):
            r["href"] = None
            if i < self.max_pages:
                pctx = compare_problem_context(self.viewer, a, b, r["problem_id"], BundleLinks(3))
                if pctx is not None:
                    self.write(cdir / "p" / f"{safe_name(r['problem_id'])}.html", "compare_problem.html", pctx, 3)
                    r["href"] = f"p/{safe_name(r['problem_id'])}.html"
            r["text"] = _text(r["problem_id"], r.get("question"), r.pop("program", None))
        (cdir / "rows.js").write_text(_rows_js(rows), encoding="utf-8")
        return 1
