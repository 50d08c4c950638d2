"""What the viewer knows about runs: finding them on disk, and querying them with DuckDB.

A *run* is a results Parquet written by ``symbolkg solve`` (``RUN.parquet``), or the
``RUN.parquet.parts/`` folder of a run still being written (or killed), with what lies beside
it: ``RUN.verify.parquet`` (``symbolkg verify``), ``RUN.parquet.requests/`` (the LLM request
log), ``RUN.parquet.gates/`` (the gate log), and, for ``--method symbolkg`` runs, the LKG store
the run's metadata names.

Nothing is ever loaded whole into a page. :class:`RunSource` keeps one in-memory DuckDB table
per run with the columns the problem table filters and sorts on (read from the run's Parquet
files, first row per problem as :func:`symbolkg.jobs.pipeline.store.read_run` keeps it, joined with the
verdicts and the problems' question text); a page of the table is one SQL query with ``LIMIT``.
The table is rebuilt when any of the run's files changes (a run being written), so a reload
shows the new rows. The big per-row columns (attempts, trace, certificate) are read from the
Parquet for one problem at a time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from symbolkg.jobs.datasets.registry import load_problems

_META_KEY = b"symbolkg"
#: A run whose newest part is younger than this is shown as running (else: unfinished, resumable).
RUNNING_WINDOW_S = 120.0
#: Rows per page of the problem table unless the request asks for another size (at most MAX_PAGE).
PAGE_SIZE = 50
MAX_PAGE = 500

#: Filters the problem table understands: request parameter -> column of the table.
FILTERS = {
    "dataset": "dataset",
    "outcome": "outcome",
    "error": "err",
    "verdict": "verdict",
    "backend": "backend",
    "rounds": "rounds",
    "method": "method",
    "route": "route",
}
#: Sort keys: request value -> SQL order.
SORTS = {"id": "rownum", "latency": "latency_seconds", "tokens": "tokens", "solve": "solve_seconds", "rounds": "rounds"}
#: Columns of a problem-table row as the API returns them.
ROW_COLUMNS = (
    "rownum",
    "problem_id",
    "dataset",
    "method",
    "model",
    "backend",
    "language",
    "status",
    "outcome",
    "err",
    "verdict",
    "predicted",
    "gold",
    "rounds",
    "latency_seconds",
    "solve_seconds",
    "tokens",
    "route",
    "certified",
    "question",
)


class RunError(Exception):
    """A run's files are missing or unreadable; the viewer shows the message on that run."""


@dataclass
class RunFiles:
    """The files of one run, found on disk."""

    path: Path  # RUN.parquet (it may not exist yet: a run in progress has only parts)
    root: Path  # the folder given to `symbolkg view` that it was found under

    @property
    def parts_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".parts")

    @property
    def verify_path(self) -> Path:
        return self.path.with_name(self.path.stem + ".verify.parquet")

    @property
    def requests_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".requests")

    @property
    def gates_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".gates")

    def result_files(self) -> list[Path]:
        files = [self.path] if self.path.exists() else []
        if self.parts_dir.is_dir():
            files += sorted(self.parts_dir.glob("part-*.parquet"))
        return files

    def signature(self) -> tuple:
        """Changes whenever a file of the run changes (rows added, verify rerun, run finalized)."""
        sig = []
        for f in [*self.result_files(), self.verify_path]:
            try:
                st = f.stat()
                sig.append((f.name, st.st_mtime_ns, st.st_size))
            except OSError:
                continue
        return tuple(sig)


def run_id(files: RunFiles) -> str:
    """A URL-safe id, readable and stable: the run's path under its root, ``/`` as ``~``."""
    try:
        rel = files.path.relative_to(files.root)
    except ValueError:
        rel = Path(files.path.name)
    stem = str(rel.with_suffix("")).replace(os.sep, "~")
    slug = re.sub(r"[^A-Za-z0-9._~-]", "_", stem)
    return slug or hashlib.sha1(str(files.path).encode()).hexdigest()[:10]


_SIDE_DIRS = (".parts", ".requests", ".gates")


