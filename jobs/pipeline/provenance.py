"""How a results file was made: the provenance a run stores beside its config.

Every results file's metadata (:class:`~symbolkg.jobs.pipeline.store.ResultStore`) has a
``provenance`` object; ``symbolkg solve`` adds its ``config`` (:mod:`symbolkg.jobs.pipeline.run_config`)
and fills the rest. Its keys:

* ``symbolkg_version``, ``git_commit``, ``git_dirty``, ``python`` (:func:`build_info`, every
  results file): the package that ran; the commit only when it ran from a git checkout
  (``"unknown"`` otherwise; reading it never fails a run);
* ``input`` (:func:`input_fingerprint`): the files the flags name (``--programs``, the files of
  each ``--dataset``), each with its size and sha256, and the selection (limit, shard, language);
  ``fingerprint`` hashes the files' contents and the selection, not their paths;
* ``model`` (:func:`model_record`): the name the engine reports (what the rows' ``model`` column and
  the completion cache keys carry), and for a local model folder the sha256 of its files
  (:func:`symbolkg.actors.engines.models.folder_sha256`, computed once and cached), for a served
  model its served id, for the recorded engine the sha256 of its program file;
* ``prompts`` (:func:`prompt_ids`): template id -> a content hash (16 hex digits) of each prompt
  template and few-shot set the method may send, rendered with placeholders in place of the problem;
* ``sampling``, ``seed`` (:func:`sampling`): the shared sampling settings (the method's own token
  budgets are in its config section).

A rerun whose config is the same but whose ``prompts``, ``model.files_sha256`` or
``input.fingerprint`` differ is not the same experiment; ``symbolkg view`` shows those differences.

A note on imports: every :class:`~symbolkg.jobs.pipeline.store.ResultStore` imports this module (for
:func:`build_info`), so what the other records need (the prompt builders, the dataset registry, the
model tools) is imported inside the function that records it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from symbolkg.actors.engines.factory import EngineOptions
    from symbolkg.jobs.methods.base import MethodConfig

#: The repository root when this package runs from a checkout (an editable install); else a folder without .git.
_ROOT = Path(__file__).resolve().parents[2]
UNKNOWN = "unknown"


# --------------------------------------------------------------------------- the package


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(_ROOT), *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


@functools.lru_cache(maxsize=1)
def build_info() -> dict[str, Any]:
    """The package version, the git commit and whether the checkout had changes (once per process).

    The commit is read only where the package's own folder is a git checkout (``.git`` beside its
    ``pyproject.toml``), so a wheel installed in a virtualenv inside some repository never reports that
    repository's commit; ``"unknown"`` (and ``git_dirty`` None) otherwise, or when git is missing.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        package = version("symbolkg")
    except PackageNotFoundError:
        package = UNKNOWN
    commit, dirty = UNKNOWN, None
    if (_ROOT / ".git").exists() and (_ROOT / "pyproject.toml").is_file():
        head = _git("rev-parse", "HEAD")
        if head and head.strip():
            commit = head.strip()
            status = _git("status", "--porcelain", "--untracked-files=no")
            dirty = None if status is None else bool(status.strip())
    return {"symbolkg_version": package, "git_commit": commit, "git_dirty": dirty, "python": platform.python_version()}


# --------------------------------------------------------------------------- the input


def _sha256(path: Path) -> str:
    # lazy: loaded when a run records it (see the note on imports)
    from symbolkg.actors.engines.models import file_sha256

    return file_sha256(path)


