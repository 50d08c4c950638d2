"""``symbolkg solve``: recorded programs through the solver pool, or any registered method with an LLM engine.

The jobs are :func:`symbolkg.jobs.pipeline.programs_job.run_solve` (recorded programs) and
:func:`symbolkg.jobs.pipeline.method_job.run_method_job` (the LLM methods of :mod:`symbolkg.jobs.methods`);
this is their command line. The settings of a run come from its flags, a config file (``--config
run.yaml``) and a stored run (``--rerun RUN.parquet``), merged and checked by
:mod:`symbolkg.jobs.pipeline.run_config`; the parser therefore keeps no defaults (a namespace holds the flags
given, nothing else) and :func:`schema` holds them. Every results file stores the resolved config
and the run's provenance (:mod:`symbolkg.jobs.pipeline.provenance`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from symbolkg.actors.engines.base import EngineDeadError, LLMEngine, SamplingParams
from symbolkg.actors.engines.factory import ENGINES, EngineOptions
from symbolkg.jobs import methods
from symbolkg.jobs.commands.common import (
    DATA_DIR_HELP,
    add_shard_option,
    bad_input,
    finish_input,
    lacks_programs,
    open_input,
    prepare_out,
    reaped,
    run_with_engine,
    shard_of,
)
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.files import default_data_dir
from symbolkg.jobs.datasets.records import InputError
from symbolkg.jobs.methods import Method, MethodConfig
from symbolkg.jobs.pipeline.provenance import input_fingerprint, model_record, prompt_ids, sampling
from symbolkg.jobs.pipeline.run_config import ConfigError, RunConfig, Schema, load_file, resolve, stored_source
from symbolkg.solvers.outcomes import Limits

if TYPE_CHECKING:
    from symbolkg.jobs.datasets.stream import ProblemStream
    from symbolkg.jobs.pipeline.gates import StageLimits
    from symbolkg.jobs.pipeline.programs_job import SolveSummary
    from symbolkg.solvers.runtime.local_pool import SolverPool


DESCRIPTION = (
    "Solve problems: the given programs through the solver pool (the default), or a method that "
    "writes them with an LLM (--method). Results go to a resumable Parquet file (--out) that also "
    "stores the run's whole config: `symbolkg config show RUN.parquet` prints it, `--config FILE` "
    "runs it again, `--rerun RUN.parquet --out NEW.parquet` too."
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "solve",
        help="solve problems with given programs; write results Parquet (resumable)",
        description=DESCRIPTION,
        add_help=False,
    )
    add_options(p, methods.names())
    for action in p._actions:  # no defaults: a config file fills what the flags leave out (module docstring)
        action.default = argparse.SUPPRESS
    p.set_defaults(func=run)


def add_options(p: argparse.ArgumentParser, shown: Sequence[str]) -> dict[str, list[str]]:
    """Every option of ``symbolkg solve``, with the own options of the methods in ``shown``.

    Returns:
        method -> the dests of its own options (a method's config section), for each of ``shown``.
    """
    p.add_argument(
        "-h", "--help", action="store_true", help="show this help and exit; with --method M, M's own options too"
    )
    g = p.add_argument_group("a run as one file")
    g.add_argument(
        "--config",
        metavar="FILE",
        help="read the run's settings from a YAML (.yaml) or TOML (.toml) file: keys are these flags "
        "without -- (dashes or underscores), a method's own options in a section named after it "
        "(symba: {max_calls: 50}); flags given here override the file",
    )
    g.add_argument(
        "--rerun",
        metavar="RUN.parquet",
        help="run again with the config RUN.parquet stored (flags given here override it, e.g. --out "
        "NEW.parquet --engine replay --cache DIR; replay takes the model name from RUN)",
    )
    _add_job_options(p)
    g = p.add_argument_group("LLM methods")
    registered = methods.names()
    g.add_argument(
        "--method",
        choices=("recorded", *registered),
        default="recorded",
        help="recorded: run the given programs (default); "
        + "; ".join(f"{name}: {methods.get(name).summary}" for name in registered),
    )
    _add_llm_options(g)
    _add_serving_options(g)
    sections: dict[str, list[str]] = {}
    for name in shown:  # each method's own flags, in a group of its own
        before = len(p._actions)
        methods.get(name).add_arguments(p.add_argument_group(f"{name} method (--method {name})"))
        sections[name] = [a.dest for a in p._actions[before:]]
    return sections


def schema() -> Schema:
    """The options of ``symbolkg solve`` with their defaults (built anew: a plug-in may have registered since)."""
    p = argparse.ArgumentParser(prog="symbolkg solve", add_help=False)
    return Schema.from_parser(p, add_options(p, methods.names()))


def _print_help(method: str | None) -> None:
    """``--help``: the shared options, and ``method``'s own (not every method's)."""
    registered = methods.names()
    shown = [method] if method in registered else []
    epilog = (
        None
        if shown
        else (f"Each method's own options: symbolkg solve --method M --help (M: {', '.join(registered)}).")
    )
    p = argparse.ArgumentParser(prog="symbolkg solve", description=DESCRIPTION, epilog=epilog, add_help=False)
    add_options(p, shown)
    p.print_help()


def _add_job_options(p: argparse.ArgumentParser) -> None:
    """Input, output, the solver pool, and the recorded programs' options."""
    p.add_argument("--programs", help="Logic-LM program file (JSON) or problems with programs (JSONL/Parquet)")
    p.add_argument(
        "--dataset",
        help="dataset name (inferred from the ids of a Logic-LM program file); for the LLM "
        "methods also A,B,...: a mixed stream, --limit problems of each",
    )
    p.add_argument(
        "--language",
        help="program language of a Logic-LM-layout dataset or program file (e.g. logiclm-fol; "
        "default: the records' own, else told by the recorded programs' sections)",
    )
    p.add_argument("--out", help="results Parquet (required); rerunning the same command resumes it")
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
    p.add_argument(
        "--cross-check",
        action="store_true",
        help="recorded programs: also solve each logiclm-fol program with Z3 (language logiclm-fol-z3), "
        "record trace.cross_check = {backend, answer, agrees} and print the disagreements",
    )
    p.add_argument(
        "--no-corrections",
        action="store_true",
        help="solve recorded programs as given: the formalization checks (solvers/checks.py) still run "
        "and are recorded in each row's trace, but their corrections are not applied",
    )
    add_shard_option(p)


