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
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from symbolkg.actors.engines.factory import EngineOptions, make_engine
from symbolkg.jobs.datasets.records import InputError, LoadResult
from symbolkg.jobs.pipeline.reaper import start_reaper, stop_reaper

if TYPE_CHECKING:
    from symbolkg.actors.engines.base import LLMEngine
    from symbolkg.jobs.core.ids import Shard
    from symbolkg.jobs.datasets.stream import ProblemStream, ReadOptions

T = TypeVar("T")

#: the ``--data-dir`` help every command that reads datasets shows
DATA_DIR_HELP = "data root (default: $SYMBOLKG_DATA, else ../shared/data)"


# --------------------------------------------------------------------------- problem input


def resolve_dataset(name: str | None, data_dir: str | None = None) -> str | None:
    """A dataset the data folder holds: by its name or a unique short name, or a problem file's path.

    See :func:`resolve_name`.
    """
    # the dataset readers (numpy, every family) when input is read, not to build the parser: all commands import this
    from symbolkg.jobs.datasets.registry import resolve_name

    return None if name is None else resolve_name(name, data_dir)


def open_input(args: argparse.Namespace) -> ProblemStream | None:
    """Problems from ``--programs`` / ``--dataset`` as a stream the job reads as it goes (None on error, printed).

    What can be told before reading is told now: an unknown dataset, a missing file, a file that is
    not JSON or Parquet of the right columns, the notes known up front. A bad record is met as the
    job reads it: with ``--skip-bad`` it is collected (:func:`finish_input` lists them), without it
    the job stops there (:func:`bad_input`). With ``--shard`` only that shard's problems come out
    (another shard's lines are passed over unparsed where their ids can be read; see
    :mod:`symbolkg.jobs.datasets.stream`). ``args.dataset`` becomes the resolved name.
    """
    # the dataset readers (numpy, every family) when input is read, not to build the parser: all commands import this
    from symbolkg.jobs.datasets.registry import open_dataset, open_problems
    from symbolkg.jobs.datasets.stream import ReadOptions  # as above

    try:
        options = ReadOptions(skip_bad=args.skip_bad, limit=args.limit, shard=shard_of(args))
        if args.dataset and "," in args.dataset and not args.programs:
            stream = _open_mixed(args, options)
        else:
            args.dataset = resolve_dataset(args.dataset, args.data_dir)
            if args.programs:
                stream = open_problems(
                    args.programs,
                    args.data_dir,
                    options=options,
                    dataset=args.dataset,
                    language=getattr(args, "language", None),
                )
            elif args.dataset:
                stream = open_dataset(
                    args.dataset, args.data_dir, options=options, language=getattr(args, "language", None)
                )
            else:
                print("symbolkg solve: give --programs FILE and/or --dataset NAME", file=sys.stderr)
                return None
    except InputError as exc:
        bad_input(args, exc)
        return None
    except (FileNotFoundError, ValueError) as exc:
        print(f"symbolkg solve: {exc}", file=sys.stderr)
        return None
    for note in stream.new_notes():
        print(f"note: {note}", file=sys.stderr)
    return stream


def load_input(args: argparse.Namespace) -> LoadResult | None:
    """Every problem from ``--programs`` / ``--dataset`` in a list (for jobs that need them all, ``lkg build``);
    prints notes, skipped rows and errors (None on error)."""
    stream = open_input(args)
    if stream is None:
        return None
    try:
        loaded = stream.collect()
    except InputError as exc:
        finish_input(stream)
        bad_input(args, exc)
        return None
    finish_input(stream)
    return loaded


def _open_mixed(args: argparse.Namespace, options: ReadOptions) -> ProblemStream:
    """``--dataset A,B,...``: the first ``--limit`` problems of each, interleaved round-robin (a mixed stream)."""
    # the dataset readers (numpy, every family) when input is read, not to build the parser: all commands import this
    from symbolkg.jobs.datasets.registry import open_dataset
    from symbolkg.jobs.datasets.stream import ProblemStream  # as above

    names = [resolve_dataset(n.strip(), args.data_dir) for n in args.dataset.split(",") if n.strip()]
    if len(set(names)) != len(names):
        raise ValueError(f"--dataset names a set twice: {args.dataset}")
    parts = [open_dataset(n, args.data_dir, options=options) for n in names]  # type: ignore[arg-type]
    args.dataset = ",".join(names)  # type: ignore[arg-type]
    return ProblemStream.round_robin(parts)


def finish_input(stream: ProblemStream) -> None:
    """After the job: the notes the stream found as it went, and every bad record it skipped (file, line, field)."""
    for note in stream.new_notes():
        print(f"note: {note}", file=sys.stderr)
    for err in stream.errors:
        print(f"skipped bad row: {err}", file=sys.stderr)


def bad_input(args: argparse.Namespace, exc: InputError, stream: ProblemStream | None = None) -> int:
    """A bad record stopped the input (no ``--skip-bad``), or a file could not be read: say which, and how to go on.

    ``stream``: the input, when a job had started on it (its rows finished before are kept, and what it
    skipped before, with ``--skip-bad``, is listed first).

    Returns:
        2, the command's exit status.
    """
    if stream is not None:
        finish_input(stream)  # what was skipped before it (a file-level error with --skip-bad)
    print(f"symbolkg solve: bad input: {exc}", file=sys.stderr)
    if not args.skip_bad:
        print("  (use --skip-bad to solve the good rows and report the bad ones)", file=sys.stderr)
    if stream is not None:
        print("  (the rows finished before it are saved: fix the input and rerun to resume)", file=sys.stderr)
    return 2


def lacks_programs(args: argparse.Namespace) -> bool:
    """Whether ``--dataset`` (without ``--programs``) names only datasets whose first ``--limit`` problems have no
    program: the recorded path would have nothing to run. Reads at most up to a file's first program."""
    # the dataset readers (numpy, every family) when input is read, not to build the parser: all commands import this
    from symbolkg.jobs.datasets.registry import carries_programs

    names = [n for n in (args.dataset or "").split(",") if n]
    return all(not carries_programs(n, args.data_dir, limit=args.limit) for n in names)


def prepare_out(args: argparse.Namespace) -> Path | None:
    """``--out`` (emptied first with ``--overwrite``: the whole run, or with ``--shard`` that shard's files);
    None, printed, when ``--limit`` is below 1 or ``--shard`` is malformed."""
    # the results store (pyarrow) when a run starts, not to build the parser: every command imports this module
    from symbolkg.jobs.pipeline.store import remove_run

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
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="run only shard I of N (0 <= I < N) of the problems, by a stable hash of the id, writing "
        "OUT's shard files (OUT.shard-I-of-N.parquet): N drivers, one per shard, split the job; "
        "each resumes on its own; report/verify/view read the union",
    )


def shard_of(args: argparse.Namespace) -> Shard | None:
    """The ``--shard`` of the command (None without one). Raises ValueError on a malformed value."""
    # numpy (the id sets beside it) when a run starts, not to build the parser: every command imports this module
    from symbolkg.jobs.core.ids import Shard

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


def add_llm_options(group, purpose: str) -> None:
    """The engine options of a command whose LLM step is optional (``--prune``, ``--answer``, ``--llm-vote``)."""
    group.add_argument(
        "--engine",
        choices=("vllm", "openai", "replay"),
        default="vllm",
        help=f"LLM backend for {purpose} (default vllm with the embedded SmolLM2-135M-Instruct)",
    )
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


def run_with_engine(opts: EngineOptions, use: Callable[[LLMEngine], Awaitable[T]]) -> T:
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
