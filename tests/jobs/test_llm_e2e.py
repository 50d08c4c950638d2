"""End to end with the embedded vLLM CPU engine (SmolLM2-135M-Instruct): logiclm and cot on ProntoQA.

Whatever the 135M model achieves is what the report shows; these tests check that the
whole loop runs, is accounted for, and that a cached rerun costs no tokens.

CI budget: the acceptance commands (50 ProntoQA problems each) with smaller token budgets
than the defaults (``--max-tokens``; logiclm with one repair round instead of three). At
the defaults a 135M model that loops until 1024 tokens, four times per problem, makes
the logiclm run take ~10 minutes on 2 cores; the budgets keep the loop and every stage
but bound the generated tokens. README records what a run at the defaults does.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main
from tests.conftest import data_or_skip

# ~8 minutes idle for the logiclm job on 2 cores; room for a loaded CI machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
pytest.importorskip("vllm")

LLM_KEYS = {"prompt_tokens", "completion_tokens", "tokens_per_second", "problems_per_second", "rounds_histogram",
            "execution_rate", "accuracy", "wall_seconds"}


def report(path, capsys) -> dict:
    capsys.readouterr()
    assert main(["report", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("llm-cache")


def run(method: str, out, cache, extra=()) -> int:
    return main(["solve", "--method", method, "--dataset", "prontoqa", "--limit", "50", "--out", str(out),
                 "--cache", str(cache), "--executor", "local", "--workers", "2", "--no-progress",
                 "--data-dir", str(data_or_skip()), *extra])


LOGICLM_BUDGET = ("--max-tokens", "384", "--max-refine-rounds", "1")
COT_BUDGET = ("--max-tokens", "256")


def test_logiclm_with_the_embedded_engine_then_a_free_cached_rerun(tmp_path, cache_dir, capsys):
    first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
    assert run("logiclm", first, cache_dir, LOGICLM_BUDGET) == 0
    a = report(first, capsys)
    assert LLM_KEYS <= a.keys()
    assert a["problems"] == 50 and a["completion_tokens"] > 0 and a["tokens_per_second"] > 0
    assert a["models"] == ["smollm2-135m"]
    rows = pq.read_table(first).to_pylist()
    assert all(1 <= r["rounds"] <= 2 and json.loads(r["attempts_log"]) for r in rows)
    assert all(a["completion_tokens"] <= 384 for r in rows for a in json.loads(r["attempts_log"]) if "completion_tokens" in a)
    # the same job again: every completion comes from the cache
    assert run("logiclm", second, cache_dir, LOGICLM_BUDGET) == 0
    b = report(second, capsys)
    assert b["completion_tokens"] == 0 and b["prompt_tokens"] == 0 and b["cached_calls"] == b["llm_calls"] > 0
    answers = lambda p: sorted((r["problem_id"], r["predicted"], r["rounds"]) for r in pq.read_table(p).to_pylist())  # noqa: E731
    assert answers(first) == answers(second)
    print("logiclm, SmolLM2-135M, ProntoQA[:50]:", {k: a[k] for k in sorted(LLM_KEYS)})


def test_cot_with_the_embedded_engine(tmp_path, cache_dir, capsys):
    out = tmp_path / "cot.parquet"
    assert run("cot", out, cache_dir, COT_BUDGET) == 0
    rep = report(out, capsys)
    assert LLM_KEYS <= rep.keys() and rep["problems"] == 50 and rep["completion_tokens"] > 0
    print("cot, SmolLM2-135M, ProntoQA[:50]:", {k: rep[k] for k in sorted(LLM_KEYS)})
