"""``symbolkg logicgraph solve`` with the embedded model (SmolLM2-135M-Instruct), end to end.

The prompts go to the session's shared vLLM server (tests/llm_server.py), structured-decoded to
each instance's schema; every answer is parsed, logged and verified step by step, and the report
carries the paper's metrics. A rerun into the same folder asks nothing (resumed), and a rerun
from the completion cache into a fresh folder costs no tokens and gives the same answers. What
the model achieves is benchmarks/logicgraph_llm.py's to report.
"""

from __future__ import annotations

import json

import pytest

from symbolkg.jobs.cli import main
from symbolkg.solvers.logicgraph.instances import load_instances
from tests.conftest import data_or_skip, openai_engine_args, requires_vllm

pytestmark = [pytest.mark.slow, pytest.mark.llm, pytest.mark.timeout(1800), requires_vllm]

INSTANCES = 1
BUDGET = ("--max-tokens", "160", "--max-proofs", "3", "--max-steps", "6")


def solve(out, cache, capsys, *engine: str) -> dict:
    capsys.readouterr()
    code = main(
        [
            "logicgraph",
            "solve",
            "--dataset",
            "logicgraph/small",
            "--limit",
            str(INSTANCES),
            "--out",
            str(out),
            "--cache",
            str(cache),
            "--data-dir",
            str(data_or_skip()),
            "--no-progress",
            "--json",
            *BUDGET,
            *engine,
        ]
    )
    assert code == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_logicgraph_solve_with_the_served_model_then_a_resumed_and_a_cached_rerun(tmp_path, capsys, vllm_server):
    out, cache = tmp_path / "run", tmp_path / "completions"
    first = solve(out, cache, capsys, *openai_engine_args(vllm_server))
    assert first["answered"] == first["instances"] == INSTANCES
    assert first["this_call"]["answered"] == INSTANCES and first["this_call"]["completion_tokens"] > 0
    rows = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert len(rows) == INSTANCES
    for row in rows:
        assert row["model"] == "smollm2-135m" and row["structured"] and row["completion_tokens"] <= 160
        # structured decoding: whatever was generated before the token limit is in the schema's language
        assert row["solutions"] or row["truncated"] or row["parse_errors"]
    overall = first["report"]["metrics"]["overall"]
    assert overall["instances"] == INSTANCES and overall["answered"] == INSTANCES
    assert overall["precision"] is None or 0.0 <= overall["precision"] <= 1.0
    assert overall["mean_tokens"] > 0
    print("logicgraph solve, SmolLM2-135M:", json.dumps(overall))

    again = solve(out, cache, capsys, *openai_engine_args(vllm_server))
    assert again["this_call"]["asked"] == 0 and again["report"] == first["report"]

    # from the completion cache into a fresh folder: no tokens spent, the same proofs and verdicts
    fresh = solve(tmp_path / "fresh", cache, capsys, "--engine", "replay", "--model", "smollm2-135m")
    assert fresh["this_call"]["completion_tokens"] == 0
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
