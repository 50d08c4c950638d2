"""A driver killed outright leaves no process behind, and its rerun completes the job exactly.

The job is ``symbolkg solve`` with the Ray executor (the default): the driver starts a local Ray
(GCS, raylet, dashboard and runtime-env agents, workers), two solver actors each own a worker
process, and those start Prover9 and SWI-Prolog. The input is FOLIO's recorded GPT-4 programs
behind one Prolog program that sleeps (``go :- sleep(3600)``): it holds one worker until the
per-program limit (``TIMEOUT_S``) in every run, so the job is still open when the results store
commits its first part (after 64 rows, or 5 s after a row), however fast the machine is (the
sleep is wall-clock time, and FOLIO's programs run beside it on the other worker). Every FOLIO
program ends far under the limit (they are decided in milliseconds), so the rows compare exactly;
the test checks that on the uninterrupted run (only the sleeper times out).

The kill is ``SIGKILL`` of the driver's pid alone (not its process group): its descendants are
read from ``/proc`` just before, and within a few seconds none of them may be alive. The reaper
(:mod:`symbolkg.jobs.pipeline.reaper`, started by the command) does that; without it Ray's agents
outlive the driver under init.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.datasets.registry import load_problems
from symbolkg.jobs.pipeline import reaper
from tests.conftest import data_or_skip

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

TIMEOUT_S = 30  # per program: the sleeper's hold on one worker (see the module docstring)
REAPED_WITHIN_S = 10  # "a few seconds": the reaper polls every 0.25 s and kills in rounds of 0.05 s
SLEEPER = {
    "id": "sleeper",
    "dataset": "custom/kill",
    "context": "A program that never answers.",
    "question": "Does it answer?",
    "options": ["A) True", "B) False"],
    "answer": "B",
    "program": {"language": "prolog", "text": "go :- sleep(3600).\n% query: go"},
}


def write_input(path: Path, data: Path) -> int:
    """The sleeper, then FOLIO's recorded programs, as a JSON Lines problem file; the number of problems."""
    folio = load_problems(str(data / "logiclm" / "programs" / "FOLIO_dev_gpt-4.json"), str(data)).problems
    records = [SLEEPER] + [
        {
            "id": p.id,
            "dataset": p.dataset,
            "context": p.context,
            "question": p.question,
            "options": list(p.options),
            "answer": p.answer,
            "program": {"language": p.program.language, "text": p.program.text},
        }
        for p in folio
        if p.program is not None
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return len(records)


def command(problems: Path, out: Path, data: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "symbolkg.jobs",
        "solve",
        "--programs",
        str(problems),
        "--out",
        str(out),
        "--workers",
        "2",
        "--timeout-s",
        str(TIMEOUT_S),
        "--no-progress",
        "--data-dir",
        str(data),
    ]


def answers(path: Path) -> dict[str, tuple]:
    rows = pq.read_table(path).to_pylist()
    ids = [r["problem_id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicated rows"
    return {r["problem_id"]: (r["status"], r["answer"], r["predicted"], r["correct"], r["error_kind"]) for r in rows}


def alive(recorded: dict[int, int]) -> dict[int, int]:
    """The recorded processes (pid -> start time) still running: same start time, not a zombie."""
    return {pid: start for pid, start in recorded.items() if (reaper._stat(pid) or (0, -1))[1] == start}


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120]
    except OSError:
        return "?"


def test_a_killed_driver_leaves_no_process_and_the_rerun_completes_the_job(tmp_path):
    data = data_or_skip()
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # each driver starts its own local Ray
    problems = tmp_path / "problems.jsonl"
    n = write_input(problems, data)
    clean = tmp_path / "clean.parquet"
    done = subprocess.run(command(problems, clean, data), env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    expected = answers(clean)
    assert len(expected) == n
    assert {pid for pid, a in expected.items() if a[0] == "timeout"} == {"sleeper"}

    out = tmp_path / "killed.parquet"
    parts = out.with_name(out.name + ".parts")
    driver = subprocess.Popen(
        command(problems, out, data),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300  # generous: Ray starts in ~10-20 s, the first part comes seconds later
        while time.monotonic() < deadline and not (parts.is_dir() and list(parts.glob("part-*.parquet"))):
            assert driver.poll() is None, "the driver ended before it committed a part"
            time.sleep(0.01)
        recorded = reaper.descendants(driver.pid, reaper._processes())
        names = " | ".join(cmdline(pid) for pid in recorded)
        os.kill(driver.pid, signal.SIGKILL)  # the driver alone: its children are not signalled by us
        driver.wait()
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    assert not out.exists(), "the job finished before it could be killed"
    for part in ("raylet", "gcs_server", "swipl", "symbolkg.jobs.pipeline.reaper"):
        assert part in names, f"no {part} among the driver's processes before the kill: {names}"
    t0 = time.monotonic()
    while alive(recorded) and time.monotonic() - t0 < REAPED_WITHIN_S:
        time.sleep(0.1)
    left = alive(recorded)
    assert not left, f"processes of the killed job still alive: {[cmdline(p) for p in left]}"

    before = sum(pq.read_table(p).num_rows for p in parts.glob("part-*.parquet"))
    assert 0 < before < n
    rerun = subprocess.run(command(problems, out, data), env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f"{before} already done" in rerun.stderr
    assert answers(out) == expected  # same ids, no duplicates, same answers
    assert not parts.exists()
