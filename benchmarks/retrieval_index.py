"""Retrieval core at LKG scale: FAISS index build, query latency, recall, save/load, hull expansion, memory.

For each size (10^4 .. 10^6 nodes), in a fresh interpreter (so ``ru_maxrss`` is that size's peak):

* vectors: synthetic LKG-like node embeddings of the embedder's width (384, all-MiniLM-L6-v2):
  ``--latent-dim`` random directions mixed into 384 dims plus noise, L2-normalized (real text
  embeddings have a low intrinsic dimension; ``--latent-dim 0`` gives uniform random unit vectors,
  the worst case for HNSW). Queries are noisy copies of random nodes.
* index: :class:`retrieval.index.VectorIndex` with the default :class:`~retrieval.index.IndexConfig`
  (exact ``IndexFlatIP`` up to 50,000 vectors, HNSW above): build time, query latency p50 / p95
  for batches of 1 and of 256 queries, recall@10 against exact brute force (numpy) on 200 queries;
  save, memory-mapped load, and the latency of the first queries after the load.
* hull: :func:`retrieval.hull.logical_hull` on a synthetic graph of the same node count with ~3
  edges per node (rules and constraints MENTION / APPLY_TO entities, entities IS_A concepts and
  typed relations between entities): adjacency build time, latency of k = 1, 2, 3 hops from 5
  anchors, hull sizes.

    python benchmarks/retrieval_index.py [--sizes 10000,100000,1000000] [--threads N]

Writes benchmarks/out/retrieval_index.json and benchmarks/out/retrieval_index.png and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "out"
SEED = 1234
DIM = 384  # all-MiniLM-L6-v2
RELATIONS = ["LEFT_OF", "FATHER_OF", "OWNS", "NEXT_TO", "BEFORE", "LIKES"]
EDGE_TYPES = ["MENTIONS", "APPLIES_TO", "IS_A", *RELATIONS]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _unit(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def synthetic_vectors(n: int, latent_dim: int, rng: np.random.Generator, chunk: int = 100_000) -> np.ndarray:
    """``n`` unit vectors of width DIM, generated chunk by chunk (float32 throughout)."""
    out = np.empty((n, DIM), dtype=np.float32)
    mix = rng.standard_normal((latent_dim, DIM)).astype(np.float32) if latent_dim else None
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        if mix is None:
            block = rng.standard_normal((m, DIM), dtype=np.float32)
        else:
            block = rng.standard_normal((m, latent_dim), dtype=np.float32) @ mix
            block += 0.1 * np.sqrt(latent_dim) * rng.standard_normal((m, DIM), dtype=np.float32)
        out[start:start + m] = _unit(block)
    return out


def _latency(samples: list[float]) -> dict:
    a = np.sort(np.asarray(samples))
    return {"p50_ms": round(1000 * float(np.percentile(a, 50)), 3),
            "p95_ms": round(1000 * float(np.percentile(a, 95)), 3), "max_ms": round(1000 * float(a[-1]), 3)}


def exact_top_k(x: np.ndarray, q: np.ndarray, k: int, chunk: int = 200_000) -> np.ndarray:
    """Brute-force top-k rows by inner product (the reference), chunked over the data."""
    best_s = np.full((len(q), k), -np.inf, dtype=np.float32)
    best_i = np.full((len(q), k), -1, dtype=np.int64)
    for start in range(0, len(x), chunk):
        s = q @ x[start:start + chunk].T
        top = np.argpartition(-s, min(k, s.shape[1] - 1), axis=1)[:, :k]
        cand_s = np.concatenate([best_s, np.take_along_axis(s, top, axis=1)], axis=1)
        cand_i = np.concatenate([best_i, top + start], axis=1)
        keep = np.argsort(-cand_s, axis=1, kind="stable")[:, :k]
        best_s, best_i = np.take_along_axis(cand_s, keep, axis=1), np.take_along_axis(cand_i, keep, axis=1)
    return best_i


def synthetic_graph(n: int, rng: np.random.Generator):
    """Node types and ~3 edges per node as integer arrays (60% entities, 10% concepts, 20% rules, 10% constraints)."""
    from retrieval.hull import Adjacency

    kinds = rng.choice(4, size=n, p=[0.6, 0.1, 0.2, 0.1])
    names = np.array(["Entity", "Concept", "Rule", "Constraint"])
    entities, concepts = np.flatnonzero(kinds == 0), np.flatnonzero(kinds == 1)
    statements = np.flatnonzero(kinds >= 2)
    src, dst, code = [], [], []
    # Each rule / constraint MENTIONS or APPLIES_TO ~3 entities or concepts: ~0.9 edges per node.
    s = np.repeat(statements, 3)
    targets = np.where(rng.random(len(s)) < 0.8, rng.choice(entities, len(s)), rng.choice(concepts, len(s)))
    src.append(s), dst.append(targets), code.append(rng.integers(0, 2, len(s)))
    # Each entity IS_A one concept: 0.6 edges per node.
    src.append(entities), dst.append(rng.choice(concepts, len(entities))), code.append(np.full(len(entities), 2))
    # Typed relations between entities: the rest up to ~3 edges per node.
    m = 3 * n - sum(len(a) for a in src)
    src.append(rng.choice(entities, m)), dst.append(rng.choice(entities, m))
    code.append(rng.integers(3, len(EDGE_TYPES), m))
    ids = [f"{i:032x}" for i in range(n)]
    t0 = time.perf_counter()
    adj = Adjacency.from_arrays(ids, names[kinds].tolist(), np.concatenate(src), np.concatenate(dst),
                                np.concatenate(code), EDGE_TYPES)
    return adj, time.perf_counter() - t0


def run_child(n: int, latent_dim: int, trials: int, threads: int | None) -> dict:
    import faiss

    from retrieval.hull import HullConfig, logical_hull
    from retrieval.index import IndexConfig, VectorIndex

    if threads:
        faiss.omp_set_num_threads(threads)
    rng = np.random.default_rng(SEED)
    result: dict = {"nodes": n, "dim": DIM, "latent_dim": latent_dim, "faiss_threads": faiss.omp_get_max_threads()}
    rss0 = rss_mb()
    t0 = time.perf_counter()
    x = synthetic_vectors(n, latent_dim, rng)
    result["generate_seconds"] = round(time.perf_counter() - t0, 3)
    ids = [f"{i:032x}" for i in range(n)]
    rss_data = rss_mb()

    config = IndexConfig(device="cpu")
    t0 = time.perf_counter()
    index = VectorIndex(DIM, config, embedder="synthetic")
    index.add(x, ids)
    build_s = time.perf_counter() - t0
    result.update(kind=index.kind, build_seconds=round(build_s, 3), build_vectors_per_second=round(n / build_s),
                  index_rss_mb=round(rss_mb() - rss_data, 1), data_rss_mb=round(rss_data - rss0, 1),
                  hnsw_m=config.hnsw_m, ef_construction=config.ef_construction, ef_search=config.ef_search)

    picks = rng.choice(n, trials * 2 + 256 * 20, replace=True)
    queries = _unit(x[picks] + 0.03 * rng.standard_normal((len(picks), DIM), dtype=np.float32))  # cos ~0.85
    index.search(queries[:8], k=10)  # warm-up
    single = []
    for i in range(trials):
        t0 = time.perf_counter()
        index.search(queries[i:i + 1], k=10)
        single.append(time.perf_counter() - t0)
    batched = []
    for b in range(20):
        q = queries[trials + b * 256: trials + (b + 1) * 256]
        t0 = time.perf_counter()
        index.search(q, k=10)
        batched.append(time.perf_counter() - t0)
    result["query_batch_1"] = _latency(single)
    result["query_batch_256"] = _latency(batched)
    result["queries_per_second_batch_256"] = round(256 / float(np.median(batched)))

    probe = queries[-200:]
    t0 = time.perf_counter()
    truth = exact_top_k(x, probe, 10)
    result["exact_numpy_200_queries_seconds"] = round(time.perf_counter() - t0, 3)
    _, got = index.search_rows(probe, 10)
    result["recall_at_10"] = round(float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(truth, got)])), 4)
    if index.kind == "hnsw":
        for ef in (32, 64, 256):
            _, got = index.search_rows(probe, 10, ef_search=ef)
            t0 = time.perf_counter()
            for i in range(50):
                index.search_rows(probe[i:i + 1], 10, ef_search=ef)
            result[f"recall_at_10_ef{ef}"] = round(float(np.mean([len(set(a) & set(b)) / 10
                                                                  for a, b in zip(truth, got)])), 4)
            result[f"query_batch_1_ef{ef}_mean_ms"] = round(1000 * (time.perf_counter() - t0) / 50, 3)

    with tempfile.TemporaryDirectory(prefix="retrieval-bench-") as tmp:
        t0 = time.perf_counter()
        folder = index.save(Path(tmp) / "index")
        result["save_seconds"] = round(time.perf_counter() - t0, 3)
        result["index_file_mb"] = round(sum(f.stat().st_size for f in folder.iterdir()) / 2**20, 1)
        del index
        rss_before = rss_mb()
        t0 = time.perf_counter()
        loaded = VectorIndex.load(folder, mmap=True)
        result["load_mmap_seconds"] = round(time.perf_counter() - t0, 3)
        result["load_mmap_rss_mb"] = round(rss_mb() - rss_before, 1)
        first = []
        for i in range(20):
            t0 = time.perf_counter()
            loaded.search(queries[i:i + 1], k=10)
            first.append(time.perf_counter() - t0)
        result["query_after_load_batch_1"] = _latency(first)
        del loaded
    del x

    adj, adj_s = synthetic_graph(n, rng)
    result.update(graph_edges=adj.n_edges, adjacency_build_seconds=round(adj_s, 3))
    hull = {}
    for k in (1, 2, 3):
        samples, sizes, rules = [], [], []
        for _ in range(trials):
            anchors = [adj.node_ids[i] for i in rng.integers(0, n, 5)]
            t0 = time.perf_counter()
            h = logical_hull(adj, anchors, HullConfig(k=k))
            samples.append(time.perf_counter() - t0)
            sizes.append(len(h))
            rules.append(len(h.rules) + len(h.constraints))
        hull[f"k{k}"] = {**_latency(samples), "mean_nodes": round(float(np.mean(sizes)), 1),
                         "mean_rules_constraints": round(float(np.mean(rules)), 1)}
    result["hull_5_anchors"] = hull
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return result


def run_size(n: int, latent_dim: int, trials: int, threads: int | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="retrieval-bench-") as tmp:
        out = Path(tmp) / "child.json"
        cmd = [sys.executable, __file__, "--child", str(n), "--latent-dim", str(latent_dim), "--trials", str(trials),
               "--child-out", str(out)]
        if threads:
            cmd += ["--threads", str(threads)]
        subprocess.run(cmd, check=True)
        return json.loads(out.read_text())


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["nodes"] for r in results]
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    ax = axes[0]
    ax.plot(n, [r["build_seconds"] for r in results], "o-", label="index build")
    ax.plot(n, [r["adjacency_build_seconds"] for r in results], "s-", label="hull adjacency build")
    for r in results:
        ax.annotate(r["kind"], (r["nodes"], r["build_seconds"]), fontsize=8)
    ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="seconds", title="Build")
    ax.legend(fontsize=8)
    ax = axes[1]
    for i, (key, label) in enumerate((("query_batch_1", "batch 1"), ("query_batch_256", "batch 256 (whole batch)"))):
        ax.plot(n, [r[key]["p50_ms"] for r in results], "o-", color=f"C{i}", label=f"{label} p50")
        ax.plot(n, [r[key]["p95_ms"] for r in results], "s--", color=f"C{i}", label=f"{label} p95")
    ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="ms", title="Query latency (k=10)")
    ax.legend(fontsize=8)
    ax = axes[2]
    for i, k in enumerate(("k1", "k2", "k3")):
        ax.plot(n, [r["hull_5_anchors"][k]["p50_ms"] for r in results], "o-", color=f"C{i}", label=f"{k} p50")
        ax.plot(n, [r["hull_5_anchors"][k]["p95_ms"] for r in results], "s--", color=f"C{i}", label=f"{k} p95")
    ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="ms", title="Hull from 5 anchors")
    ax.legend(fontsize=8)
    ax = axes[3]
    ax.plot(n, [r["peak_rss_mb"] for r in results], "o-", label="peak RSS (process)")
    ax.plot(n, [r["index_file_mb"] for r in results], "s-", label="index files")
    ax.plot(n, [r["data_rss_mb"] for r in results], "^--", label="vectors (+ generation)")
    ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="MiB", title="Memory")
    ax.legend(fontsize=8)
    threads = results[0].get("faiss_threads")
    fig.suptitle(f"retrieval_index: dim {DIM}, FAISS threads {threads}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated node counts")
    ap.add_argument("--latent-dim", type=int, default=32, help="intrinsic dimension of the vectors (0: uniform)")
    ap.add_argument("--trials", type=int, default=200, help="single queries and hull expansions per size")
    ap.add_argument("--threads", type=int, default=None, help="FAISS OpenMP threads (default: all cores)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        Path(args.child_out).write_text(json.dumps(run_child(args.child, args.latent_dim, args.trials, args.threads)))
        return

    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = []
    t_all = time.perf_counter()
    for n in sizes:
        print(f"== {n:,} nodes", flush=True)
        results.append(run_size(n, args.latent_dim, args.trials, args.threads))
    OUT.mkdir(exist_ok=True)
    import faiss

    doc = {"benchmark": "retrieval_index", "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
           "cpus": os.cpu_count(), "python": platform.python_version(), "faiss": faiss.__version__,
           "latent_dim": args.latent_dim, "trials": args.trials, "seed": SEED,
           "total_seconds": round(time.perf_counter() - t_all, 1), "runs": results}
    (OUT / "retrieval_index.json").write_text(json.dumps(doc, indent=2))
    plot(results, OUT / "retrieval_index.png")
    print(f"{'nodes':>9s} {'kind':>5s} {'build s':>8s} {'q1 p50':>7s} {'q1 p95':>7s} {'q256 p50':>8s} {'q256 p95':>8s} "
          f"{'rec@10':>6s} {'load s':>6s} {'hull k1/k2/k3 p50 ms':>21s} {'hull k2 p95':>11s} {'RSS MiB':>8s} "
          f"{'file MiB':>8s}")
    for r in results:
        h = r["hull_5_anchors"]
        print(f"{r['nodes']:9d} {r['kind']:>5s} {r['build_seconds']:8.2f} {r['query_batch_1']['p50_ms']:7.2f} "
              f"{r['query_batch_1']['p95_ms']:7.2f} {r['query_batch_256']['p50_ms']:8.1f} "
              f"{r['query_batch_256']['p95_ms']:8.1f} {r['recall_at_10']:6.3f} {r['load_mmap_seconds']:6.2f} "
              f"{h['k1']['p50_ms']:6.2f}/{h['k2']['p50_ms']:6.2f}/{h['k3']['p50_ms']:6.2f} {h['k2']['p95_ms']:11.2f} "
              f"{r['peak_rss_mb']:8.0f} {r['index_file_mb']:8.1f}")
    print("(query latencies in ms, k=10; q256 = one batch of 256 queries)")
    print(f"\nwrote {OUT / 'retrieval_index.json'} and {OUT / 'retrieval_index.png'}")


if __name__ == "__main__":
    main()
