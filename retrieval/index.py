"""Dense vector indexes over LKG nodes: FAISS inner product, exact when small, HNSW when large.

:class:`VectorIndex` keeps unit-norm vectors (from a :class:`symbolkg.retrieval.embed.Embedder`) under
FAISS row numbers 0..N-1 and the string node id of each row beside them, so a search answers
node ids. The index type follows the size:

* up to ``IndexConfig.exact_max_vectors`` (50,000) vectors: ``IndexFlatIP``, exact. It is the
  reference the approximate index is measured against, and at this size a query costs well under
  a millisecond per thousand vectors.
* above: ``IndexHNSWFlat`` with ``METRIC_INNER_PRODUCT`` (``hnsw_m`` links per node,
  ``ef_construction`` when building, ``ef_search`` per query: recall against latency). An exact
  index that grows past the threshold through :meth:`VectorIndex.add` is rebuilt as HNSW once.

With a GPU build of FAISS (``faiss-gpu``) and a visible GPU, the exact index is spread over all
GPUs (``index_cpu_to_all_gpus``) and stays exact at every size: brute force on a GPU searches a
million vectors in milliseconds, and FAISS has no GPU HNSW. Otherwise everything runs on CPU.

On disk (:meth:`VectorIndex.save`), one folder::

    DIR/index.faiss    # faiss.write_index of the CPU index
    DIR/ids.parquet    # one string column ``node_id``, row i = FAISS id i
    DIR/meta.json      # format version, kind, dim, count, embedder name, config; written last

:meth:`VectorIndex.load` memory-maps the vectors (``IO_FLAG_MMAP_IFC``): a loaded index costs
almost no resident memory until it is searched, pages are shared between processes that load
the same files, and the OS may drop them under pressure. A memory-mapped index is read-only.

:func:`build_indexes` embeds the nodes of an :class:`symbolkg.retrieval.lkg.store.LKGStore` (or of graphs)
into one index per node type.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import faiss
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from symbolkg.retrieval.embed import Embedder
from symbolkg.retrieval.embed_cache import EmbeddingCache, embed_with_cache
from symbolkg.retrieval.lkg.schema import NODE_TYPES, Graph, Node
from symbolkg.retrieval.lkg.store import LKGStore

FORMAT_VERSION = 1
#: Node types :func:`build_indexes` indexes by default (concepts are reached through the hull).
DEFAULT_INDEXED_TYPES: tuple[str, ...] = ("Rule", "Constraint", "Entity")


@dataclass(frozen=True)
class IndexConfig:
    """How a :class:`VectorIndex` is built and searched.

    Attributes:
        exact_max_vectors: at most this many vectors use the exact ``IndexFlatIP``; more use HNSW.
        hnsw_m: HNSW links per node (memory ~ 8 * m bytes per vector on top of the vectors; more
            links = better recall, slower build).
        ef_construction: HNSW candidate list while building (higher = better graph, slower build).
        ef_search: HNSW candidate list per query, the recall / latency knob (raised to ``k`` when
            smaller; :meth:`VectorIndex.search` can override it per call). 128 keeps recall@10 above
            0.95 even on unstructured random vectors; embeddings of real text need less.
        device: ``"auto"`` (GPU when a GPU build of FAISS sees one), ``"cpu"``, or ``"gpu"``
            (raises when no GPU is visible).
    """

    exact_max_vectors: int = 50_000
    hnsw_m: int = 32
    ef_construction: int = 80
    ef_search: int = 128
    device: Literal["auto", "cpu", "gpu"] = "auto"

    def __post_init__(self) -> None:
        if self.exact_max_vectors < 0:
            raise ValueError(f"IndexConfig.exact_max_vectors must be >= 0, got {self.exact_max_vectors}")
        if not 2 <= self.hnsw_m <= 256:
            raise ValueError(f"IndexConfig.hnsw_m must be in [2, 256], got {self.hnsw_m}")
        if self.ef_construction < 1 or self.ef_search < 1:
            raise ValueError(
                f"IndexConfig.ef_construction and ef_search must be >= 1, "
                f"got {self.ef_construction} and {self.ef_search}"
            )
        if self.device not in ("auto", "cpu", "gpu"):
            raise ValueError(f"IndexConfig.device must be 'auto', 'cpu' or 'gpu', got {self.device!r}")


def gpu_count() -> int:
    """GPUs visible to FAISS (0 with ``faiss-cpu``)."""
    get = getattr(faiss, "get_num_gpus", None)
    return int(get()) if get is not None else 0


def _as_matrix(x: np.ndarray, dim: int, what: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise ValueError(f"{what} must have shape (n, {dim}), got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float32)


class VectorIndex:
    """Inner-product index of node vectors with string node ids (module docstring).

    Args:
        dim: vector width (the embedder's ``dim``).
        config: build and search settings.
        embedder: name of the embedder that made the vectors; saved with the index so a
            caller can refuse to query it with another model.

    Raises:
        ValueError: if ``dim`` < 1, or ``config.device == "gpu"`` and FAISS sees no GPU.

    Example:
        >>> index = VectorIndex(2)
        >>> index.add(np.array([[1, 0], [0, 1]], dtype=np.float32), ["cat", "dog"])
        >>> scores, ids = index.search(np.array([[0.9, 0.1]], dtype=np.float32), k=1)
        >>> ids[0, 0], index.kind
        ('cat', 'flat')
    """

    def __init__(self, dim: int, config: IndexConfig | None = None, *, embedder: str = "") -> None:
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        self.dim = dim
        self.config = config or IndexConfig()
        self.embedder = embedder
        if self.config.device == "gpu" and gpu_count() == 0:
            raise ValueError(
                "IndexConfig.device='gpu' but FAISS sees no GPU: install faiss-gpu on a CUDA "
                "machine, or use device='auto' / 'cpu'"
            )
        self.on_gpu = self.config.device != "cpu" and gpu_count() > 0
        self.read_only = False
        self._index = self._new_index("flat")
        self._kind: Literal["flat", "hnsw"] = "flat"
        self._ids: list[str] = []
        self._id_set: set[str] = set()
        self._id_array: np.ndarray | None = None  # cache of _ids as an object array, for vectorized mapping

    # -- construction --------------------------------------------------------------------
    def _new_index(self, kind: str) -> faiss.Index:
        if kind == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, self.config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.config.ef_construction
            index.hnsw.efSearch = self.config.ef_search
            return index
        index = faiss.IndexFlatIP(self.dim)
        return self._place(index)

    def _place(self, index: faiss.Index) -> faiss.Index:
        """An exact index moved to all GPUs when this index runs on GPU; anything else unchanged."""
        if self.on_gpu and isinstance(index, faiss.IndexFlat):
            return faiss.index_cpu_to_all_gpus(index)
        return index

    @property
    def kind(self) -> Literal["flat", "hnsw"]:
        """``"flat"`` (exact) or ``"hnsw"`` (approximate)."""
        return self._kind

    @property
    def node_ids(self) -> list[str]:
        """Node id of each row, in row order (a copy)."""
        return list(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, vectors: np.ndarray, node_ids: Sequence[str]) -> None:
        """Append vectors with their node ids (rows ``len(self)`` onwards).

        Crossing ``config.exact_max_vectors`` on CPU rebuilds the exact index as HNSW once
        (cost: one HNSW build of everything so far). Build large indexes with one big ``add``.

        Args:
            vectors: float array ``(n, dim)``, rows of unit norm for cosine semantics (not checked).
            node_ids: ``n`` strings, unique within the index.

        Raises:
            ValueError: on a shape mismatch, a count mismatch, an empty or duplicate node id.
            RuntimeError: if the index was loaded memory-mapped (read-only).
        """
        if self.read_only:
            raise RuntimeError(
                "this index was loaded with mmap=True and is read-only; "
                "VectorIndex.load(path, mmap=False) to add vectors"
            )
        x = _as_matrix(vectors, self.dim, "vectors")
        ids = list(node_ids)
        if len(ids) != len(x):
            raise ValueError(f"{len(x)} vectors but {len(ids)} node ids")
        fresh: set[str] = set()
        for node_id in ids:
            if not isinstance(node_id, str) or not node_id:
                raise ValueError(f"node ids must be non-empty strings, got {node_id!r}")
            if node_id in self._id_set or node_id in fresh:
                raise ValueError(f"node id {node_id!r} is already in the index")
            fresh.add(node_id)
        if not ids:
            return
        if self._kind == "flat" and not self.on_gpu and len(self._ids) + len(ids) > self.config.exact_max_vectors:
            old = self._index.reconstruct_n(0, self._index.ntotal) if self._index.ntotal else None
            self._index = self._new_index("hnsw")
            self._kind = "hnsw"
            if old is not None:
                self._index.add(old)
        self._index.add(x)
        self._ids.extend(ids)
        self._id_set |= fresh
        self._id_array = None

    # -- search --------------------------------------------------------------------------
    def search_rows(
        self, queries: np.ndarray, k: int, *, ef_search: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """FAISS search: scores and row numbers.

        Args:
            queries: float array ``(nq, dim)`` (a batch; one query is ``q[None, :]``).
            k: results per query (>= 1); rows beyond the index size come back as -1.
            ef_search: HNSW candidate list for this call (default ``config.ef_search``); ignored when exact.

        Returns:
            ``(scores, rows)``: float32 ``(nq, k)`` inner products, best first (``-inf`` where no
            result), and int64 ``(nq, k)`` row numbers (-1 where no result).

        Raises:
            ValueError: on a shape mismatch, ``k`` < 1 or ``ef_search`` < 1.
        """
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        q = _as_matrix(queries, self.dim, "queries")
        if len(q) == 0 or self._index.ntotal == 0:
            return np.full((len(q), k), -np.inf, dtype=np.float32), np.full((len(q), k), -1, dtype=np.int64)
        params = None
        if self._kind == "hnsw":
            ef = self.config.ef_search if ef_search is None else ef_search
            if ef < 1:
                raise ValueError(f"ef_search must be >= 1, got {ef}")
            params = faiss.SearchParametersHNSW(efSearch=max(ef, k))
        scores, rows = self._index.search(q, k, params=params)
        scores[rows < 0] = -np.inf
        return scores, rows

    def search(self, queries: np.ndarray, k: int, *, ef_search: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest nodes of each query, by inner product (cosine for unit vectors).

        Args:
            queries: float array ``(nq, dim)``.
            k: results per query (>= 1).
            ef_search: HNSW candidate list for this call (see :meth:`search_rows`).

        Returns:
            ``(scores, ids)``: float32 ``(nq, k)`` scores, best first, and an object array
            ``(nq, k)`` of node ids; where fewer than ``k`` results exist the score is ``-inf``
            and the id None.

        Raises:
            ValueError: as :meth:`search_rows`.
        """
        scores, rows = self.search_rows(queries, k, ef_search=ef_search)
        if self._id_array is None:
            self._id_array = np.array(self._ids + [None], dtype=object)  # row -1 maps to the None at the end
        return scores, self._id_array[rows]

    # -- persistence ---------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the index folder (module docstring); each file appears atomically, ``meta.json`` last.

        Safe while this or another process has the old files memory-mapped: new files replace the
        old ones by rename, and a mapping keeps the old contents.

        Args:
            path: folder, created if needed.

        Returns:
            The folder.
        """
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        cpu_index = faiss.index_gpu_to_cpu(self._index) if self.on_gpu and self._kind == "flat" else self._index
        tmp = folder / "index.faiss.tmp"
        faiss.write_index(cpu_index, str(tmp))
        os.replace(tmp, folder / "index.faiss")
        tmp = folder / "ids.parquet.tmp"
        pq.write_table(pa.table({"node_id": pa.array(self._ids, type=pa.string())}), tmp)
        os.replace(tmp, folder / "ids.parquet")
        meta = {
            "format_version": FORMAT_VERSION,
            "kind": self._kind,
            "dim": self.dim,
            "count": len(self._ids),
            "embedder": self.embedder,
            "config": asdict(self.config),
            "saved_at": time.time(),
        }
        tmp = folder / "meta.json.tmp"
        tmp.write_text(json.dumps(meta, indent=2))
        os.replace(tmp, folder / "meta.json")
        return folder

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, mmap: bool = True, config: IndexConfig | None = None) -> VectorIndex:
        """Open a folder written by :meth:`save`.

        Args:
            path: the folder.
            mmap: map the vectors from the file instead of reading them (read-only index). Falls
                back to a normal read when FAISS cannot map this index type. Moving an exact index
                to GPU copies it anyway.
            config: search and placement settings (default: the saved config with ``device="auto"``);
                the index type is the saved one whatever ``exact_max_vectors`` says.

        Returns:
            The index; ``read_only`` tells whether it is memory-mapped.

        Raises:
            FileNotFoundError: if the folder has no ``meta.json`` (not an index, or a save that did not finish).
            ValueError: on an unknown format version or files that disagree on the vector count.
        """
        folder = Path(path)
        meta_path = folder / "meta.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"no vector index at {str(folder)!r} (meta.json missing)")
        meta = json.loads(meta_path.read_text())
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"{folder}: index format {meta.get('format_version')!r}, this code reads {FORMAT_VERSION}")
        # Placement is a property of the machine, not of the index: a saved config loads with device="auto".
        config = config or IndexConfig(**{**meta["config"], "device": "auto"})
        out = cls(int(meta["dim"]), config, embedder=meta["embedder"])
        index_file = str(folder / "index.faiss")
        index = None
        if mmap:
            try:
                index = faiss.read_index(index_file, faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY)
                out.read_only = True
            except RuntimeError:  # an index type FAISS cannot map: read it whole
                index = None
        if index is None:
            index = faiss.read_index(index_file)
        ids = pq.read_table(folder / "ids.parquet", columns=["node_id"]).column("node_id").to_pylist()
        if not (index.ntotal == len(ids) == meta["count"]):
            raise ValueError(
                f"{folder}: index holds {index.ntotal} vectors, ids.parquet {len(ids)}, "
                f"meta.json {meta['count']}: the folder is inconsistent, save it again"
            )
        if index.d != out.dim:
            raise ValueError(f"{folder}: index dim {index.d} differs from meta.json dim {out.dim}")
        out._kind = meta["kind"]
        if out._kind == "hnsw":
            index.hnsw.efSearch = out.config.ef_search
        if out.on_gpu and out._kind == "flat":
            out.read_only = False  # a GPU copy is private memory, not the mapping
        out._index = out._place(index)
        out._ids = ids
        out._id_set = set(ids)
        return out


# --------------------------------------------------------------------------- node texts and per-type indexes


def _text(
    node_type: str, name: str | None, expression: str | None, description: str | None, raw_expression: str | None
) -> str:
    if node_type in ("Entity", "Concept"):
        return name or ""
    if node_type == "Rule":
        return ". ".join(p for p in (expression, description) if p)
    if node_type == "Constraint":
        return raw_expression or ""
    raise ValueError(f"unknown node type {node_type!r}; expected one of {NODE_TYPES}")


def node_text(node: Node) -> str:
    """The text embedded for a node: Entity / Concept ``name``; Rule ``expression. description``;
    Constraint ``raw_expression``.

    Args:
        node: an LKG node record.

    Returns:
        The text (may be empty only for malformed records).
    """
    return _text(
        node.node_type,
        getattr(node, "name", None),
        getattr(node, "expression", None),
        getattr(node, "description", None),
        getattr(node, "raw_expression", None),
    )


_TEXT_COLUMNS = ["node_id", "node_type", "name", "expression", "description", "raw_expression"]


def _iter_node_texts(source: LKGStore | Graph | Iterable[Graph], batch_rows: int) -> Iterator[tuple[str, str, str]]:
    """(node id, node type, text) of every node of ``source``, in store / graph order."""
    if isinstance(source, LKGStore):
        for batch in source.iter_nodes(columns=_TEXT_COLUMNS, batch_size=batch_rows):
            cols = [batch.column(c).to_pylist() for c in _TEXT_COLUMNS]
            for node_id, node_type, name, expression, description, raw_expression in zip(*cols, strict=True):
                yield node_id, node_type, _text(node_type, name, expression, description, raw_expression)
        return
    graphs = [source] if isinstance(source, Graph) else source
    for graph in graphs:
        for node in graph.nodes:
            yield node.id, node.node_type, node_text(node)


def build_indexes(
    source: LKGStore | Graph | Iterable[Graph],
    embedder: Embedder,
    *,
    node_types: Sequence[str] = DEFAULT_INDEXED_TYPES,
    config: IndexConfig | None = None,
    batch_size: int = 64,
    chunk_texts: int = 8_192,
    cache: EmbeddingCache | None = None,
) -> dict[str, VectorIndex]:
    """Embed the nodes of a store (or graphs) into one :class:`VectorIndex` per node type.

    A node id met again (the same canonical entity in several contexts) is indexed once, with
    the text of its first occurrence. Texts are embedded ``chunk_texts`` at a time, so memory
    stays at one chunk of texts plus the vectors of the indexes.

    Args:
        source: an :class:`~symbolkg.retrieval.lkg.store.LKGStore` (every committed context), one graph, or graphs.
        embedder: turns node texts (:func:`node_text`) into vectors.
        node_types: node types to index, each gets an index even when it has no node.
        config: index settings.
        batch_size: texts per embedder call.
        chunk_texts: texts embedded and added per step.
        cache: vectors already computed for these texts (e.g. the store's
            :func:`~symbolkg.retrieval.embed_cache.store_embedding_cache`); new ones are added to it.

    Returns:
        node type -> index, for every type in ``node_types``.

    Raises:
        ValueError: on an unknown node type or ``chunk_texts`` < 1.
    """
    for node_type in node_types:
        if node_type not in NODE_TYPES:
            raise ValueError(f"unknown node type {node_type!r}; expected some of {NODE_TYPES}")
    if chunk_texts < 1:
        raise ValueError(f"chunk_texts must be >= 1, got {chunk_texts}")
    indexes = {t: VectorIndex(embedder.dim, config, embedder=embedder.name) for t in node_types}
    pending: dict[str, tuple[list[str], list[str]]] = {t: ([], []) for t in node_types}
    seen: set[str] = set()

    def flush(node_type: str) -> None:
        ids, texts = pending[node_type]
        if ids:
            indexes[node_type].add(embed_with_cache(embedder, texts, cache, batch_size=batch_size), ids)
            pending[node_type] = ([], [])

    for node_id, node_type, text in _iter_node_texts(source, batch_rows=chunk_texts):
        if node_type not in pending or node_id in seen:
            continue
        seen.add(node_id)
        ids, texts = pending[node_type]
        ids.append(node_id)
        texts.append(text)
        if len(ids) >= chunk_texts:
            flush(node_type)
    for node_type in node_types:
        flush(node_type)
    return indexes


def save_indexes(indexes: Mapping[str, VectorIndex], path: str | os.PathLike[str]) -> Path:
    """Save per-type indexes as ``PATH/<node type>/`` folders (:meth:`VectorIndex.save`).

    Returns:
        ``path`` as a Path.
    """
    folder = Path(path)
    for node_type, index in indexes.items():
        index.save(folder / node_type)
    return folder


def load_indexes(
    path: str | os.PathLike[str], *, mmap: bool = True, config: IndexConfig | None = None
) -> dict[str, VectorIndex]:
    """Load every ``PATH/<node type>/`` index folder written by :func:`save_indexes`.

    Raises:
        FileNotFoundError: if ``path`` holds no index folder.
    """
    folder = Path(path)
    out = {
        t: VectorIndex.load(folder / t, mmap=mmap, config=config)
        for t in NODE_TYPES
        if (folder / t / "meta.json").is_file()
    }
    if not out:
        raise FileNotFoundError(f"no per-type vector index under {str(folder)!r}")
    return out
