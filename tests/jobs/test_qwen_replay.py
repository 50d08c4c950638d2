"""The kept completions of the qwen2.5-coder-1.5b runs reproduce their results without the model.

``benchmarks/llm_formalizer.py`` ran the ``logiclm`` method with the model on the first 50 problems
of each Logic-LM set (and the other methods on their own sets) and kept every completion in
``benchmarks/out/qwen/completions`` and the rows in ``benchmarks/out/qwen/<method>-<variant>.parquet``.
Here a set of a run is replayed through ``symbolkg solve --engine replay`` (the same command, no model:
every request must be in the cache) and each row's program, status, answer and correctness must equal
the kept row's: the numbers in benchmarks/RESULTS.md are what these completions give on this code.
``prolog-agent`` is here because its repair prompts once carried a name new in every run (a Prolog
session module's), so its kept completions did not replay.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from symbolkg.jobs.cli import main
from tests.conftest import DATA

QWEN = Path(__file__).resolve().parents[2] / "benchmarks" / "out" / "qwen"
COMPARED = ("program", "status", "answer", "predicted", "correct", "rounds", "error_kind")


#: The variants' flags (``benchmarks/llm_formalizer.py``'s ``VARIANTS``) replayed here.
FLAGS = {
    "skeleton": [],
    "vote3-on-failure": ["--logiclm-samples", "3", "--logiclm-sample-on", "failure"],
    "default": [],
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "variant", "dataset"),
    [
        ("logiclm", "skeleton", "logiclm/prontoqa"),  # with the revision of inconsistent programs (`unstated_facts`)
        ("logiclm", "vote3-on-failure", "logiclm/proofwriter"),  # the greedy loop, and three sampled loops
        ("prolog-agent", "default", "pararule_plus/depth2"),  # MCP sessions; repairs quote Prolog error terms
    ],
)
def test_replaying_the_kept_completions_gives_the_kept_rows(method, variant, dataset, tmp_path):
    from symbolkg.jobs.pipeline.store import read_run

    kept_path = QWEN / f"{method}-{variant}.parquet"
    if not (DATA / dataset.split("/")[0]).is_dir():
        pytest.skip(f"shared data not found under {DATA}")
    rows = read_run(kept_path)[0].to_pylist()
    kept = {r["problem_id"]: r for r in rows if r["dataset"] == dataset}
    assert len(kept) >= 10
    out = tmp_path / "replay.parquet"
    cache = tmp_path / "completions"  # a copy: SQLite writes beside the file it opens, and this one is shipped
    shutil.copytree(QWEN / "completions", cache)
    flags = FLAGS[variant]
    assert (
        main(
            [
                "solve",
                "--method",
                method,
                "--dataset",
                dataset,
                "--limit",
                str(len(kept)),
                "--engine",
                "replay",
                "--model",
                "qwen2.5-coder-1.5b",
                "--cache",
                str(cache),
                "--out",
                str(out),
                "--executor",
                "local",
                "--workers",
                "2",
                "--no-progress",
                "--data-dir",
                str(DATA),
                *flags,
            ]
        )
        == 0
    )
    replayed = {r["problem_id"]: r for r in read_run(out)[0].to_pylist()}
    assert replayed.keys() == kept.keys()
    differ = [
        (pid, key, kept[pid][key], replayed[pid][key])
        for pid in kept
        for key in COMPARED
        if kept[pid][key] != replayed[pid][key]
    ]
    assert differ == []
    assert sum(r["correct"] for r in replayed.values()) == sum(r["correct"] for r in kept.values())
