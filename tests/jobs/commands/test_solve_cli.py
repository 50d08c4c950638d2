"""`symbolkg solve` / `report` end to end: real worker processes, real Parquet, kills and resumes."""

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

from symbolkg.jobs.cli import main
from tests.conftest import FIXTURES, lp_problem, write_jsonl

REPORT_KEYS = {
    "problems",
    "executed",
    "execution_rate",
    "accuracy",
    "accuracy_on_executed",
    "errors_by_kind",
    "wall_seconds",
}


def report_json(run: Path, capsys) -> dict:
    capsys.readouterr()
    assert main(["report", str(run), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_generic_jsonl_with_programs_in_several_languages(tmp_path, capsys):
    out = tmp_path / "custom.parquet"
    rc = main(
        [
            "solve",
            "--programs",
            str(FIXTURES / "custom_problems.jsonl"),
            "--out",
            str(out),
            "--executor",
            "local",
            "--workers",
            "1",
            "--no-progress",
        ]
    )
    assert rc == 0
    rows = {r["problem_id"]: r for r in pq.read_table(out).to_pylist()}
    assert set(rows) == {"lp-cat", "fol-socrates", "prolog-grandparent", "smt-three", "no-program"}
    for pid in ("lp-cat", "fol-socrates", "prolog-grandparent"):
        assert rows[pid]["correct"], rows[pid]
    assert rows["no-program"]["error_kind"] == "no_program" and not rows["no-program"]["executed"]
    rep = report_json(out, capsys)
    assert REPORT_KEYS <= rep.keys()
    assert rep["problems"] == 5


def test_bad_line_is_named_and_skip_bad_solves_the_rest(tmp_path, capsys):
    bad = FIXTURES / "custom_bad.jsonl"
    out = tmp_path / "bad.parquet"
    assert main(["solve", "--programs", str(bad), "--out", str(out), "--executor", "local", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "custom_bad.jsonl:2" in err and "question" in err
    assert (
        main(["solve", "--programs", str(bad), "--out", str(out), "--executor", "local", "--no-progress", "--skip-bad"])
        == 0
    )
    err = capsys.readouterr().err
    assert "skipped bad row" in err and ":2" in err
    assert pq.read_table(out).num_rows == sum(1 for line in bad.read_text().splitlines() if line.strip()) - 1


def test_rerun_of_a_finished_run_does_nothing_and_limit_works(tmp_path, capsys, generated_jsonl):
    src = generated_jsonl(20)
    out = tmp_path / "r.parquet"
    args = ["solve", "--programs", str(src), "--out", str(out), "--executor", "local", "--no-progress"]
    assert main([*args, "--limit", "5"]) == 0
    assert pq.read_table(out).num_rows == 5
    assert main(args) == 0  # resumes: adds the other 15
    assert "15 solved this session, 5 already done" in capsys.readouterr().err
    assert main(args) == 0
    assert "0 solved this session, 20 already done" in capsys.readouterr().err
    ids = pq.read_table(out).column("problem_id").to_pylist()
    assert len(ids) == 20 == len(set(ids))
    rep = report_json(out, capsys)
    assert rep["accuracy"] == 1.0 and rep["execution_rate"] == 1.0


def test_killing_the_job_and_rerunning_completes_without_duplicates(tmp_path):
    n = 400
    # Each program is a long rule chain, so the run takes a few seconds and is killed mid-way.
    src = write_jsonl(tmp_path / "big.jsonl", [lp_problem(i, chain=60) for i in range(n)])
    out = tmp_path / "big.parquet"
    parts = out.with_name(out.name + ".parts")
    cmd = [
        sys.executable,
        "-m",
        "symbolkg.jobs",
        "solve",
        "--programs",
        str(src),
        "--out",
        str(out),
        "--executor",
        "local",
        "--workers",
        "2",
        "--no-progress",
    ]
    env = dict(os.environ)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    # Measured idle: the second part appears 1.7-2.4 s in and the job ends 1.4-1.6 s later, so polling
    # every 10 ms kills it with 100x to spare; the 120 s deadline is generous for a loaded machine.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (parts.is_dir() and len(list(parts.glob("part-*.parquet"))) >= 2):
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not out.exists(), "the job finished before it could be killed; make the programs longer"
    done_before = sum(pq.read_table(p).num_rows for p in parts.glob("part-*.parquet"))
    assert 0 < done_before < n
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{done_before} already done" in rerun.stderr
    table = pq.read_table(out)
    ids = table.column("problem_id").to_pylist()
    assert len(ids) == n and len(set(ids)) == n
    assert all(table.column("correct").to_pylist())
    assert not parts.exists()


@pytest.mark.slow
def test_ray_executor_end_to_end(tmp_path, capsys, generated_jsonl):
    src = generated_jsonl(30)
    out = tmp_path / "ray.parquet"
    try:
        assert main(["solve", "--programs", str(src), "--out", str(out), "--workers", "2", "--no-progress"]) == 0
    finally:
        import ray

        # Not a restore of os.environ: ray.init sets RAY_AUTH_MODE (and more) in this process, and a
        # later Ray cluster started from it without them cannot create actors on its added nodes.
        ray.shutdown()
    rep = report_json(out, capsys)
    assert rep["problems"] == 30 and rep["accuracy"] == 1.0
    assert {r.split("/")[0] for r in pq.read_table(out).column("worker").to_pylist()} == {"solver-0.1", "solver-1.2"}


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--max-tokens", "0"], "--max-tokens must be >= 1"),
        (["--llm-actor"], "--llm-actor hosts a vLLM engine in a Ray actor"),
    ],
)
def test_llm_flags_are_checked_before_anything_starts(tmp_path, capsys, extra, message):
    programs = tmp_path / "p.jsonl"
    programs.write_text(
        json.dumps(
            {
                "id": "p1",
                "context": "Bob is big.",
                "question": "Is Bob big?",
                "options": ["A) True", "B) False"],
                "answer": "A",
            }
        )
        + "\n"
    )
    out = tmp_path / "run.parquet"
    code = main(
        [
            "solve",
            "--method",
            "cot",
            "--engine",
            "replay",
            "--cache",
            str(tmp_path / "c"),
            "--model",
            "m",
            "--programs",
            str(programs),
            "--out",
            str(out),
            *extra,
        ]
    )
    assert code == 2 and message in capsys.readouterr().err
    assert not out.exists()
