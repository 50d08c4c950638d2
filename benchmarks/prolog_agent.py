"""The ``prolog-agent`` method (PrologMCP's formalizer) on PARARULE-Plus depths 2-4.

* ``template``: the ``pararule-template`` engine (the deterministic translator, a stand-in for a
  model that formalizes perfectly) through the whole loop: engine -> agent -> MCP client ->
  server -> swipl sessions. It must be 100% on every depth; what it measures is the loop: MCP calls
  per question and their latency, session reuse, seconds per question.
* ``llm``: the embedded SmolLM2-135M-Instruct (vLLM in this process, the engine the other
  benchmarks use) on ``--limit`` questions per depth (default 20): accuracy, attempts, where the
  attempts failed (format / consult / goal), tokens and time. The paper's formalizer (Claude
  Sonnet 4.6, GPT-4.1) is 1.00 on its 400-question sample, at about 1,100-1,600 tokens a question.

Both report, per depth, how plain SLDNF (negation over the closure in rule bodies too, no tabling)
would fare on the same questions (the paper's Sample B): ``same`` label, ``different`` label, or
``loops`` (out of its inference budget). It is a property of the question, computed from the
translator's encoding, so the two runs give the same counts.

    python benchmarks/prolog_agent.py [--runs template,llm] [--limit N]

Writes benchmarks/out/prolog_agent.json and .png.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from symbolkg.actors.engines.factory import EngineOptions, make_engine
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.methods.prolog_agent import PrologAgent, PrologAgentConfig
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore

OUT = Path(__file__).resolve().parent / "out"
DEPTHS = (2, 3, 4)
#: PrologMCP, Table 3 (400 questions of depths 2-5): the formalizer's accuracy and tokens per question
PAPER = {"claude-sonnet-4.6": {"accuracy": 1.0, "tokens": 1426}, "gpt-4.1": {"accuracy": 1.0, "tokens": 1189}}


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def summarize(rows: list[dict], wall_s: float) -> dict:
    traces = [json.loads(r["trace"] or "{}") for r in rows]
    attempts = [json.loads(r["attempts_log"] or "[]") for r in rows]
    calls = [c for t in traces for c in t.get("mcp_calls", [])]
    by_tool: dict[str, list[float]] = {}
    for c in calls:
        by_tool.setdefault(c["tool"], []).append(c["seconds"])
    stages = Counter(
        a.get("stage", "?") + ("" if not a.get("error") else f":{a['error'].get('kind')}")
        for att in attempts
        for a in att
        if a.get("error")
    )
    n = max(1, len(rows))
    return {
        "questions": len(rows),
        "correct": sum(bool(r["correct"]) for r in rows),
        "accuracy": round(sum(bool(r["correct"]) for r in rows) / n, 4),
        "answered": sum(r["predicted"] is not None for r in rows),
        "attempts_mean": round(sum(r["rounds"] for r in rows) / n, 3),
        "attempts_max": max((r["rounds"] for r in rows), default=0),
        "first_attempt_ok": sum(r["success_round"] == 1 for r in rows),
        "failed_attempts": dict(stages.most_common()),
        "llm_calls": sum(r["llm_calls"] for r in rows),
        "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
        "completion_tokens": sum(r["completion_tokens"] for r in rows),
        "tokens_per_question": round(sum(r["prompt_tokens"] + r["completion_tokens"] for r in rows) / n, 1),
        "mcp_calls": len(calls),
        "mcp_calls_per_question": round(len(calls) / n, 2),
        "mcp_call_ms": {
            tool: {"n": len(s), "p50": round(1000 * statistics.median(s), 2), "p95": round(1000 * _pct(s, 0.95), 2)}
            for tool, s in sorted(by_tool.items())
        },
        "mcp_errors": sum(not c["ok"] for c in calls),
        "sldnf_mcp_calls": sum(len((t.get("sldnf") or {}).get("mcp_calls", [])) for t in traces),
        "reused_sessions": sum(t.get("reused_sessions", 0) for t in traces),
        "sldnf_closure": dict(Counter(str(t.get("sldnf_closure")) for t in traces)),
        "wall_seconds": round(wall_s, 2),
        "seconds_per_question": round(wall_s / n, 4),
        "latency_p50_s": round(statistics.median([r["latency_seconds"] for r in rows]), 4) if rows else 0.0,
        "wrong": [r["problem_id"] for r in rows if not r["correct"]][:20],
        "sldnf_different": [
            r["problem_id"] for r, t in zip(rows, traces, strict=True) if t.get("sldnf_closure") == "different"
        ],
        "sldnf_loops": [
            r["problem_id"] for r, t in zip(rows, traces, strict=True) if t.get("sldnf_closure") == "loops"
        ],
    }


def totals(per_depth: list[dict]) -> dict:
    return {
        "questions": sum(r["questions"] for r in per_depth),
        "correct": sum(r["correct"] for r in per_depth),
        "wall_seconds": round(sum(r["wall_seconds"] for r in per_depth), 1),
        "sldnf_closure": dict(sum((Counter(r["sldnf_closure"]) for r in per_depth), Counter())),
    }


def run(
    name: str,
    engine_opts: EngineOptions,
    data: Path,
    tmp: Path,
    limit: int | None,
    max_tokens: int,
    in_flight: int,
) -> dict:
    results: dict = {}

    async def jobs() -> None:
        engine = make_engine(engine_opts)  # one engine for the three depths (a model loads once)
        try:
            for depth in DEPTHS:
                problems = load_dataset(f"pararule_plus/depth{depth}", data, limit=limit).problems
                out = tmp / f"{name}-d{depth}.parquet"
                method = PrologAgent(PrologAgentConfig(max_tokens=max_tokens))
                t0 = time.perf_counter()
                await run_method_job(
                    problems,
                    ResultStore(out),
                    MethodConfig(method="prolog-agent"),
                    engine,
                    None,
                    max_in_flight=in_flight,
                    progress=False,
                    method=method,
                )
                wall = time.perf_counter() - t0
                s = summarize(pq.read_table(out).to_pylist(), wall)
                s["consults"], s["reused"] = method.stats["consults"], method.stats["reused"]
                results[f"depth{depth}"] = s
                print(
                    f"{name:8s} depth {depth}: {s['correct']:4d}/{s['questions']:<4d} ({100 * s['accuracy']:.1f}%)  "
                    f"attempts {s['attempts_mean']} (max {s['attempts_max']})  MCP calls {s['mcp_calls']} "
                    f"({s['mcp_calls_per_question']}/q, "
                    f"run_goal p50 {s['mcp_call_ms'].get('run_goal', {}).get('p50', 0)} ms)  "
                    f"consults {s['consults']}  tokens/q {s['tokens_per_question']}  {s['wall_seconds']} s "
                    f"({1000 * s['seconds_per_question']:.1f} ms/q)  SLDNF {s['sldnf_closure']}",
                    flush=True,
                )
        finally:
            await engine.close()

    asyncio.run(jobs())
    if name == "template":
        # the same loop one question at a time: the latency of a call without queueing behind others
        results["sequential"] = sequential(engine_opts, data, tmp, max_tokens)
        q = results["sequential"]
        print(
            f"{name:8s} one in flight, {q['questions']} questions of depth 2: run_goal p50 "
            f"{q['mcp_call_ms']['run_goal']['p50']} ms, p95 {q['mcp_call_ms']['run_goal']['p95']} ms; consult_text "
            f"p50 {q['mcp_call_ms']['consult_text']['p50']} ms; {1000 * q['seconds_per_question']:.1f} ms/q",
            flush=True,
        )
    results["_all"] = totals([results[f"depth{d}"] for d in DEPTHS])
    a = results["_all"]
    print(f"{name:8s} all: {a['correct']}/{a['questions']} in {a['wall_seconds']} s; plain SLDNF {a['sldnf_closure']}")
    return results


def sequential(engine_opts: EngineOptions, data: Path, tmp: Path, max_tokens: int, limit: int = 60) -> dict:
    problems = load_dataset("pararule_plus/depth2", data, limit=limit).problems
    out = tmp / "sequential.parquet"

    async def job() -> float:
        engine = make_engine(engine_opts)
        method = PrologAgent(PrologAgentConfig(max_tokens=max_tokens))
        try:
            t0 = time.perf_counter()
            await run_method_job(
                problems,
                ResultStore(out),
                MethodConfig(method="prolog-agent"),
                engine,
                None,
                max_in_flight=1,
                progress=False,
                method=method,
            )
            return time.perf_counter() - t0
        finally:
            await engine.close()

    wall = asyncio.run(job())
    return summarize(pq.read_table(out).to_pylist(), wall)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    series = [
        (label, results[key])
        for key, label in (("template", "template engine"), ("llm", "SmolLM2-135M"))
        if key in results
    ]
    width = 0.8 / max(1, len(series))
    for i, (label, res) in enumerate(series):
        ax1.bar(
            [k + i * width for k in range(len(DEPTHS))],
            [100 * res[f"depth{d}"]["accuracy"] for d in DEPTHS],
            width,
            label=label,
        )
    ax1.set_xticks([k + width * (len(series) - 1) / 2 for k in range(len(DEPTHS))], [f"depth {d}" for d in DEPTHS])
    ax1.set_ylabel("accuracy (%)")
    ax1.set_ylim(0, 105)
    ax1.set_title("--method prolog-agent on PARARULE-Plus")
    ax1.legend()
    ref = next((res for _, res in series), None)
    if ref:
        bottom = [0] * len(DEPTHS)
        for verdict, color in (("same", "tab:green"), ("different", "tab:red"), ("loops", "tab:orange")):
            values = [ref[f"depth{d}"]["sldnf_closure"].get(verdict, 0) for d in DEPTHS]
            bars = ax2.bar([f"depth {d}" for d in DEPTHS], values, bottom=bottom, label=verdict, color=color)
            if verdict != "same":
                ax2.bar_label(
                    bars, labels=[f"{verdict}: {v}" if v else "" for v in values], label_type="center", fontsize=8
                )
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax2.set_ylabel("questions")
        ax2.set_title("plain SLDNF (closure negation) vs the gold label")
        ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="template,llm", help="comma list of template, llm (default both)")
    ap.add_argument("--limit", type=int, help="questions per depth (default: all for template, 20 for llm)")
    ap.add_argument("--model", help="llm: model name or path (default the embedded SmolLM2-135M-Instruct)")
    ap.add_argument("--max-tokens", type=int, default=1024, help="llm: most tokens of one answer (default 1024)")
    ap.add_argument("--max-in-flight", type=int, default=32)
    ap.add_argument(
        "--data-dir",
        default=os.environ.get("SYMBOLKG_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")),
    )
    args = ap.parse_args(argv)
    data = Path(args.data_dir)
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    unknown = set(runs) - {"template", "llm"}
    if unknown:
        ap.error(f"unknown runs {sorted(unknown)}")
    if not (data / "pararule_plus").is_dir():
        ap.error(f"no PARARULE-Plus data under {data} (--data-dir)")
    results: dict = {
        "machine": f"{platform.node()} ({os.cpu_count()} cores), Python {sys.version.split()[0]}",
        "date": time.strftime("%Y-%m-%d"),
        "transport": "stdio",
        "paper_formalizer": PAPER,
    }
    previous = OUT / "prolog_agent.json"
    if previous.exists():  # keep the other run's numbers when only one is rerun
        old = json.loads(previous.read_text())
        results.update({k: old[k] for k in ("template", "llm") if k in old and k not in runs})
    with tempfile.TemporaryDirectory(prefix="prolog-agent-bench-") as tmp:
        if "template" in runs:
            results["template"] = run(
                "template",
                EngineOptions(kind="pararule-template"),
                data,
                Path(tmp),
                args.limit,
                args.max_tokens,
                args.max_in_flight,
            )
        if "llm" in runs:
            opts = EngineOptions(kind="vllm", model=args.model, cache_dir=str(Path(tmp) / "completions"))
            results["llm"] = run("llm", opts, data, Path(tmp), args.limit or 20, args.max_tokens, args.max_in_flight)
    OUT.mkdir(exist_ok=True)
    (OUT / "prolog_agent.json").write_text(json.dumps(results, indent=2))
    plot(results, OUT / "prolog_agent.png")
    print(f"wrote {OUT / 'prolog_agent.json'} and .png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
