"""A Parquet cache of text embeddings, keyed by embedder and text: embed once, reuse forever.

Embedding is the slow part of indexing on a CPU (MiniLM: a few hundred texts per second on two
cores), and the texts of a fixed corpus never change. :class:`EmbeddingCache` stores each vector
under the SHA-256 of its text, one folder per embedder, so a rebuild of the indexes (new index
settings, a crashed build, a second evaluation run) embeds only texts it has never seen.

Layout (inside an LKG store it is ``STORE/embeddings/``, see :func:`store_embedding_cache`)::

    DIR/<embedder slug>/part-00000-<rand>.parquet   # text_sha256: string, vector: fixed_size_list<float32>[dim]
    DIR/<embedder slug>/part-00001-<rand>.parquet   # one part per flush; a part is written whole or not at all

A part is written to a temporary name and renamed, so an interrupted run loses at most the
vectors of its last unflushed chunk and never leaves a torn file. Texts are keyed by content,
so the same text met in two contexts (or two runs) is embedded once.

Example:
    >>> import tempfile
    >>> from symbolkg.retrieval.embed import HashingEmbedder
    >>> cache = EmbeddingCache(tempfile.mkdtemp(), HashingEmbedder())
    >>> first = embed_with_cache(HashingEmbedder(), ["a cat", "a dog"], cache)
    >>> again = embed_with_cache(HashingEmbedder(), ["a dog"], cache)
    >>> bool((again[0] == first[1]).all()), cache.stats.hits, cache.stats.misses
    (True, 1, 2)
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from symbolkg.retrieval.embed import Embedder


def text_key(text: str) -> str:
    """SHA-256 hex digest of the UTF-8 text: the cache key of its vector."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "embedder"


@dataclass
class CacheStats:
    """Texts served from the cache (``hits``) and embedded (``misses``) since the cache was opened."""

    hits: int = 0
    misses: int = 0


