"""Multi-hop retrieval quality: Recall@2/5 and latency of BM25, dense and the LKG hybrid, per dataset.

The same code path as ``symbolkg retrieval-eval`` (jobs/evaluations/retrieval.py), run for every dataset and
method in one process, so one pool and one set of embeddings serve the three methods. Optionally
the embedded LLM answers ``--answer-limit`` questions per dataset from each method's top 5
passages (EM / F1).

    python benchmarks/multihop_retrieval.py [--datasets hotpotqa,2wikimultihopqa,musique]
        [--threads 1] [--answer-limit 100] [--answer-methods hybrid,bm25]

Writes benchmarks/out/multihop_retrieval.json and .png and prints a table. These are small dev
samples (HotpotQA 685, 2Wiki 164, MuSiQue 292 questions): not comparable to the papers' tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from symbolkg.jobs.datasets.registry import load_dataset  # noqa: E402
from symbolkg.jobs.evaluations.retrieval import (  # noqa: E402
    METHODS,
    PassageRetriever,
    answer_questions,
    build_pool,
    evaluate_retrieval,
    summarize,
)
from symbolkg.retrieval.embed import make_embedder, set_cpu_threads  # noqa: E402
from symbolkg.retrieval.embed_cache import EmbeddingCache  # noqa: E402

OUT = ROOT / "benchmarks" / "out"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(METHODS)
    for ax, metric in zip(axes, ("recall@2", "recall@5"), strict=True):
        for j, method in enumerate(METHODS):
            values = [
                next((r[metric] for r in rows if r["dataset"] == d and r["method"] == method), 0) for d in datasets
            ]
            bars = ax.bar([i + j * width for i in range(len(datasets))], values, width, label=method)
            ax.bar_label(bars, fmt="%.2f", fontsize=7)
        ax.set_xticks([i + width for i in range(len(datasets))], [d.split("/")[-1] for d in datasets])
        ax.set_ylim(0, 1)
        ax.set_title(f"{metric} of gold supporting paragraphs (pooled corpus)")
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    asyncio.run(main_async())


async def main_async() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="hotpotqa,2wikimultihopqa,musique")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--limit", type=int, default=None, help="questions per dataset (default all)")
    ap.add_argument("--threads", type=int, default=1, help="torch / FAISS threads (default 1: latency on a shared box)")
    ap.add_argument("--cache-dir", default=str(ROOT / "runs" / "retrieval-cache"))
    ap.add_argument("--answer-limit", type=int, default=0, help="questions per dataset the LLM answers (0: none)")
    ap.add_argument("--answer-methods", default="hybrid,bm25")
    ap.add_argument("--model", default=None, help="vLLM model (default: the embedded SmolLM2-135M-Instruct)")
    ap.add_argument("--llm-cache", default=str(ROOT / "runs" / "completions"))
    args = ap.parse_args()
    set_cpu_threads(args.threads)
    embedder = make_embedder("minilm")
    rows: list[dict] = []
    engine = None
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    load_start = os.getloadavg()
    for name in args.datasets.split(","):
        dataset = f"multihop/{name}"
        passages, questions = build_pool(load_dataset(dataset, args.data_dir).problems)
        questions = questions[: args.limit] if args.limit else questions
        cache = EmbeddingCache(args.cache_dir, embedder)
        retriever = PassageRetriever(passages, embedder, cache=cache, progress=True)
        for method in METHODS:
            results = evaluate_retrieval(retriever, questions, method)
            report = summarize(dataset, method, retriever, results, cache)
            if args.answer_limit and method in args.answer_methods.split(","):
                if engine is None:
                    from symbolkg.actors.engines.factory import EngineOptions, make_engine

                    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
                    engine = make_engine(EngineOptions(kind="vllm", model=args.model, cache_dir=args.llm_cache))
                subset = questions[: args.answer_limit]
                t0 = time.perf_counter()
                p_tok, c_tok = await answer_questions(engine, retriever, subset, results[: len(subset)], progress=True)
                report = summarize(dataset, method, retriever, results, cache)
                report.answer_model, report.prompt_tokens, report.completion_tokens = engine.model, p_tok, c_tok
                report.extra = {"answered": len(subset), "answer_seconds": round(time.perf_counter() - t0, 1)}
            row = report.to_dict()
            rows.append(row)
            print(report.format(), flush=True)
    if engine is not None:
        await engine.close()
    OUT.mkdir(parents=True, exist_ok=True)
    meta = {
        "started": started,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
        "threads": args.threads,
        "command": " ".join(sys.argv),
    }
    (OUT / "multihop_retrieval.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    plot(rows, OUT / "multihop_retrieval.png")
    print(f"\n{'dataset':<28}{'method':<8}{'R@2':>7}{'R@5':>7}{'p50 ms':>9}{'p95 ms':>9}{'EM':>7}{'F1':>7}")
    for r in rows:
        em = f"{r['answer_em']:.3f}" if "answer_em" in r else "-"
        f1 = f"{r['answer_f1']:.3f}" if "answer_f1" in r else "-"
        print(
            f"{r['dataset']:<28}{r['method']:<8}{r['recall@2']:>7.3f}{r['recall@5']:>7.3f}"
            f"{r['p50_ms']:>9.1f}{r['p95_ms']:>9.1f}{em:>7}{f1:>7}"
        )


if __name__ == "__main__":
    main()
