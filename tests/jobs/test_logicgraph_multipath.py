"""The ``multipath`` method (LogicGraph) through the method registry, with a scripted engine."""

from __future__ import annotations

import asyncio
import json

from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.jobs.methods import MethodConfig, get, run_problem
from symbolkg.jobs.methods.multipath import instance_of
from tests.conftest import data_or_skip
from tests.jobs.test_logicgraph_results import _reference_answer


def _problems(n: int):
    root = data_or_skip("logicgraph", "small.jsonl").parent.parent
    return list(load_dataset("logicgraph/small", root, limit=n).problems)


def _run(problem: Problem, script) -> object:
    engine = ScriptedEngine(script, supports_structured=True)
    return asyncio.run(run_problem(problem, MethodConfig(method="multipath"), engine, None))


def test_multipath_is_a_registered_method() -> None:
    cls = get("multipath")
    assert cls.name == "multipath" and not cls.needs_solver


def test_a_reference_proof_is_verified_and_matched_against_the_certified_supports() -> None:
    problem = _problems(1)[0]
    seen = []

    def script(request):
        seen.append(request)
        return _reference_answer(request)  # the instance's first reference proof

    row = _run(problem, script)
    assert len(seen) == 1 and seen[0].structured is not None
    assert row.method == "multipath" and row.predicted == "A" and row.correct and row.status == "proved"
    trace = json.loads(row.trace)
    assert trace["valid_paths"] == 1 and trace["supports_complete"] and trace["supports_certified"]
    reference = sorted(sorted(s) for s in instance_of(problem).reference_supports())
    assert sorted(trace["supports"]) == reference
    assert trace["supports_covered"] == [sorted(instance_of(problem).proofs[0].premise_ids())]


def test_an_invalid_proof_gives_no_answer_and_says_why() -> None:
    problem = _problems(1)[0]
    bogus = json.dumps({"proofs": [{"steps": [{"rule": "MP", "premises": ["Fact1"], "conclusion": "G"}]}]})
    row = _run(problem, lambda request: bogus)
    assert row.predicted is None and not row.correct and row.status == "unknown"
    trace = json.loads(row.trace)
    assert trace["paths"] == 1 and trace["valid_paths"] == 0 and trace["verdicts"][0]["labels"]


def test_a_problem_of_another_dataset_is_refused_without_asking() -> None:
    problem = Problem(
        id="x1", dataset="custom", context="A.", question="A?", options=("A) True", "B) False"), answer="A"
    )
    asked = []
    row = _run(problem, lambda request: asked.append(request) or "{}")
    assert not asked and row.status == "parse_error" and "logicgraph/<tier>" in row.error_message