def find_runs(paths: list[str | os.PathLike[str]]) -> list[RunFiles]:
    """Every run under ``paths`` (results Parquet files, or folders searched recursively).

    A file is a run when its schema has the results columns (``problem_id``, ``method``,
    ``status``); ``*.verify.parquet``, LKG stores and the logs beside a run are not. A
    ``RUN.parquet.parts/`` folder without its ``RUN.parquet`` is a run in progress.
    """
    found: dict[Path, RunFiles] = {}
    for raw in paths:
        p = Path(raw).resolve()
        if p.is_file() or p.name.endswith(".parquet") and not p.is_dir():
            found.setdefault(p, RunFiles(p, p.parent))
            continue
        if p.name.endswith(".parquet.parts") and p.is_dir():
            run = p.with_name(p.name[: -len(".parts")])
            found.setdefault(run, RunFiles(run, p.parent))
            continue
        if not p.is_dir():
            found.setdefault(p, RunFiles(p, p.parent))  # shown with its error: missing
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            d = Path(dirpath)
            keep = []
            for name in sorted(dirnames):
                if name.endswith(".parquet.parts"):
                    run = d / name[: -len(".parts")]
                    if not run.exists():
                        found.setdefault(run, RunFiles(run, p))
                    continue
                if name.endswith(_SIDE_DIRS) or (d / name / "contexts").is_dir() or name.startswith("."):
                    continue  # logs beside a run, LKG stores, hidden folders
                keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames):
                if not name.endswith(".parquet") or name.endswith(".verify.parquet"):
                    continue
                path = d / name
                if _is_results(path):
                    found.setdefault(path, RunFiles(path, p))
    return sorted(found.values(), key=lambda f: str(f.path))


def _is_results(path: Path) -> bool:
    try:
        names = set(pq.read_schema(path).names)
    except Exception:  # noqa: BLE001 - a corrupt file is still a run to show (with its error)
        return True
    return {"problem_id", "method", "status"} <= names


def read_meta(files: RunFiles) -> dict[str, Any]:
    """The run's metadata as :func:`symbolkg.jobs.pipeline.store.read_run` merges it, from the schemas alone."""
    result_files = files.result_files()
    if not result_files:
        raise RunError(f"no results at {files.path} (nor {files.parts_dir})")
    meta: dict[str, Any] = {}
    sessions: dict[str, float] = {}
    for f in result_files:
        try:
            raw = (pq.read_schema(f).metadata or {}).get(_META_KEY)
        except Exception as exc:
            raise RunError(f"cannot read {f.name}: {exc}") from exc
        m = json.loads(raw) if raw else {}
        if f == files.path:
            meta = m
            sessions.update(m.get("sessions", {}))
        elif "session" in m:
            s = m["session"]
            sessions[s] = max(sessions.get(s, 0.0), float(m.get("session_elapsed_s", 0.0)))
            for k, v in m.items():  # a run in progress: its run_info travels in every part
                if k not in ("session", "session_elapsed_s"):
                    meta.setdefault(k, v)
    meta = {
        **meta,
        "sessions": sessions,
        "wall_seconds": sum(sessions.values()),
        "finished": files.path.exists() and len(result_files) == 1,
    }
    return meta


