"""``symbolkg solve``: recorded programs through the solver pool, or any registered method with an LLM engine.

The jobs are :func:`symbolkg.jobs.pipeline.solve.run_solve` (recorded programs) and
:func:`symbolkg.jobs.pipeline.runner.run_method_job` (the LLM methods of :mod:`symbolkg.jobs.methods`);
this is their command line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from symbolkg.actors.engines.base import EngineDeadError, LLMEngine, SamplingParams
from symbolkg.actors.engines.factory import ENGINES, EngineOptions
from symbolkg.actors.engines.metered import MeteredEngine
from symbolkg.jobs import methods
from symbolkg.jobs.commands.common import (DATA_DIR_HELP, add_shard_option, load_input, prepare_out, reaped,
                                          run_with_engine, shard_of)
from symbolkg.jobs.datasets.files import default_data_dir
from symbolkg.jobs.datasets.records import LoadResult
from symbolkg.jobs.methods import Method, MethodConfig
from symbolkg.jobs.pipeline.gates import StageLimits
from symbolkg.jobs.pipeline.rows import Problem
from symbolkg.jobs.pipeline.runner import run_method_job
from symbolkg.jobs.pipeline.solve import SolveSummary, run_solve
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.jobs.report import format_table, summarize
from symbolkg.solvers.outcomes import Limits
from symbolkg.solvers.runtime.local_pool import SolverPool


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("solve", help="solve problems with given programs; write results Parquet (resumable)")
    _add_job_options(p)
    g = p.add_argument_group("LLM methods")
    registered = methods.names()
    g.add_argument("--method", choices=("recorded", *registered), default="recorded",
                   help="recorded: run the given programs (default); "
                        + "; ".join(f"{name}: {methods.get(name).summary}" for name in registered))
    _add_llm_options(g)
    _add_serving_options(g)
    for name in registered:  # each method's own flags, in a group of its own
        methods.get(name).add_arguments(p.add_argument_group(f"{name} method (--method {name})"))
    p.set_defaults(func=run)


def _add_job_options(p: argparse.ArgumentParser) -> None:
    """Input, output, the solver pool, and the recorded programs' options."""
    p.add_argument("--programs", help="Logic-LM program file (JSON) or problems with programs (JSONL/Parquet)")
    p.add_argument("--dataset", help="dataset name (inferred from the ids of a Logic-LM program file); for the LLM "
                                     "methods also A,B,...: a mixed stream, --limit problems of each")
    p.add_argument("--language", help="program language of a Logic-LM-layout dataset or program file (e.g. logiclm-fol; "
                                      "default: the records' own, else told by the recorded programs' sections)")
    p.add_argument("--out", required=True, help="results Parquet; rerunning the same command resumes it")
    p.add_argument("--workers", type=int, default=2, help="solver worker processes (default 2)")
    p.add_argument("--limit", type=int, help="solve only the first N problems")
    p.add_argument("--timeout-s", type=float, default=10.0, help="per-program time limit (default 10)")
    p.add_argument("--memory-mb", type=int, default=2048, help="per-worker memory limit (default 2048)")
    p.add_argument("--executor", choices=("ray", "local"), default="ray", help="Ray actors (default) or local threads")
    p.add_argument("--cpus-per-worker", type=float, default=1.0, help="Ray CPUs reserved per solver actor")
    p.add_argument("--ray-address", help="Ray cluster to join (default: $RAY_ADDRESS or a local Ray)")
    p.add_argument("--data-dir", help=DATA_DIR_HELP)
    p.add_argument("--skip-bad", action="store_true", help="skip malformed input rows (reported) instead of failing")
    p.add_argument("--overwrite", action="store_true", help="discard earlier results at --out instead of resuming")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--cross-check", action="store_true",
                   help="recorded programs: also solve each logiclm-fol program with Z3 (language logiclm-fol-z3), "
                        "record trace.cross_check = {backend, answer, agrees} and print the disagreements")
    p.add_argument("--no-corrections", action="store_true",
                   help="solve recorded programs as given: the formalization checks (solvers/checks.py) still run "
                        "and are recorded in each row's trace, but their corrections are not applied")
    add_shard_option(p)


