"""Two runs side by side: the problems they share, each side's outcome, and which flipped (DuckDB)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from symbolkg.jobs.servers.view.queries import (
    MAX_PAGE,
    PAGE_SIZE,
    SEARCH_TOKEN,
    RunSource,
    clip,
    int_param,
    page_query,
    search_clause,
    sort_clause,
)


@dataclass
class Comparison:
    """The problems two runs share, each side's outcome, and which flipped (queried with DuckDB)."""

    a: RunSource
    b: RunSource
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _con: duckdb.DuckDBPyConnection | None = field(default=None, repr=False)
    _sig: tuple | None = field(default=None, repr=False)

    FILTERS = {
        "dataset": "dataset",
        "flip": "flip",
        "outcome_a": "outcome_a",
        "outcome_b": "outcome_b",
        "verdict_a": "verdict_a",
        "verdict_b": "verdict_b",
        "error_a": "err_a",
        "error_b": "err_b",
    }
    COLUMNS = (
        "problem_id",
        "dataset",
        "question",
        "outcome_a",
        "outcome_b",
        "flip",
        "predicted_a",
        "predicted_b",
        "gold",
        "err_a",
        "err_b",
        "verdict_a",
        "verdict_b",
        "latency_a",
        "latency_b",
        "tokens_a",
        "tokens_b",
    )

    def _load(self) -> duckdb.DuckDBPyConnection:
        sig = (self.a.files.signature(), self.b.files.signature())
        with self._lock:
            if self._con is not None and self._sig == sig:
                return self._con
            rows_a = pa.Table.from_pylist(self.a.all_rows(with_program=True))
            rows_b = pa.Table.from_pylist(self.b.all_rows(with_program=True))
            con = duckdb.connect()
            con.register("ta", rows_a)
            con.register("tb", rows_b)
            con.execute("""
                CREATE TABLE pairs AS
                SELECT row_number() OVER (ORDER BY a.rownum) AS rownum, a.problem_id, a.dataset,
                       CASE WHEN a.question <> '' THEN a.question ELSE b.question END AS question,
                       coalesce(a.program, '') || chr(10) || coalesce(b.program, '') AS program,
                       lower(a.problem_id || ' ' || coalesce(a.question, '') || ' ' || coalesce(a.program, '') || ' '
                             || coalesce(b.program, '')) AS search,
                       a.outcome AS outcome_a, b.outcome AS outcome_b,
                       CASE WHEN a.outcome = 'correct' AND b.outcome <> 'correct' THEN 'regressed'
                            WHEN a.outcome <> 'correct' AND b.outcome = 'correct' THEN 'fixed'
                            WHEN a.outcome = b.outcome THEN 'same' ELSE 'changed' END AS flip,
                       a.predicted AS predicted_a, b.predicted AS predicted_b, a.gold,
                       a.err AS err_a, b.err AS err_b, a.verdict AS verdict_a, b.verdict AS verdict_b,
                       a.latency_seconds AS latency_a, b.latency_seconds AS latency_b,
                       a.tokens AS tokens_a, b.tokens AS tokens_b, a.latency_seconds AS latency_seconds,
                       a.tokens + b.tokens AS tokens
                FROM ta a JOIN tb b USING (problem_id)
            """)
            con.unregister("ta")
            con.unregister("tb")
            # the search index, as for one run
            con.execute(
                f"CREATE TABLE terms AS SELECT DISTINCT unnest(regexp_extract_all(search, '{SEARCH_TOKEN}')) AS term, "
                "rownum FROM pairs ORDER BY term"
            )
            if self._con is not None:
                self._con.close()
            self._con, self._sig = con, sig
            return con

    def facets(self) -> dict[str, list[tuple[Any, int]]]:
        con = self._load()
        with self._lock:
            return {
                name: [
                    (v, int(c))
                    for v, c in con.execute(
                        f"SELECT {col}, count(*) FROM pairs WHERE {col} IS NOT NULL GROUP BY 1 ORDER BY 1"
                    ).fetchall()
                ]
                for name, col in self.FILTERS.items()
            }

    def counts(self) -> dict[str, int]:
        con = self._load()
        with self._lock:
            return {k: int(v) for k, v in con.execute("SELECT flip, count(*) FROM pairs GROUP BY 1").fetchall()}

    def pairs(self, params: dict[str, str]) -> dict[str, Any]:
        """One page of the shared problems (filters of :attr:`FILTERS`, ``q``, ``sort``, ``page``)."""
        con = self._load()
        conds, args = [], []
        for name, col in self.FILTERS.items():
            if params.get(name):
                conds.append(f"{col} = ?")
                args.append(params[name])
        search_conds, search_args = search_clause(params.get("q") or "")
        conds += search_conds
        args += search_args
        where = ("WHERE " + " AND ".join(conds)) if conds else ""
        order = sort_clause(params.get("sort", "id"))
        size = min(max(int_param(params.get("page_size"), PAGE_SIZE), 1), MAX_PAGE)
        page = max(int_param(params.get("page"), 1), 1)
        with self._lock:
            cur = con.cursor()
            try:
                total = cur.execute("SELECT count(*) FROM pairs").fetchone()[0]
                matched, rows = page_query(
                    cur, "pairs", ", ".join(("rownum", *self.COLUMNS)), where, args, order, size, page
                )
            finally:
                cur.close()
        pages = max(1, -(-matched // size))
        page = min(page, pages)
        for r in rows:
            r["question"] = clip(r["question"], 120)
        return {
            "total": int(total),
            "matched": int(matched),
            "page": page,
            "pages": pages,
            "page_size": size,
            "rows": rows,
        }

    def all_pairs(self) -> list[dict[str, Any]]:
        con = self._load()
        with self._lock:
            result = con.execute(
                f"SELECT {', '.join(self.COLUMNS)}, program, rownum, latency_seconds, tokens FROM pairs ORDER BY rownum"
            )
            names = [d[0] for d in result.description]
            return [dict(zip(names, r, strict=True)) for r in result.fetchall()]
