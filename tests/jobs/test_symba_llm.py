"""``symbolkg solve --method symba`` end to end with the embedded model (SmolLM2-135M-Instruct).

What the 135M model finds and translates is what the rows show (it rarely produces a statement
whose head unifies); this checks that the loop runs for real on two of SymBa's sets: the solver
in a worker reports the missing subgoals, the searches and translations go to the real engine
with their structured-decoding regexes, whatever passes validation enters the database, every
row is accounted for (calls, tokens, the stop reason), and a rerun from the completion cache is
free. The model is the session's shared vLLM server (tests/llm_server.py).

CI budget: one problem of each set and small per-problem budgets; benchmarks/symba_method.py runs
20 problems of every set, and its numbers are in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main
from tests.conftest import data_or_skip, openai_engine_args, requires_vllm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800), requires_vllm]

SETS = "symba/proofwriter_dep5,symba/clutrr"
PER_SET = 1
BUDGET = ("--symba-max-calls", "8", "--symba-search-tokens", "64", "--symba-translate-tokens", "48")


def data():
    data_or_skip("symba")
    return data_or_skip()


def solve(out, cache, server, *extra: str) -> int:
    return main(
        [
            "solve",
            "--method",
            "symba",
            "--dataset",
            SETS,
            "--limit",
            str(PER_SET),
            "--out",
            str(out),
            "--cache",
            str(cache),
            "--executor",
            "local",
            "--workers",
            "2",
            "--no-progress",
            "--data-dir",
            str(data()),
            *BUDGET,
            *openai_engine_args(server),
            *extra,
        ]
    )


def test_symba_on_two_sets_with_the_served_model_then_a_free_rerun(tmp_path, capsys, vllm_server):
    out, cache = tmp_path / "symba.parquet", tmp_path / "completions"
    assert solve(out, cache, vllm_server) == 0
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == 2 * PER_SET and {r["dataset"] for r in rows} == set(SETS.split(","))
    for row in rows:
        trace = json.loads(row["trace"])
        assert row["method"] == "symba" and row["language"] == "symba" and row["model"] == "smollm2-135m"
        assert row["llm_calls"] >= 2 and row["prompt_tokens"] > 0  # at least one subgoal was searched
        assert trace["asked"] and trace["stop"]
        assert row["status"] in ("proved", "disproved", "timeout")
        for statement in trace["statements"]:  # what entered the database passed validation
            assert statement["sentence"] and statement["subgoal"] in trace["asked"]
    print(
        "symba, SmolLM2-135M:",
        [(r["problem_id"], r["predicted"], r["gold"], r["llm_calls"], json.loads(r["trace"])["stop"]) for r in rows],
    )

    rerun = tmp_path / "rerun.parquet"
    capsys.readouterr()
    assert (
        main(
            [
                "solve",
                "--method",
                "symba",
                "--dataset",
                SETS,
                "--limit",
                str(PER_SET),
                "--out",
                str(rerun),
                "--cache",
                str(cache),
                "--engine",
                "replay",
                "--model",
                "smollm2-135m",
                "--executor",
                "local",
                "--workers",
                "2",
                "--no-progress",
                "--data-dir",
                str(data()),
                *BUDGET,
            ]
        )
        == 0
    )
    again = {r["problem_id"]: r for r in pq.read_table(rerun).to_pylist()}
    for row in rows:
        twin = again[row["problem_id"]]
        assert twin["predicted"] == row["predicted"] and twin["cached_calls"] == twin["llm_calls"] == row["llm_calls"]
