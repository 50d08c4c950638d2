"""The ``symbolkg`` command line."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable, TypeVar

from symbolkg.actors.engines.factory import ENGINES
from symbolkg.jobs.pools import make_pool
from symbolkg.solvers.outcomes import Limits

if TYPE_CHECKING:
    from symbolkg.actors.engines.base import LLMEngine
    from symbolkg.actors.engines.factory import EngineOptions
    from symbolkg.jobs.pipeline.solve import SolveSummary

T = TypeVar("T")


def _cmd_datasets(args: argparse.Namespace) -> int:
    from symbolkg.jobs.datasets import dataset_counts, default_data_dir

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


def _resolve_dataset(name: str | None) -> str | None:
    """Exact registry name, else ``logiclm/<name>``, else a unique ``*/<name>``."""
    from symbolkg.jobs.datasets import dataset_names

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
    from symbolkg.jobs.datasets import InputError, load_dataset, load_problems

    try:
        if args.dataset and "," in args.dataset and not args.programs:
            return _load_mixed(args)
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


def _load_mixed(args: argparse.Namespace):  # -> LoadResult | None
    """``--dataset A,B,...``: the first ``--limit`` problems of each, interleaved round-robin (a mixed stream)."""
    from itertools import zip_longest

    from symbolkg.jobs.datasets import LoadResult, load_dataset

    names = [_resolve_dataset(n.strip()) for n in args.dataset.split(",") if n.strip()]
    if len(set(names)) != len(names):
        raise ValueError(f"--dataset names a set twice: {args.dataset}")
    parts = [load_dataset(n, args.data_dir, skip_bad=args.skip_bad, limit=args.limit)  # type: ignore[arg-type]
             for n in names]
    args.dataset = ",".join(names)  # type: ignore[arg-type]
    mixed = [p for row in zip_longest(*(part.problems for part in parts)) for p in row if p is not None]
    loaded = LoadResult(mixed, [e for part in parts for e in part.errors], [n for part in parts for n in part.notes])
    for note in loaded.notes:
        print(f"note: {note}", file=sys.stderr)
    for err in loaded.errors:
        print(f"skipped bad row: {err}", file=sys.stderr)
    return loaded


def _cmd_solve(args: argparse.Namespace) -> int:
    if args.method != "recorded" or args.engine:
        return _cmd_solve_llm(args)
    from symbolkg.jobs.report import format_table, summarize
    from symbolkg.jobs.pipeline.solve import run_solve
    from symbolkg.jobs.pipeline.store import ResultStore, read_run

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
    pool = make_pool(args)
    try:
        summary = run_solve(problems, store, pool, limits=limits, progress=not args.no_progress,
                            corrections=not args.no_corrections, cross_check=args.cross_check)
    finally:
        pool.close()
    print(f"{summary.solved} solved this session, {summary.skipped_done} already done; results: {out}", file=sys.stderr)
    if args.cross_check:
        print(f"cross-check (Z3): {summary.cross_checked} FOL rows, {summary.disagreements} disagreements, "
              f"{summary.cross_undecided} without two answers (trace.cross_check.agrees is null)")
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


def _quiet_vllm() -> None:
    """Keep vLLM's start-up chatter off a batch job's console (the progress bar and report stay).

    vLLM logs every start-up step at INFO and CPU-build notes at WARNING, and its imports raise
    torch FutureWarnings. This is the process entry point, so it may set the default; a user's
    ``VLLM_LOGGING_LEVEL`` wins.
    """
    import warnings

    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"vllm(\.|$)")


def _run_with_engine(opts: "EngineOptions", use: "Callable[[LLMEngine], Awaitable[T]]") -> "T":
    """Start the engine ``opts`` describes, ``await use(engine)``, close the engine; return the result.

    One event loop for the whole job (vLLM's async engine is bound to the loop it started on).
    Raises :class:`~symbolkg.actors.engines.base.EngineDeadError` from ``use``; each command reports it.
    """
    import asyncio

    from symbolkg.actors.engines.factory import make_engine

    _quiet_vllm()

    async def main_async():
        engine = make_engine(opts)
        try:
            return await use(engine)
        finally:
            await engine.close()

    return asyncio.run(main_async())


def _cmd_solve_llm(args: argparse.Namespace) -> int:
    """``--method NAME --engine ...``: the LLM path, for any registered method."""
    from symbolkg.actors.engines.base import EngineDeadError, SamplingParams
    from symbolkg.actors.engines.factory import EngineOptions
    from symbolkg.jobs import methods
    from symbolkg.jobs.datasets import default_data_dir
    from symbolkg.jobs.pipeline.gates import StageLimits
    from symbolkg.jobs.methods import MethodConfig
    from symbolkg.jobs.pipeline.runner import run_method_job
    from symbolkg.jobs.report import format_table, summarize
    from symbolkg.jobs.pipeline.store import ResultStore, read_run

    if args.method == "recorded":
        print(f"symbolkg solve: --engine needs --method {' or '.join(methods.names())}", file=sys.stderr)
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
                             gpu_memory_utilization=args.gpu_memory_utilization, max_model_len=args.max_model_len,
                             max_num_seqs=args.max_num_seqs,
                             actor=args.llm_actor, ray_address=args.ray_address, restarts=args.llm_restarts,
                             actors=args.llm_actors, placement_strategy=args.placement_strategy,
                             placement_timeout_s=args.placement_timeout_s,
                             data_dir=str(default_data_dir(args.data_dir)) if args.engine == "gold" else None)
        budget = {}
        if args.max_tokens is not None:
            if args.max_tokens < 1:
                raise ValueError(f"--max-tokens must be >= 1, got {args.max_tokens}")
            budget = {"formulate_params": SamplingParams(max_tokens=args.max_tokens),
                      "cot_params": SamplingParams(max_tokens=args.max_tokens)}
        cfg = MethodConfig(method=args.method, max_refine_rounds=args.max_refine_rounds,
                           limits=Limits(timeout_s=args.timeout_s, memory_mb=args.memory_mb),
                           structured=not args.no_structured, fallback=args.fallback, **budget)
        stage_limits = StageLimits.parse(args.stage_limit)
        method = methods.get(args.method).from_args(args)
    except ValueError as exc:
        print(f"symbolkg solve: {exc}", file=sys.stderr)
        return 2
    run_info = {"source": args.programs or args.dataset, "method": args.method, "engine": opts.kind,
                "model": args.model, "workers": args.workers, "max_refine_rounds": cfg.max_refine_rounds,
                "max_tokens": args.max_tokens, "stage_limits": {"llm": stage_limits.llm, "solve": stage_limits.solve}}
    if method.run_info():
        run_info[args.method] = method.run_info()
    pool = None

    async def job(engine: "LLMEngine") -> "SolveSummary":
        from symbolkg.actors.engines.metered import MeteredEngine, write_request_log

        metered = MeteredEngine(engine)  # the request log `symbolkg profile` reads
        try:
            return await run_method_job(loaded.problems, store, cfg, metered, pool, max_in_flight=args.max_in_flight,
                                        progress=not args.no_progress, method=method, stage_limits=stage_limits,
                                        group_contexts=not args.no_group_contexts)
        finally:
            write_request_log(out, metered.records)

    try:
        store = ResultStore(out, run_info=run_info)
        pool = make_pool(args) if method.needs_solver or method.wants_solver else None
        summary = _run_with_engine(opts, job)
    except EngineDeadError as exc:
        print(f"symbolkg solve: the LLM engine died: {exc}; finished rows are saved, rerun to resume", file=sys.stderr)
        return 1
    finally:
        method.close()  # idempotent: the job closes it too, unless it never started
        if pool is not None:
            pool.close()
    print(f"{summary.solved} solved this session, {summary.skipped_done} already done; results: {out}",
          file=sys.stderr)
    for g in summary.gates:
        if g.passes:
            print(f"  {g.stage} gate (limit {g.limit or 'none'}): {g.passes} calls, at most {g.peak_running} inside and "
                  f"{g.peak_waiting} waiting; wait p95 {g.p95_wait_s:.2f} s, max {g.max_wait_s:.2f} s", file=sys.stderr)
    table, meta = read_run(out)
    print(format_table(summarize(table, meta)))
    return 0


def _cmd_lkg_build(args: argparse.Namespace) -> int:
    """``symbolkg lkg build``: extract the LKGs of a dataset's or corpus' contexts into a store."""
    from symbolkg.actors.engines.base import EngineDeadError, SamplingParams
    from symbolkg.actors.engines.factory import EngineOptions
    from symbolkg.jobs.lkg import LKGConfig, run_lkg_build
    from symbolkg.retrieval.lkg.store import LKGStore

    if bool(args.dataset) == bool(args.corpus):
        print("symbolkg lkg build: give exactly one of --dataset NAME and --corpus FILE", file=sys.stderr)
        return 2
    if args.limit is not None and args.limit < 1:
        print("symbolkg lkg build: --limit must be >= 1", file=sys.stderr)
        return 2
    args.programs = args.corpus
    args.skip_bad = False
    loaded = _load_input(args)
    if loaded is None:
        return 2
    try:
        opts = EngineOptions(kind=args.engine, model=args.model, cache_dir=args.cache, openai_url=args.openai_url,
                             max_model_len=args.max_model_len, tensor_parallel_size=args.tensor_parallel_size,
                             actor=args.llm_actor, ray_address=args.ray_address)
        cfg = LKGConfig(max_repair_rounds=args.max_repair_rounds, chunk_chars=args.chunk_chars,
                        params=SamplingParams(max_tokens=args.max_tokens), structured=not args.no_structured)
    except ValueError as exc:
        print(f"symbolkg lkg build: {exc}", file=sys.stderr)
        return 2
    store = LKGStore(args.store)
    try:
        report = _run_with_engine(opts, lambda engine: run_lkg_build(loaded.problems, store, engine, cfg,
                                                                     max_in_flight=args.max_in_flight,
                                                                     progress=not args.no_progress))
    except EngineDeadError as exc:
        print(f"symbolkg lkg build: the LLM engine died: {exc}; finished graphs are stored, rerun to resume",
              file=sys.stderr)
        return 1
    print(json.dumps(report.to_dict()) if args.json else report.format())
    return 0


def _cmd_lkg_show(args: argparse.Namespace) -> int:
    from symbolkg.jobs.lkg import show
    from symbolkg.retrieval.lkg.store import LKGStore

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


def _cmd_retrieve(args: argparse.Namespace) -> int:
    """``symbolkg retrieve``: hybrid retrieval (and optional LLM pruning) over an LKG store."""
    from symbolkg.retrieval.anchors import AnchorConfig
    from symbolkg.retrieval.embed import ModelNotFoundError, make_embedder
    from symbolkg.retrieval.hull import HullConfig
    from symbolkg.retrieval.hybrid import HybridRetriever, store_subgraph
    from symbolkg.retrieval.index import node_text
    from symbolkg.retrieval.lkg.store import LKGStore
    from symbolkg.retrieval.prune import PruneConfig

    def fail(message: str) -> int:
        print(f"symbolkg retrieve: {message}", file=sys.stderr)
        return 2

    if not (Path(args.store) / "contexts").is_dir():
        return fail(f"no LKG store at {args.store} (build one with `symbolkg lkg build`)")
    try:
        hull_config = HullConfig(k=args.hops, max_nodes=args.max_nodes)
        anchor_config = AnchorConfig(dense_threshold=args.dense_threshold)
        prune = PruneConfig(enabled=args.prune, cap=args.prune_cap)
        opts = _llm_options(args) if args.prune else None
        embedder = make_embedder(args.embedder, args.embedder_path)
    except (ValueError, ModelNotFoundError) as exc:
        return fail(str(exc))
    store = LKGStore(args.store)
    retriever = HybridRetriever.from_store(store, embedder, anchor_config=anchor_config, hull_config=hull_config)
    result = retriever.retrieve(args.query)  # lexical query entities, no LLM
    entities, anchors, hull = result.entities, tuple(a.node_id for a in result.anchors), tuple(result.node_ids)
    kept, extra = hull, {"seconds": {k: round(v, 6) for k, v in result.seconds.items()}}
    reasons = {a.node_id: f"{a.source} {a.score:.2f}" + (f" ({a.mention})" if a.mention else "") for a in result.anchors}
    hops = result.hull.distances
    if opts is not None:
        from symbolkg.actors.engines.base import EngineDeadError
        from symbolkg.jobs.pipeline.retrieve import retrieve

        try:
            outcome = _run_with_engine(opts, lambda engine: retrieve(engine, retriever,
                                                                     lambda ids: store_subgraph(store, ids), args.query,
                                                                     problem_id="query", prune=prune))
        except EngineDeadError as exc:
            print(f"symbolkg retrieve: the LLM engine died: {exc}", file=sys.stderr)
            return 1
        entities, anchors, kept = outcome.entities, outcome.anchors, outcome.pruned
        hull = tuple(dict.fromkeys(outcome.hull + hull))
        extra = {"entities_source": outcome.entities_source, "prune_source": outcome.prune_source,
                 "errors": outcome.errors, "prompt_tokens": outcome.prompt_tokens,
                 "completion_tokens": outcome.completion_tokens}
    graph = store_subgraph(store, hull)
    nodes = [{"id": n.id, "type": n.node_type, "text": node_text(n), "hop": hops.get(n.id),
              "anchor": reasons.get(n.id, "anchor" if n.id in anchors else None), "kept": n.id in kept}
             for n in graph.nodes]
    if args.json:
        print(json.dumps({"query": args.query, "entities": list(entities), "anchors": list(anchors),
                          "hull": list(hull), "kept": list(kept), "nodes": nodes, **extra}))
        return 0
    print(f"query: {args.query}\nentities: {', '.join(entities) or '-'}\n"
          f"{len(anchors)} anchors, {len(hull)} nodes within {args.hops} hops, {len(kept)} kept")
    for node in nodes:
        mark = "*" if node["kept"] else " "
        why = f"  <- {node['anchor']}" if node["anchor"] else ""
        print(f" {mark} hop {node['hop']}  {node['type']:<10} {node['text'][:100]}{why}")
    return 0


def _cmd_retrieval_eval(args: argparse.Namespace) -> int:
    """``symbolkg retrieval-eval``: Recall@2/5 and latency of a retrieval method on a multi-hop QA set."""
    from symbolkg.jobs.datasets import InputError, load_dataset
    from symbolkg.jobs.multihop import (MULTIHOP_DATASETS, PassageRetriever, answer_questions, build_pool, evaluate_retrieval,
                               summarize, write_results)
    from symbolkg.retrieval.embed import ModelNotFoundError, make_embedder, set_cpu_threads
    from symbolkg.retrieval.embed_cache import EmbeddingCache

    def fail(message: str) -> int:
        print(f"symbolkg retrieval-eval: {message}", file=sys.stderr)
        return 2

    try:
        dataset = _resolve_dataset(args.dataset)
    except ValueError as exc:
        return fail(str(exc))
    if dataset not in MULTIHOP_DATASETS:
        return fail(f"{args.dataset!r} is not a multi-hop QA set; expected one of {', '.join(MULTIHOP_DATASETS)}")
    if args.limit is not None and args.limit < 1:
        return fail("--limit must be >= 1")
    if args.threads is not None:
        try:
            set_cpu_threads(args.threads)
        except ValueError as exc:
            return fail(str(exc))
    try:
        problems = load_dataset(dataset, args.data_dir).problems  # the whole set: it is the retrieval pool
        passages, questions = build_pool(problems)
        embedder = make_embedder(args.embedder, args.embedder_path)
    except (FileNotFoundError, InputError, ValueError, ModelNotFoundError) as exc:
        return fail(str(exc))
    opts = None
    if args.answer:
        try:  # checked before the (slow) retrieval
            opts = _llm_options(args)
        except ValueError as exc:
            return fail(str(exc))
    questions = questions[:args.limit] if args.limit else questions
    cache = EmbeddingCache(args.cache_dir, embedder) if args.cache_dir else None
    retriever = PassageRetriever(passages, embedder, cache=cache, progress=not args.no_progress)
    results = evaluate_retrieval(retriever, questions, args.method, progress=not args.no_progress)
    report = summarize(dataset, args.method, retriever, results, cache)
    if opts is not None:
        from symbolkg.actors.engines.base import EngineDeadError

        async def answer(engine) -> tuple[int, int, str]:
            prompt_tokens, completion_tokens = await answer_questions(
                engine, retriever, questions, results, max_tokens=args.max_tokens, progress=not args.no_progress)
            return prompt_tokens, completion_tokens, engine.model

        try:
            prompt_tokens, completion_tokens, model = _run_with_engine(opts, answer)
        except EngineDeadError as exc:
            print(f"symbolkg retrieval-eval: the LLM engine died: {exc}", file=sys.stderr)
            return 1
        report = summarize(dataset, args.method, retriever, results, cache)
        report.answer_model, report.prompt_tokens, report.completion_tokens = model, prompt_tokens, completion_tokens
    if args.out:
        write_results(args.out, results)
    print(json.dumps(report.to_dict()) if args.json else report.format())
    return 0


def _cmd_router_eval(args: argparse.Namespace) -> int:
    """``symbolkg router-eval``: router accuracy on the mixed stream of the five logic datasets."""
    from symbolkg.jobs.datasets import InputError
    from symbolkg.jobs.router_eval import evaluate_router, mixed_stream
    from symbolkg.retrieval.lkg.store import LKGStore

    if args.per_dataset < 1:
        print("symbolkg router-eval: --per-dataset must be >= 1", file=sys.stderr)
        return 2
    if args.store and not (Path(args.store) / "contexts").is_dir():
        print(f"symbolkg router-eval: no LKG store at {args.store}", file=sys.stderr)
        return 2
    try:
        stream = mixed_stream(args.per_dataset, args.data_dir)
    except (FileNotFoundError, InputError, ValueError) as exc:
        print(f"symbolkg router-eval: {exc}", file=sys.stderr)
        return 2
    store = LKGStore(args.store) if args.store else None
    votes = None
    if args.llm_vote:
        from symbolkg.actors.engines.base import EngineDeadError
        from symbolkg.jobs.router_eval import llm_votes

        try:
            opts = _llm_options(args)
        except ValueError as exc:
            print(f"symbolkg router-eval: {exc}", file=sys.stderr)
            return 2
        try:
            votes = _run_with_engine(opts, lambda engine: llm_votes(engine, [p for _, p in stream]))
        except EngineDeadError as exc:
            print(f"symbolkg router-eval: the LLM engine died: {exc}", file=sys.stderr)
            return 1
    report, _ = evaluate_router(stream, store, use_options=not args.no_option_features, votes=votes)
    print(json.dumps(report.to_dict()) if args.json else report.format())
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from symbolkg.jobs.report import default_plot_path, report

    plot = None if args.no_plot else (args.plot or default_plot_path(args.run))
    try:
        print(report(args.run, as_json=args.json, plot=plot))
    except FileNotFoundError as exc:
        print(f"symbolkg report: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_profile(args: argparse.Namespace) -> int:
    from symbolkg.jobs.profile import format_profile, profile_run

    try:
        report = profile_run(args.run, args.out)
    except FileNotFoundError as exc:
        print(f"symbolkg profile: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report) if args.json else format_profile(report))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from symbolkg.solvers.runtime.worker import main as worker_main

    return worker_main(["--check"])


def _cmd_mcp_serve(args: argparse.Namespace) -> int:
    from symbolkg.jobs.mcp_server import main as mcp_main

    return mcp_main(args)


def _add_llm_options(group, purpose: str) -> None:
    """The engine options of a command whose LLM step is optional (``--prune``, ``--answer``, ``--llm-vote``)."""
    group.add_argument("--engine", choices=("vllm", "openai", "replay"), default="vllm",
                       help=f"LLM backend for {purpose} (default vllm with the embedded SmolLM2-135M-Instruct)")
    group.add_argument("--model", help="model name or path (see `symbolkg solve --help`)")
    group.add_argument("--llm-cache", help="completion cache dir (written through; read by --engine replay)")
    group.add_argument("--openai-url", help="base URL of an OpenAI-compatible server (--engine openai)")


def _llm_options(args: argparse.Namespace) -> "EngineOptions":
    """The :class:`EngineOptions` of :func:`_add_llm_options`' flags. Raises ValueError on a bad combination."""
    from symbolkg.actors.engines.factory import EngineOptions

    return EngineOptions(kind=args.engine, model=args.model, cache_dir=args.llm_cache, openai_url=args.openai_url)


def build_parser() -> argparse.ArgumentParser:
    from symbolkg.jobs import methods

    parser = argparse.ArgumentParser(prog="symbolkg", description="Batch engine for verifiable logical reasoning.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("datasets", help="list the datasets it can load, with counts")
    p.add_argument("--data-dir", help="data root (default: $SYMBOLKG_DATA, else ../shared/data)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_datasets)

    p = sub.add_parser("solve", help="solve problems with given programs; write results Parquet (resumable)")
    p.add_argument("--programs", help="Logic-LM program file (JSON) or problems with programs (JSONL/Parquet)")
    p.add_argument("--dataset", help="dataset name (inferred from the ids of a Logic-LM program file); for the LLM "
                                     "methods also A,B,...: a mixed stream, --limit problems of each")
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
    p.add_argument("--cross-check", action="store_true",
                   help="recorded programs: also solve each logiclm-fol program with Z3 (language logiclm-fol-z3), "
                        "record trace.cross_check = {backend, answer, agrees} and print the disagreements")
    p.add_argument("--no-corrections", action="store_true",
                   help="solve recorded programs as given: the formalization checks (solvers/checks.py) still run "
                        "and are recorded in each row's trace, but their corrections are not applied")
    g = p.add_argument_group("LLM methods")
    registered = methods.names()
    g.add_argument("--method", choices=("recorded", *registered), default="recorded",
                   help="recorded: run the given programs (default); "
                        + "; ".join(f"{name}: {methods.get(name).summary}" for name in registered))
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
    for name in registered:  # each method's own flags, in a group of its own
        methods.get(name).add_arguments(p.add_argument_group(f"{name} method (--method {name})"))
    p.set_defaults(func=_cmd_solve)

    lkg = sub.add_parser("lkg", help="Logical Knowledge Graphs: build (offline extraction into a store), show")
    lkg_sub = lkg.add_subparsers(dest="lkg_command", required=True)
    p = lkg_sub.add_parser("build", help="extract the LKG of every distinct context into a Parquet store (cached, resumable)")
    src = p.add_argument_group("input (one of)")
    src.add_argument("--dataset", help="dataset name, e.g. folio or logiclm/folio (see `symbolkg datasets`)")
    src.add_argument("--corpus", help="JSONL/Parquet file of problems (id, context, ...) or a Logic-LM file")
    p.add_argument("--store", required=True, help="LKG store directory (also the cache: rerunning skips stored contexts)")
    p.add_argument("--limit", type=int, help="only the first N problems")
    p.add_argument("--data-dir", help="data root (default: $SYMBOLKG_DATA, else ../shared/data)")
    p.add_argument("--engine", choices=("vllm", "openai", "replay"), default="vllm",
                   help="LLM backend (default vllm with the embedded SmolLM2-135M-Instruct)")
    p.add_argument("--model", help="model name or path (see `symbolkg solve --help`)")
    p.add_argument("--cache", help="completion cache dir (written through; read by --engine replay)")
    p.add_argument("--openai-url", help="base URL of an OpenAI-compatible server (--engine openai)")
    p.add_argument("--max-repair-rounds", type=int, default=2, help="repair requests per chunk after a failed validation")
    p.add_argument("--chunk-chars", type=int, default=2000, help="longest chunk of a context in characters")
    p.add_argument("--max-tokens", type=int, default=1024, help="most generated tokens per extraction request")
    p.add_argument("--max-in-flight", type=int, default=64, help="contexts extracted concurrently (default 64)")
    p.add_argument("--no-structured", action="store_true", help="plain-text decoding instead of the JSON schema")
    p.add_argument("--tensor-parallel-size", type=int, default=1, help="vLLM tensor parallelism (GPUs per engine)")
    p.add_argument("--max-model-len", type=int, help="vLLM context length")
    p.add_argument("--llm-actor", action="store_true",
                   help="host the vLLM engine in a Ray actor (a GPU node of the cluster) instead of this process")
    p.add_argument("--ray-address", help="Ray cluster for --llm-actor (default: $RAY_ADDRESS or a local Ray)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=_cmd_lkg_build)
    p = lkg_sub.add_parser("show", help="draw one problem's graph (PNG needs Graphviz; HTML works without)")
    p.add_argument("--store", required=True, help="LKG store directory")
    p.add_argument("--id", required=True, help="problem id")
    p.add_argument("--out", required=True, help="FILE.png or FILE.html")
    p.set_defaults(func=_cmd_lkg_show)

    p = sub.add_parser("retrieve", help="hybrid retrieval over an LKG store: anchors, logical hull, optional LLM pruning")
    p.add_argument("--store", required=True, help="LKG store directory (from `symbolkg lkg build`)")
    p.add_argument("--query", required=True, help="the question")
    p.add_argument("--hops", type=int, default=2, help="hull depth k (default 2)")
    p.add_argument("--max-nodes", type=int, default=256, help="most hull nodes (default 256)")
    p.add_argument("--dense-threshold", type=float, default=0.35, help="least cosine of a dense anchor (default 0.35)")
    p.add_argument("--embedder", choices=("minilm", "bge-m3", "hashing"), default="minilm",
                   help="dense model (indexes are built on first use and kept in STORE/indexes/)")
    p.add_argument("--embedder-path", help="local model folder (required for bge-m3)")
    p.add_argument("--prune", action="store_true", help="ask the LLM for the query entities and to prune the hull")
    p.add_argument("--prune-cap", type=int, default=24, help="most nodes the pruning keeps (default 24)")
    _add_llm_options(p, "--prune")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_retrieve)

    p = sub.add_parser("retrieval-eval", help="Recall@2/5 and latency of bm25 / dense / hybrid retrieval on multi-hop QA")
    p.add_argument("--dataset", required=True,
                   help="multihop/hotpotqa, multihop/2wikimultihopqa or multihop/musique (or the short name)")
    p.add_argument("--method", choices=("bm25", "dense", "hybrid"), default="hybrid", help="retrieval method (default hybrid)")
    p.add_argument("--limit", type=int, help="evaluate only the first N questions (the pool is always the whole set)")
    p.add_argument("--data-dir", help="data root (default: $SYMBOLKG_DATA, else ../shared/data)")
    p.add_argument("--embedder", choices=("minilm", "bge-m3", "hashing"), default="minilm",
                   help="dense model (default minilm: all-MiniLM-L6-v2 from its PyPI package, offline)")
    p.add_argument("--embedder-path", help="local model folder (required for bge-m3)")
    p.add_argument("--cache-dir", default="runs/retrieval-cache",
                   help="passage embedding cache (default runs/retrieval-cache; '' = none)")
    p.add_argument("--threads", type=int, help="torch and FAISS CPU threads (default: the libraries' own)")
    p.add_argument("--out", help="write one JSON line per question (ranked passage keys, gold, recall, answer)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    g = p.add_argument_group("answers (optional)")
    g.add_argument("--answer", action="store_true", help="also have the LLM answer from the top 5 passages (EM / F1)")
    _add_llm_options(g, "--answer")
    g.add_argument("--max-tokens", type=int, default=32, help="most generated tokens per answer (default 32)")
    p.set_defaults(func=_cmd_retrieval_eval)

    p = sub.add_parser("router-eval", help="logic router accuracy on a mixed stream of the five Logic-LM datasets")
    p.add_argument("--per-dataset", type=int, default=100, help="problems per dataset (default 100; fewer if a set is smaller)")
    p.add_argument("--store", help="LKG store: add each problem's graph counts (constraints, rules, relations) as features")
    p.add_argument("--no-option-features", action="store_true",
                   help="ablation: hide the answer options (their format nearly names the dataset)")
    p.add_argument("--llm-vote", action="store_true", help="also ask the LLM; its vote overrules only weak feature rules")
    _add_llm_options(p, "--llm-vote")
    p.add_argument("--data-dir", help="data root (default: $SYMBOLKG_DATA, else ../shared/data)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_router_eval)

    p = sub.add_parser("report", help="accuracy, execution rate, errors by kind, timings of a run")
    p.add_argument("run", help="results Parquet written by `symbolkg solve`")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", help="per-stage latency plot (PNG) for runs with stage timings (default RUN_stages.png)")
    p.add_argument("--no-plot", action="store_true", help="do not write the stage plot")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("profile", help="per-stage latency, waits, LLM engine occupancy and throughput of a run, with plots")
    p.add_argument("run", help="results Parquet written by `symbolkg solve`")
    p.add_argument("--out", required=True, help="folder for profile.json, profile.md and the plots")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_profile)

    from symbolkg.jobs.bench import add_bench_parser

    add_bench_parser(sub)

    p = sub.add_parser("check", help="start a solver worker and run one program per native solver")
    p.set_defaults(func=_cmd_check)

    mcp = sub.add_parser("mcp", help="SWI-Prolog sessions as tools for agents: a Model Context Protocol server")
    mcp_sub = mcp.add_subparsers(dest="mcp_command", required=True)
    p = mcp_sub.add_parser("serve", help="serve the Prolog tools over stdio (default) or Streamable HTTP; see docs/MCP.md")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP: address to listen on (non-loopback needs a token)")
    p.add_argument("--port", type=int, default=8765, help="HTTP: port (the endpoint is /mcp)")
    p.add_argument("--token-file", help="HTTP: file holding the bearer token (else $SYMBOLKG_MCP_TOKEN)")
    p.add_argument("--max-sessions", type=int, default=64, help="Prolog sessions alive at once (LRU eviction beyond)")
    p.add_argument("--idle-ttl", type=float, default=1800.0, help="seconds before an unused session is closed")
    p.add_argument("--memory-mb", type=int, default=1024, help="address-space limit of each session's swipl process")
    p.add_argument("--solver-workers", type=int, default=1, help="solver worker processes for solve_program")
    p.set_defaults(func=_cmd_mcp_serve)

    from symbolkg.jobs import explain, logicgraph, verify

    logicgraph.add_parser(sub)
    verify.add_parser(sub)
    explain.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "workers", 1) < 1:
        print("symbolkg: --workers must be >= 1", file=sys.stderr)
        return 2
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
