"""How much of the hand-checked graphs a model's LKG extraction recovers (validity is not quality).

Extracts the four hand-checked contexts of ``tests/fixtures/lkg/hand_checked.json`` (two FOLIO
stories, two LogicalDeduction puzzles) with the real build job and the embedded engine, then
compares each graph with the hand-checked one:

* entities and concepts: by canonical id (normalized, lemmatized name and node type);
* rules and constraints: by the sentence they quote (``raw_text``): did the model see that
  this sentence is a rule (a constraint)? Formulas are not compared;
* edges: by (source, target, type) over canonical ids; ``untyped`` ignores the type.

Precision is over what the model extracted, recall over the hand-checked items. Extraction
settings default to CI's (``tests/jobs/test_lkg_llm.py``): 200-character chunks, 2048 tokens,
one repair round.

    python benchmarks/lkg_quality.py [--model smollm2-135m] [--chunk-chars 200] [--max-tokens 2048]

Writes benchmarks/out/lkg_quality.json and benchmarks/out/lkg_quality.png.
Budget: about 3 minutes on 2 cores with SmolLM2-135M.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "lkg" / "hand_checked.json"
KINDS = ("Entity", "Concept", "Rule", "Constraint", "edges", "edges (untyped)")


def items(graph) -> dict[str, set]:
    """What is compared, per kind (see the module docstring)."""
    from symbolkg.retrieval.lkg.canonical import collapse_whitespace

    out: dict[str, set] = {k: set() for k in KINDS}
    for node in graph.nodes:
        kind = type(node).__name__
        out[kind].add(node.id if kind in ("Entity", "Concept") else collapse_whitespace(node.raw_text))
    for e in graph.edges:
        out["edges"].add((e.source_id, e.target_id, e.edge_type))
        out["edges (untyped)"].add((e.source_id, e.target_id))
    return out


def score(found: set, gold: set) -> dict:
    hit = len(found & gold)
    return {
        "extracted": len(found),
        "gold": len(gold),
        "matched": hit,
        "precision": round(hit / len(found), 3) if found else None,
        "recall": round(hit / len(gold), 3) if gold else None,
    }


async def measure(args) -> dict:
    from symbolkg.actors.engines.base import SamplingParams
    from symbolkg.actors.engines.vllm_engine import VLLMConfig, VLLMEngine
    from symbolkg.jobs.core.rows import Problem
    from symbolkg.jobs.methods.lkg_extract import LKGConfig
    from symbolkg.jobs.pipeline.lkg_build import run_lkg_build
    from symbolkg.retrieval.lkg.extract import parse_extraction
    from symbolkg.retrieval.lkg.store import LKGStore

    entries = json.loads(FIXTURE.read_text(encoding="utf-8"))["contexts"]
    problems = [
        Problem(e["problems"][0]["id"], e["dataset"], e["context"], e["problems"][0]["question"]) for e in entries
    ]
    cfg = LKGConfig(
        max_repair_rounds=args.repair_rounds,
        chunk_chars=args.chunk_chars,
        params=SamplingParams(max_tokens=args.max_tokens),
    )
    engine = VLLMEngine(VLLMConfig(model=args.model))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = LKGStore(Path(tmp))
            report = await run_lkg_build(problems, store, engine, cfg, progress=False)
            graphs = {p.id: store.graph_for_problem(p.id) for p in problems}
    finally:
        await engine.close()
    built = report.to_dict()
    totals: dict[str, dict[str, set]] = {k: {"found": set(), "gold": set()} for k in KINDS}
    per_context = {}
    for entry, problem in zip(entries, problems, strict=True):
        gold_graph = parse_extraction(json.dumps(entry["extraction"]), entry["context"], "gold").graph
        found, gold = items(graphs[problem.id]), items(gold_graph)
        per_context[entry["id"]] = {k: score(found[k], gold[k]) for k in KINDS}
        for k in KINDS:  # items of different contexts never collide: tag them with the context
            totals[k]["found"] |= {(entry["id"], x) for x in found[k]}
            totals[k]["gold"] |= {(entry["id"], x) for x in gold[k]}
    return {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "date": time.strftime("%Y-%m-%d"),
        "model": engine.model,
        "settings": {
            "chunk_chars": args.chunk_chars,
            "max_tokens": args.max_tokens,
            "repair_rounds": args.repair_rounds,
        },
        "build": {
            k: built[k]
            for k in (
                "contexts",
                "valid",
                "invalid",
                "issue_kinds",
                "nodes",
                "edges",
                "completion_tokens",
                "wall_seconds",
            )
        },
        "overall": {k: score(v["found"], v["gold"]) for k, v in totals.items()},
        "per_context": per_context,
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    overall = result["overall"]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    xs = range(len(KINDS))
    for offset, metric in ((-0.2, "precision"), (0.2, "recall")):
        ax.bar([x + offset for x in xs], [overall[k][metric] or 0 for k in KINDS], width=0.4, label=metric)
    ax.set_xticks(list(xs), KINDS, fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_title(
        f"{result['model']}: agreement with the hand-checked graphs "
        f"({result['build']['valid']}/{result['build']['contexts']} outputs valid)",
        fontsize=9,
    )
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--chunk-chars", type=int, default=200)
    ap.add_argument("--max-tokens", type=int, default=2048)
    ap.add_argument("--repair-rounds", type=int, default=1)
    args = ap.parse_args()
    result = asyncio.run(measure(args))
    OUT.mkdir(exist_ok=True)
    (OUT / "lkg_quality.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(result, OUT / "lkg_quality.png")
    print(f"{result['model']}: {result['build']['valid']}/{result['build']['contexts']} outputs valid")
    print(f"{'kind':18s} {'extracted':>9s} {'gold':>5s} {'matched':>7s} {'precision':>9s} {'recall':>6s}")
    for kind, s in result["overall"].items():
        print(
            f"{kind:18s} {s['extracted']:9d} {s['gold']:5d} {s['matched']:7d} {s['precision']!s:>9s} "
            f"{s['recall']!s:>6s}"
        )
    print(f"wrote {OUT / 'lkg_quality.json'} and {OUT / 'lkg_quality.png'}")


if __name__ == "__main__":
    main()
