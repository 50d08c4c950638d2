"""What the repeat stop would have saved on the kept completions of a model run (no model needed).

Reads a completion cache (default the qwen2.5-coder-1.5b runs' ``benchmarks/out/qwen/completions``),
turns each completion's text back into the model's tokens (its tokenizer; the prepared model's folder),
and looks at them as :class:`~symbolkg.actors.engines.vllm_engine.VLLMEngine` does while it generates
(:class:`~symbolkg.actors.engines.repeats.RepeatStop`: every ``check_every`` tokens from
``min_tokens`` on). Reports, per finish reason (``length``: decoded to the cap; ``stop``: ended by
itself), how many completions the stop would end and how many generated tokens it would not decode,
and shows the ``stop`` completions it would end (those ended by themselves later: the stop changes
their text). Capped completions it does not end are counted where they go on with the conversation
(``Human:`` and the next turn, written by the model). Re-tokenized text is the generated tokens up to
the tokenizer's merges: a run of one letter (``kkkk...``) becomes a few long tokens when re-tokenized,
so a loop the engine sees in the generated tokens can escape this count.

    python benchmarks/repeat_stop.py [--cache DIR] [--model qwen2.5-coder-1.5b]

Writes ``benchmarks/out/repeat_stop.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sqlite3
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
#: A completion that writes the next turn of the conversation itself (the model plays the user).
TURN = re.compile(r"(?:^|\n|\.)\s*(?:Human|User):", re.IGNORECASE)
CACHE = OUT / "qwen" / "completions"


def completions(cache: Path, model: str) -> list[tuple[str, str, int]]:
    """(text, finish reason, completion tokens) of every completion of ``model`` in the cache, read-only."""
    db = sqlite3.connect(f"file:{cache / 'completions.sqlite'}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT text, finish_reason, completion_tokens FROM completions WHERE model = ? ORDER BY key", (model,)
        ).fetchall()
    finally:
        db.close()


def where_it_stops(ids: list[int], stop) -> tuple[int, int] | None:
    """(tokens generated when the stop ends it, the block's length), or None where it never does."""
    for end in range(stop.min_tokens, len(ids) + 1, stop.check_every):
        p = stop.period(ids[:end])
        if p is not None:
            return end, p
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--out", type=Path, default=OUT / "repeat_stop.json")
    args = ap.parse_args(argv)
    from transformers import AutoTokenizer

    from symbolkg.actors.engines import models
    from symbolkg.actors.engines.repeats import RepeatStop

    if not models.is_prepared(args.model):
        raise SystemExit(f"{args.model} is not prepared (its tokenizer is needed): see benchmarks/llm_formalizer.py")
    tokenizer = AutoTokenizer.from_pretrained(str(models.model_dir(args.model)))
    stop = RepeatStop()
    rows = completions(args.cache, args.model)
    if not rows:
        raise SystemExit(f"no completions of {args.model} in {args.cache}")
    encoded = tokenizer([t for t, _, _ in rows], add_special_tokens=False)["input_ids"]
    by_reason: dict[str, dict] = {}
    examples = []
    for (text, reason, generated), ids in zip(rows, encoded, strict=True):
        r = by_reason.setdefault(
            reason, {"completions": 0, "generated_tokens": 0, "stopped": 0, "tokens_not_decoded": 0, "blocks": {}}
        )
        r["completions"] += 1
        r["generated_tokens"] += generated
        hit = where_it_stops(ids, stop)
        if hit is None:
            if reason == "length" and TURN.search(text):
                r["capped_going_on_with_the_conversation"] = r.get("capped_going_on_with_the_conversation", 0) + 1
            continue
        end, p = hit
        r["stopped"] += 1
        r["tokens_not_decoded"] += max(0, generated - end)
        r["blocks"][p] = r["blocks"].get(p, 0) + 1
        if reason != "length" and len(examples) < 5:
            examples.append({"generated": generated, "stopped_at": end, "block": p, "tail": text[-300:]})
    total = sum(r["generated_tokens"] for r in by_reason.values())
    saved = sum(r["tokens_not_decoded"] for r in by_reason.values())
    result = {
        "command": "python benchmarks/repeat_stop.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": f"{platform.node()} ({os.cpu_count()} cores), Python {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "model": args.model,
        "cache": str(args.cache),
        "repeat_stop": {
            "min_tokens": stop.min_tokens,
            "repeats": stop.repeats,
            "max_period": stop.max_period,
            "check_every": stop.check_every,
        },
        "by_finish_reason": {k: {**v, "blocks": dict(sorted(v["blocks"].items()))} for k, v in by_reason.items()},
        "generated_tokens": total,
        "tokens_not_decoded": saved,
        "share_not_decoded": round(saved / total, 3) if total else 0.0,
        "stop_examples": examples,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    plot(result, args.out.with_suffix(".png"))
    for reason, r in sorted(by_reason.items()):
        print(
            f"{reason:7s} {r['completions']:5d} completions, {r['generated_tokens']:8d} tokens: the stop ends "
            f"{r['stopped']:4d} of them, {r['tokens_not_decoded']:7d} tokens not decoded"
        )
    print(f"all: {saved} of {total} generated tokens not decoded ({result['share_not_decoded']:.1%})")
    return 0


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reasons = sorted(result["by_finish_reason"])
    kept = [result["by_finish_reason"][r]["generated_tokens"] for r in reasons]
    with_stop = [kept[i] - result["by_finish_reason"][r]["tokens_not_decoded"] for i, r in enumerate(reasons)]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    x = range(len(reasons))
    ax.bar([i - 0.2 for i in x], kept, width=0.4, label="as decoded", color="#8FAADC")
    ax.bar([i + 0.2 for i in x], with_stop, width=0.4, label="with the repeat stop", color="#4C72B0")
    ax.set_xticks(list(x), [f"finish: {r}" for r in reasons])
    ax.set_ylabel("generated tokens")
    ax.set_title(f"{result['model']}: {result['share_not_decoded']:.0%} of the tokens not decoded")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
