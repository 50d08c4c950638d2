"""The Parquet embedding cache: hits, persistence, partial writes, bad parts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from symbolkg.retrieval.embed import HashingEmbedder
from symbolkg.retrieval.embed_cache import EmbeddingCache, embed_with_cache, store_embedding_cache, text_key


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it really embeds."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__(dim=dim)
        self.embedded: list[str] = []

    def embed(self, texts, batch_size: int = 64):
        self.embedded.extend(texts)
        return super().embed(texts, batch_size)


def test_hits_skip_the_model_and_match_fresh_vectors(tmp_path):
    emb = CountingEmbedder()
    cache = EmbeddingCache(tmp_path, emb)
    first = embed_with_cache(emb, ["a cat", "a dog", "a cat"], cache)
    assert emb.embedded == ["a cat", "a dog"]  # the duplicate is embedded once
    assert np.array_equal(first[0], first[2])
    again = embed_with_cache(emb, ["a dog", "a bird", "a cat"], cache)
    assert emb.embedded == ["a cat", "a dog", "a bird"]
    assert np.allclose(again, emb.embed(["a dog", "a bird", "a cat"]))
    assert (cache.stats.hits, cache.stats.misses) == (2, 3)  # the repeated "a cat" was one miss


def test_vectors_persist_across_processes_and_chunks(tmp_path):
    emb = CountingEmbedder()
    texts = [f"text {i}" for i in range(10)]
    embed_with_cache(emb, texts, EmbeddingCache(tmp_path, emb), chunk_texts=3)
    assert len(list((tmp_path / emb.name).glob("part-*.parquet"))) == 4  # one part per chunk
    reopened = EmbeddingCache(tmp_path, emb)
    assert len(reopened) == 10 and "text 7" in reopened
    emb.embedded.clear()
    out = embed_with_cache(emb, texts, reopened)
    assert emb.embedded == [] and np.allclose(out, emb.embed(texts))


def test_a_torn_temporary_part_is_ignored(tmp_path):
    emb = CountingEmbedder()
    embed_with_cache(emb, ["kept"], EmbeddingCache(tmp_path, emb))
    (tmp_path / emb.name / "part-00001.parquet.tmp").write_bytes(b"half a file")
    assert len(EmbeddingCache(tmp_path, emb)) == 1


def test_a_part_of_another_width_is_refused(tmp_path):
    emb = CountingEmbedder(dim=16)
    folder = tmp_path / emb.name
    folder.mkdir()
    flat = pa.array(np.zeros(8, dtype=np.float32))
    pq.write_table(
        pa.table({"text_sha256": [text_key("x")], "vector": pa.FixedSizeListArray.from_arrays(flat, 8)}),
        folder / "part-00000.parquet",
    )
    with pytest.raises(ValueError, match="width 8"):
        EmbeddingCache(tmp_path, emb)


def test_each_embedder_has_its_own_folder_and_the_store_has_one(tmp_path):
    small, large = CountingEmbedder(dim=16), CountingEmbedder(dim=32)
    embed_with_cache(small, ["x"], store_embedding_cache(tmp_path, small))
    with pytest.raises(ValueError, match="16-dim"):
        embed_with_cache(large, ["x"], store_embedding_cache(tmp_path, small))
    assert (tmp_path / "embeddings" / small.name).is_dir()
    assert len(store_embedding_cache(tmp_path, large)) == 0


def test_no_cache_just_embeds():
    emb = CountingEmbedder()
    assert embed_with_cache(emb, ["a", "b"], None).shape == (2, 16)
