"""The viewer's web app: a small read-only Starlette (ASGI) app over the runs under some paths.

Pages (HTML, rendered with the Jinja2 templates in ``templates/``) and the JSON the problem
tables page through:

* ``/``: every run, one line each (:meth:`RunSource.summary`); refreshes while a run is written;
* ``/run/{run}``: the report's numbers, the plots, the run's config and provenance, and the problem table
  (``/api/run/{run}/problems?dataset=&outcome=&error=&verdict=&backend=&rounds=&q=&sort=&page=``);
* ``/run/{run}/problem/{id}``: one problem (:func:`symbolkg.jobs.servers.view.pages.problem_view`);
* ``/compare?a=RUN&b=RUN``: the settings in which two runs differ (:mod:`.configs`), the problems they
  share, which flipped (``/api/compare?a=&b=&flip=&...``), and ``/compare/problem?a=&b=&id=`` the
  two attempts side by side;
* ``/api/runs``: the runs list as JSON.

Only ``GET`` and ``HEAD`` are served. On a loopback host nothing else is asked; any other host
needs a token (``--token-file`` or ``$SYMBOLKG_VIEW_TOKEN``, the MCP server's rule), sent as
``Authorization: Bearer``, or once as ``?token=`` (then kept in a cookie). A run whose files are
missing or corrupt shows its error on its line and its page; the server keeps serving the others.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from symbolkg.jobs.servers.view import charts, pages
from symbolkg.jobs.servers.view.compare import Comparison
from symbolkg.jobs.servers.view.configs import config_diff, config_rows
from symbolkg.jobs.servers.view.queries import FILTERS, SORTS, RunError, RunSource, find_runs, run_id

HERE = Path(__file__).resolve().parent
TOKEN_ENV = "SYMBOLKG_VIEW_TOKEN"
TOKEN_COOKIE = "symbolkg_view_token"
#: How often the runs under the paths are looked for again (seconds).
RESCAN_S = 2.0


class ServerLinks:
    """URLs of the server's pages."""

    bundle = False

    def home(self) -> str:
        return "/"

    def run(self, rid: str) -> str:
        return f"/run/{quote(rid, safe='')}"

    def problem(self, rid: str, pid: str) -> str:
        return f"/run/{quote(rid, safe='')}/problem/{quote(pid, safe='')}"

    def compare(self, a: str, b: str) -> str:
        return "/compare?" + urlencode({"a": a, "b": b})

    def compare_problem(self, a: str, b: str, pid: str) -> str:
        return "/compare/problem?" + urlencode({"a": a, "b": b, "id": pid})

    def static(self, name: str) -> str:
        return f"/static/{name}"

    def api_problems(self, rid: str) -> str:
        return f"/api/run/{quote(rid, safe='')}/problems"

    def api_compare(self, a: str, b: str) -> str:
        return "/api/compare?" + urlencode({"a": a, "b": b})


def environment() -> Environment:
    """The Jinja2 environment of the viewer's templates (autoescaped; a few number filters)."""
    env = Environment(
        loader=FileSystemLoader(str(HERE / "templates")),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = lambda x: "–" if x is None else f"{100 * float(x):.1f}%"
    env.filters["secs"] = lambda x: (
        "–" if x is None else (f"{float(x):.3f} s" if float(x) < 100 else f"{float(x):.0f} s")
    )
    env.filters["num"] = lambda x: "–" if x is None else f"{int(x):,}"
    env.filters["when"] = lambda t: "–" if not t else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(t)))
    env.filters["tojson_pretty"] = lambda x: json.dumps(x, indent=1, ensure_ascii=False, default=str)
    return env


