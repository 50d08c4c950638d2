"""Is vLLM's n-gram speculative decoding a lever for the logiclm job on this CPU? A probe.

The job's throughput gap to its offline ceiling is its drain: the last problems' repair chains decode
nearly alone, at a twentieth of a full batch's speed here (benchmarks/RESULTS.md). A repair mostly
copies the program it was shown, so n-gram (prompt lookup) drafts should be accepted, and a lone
sequence should speed up. vLLM's speculative settings are the engine's, not a request's, so they also
apply while the batch is full. This probe measures both sides for each setting (:data:`SETTINGS`),
one engine at a time, with ``qwen2.5-coder-1.5b`` and the job's request shape:

* **alone**: three ProntoQA repair requests, one at a time (the kept skeleton run's first rounds that
  did not execute, rebuilt as their repair prompts), up to 1,024 tokens under the skeleton's grammar;
* **full batch**: the first 64 ProntoQA formulation requests at once, ``--batch-tokens`` each.

    python benchmarks/spec_decode_probe.py [--settings off,ngram8,ngram8-small-batches]
                                           [--batch-tokens 200] [--data-dir DIR] [--out FILE]

Writes ``benchmarks/out/spec_decode_probe.json``. About 8 minutes per setting.
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

OUT = Path(__file__).resolve().parent / "out"
KEPT = OUT / "qwen" / "logiclm-skeleton.parquet"
NGRAM = {"method": "ngram", "num_speculative_tokens": 8, "prompt_lookup_max": 5, "prompt_lookup_min": 2}
#: name -> vLLM's ``speculative_config`` (None: off)
SETTINGS: dict[str, dict | None] = {
    "off": None,
    "ngram8": NGRAM,
    # drafts only while at most 8 requests run (vLLM's dynamic schedule: batch-size range -> tokens)
    "ngram8-small-batches": {**NGRAM, "num_speculative_tokens_per_batch_size": [[1, 8, 8], [9, 1024, 0]]},
}


def repair_requests(problems: dict, language: str, structured, k: int) -> list:
    """The kept run's first ``k`` ProntoQA repairs of a program that did not execute, as requests."""
    import pyarrow.parquet as pq

    from symbolkg.actors.engines.base import ChatRequest, Message, SamplingParams
    from symbolkg.solvers import prompts

    out = []
    for row in pq.read_table(KEPT).to_pylist():
        log = [a for a in json.loads(row["attempts_log"] or "[]") if "completion" in a]
        if row["problem_id"] not in problems or len(log) < 2 or log[0]["outcome"].get("answer") is not None:
            continue
        p, first = problems[row["problem_id"]], log[0]
        o = first["outcome"]
        pairs = prompts.refine_messages(
            language, p.context, p.question, p.options, first["program"], o.get("error_kind"),
            o.get("error_message") or o["status"], o.get("error_line"), reply=first["completion"],
        )  # fmt: skip
        messages = tuple(Message(role, text) for role, text in pairs)
        out.append(ChatRequest(messages, SamplingParams(max_tokens=1024), structured, request_id=f"{p.id}/refine"))
        if len(out) == k:
            break
    return out


def probe(name: str, spec: dict | None, data_dir: str | None, batch_tokens: int) -> dict:
    """One engine with ``spec``: the repairs alone, then the full batch."""
    from symbolkg.actors.engines.base import ChatRequest, Message, SamplingParams, StructuredOutput
    from symbolkg.actors.engines.vllm_engine import VLLMConfig, VLLMEngine
    from symbolkg.jobs.datasets.logiclm import language_of
    from symbolkg.jobs.datasets.registry import load_problems
    from symbolkg.solvers import prompts

    problems = {p.id: p for p in load_problems("logiclm/prontoqa", data_dir, limit=64).problems}
    language = language_of(next(iter(problems.values())))
    structured = StructuredOutput(**prompts.program_structured_output(language, "skeleton"))
    engine = VLLMEngine(VLLMConfig(model="qwen2.5-coder-1.5b", speculative_config=spec))
    asyncio.run(engine.generate([ChatRequest((Message("user", "Say OK."),), SamplingParams(max_tokens=4))]))
    alone = []
    for request in repair_requests(problems, language, structured, 3):
        t0 = time.perf_counter()
        c = asyncio.run(engine.generate([request]))[0]
        wall = time.perf_counter() - t0
        alone.append(
            {
                "request": request.request_id,
                "generated_tokens": c.completion_tokens,
                "wall_s": round(wall, 1),
                "generated_tok_s": round(c.completion_tokens / wall, 2),
                "finish_reason": c.finish_reason,
            }
        )
        print(f"{name}: alone {alone[-1]}", file=sys.stderr, flush=True)
    batch = [
        ChatRequest(
            tuple(Message(r, t) for r, t in prompts.formulation_messages(language, p.context, p.question, p.options)),
            SamplingParams(max_tokens=batch_tokens),
            structured,
            request_id=f"{p.id}/formulate",
        )
        for p in problems.values()
    ]
    t0 = time.perf_counter()
    done = asyncio.run(engine.generate(batch))
    wall = time.perf_counter() - t0
    engine.shutdown()
    generated = sum(c.completion_tokens for c in done)
    full = {"requests": len(done), "generated_tokens": generated, "wall_s": round(wall, 1)}
    full["generated_tok_s"] = round(generated / wall, 2)
    print(f"{name}: full batch {full}", file=sys.stderr, flush=True)
    return {"setting": name, "speculative_config": spec, "alone": alone, "full_batch": full}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--settings", default=",".join(SETTINGS), help=f"of {', '.join(SETTINGS)}")
    ap.add_argument("--batch-tokens", type=int, default=200, help="tokens per request of the full batch")
    ap.add_argument("--data-dir", default=os.environ.get("SYMBOLKG_DATA", "../shared/data"))
    ap.add_argument("--out", default=str(OUT / "spec_decode_probe.json"))
    args = ap.parse_args(argv)
    names = args.settings.split(",")
    unknown = [n for n in names if n not in SETTINGS]
    if unknown:
        raise SystemExit(f"--settings: unknown {', '.join(unknown)}; known: {', '.join(SETTINGS)}")
    results = [probe(n, SETTINGS[n], args.data_dir, args.batch_tokens) for n in names]
    result = {
        "command": "python benchmarks/spec_decode_probe.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": f"{platform.node()} ({os.cpu_count()} cores), Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "results": results,
    }
    Path(args.out).write_text(json.dumps(result, indent=2))
    for r in results:
        alone = sum(a["generated_tokens"] for a in r["alone"]) / max(sum(a["wall_s"] for a in r["alone"]), 1e-9)
        print(f"{r['setting']}: alone {alone:.1f} tok/s, full batch {r['full_batch']['generated_tok_s']} tok/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
