"""LogicGraph's run: the ``multipath`` method job, then ``logicgraph verify --results`` for the paper's files.

Rows once, resumed after a dead engine; the answers file and report derived from the rows, rewritten
whole; a rerun from the completion cache costs no tokens and scores the same; the answers file in
the format ``verify --answers`` reads; results of another method refused with a clear message.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from symbolkg.actors.engines.base import EngineDeadError, EngineError
from symbolkg.actors.engines.replay import CachingEngine, CompletionCache
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.cli import build_parser, main
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.jobs.logicgraph.results import PAPER_BEST, derived_paths
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.methods.multipath import Multipath
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore
from symbolkg.solvers.logicgraph.instances import load_instances
from symbolkg.solvers.logicgraph.propositional import to_prover9
from tests.conftest import data_or_skip


def _instances(n: int):
    return list(load_instances(data_or_skip("logicgraph", "small.jsonl"), limit=n))


def _problems(n: int):
    root = data_or_skip("logicgraph", "small.jsonl").parent.parent
    return list(load_dataset("logicgraph/small", root, limit=n).problems)


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
        steps.append({"rule": step.rule, "premises": refs, "conclusion": to_prover9(step.conclusion)})
    return json.dumps({"proofs": [{"steps": steps}]})


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _job(results: Path, problems, engine) -> None:
    """The multipath method job, as ``symbolkg solve --method multipath`` runs it."""
    store = ResultStore(results, run_info={"method": "multipath", "source": "logicgraph/small"})
    config = MethodConfig(method=Multipath.name)
    asyncio.run(run_method_job(problems, store, config, engine, None, max_in_flight=1, progress=False))


def _verify(capsys, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["logicgraph", "verify", "--data-dir", str(data_or_skip()), "--json", *args])
    out = capsys.readouterr().out
    return code, (json.loads(out) if code == 0 else {})


def test_rows_once_a_resumed_run_and_the_derived_answers_and_report(tmp_path, capsys):
    problems = _problems(4)
    results = tmp_path / "lg.parquet"
    answers_path, report_path = derived_paths(results)

    def script(request):
        assert request.structured is not None and request.structured.json_schema["properties"]["proofs"]
        if request.problem_id == problems[1].id:
            return EngineError("the server dropped this one")
        if request.problem_id == problems[3].id:
            return EngineDeadError("vLLM died")
        return _reference_answer(request)

    with pytest.raises(EngineDeadError):
        _job(results, problems, ScriptedEngine(script, supports_structured=True))
    # what finished before the engine died is verified: two answers; the engine error's row counts as no paths
    code, out = _verify(capsys, "--results", str(results))
    assert code == 0
    (summary,) = out["results"]
    assert summary["instances"] == 3 and summary["answered"] == 2 and summary["engine_errors"] == 1
    assert [a["id"] for a in _lines(answers_path)] == [problems[0].id, problems[2].id]

    # a kill mid-write of the answers file leaves half a line: it is derived, so rewritten whole
    with open(answers_path, "a") as fh:
        fh.write('{"id": "Small/test_9999", "solut')
    engine = ScriptedEngine(_reference_answer, supports_structured=True)
    _job(results, problems, engine)
    assert [r.problem_id for r in engine.requests] == [problems[3].id]  # the rerun asks only the rest
    ids = pq.read_table(results).column("problem_id").to_pylist()
    assert sorted(ids) == sorted(p.id for p in problems)  # one row each, never twice

    code, out = _verify(capsys, "--results", str(results))
    (summary,) = out["results"]
    answers = _lines(answers_path)
    assert [a["id"] for a in answers] == [problems[0].id, problems[2].id, problems[3].id]
    for a in answers:
        assert a["solutions"] and not a["parse_errors"] and not a["truncated"] and a["tokens"] > 0
        assert a["structured"] and a["model"] == "scripted" and a["prompt_version"] and a["raw"]
    assert summary["answered"] == 3 and summary["instances"] == 4 and summary["engine_errors"] == 1
    assert summary["datasets"] == ["logicgraph/small"] and summary["paper_best"] == PAPER_BEST
    assert json.loads(report_path.read_text()) == summary
    overall = summary["report"]["metrics"]["overall"]
    assert overall["instances"] == 4 and overall["success_rate"] == 0.75  # the engine error: no paths


def test_a_cached_rerun_costs_no_tokens_and_scores_the_same(tmp_path, capsys):
    data = str(data_or_skip())
    cache = tmp_path / "completions"
    engine = CachingEngine(ScriptedEngine(_reference_answer, supports_structured=True), CompletionCache(cache))
    _job(tmp_path / "first.parquet", _problems(3), engine)
    code, out = _verify(capsys, "--results", str(tmp_path / "first.parquet"))
    expected = out["results"][0]["report"]["metrics"]["overall"]
    assert expected["success_rate"] == 1.0 and expected["precision"] == 1.0

    fresh = tmp_path / "fresh.parquet"
    solve = ["solve", "--method", "multipath", "--dataset", "logicgraph/small", "--limit", "3", "--data-dir", data]
    solve += ["--out", str(fresh), "--engine", "replay", "--model", "scripted", "--cache", str(cache), "--no-progress"]
    assert main(solve) == 0
    assert pq.read_table(fresh).column("completion_tokens").to_pylist() == [0, 0, 0]  # nothing generated
    assert all(n > 0 for n in pq.read_table(fresh).column("cached_calls").to_pylist())

    capsys.readouterr()
    assert main(["logicgraph", "verify", "--data-dir", data, "--results", str(fresh)]) == 0
    printed = capsys.readouterr().out
    assert "3/3 instances answered (0 engine errors, 3 from the completion cache)" in printed
    assert PAPER_BEST["model"] in printed
    summary = json.loads(derived_paths(fresh)[1].read_text())
    overall = summary["report"]["metrics"]["overall"]
    assert {k: v for k, v in overall.items() if k != "mean_tokens"} == {
        k: v for k, v in expected.items() if k != "mean_tokens"
    }
    assert all(a["cached"] for a in _lines(derived_paths(fresh)[0]))

    # the answers file is in the format `logicgraph verify --answers` reads: the same metrics
    code, out = _verify(capsys, "--dataset", "logicgraph/small", "--limit", "3", "--answers", summary["answers"])
    (verified,) = out["answer_sets"]
    assert verified["metrics"]["overall"] == overall


def test_the_methods_flags_and_results_of_another_method_refused(tmp_path, capsys):
    args = build_parser().parse_args(
        ["solve", "--method", "multipath", "--out", "x.parquet", "--multipath-show", "natural"]
        + ["--multipath-max-proofs", "3", "--multipath-max-steps", "5"]
    )
    method = Multipath.from_args(args)
    assert (method.show, method.max_proofs, method.max_steps) == ("natural", 3, 5)

    results = tmp_path / "direct.parquet"
    store = ResultStore(results, run_info={"method": "direct"})
    asyncio.run(
        run_method_job(
            _problems(1),
            store,
            MethodConfig(method="direct"),
            ScriptedEngine(lambda r: "A"),
            None,
            progress=False,
        )
    )
    capsys.readouterr()
    assert main(["logicgraph", "verify", "--data-dir", str(data_or_skip()), "--results", str(results)]) == 2
    assert "`symbolkg solve --method multipath` run" in capsys.readouterr().err
    assert main(["logicgraph", "verify", "--results", str(tmp_path / "missing.parquet")]) == 2
    assert "no results at" in capsys.readouterr().err