@dataclass
class Viewer:
    """The runs under ``paths`` and what has been computed about them (summaries, charts, comparisons).

    Args:
        paths: files or folders given to ``symbolkg view``.
        data_dir: the data root for the problems' text (``--data-dir``).
    """

    paths: list[str]
    data_dir: str | None = None
    _sources: dict[str, RunSource] = field(default_factory=dict)
    _scanned: float = 0.0
    _ids: dict[str, str] = field(default_factory=dict)
    _charts: dict[str, tuple[tuple, dict]] = field(default_factory=dict)
    _comparisons: dict[tuple[str, str], Comparison] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def sources(self) -> list[RunSource]:
        """Every run under the paths (looked for again at most every :data:`RESCAN_S` seconds)."""
        with self._lock:
            if time.monotonic() - self._scanned > RESCAN_S:
                found = find_runs(self.paths)
                seen: dict[str, str] = {}
                for f in found:
                    key = str(f.path)
                    if key not in self._sources:
                        self._sources[key] = RunSource(f, self.data_dir)
                    rid = run_id(f)
                    if rid in seen.values():  # two roots with the same relative path
                        rid = f"{rid}~{abs(hash(key)) % 10_000}"
                    seen[key] = rid
                self._ids = {rid: key for key, rid in seen.items()}
                self._scanned = time.monotonic()
            return [self._sources[k] for k in self._ids.values()]

    def rid(self, source: RunSource) -> str:
        key = str(source.files.path)
        return next((r for r, k in self._ids.items() if k == key), source.id)

    def source(self, rid: str) -> RunSource | None:
        self.sources()
        key = self._ids.get(rid)
        return self._sources.get(key) if key else None

    def summaries(self) -> list[dict[str, Any]]:
        """The runs list: one summary per run, or ``{"id", "path", "error"}`` for a run that cannot be read."""
        out = []
        for s in self.sources():
            try:
                out.append({**s.summary(), "id": self.rid(s), "error": None})
            except RunError as exc:
                out.append({"id": self.rid(s), "path": str(s.files.path), "name": s.files.path.stem, "error": str(exc)})
            except Exception as exc:  # noqa: BLE001 - one bad run never takes the list down
                out.append(
                    {
                        "id": self.rid(s),
                        "path": str(s.files.path),
                        "name": s.files.path.stem,
                        "error": f"{type(exc).__name__}: {exc}",
                    }
                )
        return out

    def charts(self, source: RunSource) -> dict[str, Any]:
        sig = source.files.signature()
        key = str(source.files.path)
        with self._lock:
            cached = self._charts.get(key)
            if cached and cached[0] == sig:
                return cached[1]
        drawn = charts.run_charts(source)
        with self._lock:
            self._charts[key] = (sig, drawn)
        return drawn

    def comparison(self, a: RunSource, b: RunSource) -> Comparison:
        key = (str(a.files.path), str(b.files.path))
        with self._lock:
            if key not in self._comparisons:
                self._comparisons[key] = Comparison(a, b)
            return self._comparisons[key]

    def compare_suggestions(self, summaries: list[dict[str, Any]]) -> list[tuple[dict, dict]]:
        """Pairs of readable runs over the same datasets (what one compares: two methods, two models)."""
        ok = [s for s in summaries if not s.get("error")]
        return [(a, b) for i, a in enumerate(ok) for b in ok[i + 1 :] if set(a["datasets"]) & set(b["datasets"])]


# --------------------------------------------------------------------------- page contexts (shared with the bundle)

