"""Run the solver and job tests idle and under CPU load; fail if any test's verdict depends on the load.

    .venv/bin/python tests/load_check.py                     # tests/solvers tests/jobs, -m "not slow"
    .venv/bin/python tests/load_check.py --all               # slow tests too
    .venv/bin/python tests/load_check.py tests/solvers/fol/test_fol.py --repeat 3 --json /tmp/load.json

Each repeat is a pair of pytest runs over the same tests: first on the machine as it is (meant to be
idle: start it when nothing else runs; the load average at the start of each run is printed), then
with every core kept busy by ``--load-procs`` busy-loop processes (default: ``os.cpu_count()``)
that this script starts before that run and kills after it, also on Ctrl-C or SIGTERM. Each busy
loop also exits by itself when this script dies without cleaning up (it watches its parent).

Verdicts are read per test from pytest's ``--junitxml`` report. The script prints, per run, the
number of tests passed, failed (errors included) and skipped, then every test whose verdict was
not the same in all runs, and every test that failed in some run. It exits 1 if any verdict
differs or any test failed, 2 if a pytest run could not run its tests (usage or collection
error, no tests collected), 130 on Ctrl-C or SIGTERM.

Standard library only; pytest itself runs in a subprocess with this interpreter
(``sys.executable``), from the repository root, without the cache plugin (no ``.pytest_cache``
writes, so it leaves another session's ``--lf`` state alone).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PATHS = ("tests/solvers", "tests/jobs")

# A busy loop that also ends when its parent (this script) is gone: a SIGKILLed script cannot run
# its cleanup, and an orphaned busy loop would otherwise spin until someone notices. The parent
# check runs every few milliseconds of spinning, so the loop is busy >99.9% of the time.
_BUSY_LOOP = """
import os, sys
parent = int(sys.argv[1])
while os.getppid() == parent:
    for _ in range(200_000):
        pass
"""

# pytest exit codes that mean "the tests ran" (0: all passed, 1: some failed). Anything else
# (interrupted, internal error, usage error, no tests collected) means there are no verdicts to compare.
_TESTS_RAN = (0, 1)


@dataclass
class Run:
    """One pytest run and its per-test verdicts."""

    kind: str  # "idle" or "load"
    repeat: int  # 1-based
    exit_code: int
    wall_s: float
    load_avg_at_start: float  # 1-minute load average when the run started
    load_procs: int  # busy-loop processes running during the run
    outcomes: dict[str, str] = field(default_factory=dict)  # test id -> passed / failed / error / skipped
    durations: dict[str, float] = field(default_factory=dict)  # test id -> seconds (junit "time")

    def count(self, *verdicts: str) -> int:
        return sum(v in verdicts for v in self.outcomes.values())


class LoadGenerator:
    """``n`` busy-loop processes, started by :meth:`start` and all killed by :meth:`stop` (idempotent)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        for _ in range(self.n):
            # A session of their own: a Ctrl-C on the terminal reaches pytest and this script, and the
            # loops are then killed here, in order, rather than racing the terminal's signal.
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", _BUSY_LOOP, str(os.getpid())],
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )

    def stop(self) -> None:
        procs, self.procs = self.procs, []
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        for proc in procs:
            proc.wait()

    def running(self) -> int:
        return sum(p.poll() is None for p in self.procs)


def _test_id(case: ET.Element) -> str:
    return f"{case.get('classname', '')}::{case.get('name', '')}"


# When one test has several junit entries (an error in teardown after a failure in the call), the
# worst verdict wins.
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


def read_junit(path: Path) -> tuple[dict[str, str], dict[str, float]]:
    """Per-test verdict (passed / failed / error / skipped) and duration from a pytest junit XML file."""
    outcomes: dict[str, str] = {}
    durations: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("error") is not None:
            verdict = "error"
        elif case.find("failure") is not None:
            verdict = "failed"
        elif case.find("skipped") is not None:
            verdict = "skipped"
        else:
            verdict = "passed"
        key = _test_id(case)
        if key not in outcomes or _RANK[verdict] > _RANK[outcomes[key]]:
            outcomes[key] = verdict
        durations[key] = durations.get(key, 0.0) + float(case.get("time") or 0.0)
    return outcomes, durations


def run_pytest(
    kind: str,
    repeat: int,
    paths: list[str],
    marker: str | None,
    extra: list[str],
    workdir: Path,
    load: LoadGenerator | None,
) -> Run:
    report = workdir / f"{kind}-{repeat}.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *extra]
    if marker is not None:
        cmd += ["-m", marker]
    cmd += paths
    load_avg = os.getloadavg()[0]
    print(
        f"\n=== {kind} run {repeat}: load average {load_avg:.2f}, "
        f"{load.running() if load else 0} busy-loop processes\n$ {shlex.join(cmd)}",
        flush=True,
    )
    busy = load.running() if load else 0
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO)
    try:
        exit_code = proc.wait()
    except KeyboardInterrupt:
        # Free the cores first so that pytest's own cleanup (killing solver workers) is quick, then
        # give pytest the SIGINT a terminal Ctrl-C would have sent it (a SIGTERM to this script did
        # not) and time to tear its fixtures down; kill it only if it does not stop.
        if load is not None:
            load.stop()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise
    wall_s = time.monotonic() - start
    run = Run(kind, repeat, exit_code, round(wall_s, 1), round(load_avg, 2), busy)
    if report.exists():
        run.outcomes, run.durations = read_junit(report)
    return run


