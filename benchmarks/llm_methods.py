"""The LLM methods end to end with the embedded engine, at the sizes CI used to run.

CI proves each real-model path on a small slice (tests/jobs/test_llm_e2e.py, test_symbolkg_llm.py,
test_lkg_llm.py); the numbers in benchmarks/RESULTS.md come from the larger runs here, which are
exactly ``symbolkg`` commands (run in this process through the CLI, so each one loads the
embedded model itself, as a user's command would):

* ``logiclm``: ``solve --method logiclm --dataset prontoqa --limit 50 --max-tokens 384 --max-refine-rounds 1``,
  then the same command again (answered by the completion cache: 0 tokens);
* ``cot``: ``solve --method cot --dataset prontoqa --limit 50 --max-tokens 256``;
* ``symbolkg``: ``solve --method symbolkg`` over the five Logic-LM sets, ``--limit 20`` of each
  (interleaved), CI's former budgets, the search in two Ray index actors, then a free rerun;
* ``lkg``: ``lkg build --dataset folio --limit 8`` (3 stories) with the engine in a Ray LLM actor,
  ``--max-tokens 2048 --chunk-chars 200 --max-repair-rounds 1``, then a rebuild from the store.

    python benchmarks/llm_methods.py [--runs logiclm,cot,symbolkg,lkg] [--scale 1.0] [--data-dir DIR]

``--scale`` multiplies every problem count (0.1 for a smoke run). Writes
benchmarks/out/llm_methods.json and .png (execution rate and accuracy per run, and wall time).
Budget on 2 cores: ~8 min logiclm, ~2 min cot, ~13 min symbolkg, ~6 min lkg.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

from symbolkg.actors.engines.metered import prefix_cache_summary, read_request_log
from symbolkg.jobs.cli import main as cli

OUT = Path(__file__).resolve().parent / "out"
SETS = "prontoqa,proofwriter,folio,logicaldeduction,ar-lsat"
REPORT_KEYS = (
    "problems",
    "execution_rate",
    "accuracy",
    "llm_calls",
    "cached_calls",
    "prompt_tokens",
    "completion_tokens",
    "tokens_per_second",
    "wall_seconds",
    "rounds_histogram",
    "prefix_cache",
)


def _run(argv: list[str]) -> tuple[int, str]:
    """One CLI command; its exit code and stdout (stderr goes to ours, progress included)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = cli(argv)
    return code, buffer.getvalue()


def _report(path: Path) -> dict:
    code, out = _run(["report", str(path), "--json"])
    if code != 0:
        raise RuntimeError(f"symbolkg report {path} failed")
    rep = json.loads(out)
    keep = {k: rep[k] for k in REPORT_KEYS if k in rep}
    if "by_dataset" in rep:
        keep["by_dataset"] = {
            name: {k: ds.get(k) for k in ("problems", "execution_rate", "accuracy", "routes")}
            for name, ds in rep["by_dataset"].items()
        }
    return keep