def _sql_list(paths: list[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


#: The derived columns of the problem table (one SQL expression each, over a results row ``r``).
_OUTCOME = "CASE WHEN r.correct THEN 'correct' WHEN r.predicted IS NULL THEN 'unanswered' ELSE 'wrong' END"
_ERROR = "CASE WHEN NOT r.executed OR r.error_kind IS NOT NULL THEN coalesce(r.error_kind, r.status) END"


@dataclass
class _Loaded:
    signature: tuple
    con: duckdb.DuckDBPyConnection
    facets: dict[str, list[tuple[Any, int]]]
    total: int
    text_note: str | None


@dataclass
class RunSource:
    """One run, queried with DuckDB (module docstring). Thread-safe: queries hold a lock.

    Args:
        files: where the run lies.
        data_dir: the data root for the problems' question text (``--data-dir``).
    """

    files: RunFiles
    data_dir: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _loaded: _Loaded | None = field(default=None, repr=False)
    _summary: tuple[tuple, dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def id(self) -> str:
        return run_id(self.files)

    # -- the run's numbers -----------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """The runs-list line: method, model, datasets, counts, rates, tokens, times (cached per file state).

        Raises:
            RunError: the run's files are missing or unreadable.
        """
        sig = self.files.signature()
        with self._lock:
            if self._summary is not None and self._summary[0] == sig:
                return self._summary[1]
        meta = read_meta(self.files)
        files = self.files.result_files()
        con = duckdb.connect()
        try:
            con.execute(f"CREATE VIEW r AS {self._dedup_sql(files, con)}")
            row = con.execute(f"""
                SELECT count(*), count(*) FILTER (WHERE executed), count(*) FILTER (WHERE correct),
                       count(*) FILTER (WHERE certificate IS NOT NULL),
                       coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
                       coalesce(sum(llm_calls), 0), min(finished_at - latency_seconds), max(finished_at),
                       list(DISTINCT method ORDER BY method), list(DISTINCT model ORDER BY model)
                           FILTER (WHERE model IS NOT NULL),
                       list(DISTINCT dataset ORDER BY dataset), count(*) FILTER (WHERE {_OUTCOME} = 'unanswered')
                FROM r""").fetchone()
            verdicts = self._verdict_counts(con)
        except duckdb.Error as exc:
            raise RunError(f"cannot query {self.files.path.name}: {exc}") from exc
        finally:
            con.close()
        n, executed, correct, certified, ptok, ctok, calls, started, ended, methods, models, datasets, unanswered = row
        status = "finished" if meta["finished"] else self._progress_state()
        out = {
            "id": self.id,
            "path": str(self.files.path),
            "name": self.files.path.stem,
            "methods": methods or [],
            "engine": meta.get("engine") or ("recorded programs" if methods == ["recorded"] else None),
            "models": models or [],
            "datasets": datasets or [],
            "source": meta.get("source"),
            "problems": n,
            "executed": executed,
            "correct": correct,
            "unanswered": unanswered,
            "accuracy": round(correct / n, 4) if n else 0.0,
            "execution_rate": round(executed / n, 4) if n else 0.0,
            "certified": certified,
            "verified": verdicts.get("verified") if verdicts else None,
            "verify": verdicts,
            "prompt_tokens": int(ptok),
            "completion_tokens": int(ctok),
            "llm_calls": int(calls),
            "tokens": int(ptok) + int(ctok),
            "wall_seconds": round(float(meta.get("wall_seconds") or 0.0), 3),
            "sessions": len(meta.get("sessions", {})),
            "started_at": started,
            "finished_at": ended,
            "status": status,
            "run_info": {k: v for k, v in meta.items() if k not in ("sessions",)},
            "parts": len(files) - (1 if self.files.path.exists() else 0),
        }
        with self._lock:
            self._summary = (sig, out)
        return out

    def _progress_state(self) -> str:
        parts = self.files.result_files()
        newest = max((p.stat().st_mtime for p in parts if p.exists()), default=0.0)
        return "running" if time.time() - newest < RUNNING_WINDOW_S else "unfinished"

    def _verdict_counts(self, con: duckdb.DuckDBPyConnection) -> dict[str, int] | None:
        vp = self.files.verify_path
        if not vp.exists():
            return None
        try:
            rows = con.execute(f"SELECT verdict, count(*) FROM read_parquet({_sql_list([vp])}) GROUP BY 1").fetchall()
        except duckdb.Error as exc:
            raise RunError(f"cannot read {vp.name}: {exc}") from exc
        counts = {"verified": 0, "failed": 0, "unverifiable": 0}
        counts.update({k: int(v) for k, v in rows})
        return counts

    def _dedup_sql(self, files: list[Path], con: duckdb.DuckDBPyConnection, where: str = "") -> str:
        """SQL of the run's rows, first row per problem in file order (the final file, then the parts).

        ``where``: a condition on the files' own columns applied before the deduplication (one
        problem's rows: the window then sees only them).
        """
        if not files:
            raise RunError(f"no results at {self.files.path}")
        order = (
            "CASE filename "
            + " ".join(f"WHEN '{str(f).replace(chr(39), chr(39) * 2)}' THEN {i}" for i, f in enumerate(files))
            + " END"
        )
        later = {"route": "NULL::VARCHAR", "trace": "'{}'", "stage_seconds": "'{}'", "certificate": "NULL::VARCHAR"}
        names = set()
        for f in files:
            try:
                names |= set(pq.read_schema(f).names)
            except Exception as exc:
                raise RunError(f"cannot read {f.name}: {exc}") from exc
        fill = ", ".join(f"{v} AS {k}" for k, v in later.items() if k not in names)
        return (
            f"SELECT * EXCLUDE (filename, _rk) FROM (SELECT *, {order} AS _ord, "
            f"row_number() OVER (PARTITION BY problem_id ORDER BY {order}, file_row_number) AS _rk "
            f"{', ' + fill if fill else ''} "
            f"FROM read_parquet({_sql_list(files)}, union_by_name=true, filename=true, file_row_number=true) "
            f"{'WHERE ' + where if where else ''}) WHERE _rk = 1"
        )

    # -- the problem table ----------------------------------------------------------------------
    def _load(self) -> _Loaded:
        sig = self.files.signature()
        with self._lock:
            if self._loaded is not None and self._loaded.signature == sig:
                return self._loaded
            files = self.files.result_files()
            con = duckdb.connect()
            try:
                con.execute("SET threads TO 2")
                con.execute(f"CREATE VIEW raw AS {self._dedup_sql(files, con)}")
                texts, note = problem_texts(read_meta(self.files).get("source"), self.data_dir)
                con.register("texts_arrow", texts)
                verify = self.files.verify_path
                vjoin = (
                    (
                        f"LEFT JOIN (SELECT problem_id AS vid, verdict AS v_verdict, reason AS v_reason "
                        f"FROM read_parquet({_sql_list([verify])})) v ON v.vid = r.problem_id"
                    )
                    if verify.exists()
                    else ""
                )
                vcol = (
                    "coalesce(v.v_verdict, CASE WHEN r.executed THEN 'unchecked' ELSE 'not executed' END)"
                    if verify.exists()
                    else "CASE WHEN r.certificate IS NULL THEN 'no certificate' ELSE 'unchecked' END"
                )
                con.execute(f"""
                    CREATE TABLE rows AS
                    SELECT row_number() OVER (ORDER BY r._ord, r.file_row_number) AS rownum,
                           r.problem_id, r.dataset, r.method, r.model,
                           r.backend, r.language, r.status, r.executed, r.answer, r.predicted, r.gold, r.correct,
                           r.error_kind, r.error_message, r.rounds, r.latency_seconds, r.solve_seconds,
                           r.prompt_tokens + r.completion_tokens AS tokens, r.route, r.finished_at, r.stage_seconds,
                           r.certificate IS NOT NULL AS certified, {_OUTCOME} AS outcome, {_ERROR} AS err,
                           {vcol} AS verdict, coalesce(t.question, '') AS question, r.program,
                           lower(r.problem_id || ' ' || coalesce(t.question, '') || ' ' || coalesce(r.program, ''))
                               AS search
                    FROM raw r
                    LEFT JOIN texts_arrow t ON t.id = r.problem_id {vjoin}
                """)
                con.unregister("texts_arrow")
                # the search index: every word of id, question and program -> its rows, sorted by word, so a
                # word (or a word's beginning) is a range scan instead of a scan of all the text
                con.execute(
                    "CREATE TABLE terms AS SELECT DISTINCT "
                    f"unnest(regexp_extract_all(search, '{SEARCH_TOKEN}')) AS term, rownum FROM rows ORDER BY term"
                )
                facets = {}
                for name, col in FILTERS.items():
                    facets[name] = [
                        (v, int(c))
                        for v, c in con.execute(
                            f"SELECT {col}, count(*) FROM rows WHERE {col} IS NOT NULL GROUP BY 1 ORDER BY 1"
                        ).fetchall()
                    ]
                total = con.execute("SELECT count(*) FROM rows").fetchone()[0]
            except duckdb.Error as exc:
                con.close()
                raise RunError(f"cannot query {self.files.path.name}: {exc}") from exc
            if self._loaded is not None:
                self._loaded.con.close()
            self._loaded = _Loaded(sig, con, facets, int(total), note)
            return self._loaded

    def facets(self) -> dict[str, list[tuple[Any, int]]]:
        """Per filter: its values in this run with their row counts."""
        return self._load().facets

    def text_note(self) -> str | None:
        """Why the questions are not searchable (their problems could not be loaded), else None."""
        return self._load().text_note

    def problems(self, params: dict[str, str]) -> dict[str, Any]:
        """One page of the problem table: ``{"total", "matched", "page", "pages", "page_size", "rows"}``.

        Args:
            params: filters (:data:`FILTERS`, each equality; ``rounds`` an integer), ``q`` (words that
                must all occur in the question or the program, case-insensitive), ``sort`` (a key of
                :data:`SORTS`, ``-`` in front for descending), ``page`` (1-based), ``page_size``.
        """
        loaded = self._load()
        where, args = where_clause(params)
        order = sort_clause(params.get("sort", "id"))
        size = min(max(int_param(params.get("page_size"), PAGE_SIZE), 1), MAX_PAGE)
        page = max(int_param(params.get("page"), 1), 1)
        with self._lock:
            cur = loaded.con.cursor()
            try:
                matched, rows = page_query(cur, "rows", ", ".join(ROW_COLUMNS), where, args, order, size, page)
            finally:
                cur.close()
        pages = max(1, -(-matched // size))
        page = min(page, pages)
        for r in rows:
            r["question"] = clip(r["question"], 160)
        return {
            "total": loaded.total,
            "matched": int(matched),
            "page": page,
            "pages": pages,
            "page_size": size,
            "rows": rows,
        }

    def all_rows(self, columns: tuple[str, ...] = ROW_COLUMNS, *, with_program: bool = False) -> list[dict[str, Any]]:
        """Every row of the problem table (the static bundle embeds them); ``program`` too if asked."""
        loaded = self._load()
        cols = ", ".join([*columns, "program"] if with_program else columns)
        with self._lock:
            cur = loaded.con.cursor()
            try:
                result = cur.execute(f"SELECT {cols} FROM rows ORDER BY rownum")
                names = [d[0] for d in result.description]
                return [dict(zip(names, r, strict=True)) for r in result.fetchall()]
            finally:
                cur.close()

    def aggregate(self, sql: str) -> list[tuple]:
        """Run ``sql`` over the problem table (``rows``) and return its tuples (the run page's charts)."""
        loaded = self._load()
        with self._lock:
            cur = loaded.con.cursor()
            try:
                return cur.execute(sql).fetchall()
            finally:
                cur.close()

    def row(self, problem_id: str) -> dict[str, Any] | None:
        """The full results row of one problem (first per problem, as ``read_run``), its verdict and text."""
        files = self.files.result_files()
        con = duckdb.connect()
        try:
            result = con.execute(
                f"SELECT * FROM ({self._dedup_sql(files, con, 'problem_id = $pid')})", {"pid": problem_id}
            )
            names = [d[0] for d in result.description]
            found = result.fetchone()
            if found is None:
                return None
            row = dict(zip(names, found, strict=True))
            row.pop("file_row_number", None)
            row.pop("_ord", None)
            row["verdict"] = None
            if self.files.verify_path.exists():
                v = con.execute(
                    f"SELECT * FROM read_parquet({_sql_list([self.files.verify_path])}) WHERE problem_id = ?",
                    [problem_id],
                )
                vn = [d[0] for d in v.description]
                vr = v.fetchone()
                row["verdict"] = dict(zip(vn, vr, strict=True)) if vr else None
        except duckdb.Error as exc:
            raise RunError(f"cannot query {self.files.path.name}: {exc}") from exc
        finally:
            con.close()
        return row

    def neighbours(self, problem_id: str) -> tuple[str | None, str | None]:
        """The problems before and after ``problem_id`` in the table's default order."""
        loaded = self._load()
        with self._lock:
            cur = loaded.con.cursor()
            try:
                found = cur.execute("SELECT rownum FROM rows WHERE problem_id = ?", [problem_id]).fetchone()
                if found is None:
                    return None, None
                near = dict(
                    cur.execute(
                        "SELECT rownum, problem_id FROM rows WHERE rownum IN (?, ?)", [found[0] - 1, found[0] + 1]
                    ).fetchall()
                )
            finally:
                cur.close()
        return near.get(found[0] - 1), near.get(found[0] + 1)

    def problem_ids(self) -> set[str]:
        return {r[0] for r in self.aggregate("SELECT problem_id FROM rows")}

    def close(self) -> None:
        with self._lock:
            if self._loaded is not None:
                self._loaded.con.close()
                self._loaded = None


def page_query(
    cur: duckdb.DuckDBPyConnection,
    table: str,
    columns: str,
    where: str,
    args: list[Any],
    order: str,
    size: int,
    page: int,
) -> tuple[int, list[dict[str, Any]]]:
    """(rows matching ``where``, one page of them in ``order``), in two narrow passes.

    Sorting and paging read only the row numbers and the sort key; the page's wide columns
    (question, program) are fetched for its rows alone afterwards. At 10^5 rows this is what keeps
    a page near the cost of its filter (benchmarks/view_server.py).
    """
    matched = int(cur.execute(f"SELECT count(*) FROM {table} {where}", args).fetchone()[0])
    pages = max(1, -(-matched // size))
    page = min(page, pages)
    ids = [
        r[0]
        for r in cur.execute(
            f"SELECT rownum FROM {table} {where} ORDER BY {order} LIMIT {size} OFFSET {(page - 1) * size}", args
        ).fetchall()
    ]
    if not ids:
        return matched, []
    result = cur.execute(f"SELECT {columns} FROM {table} WHERE rownum IN (SELECT unnest($ids))", {"ids": ids})
    names = [d[0] for d in result.description]
    by_row = {r[names.index("rownum")]: dict(zip(names, r, strict=True)) for r in result.fetchall()}
    return matched, [by_row[i] for i in ids]


def where_clause(params: dict[str, str], prefix: str = "") -> tuple[str, list[Any]]:
    """``WHERE ...`` and its arguments for the filters and the search words in ``params``."""
    conds, args = [], []
    for name, col in FILTERS.items():
        value = params.get(name)
        if value in (None, ""):
            continue
        if col == "rounds":
            conds.append(f"{prefix}rounds = ?")
            args.append(int_param(value, -1))
        else:
            conds.append(f"{prefix}{col} = ?")
            args.append(value)
    search_conds, search_args = search_clause(params.get("q") or "", prefix)
    conds += search_conds
    args += search_args
    return ("WHERE " + " AND ".join(conds)) if conds else "", args


#: A word of the search index: the runs of these characters in the lower-cased text.
#: a search term, as the DuckDB full-text tokenizer splits them
SEARCH_TOKEN = "[a-z0-9_]+"


def search_clause(q: str, prefix: str = "") -> tuple[list[str], list[Any]]:
    """Conditions for the search words ``q``: every word must begin a word of the id, question or program.

    Case-insensitive; ``wump`` finds ``Wumpus($x, True)``, ``max`` finds ``Max``. A word of other
    characters only (``∀``) is looked for as a substring of the text.
    """
    conds, args = [], []
    for word in q.lower().split():
        tokens = re.findall(SEARCH_TOKEN, word)
        if not tokens:
            conds.append(f"contains({prefix}search, ?)")
            args.append(word)
        for token in tokens:  # '{' sorts right after every index character: [token, token + '{') is the prefix range
            conds.append(f"{prefix}rownum IN (SELECT rownum FROM terms WHERE term >= ? AND term < ?)")
            args += [token, token + "{"]
    return conds, args


def sort_clause(sort: str, prefix: str = "") -> str:
    desc = sort.startswith("-")
    key = SORTS.get(sort.lstrip("-"), "rownum")
    return f"{prefix}{key} {'DESC' if desc else 'ASC'} NULLS LAST, {prefix}rownum"


def int_param(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def clip(text: str | None, n: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


# --------------------------------------------------------------------------- problem text

_TEXTS: dict[tuple, tuple[pa.Table, dict[str, dict[str, Any]], str | None]] = {}
_TEXTS_LOCK = threading.Lock()
_TEXT_SCHEMA = pa.schema([("id", pa.string()), ("question", pa.string())])


def _load_source(source: str | None, data_dir: str | None) -> tuple[pa.Table, dict[str, dict[str, Any]], str | None]:
    if not source:
        return _TEXT_SCHEMA.empty_table(), {}, "the run does not name its problems' source"
    key = (source, data_dir, _mtime(source))
    with _TEXTS_LOCK:
        if key in _TEXTS:
            return _TEXTS[key]
    problems, notes = [], []
    for part in [source] if Path(source).exists() else [s.strip() for s in source.split(",") if s.strip()]:
        try:
            problems += load_problems(part, data_dir, skip_bad=True).problems
        except Exception as exc:  # noqa: BLE001 - any loader failure only costs the question text
            notes.append(f"{part}: {exc}")
    by_id = {
        p.id: {
            "question": p.question,
            "options": list(p.options),
            "context": p.context,
            "answer": p.answer,
            "meta": p.meta,
        }
        for p in problems
    }
    table = pa.Table.from_pydict(
        {"id": list(by_id), "question": [v["question"] for v in by_id.values()]}, schema=_TEXT_SCHEMA
    )
    note = (
        ("problems could not be loaded (" + "; ".join(notes) + "): no question text")
        if notes and not problems
        else None
    )
    with _TEXTS_LOCK:
        _TEXTS[key] = (table, by_id, note)
    return table, by_id, note


def _mtime(source: str) -> float | None:
    try:
        return Path(source).stat().st_mtime
    except OSError:
        return None


def problem_texts(source: str | None, data_dir: str | None) -> tuple[pa.Table, str | None]:
    """(id, question) of every problem of a run's source (dataset names or a file), and a note if none."""
    table, _, note = _load_source(source, data_dir)
    return table, note


def problem_text(source: str | None, data_dir: str | None, problem_id: str) -> dict[str, Any] | None:
    """Question, options, context, gold answer and meta of one problem, when its source can be loaded."""
    _, by_id, _ = _load_source(source, data_dir)
    return by_id.get(problem_id)
