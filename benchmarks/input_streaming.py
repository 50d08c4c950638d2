"""Input streaming: `symbolkg solve` on 10^4, 10^5 and 10^6-line JSON Lines files of problems with programs.

The input is read as the job goes (jobs/datasets/stream.py), so a job's first problem should start
within seconds and the driver's peak memory should not follow the file. This writes a synthetic
file (copies of the 500 recorded GPT-4 ProntoQA programs, ``ProntoQA_dev_gpt-4.json``, under new
ids; ~2 KB a line, ~2 GB at 10^6, into benchmarks/out/data/, which git ignores) and runs the real
command line at each size, each run in a process of its own:

* ``limit``: ``symbolkg solve --programs FILE --limit 1000`` (the recorded path, real solver
  workers: ``--executor local --workers 2``): time to the first problem, peak driver RSS;
* ``shard``: ``--shard 0/500`` without a limit: the shard's 1/500 of the problems solved by the real
  workers, the other shards' lines passed over (read, not parsed);
* ``whole``: every line through the driver (read, parsed, validated, a request built, a row built
  and written to the results Parquet) with an instant solver pool in place of the workers (it
  answers each request at once, no process), the cheapest path that pushes every line through
  the driver; its report table is not printed (``REPORT_INLINE_MAX = 0``), so the peak is the job's.

The first problem's time is from the command's ``main()`` to the first request the pool takes (the
first line read is timed too). Peak RSS is the driver process's own (``ru_maxrss``; the solver
workers are processes of their own), and a sampler records resident memory every 0.2 s.

    python benchmarks/input_streaming.py [--sizes 10000 100000 1000000] [--modes limit shard whole]
        [--before TREE]

``--before TREE`` also runs the ``shard`` and ``whole`` modes (``--before-modes``, ``--before-sizes``) with
the package from TREE (e.g. ``git archive HEAD | tar -x -C /tmp/before``: the code before streaming).
Compiled modules are cached outside the tree for the runs (this machine sets PYTHONDONTWRITEBYTECODE).
Writes benchmarks/out/input_streaming.json and .png. Target: time to the first problem within
seconds and peak RSS flat within 20% across the sizes.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
DATA = OUT / "data" / "input_streaming"
PROGRAMS = (
    Path(os.environ.get("SYMBOLKG_DATA", HERE.parent.parent / "shared" / "data"))
    / "logiclm"
    / "programs"
    / "ProntoQA_dev_gpt-4.json"
)
MODES = ("limit", "shard", "whole")


# --------------------------------------------------------------------------- the data


def write_data(sizes: list[int]) -> dict[int, Path]:
    """``problems-<n>.jsonl`` for each size (the smaller ones are prefixes of the largest); kept between runs."""
    DATA.mkdir(parents=True, exist_ok=True)
    paths = {n: DATA / f"problems-{n}.jsonl" for n in sizes}
    todo = [n for n, p in paths.items() if not (p.is_file() and p.with_suffix(".done").is_file())]
    if not todo:
        return paths
    records = [
        r for r in json.loads(PROGRAMS.read_text()) if r["raw_logic_programs"] and r["raw_logic_programs"][0].strip()
    ]
    handles = {n: paths[n].open("w", encoding="utf-8") for n in todo}
    try:
        for i in range(max(todo)):
            r = records[i % len(records)]
            line = (
                json.dumps(
                    {
                        "id": f"stream-{i:07d}",
                        "context": r["context"],
                        "question": r["question"],
                        "options": r["options"],
                        "answer": r["answer"],
                        "program": {"language": "logiclm-lp", "text": r["raw_logic_programs"][0]},
                    }
                )
                + "\n"
            )
            for n, handle in handles.items():
                if i < n:
                    handle.write(line)
    finally:
        for handle in handles.values():
            handle.close()
    for n in todo:
        paths[n].with_suffix(".done").write_text(str(n))
    return paths


# --------------------------------------------------------------------------- one run (the child process)


class RssSampler:
    """Resident memory of this process every ``every_s`` seconds: (seconds since start, MiB)."""

    def __init__(self, t0: float, every_s: float = 0.2) -> None:
        self.t0, self.every_s = t0, every_s
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._page_mb = os.sysconf("SC_PAGE_SIZE") / 2**20
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            with open("/proc/self/statm") as f:
                resident = int(f.read().split()[1])
            self.samples.append((round(time.perf_counter() - self.t0, 2), round(resident * self._page_mb, 1)))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class Marks:
    """When things first happened, in seconds since ``main()`` was called."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.at: dict[str, float] = {}

    def mark(self, name: str) -> None:
        self.at.setdefault(name, round(time.perf_counter() - self.t0, 3))


