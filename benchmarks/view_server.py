"""`symbolkg view` at 10^5 rows: how long the server takes to list runs, filter, search, sort and page.

A synthetic run of ``--rows`` problems (default 100,000) is written the way ``symbolkg solve``
writes one: a problems file (Parquet: id, context, question, options, answer; what ``--programs``
reads) and the results Parquet beside it (every column of the results schema: twelve datasets,
four backends, a mix of correct / wrong / unanswered rows, error kinds, rounds 1-4, latencies,
tokens, an LP program of ~12 lines per row, stage timings), plus ``RUN.verify.parquet`` (verdicts
for the executed rows). The viewer's real app is started under uvicorn on a free loopback port
and requests are sent one at a time (what a person clicking does) over HTTP:

* ``runs``: ``/api/runs`` (the runs list as JSON) and ``/`` (its page);
* ``page``: ``/api/run/RUN/problems?page=N`` for random pages (the default order);
* ``filter``: one or two filters at once (dataset, outcome, error kind, verdict, backend, rounds), random values;
* ``sort``: latency or tokens, ascending or descending, with a filter, random pages;
* ``search``: one or two words that occur in questions or programs (full-text, case-insensitive);
* ``problem``: one problem's page (its row read from the Parquet, its certificate and attempts drawn).

The first request to the run builds its DuckDB table (reads the Parquet, joins the verdicts and
the question text of the 10^5 problems): that cold start is reported apart. Then ``--requests``
requests per kind. Target: p95 under 200 ms per request for runs, page, filter, sort and search.

    python benchmarks/view_server.py [--rows 100000] [--requests 200]

Writes benchmarks/out/view_server.json and benchmarks/out/view_server.png and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from symbolkg.jobs.core.tables import RESULT_SCHEMA
from symbolkg.jobs.inspection.certificates import VERIFY_SCHEMA
from symbolkg.jobs.servers.view.app import create_app

OUT = Path(__file__).resolve().parent / "out"
DATASETS = [f"synthetic/set{i:02d}" for i in range(12)]
BACKENDS = ["forward-chainer", "prover9", "z3", "swipl"]
ERRORS = ["syntax", "undeclared", "unsupported", "timeout", "no_answer"]
WORDS = [
    "wumpus",
    "jompus",
    "yumpus",
    "zumpus",
    "impus",
    "dumpus",
    "numpus",
    "rompus",
    "tumpus",
    "vumpus",
    "sterpus",
    "lempus",
    "gorpus",
    "shumpus",
    "brimpus",
    "lorpus",
]
NAMES = ["Alex", "Fae", "Max", "Polly", "Rex", "Sally", "Stella", "Wren", "Sam", "Bob", "Ada", "Lin"]


def write_run(folder: Path, n: int, seed: int = 0) -> Path:
    """The synthetic run (module docstring); returns the results Parquet."""
    rng = random.Random(seed)
    problems_path = folder / "problems.parquet"
    run = folder / "synthetic-100k.parquet"
    ids, contexts, questions, programs = [], [], [], []
    for i in range(n):
        name = rng.choice(NAMES)
        chain = rng.sample(WORDS, 6)
        ids.append(f"syn-{i:06d}")
        contexts.append(
            " ".join(f"Every {a} is a {b}." for a, b in zip(chain, chain[1:], strict=False))
            + f" {name} is a {chain[0]}."
        )
        questions.append(f"Is the following statement true or false? {name} is a {chain[-1]}.")
        programs.append(
            "Predicates:\n"
            + "\n".join(f"{w.capitalize()}($x, bool)" for w in chain)
            + "\nFacts:\n"
            + f"{chain[0].capitalize()}({name}, True)\nRules:\n"
            + "\n".join(
                f"{a.capitalize()}($x, True) >>> {b.capitalize()}($x, True)"
                for a, b in zip(chain, chain[1:], strict=False)
            )
            + f"\nQuery:\n{chain[-1].capitalize()}({name}, True)"
        )
    datasets = [DATASETS[i % len(DATASETS)] for i in range(n)]
    pq.write_table(
        pa.table(
            {
                "id": ids,
                "dataset": datasets,
                "context": contexts,
                "question": questions,
                "options": [["A) True", "B) False"]] * n,
                "answer": ["A"] * n,
            }
        ),
        problems_path,
    )
    cols: dict[str, list] = {f.name: [] for f in RESULT_SCHEMA}
    verdicts: list[dict] = []
    t0 = 1.8e9
    for i in range(n):
        u = rng.random()
        executed = u < 0.85
        correct = executed and u < 0.7
        predicted = "A" if correct else ("B" if executed and u < 0.8 else None)
        err = None if executed and predicted else rng.choice(ERRORS)
        latency = rng.lognormvariate(-1.0, 1.0)
        row = {
            "problem_id": ids[i],
            "dataset": datasets[i],
            "method": "logiclm",
            "language": "logiclm-lp",
            "program": programs[i],
            "status": "proved" if executed else "parse_error",
            "executed": executed,
            "answer": "True" if predicted == "A" else ("False" if predicted else None),
            "predicted": predicted,
            "gold": "A",
            "correct": correct,
            "error_kind": err,
            "error_message": f"{err} in line 3" if err else None,
            "error_line": 3 if err else None,
            "proof": None,
            "backend": BACKENDS[i % len(BACKENDS)],
            "solve_seconds": latency / 10,
            "latency_seconds": latency,
            "worker": "w",
            "attempts": 1,
            "finished_at": t0 + i * 0.01,
            "model": "synthetic",
            "prompt_tokens": rng.randint(500, 3000),
            "completion_tokens": rng.randint(50, 900),
            "llm_calls": 1,
            "cached_calls": 0,
            "llm_seconds": latency / 2,
            "rounds": rng.randint(1, 4),
            "success_round": 1 if executed else None,
            "attempts_log": "[]",
            "fallback_method": None,
            "fallback_predicted": None,
            "fallback_correct": None,
            "route": None,
            "trace": "{}",
            "stage_seconds": json.dumps({"formalize": latency * 0.6, "solve": latency * 0.3, "refine": latency * 0.1}),
            "certificate": None,
        }
        for k, v in row.items():
            cols[k].append(v)
        if executed and predicted:
            verdicts.append(
                {
                    "problem_id": ids[i],
                    "dataset": datasets[i],
                    "language": "logiclm-lp",
                    "backend": row["backend"],
                    "kind": "derivation",
                    "verdict": rng.choice(["verified"] * 8 + ["failed", "unverifiable"]),
                    "reason": None,
                    "checker": "derivation-checker",
                    "seconds": 0.001,
                }
            )
    meta = {
        "sessions": {"s": n * 0.01},
        "wall_seconds": n * 0.01,
        "source": str(problems_path),
        "method": "logiclm",
        "engine": "synthetic",
        "model": "synthetic",
    }
    table = pa.table(cols, schema=RESULT_SCHEMA).replace_schema_metadata({b"symbolkg": json.dumps(meta).encode()})
    pq.write_table(table, run)
    pq.write_table(pa.Table.from_pylist(verdicts, schema=VERIFY_SCHEMA), run.with_name(run.stem + ".verify.parquet"))
    return run


def serve(folder: Path):  # -> (uvicorn.Server, base url)
    import uvicorn  # the benchmark's server, as `symbolkg view` starts it

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app([str(folder)]), host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


def timed_get(url: str) -> float:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        r.read()
        assert r.status == 200, url
    return time.perf_counter() - t


def request_mix(kind: str, rng: random.Random, n_rows: int) -> str:
    """One request path of ``kind`` (module docstring)."""
    api = "/api/run/synthetic-100k/problems?"
    filters = {
        "dataset": DATASETS,
        "outcome": ["correct", "wrong", "unanswered"],
        "error": ERRORS,
        "verdict": ["verified", "failed", "unverifiable", "not executed", "unchecked"],
        "backend": BACKENDS,
        "rounds": ["1", "2", "3", "4"],
    }
    if kind == "runs":
        return rng.choice(["/api/runs", "/"])
    if kind == "page":
        return api + urllib.parse.urlencode({"page": rng.randint(1, n_rows // 50)})
    if kind == "filter":
        picked = rng.sample(sorted(filters), rng.choice([1, 2]))
        return api + urllib.parse.urlencode({k: rng.choice(filters[k]) for k in picked} | {"page": rng.randint(1, 5)})
    if kind == "sort":
        k = rng.choice(sorted(filters))
        return api + urllib.parse.urlencode(
            {
                "sort": rng.choice(["latency", "-latency", "tokens", "-tokens"]),
                k: rng.choice(filters[k]),
                "page": rng.randint(1, 20),
            }
        )
    if kind == "search":
        words = rng.sample(WORDS + NAMES, rng.choice([1, 2]))
        return api + urllib.parse.urlencode({"q": " ".join(words), "page": rng.randint(1, 3)})
    if kind == "problem":
        return f"/run/synthetic-100k/problem/syn-{rng.randrange(n_rows):06d}"
    raise ValueError(kind)


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=200, help="requests per kind")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t = time.perf_counter()
        run = write_run(folder, args.rows, args.seed)
        write_s = time.perf_counter() - t
        server, base = serve(folder)
        try:
            cold = {
                "runs_list_s": timed_get(base + "/api/runs"),
                "first_table_page_s": timed_get(base + "/api/run/synthetic-100k/problems"),
                "run_page_s": timed_get(base + "/run/synthetic-100k"),
            }
            results = {}
            for kind in ("runs", "page", "filter", "sort", "search", "problem"):
                times = [timed_get(base + request_mix(kind, rng, args.rows)) for _ in range(args.requests)]
                results[kind] = {
                    "n": len(times),
                    "p50_ms": round(1000 * statistics.median(times), 2),
                    "p95_ms": round(1000 * percentile(times, 0.95), 2),
                    "max_ms": round(1000 * max(times), 2),
                    "mean_ms": round(1000 * statistics.mean(times), 2),
                    "times_ms": [round(1000 * x, 3) for x in times],
                }
        finally:
            server.should_exit = True
        size_mb = run.stat().st_size / 2**20
    target = ("runs", "page", "filter", "sort", "search")
    report = {
        "rows": args.rows,
        "requests_per_kind": args.requests,
        "results_parquet_mb": round(size_mb, 1),
        "write_seconds": round(write_s, 2),
        "cold": {k: round(v, 3) for k, v in cold.items()},
        "requests": results,
        "target_p95_ms": 200,
        "cpus": os.cpu_count(),
        "load_average_1m": {"before": round(load_before[0], 2), "after": round(os.getloadavg()[0], 2)},
        "meets_target": all(results[k]["p95_ms"] < 200 for k in target),
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "view_server.json").write_text(json.dumps(report, indent=2))
    plot(report, OUT / "view_server.png")
    print(
        f"{args.rows} rows ({size_mb:.1f} MB results Parquet); cold: runs list {cold['runs_list_s']:.2f} s, "
        f"first table page {cold['first_table_page_s']:.2f} s (builds the DuckDB table), "
        f"run page {cold['run_page_s']:.2f} s"
    )
    print(f"{'request':10s} {'n':>5s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s}")
    for kind, r in results.items():
        print(f"{kind:10s} {r['n']:5d} {r['p50_ms']:8.1f} {r['p95_ms']:8.1f} {r['max_ms']:8.1f}")
    print(
        f"p95 < 200 ms for runs/page/filter/sort/search: {report['meets_target']} "
        f"(load average {report['load_average_1m']['before']} -> {report['load_average_1m']['after']} on "
        f"{os.cpu_count()} cpus)"
    )


def plot(report: dict, path: Path) -> None:
    import matplotlib  # plotting only here

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = list(report["requests"])
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.boxplot([report["requests"][k]["times_ms"] for k in kinds], tick_labels=kinds, showfliers=True)
    ax.axhline(200, color="tab:red", linestyle="--", linewidth=1, label="target p95 200 ms")
    ax.set_yscale("log")
    ax.set_ylabel("ms per request (one at a time)")
    ax.set_title(f"symbolkg view over a run of {report['rows']:,} rows")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