#: The problem table's columns (table.js renders them; ``link`` opens the problem, ``badge`` colours the value).
PROBLEM_COLUMNS = [
    {"key": "problem_id", "label": "id", "link": True},
    {"key": "dataset", "label": "dataset"},
    {"key": "question", "label": "question"},
    {"key": "outcome", "label": "outcome", "badge": True},
    {"key": "predicted", "label": "pred."},
    {"key": "gold", "label": "gold"},
    {"key": "err", "label": "error"},
    {"key": "verdict", "label": "verify", "badge": True},
    {"key": "backend", "label": "backend"},
    {"key": "rounds", "label": "rounds", "num": True},
    {"key": "latency_seconds", "label": "latency s", "num": True, "fmt": "secs"},
    {"key": "tokens", "label": "tokens", "num": True, "fmt": "int"},
]
COMPARE_COLUMNS = [
    {"key": "problem_id", "label": "id", "link": True},
    {"key": "dataset", "label": "dataset"},
    {"key": "question", "label": "question"},
    {"key": "flip", "label": "flip", "badge": True},
    {"key": "outcome_a", "label": "A", "badge": True},
    {"key": "outcome_b", "label": "B", "badge": True},
    {"key": "predicted_a", "label": "pred. A"},
    {"key": "predicted_b", "label": "pred. B"},
    {"key": "gold", "label": "gold"},
    {"key": "err_a", "label": "error A"},
    {"key": "err_b", "label": "error B"},
    {"key": "verdict_a", "label": "verify A", "badge": True},
    {"key": "verdict_b", "label": "verify B", "badge": True},
    {"key": "latency_a", "label": "latency A", "num": True, "fmt": "secs"},
    {"key": "latency_b", "label": "latency B", "num": True, "fmt": "secs"},
]
#: Sort keys of the compare table (request value -> column), as queries.SORTS for one run.
COMPARE_SORTS = {"id": "rownum", "latency": "latency_seconds", "tokens": "tokens"}


def table_config(links: Any, api: str, columns: list[dict], filters: dict[str, str], sorts: dict[str, str]) -> dict:
    """What table.js needs: where rows come from and how to show them.

    Rows come from the API, or from the bundle's embedded ``SKG_ROWS``.
    """
    return {
        "mode": "local" if links.bundle else "api",
        "api": api,
        "data": "SKG_ROWS",
        "columns": columns,
        "filters": filters,
        "sorts": sorts,
    }


def run_page_context(viewer: Viewer, source: RunSource, links: Any) -> dict[str, Any]:
    """What ``run.html`` needs (raises :class:`RunError` when the run cannot be read)."""
    summary = {**source.summary(), "id": viewer.rid(source)}
    facets = source.facets()
    return {
        "run": summary,
        "facets": facets,
        "charts": viewer.charts(source),
        "datasets": charts.dataset_table(source),
        "stages": charts.stage_table(source),
        "text_note": source.text_note(),
        "config": config_rows(summary["run_info"]),
        "table_config": table_config(links, links.api_problems(summary["id"]), PROBLEM_COLUMNS, FILTERS, SORTS),
    }


def problem_page_context(viewer: Viewer, source: RunSource, pid: str, links: Any) -> dict[str, Any] | None:
    view = pages.problem_view(source, pid, viewer.data_dir)
    if view is None:
        return None
    return {"run": {**source.summary(), "id": viewer.rid(source)}, "p": view}


def compare_page_context(viewer: Viewer, a: RunSource, b: RunSource, links: Any) -> dict[str, Any]:
    comp = viewer.comparison(a, b)
    sa, sb = a.summary(), b.summary()
    return {
        "a": {**sa, "id": viewer.rid(a)},
        "b": {**sb, "id": viewer.rid(b)},
        "facets": comp.facets(),
        "counts": comp.counts(),
        "config": config_diff(sa["run_info"], sb["run_info"]),
        "table_config": table_config(
            links, links.api_compare(viewer.rid(a), viewer.rid(b)), COMPARE_COLUMNS, Comparison.FILTERS, COMPARE_SORTS
        ),
    }


def compare_problem_context(viewer: Viewer, a: RunSource, b: RunSource, pid: str, links: Any) -> dict[str, Any] | None:
    va = pages.problem_view(a, pid, viewer.data_dir)
    vb = pages.problem_view(b, pid, viewer.data_dir)
    if va is None or vb is None:
        return None
    return {
        "a": {**a.summary(), "id": viewer.rid(a)},
        "b": {**b.summary(), "id": viewer.rid(b)},
        "pa": va,
        "pb": vb,
    }


