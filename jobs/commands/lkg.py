"""``symbolkg lkg build|show``: Logical Knowledge Graphs; the jobs are :mod:`symbolkg.jobs.pipeline.lkg_build` and
:mod:`symbolkg.jobs.inspection.lkg_show`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from symbolkg.actors.engines.base import EngineDeadError, SamplingParams
from symbolkg.actors.engines.factory import EngineOptions
from symbolkg.jobs.commands.common import DATA_DIR_HELP, load_input, reaped, run_with_engine


def add_parser(sub: argparse._SubParsersAction) -> None:
    lkg = sub.add_parser("lkg", help="Logical Knowledge Graphs: build (offline extraction into a store), show")
    lkg_sub = lkg.add_subparsers(dest="lkg_command", required=True)
    _add_build_parser(lkg_sub)
    p = lkg_sub.add_parser("show", help="draw one problem's graph (PNG needs Graphviz; HTML works without)")
    p.add_argument("--store", required=True, help="LKG store directory")
    p.add_argument("--id", required=True, help="problem id")
    p.add_argument("--out", required=True, help="FILE.png or FILE.html")
    p.set_defaults(func=run)


def _add_build_parser(lkg_sub: argparse._SubParsersAction) -> None:
    p = lkg_sub.add_parser(
        "build", help="extract the LKG of every distinct context into a Parquet store (cached, resumable)"
    )
    src = p.add_argument_group("input (one of)")
    src.add_argument("--dataset", help="dataset name, e.g. folio or logiclm/folio (see `symbolkg datasets`)")
    src.add_argument("--corpus", help="JSONL/Parquet file of problems (id, context, ...) or a Logic-LM file")
    p.add_argument(
        "--store", required=True, help="LKG store directory (also the cache: rerunning skips stored contexts)"
    )
    p.add_argument("--limit", type=int, help="only the first N problems")
    p.add_argument("--data-dir", help=DATA_DIR_HELP)
    p.add_argument(
        "--engine",
        choices=("vllm", "openai", "replay"),
        default="vllm",
        help="LLM backend (default vllm with the embedded SmolLM2-135M-Instruct)",
    )
    p.add_argument("--model", help="model name or path (see `symbolkg solve --help`)")
    p.add_argument("--cache", help="completion cache dir (written through; read by --engine replay)")
    p.add_argument("--openai-url", help="base URL of an OpenAI-compatible server (--engine openai)")
    p.add_argument(
        "--max-repair-rounds", type=int, default=2, help="repair requests per chunk after a failed validation"
    )
    p.add_argument("--chunk-chars", type=int, default=2000, help="longest chunk of a context in characters")
    p.add_argument("--max-tokens", type=int, default=1024, help="most generated tokens per extraction request")
    p.add_argument("--max-in-flight", type=int, default=64, help="contexts extracted concurrently (default 64)")
    p.add_argument("--no-structured", action="store_true", help="plain-text decoding instead of the JSON schema")
    p.add_argument("--tensor-parallel-size", type=int, default=1, help="vLLM tensor parallelism (GPUs per engine)")
    p.add_argument("--max-model-len", type=int, help="vLLM context length")
    p.add_argument(
        "--llm-actor",
        action="store_true",
        help="host the vLLM engine in a Ray actor (a GPU node of the cluster) instead of this process",
    )
    p.add_argument("--ray-address", help="Ray cluster for --llm-actor (default: $RAY_ADDRESS or a local Ray)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.lkg_command == "build":
        with reaped():  # a killed build leaves no engine or Ray process behind
            return build(args)
    return show_graph(args)


def build(args: argparse.Namespace) -> int:
    """``symbolkg lkg build``: extract the LKGs of a dataset's or corpus' contexts into a store."""
    # the job only when the command runs (the LKG store: pyarrow, pandas): the CLI builds every command's parser
    from symbolkg.jobs.methods.lkg_extract import LKGConfig
    from symbolkg.jobs.pipeline.lkg_build import run_lkg_build  # as above
    from symbolkg.retrieval.lkg.store import LKGStore  # as above

    if bool(args.dataset) == bool(args.corpus):
        print("symbolkg lkg build: give exactly one of --dataset NAME and --corpus FILE", file=sys.stderr)
        return 2
    if args.limit is not None and args.limit < 1:
        print("symbolkg lkg build: --limit must be >= 1", file=sys.stderr)
        return 2
    args.programs = args.corpus
    args.skip_bad = False
    loaded = load_input(args)
    if loaded is None:
        return 2
    try:
        opts = EngineOptions(
            kind=args.engine,
            model=args.model,
            cache_dir=args.cache,
            openai_url=args.openai_url,
            max_model_len=args.max_model_len,
            tensor_parallel_size=args.tensor_parallel_size,
            actor=args.llm_actor,
            ray_address=args.ray_address,
        )
        cfg = LKGConfig(
            max_repair_rounds=args.max_repair_rounds,
            chunk_chars=args.chunk_chars,
            params=SamplingParams(max_tokens=args.max_tokens),
            structured=not args.no_structured,
        )
    except ValueError as exc:
        print(f"symbolkg lkg build: {exc}", file=sys.stderr)
        return 2
    store = LKGStore(args.store)
    try:
        report = run_with_engine(
            opts,
            lambda engine: run_lkg_build(
                loaded.problems, store, engine, cfg, max_in_flight=args.max_in_flight, progress=not args.no_progress
            ),
        )
    except EngineDeadError as exc:
        print(
            f"symbolkg lkg build: the LLM engine died: {exc}; finished graphs are stored, rerun to resume",
            file=sys.stderr,
        )
        return 1
    print(json.dumps(report.to_dict()) if args.json else report.format())
    return 0


def show_graph(args: argparse.Namespace) -> int:
    """``symbolkg lkg show``: one problem's graph as PNG or HTML."""
    # the job only when the command runs (the LKG store: pyarrow, pandas): the CLI builds every command's parser
    from symbolkg.jobs.inspection.lkg_show import show
    from symbolkg.retrieval.lkg.store import LKGStore  # as above

    if not Path(args.store).is_dir():
        print(f"symbolkg lkg show: no store at {args.store}", file=sys.stderr)
        return 2
    try:
        graph = show(LKGStore(args.store), args.id, Path(args.out))
    except (KeyError, ValueError, RuntimeError) as exc:
        print(f"symbolkg lkg show: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    print(f"{args.out}: {len(graph.nodes)} nodes, {len(graph.edges)} edges")
    return 0
