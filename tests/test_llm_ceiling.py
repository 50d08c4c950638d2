"""benchmarks/llm_ceiling.py's job phase with a scripted engine (the model phases need vLLM: test_vllm_engine)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from symbolkg.actors.engines.scripted import ScriptedEngine
from tests.jobs.test_checks_refine import RIGHT, problem

_spec = importlib.util.spec_from_file_location(
    "llm_ceiling", Path(__file__).resolve().parents[1] / "benchmarks" / "llm_ceiling.py"
)
assert _spec is not None and _spec.loader is not None
ceiling = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ceiling)


def broken(request) -> str:
    """A program that never parses, different in every round (so no repair repeats the one before)."""
    return RIGHT if request.problem_id == "p2" else f"Facts:\n{request.request_id}("


def test_the_job_bounds_repairs_only_when_told_and_the_ceiling_gets_the_requests_as_sent():
    problems = [problem("p1"), problem("p2")]
    for bound, repair_budget in ((None, 1024), (200, 200)):
        job = ceiling.run_job(ScriptedEngine(broken), problems, "two problems", repair_max_tokens=bound)
        budgets = sorted({(r.purpose, r.params.max_tokens) for r in job["requests"]})
        assert budgets == [("formulate", 1024), ("refine", repair_budget)]
        assert (job["problems"], job["llm_requests"], job["correct"]) == (2, 5, 1)  # p1: 1 + 3 repairs; p2 runs


def test_the_job_keeps_its_rows_and_request_log_beside_the_results_and_a_rerun_replaces_them(tmp_path):
    from symbolkg.jobs.pipeline.store import read_run, read_run_meta

    out = tmp_path / "ceiling.parquet"
    for _ in range(2):  # the second run starts afresh: nothing resumed from the first
        job = ceiling.run_job(ScriptedEngine(broken), [problem("p1"), problem("p2")], "two", log_to=out)
        assert job["llm_requests"] == 5
        rows = {r["problem_id"]: r for r in read_run(out)[0].to_pylist()}
        assert sorted(rows) == ["p1", "p2"] and rows["p2"]["correct"] and rows["p1"]["rounds"] == 4
        assert read_run_meta(out)["repair_max_tokens"] is None
        assert (tmp_path / "ceiling.parquet.requests").is_dir()