# --------------------------------------------------------------------------- the ASGI app


class ReadOnlyAndToken:
    """ASGI middleware: only GET/HEAD; with a token, every request must carry it (module docstring)."""

    def __init__(self, app: Any, token: str | None) -> None:
        if token is not None and not token:
            raise ValueError("an empty token would let anyone in")
        self.app = app
        self.token = token

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await Response("read-only: GET and HEAD only", status_code=405, headers={"Allow": "GET, HEAD"})(
                scope, receive, send
            )
            return
        if self.token is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given = request.headers.get("authorization", "")
        via_query = request.query_params.get("token")
        ok = (
            hmac.compare_digest(given.encode(), b"Bearer " + self.token.encode())
            or hmac.compare_digest(request.cookies.get(TOKEN_COOKIE, "").encode(), self.token.encode())
            or (via_query is not None and hmac.compare_digest(via_query.encode(), self.token.encode()))
        )
        if not ok:
            await Response(
                "missing or wrong token: open the URL with ?token=... once, or send 'Authorization: Bearer <token>'",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )(scope, receive, send)
            return
        if via_query is None:
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append(
                    (b"set-cookie", f"{TOKEN_COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/".encode())
                )
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1): the MCP server's rule."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(host: str, token: str | None) -> None:
    """Refuse a non-loopback host without a token (as ``symbolkg mcp serve`` does).

    Raises:
        ValueError: ``host`` is not loopback and there is no token.
    """
    if not token and not is_loopback(host):
        raise ValueError(
            f"refusing to serve on non-loopback host {host!r} without a token: "
            f"give --token-file FILE or set {TOKEN_ENV}"
        )


