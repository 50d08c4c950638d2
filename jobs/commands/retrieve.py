"""``symbolkg retrieve``: hybrid retrieval (and optional LLM pruning) over an LKG store.

The stage is :mod:`symbolkg.jobs.methods.symbolkg_retrieve` over :mod:`symbolkg.retrieval`; this is its command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Container
from pathlib import Path
from typing import Any

from symbolkg.actors.engines.base import EngineDeadError
from symbolkg.jobs.commands.common import add_llm_options, llm_options, run_with_engine


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retrieve", help="hybrid retrieval over an LKG store: anchors, logical hull, optional LLM pruning"
    )
    p.add_argument("--store", required=True, help="LKG store directory (from `symbolkg lkg build`)")
    p.add_argument("--query", required=True, help="the question")
    p.add_argument("--hops", type=int, default=2, help="hull depth k (default 2)")
    p.add_argument("--max-nodes", type=int, default=256, help="most hull nodes (default 256)")
    p.add_argument("--dense-threshold", type=float, default=0.35, help="least cosine of a dense anchor (default 0.35)")
    p.add_argument(
        "--embedder",
        choices=("minilm", "bge-m3", "hashing"),
        default="minilm",
        help="dense model (indexes are built on first use and kept in STORE/indexes/)",
    )
    p.add_argument("--embedder-path", help="local model folder (required for bge-m3)")
    p.add_argument("--prune", action="store_true", help="ask the LLM for the query entities and to prune the hull")
    p.add_argument("--prune-cap", type=int, default=24, help="most nodes the pruning keeps (default 24)")
    add_llm_options(p, "--prune")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"symbolkg retrieve: {message}", file=sys.stderr)
    return 2


def _node_rows(
    graph: Any, hops: dict[str, int], reasons: dict[str, str], anchors: Container[str], kept: Container[str]
) -> list[dict[str, Any]]:
    """One row per node of the shown subgraph: its text, hop distance, why it is an anchor, whether kept."""
    from symbolkg.retrieval.index import node_text  # the retrieval stack only when the command runs, as in run

    return [
        {
            "id": n.id,
            "type": n.node_type,
            "text": node_text(n),
            "hop": hops.get(n.id),
            "anchor": reasons.get(n.id, "anchor" if n.id in anchors else None),
            "kept": n.id in kept,
        }
        for n in graph.nodes
    ]


def run(args: argparse.Namespace) -> int:
    # the retrieval stack only when the command runs (FAISS, pyarrow, pandas, torch): the CLI builds every parser
    from symbolkg.jobs.methods.symbolkg_retrieve import retrieve
    from symbolkg.retrieval.anchors import AnchorConfig  # as above
    from symbolkg.retrieval.embed import ModelNotFoundError, make_embedder  # as above
    from symbolkg.retrieval.hull import HullConfig  # as above
    from symbolkg.retrieval.hybrid import HybridRetriever, store_subgraph  # as above
    from symbolkg.retrieval.lkg.store import LKGStore  # as above
    from symbolkg.retrieval.prune import PruneConfig  # as above

    if not (Path(args.store) / "contexts").is_dir():
        return _fail(f"no LKG store at {args.store} (build one with `symbolkg lkg build`)")
    try:
        hull_config = HullConfig(k=args.hops, max_nodes=args.max_nodes)
        anchor_config = AnchorConfig(dense_threshold=args.dense_threshold)
        prune = PruneConfig(enabled=args.prune, cap=args.prune_cap)
        opts = llm_options(args) if args.prune else None
        embedder = make_embedder(args.embedder, args.embedder_path)
    except (ValueError, ModelNotFoundError) as exc:
        return _fail(str(exc))
    store = LKGStore(args.store)
    retriever = HybridRetriever.from_store(store, embedder, anchor_config=anchor_config, hull_config=hull_config)
    result = retriever.retrieve(args.query)  # lexical query entities, no LLM
    entities, anchors, hull = result.entities, tuple(a.node_id for a in result.anchors), tuple(result.node_ids)
    kept, extra = hull, {"seconds": {k: round(v, 6) for k, v in result.seconds.items()}}
    reasons = {
        a.node_id: f"{a.source} {a.score:.2f}" + (f" ({a.mention})" if a.mention else "") for a in result.anchors
    }
    if opts is not None:
        try:
            outcome = run_with_engine(
                opts,
                lambda engine: retrieve(
                    engine,
                    retriever,
                    lambda ids: store_subgraph(store, ids),
                    args.query,
                    problem_id="query",
                    prune=prune,
                ),
            )
        except EngineDeadError as exc:
            print(f"symbolkg retrieve: the LLM engine died: {exc}", file=sys.stderr)
            return 1
        entities, anchors, kept = outcome.entities, outcome.anchors, outcome.pruned
        hull = tuple(dict.fromkeys(outcome.hull + hull))
        extra = {
            "entities_source": outcome.entities_source,
            "prune_source": outcome.prune_source,
            "errors": outcome.errors,
            "prompt_tokens": outcome.llm.prompt_tokens,
            "completion_tokens": outcome.llm.completion_tokens,
        }
    nodes = _node_rows(store_subgraph(store, hull), result.hull.distances, reasons, anchors, kept)
    if args.json:
        print(
            json.dumps(
                {
                    "query": args.query,
                    "entities": list(entities),
                    "anchors": list(anchors),
                    "hull": list(hull),
                    "kept": list(kept),
                    "nodes": nodes,
                    **extra,
                }
            )
        )
        return 0
    _print_nodes(args, entities, anchors, hull, kept, nodes)
    return 0


def _print_nodes(
    args: argparse.Namespace, entities: Any, anchors: Any, hull: Any, kept: Any, nodes: list[dict[str, Any]]
) -> None:
    print(
        f"query: {args.query}\nentities: {', '.join(entities) or '-'}\n"
        f"{len(anchors)} anchors, {len(hull)} nodes within {args.hops} hops, {len(kept)} kept"
    )
    for node in nodes:
        mark = "*" if node["kept"] else " "
        why = f"  <- {node['anchor']}" if node["anchor"] else ""
        print(f" {mark} hop {node['hop']}  {node['type']:<10} {node['text'][:100]}{why}")
