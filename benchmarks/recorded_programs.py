"""Logic-LM's recorded programs of three models, fifteen files: accuracy, certificates, determinism.

``../shared/data/logiclm/programs/`` holds the programs GPT-4, gpt-3.5-turbo and text-davinci-003
wrote for the five Logic-LM sets. Each file goes through ``symbolkg solve --programs FILE`` (the
real command: Ray solver pool, 2 workers, the formalization checks and certificates in the
workers), ``--repeats`` times on an otherwise idle machine and once more with the machine loaded by
``--load-procs`` busy processes; then ``symbolkg verify`` re-checks the first run's certificates.

Per file it reports: execution rate and accuracy over the file's records (unexecuted = wrong, as
Logic-LM counts), answers with a certificate and how many verify, programs whose premises or
constraints contradict each other (``error_kind == "inconsistent"``: no answer), and Logic-LM's own
solvers on the same file (``../shared/data/README.md``). Determinism: every row's ``(status, answer,
certificate kind)`` must be identical in every run; the rows that differ are listed.

On AR-LSAT Logic-LM's solver answers the first option that passes when several do (a guess; we give
no answer then): its number counts those picks, so the table also shows its correct answers without
picks where the data README gives them (text-davinci-003: 8 of its 15 are picks).

    python benchmarks/recorded_programs.py [--repeats 3] [--load-procs 2] [--workers 2] [--data-dir DIR]

Writes benchmarks/out/recorded_programs.json and .png (accuracy per file beside Logic-LM's).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

OUT = Path(__file__).resolve().parent / "out"
DATASETS = ("ProntoQA", "ProofWriter", "FOLIO", "LogicalDeduction", "AR-LSAT")
MODELS = ("gpt-4", "gpt-3.5-turbo", "text-davinci-003")
#: Logic-LM's own solvers on each file, accuracy in % (unexecuted = wrong): gpt-4 from the Logic-LM
#: paper's Table 2 (as benchmarks/RESULTS.md cites it), the two others from ../shared/data/README.md.
LOGICLM_ACCURACY = {
    "gpt-4": {"ProntoQA": 83.2, "ProofWriter": 78.8, "FOLIO": 64.2, "LogicalDeduction": 87.6, "AR-LSAT": 19.6},
    "gpt-3.5-turbo": {"ProntoQA": 54.4, "ProofWriter": 38.0, "FOLIO": 39.2, "LogicalDeduction": 64.7, "AR-LSAT": 6.1},
    "text-davinci-003": {
        "ProntoQA": 84.4,
        "ProofWriter": 64.3,
        "FOLIO": 41.2,
        "LogicalDeduction": 62.0,
        "AR-LSAT": 6.5,
    },
}
#: Logic-LM's AR-LSAT correct answers that were first-of-several picks, where the data README says.
LOGICLM_ARLSAT_PICKS = {"text-davinci-003": 8}


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "symbolkg.jobs.cli", *argv], capture_output=True, text=True)


def solve_file(path: Path, out: Path, workers: int, data_dir: Path, executor: str = "ray") -> dict[str, tuple]:
    """One ``symbolkg solve --programs`` run; each row's (status, answer, certificate kind, correct, error kind)."""
    t0 = time.perf_counter()
    done = _cli(
        "solve",
        "--programs",
        str(path),
        "--out",
        str(out),
        "--workers",
        str(workers),
        "--overwrite",
        "--no-progress",
        "--data-dir",
        str(data_dir),
        "--executor",
        executor,
    )
    if done.returncode != 0:
        raise RuntimeError(f"symbolkg solve --programs {path} failed:\n{done.stderr[-3000:]}")
    rows = {}
    for r in pq.read_table(out).to_pylist():
        kind = json.loads(r["certificate"])["kind"] if r.get("certificate") else None
        rows[r["problem_id"]] = (r["status"], r["answer"], kind, bool(r["correct"]), r["error_kind"], r["executed"])
    rows["_seconds"] = round(time.perf_counter() - t0, 2)  # type: ignore[assignment]
    return rows


