"""The ``multipath`` method on ``--limit`` LogicGraph instances per tier, beside the paper's Table 4.

Runs the job (the embedded SmolLM2-135M-Instruct in vLLM in this process by default, or any
``--engine``) on the first ``--limit`` instances (default 30) of each tier, each answer verified
step by step, and prints the paper's metrics per tier next to the best model of LogicGraph's
Table 4 (Gemini-3-Pro-Preview). Also reports what the answers looked like: parsed, cut off at the
token limit, steps with each error label, tokens per instance, and the job's wall time.

    python benchmarks/logicgraph_llm.py [--tiers small,medium] [--limit 30] [--max-tokens 512]
                                        [--engine vllm] [--show both|formal|natural]

Each tier: ``symbolkg solve --method multipath`` into benchmarks/out/logicgraph_llm/<tier>.parquet
(a rerun resumes it; delete it for a fresh measurement), then ``symbolkg logicgraph verify
--results`` (the answers file and report beside it). Writes benchmarks/out/logicgraph_llm.json and .png.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import sys
import time
from pathlib import Path

from symbolkg.jobs.cli import main as cli
from symbolkg.jobs.logicgraph.results import PAPER_BEST

OUT = Path(__file__).resolve().parent / "out"
METRICS = ("success_rate", "precision", "shortest_path_rate", "diversity", "versatility")


def run_tier(tier: str, args: argparse.Namespace) -> dict:
    results = OUT / "logicgraph_llm" / f"{tier}.parquet"
    results.parent.mkdir(parents=True, exist_ok=True)
    argv = ["solve", "--method", "multipath", "--dataset", f"logicgraph/{tier}", "--limit", str(args.limit)]
    argv += ["--out", str(results), "--engine", args.engine, "--max-tokens", str(args.max_tokens)]
    argv += ["--multipath-show", args.show, "--max-in-flight", str(args.max_in_flight), "--no-progress"]
    data = ["--data-dir", args.data_dir] if args.data_dir else []
    for flag, value in (("--model", args.model), ("--openai-url", args.openai_url)):
        if value:
            argv += [flag, value]
    t0 = time.monotonic()
    code = cli(argv + data)
    wall = time.monotonic() - t0
    if code not in (0, 1):
        raise SystemExit(f"the multipath job failed on {tier} (exit {code})")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = cli(["logicgraph", "verify", "--results", str(results), "--json", *data])
    if code != 0:
        raise SystemExit(f"logicgraph verify failed on {tier} (exit {code})")
    (summary,) = json.loads(buffer.getvalue())["results"]
    answers = [json.loads(line) for line in Path(summary["answers"]).read_text().splitlines()]
    metrics = summary["report"]["metrics"][tier]
    return {
        "tier": tier,
        "instances": summary["instances"],
        "answered": summary["answered"],
        "wall_s": round(wall, 1),
        "completion_tokens": summary["completion_tokens"],
        "cached": summary["cached"],
        "parsed": sum(bool(a["solutions"]) for a in answers),
        "truncated": summary["truncated"],
        "paths_per_instance": round(metrics["paths"] / max(1, summary["instances"]), 2),
        "mean_tokens": metrics["mean_tokens"],
        "metrics": metrics,
        "paper_best": PAPER_BEST.get(tier),
    }


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.6), squeeze=False)
    for ax, res in zip(axes[0], results, strict=True):
        ours = [100 * (res["metrics"].get(m) or 0.0) for m in METRICS]
        paper = [(res["paper_best"] or {}).get(m, 0.0) for m in METRICS]
        xs = range(len(METRICS))
        ax.bar([x - 0.2 for x in xs], ours, 0.4, label="ours (this engine)")
        ax.bar([x + 0.2 for x in xs], paper, 0.4, label=f"{PAPER_BEST['model']} (paper)")
        ax.set_xticks(list(xs), ["SR", "Prec", "SPF", "Div", "Vers"])
        ax.set_ylim(0, 100)
        ax.set_title(f"LogicGraph {res['tier']} ({res['instances']} instances)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiers", default="small,medium")
    ap.add_argument("--limit", type=int, default=30)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--max-in-flight", type=int, default=64)
    ap.add_argument("--engine", default="vllm")
    ap.add_argument("--model")
    ap.add_argument("--openai-url")
    ap.add_argument("--data-dir")
    ap.add_argument("--show", default="both")
    args = ap.parse_args()
    results = [run_tier(tier, args) for tier in args.tiers.split(",")]
    out = {
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
        "date": time.strftime("%Y-%m-%d"),
        "config": vars(args),
        "tiers": results,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "logicgraph_llm.json").write_text(json.dumps(out, indent=2) + "\n")
    plot(results, OUT / "logicgraph_llm.png")
    print(
        f"{'tier':8} {'inst':>4} {'parsed':>6} {'cut':>4} {'paths/i':>7} {'tok/i':>6} "
        + " ".join(f"{m[:8]:>8}" for m in METRICS)
        + f" {'wall_s':>7}"
    )
    for res in results:
        m = res["metrics"]
        print(
            f"{res['tier']:8} {res['instances']:4} {res['parsed']:6} {res['truncated']:4} "
            f"{res['paths_per_instance']:7} {(res['mean_tokens'] or 0):6.0f} "
            + " ".join(f"{100 * (m.get(k) or 0.0):8.2f}" for k in METRICS)
            + f" {res['wall_s']:7.1f}"
        )
        paper = res["paper_best"] or {}
        print(
            f"{'  paper':8} {'':4} {'':6} {'':4} {'':7} {'':6} "
            + " ".join(f"{paper.get(k, 0.0):8.2f}" for k in METRICS)
        )
    print(f"wrote {OUT / 'logicgraph_llm.json'} and .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
