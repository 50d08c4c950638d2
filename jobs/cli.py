"""The ``symbolkg`` command line."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from solvers.records import Limits


def _cmd_datasets(args: argparse.Namespace) -> int:
    from jobs.datasets import dataset_counts, default_data_dir

    try:
        root = default_data_dir(args.data_dir)
    except FileNotFoundError as exc:
        print(f"symbolkg datasets: {exc}", file=sys.stderr)
        return 2
    counts = dataset_counts(root)
    if args.json:
        print(json.dumps({"data_dir": str(root), "datasets": counts}, indent=2))
        return 0
    print(f"data dir: {root}")
    print(f"{'dataset':32s} {'problems':>9s}")
    for name, n in counts.items():
        print(f"{name:32s} {n:9d}")
    return 0


def _make_pool(args: argparse.Namespace):
    if args.executor == "local":
        from solvers.pool import LocalSolverPool

        return LocalSolverPool(args.workers, memory_mb=args.memory_mb)
    from actors.solver_pool import RaySolverPool

    return RaySolverPool(args.workers, memory_mb=args.memory_mb, num_cpus=args.cpus_per_worker, address=args.ray_address)


def _resolve_dataset(name: str | None) -> str | None:
    """Exact registry name, else ``logiclm/<name>``, else a unique ``*/<name>``."""
    from jobs.datasets import dataset_names

    if name is None:
        return None
    names = dataset_names()
    if name in names:
        return name
    if f"logiclm/{name.lower()}" in names:
        return f"logiclm/{name.lower()}"
    matches = [n for n in names if n.split("/", 1)[-1] == name.lower()]
    if len(matches) == 1:
        return matches[0]
    raise ValueError(f"unknown dataset {name!r}; known: {', '.join(names)}")


def _load_input(args: argparse.Namespace):  # -> LoadResult | None
    """Problems from ``--programs`` / ``--dataset``; prints notes, skipped rows and errors (None on error)."""
    from jobs.datasets import InputError, load_dataset, load_problems

    try:
        args.dataset = _resolve_dataset(args.dataset)
        if args.programs:
            loaded = load_problems(args.programs, args.data_dir, skip_bad=args.skip_bad, limit=args.limit,
                                   dataset=args.dataset)
        elif args.dataset:
            loaded = load_dataset(args.dataset, args.data_dir, skip_bad=args.skip_bad, limit=args.limit)
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
    for note in loaded.notes:
        print(f"note: {note}", file=sys.stderr)
    for err in loaded.errors:
        print(f"skipped bad row: {err}", file=sys.stderr)
    return loaded


def _cmd_solve(args: argparse.Namespace) -> int:
    if args.method != "recorded" or args.engine:
        return _cmd_solve_llm(args)
    from jobs.report import format_table, summarize
    from jobs.solve import run_solve
    from jobs.store import ResultStore, read_run

    out = _prepare_out(args)
    if out is None:
        return 2
    loaded = _load_input(args)
    if loaded is None:
        return 2
    problems = loaded.problems
    if not args.programs and not any(p.program for p in problems):
        print(f"symbolkg solve: dataset {args.dataset} has no programs; give --programs FILE "
              "(LLM methods that write programs come with --method)", file=sys.stderr)
        return 2
    limits = Limits(timeout_s=args.timeout_s, memory_mb=args.memory_mb)
    store = ResultStore(out, run_info={"source": args.programs or args.dataset, "workers": args.workers,
                                       "executor": args.executor, "timeout_s": args.timeout_s})
    pool = _make_pool(args)
    try:
        summary = run_solve(problems, store, pool, limits=limits, progress=not args.no_progress)
    finally:
        pool.close()
    print(f"{summary.solved} solved this session, {summary.skipped_done} already done; results: {out}", file=sys.stderr)
    table, meta = read_run(out)
    print(format_table(summarize(table, meta)))
    return 0


def _prepare_out(args: argparse.Namespace) -> Path | None:
    out = Path(args.out)
    if args.overwrite:
        out.unlink(missing_ok=True)
        shutil.rmtree(out.with_name(out.name + ".parts"), ignore_errors=True)
    if args.limit is not None and args.limit < 1:
        print("symbolkg solve: --limit must be >= 1", file=sys.stderr)
        return None
    return out


def _cmd_solve_llm(args: argparse.Namespace) -> int:
    """``--method direct|cot|logiclm --engine ...``: the LLM path."""
    import asyncio

    from actors.engines.base import EngineDeadError
    from actors.engines.factory import EngineOptions, make_engine
    from jobs.methods import MethodConfig
    from jobs.pipeline import run_method_job
    from jobs.report import format_table, summarize
    from jobs.store import ResultStore, read_run

    if args.method == "recorded":
        print("symbolkg solve: --engine needs --method direct, cot or logiclm", file=sys.stderr)
        return 2
    out = _prepare_out(args)
    if out is None:
        return 2
    loaded = _load_input(args)
    if loaded is None:
        return 2
    try:
        opts = EngineOptions(kind=args.engine or "vllm", model=args.model, recorded=args.recorded, cache_dir=args.cache,
                             openai_url=args.openai_url, tensor_parallel_size=args.tensor_parallel_size,
                             gpu_memory_utilization=args.gpu_memory_utilization, max_model_len=args.max_model_len)
        cfg = MethodConfig(method=args.method, max_refine_rounds=args.max_refine_rounds,
                           limits=Limits(timeout_s=args.timeout_s, memory_mb=args.memory_mb),
                           structured=not args.no_structured, fallback=args.fallback)
    except ValueError as exc:
        print(f"symbolkg solve: {exc}", file=sys.stderr)
        return 2
    store = ResultStore(out, run_info={"source": args.programs or args.dataset, "method": args.method, "engine": opts.kind,
                                       "model": args.model, "workers": args.workers})
    pool = _make_pool(args) if args.method == "logiclm" else None

    async def main_async() -> None:
        engine = make_engine(opts)
        try:
            await run_method_job(loaded.problems, store, cfg, engine, pool, max_in_flight=args.max_in_flight,
                                 progress=not args.no_progress)
        finally:
            await engine.close()

    try:
        asyncio.run(main_async())
    except EngineDeadError as exc:
        print(f"symbolkg solve: the LLM engine died: {exc}; finished rows are saved, rerun to resume", file=sys.stderr)
        return 1
    finally:
        if pool is not None:
            pool.close()
    table, meta = read_run(out)
    print(format_table(summarize(table, meta)))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from jobs.report import report

    try:
        print(report(args.run, as_json=args.json))
    except FileNotFoundError as exc:
        print(f"symbolkg report: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from solvers.worker import main as worker_main

    return worker_main(["--check"])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="symbolkg", description="Batch engine for verifiable logical reasoning.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("datasets", help="list the datasets it can load, with counts")
    p.add_argument("--data-dir", help="data root (default: $SYMBOLKG_DATA, else ../shared/data)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_datasets)

    p = sub.add_parser("solve", help="solve problems with given programs; write results Parquet (resumable)")
    p.add_argument("--programs", help="Logic-LM program file (JSON) or problems with programs (JSONL/Parquet)")
    p.add_argument("--dataset", help="dataset name (inferred from the ids of a Logic-LM program file)")
    p.add_argument("--out", required=True, help="results Parquet; rerunning the same command resumes it")
    p.add_argument("--workers", type=int, default=2, help="solver worker processes (default 2)")
    p.add_argument("--limit", type=int, help="solve only the first N problems")
    p.add_argument("--timeout-s", type=float, default=10.0, help="per-program time limit (default 10)")
    p.add_argument("--memory-mb", type=int, default=2048, help="per-worker memory limit (default 2048)")
    p.add_argument("--executor", choices=("ray", "local"), default="ray", help="Ray actors (default) or local threads")
    p.add_argument("--cpus-per-worker", type=float, default=1.0, help="Ray CPUs reserved per solver actor")
    p.add_argument("--ray-address", help="Ray cluster to join (default: $RAY_ADDRESS or a local Ray)")
    p.add_argument("--data-dir", help="data root (default: $SYMBOLKG_DATA, else ../shared/data)")
    p.add_argument("--skip-bad", action="store_true", help="skip malformed input rows (reported) instead of failing")
    p.add_argument("--overwrite", action="store_true", help="discard earlier results at --out instead of resuming")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    g = p.add_argument_group("LLM methods")
    g.add_argument("--method", choices=("recorded", "direct", "cot", "logiclm"), default="recorded",
                   help="recorded: run the given programs (default); direct/cot: the LLM answers; "
                        "logiclm: formulate, solve, refine on error")
    g.add_argument("--engine", choices=("vllm", "openai", "recorded", "replay"),
                   help="LLM backend (default vllm with the embedded SmolLM2-135M-Instruct)")
    g.add_argument("--model", help="model name or path (vllm: smollm2-135m (default), qwen2.5-coder-1.5b, an HF folder/id)")
    g.add_argument("--recorded", help="Logic-LM program file answering formulation requests (--engine recorded)")
    g.add_argument("--cache", help="completion cache dir: written through by any engine, read by --engine replay")
    g.add_argument("--openai-url", help="base URL of an OpenAI-compatible server (--engine openai)")
    g.add_argument("--max-refine-rounds", type=int, default=3, help="logiclm repair rounds after the first program")
    g.add_argument("--fallback", choices=("direct", "cot"), help="answer unanswered problems with this method (reported apart)")
    g.add_argument("--max-in-flight", type=int, default=64, help="problems processed concurrently (default 64)")
    g.add_argument("--no-structured", action="store_true", help="plain-text decoding even where structured output is supported")
    g.add_argument("--tensor-parallel-size", type=int, default=1, help="vLLM tensor parallelism (GPUs per engine)")
    g.add_argument("--gpu-memory-utilization", type=float, help="vLLM GPU memory fraction (e.g. 0.9)")
    g.add_argument("--max-model-len", type=int, help="vLLM context length")
    p.set_defaults(func=_cmd_solve)

    p = sub.add_parser("report", help="accuracy, execution rate, errors by kind, timings of a run")
    p.add_argument("run", help="results Parquet written by `symbolkg solve`")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("check", help="start a solver worker and run one program per native solver")
    p.set_defaults(func=_cmd_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "workers", 1) < 1:
        print("symbolkg: --workers must be >= 1", file=sys.stderr)
        return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