class TimedPool:
    """A solver pool that notes the first request taken and the last result given (the job's span)."""

    def __init__(self, pool: Any, marks: Marks) -> None:
        self.pool, self.marks, self.workers = pool, marks, pool.workers

    def _timed(self, requests: Iterable[Any]) -> Iterator[Any]:
        for request in requests:
            self.marks.mark("first_request_s")
            yield request

    def imap_unordered(self, requests: Iterable[Any]) -> Iterator[Any]:
        for result in self.pool.imap_unordered(self._timed(requests)):
            self.marks.mark("first_result_s")
            yield result
        self.marks.at["job_end_s"] = round(time.perf_counter() - self.marks.t0, 3)

    async def solve(self, request: Any) -> Any:
        return await self.pool.solve(request)

    def close(self) -> None:
        self.pool.close()


class InstantPool:
    """Answers every request at once ("A", proved), in this process: nothing but the driver's own work is timed."""

    workers = 1

    def imap_unordered(self, requests: Iterable[Any]) -> Iterator[Any]:
        from symbolkg.solvers.outcomes import Outcome, Status
        from symbolkg.solvers.runtime.local_pool import PoolResult

        outcome = Outcome(Status.PROVED, answer="A", seconds=0.0, backend="instant")
        for request in requests:
            yield PoolResult(request, outcome, "instant/0", 1, 0.0)

    async def solve(self, request: Any) -> Any:
        raise NotImplementedError("the instant pool serves the recorded path only")

    def close(self) -> None:
        pass


