"""What a results file records of how it was made: model files' hash, prompt ids, input, version."""

from __future__ import annotations

import pytest

from symbolkg.actors.engines import models
from symbolkg.actors.engines.factory import EngineOptions
from symbolkg.jobs import methods
from symbolkg.jobs.pipeline import provenance
from symbolkg.jobs.pipeline.store import ResultStore, read_run_meta
from symbolkg.solvers import prompts


@pytest.fixture
def model_cache(tmp_path, monkeypatch):
    cache = tmp_path / "model-cache"
    monkeypatch.setenv(models.CACHE_ENV, str(cache))
    return cache


def hf_folder(path):
    path.mkdir(parents=True)
    (path / "config.json").write_text('{"model_type": "llama"}')
    (path / "model.safetensors").write_bytes(b"\x00weights" * 1000)
    (path / "tokenizer.json").write_text("{}")
    (path / ".cache").mkdir()
    (path / ".cache" / "lock").write_text("not a model file")
    return path


def test_a_local_model_folder_is_hashed_once_and_the_hash_is_cached(tmp_path, model_cache, monkeypatch):
    folder = hf_folder(tmp_path / "my-model")
    digest = models.folder_sha256(folder)
    cached = list((model_cache / "hashes").glob("*.json"))
    assert len(cached) == 1 and not (folder / "hashes").exists()  # never written into the user's folder
    hashed = []
    real = models.file_sha256
    monkeypatch.setattr(models, "file_sha256", lambda p, **kw: hashed.append(p.name) or real(p, **kw))
    assert models.folder_sha256(folder) == digest and hashed == []  # from the cache: no file read again
    (folder / "tokenizer.json").write_text('{"changed": true}')
    changed = models.folder_sha256(folder)
    assert changed != digest and hashed == ["tokenizer.json"]  # only the changed file is hashed again
    (folder / ".cache" / "lock").write_text("hidden files do not count")
    assert models.folder_sha256(folder) == changed


def test_a_converted_model_keeps_its_hash_beside_it(model_cache):
    folder = hf_folder(model_cache / "smollm2-135m")
    (folder / models.MARKER).write_text("{}")  # the marker is not a model file
    digest = models.folder_sha256(folder)
    assert (model_cache / "smollm2-135m.sha256.json").is_file()
    (folder / models.MARKER).write_text('{"converted_at": "later"}')
    assert models.folder_sha256(folder) == digest


def test_the_model_record_names_the_model_and_hashes_its_files_never_failing(tmp_path, model_cache):
    folder = hf_folder(tmp_path / "local-model")
    record = provenance.model_record("local-model", EngineOptions(kind="vllm", model=str(folder)))
    assert record["name"] == "local-model" and record["source"] == "local"
    assert record["files_sha256"] == models.folder_sha256(folder) and len(record["files_sha256"]) == 64
    missing = provenance.model_record("nope", EngineOptions(kind="vllm", model=str(tmp_path / "nope")))
    assert missing["files_sha256"] is None and "unknown model" in missing["note"]
    served = provenance.model_record("qwen", EngineOptions(kind="openai", model="qwen", openai_url="http://h/v1"))
    assert served == {"name": "qwen", "engine": "openai", "served_id": "qwen", "url": "http://h/v1"}


def test_prompt_ids_are_stable_and_change_with_the_template(monkeypatch):
    for name in methods.names():
        ids = provenance.prompt_ids(name)
        assert ids and not any(str(v).startswith("unavailable") for v in ids.values()), (name, ids)
        assert ids == provenance.prompt_ids(name)
    assert set(provenance.prompt_ids("symbolkg")) > set(provenance.prompt_ids("logiclm"))
    before = provenance.prompt_ids("logiclm", fallback="direct")
    assert "direct/direct" in before
    monkeypatch.setattr(prompts, "_DIRECT_SYSTEM", "Answer with a letter.")
    after = provenance.prompt_ids("logiclm", fallback="direct")
    assert after["direct/direct"] != before["direct/direct"]
    assert {k: v for k, v in after.items() if k != "direct/direct"} == {
        k: v for k, v in before.items() if k != "direct/direct"
    }
    assert provenance.prompt_ids("plug-in", own=lambda: {"ask": [("user", "<Q>")]}) == {
        "plug-in/ask": provenance.content_id([("user", "<Q>")])
    }


def test_the_input_fingerprint_follows_the_bytes_and_the_selection_not_the_path(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"id": "p1"}\n')
    b.write_text('{"id": "p1"}\n')
    fp = [
        provenance.input_fingerprint(programs=str(p), dataset=None, data_dir=None, selection={"limit": 5})
        for p in (a, b)
    ]
    assert fp[0]["fingerprint"] == fp[1]["fingerprint"] and fp[0]["files"][0]["path"] == str(a.resolve())
    other = provenance.input_fingerprint(programs=str(a), dataset=None, data_dir=None, selection={"limit": 6})
    assert other["fingerprint"] != fp[0]["fingerprint"]
    b.write_text('{"id": "p2"}\n')
    assert (
        provenance.input_fingerprint(programs=str(b), dataset=None, data_dir=None, selection={"limit": 5})[
            "fingerprint"
        ]
        != fp[0]["fingerprint"]
    )
    gone = provenance.input_fingerprint(programs=None, dataset="no/such", data_dir=str(tmp_path), selection={})
    assert gone["files"] == [] and "no/such" in gone["error"]  # recorded, not raised


def test_build_info_outside_a_checkout_says_unknown(tmp_path, monkeypatch):
    provenance.build_info.cache_clear()
    try:
        monkeypatch.setattr(provenance, "_ROOT", tmp_path)  # e.g. a wheel in site-packages
        info = provenance.build_info()
        assert info["git_commit"] == "unknown" and info["git_dirty"] is None and info["symbolkg_version"]
        provenance.build_info.cache_clear()
        (tmp_path / ".git").mkdir()  # looks like a checkout, but git cannot read it
        (tmp_path / "pyproject.toml").write_text("")
        assert provenance.build_info()["git_commit"] == "unknown"
    finally:
        provenance.build_info.cache_clear()


def test_every_results_file_records_the_version_and_commit(tmp_path):
    store = ResultStore(tmp_path / "r.parquet", run_info={"source": "x", "provenance": {"input": {"n": 1}}})
    store.finalize()
    prov = read_run_meta(tmp_path / "r.parquet")["provenance"]
    assert prov["input"] == {"n": 1} and prov["git_commit"] == provenance.build_info()["git_commit"]
    assert prov["symbolkg_version"] == provenance.build_info()["symbolkg_version"]
