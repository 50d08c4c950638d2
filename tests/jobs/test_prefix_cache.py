"""Prompt economy (issue 19): prefix-cache counts from engine to request log to report and profile,
and problems that share a context taken next to each other.

The real engines' counts are covered where the engines run: vLLM in-process
(tests/actors/test_vllm_engine.py) and the OpenAI-compatible server (tests/jobs/test_llm_e2e.py).
"""

from __future__ import annotations

import asyncio
import json

from symbolkg.actors.engines.base import ChatRequest, Completion, Message
from symbolkg.actors.engines.metered import (
    MeteredEngine,
    RequestRecord,
    prefix_cache_summary,
    read_request_log,
    write_request_log,
)
from symbolkg.actors.engines.openai_engine import _cached_tokens
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.inspection.profile import format_profile, profile_run
from symbolkg.jobs.inspection.report import report
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.pipeline.method_job import group_by_context, run_method_job
from symbolkg.jobs.pipeline.store import ResultStore
from tests.actors.test_simulated_engine import cached_engine, chat


def problem(i: int, context: str) -> Problem:
    return Problem(f"p{i}", "test", context, f"Is {i} true?", ("A) True", "B) False"), "A")


def test_group_by_context_is_stable_and_leaves_unshared_input_alone():
    ps = [problem(0, "c1"), problem(1, "c2"), problem(2, "c1"), problem(3, "c3"), problem(4, "c2")]
    assert [p.id for p in group_by_context(ps)] == ["p0", "p2", "p1", "p4", "p3"]
    unshared = [problem(i, f"c{i}") for i in range(4)]
    assert group_by_context(unshared) == unshared


def record(prompt: int, cached: int | None, *, replayed: bool = False, error: str | None = None) -> RequestRecord:
    return RequestRecord("r", "p", "formulate", 0.0, 1.0, prompt, 5, replayed, error, cached)


def test_prefix_cache_summary_counts_engine_served_requests_and_says_unknown_when_none_reports():
    s = prefix_cache_summary(
        [
            record(100, 80),
            record(100, 20),
            record(100, None),
            record(100, None, replayed=True),
            record(100, 100, error="boom"),
        ]
    )
    assert s == {
        "prefix_cache_hit_rate": 0.5,
        "prompt_tokens": 200,
        "cached_prompt_tokens": 100,
        "requests_known": 2,
        "requests_unknown": 1,
    }
    assert prefix_cache_summary([record(100, None)])["prefix_cache_hit_rate"] is None  # unknown, not 0
    assert prefix_cache_summary([])["prefix_cache_hit_rate"] is None


def test_openai_usage_cached_tokens_are_read_when_the_server_gives_them():
    assert _cached_tokens({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 8}}) == 8
    assert _cached_tokens({"prompt_tokens": 10}) is None
    assert _cached_tokens({"prompt_tokens_details": None}) is None
    assert _cached_tokens({"prompt_tokens_details": {"cached_tokens": -1}}) is None


def test_the_simulated_engine_reports_each_requests_cached_tokens_into_the_request_log(tmp_path):
    engine = MeteredEngine(cached_engine())
    first, second = asyncio.run(engine.generate([chat(0), chat(1)]))
    assert (first.cached_prompt_tokens, second.cached_prompt_tokens) == (0, 160)
    assert [r.cached_prompt_tokens for r in engine.records] == [0, 160]
    run = tmp_path / "run.parquet"
    write_request_log(run, engine.records)
    assert [r.cached_prompt_tokens for r in read_request_log(run)] == [0, 160]


def test_a_replay_hit_counts_no_cached_tokens():
    class Replayed:
        model, supports_structured = "m", False

        async def generate(self, requests):
            return [Completion("x", cached=True, cached_prompt_tokens=7) for _ in requests]

    engine = MeteredEngine(Replayed())
    asyncio.run(engine.generate([ChatRequest((Message("user", "hi"),))]))
    assert engine.records[0].cached_prompt_tokens is None


class CountingEngine(ScriptedEngine):
    """A scripted engine that reports, per request, the tokens its prompt shares with any earlier one."""

    def __init__(self) -> None:
        super().__init__(lambda r: "A")
        self.seen: list[str] = []

    async def generate(self, requests):
        out = await super().generate(requests)
        done = []
        for r, c in zip(requests, out, strict=True):
            text = "".join(m.content for m in r.messages)
            shared = max((_common(text, s) for s in self.seen), default=0)
            self.seen.append(text)
            done.append(
                Completion(
                    c.text, prompt_tokens=len(text), completion_tokens=1, model=c.model, cached_prompt_tokens=shared
                )
            )
        return done


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def run_job(tmp_path, problems, *, grouped: bool):
    engine = MeteredEngine(CountingEngine())
    run = tmp_path / f"run-{grouped}.parquet"
    asyncio.run(
        run_method_job(
            problems,
            ResultStore(run),
            MethodConfig(method="direct"),
            engine,
            None,
            progress=False,
            max_in_flight=1,
            group_contexts=grouped,
        )
    )
    write_request_log(run, engine.records)
    return run, engine


def test_report_and_profile_show_the_hit_rate(tmp_path):
    contexts = ["The cat is red. " * 20, "The dog is blue. " * 20]
    run, _ = run_job(tmp_path, [problem(i, contexts[i % 2]) for i in range(6)], grouped=True)
    rep = json.loads(report(run, as_json=True))
    rate = rep["prefix_cache_hit_rate"]
    assert rep["prefix_cache"]["requests_known"] == 6 and 0.5 < rate < 1
    assert "prefix-cache hit rate: " in report(run)
    prof = profile_run(run, tmp_path / "profile")
    assert prof["llm"]["prefix_cache"]["prefix_cache_hit_rate"] == rate
    assert "answer" in prof["llm"]["prefix_cache_by_purpose"] and "prefix-cache hit rate" in format_profile(prof)


def test_problems_on_one_context_reach_the_engine_next_to_each_other_unless_switched_off(tmp_path):
    contexts = ["The cat is red. " * 20, "The dog is blue. " * 20]
    problems = [problem(i, contexts[i % 2]) for i in range(6)]
    _, grouped = run_job(tmp_path, problems, grouped=True)
    _, plain = run_job(tmp_path, problems, grouped=False)
    assert [r.problem_id for r in grouped.records] == ["p0", "p2", "p4", "p1", "p3", "p5"]
    assert [r.problem_id for r in plain.records] == [f"p{i}" for i in range(6)]