def differing(runs: list[Run]) -> dict[str, list[str]]:
    """Tests whose verdict is not the same in every run (a test missing from a run counts as 'absent')."""
    tests = sorted({t for r in runs for t in r.outcomes})
    table = {t: [r.outcomes.get(t, "absent") for r in runs] for t in tests}
    return {t: verdicts for t, verdicts in table.items() if len(set(verdicts)) > 1}


def failed(runs: list[Run]) -> dict[str, list[str]]:
    tests = sorted({t for r in runs for t, v in r.outcomes.items() if v in ("failed", "error")})
    return {t: [r.outcomes.get(t, "absent") for r in runs] for t in tests}


def print_summary(runs: list[Run], diff: dict[str, list[str]], bad: dict[str, list[str]]) -> None:
    print("\n=== load check summary")
    header = (
        f"{'run':10s} {'load avg':>8s} {'busy':>4s} {'wall s':>7s} {'tests':>6s} {'passed':>6s} {'failed':>6s} "
        f"{'skipped':>7s} {'exit':>4s}"
    )
    print(header)
    print("-" * len(header))
    for r in runs:
        print(
            f"{r.kind + ' ' + str(r.repeat):10s} {r.load_avg_at_start:8.2f} {r.load_procs:4d} {r.wall_s:7.1f} "
            f"{len(r.outcomes):6d} {r.count('passed'):6d} {r.count('failed', 'error'):6d} {r.count('skipped'):7d} "
            f"{r.exit_code:4d}"
        )
    names = [f"{r.kind} {r.repeat}" for r in runs]
    if diff:
        print(f"\n{len(diff)} test(s) whose verdict differs between runs ({', '.join(names)}):")
        for test, verdicts in diff.items():
            print(f"  {test}: {', '.join(verdicts)}")
    else:
        print("\nno test's verdict differs between runs")
    if bad:
        print(f"\n{len(bad)} test(s) failed in some run ({', '.join(names)}):")
        for test, verdicts in bad.items():
            print(f"  {test}: {', '.join(verdicts)}")
    else:
        print("no test failed")
    idle = [r for r in runs if r.kind == "idle"]
    loaded = [r for r in runs if r.kind == "load"]
    if idle and loaded:
        print(
            f"wall time: idle {sum(r.wall_s for r in idle) / len(idle):.1f} s, "
            f"under load {sum(r.wall_s for r in loaded) / len(loaded):.1f} s (mean per run)"
        )


def _raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # the same cleanup path as Ctrl-C


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", help=f"test files or folders (default: {' '.join(DEFAULT_PATHS)})")
    parser.add_argument("--all", action="store_true", help='include slow tests (default: -m "not slow")')
    parser.add_argument("--repeat", type=int, default=1, metavar="N", help="idle+load pairs to run (default 1)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write every run's per-test verdicts here")
    parser.add_argument(
        "--load-procs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help=f"busy-loop processes during the load runs (default: os.cpu_count() = {os.cpu_count()})",
    )
    parser.add_argument(
        "--pytest-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an extra argument for pytest, e.g. --pytest-arg=-x (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.load_procs < 1:
        parser.error("--repeat and --load-procs must be >= 1")
    paths = args.paths or list(DEFAULT_PATHS)
    marker = None if args.all else "not slow"

    signal.signal(signal.SIGTERM, _raise_on_sigterm)
    runs: list[Run] = []
    load = LoadGenerator(args.load_procs)
    interrupted = False
    with tempfile.TemporaryDirectory(prefix="symbolkg-load-check-") as tmp:
        try:
            for repeat in range(1, args.repeat + 1):
                runs.append(run_pytest("idle", repeat, paths, marker, args.pytest_arg, Path(tmp), None))
                if runs[-1].exit_code not in _TESTS_RAN:
                    break
                try:
                    load.start()
                    time.sleep(1.0)  # let the loops get going (not a synchronisation: only the load level)
                    runs.append(run_pytest("load", repeat, paths, marker, args.pytest_arg, Path(tmp), load))
                finally:
                    load.stop()
                if runs[-1].exit_code not in _TESTS_RAN:
                    break
        except KeyboardInterrupt:
            interrupted = True
            print("\ninterrupted: busy loops stopped", file=sys.stderr)
        finally:
            load.stop()

    diff, bad = differing(runs), failed(runs)
    if runs:
        print_summary(runs, diff, bad)
    broken = [r for r in runs if r.exit_code not in _TESTS_RAN]
    for r in broken:
        print(f"{r.kind} run {r.repeat}: pytest exited with code {r.exit_code}; its tests did not run (see above)")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "paths": paths,
                    "marker": marker,
                    "load_procs": args.load_procs,
                    "repeat": args.repeat,
                    "interrupted": interrupted,
                    "runs": [asdict(r) for r in runs],
                    "differing": diff,
                    "failed": bad,
                    "ok": not (diff or bad or broken or interrupted),
                },
                indent=1,
            )
            + "\n"
        )
        print(f"results written to {args.json}")
    if interrupted:
        return 130
    if broken or not runs:
        return 2
    return 1 if diff or bad else 0


if __name__ == "__main__":
    sys.exit(main())