class _Pages:
    """The request handlers of :func:`create_app` (one method per route)."""

    def __init__(self, viewer: Viewer) -> None:
        self.viewer = viewer
        self.env = environment()
        self.links = ServerLinks()

    def page(self, name: str, ctx: dict[str, Any], status: int = 200) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**ctx, links=self.links, live=True), status_code=status)

    def error_page(self, message: str, status: int, run: RunSource | None = None) -> HTMLResponse:
        info = {"id": self.viewer.rid(run), "path": str(run.files.path)} if run is not None else None
        return self.page("error.html", {"message": message, "run": info}, status)

    async def home(self, request: Request) -> Response:
        summaries = self.viewer.summaries()
        return self.page(
            "runs.html",
            {
                "runs": summaries,
                "pairs": self.viewer.compare_suggestions(summaries),
                "paths": self.viewer.paths,
                "refresh": any(s.get("status") == "running" for s in summaries),
            },
        )

    async def api_runs(self, request: Request) -> Response:
        return JSONResponse(self.viewer.summaries())

    async def run_page(self, request: Request) -> Response:
        source = self.viewer.source(request.path_params["run"])
        if source is None:
            return self.error_page(f"no run {request.path_params['run']!r} under {', '.join(self.viewer.paths)}", 404)
        try:
            ctx = run_page_context(self.viewer, source, self.links)
        except Exception as exc:  # noqa: BLE001 - the run's error on its page, never a dead server
            return self.error_page(_message(exc), 500, source)
        return self.page("run.html", {**ctx, "refresh": ctx["run"]["status"] == "running"})

    async def api_problems(self, request: Request) -> Response:
        source = self.viewer.source(request.path_params["run"])
        if source is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        try:
            result = source.problems(dict(request.query_params))
        except Exception as exc:  # noqa: BLE001
            return JSONResponse({"error": _message(exc)}, status_code=500)
        rid = self.viewer.rid(source)
        for r in result["rows"]:
            r["href"] = self.links.problem(rid, r["problem_id"])
        return JSONResponse(result)

    async def problem_page(self, request: Request) -> Response:
        source = self.viewer.source(request.path_params["run"])
        if source is None:
            return self.error_page(f"no run {request.path_params['run']!r}", 404)
        pid = request.path_params["pid"]
        try:
            ctx = problem_page_context(self.viewer, source, pid, self.links)
        except Exception as exc:  # noqa: BLE001
            return self.error_page(_message(exc), 500, source)
        if ctx is None:
            return self.error_page(f"no problem {pid!r} in run {self.viewer.rid(source)}", 404, source)
        return self.page("problem.html", ctx)

    def _pair(self, request: Request) -> tuple[RunSource | None, RunSource | None]:
        q = request.query_params
        return self.viewer.source(q.get("a", "")), self.viewer.source(q.get("b", ""))

    async def compare_page(self, request: Request) -> Response:
        a, b = self._pair(request)
        if a is None or b is None:
            return self.error_page("compare needs two runs: /compare?a=RUN&b=RUN (ids as on the runs page)", 404)
        try:
            ctx = compare_page_context(self.viewer, a, b, self.links)
        except Exception as exc:  # noqa: BLE001
            return self.error_page(_message(exc), 500)
        return self.page("compare.html", ctx)

    async def api_compare(self, request: Request) -> Response:
        a, b = self._pair(request)
        if a is None or b is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        try:
            result = self.viewer.comparison(a, b).pairs(dict(request.query_params))
        except Exception as exc:  # noqa: BLE001
            return JSONResponse({"error": _message(exc)}, status_code=500)
        ra, rb = self.viewer.rid(a), self.viewer.rid(b)
        for r in result["rows"]:
            r["href"] = self.links.compare_problem(ra, rb, r["problem_id"])
        return JSONResponse(result)

    async def compare_problem(self, request: Request) -> Response:
        a, b = self._pair(request)
        pid = request.query_params.get("id", "")
        if a is None or b is None:
            return self.error_page("no such run", 404)
        try:
            ctx = compare_problem_context(self.viewer, a, b, pid, self.links)
        except Exception as exc:  # noqa: BLE001
            return self.error_page(_message(exc), 500)
        if ctx is None:
            return self.error_page(f"problem {pid!r} is not in both runs", 404)
        return self.page("compare_problem.html", ctx)

    async def on_error(self, request: Request, exc: Exception) -> Response:
        return self.error_page(_message(exc), 500)  # a bug in a page: its message, never a dead server


def create_app(paths: list[str], *, data_dir: str | None = None, token: str | None = None) -> Any:
    """The viewer's ASGI app over the runs under ``paths`` (read-only; ``token`` required when given)."""
    h = _Pages(Viewer([str(p) for p in paths], data_dir))
    routes = [
        Route("/", h.home),
        Route("/api/runs", h.api_runs),
        Route("/run/{run}", h.run_page),
        Route("/api/run/{run}/problems", h.api_problems),
        Route("/run/{run}/problem/{pid:path}", h.problem_page),
        Route("/compare", h.compare_page),
        Route("/api/compare", h.api_compare),
        Route("/compare/problem", h.compare_problem),
        Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={Exception: h.on_error})
    app.state.viewer = h.viewer
    return ReadOnlyAndToken(app, token)


def _message(exc: Exception) -> str:
    return str(exc) if isinstance(exc, RunError) else f"{type(exc).__name__}: {exc}"


def serve(paths: list[str], *, host: str, port: int, data_dir: str | None, token: str | None) -> None:
    """Serve the viewer with uvicorn until interrupted.

    Raises:
        ValueError: a non-loopback ``host`` without a token.
    """
    import uvicorn  # the server only when serving (tests and the bundle drive the app without it)

    check_host(host, token)
    app = create_app(paths, data_dir=data_dir, token=token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"symbolkg view: {len(app.app.state.viewer.sources())} run(s) under {', '.join(paths)} at "
        f"http://{shown}:{port}/" + (" (token required)" if token else ""),
        flush=True,
    )
    server.run()