def _solve(name: str, argv: list[str], tmp: Path, *, rerun: bool) -> dict:
    out = tmp / f"{name}.parquet"
    t0 = time.perf_counter()
    code, _ = _run(["solve", *argv, "--out", str(out)])
    result = {
        "command": "symbolkg solve " + " ".join(argv),
        "exit_code": code,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if code == 0:
        result["report"] = _report(out)
        records = read_request_log(out)  # vLLM's prefix-cache counts per request, by the request's purpose
        result["prefix_cache_by_purpose"] = {
            p: prefix_cache_summary([r for r in records if r.purpose == p])
            for p in sorted({r.purpose for r in records})
        }
    if rerun and code == 0:
        again = tmp / f"{name}-again.parquet"
        t0 = time.perf_counter()
        code, _ = _run(["solve", *argv, "--out", str(again)])
        result["rerun"] = {
            "exit_code": code,
            "seconds": round(time.perf_counter() - t0, 1),
            **({"report": _report(again)} if code == 0 else {}),
        }
    return result


def _lkg(limit: int, data: list[str], tmp: Path) -> dict:
    base = [
        "lkg",
        "build",
        "--dataset",
        "folio",
        "--limit",
        str(limit),
        "--json",
        "--no-progress",
        "--max-tokens",
        "2048",
        "--chunk-chars",
        "200",
        "--max-repair-rounds",
        "1",
        *data,
        "--store",
        str(tmp / "lkg-folio"),
    ]
    result = {"command": "symbolkg " + " ".join(base[:-2] + ["--llm-actor"])}
    for label, extra in (("build", ["--llm-actor"]), ("rebuild", [])):
        t0 = time.perf_counter()
        code, out = _run([*base, *extra])
        result[label] = {
            "exit_code": code,
            "seconds": round(time.perf_counter() - t0, 1),
            **(json.loads(out.strip().splitlines()[-1]) if code == 0 else {}),
        }
    return result


def run(names: list[str], scale: float, data_dir: str | None) -> dict:
    n = lambda count: max(1, round(count * scale))
    data = ["--data-dir", data_dir] if data_dir else []
    common = ["--executor", "local", "--workers", "2", "--no-progress", *data]
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="llm-methods-") as tmp_name:
        tmp = Path(tmp_name)
        cache = ["--cache", str(tmp / "completions")]
        for name in names:
            print(f"== {name}", file=sys.stderr, flush=True)
            if name == "logiclm":
                argv = [
                    "--method",
                    "logiclm",
                    "--dataset",
                    "prontoqa",
                    "--limit",
                    str(n(50)),
                    "--max-tokens",
                    "384",
                    "--max-refine-rounds",
                    "1",
                    *cache,
                    *common,
                ]
                results[name] = _solve(name, argv, tmp, rerun=True)
            elif name == "cot":
                argv = [
                    "--method",
                    "cot",
                    "--dataset",
                    "prontoqa",
                    "--limit",
                    str(n(50)),
                    "--max-tokens",
                    "256",
                    *cache,
                    *common,
                ]
                results[name] = _solve(name, argv, tmp, rerun=False)
            elif name == "symbolkg":
                argv = [
                    "--method",
                    "symbolkg",
                    "--dataset",
                    SETS,
                    "--limit",
                    str(n(20)),
                    "--lkg-store",
                    str(tmp / "lkg"),
                    "--retrieval-actors",
                    "2",
                    "--max-tokens",
                    "128",
                    "--max-refine-rounds",
                    "1",
                    "--lkg-max-tokens",
                    "128",
                    "--lkg-repair-rounds",
                    "0",
                    "--stage-max-tokens",
                    "32",
                    *cache,
                    *common,
                ]
                results[name] = _solve(name, argv, tmp, rerun=True)
            elif name == "lkg":
                results[name] = _lkg(n(8), data, tmp)
            else:
                raise SystemExit(f"unknown run {name!r}; choose from logiclm, cot, symbolkg, lkg")
    return results


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    solved = {k: v["report"] for k, v in results.items() if "report" in v}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    names = list(solved)
    x = range(len(names))
    ax1.bar([i - 0.2 for i in x], [solved[k]["execution_rate"] for k in names], 0.4, label="executed")
    ax1.bar([i + 0.2 for i in x], [solved[k]["accuracy"] for k in names], 0.4, label="correct")
    ax1.set_xticks(list(x), names)
    ax1.set_ylim(0, 1)
    ax1.set_title("SmolLM2-135M (vLLM CPU): share of problems")
    ax1.legend()
    walls = {k: v.get("seconds", v.get("build", {}).get("seconds", 0)) for k, v in results.items()}
    ax2.bar(list(walls), list(walls.values()), color="gray")
    ax2.set_ylabel("seconds (first run)")
    ax2.set_title("wall time on this machine")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", default="logiclm,cot,symbolkg,lkg", help="comma-separated: logiclm,cot,symbolkg,lkg")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply every problem count (e.g. 0.1 to smoke-test)"
    )
    parser.add_argument("--data-dir", help="data root (default: $SYMBOLKG_DATA, else ../shared/data)")
    parser.add_argument("--out", type=Path, default=OUT / "llm_methods.json", help="JSON output (a .png beside it)")
    args = parser.parse_args(argv)
    if args.scale <= 0:
        parser.error("--scale must be > 0")
    results = run([r.strip() for r in args.runs.split(",") if r.strip()], args.scale, args.data_dir)
    doc = {"date": time.strftime("%Y-%m-%d"), "machine": platform.platform(), "scale": args.scale, "runs": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2))
    plot(results, args.out.with_suffix(".png"))
    print(json.dumps(doc, indent=2))
    return 0 if all(r.get("exit_code", r.get("build", {}).get("exit_code")) == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