def child(mode: str, result_path: Path, solve_args: list[str]) -> int:
    """``symbolkg solve`` in this process with the pool of ``mode``; the timings and memory go to ``result_path``."""
    t_start = time.perf_counter()
    import symbolkg.actors.solver_pool as solver_pool
    import symbolkg.jobs.commands.solve as solve_command
    import symbolkg.jobs.datasets.files as files
    from symbolkg.jobs.cli import main

    imports_s = time.perf_counter() - t_start
    t0 = time.perf_counter()
    marks = Marks(t0)
    real_make = solver_pool.make_solver_pool
    solver_pool.make_solver_pool = lambda *a, **k: TimedPool(
        InstantPool() if mode == "whole" else real_make(*a, **k), marks
    )
    if hasattr(files, "JsonLines"):  # the code before streaming has no such class: no first-line time
        real_records = files.JsonLines.records

        def records(self: Any, *a: Any, **k: Any) -> Iterator[Any]:
            for item in real_records(self, *a, **k):
                marks.mark("first_record_s")
                yield item

        files.JsonLines.records = records  # type: ignore[method-assign]
    fingerprint = getattr(solve_command, "input_fingerprint", None)
    if fingerprint is not None:  # the run's provenance hashes the input file before the job: timed apart

        def timed_fingerprint(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return fingerprint(*a, **k)
            finally:
                marks.at["input_fingerprint_s"] = round(
                    marks.at.get("input_fingerprint_s", 0) + time.perf_counter() - t, 3
                )

        solve_command.input_fingerprint = timed_fingerprint
    if mode == "whole" and hasattr(solve_command, "REPORT_INLINE_MAX"):
        solve_command.REPORT_INLINE_MAX = 0  # the table would read every row back: not the job's memory
    sampler = RssSampler(t0)
    try:
        rc = main(["solve", *solve_args])
    finally:
        sampler.stop()
    wall_s = time.perf_counter() - t0
    end = marks.at.get("job_end_s", wall_s)
    result = {
        "rc": rc,
        "imports_s": round(imports_s, 3),
        "wall_s": round(wall_s, 3),
        **marks.at,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "job_peak_rss_mb": max((m for t, m in sampler.samples if t <= end), default=None),
        "rss_mb": sampler.samples[:: max(1, len(sampler.samples) // 200)],
    }
    result_path.write_text(json.dumps(result))
    return rc


# --------------------------------------------------------------------------- the runs (the parent)


def solve_args(mode: str, path: Path, out: Path, limit: int) -> list[str]:
    base = [
        "--programs",
        str(path),
        "--out",
        str(out),
        "--executor",
        "local",
        "--workers",
        "2",
        "--no-progress",
        "--overwrite",
    ]
    return {"limit": [*base, "--limit", str(limit)], "shard": [*base, "--shard", "0/500"], "whole": base}[mode]


def run_one(mode: str, n: int, path: Path, limit: int, before: Path | None) -> dict[str, Any]:
    """One run in a process of its own (its own peak RSS); ``before``: the package of that tree instead."""
    env = child_env(before)
    with tempfile.TemporaryDirectory() as tmp:
        result_path = Path(tmp) / "result.json"
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            mode,
            "--result",
            str(result_path),
            "--",
            *solve_args(mode, path, Path(tmp) / "run.parquet", limit),
        ]
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        process_s = time.perf_counter() - t0
        if done.returncode != 0 or not result_path.is_file():
            raise RuntimeError(f"{mode} {n}: exit {done.returncode}\n{done.stderr[-3000:]}")
        result = json.loads(result_path.read_text())
    row = {
        "mode": mode,
        "lines": n,
        "code": "before" if before is not None else "after",
        "process_s": round(process_s, 2),
        "load_1min_before": round(load, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
        **result,
    }
    span = (row.get("job_end_s") or row["wall_s"]) - (row.get("first_request_s") or 0)
    row["lines_per_s"] = round(n / span, 1) if mode != "limit" and span > 0 else None  # first problem to last
    print(
        f"{row['code']:>6} {mode:>5} {n:>9,} lines: first problem {row.get('first_request_s')} s "
        f"(first line {row.get('first_record_s')} s; input hashed in {row.get('input_fingerprint_s')} s), "
        f"wall {row['wall_s']} s, peak RSS {row['peak_rss_mb']} MiB "
        f"(job {row['job_peak_rss_mb']}), load {row['load_1min_before']}",
        file=sys.stderr,
    )
    return row


def child_env(before: Path | None) -> dict[str, str]:
    """The runs' environment: compiled modules cached (outside the tree), as an installed package has them.

    This machine sets PYTHONDONTWRITEBYTECODE, so every process would compile every module it
    imports (~6 s on 2 busy cores), a fixed cost that no installation pays; ``before``: its tree's package.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "symbolkg-bench-pycache")
    if before is not None:
        env["PYTHONPATH"] = str(package_of(before)) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def warm_up(before: Path | None) -> None:
    """Import what a run imports once, so that the first measured run does not compile it all."""
    code = (
        "import symbolkg.jobs.cli, symbolkg.actors.solver_pool, symbolkg.jobs.commands.solve, "
        "symbolkg.solvers.runtime.worker, symbolkg.solvers.registry, pandas, matplotlib"
    )
    subprocess.run([sys.executable, "-c", code], env=child_env(before), check=True)


def package_of(tree: Path) -> Path:
    """A folder whose ``symbolkg`` package is ``tree``'s layers (as the editable install maps this checkout)."""
    digest = hashlib.sha256(str(tree.resolve()).encode()).hexdigest()[:12]  # hash() of a str is salted per process
    root = Path(tempfile.gettempdir()) / f"symbolkg-before-{digest}"
    pkg = root / "symbolkg"
    if not pkg.is_dir():
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        for layer in ("jobs", "actors", "retrieval", "solvers", "cluster"):
            (pkg / layer).symlink_to(tree.resolve() / layer)
    return root


def spread(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(max(values) / min(values) - 1, 4) if len(values) > 1 else None


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per mode (after): the spread of the peaks across sizes and the slowest first problem."""
    out = {}
    for mode in MODES:
        mine = [r for r in rows if r["mode"] == mode and r["code"] == "after"]
        if mine:
            out[mode] = {
                "peak_rss_spread": spread(mine, "peak_rss_mb"),
                "job_peak_rss_spread": spread(mine, "job_peak_rss_mb"),
                "max_first_request_s": max(r.get("first_request_s") or 0 for r in mine),
            }
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Peak RSS and time to the first problem against lines (log-log), and resident memory over the whole-file runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    styles, colors = (
        {"after": "o-", "before": "s--"},
        {"limit": "tab:blue", "shard": "tab:orange", "whole": "tab:green"},
    )
    for code in ("after", "before"):
        for mode in MODES:
            mine = sorted((r for r in rows if r["mode"] == mode and r["code"] == code), key=lambda r: r["lines"])
            if not mine:
                continue
            xs, peaks = [r["lines"] for r in mine], [r["job_peak_rss_mb"] or r["peak_rss_mb"] for r in mine]
            axes[0].plot(xs, peaks, styles[code], color=colors[mode], label=f"{mode} ({code})")
            if code == "before" or mode == "whole":
                for x, y in zip(xs, peaks, strict=True):
                    axes[0].annotate(
                        f"{y:.0f}", (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7
                    )
            axes[1].plot(
                xs, [r.get("first_request_s") for r in mine], styles[code], color=colors[mode], label=f"{mode} ({code})"
            )
            if code == "after" and all(r.get("input_fingerprint_s") is not None for r in mine):
                axes[1].plot(
                    xs,
                    [r["first_request_s"] - r["input_fingerprint_s"] for r in mine],
                    ":",
                    color=colors[mode],
                    label=f"{mode} (after), less the input's sha256",
                )
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="lines in the input file",
        ylabel="driver peak RSS during the job (MiB)",
        title="peak memory",
    )
    axes[1].set(
        xscale="log",
        yscale="log",
        xlabel="lines in the input file",
        ylabel="seconds",
        title="time to the first problem (from main())",
    )
    for r in sorted((r for r in rows if r["mode"] == "whole"), key=lambda r: (r["code"], r["lines"])):
        end = r.get("job_end_s") or r["wall_s"]
        pts = [(t / end, m) for t, m in r["rss_mb"] if t <= end]
        axes[2].plot(
            [t for t, _ in pts],
            [m for _, m in pts],
            "-" if r["code"] == "after" else "--",
            label=f"{r['lines']:,} lines ({r['code']}, {r['lines_per_s']:,.0f} lines/s)",
        )
    axes[2].set(
        xlabel="share of the job's time (from main())",
        ylabel="resident MiB",
        title="whole file through the driver (instant solver)",
    )
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--limit", type=int, default=1000, help="--limit of the limit mode (default 1000)")
    parser.add_argument("--before", type=Path, help="a tree of the code before streaming (runs shard and whole too)")
    parser.add_argument("--before-sizes", type=int, nargs="+", help="sizes for --before (default: --sizes)")
    parser.add_argument(
        "--before-modes",
        nargs="+",
        choices=("shard", "whole"),
        default=["shard", "whole"],
        help="modes for --before (default shard whole)",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("solve_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child, args.result, args.solve_args)
    started = time.perf_counter()
    paths = write_data(sorted(set(args.sizes) | set(args.before_sizes or [])))
    warm_up(None)
    rows = [run_one(mode, n, paths[n], args.limit, None) for mode in args.modes for n in sorted(args.sizes)]
    if args.before is not None:
        warm_up(args.before)
        rows += [
            run_one(mode, n, paths[n], args.limit, args.before)
            for mode in args.before_modes
            for n in sorted(args.before_sizes or args.sizes)
        ]
    args.out.mkdir(parents=True, exist_ok=True)
    result = {
        "command": "python benchmarks/input_streaming.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "date": datetime.date.today().isoformat(),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "note": "shared with other jobs: see each run's 1-minute load average",
        },
        "input": {
            str(n): {"path": str(p.relative_to(HERE.parent)), "bytes": p.stat().st_size} for n, p in paths.items()
        },
        "summary": summary(rows),
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 1),
    }
    (args.out / "input_streaming.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(rows, args.out / "input_streaming.png")
    print(
        json.dumps(
            {
                "summary": result["summary"],
                "rows": [
                    {
                        k: r.get(k)
                        for k in (
                            "code",
                            "mode",
                            "lines",
                            "input_fingerprint_s",
                            "first_record_s",
                            "first_request_s",
                            "wall_s",
                            "peak_rss_mb",
                            "job_peak_rss_mb",
                            "lines_per_s",
                            "load_1min_before",
                        )
                    }
                    for r in rows
                ],
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