def _add_llm_options(g: argparse._ArgumentGroup) -> None:
    """The engine and what every LLM method shares (rounds, tokens, in-flight window, stage gates)."""
    g.add_argument(
        "--engine",
        choices=ENGINES,
        help="LLM backend (default vllm with the embedded SmolLM2-135M-Instruct; gold: SymBa's gold "
        "programs answer --method symba's calls; pararule-template: a deterministic translator of "
        "PARARULE-Plus answers --method prolog-agent's calls; neither is a model)",
    )
    g.add_argument(
        "--model", help="model name or path (vllm: smollm2-135m (default), qwen2.5-coder-1.5b, an HF folder/id)"
    )
    g.add_argument("--recorded", help="Logic-LM program file answering formulation requests (--engine recorded)")
    g.add_argument("--cache", help="completion cache dir: written through by any engine, read by --engine replay")
    g.add_argument("--openai-url", help="base URL of an OpenAI-compatible server (--engine openai)")
    g.add_argument("--max-refine-rounds", type=int, default=3, help="logiclm repair rounds after the first program")
    g.add_argument(
        "--repair-max-tokens",
        type=int,
        help="most generated tokens per repair request (default: the program's, --max-tokens, as Logic-LM); "
        "a smaller bound ends a repair that would run on to the budget sooner",
    )
    g.add_argument(
        "--fallback", choices=("direct", "cot"), help="answer unanswered problems with this method (reported apart)"
    )
    g.add_argument(
        "--max-tokens",
        type=int,
        help="most generated tokens per program (formulation, repair) or chain of thought "
        "(default 1024 for programs, 512 for cot; direct answers always 16)",
    )
    g.add_argument(
        "--max-in-flight",
        type=int,
        default=64,
        help="problems processed concurrently (default 64); above --max-num-seqs their requests wait in vLLM's queue",
    )
    g.add_argument(
        "--stage-limit",
        default="",
        metavar="llm=N,solve=M",
        help="most calls inside each stage at once (a FIFO gate per stage; problems that find it full "
        "wait holding their in-flight slot: the backpressure): llm=N requests in the LLM engine "
        "(default none: vLLM batches itself), solve=M solver calls (default auto = 2 x --workers); "
        "'none' = unlimited",
    )
    g.add_argument(
        "--no-structured", action="store_true", help="plain-text decoding even where structured output is supported"
    )
    g.add_argument(
        "--no-group-contexts",
        action="store_true",
        help="take problems in input order instead of next to the others on the same context (grouping "
        "lets the engine's prefix cache serve a shared context once)",
    )


