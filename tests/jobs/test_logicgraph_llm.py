"""LogicGraph with the embedded model (SmolLM2-135M-Instruct), end to end.

``symbolkg solve --method multipath``: the prompts go to the session's shared vLLM server
(tests/llm_server.py), structured-decoded to each instance's schema; ``symbolkg logicgraph verify
--results`` parses every answer, writes the answers file and verifies it step by step, and the
report carries the paper's metrics. A rerun of the job asks nothing (resumed), and a rerun from the
completion cache into a fresh results file costs no tokens and gives the same answers. What the
model achieves is benchmarks/logicgraph_llm.py's to report.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from symbolkg.jobs.cli import main
from symbolkg.solvers.logicgraph.instances import load_instances
from tests.conftest import data_or_skip, openai_engine_args, requires_vllm

pytestmark = [pytest.mark.slow, pytest.mark.llm, pytest.mark.timeout(1800), requires_vllm]

INSTANCES = 1
BUDGET = ("--max-tokens", "160", "--multipath-max-proofs", "3", "--multipath-max-steps", "6")


def solve(results, cache, capsys, *engine: str) -> dict:
    """The multipath job into ``results``, then ``logicgraph verify --results``: its summary."""
    data = str(data_or_skip())
    head = ["solve", "--method", "multipath", "--dataset", "logicgraph/small", "--limit", str(INSTANCES)]
    assert (
        main(
            [*head, "--out", str(results), "--cache", str(cache), "--data-dir", data, "--no-progress", *BUDGET, *engine]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["logicgraph", "verify", "--results", str(results), "--data-dir", data, "--json"]) == 0
    (summary,) = json.loads(capsys.readouterr().out)["results"]
    return summary


def test_multipath_with_the_served_model_then_verify_a_resumed_and_a_cached_rerun(tmp_path, capsys, vllm_server):
    results, cache = tmp_path / "lg.parquet", tmp_path / "completions"
    first = solve(results, cache, capsys, *openai_engine_args(vllm_server))
    assert first["answered"] == first["instances"] == INSTANCES and first["completion_tokens"] > 0
    rows = [json.loads(line) for line in Path(first["answers"]).read_text().splitlines()]
    assert len(rows) == INSTANCES
    for row in rows:
        assert row["model"] == "smollm2-135m" and row["structured"] and row["completion_tokens"] <= 160
        # structured decoding: whatever was generated before the token limit is in the schema's language
        assert row["solutions"] or row["truncated"] or row["parse_errors"]
    overall = first["report"]["metrics"]["overall"]
    assert overall["instances"] == INSTANCES and overall["answered"] == INSTANCES
    assert overall["precision"] is None or 0.0 <= overall["precision"] <= 1.0
    assert overall["mean_tokens"] > 0
    print("multipath, SmolLM2-135M:", json.dumps(overall))

    again = solve(results, cache, capsys, *openai_engine_args(vllm_server))  # resumed: nothing asked
    assert again["report"] == first["report"] and again["cached"] == 0

    # from the completion cache into a fresh results file: no tokens spent, the same proofs and verdicts
    fresh = solve(tmp_path / "fresh.parquet", cache, capsys, "--engine", "replay", "--model", "smollm2-135m")
    assert fresh["cached"] == INSTANCES
    cached = fresh["report"]["metrics"]["overall"]
    assert {k: v for k, v in cached.items() if k != "mean_tokens"} == {
        k: v for k, v in overall.items() if k != "mean_tokens"
    }


def test_generate_with_llm_english_from_the_served_model(tmp_path, capsys, vllm_server):
    """``generate --text llm``: the model words each atom; whatever fails the checks (at this token
    budget, usually an answer cut off before its JSON closes) keeps the template's English."""
    out = tmp_path / "gen.jsonl"
    capsys.readouterr()
    assert (
        main(
            [
                "logicgraph",
                "generate",
                "--tier",
                "small",
                "--count",
                "1",
                "--seed",
                "3",
                "--out",
                str(out),
                "--text",
                "llm",
                "--max-tokens",
                "200",
                "--quiet",
                "--json",
                *openai_engine_args(vllm_server),
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["written"] == 1 and summary["text_stats"]["model"] == "smollm2-135m"
    assert summary["text_stats"]["completion_tokens"] > 0 and summary["text_stats"]["engine_errors"] == 0
    kept = 0  # atoms that kept the template's English, each for a recorded reason
    for inst in load_instances(out):
        generator = inst.record["metadata"]["generator"]
        assert generator["text"] == "llm:smollm2-135m"
        problems = generator["text_problems"]
        unreadable = any(p.startswith(("not JSON", "not a JSON object")) for p in problems)
        kept += len(inst.record["translations"]["atomic_facts"]) if unreadable else len(problems)
    assert summary["text_stats"]["atoms_from_llm"] + kept == summary["text_stats"]["atoms"]
    print("generate --text llm, SmolLM2-135M:", json.dumps(summary["text_stats"]))
