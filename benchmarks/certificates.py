"""Certificates on the whole recorded GPT-4 set: `symbolkg solve` then `symbolkg verify`, per Logic-LM set.

Each of the five program files is solved by the real solvers (formalization checks and their
corrections on, the default), then every answer's certificate is re-checked by `symbolkg verify`
(another engine than the one that answered, in solver workers). The SymBa sets' gold programs
(SymBa's statements plus the world rules they name, the goal as the query: 1,000 records of
proofwriter_dep5, birdselectricity, pararules and clutrr, language ``symba``) go the same way as
one more set, "SymBa gold". Printed and written per set:
rows, executed, answered, with a certificate, verified / failed / unverifiable (with every
reason), the checkers used, certificate size (median / max bytes) and check time (median / max).

    python benchmarks/certificates.py [--workers 2] [--data-dir DIR]

Writes benchmarks/out/certificates.json and .png. Budget: ~5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from symbolkg.jobs.cli import main as cli
from symbolkg.jobs.inspection.certificates import verdicts_path

OUT = Path(__file__).resolve().parent / "out"
SETS = ("ProntoQA", "ProofWriter", "FOLIO", "LogicalDeduction", "AR-LSAT")
SYMBA_GOLD_SETS = ("proofwriter_dep5", "birdselectricity", "pararules", "clutrr")


def symba_gold_programs(root: Path, out: Path) -> Path:
    """The SymBa gold programs as a `symbolkg solve --programs` JSONL file (True/False options)."""
    world = {
        w["name"]: [s["statement"] for s in w["statements"]]
        for w in json.loads((root / "symba" / "clutrr" / "world_data.json").read_text())
    }
    with out.open("w") as f:
        for folder in SYMBA_GOLD_SETS:
            for rec in json.loads((root / "symba" / folder / "test_data.json").read_text()):
                lines = [s["statement"] for s in rec["program"] if s["statement"].strip()]
                for name in rec["world_model"]:
                    lines += world[name]
                text = "\n".join([*lines, f"?- {rec['goal']}."]) + "\n"
                f.write(
                    json.dumps(
                        {
                            "id": f"{folder}_{rec['id']}",
                            "dataset": f"symba-gold/{folder}",
                            "context": rec.get("body_text", ""),
                            "question": rec["goal"],
                            "options": ["A) True", "B) False"],
                            "answer": "A" if rec["label"] else "B",
                            "program": {"language": "symba", "text": text},
                        }
                    )
                    + "\n"
                )
    return out


def _run(argv: list[str]) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = cli(argv)
    return code, buffer.getvalue()


def one_set(name: str, programs: Path, tmp: Path, workers: int, data: list[str]) -> dict:
    run = tmp / f"{name}.parquet"
    common = ["--executor", "local", "--workers", str(workers), "--no-progress"]
    t0 = time.perf_counter()
    code, _ = _run(["solve", "--programs", str(programs), "--out", str(run), *common, *data])
    if code != 0:
        raise RuntimeError(f"symbolkg solve failed on {programs}")
    solve_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    _, out = _run(["verify", str(run), "--json", *common])
    verify_s = time.perf_counter() - t0
    summary = json.loads(out)
    rows = pq.read_table(run).to_pylist()
    sizes = [len(r["certificate"].encode()) for r in rows if r["certificate"]]
    seconds = pq.read_table(verdicts_path(run), columns=["seconds"]).column("seconds").to_pylist()
    return {
        "rows": summary["rows"],
        "correct": sum(r["correct"] for r in rows),
        "accuracy": round(sum(r["correct"] for r in rows) / len(rows), 4),
        **{
            k: summary[k]
            for k in (
                "executed",
                "answered",
                "with_certificate",
                "verified",
                "failed",
                "unverifiable",
                "no_answer",
                "by_kind",
                "by_checker",
            )
        },
        "not_verified": summary["problems"],
        "certificate_bytes": {"median": statistics.median(sizes) if sizes else 0, "max": max(sizes, default=0)},
        "check_seconds": {
            "median": round(statistics.median(seconds), 4) if seconds else 0.0,
            "max": round(max(seconds, default=0.0), 3),
        },
        "solve_seconds": round(solve_s, 1),
        "verify_seconds": round(verify_s, 1),
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result["sets"])
    fig, ax = plt.subplots(figsize=(7, 3.2))
    bottom = [0] * len(names)
    for key, color in (("verified", "tab:green"), ("unverifiable", "tab:orange"), ("failed", "tab:red")):
        values = [result["sets"][n][key] for n in names]
        ax.bar(names, values, bottom=bottom, color=color, label=key)
        bottom = [a + b for a, b in zip(bottom, values, strict=True)]
    for i, n in enumerate(names):
        s = result["sets"][n]
        ax.annotate(f"{s['verified']}/{s['answered']}", (i, bottom[i]), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("answered rows")
    ax.set_title("recorded GPT-4 programs: certificates re-checked by another engine", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="solver and checker worker processes (default 2)")
    parser.add_argument("--data-dir", help="data root (default $SYMBOLKG_DATA, else ../shared/data)")
    args = parser.parse_args()
    from symbolkg.jobs.datasets.files import default_data_dir

    root = default_data_dir(args.data_dir)
    data = ["--data-dir", str(root)]
    result: dict = {
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "date": time.strftime("%Y-%m-%d"),
        "sets": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        files = {name: root / "logiclm" / "programs" / f"{name}_dev_gpt-4.json" for name in SETS}
        files["SymBa gold"] = symba_gold_programs(root, Path(tmp) / "symba_gold.jsonl")
        for name, programs in files.items():
            result["sets"][name] = one_set(name.replace(" ", "_"), programs, Path(tmp), args.workers, data)
            s = result["sets"][name]
            print(
                f"{name:18s} answered {s['answered']:4d}  certified {s['with_certificate']:4d}  verified "
                f"{s['verified']:4d}  failed {s['failed']}  unverifiable {s['unverifiable']}  "
                f"accuracy {s['accuracy']:.1%}",
                flush=True,
            )
    total = {
        k: sum(s[k] for s in result["sets"].values())
        for k in ("answered", "with_certificate", "verified", "failed", "unverifiable")
    }
    total["verified_rate"] = round(total["verified"] / total["answered"], 4) if total["answered"] else 0.0
    result["total"] = total
    OUT.mkdir(exist_ok=True)
    (OUT / "certificates.json").write_text(json.dumps(result, indent=2))
    plot(result, OUT / "certificates.png")
    print(json.dumps(total))


if __name__ == "__main__":
    main()