def _add_llm_options(g: argparse._ArgumentGroup) -> None:
    """The engine and what every LLM method shares (rounds, tokens, in-flight window, stage gates)."""
    g.add_argument("--engine", choices=ENGINES,
                   help="LLM backend (default vllm with the embedded SmolLM2-135M-Instruct; gold: SymBa's gold "
                        "programs answer --method symba's calls; pararule-template: a deterministic translator of "
                        "PARARULE-Plus answers --method prolog-agent's calls; neither is a model)")
    g.add_argument("--model", help="model name or path (vllm: smollm2-135m (default), qwen2.5-coder-1.5b, an HF folder/id)")
    g.add_argument("--recorded", help="Logic-LM program file answering formulation requests (--engine recorded)")
    g.add_argument("--cache", help="completion cache dir: written through by any engine, read by --engine replay")
    g.add_argument("--openai-url", help="base URL of an OpenAI-compatible server (--engine openai)")
    g.add_argument("--max-refine-rounds", type=int, default=3, help="logiclm repair rounds after the first program")
    g.add_argument("--fallback", choices=("direct", "cot"), help="answer unanswered problems with this method (reported apart)")
    g.add_argument("--max-tokens", type=int,
                   help="most generated tokens per program (formulation, repair) or chain of thought "
                        "(default 1024 for programs, 512 for cot; direct answers always 16)")
    g.add_argument("--max-in-flight", type=int, default=64, help="problems processed concurrently (default 64)")
    g.add_argument("--stage-limit", default="", metavar="llm=N,solve=M",
                   help="most calls inside each stage at once (a FIFO gate per stage; problems that find it full "
                        "wait holding their in-flight slot: the backpressure): llm=N requests in the LLM engine "
                        "(default none: vLLM batches itself), solve=M solver calls (default auto = 2 x --workers); "
                        "'none' = unlimited")
    g.add_argument("--no-structured", action="store_true", help="plain-text decoding even where structured output is supported")
    g.add_argument("--no-group-contexts", action="store_true",
                   help="take problems in input order instead of next to the others on the same context (grouping "
                        "lets the engine's prefix cache serve a shared context once)")


def _add_serving_options(g: argparse._ArgumentGroup) -> None:
    """Where and how vLLM runs: tensor parallelism, placement on the cluster, replicas, restarts."""
    g.add_argument("--tensor-parallel-size", type=int, default=1, help="vLLM tensor parallelism (GPUs per engine)")
    g.add_argument("--placement-strategy", choices=("STRICT_PACK", "PACK", "SPREAD", "STRICT_SPREAD"),
                   default="STRICT_PACK",
                   help="with --llm-actor and --tensor-parallel-size > 1: how each engine's placement group (one GPU "
                        "bundle per TP rank) may spread over nodes; STRICT_PACK (default) keeps an engine on one node")
    g.add_argument("--placement-timeout-s", type=float, default=300.0,
                   help="with --llm-actor and --tensor-parallel-size > 1: seconds to wait for an engine's GPUs "
                        "(an autoscaler may need minutes to add a GPU node) before the job fails (default 300)")
    g.add_argument("--gpu-memory-utilization", type=float, help="vLLM GPU memory fraction (e.g. 0.9)")
    g.add_argument("--max-model-len", type=int, help="vLLM context length")
    g.add_argument("--max-num-seqs", type=int, help="vLLM batch: sequences one engine runs at once")
    g.add_argument("--llm-actor", action="store_true",
                   help="host the vLLM engine in a Ray actor (a GPU node of the cluster) instead of this process")
    g.add_argument("--llm-actors", type=int, default=1,
                   help="with --llm-actor: engine replicas (one per GPU group), least-outstanding balanced (default 1)")
    g.add_argument("--llm-restarts", type=int, default=2,
                   help="rebuild a dead vLLM engine (actor or process) this many times, retrying its requests (default 2)")


