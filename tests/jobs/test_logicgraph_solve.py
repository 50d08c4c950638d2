"""``symbolkg logicgraph solve`` with a scripted engine: answers logged once, resumed after a kill."""

from __future__ import annotations

import asyncio
import json

import pytest

from symbolkg.actors.engines.base import EngineDeadError, EngineError
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.logicgraph.solve import AnswerLog, SolveConfig, answer_instances
from symbolkg.solvers.logicgraph.instances import load_instances
from tests.conftest import data_or_skip


def _instances(n: int):
    return list(load_instances(data_or_skip("logicgraph", "small.jsonl"), limit=n))


def _reference_answer(request) -> str:
    """The instance's first reference proof, written the way the model is asked to."""
    inst = next(i for i in _instances(4) if i.id == request.problem_id)
    proof = inst.proofs[0]
    steps = []
    for k, step in enumerate(proof.steps):
        refs, used = [], set()
        for p in step.premises:
            if p.id != "Derived":
                refs.append(p.id)
                continue
            # the latest earlier step with that conclusion, not cited yet by this step
            j = max(j for j in range(k) if proof.steps[j].conclusion == p.formula and j not in used)
            used.add(j)
            refs.append(f"S{j + 1}")
        from symbolkg.solvers.logicgraph.propositional import to_prover9

        steps.append({"rule": step.rule, "premises": refs, "conclusion": to_prover9(step.conclusion)})
    return json.dumps({"proofs": [{"steps": steps}]})


def test_answers_are_logged_once_and_a_rerun_asks_only_the_rest(tmp_path):
    instances = _instances(4)
    log = AnswerLog(tmp_path / "answers.jsonl")
    calls: list[str] = []

    def script(request):
        calls.append(request.problem_id)
        assert request.structured is not None and request.structured.json_schema["properties"]["proofs"]
        if request.problem_id == instances[2].id:
            return EngineError("the server dropped this one")
        return _reference_answer(request)

    stats = asyncio.run(answer_instances(instances, ScriptedEngine(script, supports_structured=True), SolveConfig(), log,
                                         max_in_flight=2,
                                         progress=False))
    log.close()
    assert stats["asked"] == 4 and stats["answered"] == 3 and stats["engine_errors"] == 1
    assert set(stats["errors"]) == {instances[2].id}
    rows = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(r["solutions"] and not r["parse_errors"] and r["tokens"] > 0 for r in rows)

    # a kill mid-write leaves half a line: reopening drops it, and the rerun asks that one again
    with open(tmp_path / "answers.jsonl", "a") as fh:
        fh.write('{"id": "Small/test_9999", "solut')
    calls.clear()
    log = AnswerLog(tmp_path / "answers.jsonl")
    assert set(log.done) == {r["id"] for r in rows}
    stats = asyncio.run(answer_instances(instances, ScriptedEngine(_reference_answer), SolveConfig(), log,
                                         progress=False))
    log.close()
    assert stats["asked"] == 1 and stats["answered"] == 1
    ids = [json.loads(line)["id"] for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(i.id for i in instances) and len(ids) == len(set(ids))


def test_a_dead_engine_ends_the_job_and_keeps_what_was_written(tmp_path):
    instances = _instances(3)
    log = AnswerLog(tmp_path / "answers.jsonl")

    def script(request):
        if request.problem_id == instances[1].id:
            return EngineDeadError("vLLM died")
        return _reference_answer(request)

    with pytest.raises(EngineDeadError):
        asyncio.run(answer_instances(instances, ScriptedEngine(script), SolveConfig(), log, max_in_flight=1,
                                     progress=False))
    log.close()
    assert set(AnswerLog(tmp_path / "answers.jsonl").done) == {instances[0].id}


def test_config_rejects_bad_bounds():
    with pytest.raises(ValueError, match="--max-tokens must be >= 1"):
        SolveConfig(max_tokens=0)
