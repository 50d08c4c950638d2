"""``symbolkg logicgraph solve``: the ``multipath`` method job with a scripted engine, then LogicGraph's files.

Rows once, resumed after a dead engine; the answers file and report derived from the rows; a rerun
from the completion cache costs no tokens; the metrics beside the paper's; the flags mapped onto the
method's.
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
from symbolkg.jobs.logicgraph.solve import PAPER_BEST, SolveRun
from symbolkg.jobs.methods.multipath import Multipath
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


def test_rows_are_written_once_and_a_rerun_after_a_dead_engine_asks_only_the_rest(tmp_path):
    problems = _problems(4)
    run = SolveRun("logicgraph/small", problems, tmp_path, max_in_flight=1, progress=False)

    def script(request):
        assert request.structured is not None and request.structured.json_schema["properties"]["proofs"]
        if request.problem_id == problems[1].id:
            return EngineError("the server dropped this one")
        if request.problem_id == problems[3].id:
            return EngineDeadError("vLLM died")
        return _reference_answer(request)

    with pytest.raises(EngineDeadError):
        asyncio.run(run.answer(ScriptedEngine(script, supports_structured=True)))
    # what finished before the engine died is saved: two answers and the engine error's row
    assert set(run.rows()) == {p.id for p in problems[:3]}
    assert run.rows()[problems[1].id]["error_kind"] == "llm_error"
    assert [a["id"] for a in run.answers()] == [problems[0].id, problems[2].id]

    # a kill mid-write of the answers file leaves half a line: it is derived, so rewritten whole
    with open(tmp_path / "answers.jsonl", "a") as fh:
        fh.write('{"id": "Small/test_9999", "solut')
    engine = ScriptedEngine(_reference_answer, supports_structured=True)
    this_call = asyncio.run(run.answer(engine))
    assert [r.problem_id for r in engine.requests] == [problems[3].id]
    assert this_call["asked"] == 1 and this_call["answered"] == 1 and this_call["engine_errors"] == 0
    assert this_call["completion_tokens"] > 0

    summary = run.finish(this_call, {"engine": "scripted"})
    ids = pq.read_table(tmp_path / "results.parquet").column("problem_id").to_pylist()
    assert sorted(ids) == sorted(p.id for p in problems)  # one row each, never twice
    answers = _lines(tmp_path / "answers.jsonl")
    assert [a["id"] for a in answers] == [problems[0].id, problems[2].id, problems[3].id]
    for a in answers:
        assert a["solutions"] and not a["parse_errors"] and not a["truncated"] and a["tokens"] > 0
        assert a["structured"] and a["model"] == "scripted" and a["prompt_version"] and a["raw"]
    assert summary["answered"] == 3 and summary["instances"] == 4 and summary["engine_errors"] == 1
    assert json.loads((tmp_path / "report.json").read_text()) == summary


def test_the_command_reports_the_papers_metrics_and_a_cached_rerun_costs_no_tokens(tmp_path, capsys):
    data = data_or_skip()
    cache = tmp_path / "completions"
    first = SolveRun("logicgraph/small", _problems(3), tmp_path / "first", progress=False)
    engine = CachingEngine(ScriptedEngine(_reference_answer, supports_structured=True), CompletionCache(cache))
    first_call = asyncio.run(first.answer(engine))
    assert first_call["answered"] == 3 and first_call["completion_tokens"] > 0
    expected = first.finish(first_call, {})["report"]["metrics"]["overall"]
    assert expected["success_rate"] == 1.0 and expected["precision"] == 1.0

    def solve(*extra: str) -> int:
        capsys.readouterr()
        return main(
            [
                "logicgraph",
                "solve",
                "--dataset",
                "logicgraph/small",
                "--limit",
                "3",
                "--data-dir",
                str(data),
                "--out",
                str(tmp_path / "fresh"),
                "--engine",
                "replay",
                "--model",
                "scripted",
                "--cache",
                str(cache),
                "--no-progress",
                *extra,
            ]
        )

    assert solve("--json") == 0
    fresh = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert fresh["this_call"]["asked"] == 3 and fresh["this_call"]["completion_tokens"] == 0
    overall = fresh["report"]["metrics"]["overall"]
    assert {k: v for k, v in overall.items() if k != "mean_tokens"} == {
        k: v for k, v in expected.items() if k != "mean_tokens"
    }
    assert all(a["cached"] for a in _lines(tmp_path / "fresh" / "answers.jsonl"))

    # rerun into the same folder: nothing asked, the same report, printed beside the paper's best model
    assert solve() == 0
    printed = capsys.readouterr().out
    assert "3/3 instances answered (0 now, 0 engine errors)" in printed and PAPER_BEST["model"] in printed
    assert json.loads((tmp_path / "fresh" / "report.json").read_text())["report"] == fresh["report"]

    # the answers file is in the format `logicgraph verify --answers` reads: the same metrics
    assert (
        main(
            [
                "logicgraph",
                "verify",
                "--dataset",
                "logicgraph/small",
                "--limit",
                "3",
                "--data-dir",
                str(data),
                "--answers",
                str(tmp_path / "fresh" / "answers.jsonl"),
                "--json",
            ]
        )
        == 0
    )
    (verified,) = json.loads(capsys.readouterr().out)["answer_sets"]
    assert verified["metrics"]["overall"] == overall


def test_the_flags_map_onto_the_methods_and_bad_ones_are_refused_before_any_engine(tmp_path, capsys):
    args = build_parser().parse_args(
        ["logicgraph", "solve", "--out", str(tmp_path), "--show", "natural", "--max-proofs", "3", "--max-steps", "5"]
    )
    method = Multipath.from_args(args)
    assert (method.show, method.max_proofs, method.max_steps) == ("natural", 3, 5)
    defaults = Multipath.from_args(build_parser().parse_args(["logicgraph", "solve", "--out", str(tmp_path)]))
    assert (defaults.show, defaults.max_proofs, defaults.max_steps) == ("both", 8, 16)

    data = str(data_or_skip())
    base = ["logicgraph", "solve", "--out", str(tmp_path / "run"), "--data-dir", data]  # default engine: vllm
    for extra, message in (
        (["--max-tokens", "0"], "--max-tokens must be >= 1"),
        (["--max-proofs", "0"], "--max-proofs and --max-steps must be >= 1"),
        (["--dataset", "logiclm/folio", "--limit", "2"], "use --dataset logicgraph/<tier>"),
        (["--ids", "Small/test_nope"], "no instance Small/test_nope"),
    ):
        capsys.readouterr()
        assert main([*base, *extra]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