# --------------------------------------------------------------------------- running it


def run(args: argparse.Namespace) -> int:
    """Recorded programs unless ``--method``/``--engine`` ask for an LLM method; a killed driver leaves no process."""
    with reaped():
        if args.method != "recorded" or args.engine:
            return run_llm(args)
        return run_recorded(args)


def _solver_pool(args: argparse.Namespace) -> SolverPool:
    # ray is heavy: imported when a pool is made, never to build the parser
    from symbolkg.actors.solver_pool import make_solver_pool

    return make_solver_pool(args.executor, args.workers, memory_mb=args.memory_mb,
                            cpus_per_worker=args.cpus_per_worker, ray_address=args.ray_address)


def _out_and_input(args: argparse.Namespace) -> tuple[Path, LoadResult] | None:
    """``--out`` (emptied with ``--overwrite``) and the problems; None when either is wrong (printed)."""
    out = prepare_out(args)
    if out is None:
        return None
    loaded = load_input(args)
    return None if loaded is None else (out, loaded)


def run_recorded(args: argparse.Namespace) -> int:
    """``--method recorded`` (the default): the given programs through the solver pool."""
    prepared = _out_and_input(args)
    if prepared is None:
        return 2
    out, loaded = prepared
    problems = loaded.problems
    if not args.programs and not any(p.program for p in problems):
        print(f"symbolkg solve: dataset {args.dataset} has no programs; give --programs FILE "
              "(LLM methods that write programs come with --method)", file=sys.stderr)
        return 2
    limits = Limits(timeout_s=args.timeout_s, memory_mb=args.memory_mb)
    store = ResultStore(out, run_info={"source": args.programs or args.dataset, "workers": args.workers,
                                       "executor": args.executor, "timeout_s": args.timeout_s}, shard=shard_of(args))
    pool = _solver_pool(args)
    try:
        summary = run_solve(problems, store, pool, limits=limits, progress=not args.no_progress,
                            corrections=not args.no_corrections, cross_check=args.cross_check)
    finally:
        pool.close()
    print(f"{summary.solved} solved this session, {summary.skipped_done} already done; results: {out}", file=sys.stderr)
    if args.cross_check:
        print(f"cross-check (Z3): {summary.cross_checked} FOL rows, {summary.disagreements} disagreements, "
              f"{summary.cross_undecided} without two answers (trace.cross_check.agrees is null)")
    _print_report(out, summary)
    return 0


def _engine_options(args: argparse.Namespace) -> EngineOptions:
    """The engine the flags describe. Raises ValueError on a bad combination."""
    return EngineOptions(kind=args.engine or "vllm", model=args.model, recorded=args.recorded, cache_dir=args.cache,
                         openai_url=args.openai_url, tensor_parallel_size=args.tensor_parallel_size,
                         gpu_memory_utilization=args.gpu_memory_utilization, max_model_len=args.max_model_len,
                         max_num_seqs=args.max_num_seqs,
                         actor=args.llm_actor, ray_address=args.ray_address, restarts=args.llm_restarts,
                         actors=args.llm_actors, placement_strategy=args.placement_strategy,
                         placement_timeout_s=args.placement_timeout_s,
                         data_dir=str(default_data_dir(args.data_dir)) if args.engine == "gold" else None)


def _method_config(args: argparse.Namespace) -> MethodConfig:
    """The settings every method shares. Raises ValueError on a bad value."""
    budget = {}
    if args.max_tokens is not None:
        if args.max_tokens < 1:
            raise ValueError(f"--max-tokens must be >= 1, got {args.max_tokens}")
        budget = {"formulate_params": SamplingParams(max_tokens=args.max_tokens),
                  "cot_params": SamplingParams(max_tokens=args.max_tokens)}
    return MethodConfig(method=args.method, max_refine_rounds=args.max_refine_rounds,
                        limits=Limits(timeout_s=args.timeout_s, memory_mb=args.memory_mb),
                        structured=not args.no_structured, fallback=args.fallback, **budget)