class EmbeddingCache:
    """Vectors of one embedder, keyed by text hash, in Parquet parts under ``path``.

    Every stored vector is loaded at open (``dim`` float32s per text: 1.5 GiB per million
    384-dim vectors); callers with more texts than memory should index in chunks.
    Several processes may share one folder (part names never collide); each sees the parts
    that existed when it opened, and a text two of them embedded is stored twice, read once.

    Args:
        path: the cache folder (created when missing); the embedder's vectors go in a subfolder.
        embedder: the embedder whose vectors are cached (its ``name`` and ``dim``).

    Raises:
        ValueError: if a stored part has vectors of another width than ``embedder.dim``.
    """

    def __init__(self, path: str | os.PathLike[str], embedder: Embedder) -> None:
        self.folder = Path(path) / _slug(embedder.name)
        self.dim = int(embedder.dim)
        self.stats = CacheStats()
        self._rows: dict[str, int] = {}
        self._blocks: list[np.ndarray] = []
        self._count = 0
        for part in sorted(self.folder.glob("part-*.parquet")):
            table = pq.read_table(part)
            vectors = _vectors_of(table, part)
            if vectors.shape[1] != self.dim:
                raise ValueError(f"{part}: vectors of width {vectors.shape[1]}, but {embedder.name} has {self.dim}")
            keys = table.column("text_sha256").to_pylist()
            fresh = [i for i, k in enumerate(keys) if k not in self._rows]  # a key written twice counts once
            self._append([keys[i] for i in fresh], vectors[fresh])
        self._next_part = len(list(self.folder.glob("part-*.parquet")))

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, text: str) -> bool:
        return text_key(text) in self._rows

    def _append(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Index rows of ``vectors`` under ``keys`` (all new, no repeats)."""
        start = self._count
        for offset, key in enumerate(keys):
            self._rows[key] = start + offset
        if len(keys):
            self._blocks.append(np.ascontiguousarray(vectors, dtype=np.float32))
            self._count += len(keys)

    def _matrix(self) -> np.ndarray:
        if len(self._blocks) > 1:
            self._blocks = [np.concatenate(self._blocks)]
        return self._blocks[0]

    def lookup(self, texts: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """Vectors for ``texts``: a ``(len(texts), dim)`` matrix and the positions that missed (rows left zero)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        rows: list[int] = []
        hit_positions: list[int] = []
        missing: list[int] = []
        for i, text in enumerate(texts):
            row = self._rows.get(text_key(text))
            if row is None:
                missing.append(i)
            else:
                hit_positions.append(i)
                rows.append(row)
        if rows:
            out[hit_positions] = self._matrix()[rows]
        return out, missing

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` for ``texts[i]`` (texts already cached are skipped) as one new part."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(texts), self.dim):
            raise ValueError(f"expected vectors of shape ({len(texts)}, {self.dim}), got {vectors.shape}")
        keys = [text_key(t) for t in texts]
        first = {k: i for i, k in reversed(list(enumerate(keys)))}  # key -> first position
        new = sorted(i for k, i in first.items() if k not in self._rows)
        if not new:
            return
        new_keys = [keys[i] for i in new]
        flat = pa.array(vectors[new].reshape(-1), type=pa.float32())
        table = pa.table(
            {
                "text_sha256": pa.array(new_keys, pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(flat, self.dim),
            }
        )
        self.folder.mkdir(parents=True, exist_ok=True)
        # the random suffix keeps writers in other processes (retrieval actors sharing a store) apart
        final = self.folder / f"part-{self._next_part:05d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = final.with_suffix(".parquet.tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, final)
        self._next_part += 1
        self._append(new_keys, vectors[new])


def _vectors_of(table: pa.Table, part: Path) -> np.ndarray:
    column = table.column("vector").combine_chunks()
    if not pa.types.is_fixed_size_list(column.type):
        raise ValueError(f"{part}: column 'vector' is {column.type}, expected a fixed-size list of float32")
    width = column.type.list_size
    return column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(-1, width)


def embed_with_cache(
    embedder: Embedder,
    texts: Sequence[str],
    cache: EmbeddingCache | None,
    *,
    batch_size: int = 64,
    chunk_texts: int = 4_096,
    progress: object | None = None,
) -> np.ndarray:
    """Embed ``texts``, taking what the cache has and storing what it lacks.

    Misses are embedded ``chunk_texts`` at a time and each chunk is written to the cache before
    the next starts, so a killed run keeps what it finished.

    Args:
        embedder: the model.
        texts: texts to embed (duplicates are embedded once).
        cache: the cache, or None to embed everything without caching.
        batch_size: texts per embedder call.
        chunk_texts: texts embedded and flushed per step.
        progress: optional object with ``update(n)`` (e.g. a tqdm bar), advanced per embedded text.

    Returns:
        float32 matrix ``(len(texts), embedder.dim)``, rows in the order of ``texts``.
    """
    if cache is None:
        return embedder.embed(list(texts), batch_size=batch_size)
    if cache.dim != embedder.dim:
        raise ValueError(f"cache holds {cache.dim}-dim vectors, embedder {embedder.name} makes {embedder.dim}")
    out, missing = cache.lookup(texts)
    cache.stats.hits += len(texts) - len(missing)
    unique: dict[str, list[int]] = {}
    for i in missing:
        unique.setdefault(texts[i], []).append(i)
    todo = list(unique)
    cache.stats.misses += len(todo)
    for start in range(0, len(todo), chunk_texts):
        chunk = todo[start : start + chunk_texts]
        vectors = embedder.embed(chunk, batch_size=batch_size)
        cache.add(chunk, vectors)
        for text, vector in zip(chunk, vectors, strict=True):
            out[unique[text]] = vector
        if progress is not None:
            progress.update(len(chunk))  # type: ignore[attr-defined]
    return out


def store_embedding_cache(store_path: str | os.PathLike[str], embedder: Embedder) -> EmbeddingCache:
    """The embedding cache kept inside an LKG store folder (``STORE/embeddings/``)."""
    return EmbeddingCache(Path(store_path) / "embeddings", embedder)