def _files_of(path: Path) -> list[Path]:
    if path.is_dir():
        return [
            p
            for p in sorted(path.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
        ]
    return [path] if path.is_file() else []


def _named_files(programs: str | None, datasets: Sequence[str], data_dir: str | None) -> list[Path]:
    """The files ``--programs`` and each ``--dataset`` name (a dataset's data file or folder, its recorded programs)."""
    # lazy: loaded when a run records it (see the note on imports)
    from symbolkg.jobs.datasets.registry import find_dataset

    paths = [Path(programs)] if programs else []
    for name in datasets:
        dataset = find_dataset(name, data_dir)
        paths.append(dataset.path)
        if dataset.programs is not None:
            paths.append(dataset.programs)
    return [f for p in paths for f in _files_of(p)]


def input_fingerprint(
    *, programs: str | None, dataset: str | None, data_dir: str | None, selection: Mapping[str, Any]
) -> dict[str, Any]:
    """What the run read: the named files (path, bytes, sha256) and ``selection`` (limit, shard, ...).

    Hashes the files the flags name, never the loaded problems (a streamed input is not held).
    ``fingerprint`` covers the files' sizes and contents and ``selection``, not their paths. A file
    that cannot be found or read is recorded with its error instead (the run already read it).

    Args:
        programs: ``--programs``.
        dataset: ``--dataset`` as the loader resolved it (``A,B`` for a mixed stream).
        data_dir: ``--data-dir``.
        selection: the flags that choose problems from the files (limit, shard, language, skip_bad).
    """
    names = [n.strip() for n in (dataset or "").split(",") if n.strip()]
    record: dict[str, Any] = {"programs": programs, "datasets": names, **selection}
    try:
        files = _named_files(programs, names, data_dir)
        record["files"] = [{"path": str(f.resolve()), "bytes": f.stat().st_size, "sha256": _sha256(f)} for f in files]
    except (OSError, ValueError) as exc:
        record["files"], record["error"] = [], f"{type(exc).__name__}: {exc}"
    content = {"files": [[f["bytes"], f["sha256"]] for f in record["files"]], "datasets": names, **selection}
    record["fingerprint"] = hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
    return record


# --------------------------------------------------------------------------- the model


def model_record(name: str, opts: EngineOptions) -> dict[str, Any]:
    """The model a run used: ``name`` (the engine's, as on the rows) and what identifies its files.

    vllm: the resolved folder and :func:`~symbolkg.actors.engines.models.folder_sha256` of it (a
    registered model is converted first if it is not yet, as the engine would; with ``--llm-actor`` the
    folder is looked up only, the GPU node loads it); openai: the served id and URL; recorded: the
    program file's sha256; replay: the cache folder. A model that cannot be resolved here is recorded
    with ``files_sha256`` null and the reason.
    """
    record: dict[str, Any] = {"name": name, "engine": opts.kind}
    if opts.kind == "vllm":
        # lazy: loaded when a run records it (see the note on imports)
        from symbolkg.actors.engines.models import ModelError, folder_sha256, resolve_model

        try:
            spec = resolve_model(opts.model, prepare_embedded=not opts.actor)
            record.update(source=spec.source, path=spec.path, files_sha256=folder_sha256(spec.path))
        except (ModelError, OSError) as exc:
            record.update(files_sha256=None, note=f"files not hashed: {exc}")
    elif opts.kind == "openai":
        record.update(served_id=name, url=opts.openai_url)
    elif opts.kind == "recorded" and opts.recorded:
        path = Path(opts.recorded)
        record.update(path=str(path.resolve()), files_sha256=_sha256(path) if path.is_file() else None)
    elif opts.kind == "replay":
        record.update(cache=opts.cache_dir)
    elif opts.kind == "gold":
        record.update(data_dir=opts.data_dir)
    return record


def sampling(cfg: MethodConfig, opts: EngineOptions | None = None) -> dict[str, Any]:
    """The shared sampling settings (formulation, direct answers, chains of thought) and the seeds.

    ``seed.requests`` is the per-request seed (None: greedy decoding at temperature 0 needs none);
    ``seed.engine`` vLLM's engine seed, for sampling without a per-request seed.
    """
    engine_seed = None
    if opts is not None and opts.kind == "vllm":
        from symbolkg.actors.engines.vllm_engine import VLLMConfig  # a dataclass; vllm itself is not imported

        engine_seed = VLLMConfig().seed
    params = {"formulate": cfg.formulate_params, "answer": cfg.answer_params, "cot": cfg.cot_params}
    return {
        "sampling": {**{k: asdict(p) for k, p in params.items()}, "structured": cfg.structured},
        "seed": {"requests": cfg.formulate_params.seed, "engine": engine_seed},
    }


# --------------------------------------------------------------------------- the prompts

#: What stands for the problem in a rendered template.
_C, _Q, _O = "<CONTEXT>", "<QUESTION>", ("A) <OPTION A>", "B) <OPTION B>")


def _plain(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return _plain(asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj if isinstance(obj, (str, int, float, bool)) or obj is None else repr(obj)


def content_id(template: Any) -> str:
    """A stable 16-hex-digit id of a template's content (its rendered messages, examples, schema)."""
    text = json.dumps(_plain(template), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _logiclm() -> dict[str, Any]:
    # lazy: loaded when a run records it (see the note on imports)
    from symbolkg.solvers import prompts

    out: dict[str, Any] = {}
    for lang in prompts.EXAMPLES:
        out[f"formulate/{lang}"] = prompts.formulation_messages(lang, _C, _Q, _O)
        out[f"refine/{lang}"] = prompts.refine_messages(lang, _C, _Q, _O, "<PROGRAM>", "<ERROR KIND>", "<ERROR>", 1)
    return out


def _direct() -> dict[str, Any]:
    # lazy: loaded when a run records it (see the note on imports)
    from symbolkg.solvers import prompts

    return {"direct": prompts.direct_messages(_C, _Q, _O)}


def _cot() -> dict[str, Any]:
    # lazy: loaded when a run records it (see the note on imports)
    from symbolkg.solvers import prompts

    return {"cot": prompts.cot_messages(_C, _Q, _O)}


def _symbolkg() -> dict[str, Any]:
    # lazy: loaded when a run records it (see the note on imports)
    from symbolkg.retrieval.anchors import query_entity_messages
    from symbolkg.retrieval.lkg.extract import PROMPT_VERSION, extraction_messages  # lazy, as above
    from symbolkg.retrieval.prune import PrunePrompt  # lazy, as above
    from symbolkg.solvers.router import vote_messages  # lazy, as above

    return {
        "query-entities": query_entity_messages(_Q),
        "prune": PrunePrompt.build(_Q, []).messages,
        "vote": vote_messages(_C, _Q, _O),
        "lkg-extract": [PROMPT_VERSION, extraction_messages(_C)],
    }


def _symba() -> dict[str, Any]:
    # lazy: loaded when a run records it (see the note on imports)
    from symbolkg.solvers.symba import prompts

    out: dict[str, Any] = {}
    for kind in ("fact", "rule"):
        out[f"{kind}-search"] = prompts.search_messages(kind, _C, "<GOAL>")
        out[f"{kind}-translate"] = prompts.translate_messages(kind, "<GOAL>", "<SENTENCE>")
    return out


def _prolog_agent() -> dict[str, Any]:
    # lazy: loaded when a run records it (see the note on imports)
    from symbolkg.solvers.prolog.pararule import formalize_messages

    return {"formalize": formalize_messages(_C, _Q)}


def _multipath() -> dict[str, Any]:
    # the prompt is built from a LogicGraph instance: the module's text stands for its template
    from symbolkg.solvers.logicgraph import prompts

    return {"proofs": [prompts.PROMPT_VERSION, Path(prompts.__file__).read_text(encoding="utf-8")]}


#: method -> the template sets it may send (each: template id -> content). A plug-in method names its
#: own with a ``prompt_templates()`` method (see :func:`prompt_ids`).
PROMPTS: dict[str, tuple[Callable[[], dict[str, Any]], ...]] = {
    "direct": (_direct,),
    "cot": (_cot,),
    "logiclm": (_logiclm,),
    "symbolkg": (_logiclm, _symbolkg),
    "symba": (_symba,),
    "prolog-agent": (_prolog_agent,),
    "multipath": (_multipath,),
}


def prompt_ids(
    method: str, *, fallback: str | None = None, own: Callable[[], dict[str, Any]] | None = None
) -> dict[str, str]:
    """``<method>/<template>`` -> :func:`content_id` of every template ``method`` (and its ``fallback``) may send.

    Args:
        method: the method's name (:data:`PROMPTS` knows the built-in ones').
        fallback: the ``--fallback`` method, whose templates are added.
        own: the method's ``prompt_templates`` (a plug-in's), used where :data:`PROMPTS` has none.

    A template set that cannot be rendered is recorded as ``"unavailable: <error>"`` (never fails a run).
    """
    sets: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    for name in dict.fromkeys([method, *([fallback] if fallback else [])]):
        builders = PROMPTS.get(name) or ((own,) if own is not None and name == method else ())
        sets += [(name, b) for b in builders]
    ids: dict[str, str] = {}
    for name, build in sets:
        prefix = "logiclm" if build is _logiclm else name
        try:
            templates = build()
        except Exception as exc:  # noqa: BLE001 - provenance never fails a run; the reason is recorded
            ids[f"{prefix}/{getattr(build, '__name__', 'templates').strip('_')}"] = f"unavailable: {exc}"
            continue
        ids.update({f"{prefix}/{key}": content_id(t) for key, t in templates.items()})
    return ids