def _run_info(args: argparse.Namespace, opts: EngineOptions, cfg: MethodConfig, stage_limits: StageLimits,
              method: Method) -> dict[str, Any]:
    """What the results' metadata records of this job."""
    run_info = {"source": args.programs or args.dataset, "method": args.method, "engine": opts.kind,
                "model": args.model, "workers": args.workers, "max_refine_rounds": cfg.max_refine_rounds,
                "max_tokens": args.max_tokens, "stage_limits": {"llm": stage_limits.llm, "solve": stage_limits.solve}}
    if method.run_info():
        run_info[args.method] = method.run_info()
    return run_info


def run_llm(args: argparse.Namespace) -> int:
    """``--method NAME --engine ...``: the LLM path, for any registered method."""
    if args.method == "recorded":
        print(f"symbolkg solve: --engine needs --method {' or '.join(methods.names())}", file=sys.stderr)
        return 2
    prepared = _out_and_input(args)
    if prepared is None:
        return 2
    out, loaded = prepared
    try:
        opts = _engine_options(args)
        cfg = _method_config(args)
        stage_limits = StageLimits.parse(args.stage_limit)
        method = methods.get(args.method).from_args(args)
    except ValueError as exc:
        print(f"symbolkg solve: {exc}", file=sys.stderr)
        return 2
    pool = None
    try:
        store = ResultStore(out, run_info=_run_info(args, opts, cfg, stage_limits, method), shard=shard_of(args))
        pool = _solver_pool(args) if method.needs_solver or method.wants_solver else None
        summary = run_with_engine(opts, lambda engine: _job(args, loaded.problems, store, cfg, engine, pool,
                                                            method, stage_limits))
    except EngineDeadError as exc:
        print(f"symbolkg solve: the LLM engine died: {exc}; finished rows are saved, rerun to resume", file=sys.stderr)
        return 1
    finally:
        method.close()  # idempotent: the job closes it too, unless it never started
        if pool is not None:
            pool.close()
    _print_summary(summary, out)
    return 0


async def _job(args: argparse.Namespace, problems: list[Problem], store: ResultStore, cfg: MethodConfig,
               engine: LLMEngine, pool: SolverPool | None, method: Method, stage_limits: StageLimits) -> SolveSummary:
    """The method job on ``engine``, metered: the request log `symbolkg profile` reads streams beside the store's file."""
    metered = MeteredEngine(engine, log_to=store.path)
    try:
        return await run_method_job(problems, store, cfg, metered, pool, max_in_flight=args.max_in_flight,
                                    progress=not args.no_progress, method=method, stage_limits=stage_limits,
                                    group_contexts=not args.no_group_contexts)
    finally:
        metered.flush_log()


def _print_summary(summary: SolveSummary, out: Path) -> None:
    print(f"{summary.solved} solved this session, {summary.skipped_done} already done; results: {out}",
          file=sys.stderr)
    for g in summary.gates:
        if g.passes:
            print(f"  {g.stage} gate (limit {g.limit or 'none'}): {g.passes} calls, at most {g.peak_running} inside and "
                  f"{g.peak_waiting} waiting; wait p95 {g.p95_wait_s:.2f} s, max {g.max_wait_s:.2f} s", file=sys.stderr)
    _print_report(out, summary)


REPORT_INLINE_MAX = 200_000
"""Runs with more problems than this end with a pointer to ``symbolkg report`` instead of the table:
the table reads every row, and the driver's memory should follow the job's work in flight."""


def _print_report(out: Path, summary: SolveSummary) -> None:
    """The run's report table on stdout (the union of its shards), or for a big run how to get it."""
    if summary.total > REPORT_INLINE_MAX:
        print(f"{summary.total} problems: run `symbolkg report {out}` for the table")
        return
    table, meta = read_run(out)
    print(format_table(summarize(table, meta)))