def _add_serving_options(g: argparse._ArgumentGroup) -> None:
    """Where and how vLLM runs: tensor parallelism, placement on the cluster, replicas, restarts."""
    g.add_argument("--tensor-parallel-size", type=int, default=1, help="vLLM tensor parallelism (GPUs per engine)")
    g.add_argument(
        "--placement-strategy",
        choices=("STRICT_PACK", "PACK", "SPREAD", "STRICT_SPREAD"),
        default="STRICT_PACK",
        help="with --llm-actor and --tensor-parallel-size > 1: how each engine's placement group (one GPU "
        "bundle per TP rank) may spread over nodes; STRICT_PACK (default) keeps an engine on one node",
    )
    g.add_argument(
        "--placement-timeout-s",
        type=float,
        default=300.0,
        help="with --llm-actor and --tensor-parallel-size > 1: seconds to wait for an engine's GPUs "
        "(an autoscaler may need minutes to add a GPU node) before the job fails (default 300)",
    )
    g.add_argument("--gpu-memory-utilization", type=float, help="vLLM GPU memory fraction (e.g. 0.9)")
    g.add_argument("--max-model-len", type=int, help="vLLM context length")
    g.add_argument("--max-num-seqs", type=int, help="vLLM batch: sequences one engine runs at once")
    g.add_argument(
        "--scheduling-policy",
        choices=("fcfs", "priority"),
        default="fcfs",
        help="vLLM: the order of requests waiting for a batch slot: first come first served (default), or "
        "priority: a started problem's requests before a later problem's (problems finish in about the "
        "order they started)",
    )
    g.add_argument(
        "--no-repeat-stop",
        dest="repeat_stop",
        action="store_false",
        help="vLLM: decode a completion that repeats one block over and over (a small model's loop) to "
        "--max-tokens instead of stopping it (finish_reason 'repeat'); for prompts that ask for repetition",
    )
    g.add_argument(
        "--llm-actor",
        action="store_true",
        help="host the vLLM engine in a Ray actor (a GPU node of the cluster) instead of this process",
    )
    g.add_argument(
        "--llm-actors",
        type=int,
        default=1,
        help="with --llm-actor: engine replicas (one per GPU group), least-outstanding balanced (default 1)",
    )
    g.add_argument(
        "--llm-restarts",
        type=int,
        default=2,
        help="rebuild a dead vLLM engine (actor or process) this many times, retrying its requests (default 2)",
    )


# --------------------------------------------------------------------------- running it


