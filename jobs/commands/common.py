"""What several commands share: problem input, the LLM engine flags, running a job with an engine.

Not a command itself (the registry in :mod:`symbolkg.jobs.cli` lists those).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import warnings
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable, Iterator, TypeVar

from symbolkg.actors.engines.factory import EngineOptions, make_engine
from symbolkg.jobs.datasets.records import InputError, LoadResult
from symbolkg.jobs.datasets.registry import load_dataset, load_problems, resolve_name
from symbolkg.jobs.pipeline.ids import Shard
from symbolkg.jobs.pipeline.reaper import start_reaper, stop_reaper
from symbolkg.jobs.pipeline.store import remove_run

if TYPE_CHECKING:
    from symbolkg.actors.engines.base import LLMEngine

T = TypeVar("T")

#: the ``--data-dir`` help every command that reads datasets shows
DATA_DIR_HELP = "data root (default: $SYMBOLKG_DATA, else ../shared/data)"


# --------------------------------------------------------------------------- problem input


def resolve_dataset(name: str | None, data_dir: str | None = None) -> str | None:
    """A dataset the data folder holds, by its name or a unique short name, or a problem file's path (:func:`resolve_name`)."""
    return None if name is None else resolve_name(name, data_dir)


def load_input(args: argparse.Namespace) -> LoadResult | None:
    """Problems from ``--programs`` / ``--dataset``; prints notes, skipped rows and errors (None on error)."""
    try:
        if args.dataset and "," in args.dataset and not args.programs:
            return _load_mixed(args)
        args.dataset = resolve_dataset(args.dataset, args.data_dir)
        if args.programs:
            loaded = load_problems(args.programs, args.data_dir, skip_bad=args.skip_bad, limit=args.limit,
                                   dataset=args.dataset, language=getattr(args, "language", None))
        elif args.dataset:
            loaded = load_dataset(args.dataset, args.data_dir, skip_bad=args.skip_bad, limit=args.limit,
                                  language=getattr(args, "language", None))
        else:
            print("symbolkg solve: give --programs FILE and/or --dataset NAME", file=sys.stderr)
            return None
    except InputError as exc:
        print(f"symbolkg solve: bad input: {exc}", file=sys.stderr)
        if not args.skip_bad:
            print("  (use --skip-bad to solve the good rows and report the bad ones)", file=sys.stderr)
        return None
    except (FileNotFoundError, ValueError) as exc:
        print(f"symbolkg solve: {exc}", file=sys.stderr)
        return None
    _print_notes(loaded)
    return loaded


def _load_mixed(args: argparse.Namespace) -> LoadResult:
    """``--dataset A,B,...``: the first ``--limit`` problems of each, interleaved round-robin (a mixed stream)."""
    names = [resolve_dataset(n.strip(), args.data_dir) for n in args.dataset.split(",") if n.strip()]
    if len(set(names)) != len(names):
        raise ValueError(f"--dataset names a set twice: {args.dataset}")
    parts = [load_dataset(n, args.data_dir, skip_bad=args.skip_bad, limit=args.limit)  # type: ignore[arg-type]
             for n in names]
    args.dataset = ",".join(names)  # type: ignore[arg-type]
    mixed = [p for row in zip_longest(*(part.problems for part in parts)) for p in row if p is not None]
    loaded = LoadResult(mixed, [e for part in parts for e in part.errors], [n for part in parts for n in part.notes])
    _print_notes(loaded)
    return loaded


def _print_notes(loaded: LoadResult) -> None:
    for note in loaded.notes:
        print(f"note: {note}", file=sys.stderr)
    for err in loaded.errors:
        print(f"skipped bad row: {err}", file=sys.stderr)


def prepare_out(args: argparse.Namespace) -> Path | None:
    """``--out`` (emptied first with ``--overwrite``: the whole run, or with ``--shard`` that shard's files);
    None, printed, when ``--limit`` is below 1 or ``--shard`` is malformed."""
    out = Path(args.out)
    try:
        shard = shard_of(args)
    except ValueError as exc:
        print(f"symbolkg solve: --shard: {exc}", file=sys.stderr)
        return None
    if args.overwrite:
        remove_run(out, shard)
    if args.limit is not None and args.limit < 1:
        print("symbolkg solve: --limit must be >= 1", file=sys.stderr)
        return None
    return out


# --------------------------------------------------------------------------- shards and the reaper


def add_shard_option(p: argparse.ArgumentParser) -> None:
    """``--shard I/N``: this driver runs one shard of the job (see :mod:`symbolkg.jobs.pipeline.store`)."""
    p.add_argument("--shard", metavar="I/N",
                   help="run only shard I of N (0 <= I < N) of the problems, by a stable hash of the id, writing "
                        "OUT's shard files (OUT.shard-I-of-N.parquet): N drivers, one per shard, split the job; "
                        "each resumes on its own; report/verify/view read the union")


def shard_of(args: argparse.Namespace) -> Shard | None:
    """The ``--shard`` of the command (None without one). Raises ValueError on a malformed value."""
    text = getattr(args, "shard", None)
    return Shard.parse(text) if text else None


@contextlib.contextmanager
def reaped() -> Iterator[None]:
    """Run a long job's body with a reaper (:mod:`symbolkg.jobs.pipeline.reaper`): if this process is killed
    outright, every process it started (Ray's, solver workers, provers) is killed too; a clean end
    (return or exception) touches nothing."""
    proc = start_reaper()
    try:
        yield
    finally:
        stop_reaper(proc)


# --------------------------------------------------------------------------- the LLM engine


def add_llm_options(group, purpose: str) -> None:  # noqa: ANN001 - a parser or an argument group
    """The engine options of a command whose LLM step is optional (``--prune``, ``--answer``, ``--llm-vote``)."""
    group.add_argument("--engine", choices=("vllm", "openai", "replay"), default="vllm",
                       help=f"LLM backend for {purpose} (default vllm with the embedded SmolLM2-135M-Instruct)")
    group.add_argument("--model", help="model name or path (see `symbolkg solve --help`)")
    group.add_argument("--llm-cache", help="completion cache dir (written through; read by --engine replay)")
    group.add_argument("--openai-url", help="base URL of an OpenAI-compatible server (--engine openai)")


def llm_options(args: argparse.Namespace) -> EngineOptions:
    """The :class:`EngineOptions` of :func:`add_llm_options`' flags. Raises ValueError on a bad combination."""
    return EngineOptions(kind=args.engine, model=args.model, cache_dir=args.llm_cache, openai_url=args.openai_url)


def _quiet_vllm() -> None:
    """Keep vLLM's start-up chatter off a batch job's console (the progress bar and report stay).

    vLLM logs every start-up step at INFO and CPU-build notes at WARNING, and its imports raise
    torch FutureWarnings. This is the process entry point, so it may set the default; a user's
    ``VLLM_LOGGING_LEVEL`` wins.
    """
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"vllm(\.|$)")


def run_with_engine(opts: EngineOptions, use: "Callable[[LLMEngine], Awaitable[T]]") -> T:
    """Start the engine ``opts`` describes, ``await use(engine)``, close the engine; return the result.

    One event loop for the whole job (vLLM's async engine is bound to the loop it started on).
    Raises :class:`~symbolkg.actors.engines.base.EngineDeadError` from ``use``; each command reports it.
    """
    _quiet_vllm()

    async def main_async() -> T:
        engine = make_engine(opts)
        try:
            return await use(engine)
        finally:
            await engine.close()

    return asyncio.run(main_async())
