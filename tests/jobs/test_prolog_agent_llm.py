"""``symbolkg solve --method prolog-agent`` with the embedded model (SmolLM2-135M-Instruct).

A 135M model rarely writes a program that loads and a goal that runs; this checks that the loop
runs for real: the prompts go to the session's shared vLLM server (tests/llm_server.py), every
answer is parsed, whatever parses is consulted and run through the in-process MCP server, every
error goes back to the model up to the attempt cap, and every row is accounted for (calls, tokens,
attempts, MCP calls, the SLDNF comparison). A rerun from the completion cache is free and gives
the same rows. What the model achieves is benchmarks/prolog_agent.py's to report (--runs llm).
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main
from tests.conftest import data_or_skip, openai_engine_args, requires_vllm

pytestmark = [pytest.mark.slow, pytest.mark.llm, pytest.mark.timeout(1800), requires_vllm]

QUESTIONS = 2
BUDGET = (
    "--prolog-agent-max-attempts",
    "2",
    "--prolog-agent-max-tokens",
    "160",
    "--executor",
    "local",
    "--workers",
    "1",
)


def solve(out, cache, *engine: str) -> int:
    data_or_skip("pararule_plus")
    return main(
        [
            "solve",
            "--method",
            "prolog-agent",
            "--dataset",
            "pararule_plus/depth2",
            "--limit",
            str(QUESTIONS),
            "--out",
            str(out),
            "--cache",
            str(cache),
            "--no-progress",
            "--data-dir",
            str(data_or_skip()),
            *BUDGET,
            *engine,
        ]
    )


def test_prolog_agent_with_the_served_model_then_a_free_rerun(tmp_path, capsys, vllm_server):
    out, cache = tmp_path / "agent.parquet", tmp_path / "completions"
    assert solve(out, cache, *openai_engine_args(vllm_server)) == 0
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == QUESTIONS
    for row in rows:
        attempts = json.loads(row["attempts_log"])
        trace = json.loads(row["trace"])
        assert row["method"] == "prolog-agent" and row["model"] == "smollm2-135m"
        assert 1 <= row["llm_calls"] == len(attempts) <= 2 and row["prompt_tokens"] > 0
        assert all(a["completion"] is not None for a in attempts if a.get("stage") != "llm")
        # an attempt ends in a verdict or in an error that was (or, at the cap, would be) sent back
        for a in attempts:
            assert a.get("outcome") in ("success", "failure") or a.get("error", {}).get("kind")
        assert trace["sldnf_closure"] in ("same", "different", "loops")  # the translator reads every question
        assert row["predicted"] in ("A", "B", None)
    print(
        "prolog-agent, SmolLM2-135M:",
        [
            (
                r["problem_id"],
                r["predicted"],
                r["gold"],
                r["rounds"],
                [a.get("stage") for a in json.loads(r["attempts_log"])],
            )
            for r in rows
        ],
    )

    rerun = tmp_path / "rerun.parquet"
    capsys.readouterr()
    assert solve(rerun, cache, "--engine", "replay", "--model", "smollm2-135m") == 0
    again = {r["problem_id"]: r for r in pq.read_table(rerun).to_pylist()}
    for row in rows:
        twin = again[row["problem_id"]]
        assert twin["predicted"] == row["predicted"] and twin["cached_calls"] == twin["llm_calls"] == row["llm_calls"]
