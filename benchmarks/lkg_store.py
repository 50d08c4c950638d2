"""LKG store: write, read-all and single-context lookup on synthetic graphs of 10^4 .. 10^6 nodes.

Every size runs in two fresh processes (so ``ru_maxrss`` is the peak of that phase alone):

* write: build the synthetic graphs context by context (deterministic seed, ~``--nodes-per-context``
  nodes each, all four node types, ~2 edges per node) and ``put`` them into a new
  :class:`symbolkg.retrieval.lkg.store.LKGStore`; the time to build the records is reported apart from
  the store's own time (``put`` + flushes);
* read: open the store (index load), stream every node and edge (``iter_nodes`` /
  ``iter_edges``, all columns), then ``--lookups`` random single-context ``get(key)`` calls and
  as many ``graph_for_problem`` calls (latency p50 / p95 / max).

    python benchmarks/lkg_store.py [--sizes 10000,100000,1000000] [--nodes-per-context 20]

Writes benchmarks/out/lkg_store.json and benchmarks/out/lkg_store.png and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from symbolkg.retrieval.lkg.schema import (
    CONSTRAINT_TYPES,
    Concept,
    Constraint,
    ContextRecord,
    Edge,
    Entity,
    Graph,
    Provenance,
    Rule,
)
from symbolkg.retrieval.lkg.store import LKGStore, cache_key

OUT = Path(__file__).resolve().parent / "out"
SEED = 1234
WORDS = [
    "red",
    "blue",
    "green",
    "big",
    "small",
    "round",
    "cold",
    "kind",
    "book",
    "cat",
    "dog",
    "chair",
    "table",
    "river",
    "stone",
    "teacher",
    "nurse",
    "pilot",
    "city",
    "garden",
    "wumpus",
    "yumpus",
    "lamp",
    "clock",
]
RELATIONS = ["RELATED_TO", "LEFT_OF", "FATHER_OF", "OWNS", "NEXT_TO", "BEFORE", "LIKES", "SEES"]


def synthetic_graph(context: int, n_nodes: int, rng: random.Random) -> Graph:
    """One context's graph: ~50% entities, 25% concepts, 15% rules, 10% constraints, ~2 edges per node."""
    key = cache_key(f"synthetic context {context}", "synthetic-model", "bench")
    prov = lambda: tuple(sorted({Provenance(key, rng.randrange(40)) for _ in range(rng.randint(1, 2))}))
    nodes: list = []
    for i in range(n_nodes):
        words = f"{rng.choice(WORDS)} {rng.choice(WORDS)} {context} {i}"
        kind = rng.random()
        if kind < 0.5:
            props = {rng.choice(WORDS): rng.choice(WORDS) for _ in range(rng.randint(0, 3))}
            nodes.append(Entity.create(f"The {words}", "object", props, prov()))
        elif kind < 0.75:
            nodes.append(Concept.create(words + "s", [rng.choice(WORDS)], prov()))
        elif kind < 0.9:
            nodes.append(
                Rule.create(
                    f"{words.replace(' ', '_')}(x) -> cold(x)",
                    f"All {words} are cold.",
                    f"Every {words} is cold.",
                    prov(),
                )
            )
        else:
            nodes.append(
                Constraint.create(
                    f"pos({words.replace(' ', '_')}) < {i}",
                    rng.choice(CONSTRAINT_TYPES),
                    "BEFORE",
                    "<",
                    str(i),
                    f"The {words} comes before {i}.",
                    prov(),
                )
            )
    edges: dict[tuple[str, str, str], Edge] = {}
    for i, node in enumerate(nodes):
        for _ in range(2):
            if n_nodes < 2:
                break
            other = nodes[rng.randrange(n_nodes)]
            if other.id == node.id:
                continue
            edge = Edge(node.id, other.id, rng.choice(RELATIONS), f"Sentence {i} of context {context}.", prov())
            edges.setdefault(edge.key, edge)
    return Graph(key, tuple(nodes), tuple(edges.values()))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def phase_write(store_dir: Path, n_nodes: int, per_context: int) -> dict:
    rng = random.Random(SEED)
    store = LKGStore(store_dir)
    gen_s = store_s = 0.0
    written = contexts = 0
    while written < n_nodes:
        size = min(per_context + rng.randint(-per_context // 2, per_context // 2), n_nodes - written)
        size = max(size, 1)
        t0 = time.perf_counter()
        graph = synthetic_graph(contexts, size, rng)
        t1 = time.perf_counter()
        store.put(
            ContextRecord(
                graph.context_key, problem_ids=(f"problem-{contexts}",), model="synthetic-model", prompt_version="bench"
            ),
            graph,
        )
        store_s += time.perf_counter() - t1
        gen_s += t1 - t0
        written += size
        contexts += 1
    t1 = time.perf_counter()
    store.close()
    store_s += time.perf_counter() - t1
    counts = store.counts()
    sizes = {t: dir_bytes(store_dir / t) for t in ("nodes", "edges", "contexts")}
    return {
        "nodes": counts.nodes,
        "edges": counts.edges,
        "contexts": counts.contexts,
        "parts": counts.parts,
        "generate_seconds": round(gen_s, 3),
        "write_seconds": round(store_s, 3),
        "write_nodes_per_second": round(counts.nodes / store_s),
        "write_peak_rss_mb": round(peak_rss_mb(), 1),
        "bytes": sizes,
        "bytes_per_node": round(sum(sizes.values()) / counts.nodes, 1),
    }


def _latency(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {
        "p50_ms": round(1000 * statistics.median(ordered), 3),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 3),
        "max_ms": round(1000 * ordered[-1], 3),
    }


def phase_read(store_dir: Path, lookups: int) -> dict:
    t0 = time.perf_counter()
    store = LKGStore(store_dir)
    keys = store.keys()
    open_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_nodes = sum(b.num_rows for b in store.iter_nodes())
    n_edges = sum(b.num_rows for b in store.iter_edges())
    read_all_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_ids = sum(b.num_rows for b in store.iter_nodes(columns=["node_id", "node_type"]))
    read_ids_s = time.perf_counter() - t0
    rng = random.Random(SEED + 1)
    get_s, problem_s = [], []
    for _ in range(lookups):
        key = rng.choice(keys)
        t0 = time.perf_counter()
        graph = store.get(key)
        get_s.append(time.perf_counter() - t0)
        if graph is None or not graph.nodes:
            raise RuntimeError(f"lookup of {key} returned {graph}")
    for _ in range(lookups):
        problem = f"problem-{rng.randrange(len(keys))}"
        t0 = time.perf_counter()
        graph = store.graph_for_problem(problem)
        problem_s.append(time.perf_counter() - t0)
        if graph is None:
            raise RuntimeError(f"no graph for {problem}")
    if n_ids != n_nodes:
        raise RuntimeError(f"node counts differ: {n_ids} != {n_nodes}")
    return {
        "open_seconds": round(open_s, 3),
        "read_all_seconds": round(read_all_s, 3),
        "read_all_rows": n_nodes + n_edges,
        "read_all_nodes_per_second": round(n_nodes / read_all_s),
        "read_ids_seconds": round(read_ids_s, 3),
        "get": _latency(get_s),
        "graph_for_problem": _latency(problem_s),
        "read_peak_rss_mb": round(peak_rss_mb(), 1),
    }


def run_size(n_nodes: int, per_context: int, lookups: int) -> dict:
    """Both phases of one size, each in a fresh interpreter."""
    with tempfile.TemporaryDirectory(prefix="lkg-bench-") as tmp:
        store_dir = Path(tmp) / "store"
        result: dict = {"target_nodes": n_nodes}
        for phase in ("write", "read"):
            out = Path(tmp) / f"{phase}.json"
            cmd = [
                sys.executable,
                __file__,
                "--phase",
                phase,
                "--store",
                str(store_dir),
                "--n",
                str(n_nodes),
                "--nodes-per-context",
                str(per_context),
                "--lookups",
                str(lookups),
                "--phase-out",
                str(out),
            ]
            subprocess.run(cmd, check=True)
            result.update(json.loads(out.read_text()))
        return result


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["nodes"] for r in results]
    fig, axes = plt.subplots(1, 4, figsize=(17, 4))
    ax = axes[0]
    ax.plot(n, [r["write_seconds"] for r in results], "o-", label="write (put + flush)")
    ax.plot(n, [r["generate_seconds"] for r in results], "o--", label="build records (not store)")
    ax.plot(n, [r["read_all_seconds"] for r in results], "s-", label="read all nodes + edges")
    ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="seconds", title="Throughput")
    ax.legend(fontsize=8)
    ax = axes[1]
    for q, style in (("p50_ms", "o-"), ("p95_ms", "s--")):
        ax.plot(n, [r["get"][q] for r in results], style, label=f"get(key) {q[:3]}")
    ax.set(xscale="log", xlabel="nodes", ylabel="ms", title="Single-context lookup")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax = axes[2]
    ax.plot(n, [r["write_peak_rss_mb"] for r in results], "o-", label="write phase")
    ax.plot(n, [r["read_peak_rss_mb"] for r in results], "s-", label="read phase")
    ax.set(xscale="log", xlabel="nodes", ylabel="peak RSS, MiB", title="Memory (whole process)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax = axes[3]
    for table in ("nodes", "edges", "contexts"):
        ax.plot(n, [r["bytes"][table] / 2**20 for r in results], "o-", label=table)
    ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="MiB on disk", title="Size")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated node counts")
    ap.add_argument("--nodes-per-context", type=int, default=20)
    ap.add_argument("--lookups", type=int, default=200)
    ap.add_argument("--phase", choices=["write", "read"], help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--phase-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase == "write":
        Path(args.phase_out).write_text(json.dumps(phase_write(Path(args.store), args.n, args.nodes_per_context)))
        return
    if args.phase == "read":
        Path(args.phase_out).write_text(json.dumps(phase_read(Path(args.store), args.lookups)))
        return

    sizes = [int(s) for s in args.sizes.split(",") if s]
    results = []
    t_all = time.perf_counter()
    for n in sizes:
        print(f"== {n:,} nodes", flush=True)
        results.append(run_size(n, args.nodes_per_context, args.lookups))
    OUT.mkdir(exist_ok=True)
    doc = {
        "benchmark": "lkg_store",
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "nodes_per_context": args.nodes_per_context,
        "lookups": args.lookups,
        "seed": SEED,
        "total_seconds": round(time.perf_counter() - t_all, 1),
        "runs": results,
    }
    (OUT / "lkg_store.json").write_text(json.dumps(doc, indent=2))
    plot(results, OUT / "lkg_store.png")
    header = (
        f"{'nodes':>9s} {'edges':>9s} {'ctx':>7s} {'parts':>5s} {'build s':>8s} {'write s':>8s} "
        f"{'read-all s':>10s} {'get p50 ms':>10s} {'get p95 ms':>10s} {'RSS w/r MiB':>13s} {'MiB':>7s} "
        f"{'B/node':>7s}"
    )
    print(header)
    for r in results:
        mib = sum(r["bytes"].values()) / 2**20
        print(
            f"{r['nodes']:9d} {r['edges']:9d} {r['contexts']:7d} {r['parts']:5d} {r['generate_seconds']:8.2f} "
            f"{r['write_seconds']:8.2f} {r['read_all_seconds']:10.2f} {r['get']['p50_ms']:10.2f} "
            f"{r['get']['p95_ms']:10.2f} {r['write_peak_rss_mb']:6.0f}/{r['read_peak_rss_mb']:<6.0f} {mib:7.1f} "
            f"{r['bytes_per_node']:7.0f}"
        )
    print(f"\nwrote {OUT / 'lkg_store.json'} and {OUT / 'lkg_store.png'}")


if __name__ == "__main__":
    main()