def run(args: argparse.Namespace) -> int:
    """Recorded programs unless ``--method``/``--engine`` ask for an LLM method; a killed driver leaves no process.

    ``args`` holds the flags given (the parser keeps no defaults); :func:`resolve_config` adds the
    ``--rerun`` run's and the ``--config`` file's settings and the defaults.
    """
    if getattr(args, "help", False):
        _print_help(getattr(args, "method", None))
        return 0
    try:
        config = resolve_config(args)
    except ConfigError as exc:
        print(f"symbolkg solve: {exc}", file=sys.stderr)
        return 2
    args = config.namespace()
    if not args.out:
        print(
            "symbolkg solve: no results file: give --out RUN.parquet (or `out:` in the --config file)", file=sys.stderr
        )
        return 2
    if args.workers < 1:
        print(f"symbolkg solve: --workers must be >= 1, got {args.workers}", file=sys.stderr)
        return 2
    with reaped():
        if args.method != "recorded" or args.engine:
            return run_llm(args, config)
        return run_recorded(args, config)


def resolve_config(args: argparse.Namespace) -> RunConfig:
    """Every setting of the run: defaults < ``--rerun``'s stored config < ``--config`` file < the flags given.

    A rerun with ``--engine replay`` and no ``--model`` replays the model the stored run used
    (the name its completions were cached under).

    Raises:
        ConfigError: a bad file, key or value (one line, see :mod:`symbolkg.jobs.pipeline.run_config`).
    """
    options = schema()
    given = {k: v for k, v in vars(args).items() if options.dest(k) is not None}
    stored, meta = stored_source(args.rerun) if getattr(args, "rerun", None) else (None, {})
    file = load_file(args.config) if getattr(args, "config", None) else None
    config = resolve(options, given, file=file, stored=stored)
    if config.values["engine"] == "replay" and config.values["model"] is None and meta.get("model"):
        config = replace(config, values={**config.values, "model": meta["model"]})
    return config


def _solver_pool(args: argparse.Namespace) -> SolverPool:
    # ray is heavy: imported when a pool is made, never to build the parser
    from symbolkg.actors.solver_pool import make_solver_pool

    return make_solver_pool(
        args.executor,
        args.workers,
        memory_mb=args.memory_mb,
        cpus_per_worker=args.cpus_per_worker,
        ray_address=args.ray_address,
    )


def _out_and_input(args: argparse.Namespace) -> tuple[Path, ProblemStream] | None:
    """``--out`` (emptied with ``--overwrite``) and the problems, a stream the job reads as it goes; None when
    either is wrong (printed)."""
    out = prepare_out(args)
    if out is None:
        return None
    loaded = open_input(args)
    return None if loaded is None else (out, loaded)


def _input(args: argparse.Namespace) -> dict[str, Any]:
    """The input's fingerprint: the files the flags name (``--dataset`` as the loader resolved it)."""
    return input_fingerprint(
        programs=args.programs,
        dataset=args.dataset,
        data_dir=args.data_dir,
        selection={"limit": args.limit, "shard": args.shard, "language": args.language, "skip_bad": args.skip_bad},
    )


def run_recorded(args: argparse.Namespace, config: RunConfig) -> int:
    """``--method recorded`` (the default): the given programs through the solver pool."""
    # the job (pyarrow, numpy) only when it runs: the CLI builds every command's parser, this one's included
    from symbolkg.jobs.pipeline.programs_job import run_solve
    from symbolkg.jobs.pipeline.store import ResultStore  # as above

    prepared = _out_and_input(args)
    if prepared is None:
        return 2
    out, loaded = prepared
    if not args.programs and lacks_programs(args):
        print(
            f"symbolkg solve: dataset {args.dataset} has no programs; give --programs FILE "
            "(LLM methods that write programs come with --method)",
            file=sys.stderr,
        )
        return 2
    limits = Limits(timeout_s=args.timeout_s, memory_mb=args.memory_mb)
    run_info = {
        "source": args.programs or args.dataset,
        "workers": args.workers,
        "executor": args.executor,
        "timeout_s": args.timeout_s,
        "config": config.document(),
        "provenance": {"input": _input(args)},
    }
    store = ResultStore(out, run_info=run_info, shard=shard_of(args))
    pool = _solver_pool(args)
    try:
        summary = run_solve(
            loaded,
            store,
            pool,
            limits=limits,
            progress=not args.no_progress,
            corrections=not args.no_corrections,
            cross_check=args.cross_check,
        )
    except InputError as exc:  # a bad record met without --skip-bad: the rows before it are saved
        return bad_input(args, exc, loaded)
    finally:
        pool.close()
    finish_input(loaded)
    print(f"{summary.solved} solved this session, {summary.skipped_done} already done; results: {out}", file=sys.stderr)
    if args.cross_check:
        print(
            f"cross-check (Z3): {summary.cross_checked} FOL rows, {summary.disagreements} disagreements, "
            f"{summary.cross_undecided} without two answers (trace.cross_check.agrees is null)"
        )
    _print_report(out, summary)
    return 0


