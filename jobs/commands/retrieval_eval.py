"""``symbolkg retrieval-eval``: Recall@2/5 and latency of a retrieval method on a multi-hop QA set.

The evaluation is :mod:`symbolkg.jobs.evaluations.retrieval`; this is its command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from symbolkg.actors.engines.base import EngineDeadError
from symbolkg.actors.engines.factory import EngineOptions
from symbolkg.jobs.commands.common import DATA_DIR_HELP, add_llm_options, llm_options, resolve_dataset, run_with_engine
from symbolkg.jobs.datasets.records import InputError

if TYPE_CHECKING:
    from symbolkg.jobs.evaluations.retrieval import EvalReport, MultihopQuestion, PassageRetriever, QuestionResult
    from symbolkg.retrieval.embed_cache import EmbeddingCache


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retrieval-eval", help="Recall@2/5 and latency of bm25 / dense / hybrid retrieval on multi-hop QA"
    )
    p.add_argument(
        "--dataset",
        required=True,
        help="multihop/hotpotqa, multihop/2wikimultihopqa or multihop/musique (or the short name)",
    )
    p.add_argument(
        "--method", choices=("bm25", "dense", "hybrid"), default="hybrid", help="retrieval method (default hybrid)"
    )
    p.add_argument("--limit", type=int, help="evaluate only the first N questions (the pool is always the whole set)")
    p.add_argument("--data-dir", help=DATA_DIR_HELP)
    p.add_argument(
        "--embedder",
        choices=("minilm", "bge-m3", "hashing"),
        default="minilm",
        help="dense model (default minilm: all-MiniLM-L6-v2 from its PyPI package, offline)",
    )
    p.add_argument("--embedder-path", help="local model folder (required for bge-m3)")
    p.add_argument(
        "--cache-dir",
        default="runs/retrieval-cache",
        help="passage embedding cache (default runs/retrieval-cache; '' = none)",
    )
    p.add_argument("--threads", type=int, help="torch and FAISS CPU threads (default: the libraries' own)")
    p.add_argument("--out", help="write one JSON line per question (ranked passage keys, gold, recall, answer)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    g = p.add_argument_group("answers (optional)")
    g.add_argument("--answer", action="store_true", help="also have the LLM answer from the top 5 passages (EM / F1)")
    add_llm_options(g, "--answer")
    g.add_argument("--max-tokens", type=int, default=32, help="most generated tokens per answer (default 32)")
    p.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"symbolkg retrieval-eval: {message}", file=sys.stderr)
    return 2


def _check_flags(args: argparse.Namespace) -> str:
    """The dataset's registry name; sets ``--threads``. Raises ValueError on a bad flag."""
    # the job only when the command runs (FAISS, pyarrow, pandas, torch): the CLI builds every command's parser
    from symbolkg.jobs.evaluations.retrieval import MULTIHOP_DATASETS
    from symbolkg.retrieval.embed import set_cpu_threads  # as above

    dataset = resolve_dataset(args.dataset, args.data_dir)
    if dataset not in MULTIHOP_DATASETS:
        raise ValueError(f"{args.dataset!r} is not a multi-hop QA set; expected one of {', '.join(MULTIHOP_DATASETS)}")
    if args.limit is not None and args.limit < 1:
        raise ValueError("--limit must be >= 1")
    if args.threads is not None:
        set_cpu_threads(args.threads)
    return dataset  # type: ignore[return-value]  # a multi-hop name


def run(args: argparse.Namespace) -> int:
    # the job only when the command runs (FAISS, pyarrow, pandas, torch): the CLI builds every command's parser
    from symbolkg.jobs.datasets.registry import load_dataset
    from symbolkg.jobs.evaluations.retrieval import (  # as above
        PassageRetriever,
        build_pool,
        evaluate_retrieval,
        summarize,
        write_results,
    )
    from symbolkg.retrieval.embed import ModelNotFoundError, make_embedder  # as above
    from symbolkg.retrieval.embed_cache import EmbeddingCache  # as above

    try:
        dataset = _check_flags(args)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        problems = load_dataset(dataset, args.data_dir).problems  # the whole set: it is the retrieval pool
        passages, questions = build_pool(problems)
        embedder = make_embedder(args.embedder, args.embedder_path)
    except (FileNotFoundError, InputError, ValueError, ModelNotFoundError) as exc:
        return _fail(str(exc))
    opts = None
    if args.answer:
        try:  # checked before the (slow) retrieval
            opts = llm_options(args)
        except ValueError as exc:
            return _fail(str(exc))
    questions = questions[: args.limit] if args.limit else questions
    cache = EmbeddingCache(args.cache_dir, embedder) if args.cache_dir else None
    retriever = PassageRetriever(passages, embedder, cache=cache, progress=not args.no_progress)
    results = evaluate_retrieval(retriever, questions, args.method, progress=not args.no_progress)
    report = summarize(dataset, args.method, retriever, results, cache)
    if opts is not None:
        try:
            report = _answer(args, opts, dataset, retriever, questions, results, cache)
        except EngineDeadError as exc:
            print(f"symbolkg retrieval-eval: the LLM engine died: {exc}", file=sys.stderr)
            return 1
    if args.out:
        write_results(args.out, results)
    print(json.dumps(report.to_dict()) if args.json else report.format())
    return 0


def _answer(
    args: argparse.Namespace,
    opts: EngineOptions,
    dataset: str,
    retriever: PassageRetriever,
    questions: list[MultihopQuestion],
    results: list[QuestionResult],
    cache: EmbeddingCache | None,
) -> EvalReport:
    """``--answer``: the LLM answers each question from its top passages; the report with EM / F1 and tokens."""
    # the job only when the command runs (FAISS, pyarrow, pandas, torch): the CLI builds every command's parser
    from symbolkg.jobs.evaluations.retrieval import answer_questions, summarize

    async def answer(engine) -> tuple[int, int, str]:
        prompt_tokens, completion_tokens = await answer_questions(
            engine, retriever, questions, results, max_tokens=args.max_tokens, progress=not args.no_progress
        )
        return prompt_tokens, completion_tokens, engine.model

    prompt_tokens, completion_tokens, model = run_with_engine(opts, answer)
    report = summarize(dataset, args.method, retriever, results, cache)
    report.answer_model, report.prompt_tokens, report.completion_tokens = model, prompt_tokens, completion_tokens
    return report
