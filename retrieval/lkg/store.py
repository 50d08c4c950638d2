"""LKG store: extracted graphs as Parquet, keyed by a cache key; resumable and append-only.

Layout (``STORE`` is the directory given to :class:`LKGStore`)::

    STORE/nodes/part-<tag>.parquet      # NODE_SCHEMA rows of the part's contexts, sorted by context_key
    STORE/edges/part-<tag>.parquet      # EDGE_SCHEMA rows, same order
    STORE/contexts/part-<tag>.parquet   # CONTEXT_SCHEMA: one row per context; written last = the commit
    STORE/links/part-<tag>.parquet      # LINK_SCHEMA: problems linked to an already stored context

``<tag>`` is ``<milliseconds>-<session uuid>-<sequence>``, unique per flush.

Resume without duplicates (the idea of :mod:`symbolkg.jobs.pipeline.store`): every file appears
atomically (written under a temporary name, then ``os.replace``); a flush writes
the nodes part, then the edges part, then the contexts part. A part counts only
once its contexts file exists, so a kill at any moment loses at most the
buffered contexts, whose ``has(key)`` is then False and which a rerun extracts
again; node and edge files left without a contexts file are ignored and removed
by :meth:`LKGStore.compact`. If a context is nevertheless committed twice (two
writers racing, or a kill during :meth:`~LKGStore.compact`), the index keeps
the first part (in tag order) and every read goes to that part only, so no
reader ever sees a node twice.

Reading without loading the corpus: the contexts tables are small (one row per
context) and are read into an in-memory index: key -> part. ``get(key)`` then
opens one nodes file and one edges file with a filter on ``context_key``;
because every part is sorted by ``context_key`` and written in row groups of
``row_group_rows`` rows with min/max statistics, Parquet skips every row group
that cannot hold the key. :meth:`~LKGStore.iter_nodes` and
:meth:`~LKGStore.iter_edges` stream record batches part by part.

``CONTEXT_SCHEMA`` (``contexts/``):

=====================  =====================  =====================================================
column                 type                   meaning
=====================  =====================  =====================================================
``context_key``        string, not null       :func:`cache_key` of (context text, model, prompt version)
``problem_ids``        list<string>, nn       problems given with the context when it was stored
``status``             string, not null       ``valid`` / ``invalid`` (:class:`ContextRecord`)
``errors``             string, not null       JSON list of ``{path, kind, message}`` still open
``model``              string, not null       extracting LLM
``prompt_version``     string, not null       extraction prompt version
``prompt_tokens``      int64, not null        tokens in, all rounds
``completion_tokens``  int64, not null        tokens out, all rounds
``rounds``             int64, not null        LLM calls (1 = no repair)
``llm_seconds``        float64, not null      summed LLM latency, all rounds (what a cache hit saves)
``n_nodes``            int64, not null        nodes of the graph
``n_edges``            int64, not null        edges of the graph
``part``               string, not null       tag of the part holding its nodes and edges
``written_at``         float64, not null      UNIX time of the first write
=====================  =====================  =====================================================

``LINK_SCHEMA`` (``links/``): ``problem_id`` (string), ``context_key`` (string):
problems attached later to a stored context (the same context text reached
again). :meth:`~LKGStore.compact` folds them into ``problem_ids``.

Problem lookup: a problem may have graphs under several keys (other model or
prompt version): :meth:`~LKGStore.keys_for_problem` lists them oldest first and
:meth:`~LKGStore.graph_for_problem` returns the newest.

Concurrency: several processes may write to one store at once (tags are
unique); readers see what was committed when their index was loaded
(:meth:`~LKGStore.refresh`). :meth:`~LKGStore.compact` needs the store to itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from symbolkg.retrieval.lkg.canonical import CANONICAL_VERSION
from symbolkg.retrieval.lkg.schema import EDGE_SCHEMA, NODE_SCHEMA, ContextRecord, Graph, edge_table, node_table

CONTEXT_SCHEMA = pa.schema(
    [
        pa.field("context_key", pa.string(), nullable=False),
        pa.field("problem_ids", pa.list_(pa.string()), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("errors", pa.string(), nullable=False),  # JSON list
        pa.field("model", pa.string(), nullable=False),
        pa.field("prompt_version", pa.string(), nullable=False),
        pa.field("prompt_tokens", pa.int64(), nullable=False),
        pa.field("completion_tokens", pa.int64(), nullable=False),
        pa.field("rounds", pa.int64(), nullable=False),
        pa.field("llm_seconds", pa.float64(), nullable=False),
        pa.field("n_nodes", pa.int64(), nullable=False),
        pa.field("n_edges", pa.int64(), nullable=False),
        pa.field("part", pa.string(), nullable=False),
        pa.field("written_at", pa.float64(), nullable=False),
    ]
)

LINK_SCHEMA = pa.schema(
    [
        pa.field("problem_id", pa.string(), nullable=False),
        pa.field("context_key", pa.string(), nullable=False),
    ]
)

_META_KEY = b"symbolkg_lkg"
_STORE_VERSION = 1
_PREFIX, _SUFFIX = "part-", ".parquet"


def cache_key(text: str, model: str, prompt_version: str) -> str:
    """The store key of a context: SHA-256 (64 hex digits) of text, model and prompt version.

    The three are hashed as one JSON list, so no two different triples share an input.

    Args:
        text: the context exactly as sent to the model.
        model: the extracting model's name.
        prompt_version: :data:`symbolkg.retrieval.lkg.extract.PROMPT_VERSION`.

    Returns:
        64 lower-case hex digits.

    Raises:
        ValueError: if an argument is not a string.
    """
    for name, value in (("text", text), ("model", model), ("prompt_version", prompt_version)):
        if not isinstance(value, str):
            raise ValueError(f"cache_key: {name} must be a string, got {type(value).__name__}")
    payload = json.dumps([text, model, prompt_version], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StoreCounts:
    """Sizes of a store (committed plus buffered).

    Attributes:
        contexts: distinct context keys.
        valid: contexts with status ``valid``.
        invalid: contexts with status ``invalid``.
        nodes: nodes over all contexts.
        edges: edges over all contexts.
        problems: distinct problem ids linked to a context.
        parts: committed parts on disk.
    """

    contexts: int
    valid: int
    invalid: int
    nodes: int
    edges: int
    problems: int
    parts: int


@dataclass
class _Entry:
    part: str  # tag; "" while buffered
    row: dict  # CONTEXT_SCHEMA row


def _tag_of(path: Path) -> str:
    return path.name[len(_PREFIX) : -len(_SUFFIX)]


class LKGStore:
    """Parquet store and cache of extracted LKGs (layout and guarantees in the module docstring).

    Args:
        path: the store directory (created on first flush).
        flush_nodes: write a part once this many nodes are buffered ...
        flush_contexts: ... or this many contexts.
        row_group_rows: rows per Parquet row group: smaller groups make a
            single-context read touch fewer bytes, larger ones scan faster.

    Raises:
        ValueError: on a non-positive size.

    Example:
        >>> import tempfile
        >>> from symbolkg.retrieval.lkg.schema import Entity
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     key = cache_key("Ann sings.", "tiny-model", "v1")
        ...     with LKGStore(tmp) as store:
        ...         added = store.put(ContextRecord(key, problem_ids=("p1",)), Graph(key, (Entity.create("Ann"),)))
        ...     name = LKGStore(tmp).graph_for_problem("p1").nodes[0].name
        >>> added, name
        (True, 'Ann')
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        flush_nodes: int = 100_000,
        flush_contexts: int = 1_000,
        row_group_rows: int = 4_096,
    ) -> None:
        if flush_nodes < 1 or flush_contexts < 1 or row_group_rows < 1:
            raise ValueError("flush_nodes, flush_contexts and row_group_rows must be >= 1")
        self.path = Path(path)
        self.flush_nodes = flush_nodes
        self.flush_contexts = flush_contexts
        self.row_group_rows = row_group_rows
        self.session = f"{int(time.time() * 1000):013d}-{uuid.uuid4().hex[:8]}"
        self._seq = 0
        self._buffer: dict[str, tuple[ContextRecord, Graph]] = {}
        self._buffer_nodes = 0
        self._links: list[tuple[str, str]] = []  # (problem_id, context_key) not yet written
        self._index: dict[str, _Entry] | None = None
        self._part_keys: dict[str, list[str]] = {}  # committed tag -> every key in its contexts file
        self._problems: dict[str, list[str]] = {}  # problem id -> keys

    def _dir(self, table: str) -> Path:
        return self.path / table

    def _file(self, table: str, tag: str) -> Path:
        return self._dir(table) / f"{_PREFIX}{tag}{_SUFFIX}"

    def _tags(self, table: str) -> list[str]:
        folder = self._dir(table)
        if not folder.is_dir():
            return []
        return sorted(_tag_of(p) for p in folder.glob(f"{_PREFIX}*{_SUFFIX}"))

    # -- index ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read the contexts and links tables (to see other writers' commits)."""
        self._load_index()

    def _get_index(self) -> dict[str, _Entry]:
        if self._index is None:
            return self._load_index()
        return self._index

    def _load_index(self) -> dict[str, _Entry]:
        index: dict[str, _Entry] = {}
        part_keys: dict[str, list[str]] = {}
        for tag in self._tags("contexts"):
            rows = pq.read_table(self._file("contexts", tag), schema=CONTEXT_SCHEMA).to_pylist()
            part_keys[tag] = [r["context_key"] for r in rows]
            for row in rows:
                if row["context_key"] not in index:
                    index[row["context_key"]] = _Entry(tag, row)
        for key in self._buffer:
            if key not in index and self._index is not None:
                index[key] = self._index[key]  # buffered: keep the row made by put()
        problems: dict[str, list[str]] = {}
        for entry in sorted(index.values(), key=lambda e: e.row["written_at"]):
            for pid in entry.row["problem_ids"]:
                _add_link(problems, pid, entry.row["context_key"])
        links = [
            r
            for tag in self._tags("links")
            for r in pq.read_table(self._file("links", tag), schema=LINK_SCHEMA).to_pylist()
        ]
        for row in links:
            if row["context_key"] in index:
                _add_link(problems, row["problem_id"], row["context_key"])
        for pid, key in self._links:
            _add_link(problems, pid, key)
        for keys in problems.values():
            keys.sort(key=lambda k: index[k].row["written_at"])
        self._index, self._part_keys, self._problems = index, part_keys, problems
        return index

    # -- writing -------------------------------------------------------------------------
    def has(self, key: str) -> bool:
        """True when a graph is stored (or buffered) under ``key``."""
        return key in self._get_index()

    def put(self, record: ContextRecord, graph: Graph) -> bool:
        """Store one context's graph (buffered; written by :meth:`flush`).

        If ``key`` is already stored, nothing is written except links for
        problem ids the context did not have yet (:meth:`link_problems`).

        Args:
            record: status, errors, tokens and problem ids of the extraction.
            graph: the graph; ``graph.context_key`` must equal ``record.key``.

        Returns:
            True when the graph was added, False when the key was already stored.

        Raises:
            ValueError: if the keys differ.
        """
        if record.key != graph.context_key:
            raise ValueError(f"record key {record.key!r} differs from graph key {graph.context_key!r}")
        index = self._get_index()
        if record.key in index:
            self.link_problems(record.key, record.problem_ids)
            return False
        self._buffer[record.key] = (record, graph)
        self._buffer_nodes += len(graph.nodes)
        index[record.key] = _Entry("", self._context_row(record, graph))
        for pid in record.problem_ids:
            _add_link(self._problems, pid, record.key)
        if self._buffer_nodes >= self.flush_nodes or len(self._buffer) >= self.flush_contexts:
            self.flush()
        return True

    def link_problems(self, key: str, problem_ids: Sequence[str]) -> int:
        """Attach problems to an already stored context (the same text reached from other problems).

        Args:
            key: a stored or buffered context key.
            problem_ids: problem ids; those already attached to ``key`` are skipped.

        Returns:
            How many links were added.

        Raises:
            ValueError: if ``key`` is not in the store.
        """
        if key not in self._get_index():
            raise ValueError(f"cannot link problems to unknown context {key!r}")
        added = 0
        for pid in dict.fromkeys(problem_ids):
            if key not in self._problems.get(pid, []):
                _add_link(self._problems, pid, key)
                self._links.append((pid, key))
                added += 1
        return added

    @staticmethod
    def _context_row(record: ContextRecord, graph: Graph) -> dict:
        """The CONTEXT_SCHEMA row of a buffered context (``part`` is set when it is flushed)."""
        return {
            **record.to_row(),
            "n_nodes": len(graph.nodes),
            "n_edges": len(graph.edges),
            "part": "",
            "written_at": time.time(),
        }

    def _write(self, table: pa.Table, table_name: str, tag: str, *, sort: bool = True) -> None:
        meta = {"store_version": _STORE_VERSION, "canonical_version": CANONICAL_VERSION, "session": self.session}
        table = table.replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})
        final = self._file(table_name, tag)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.with_name(final.name + ".tmp")
        sorting = [pq.SortingColumn(0)] if sort else None
        pq.write_table(
            table,
            tmp,
            row_group_size=self.row_group_rows,
            compression="zstd",
            write_statistics=True,
            sorting_columns=sorting,
        )
        os.replace(tmp, final)

    def _next_tag(self) -> str:
        tag = f"{self.session}-{self._seq:06d}"
        self._seq += 1
        return tag

    def flush(self) -> None:
        """Write buffered graphs as one part (nodes, edges, then the committing contexts file) and buffered links."""
        index = self._get_index()
        if self._buffer:
            tag = self._next_tag()
            keys = sorted(self._buffer)
            node_rows, edge_rows, context_rows = [], [], []
            for key in keys:
                record, graph = self._buffer[key]
                node_rows.extend(n.to_row(key) for n in graph.nodes)
                edge_rows.extend(e.to_row(key) for e in graph.edges)
                context_rows.append({**index[key].row, "part": tag})
            self._write(node_table(node_rows), "nodes", tag)
            self._write(edge_table(edge_rows), "edges", tag)
            self._write(pa.Table.from_pylist(context_rows, schema=CONTEXT_SCHEMA), "contexts", tag)
            for row in context_rows:
                index[row["context_key"]] = _Entry(tag, row)
            self._part_keys[tag] = keys
            self._buffer = {}
            self._buffer_nodes = 0
        if self._links:
            rows = [{"problem_id": pid, "context_key": key} for pid, key in self._links]
            self._write(pa.Table.from_pylist(rows, schema=LINK_SCHEMA), "links", self._next_tag(), sort=False)
            self._links = []

    def close(self) -> None:
        """Flush; the store stays usable."""
        self.flush()

    def __enter__(self) -> LKGStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------
    def keys(self) -> list[str]:
        """Every stored or buffered context key, sorted."""
        return sorted(self._get_index())

    def context(self, key: str) -> ContextRecord | None:
        """The :class:`ContextRecord` stored under ``key``, or None."""
        entry = self._get_index().get(key)
        return ContextRecord.from_row(entry.row) if entry else None

    def context_row(self, key: str) -> dict | None:
        """The ``CONTEXT_SCHEMA`` row of ``key`` (record fields plus ``n_nodes``, ``n_edges``, ``part``), or None."""
        entry = self._get_index().get(key)
        return dict(entry.row) if entry else None

    def get(self, key: str) -> Graph | None:
        """The graph stored under ``key`` (reads only that context's row groups), or None.

        Args:
            key: a context key.

        Returns:
            The graph, equal to the one given to :meth:`put`; None when the key is unknown.
        """
        entry = self._get_index().get(key)
        if entry is None:
            return None
        if not entry.part:
            return self._buffer[key][1]
        nodes = self._read_context(self._file("nodes", entry.part), key)
        edges = self._read_context(self._file("edges", entry.part), key)
        return Graph.from_tables(key, nodes, edges)

    @staticmethod
    def _read_context(path: Path, key: str) -> pa.Table:
        """The rows of one context: only the row groups whose min/max statistics admit ``key``."""
        parquet = pq.ParquetFile(path)
        meta = parquet.metadata
        groups = []
        for i in range(meta.num_row_groups):
            stats = meta.row_group(i).column(0).statistics  # column 0 is context_key
            if stats is None or not stats.has_min_max or stats.min <= key <= stats.max:
                groups.append(i)
        table = parquet.read_row_groups(groups, use_threads=False)
        return table.filter(pc.equal(table.column("context_key"), key))

    def keys_for_problem(self, problem_id: str) -> list[str]:
        """Context keys linked to ``problem_id``, oldest first."""
        self._get_index()
        return list(self._problems.get(problem_id, []))

    def graph_for_problem(self, problem_id: str) -> Graph | None:
        """The newest graph linked to ``problem_id``, or None."""
        keys = self.keys_for_problem(problem_id)
        return self.get(keys[-1]) if keys else None

    def _iter(
        self,
        table: str,
        schema: pa.Schema,
        columns: Sequence[str] | None,
        batch_size: int,
        context_keys: Sequence[str] | None,
    ) -> Iterator[pa.RecordBatch]:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.flush()
        index = self._get_index()
        wanted = set(context_keys) if context_keys is not None else None
        for tag in sorted(self._part_keys):
            keys = [k for k in self._part_keys[tag] if index[k].part == tag]
            if wanted is not None:
                keys = [k for k in keys if k in wanted]
            if not keys:
                continue
            expr = None
            if wanted is not None or len(keys) != len(self._part_keys[tag]):
                expr = pc.field("context_key").isin(keys)
            dataset = ds.dataset(self._file(table, tag), schema=schema, format="parquet")
            for batch in dataset.to_batches(
                columns=list(columns) if columns else None, filter=expr, batch_size=batch_size
            ):
                if batch.num_rows:
                    yield batch

    def iter_nodes(
        self, columns: Sequence[str] | None = None, batch_size: int = 65_536, context_keys: Sequence[str] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Stream node rows (:data:`~symbolkg.retrieval.lkg.schema.NODE_SCHEMA`) part by part; flushes first.

        Memory stays at about one batch (plus one row group being decoded) however big the store is.

        Args:
            columns: columns to read (all when None); fewer columns read fewer bytes.
            batch_size: most rows per batch.
            context_keys: only these contexts (all when None).

        Returns:
            An iterator of non-empty record batches; every stored node exactly once.

        Raises:
            ValueError: if ``batch_size`` < 1.
        """
        return self._iter("nodes", NODE_SCHEMA, columns, batch_size, context_keys)

    def iter_edges(
        self, columns: Sequence[str] | None = None, batch_size: int = 65_536, context_keys: Sequence[str] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Stream edge rows (:data:`~symbolkg.retrieval.lkg.schema.EDGE_SCHEMA`); as :meth:`iter_nodes`."""
        return self._iter("edges", EDGE_SCHEMA, columns, batch_size, context_keys)

    def counts(self) -> StoreCounts:
        """Contexts, statuses, nodes, edges, problems and parts (from the index; no data is read)."""
        index = self._get_index()
        rows = [e.row for e in index.values()]
        valid = sum(1 for r in rows if r["status"] == "valid")
        return StoreCounts(
            contexts=len(rows),
            valid=valid,
            invalid=len(rows) - valid,
            nodes=sum(r["n_nodes"] for r in rows),
            edges=sum(r["n_edges"] for r in rows),
            problems=len(self._problems),
            parts=len(self._part_keys),
        )

    # -- maintenance ---------------------------------------------------------------------
    def compact(self, target_rows: int = 1_000_000) -> None:
        """Rewrite the store into few large parts; drop duplicates, orphans and link files.

        Parts are taken in tag order and grouped until a group holds about
        ``target_rows`` nodes; each group becomes one part sorted by
        ``context_key``, with the links folded into ``problem_ids``. Memory is
        about one group. The new parts are committed before any old file is
        removed, so a kill leaves a readable store (with duplicates the index
        ignores) that the next ``compact()`` cleans up. Needs the store to itself.

        Args:
            target_rows: nodes per new part (a single larger part is kept whole).

        Raises:
            ValueError: if ``target_rows`` < 1.
        """
        if target_rows < 1:
            raise ValueError(f"target_rows must be >= 1, got {target_rows}")
        self.flush()
        index = self._load_index()
        problems_of: dict[str, list[str]] = {}
        for pid, keys in self._problems.items():
            for key in keys:
                problems_of.setdefault(key, []).append(pid)
        old_tags = {t: set(self._tags(t)) for t in ("nodes", "edges", "contexts", "links")}
        groups: list[list[str]] = [[]]
        size = 0
        for tag in sorted(self._part_keys):
            rows = sum(index[k].row["n_nodes"] for k in self._part_keys[tag] if index[k].part == tag)
            if groups[-1] and size + rows > target_rows:
                groups.append([])
                size = 0
            groups[-1].append(tag)
            size += rows
        new_tags = set()
        for group in groups:
            owned = {tag: [k for k in self._part_keys[tag] if index[k].part == tag] for tag in group}
            keys = sorted(k for tag_keys in owned.values() for k in tag_keys)
            if not keys:
                continue
            new_tag = self._next_tag()
            for table_name, schema in (("nodes", NODE_SCHEMA), ("edges", EDGE_SCHEMA)):
                # Each context is read from the one part the index gives it (never from a duplicate).
                tables = [
                    pq.read_table(
                        self._file(table_name, tag), schema=schema, filters=pc.field("context_key").isin(tag_keys)
                    )
                    for tag, tag_keys in owned.items()
                    if tag_keys
                ]
                table = pa.concat_tables(tables).replace_schema_metadata(None)
                self._write(
                    table.take(pc.sort_indices(table, sort_keys=[("context_key", "ascending")])), table_name, new_tag
                )
            rows = []
            for key in keys:
                row = dict(index[key].row, part=new_tag)
                row["problem_ids"] = list(dict.fromkeys(row["problem_ids"] + problems_of.get(key, [])))
                rows.append(row)
            self._write(pa.Table.from_pylist(rows, schema=CONTEXT_SCHEMA), "contexts", new_tag)
            new_tags.add(new_tag)
        # Uncommit old parts first (contexts), then remove their data and every orphan, then links.
        for table_name in ("contexts", "nodes", "edges", "links"):
            for tag in old_tags[table_name] - new_tags:
                self._file(table_name, tag).unlink(missing_ok=True)
        self.refresh()


def _add_link(problems: dict[str, list[str]], problem_id: str, key: str) -> None:
    keys = problems.setdefault(problem_id, [])
    if key not in keys:
        keys.append(key)
