"""One job as 4 shards, 4 drivers against a local two-node Ray cluster: the rows of one driver.

Each driver is ``symbolkg solve --shard i/4 --ray-address ADDR`` (one solver actor of half a CPU:
the two nodes advertise one CPU each), all four at once, writing into one run; the reference is
the same job in one driver. ``read_run`` (so ``report`` and ``verify``) reads the union.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.core.ids import Shard
from symbolkg.jobs.pipeline.store import read_run
from tests.conftest import data_or_skip

pytestmark = [pytest.mark.slow, pytest.mark.cluster, pytest.mark.timeout(900)]

# What a row says about its problem, without when and where it ran.
VOLATILE = {"worker", "solve_seconds", "latency_seconds", "finished_at", "attempts"}


def rows_by_id(table) -> dict[str, dict]:
    rows = table.to_pylist()
    assert len({r["problem_id"] for r in rows}) == len(rows), "duplicated rows"
    return {r["problem_id"]: {k: v for k, v in r.items() if k not in VOLATILE} for r in rows}


def test_four_shard_drivers_on_a_two_node_cluster_give_the_rows_of_one_driver(tmp_path):
    from symbolkg.cluster.local import LocalCluster

    data = data_or_skip()
    programs = data / "logiclm" / "programs" / "ProntoQA_dev_gpt-4.json"
    base = [
        sys.executable,
        "-m",
        "symbolkg.jobs",
        "solve",
        "--programs",
        str(programs),
        "--data-dir",
        str(data),
        "--no-progress",
    ]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    one = tmp_path / "one.parquet"
    reference = subprocess.run(
        [*base, "--out", str(one), "--executor", "local", "--workers", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert reference.returncode == 0, reference.stderr[-2000:]

    out = tmp_path / "sharded.parquet"
    # A node starts in ~14 s idle; 300 s each is over 10x that (the machine is shared).
    with LocalCluster(workers=1, num_cpus_per_node=1, start_timeout_s=300) as cluster:
        drivers = [
            subprocess.Popen(
                [
                    *base,
                    "--out",
                    str(out),
                    "--shard",
                    f"{i}/4",
                    "--ray-address",
                    cluster.address,
                    "--workers",
                    "1",
                    "--cpus-per-worker",
                    "0.5",
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(4)
        ]
        results = [d.communicate(timeout=600) for d in drivers]
    for d, (_, err) in zip(drivers, results, strict=True):
        assert d.returncode == 0, err[-2000:]

    shard_files = [out.with_name(f"sharded.shard-{i}-of-4.parquet") for i in range(4)]
    assert all(f.exists() for f in shard_files) and not out.exists()
    for i, f in enumerate(shard_files):  # each driver wrote its own shard's problems, and only those
        ids = pq.read_table(f, columns=["problem_id"]).column("problem_id").to_pylist()
        assert ids and all(Shard(i, 4).takes(pid) for pid in ids)
    table, meta = read_run(out)
    expected = rows_by_id(pq.read_table(one))
    assert len(expected) == 500
    assert rows_by_id(table) == expected
    assert meta["finished"] and meta["shards"] == [f.name for f in shard_files] and len(meta["sessions"]) == 4

    report = subprocess.run(
        [sys.executable, "-m", "symbolkg.jobs", "report", str(out), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr[-2000:]
    summary = json.loads(report.stdout)
    reference_summary = json.loads(
        subprocess.run(
            [sys.executable, "-m", "symbolkg.jobs", "report", str(one), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        ).stdout
    )
    assert (summary["problems"], summary["correct"], summary["executed"]) == (
        reference_summary["problems"],
        reference_summary["correct"],
        reference_summary["executed"],
    )
    assert summary["shards"] == meta["shards"]