def _engine_options(args: argparse.Namespace) -> EngineOptions:
    """The engine the flags describe. Raises ValueError on a bad combination."""
    return EngineOptions(
        kind=args.engine or "vllm",
        model=args.model,
        recorded=args.recorded,
        cache_dir=args.cache,
        openai_url=args.openai_url,
        tensor_parallel_size=args.tensor_parallel_size,
        gpu_memory_utilization=args.gpu_memory_utilization,
        max_model_len=args.max_model_len,
        max_num_seqs=args.max_num_seqs,
        scheduling_policy=args.scheduling_policy,
        repeat_stop=args.repeat_stop,
        actor=args.llm_actor,
        ray_address=args.ray_address,
        restarts=args.llm_restarts,
        actors=args.llm_actors,
        placement_strategy=args.placement_strategy,
        placement_timeout_s=args.placement_timeout_s,
        data_dir=str(default_data_dir(args.data_dir)) if args.engine == "gold" else None,
    )


def _method_config(args: argparse.Namespace) -> MethodConfig:
    """The settings every method shares. Raises ValueError on a bad value."""
    budget = {}
    if args.max_tokens is not None:
        if args.max_tokens < 1:
            raise ValueError(f"--max-tokens must be >= 1, got {args.max_tokens}")
        budget = {
            "formulate_params": SamplingParams(max_tokens=args.max_tokens),
            "cot_params": SamplingParams(max_tokens=args.max_tokens),
        }
    return MethodConfig(
        method=args.method,
        max_refine_rounds=args.max_refine_rounds,
        limits=Limits(timeout_s=args.timeout_s, memory_mb=args.memory_mb),
        structured=not args.no_structured,
        fallback=args.fallback,
        repair_max_tokens=args.repair_max_tokens,
        **budget,
    )


def _run_info(
    args: argparse.Namespace,
    config: RunConfig,
    opts: EngineOptions,
    cfg: MethodConfig,
    stage_limits: StageLimits,
    method: Method,
) -> dict[str, Any]:
    """What the results' metadata records of this job (the model's part is added once the engine exists)."""
    prompts = prompt_ids(args.method, fallback=args.fallback, own=getattr(method, "prompt_templates", None))
    run_info = {
        "source": args.programs or args.dataset,
        "method": args.method,
        "engine": opts.kind,
        "workers": args.workers,
        "max_refine_rounds": cfg.max_refine_rounds,
        "max_tokens": args.max_tokens,
        "repair_max_tokens": cfg.repair_max_tokens,
        "stage_limits": {"llm": stage_limits.llm, "solve": stage_limits.solve},
        "config": config.document(),
        "provenance": {"input": _input(args), "prompts": prompts, **sampling(cfg, opts)},
    }
    if method.run_info():
        run_info[args.method] = method.run_info()
    return run_info