def verify(out: Path) -> dict:
    done = _cli("verify", str(out), "--json", "--no-progress")
    if done.returncode not in (0, 1):
        raise RuntimeError(f"symbolkg verify {out} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def _burn(stop: multiprocessing.Event) -> None:  # type: ignore[valid-type]
    x = 0
    while not stop.is_set():  # type: ignore[attr-defined]
        for _ in range(100_000):
            x = (x * 31 + 7) % 1_000_003


def summarize(model: str, dataset: str, runs: list[dict], verified: dict) -> dict:
    first = {k: v for k, v in runs[0].items() if not k.startswith("_")}
    n = len(first)
    correct = sum(v[3] for v in first.values())
    executed = sum(bool(v[5]) for v in first.values())
    differ = sorted(k for k in first if any(run.get(k, (None,))[:3] != first[k][:3] for run in runs[1:]))
    logiclm = LOGICLM_ACCURACY[model][dataset]
    ours = round(100 * correct / n, 1)
    row = {
        "model": model,
        "dataset": dataset,
        "records": n,
        "executed": executed,
        "execution_rate": round(100 * executed / n, 1),
        "correct": correct,
        "accuracy": ours,
        "answered": sum(v[1] is not None for v in first.values()),
        "with_certificate": sum(v[2] is not None for v in first.values()),
        "verified": verified.get("verified"),
        "verify_failed": verified.get("failed"),
        "unverifiable": verified.get("unverifiable"),
        "inconsistent": sum(v[4] == "inconsistent" for v in first.values()),
        "logiclm_accuracy": logiclm,
        "at_or_above_logiclm": ours >= logiclm,
        "runs": len(runs),
        "rows_that_differ": differ,
        "seconds": [run["_seconds"] for run in runs],
    }
    if dataset == "AR-LSAT" and model in LOGICLM_ARLSAT_PICKS:
        logiclm_correct = round(logiclm * n / 100)
        row["logiclm_correct_without_picks"] = logiclm_correct - LOGICLM_ARLSAT_PICKS[model]
        row["at_or_above_logiclm_without_picks"] = correct >= row["logiclm_correct_without_picks"]
    return row


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(MODELS), figsize=(15, 4), sharey=True)
    for ax, model in zip(axes, MODELS, strict=True):
        part = [r for r in rows if r["model"] == model]
        xs = range(len(part))
        ax.bar([x - 0.2 for x in xs], [r["accuracy"] for r in part], 0.4, label="SymbolKG")
        ax.bar(
            [x + 0.2 for x in xs], [r["logiclm_accuracy"] for r in part], 0.4, label="Logic-LM's solvers", color="grey"
        )
        ax.set_xticks(list(xs), [r["dataset"] for r in part], rotation=20)
        ax.set_title(model)
    axes[0].set_ylabel("accuracy (%), unexecuted = wrong")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="idle runs per file (default 3)")
    ap.add_argument("--load-procs", type=int, default=2, help="busy processes of the loaded run (0: no loaded run)")
    ap.add_argument("--workers", type=int, default=2, help="solver workers (default 2)")
    ap.add_argument(
        "--executor",
        choices=("ray", "local"),
        default="ray",
        help="solver pool: Ray actors (default) or local worker processes",
    )
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument(
        "--data-dir",
        default=os.environ.get("SYMBOLKG_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data")),
    )
    args = ap.parse_args(argv)
    data = Path(args.data_dir)
    results: dict = {
        "machine": f"{platform.node()} ({os.cpu_count()} cores), Python {sys.version.split()[0]}",
        "date": time.strftime("%Y-%m-%d"),
        "command": "python benchmarks/recorded_programs.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "files": [],
    }
    with tempfile.TemporaryDirectory(prefix="recorded-") as tmp:
        for model in args.models.split(","):
            for dataset in args.datasets.split(","):
                path = data / "logiclm" / "programs" / f"{dataset}_dev_{model}.json"
                runs = [
                    solve_file(path, Path(tmp) / f"{model}-{dataset}-{i}.parquet", args.workers, data, args.executor)
                    for i in range(args.repeats)
                ]
                if args.load_procs:
                    stop = multiprocessing.Event()
                    burners = [
                        multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(args.load_procs)
                    ]
                    for b in burners:
                        b.start()
                    try:
                        runs.append(
                            solve_file(
                                path, Path(tmp) / f"{model}-{dataset}-loaded.parquet", args.workers, data, args.executor
                            )
                        )
                    finally:
                        stop.set()
                        for b in burners:
                            b.join()
                verified = verify(Path(tmp) / f"{model}-{dataset}-0.parquet")
                row = summarize(model, dataset, runs, verified)
                results["files"].append(row)
                print(
                    f"{model:17s} {dataset:17s} exec {row['execution_rate']:5.1f}%  acc {row['accuracy']:5.1f}% "
                    f"(Logic-LM {row['logiclm_accuracy']:5.1f}%)  certified {row['with_certificate']}/"
                    f"{row['answered']} verified {row['verified']}  inconsistent {row['inconsistent']}  "
                    f"differ {len(row['rows_that_differ'])} of {row['records']} over {row['runs']} runs  "
                    f"{row['seconds']} s",
                    flush=True,
                )
    OUT.mkdir(exist_ok=True)
    (OUT / "recorded_programs.json").write_text(json.dumps(results, indent=2))
    plot(results["files"], OUT / "recorded_programs.png")
    below = [f"{r['model']}/{r['dataset']}" for r in results["files"] if not r["at_or_above_logiclm"]]
    print(f"files below Logic-LM's solvers: {below or 'none'}")
    for r in results["files"]:
        if "logiclm_correct_without_picks" in r:
            print(
                f"  {r['model']}/{r['dataset']}: {r['correct']} correct; "
                f"Logic-LM's without its first-of-several picks: {r['logiclm_correct_without_picks']} "
                f"({'at or above' if r['at_or_above_logiclm_without_picks'] else 'below'})"
            )
    print(f"wrote {OUT / 'recorded_programs.json'} and .png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
