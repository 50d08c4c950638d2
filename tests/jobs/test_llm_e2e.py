"""End to end with the embedded model (SmolLM2-135M-Instruct on vLLM's CPU build): logiclm, cot, direct.

Whatever the 135M model achieves is what the report shows; these tests check that the
whole loop runs for real, is accounted for, and that a cached rerun costs no tokens.

* logiclm loads the model in this process (``--engine vllm``, the embedded default of
  ``symbolkg solve``); a rerun is answered by the completion cache without loading it;
* cot and direct ask the session's shared vLLM server (``--engine openai``; tests/llm_server.py),
  the same model behind vLLM's OpenAI-compatible API, so the model is not loaded once per test.

CI budget: a slice of ProntoQA (``N`` problems, ``N_LOGICLM`` for logiclm) and smaller token
budgets than the defaults (``--max-tokens``; logiclm with one repair round instead of three): enough to prove every
stage on the real engine. Larger runs, and their numbers, are in benchmarks/ (``pipeline_real.py``,
RESULTS.md).
"""

from __future__ import annotations

import json
import time

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main
from tests.conftest import data_or_skip, openai_engine_args, requires_vllm
from tests.llm_server import engine_processes

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800), requires_vllm]

LLM_KEYS = {
    "prompt_tokens",
    "completion_tokens",
    "tokens_per_second",
    "problems_per_second",
    "rounds_histogram",
    "execution_rate",
    "accuracy",
    "wall_seconds",
}


def report(path, capsys) -> dict:
    capsys.readouterr()
    assert main(["report", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("llm-cache")


N = 4  # ProntoQA problems per baseline: every stage on the real engine, in CI's time
N_LOGICLM = 2  # logiclm writes (and repairs) whole programs: the costliest generation of the three


def run(method: str, out, cache, extra=(), n: int = N) -> int:
    return main(
        [
            "solve",
            "--method",
            method,
            "--dataset",
            "prontoqa",
            "--limit",
            str(n),
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
            str(data_or_skip()),
            *extra,
        ]
    )


LOGICLM_BUDGET = ("--max-tokens", "256", "--max-refine-rounds", "1")
COT_BUDGET = ("--max-tokens", "256")


def test_logiclm_with_the_embedded_engine_then_a_free_cached_rerun(tmp_path, cache_dir, capsys):
    first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
    assert run("logiclm", first, cache_dir, LOGICLM_BUDGET, N_LOGICLM) == 0
    # the job closed its in-process engine: every vLLM process it started is gone
    deadline = time.monotonic() + 15.0
    while engine_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not engine_processes()
    a = report(first, capsys)
    assert LLM_KEYS <= a.keys()
    assert a["problems"] == N_LOGICLM and a["completion_tokens"] > 0 and a["tokens_per_second"] > 0
    assert a["models"] == ["smollm2-135m"]
    assert a["prefix_cache_hit_rate"] is not None  # vLLM's per-request count, through the request log
    rows = pq.read_table(first).to_pylist()
    assert all(1 <= r["rounds"] <= 2 and json.loads(r["attempts_log"]) for r in rows)
    assert all(
        a["completion_tokens"] <= 256 for r in rows for a in json.loads(r["attempts_log"]) if "completion_tokens" in a
    )
    # the same job again: every completion comes from the cache
    assert run("logiclm", second, cache_dir, LOGICLM_BUDGET, N_LOGICLM) == 0
    b = report(second, capsys)
    assert b["completion_tokens"] == 0 and b["prompt_tokens"] == 0 and b["cached_calls"] == b["llm_calls"] > 0
    assert b["prefix_cache_hit_rate"] is None  # no request reached an engine
    answers = lambda p: sorted((r["problem_id"], r["predicted"], r["rounds"]) for r in pq.read_table(p).to_pylist())
    assert answers(first) == answers(second)
    print(f"logiclm, SmolLM2-135M, ProntoQA[:{N_LOGICLM}]:", {k: a[k] for k in sorted(LLM_KEYS)})


@pytest.mark.parametrize("method, budget", [("cot", COT_BUDGET), ("direct", ())])
def test_baselines_with_the_served_model(method, budget, vllm_server, tmp_path, cache_dir, capsys):
    out = tmp_path / f"{method}.parquet"
    assert run(method, out, cache_dir, (*budget, *openai_engine_args(vllm_server))) == 0
    rep = report(out, capsys)
    assert LLM_KEYS <= rep.keys() and rep["problems"] == N and rep["completion_tokens"] > 0
    assert rep["models"] == ["smollm2-135m"] and rep["llm_calls"] == N
    assert rep["prefix_cache_hit_rate"] is not None  # the server reports usage.prompt_tokens_details
    rows = pq.read_table(out).to_pylist()
    # every answer was read off a real completion; with options, structured decoding keeps it to them
    assert all(r["predicted"] in ("A", "B") for r in rows if r["executed"])
    print(f"{method}, SmolLM2-135M, ProntoQA[:{N}]:", {k: rep[k] for k in sorted(LLM_KEYS)})