def run_llm(args: argparse.Namespace, config: RunConfig) -> int:
    """``--method NAME --engine ...``: the LLM path, for any registered method."""
    # the job (pyarrow, numpy) only when it runs: the CLI builds every command's parser, this one's included
    from symbolkg.jobs.pipeline.gates import StageLimits

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
        pool = _solver_pool(args) if method.needs_solver or method.wants_solver else None
        job = _MethodJob(
            args,
            loaded,
            out,
            _run_info(args, config, opts, cfg, stage_limits, method),
            opts,
            cfg,
            pool,
            method,
            stage_limits,
        )
        summary = run_with_engine(opts, job.run)
    except EngineDeadError as exc:
        print(f"symbolkg solve: the LLM engine died: {exc}; finished rows are saved, rerun to resume", file=sys.stderr)
        return 1
    except InputError as exc:  # a bad record met without --skip-bad: the rows before it are saved
        return bad_input(args, exc, loaded)
    finally:
        method.close()  # idempotent: the job closes it too, unless it never started
        if pool is not None:
            pool.close()
    finish_input(loaded)
    _print_summary(summary, out)
    return 0


@dataclass(frozen=True)
class _MethodJob:
    """One method job, run once its engine exists (the model's name and files' hash go into the metadata).

    Attributes:
        args: the resolved settings; problems: the input stream (read once, as the job goes);
        out: ``--out``; run_info: the metadata but the model's (:func:`_run_info`); opts: the engine's
        options; cfg: the shared method settings; pool: the solver pool, if the method uses one;
        method: the method, built from its flags; stage_limits: the stage gates.
    """

    args: argparse.Namespace
    problems: Iterable[Problem]  # read once, as the job goes
    out: Path
    run_info: dict[str, Any]
    opts: EngineOptions
    cfg: MethodConfig
    pool: SolverPool | None
    method: Method
    stage_limits: StageLimits

    async def run(self, engine: LLMEngine) -> SolveSummary:
        """The method job on ``engine``, metered.

        The request log that `symbolkg profile` reads streams beside the results.
        """
        # the job (pyarrow, numpy) only when it runs: the CLI builds every command's parser, this one's included
        from symbolkg.actors.engines.metered import MeteredEngine
        from symbolkg.jobs.pipeline.method_job import run_method_job  # as above
        from symbolkg.jobs.pipeline.store import ResultStore  # as above

        model = await asyncio.to_thread(model_record, engine.model, self.opts)  # hashing a model's files: once, slow
        info = {**self.run_info, "model": engine.model, "provenance": {**self.run_info["provenance"], "model": model}}
        store = ResultStore(self.out, run_info=info, shard=shard_of(self.args))
        metered = MeteredEngine(engine, log_to=store.path)
        args = self.args
        try:
            return await run_method_job(
                self.problems,
                store,
                self.cfg,
                metered,
                self.pool,
                max_in_flight=args.max_in_flight,
                progress=not args.no_progress,
                method=self.method,
                stage_limits=self.stage_limits,
                group_contexts=not args.no_group_contexts,
            )
        finally:
            metered.flush_log()


def _print_summary(summary: SolveSummary, out: Path) -> None:
    print(f"{summary.solved} solved this session, {summary.skipped_done} already done; results: {out}", file=sys.stderr)
    for g in summary.gates:
        if g.passes:
            print(
                f"  {g.stage} gate (limit {g.limit or 'none'}): {g.passes} calls, at most {g.peak_running} inside and "
                f"{g.peak_waiting} waiting; wait p95 {g.p95_wait_s:.2f} s, max {g.max_wait_s:.2f} s",
                file=sys.stderr,
            )
    _print_report(out, summary)


REPORT_INLINE_MAX = 200_000
"""Runs with more problems than this end with a pointer to ``symbolkg report`` instead of the table:
the table reads every row, and the driver's memory should follow the job's work in flight."""


def _print_report(out: Path, summary: SolveSummary) -> None:
    """The run's report table on stdout (the union of its shards), or for a big run how to get it."""
    # the job (pyarrow, numpy) only when it runs: the CLI builds every command's parser, this one's included
    from symbolkg.jobs.inspection.report import format_table, summarize  # as above
    from symbolkg.jobs.pipeline.store import read_run  # as above

    if summary.total > REPORT_INLINE_MAX:
        print(f"{summary.total} problems: run `symbolkg report {out}` for the table")
        return
    table, meta = read_run(out)
    print(format_table(summarize(table, meta)))
