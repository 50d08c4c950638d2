"""``symbolkg logicgraph verify``: answers parsing, error labels and the paper's metrics."""

from __future__ import annotations

import copy
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from symbolkg.jobs.cli import main
from symbolkg.solvers.logicgraph.answers import Answer, AnswerSet, parse_answers, reference_answers
from symbolkg.solvers.logicgraph.instances import Instance, load_instances
from symbolkg.solvers.logicgraph.proofs import (
    FACT_HALLUCINATION,
    INSUFFICIENT_PREMISE,
    INVALID_DEDUCTION,
    MALFORMED,
    RULE_MISAPPLICATION,
    check_path,
)
from symbolkg.solvers.logicgraph.scoring import format_report, metrics, verify_answers, verify_run
from tests.conftest import DATA, FIXTURES

# Small/test_1 (2 proofs, 2 families), Small/test_5 (4 proofs, 3 families)
TWO = FIXTURES / "logicgraph" / "small_two.jsonl"
RATES = (
    "success_rate",
    "precision",
    "shortest_path_rate",
    "diversity",
    "diversity_exact",
    "versatility",
    "originality",
)


@pytest.fixture(scope="module")
def two() -> list[Instance]:
    return list(load_instances(TWO))


def _proof(inst: Instance, k: int = 0) -> dict[str, Any]:
    """A copy of reference proof ``k`` as an answer proof (Small/test_1 proof 1: DS then MT)."""
    return copy.deepcopy(inst.record["solutions"]["solutions"][k])


def test_reference_proofs_as_answers_score_100_percent(two: list[Instance]) -> None:
    report = verify_answers(two, reference_answers(two))
    assert all(p.valid and p.minimal and p.entails_goal for r in report.instances for p in r.paths)
    assert all(s.ok for r in report.instances for p in r.paths for s in p.steps)
    overall = metrics(report)["overall"]
    assert {name: getattr(overall, name) for name in RATES} == {name: 1.0 for name in RATES}
    assert (overall.paths, overall.valid_paths, overall.non_minimal_valid_paths, overall.unmatched_valid_paths) == (
        6,
        6,
        0,
        0,
    )
    assert sum(overall.step_labels.values()) == 0


def test_dropped_premise_is_insufficient_premise(two: list[Instance]) -> None:
    proof = _proof(two[0])
    del proof["steps"][1]["premises_used"][1]  # MT without its Derived -A1
    check = check_path(two[0], proof)
    assert not check.valid and check.steps[0].ok
    assert check.steps[1].labels == (INSUFFICIENT_PREMISE,)
    assert check.steps[1].missing == ("step 1",)  # the earlier conclusion is what was left out


def test_dropped_knowledge_base_premise_names_it(two: list[Instance]) -> None:
    proof = _proof(two[0])
    del proof["steps"][0]["premises_used"][1]  # DS without Fact1 (-A2)
    check = check_path(two[0], proof)
    assert check.steps[0].labels == (INSUFFICIENT_PREMISE,) and check.steps[0].missing == ("Fact1",)


def test_wrong_rule_name_is_rule_misapplication(two: list[Instance]) -> None:
    proof = _proof(two[0])
    proof["steps"][0]["rule_applied"] = "MP"  # it is a DS step
    check = check_path(two[0], proof)
    assert check.steps[0].labels == (RULE_MISAPPLICATION,) and check.steps[0].matches == ("DS",)
    assert not check.valid and check.sound
    assert check_path(two[0], proof, strict_rules=False).valid


def test_invented_premise_id_is_fact_hallucination(two: list[Instance]) -> None:
    proof = _proof(two[0])
    proof["steps"][0]["premises_used"][0]["id"] = "Rule99"
    check = check_path(two[0], proof)
    assert check.steps[0].labels == (FACT_HALLUCINATION,) and "Rule99" in check.steps[0].notes[0]
    assert not check.valid and "Rule99" not in check.premise_ids


def test_misquoted_premise_and_unknown_atom_are_fact_hallucination(two: list[Instance]) -> None:
    proof = _proof(two[0])
    proof["steps"][1]["premises_used"][0]["prover9"] = "(-G -> A9)"  # Rule7 is (-G -> A1); A9 does not exist
    check = check_path(two[0], proof)
    assert FACT_HALLUCINATION in check.steps[1].labels
    assert any("Rule7 is (-G -> A1)" in n for n in check.steps[1].notes)
    assert any("A9" in n for n in check.steps[1].notes)


def test_swapped_negation_in_a_conclusion_is_invalid_deduction(two: list[Instance]) -> None:
    proof = _proof(two[0])
    proof["steps"][0]["conclusion"] = "A1"  # DS gives -A1
    check = check_path(two[0], proof)
    assert check.steps[0].labels == (INVALID_DEDUCTION,)
    assert FACT_HALLUCINATION in check.steps[1].labels  # its Derived -A1 is now no earlier conclusion
    last = _proof(two[0])
    last["steps"][1]["conclusion"] = "-G"
    check = check_path(two[0], last)
    assert check.steps[1].labels == (INVALID_DEDUCTION,) and not check.reaches_goal


def test_malformed_answer_lines_are_recorded_not_raised(two: list[Instance]) -> None:
    good = {"id": "Small/test_1", "solutions": [_proof(two[0])], "tokens": 10}
    lines = [
        "not json",
        json.dumps([1, 2]),
        json.dumps({"solutions": []}),
        json.dumps(good),
        json.dumps({**good, "solutions": []}),  # duplicate id: the first line is kept
        json.dumps({"id": "Small/test_5", "solutions": "prose", "tokens": "many"}),
        json.dumps({"id": "Nope/test_0", "solutions": []}),
        "",
    ]
    answers = parse_answers(lines, name="m")
    assert len(answers.errors) == 6
    assert set(answers.answers) == {"Small/test_1", "Small/test_5", "Nope/test_0"}
    assert answers.answers["Small/test_5"].solutions == () and answers.answers["Small/test_5"].tokens is None

    bad_paths = [
        "a string",
        {"steps": []},
        {"steps": ["x", {"rule_applied": "MP"}]},
        {"steps": [{"rule_applied": "MP", "premises_used": [{"id": "Derived"}], "conclusion": "G"}]},
        {"steps": [{"rule_applied": "MP", "premises_used": [{"id": "Rule1", "prover9": "(A2 |"}], "conclusion": "G"}]},
        [{"rule_applied": "DS", "premises_used": ["Rule1", "Fact1"], "conclusion": "-A1"}],  # bare ids, bare step list
    ]
    report = verify_answers(two, {"Small/test_1": Answer("Small/test_1", tuple(bad_paths))})
    paths = report.instances[0].paths
    assert [p.valid for p in paths] == [False] * 6
    assert all(MALFORMED in p.labels() for p in paths[:5])
    assert paths[5].steps[0].ok and not paths[5].reaches_goal  # well-formed, just not a whole proof
    m = metrics(report)["overall"]
    assert (m.step_labels[MALFORMED], m.path_labels[MALFORMED]) == (6, 5)  # path 3 has two malformed steps


def test_missing_instance_counts_as_no_paths(two: list[Instance]) -> None:
    only_first = AnswerSet("partial", {"Small/test_1": reference_answers(two[:1]).answers["Small/test_1"]})
    report = verify_answers(two, only_first)
    assert [r.answered for r in report.instances] == [True, False]
    m = metrics(report)["overall"]
    assert (m.instances, m.answered, m.success_rate, m.precision, m.diversity, m.versatility) == (
        2,
        1,
        0.5,
        1.0,
        0.5,
        0.5,
    )


def test_non_minimal_valid_path_counts_for_diversity_not_diversity_exact(two: list[Instance]) -> None:
    # Small/test_1 proof 1 with a dead first step taken from proof 2 (its premises are then cited, not used)
    proof = _proof(two[0])
    dead = copy.deepcopy(two[0].record["solutions"]["solutions"][1]["steps"][0])
    proof["steps"] = [dead, *proof["steps"]]
    check = check_path(two[0], proof)
    assert check.valid and check.minimal and check.premise_ids > check.used_ids  # dead steps do not count
    # a genuinely non-minimal premise set: both proofs concatenated, ending in G twice
    both = {"steps": _proof(two[0], 1)["steps"] + _proof(two[0], 0)["steps"]}
    check = check_path(two[0], both)
    assert check.valid and check.minimal  # the last step depends on proof 1's premises only
    report = verify_answers(two[:1], {"Small/test_1": Answer("Small/test_1", (both,))})
    assert metrics(report)["overall"].diversity == 0.5


def _data_dir(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "logicgraph").mkdir(parents=True)
    shutil.copy(TWO, root / "logicgraph" / "small.jsonl")
    return root


def test_cli_originality_over_a_pool_of_two_files(
    two: list[Instance], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _data_dir(tmp_path)
    full = tmp_path / "full.jsonl"
    assert main(["logicgraph", "verify", "--data-dir", str(data), "--write-reference", str(full)]) == 0
    first = tmp_path / "first.jsonl"
    with open(first, "w") as fh:
        fh.writelines(
            json.dumps({"id": inst.id, "solutions": [_proof(inst)], "tokens": tokens}) + "\n"
            for inst, tokens in zip(two, (100, 300), strict=True)
        )
    capsys.readouterr()
    assert (
        main(
            ["logicgraph", "verify", "--data-dir", str(data), "--answers", str(full), "--answers", str(first), "--json"]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    a, b = (s["metrics"]["overall"] for s in out["answer_sets"])
    # full: test_1 (1/2 + 1)/2, test_5 (1/2 + 3)/4; first: test_1 (1/2)/2, test_5 (1/2)/4
    assert a["originality"] == pytest.approx((0.75 + 0.875) / 2)
    assert b["originality"] == pytest.approx((0.25 + 0.125) / 2)
    assert (a["diversity"], b["diversity"]) == (1.0, pytest.approx((1 / 2 + 1 / 4) / 2))
    assert b["versatility"] == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert (a["mean_tokens"], b["mean_tokens"]) == (None, 200.0)
    assert b["shortest_path_rate"] == 0.5  # test_5's proof 1 has 5 steps, its shortest (proof 2) 2


def test_cli_table_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _data_dir(tmp_path)
    assert main(["logicgraph", "verify", "--data-dir", str(data), "--reference"]) == 0
    out = capsys.readouterr().out
    assert "SR%" in out and "small" in out and "100.00" in out
    assert main(["logicgraph", "verify", "--data-dir", str(data)]) == 2  # nothing to verify
    assert main(["logicgraph", "verify", "--data-dir", str(data), "--answers", str(tmp_path / "none.jsonl")]) == 2
    assert main(["logicgraph", "verify", "--data-dir", str(data), "--dataset", "logicgraph/large", "--reference"]) == 2


def _both_tiers() -> None:
    if not all((DATA / "logicgraph" / f"{t}.jsonl").is_file() for t in ("small", "medium")):
        pytest.skip(f"LogicGraph data not found under {DATA / 'logicgraph'}")


def test_cli_reference_on_the_first_instances_of_both_tiers(capsys: pytest.CaptureFixture[str]) -> None:
    _both_tiers()
    assert main(["logicgraph", "verify", "--data-dir", str(DATA), "--reference", "--limit", "20", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)["answer_sets"][0]["metrics"]
    assert list(table) == ["small", "medium", "overall"]
    for m in table.values():
        assert {name: m[name] for name in RATES} == {name: 1.0 for name in RATES}


@pytest.mark.slow
def test_cli_reference_on_both_full_tiers(capsys: pytest.CaptureFixture[str]) -> None:
    _both_tiers()
    started = time.perf_counter()
    assert main(["logicgraph", "verify", "--data-dir", str(DATA), "--reference", "--json"]) == 0
    elapsed = time.perf_counter() - started
    table = json.loads(capsys.readouterr().out)["answer_sets"][0]["metrics"]
    overall = table["overall"]
    assert (
        overall["instances"],
        overall["paths"],
        overall["valid_paths"],
        overall["steps"],
        overall["valid_steps"],
    ) == (600, 2706, 2706, 16208, 16208)
    for m in table.values():
        assert {name: m[name] for name in RATES} == {name: 1.0 for name in RATES}
    print(f"full reference verification: {elapsed:.1f} s")


def test_verify_run_takes_answer_log_dicts_and_format_report_prints_it(two: list[Instance]) -> None:
    logged = [
        {"id": "Small/test_1", "solutions": [_proof(two[0])], "tokens": 40, "raw": "..."},
        {"id": "Small/test_5", "solutions": "unreadable"},
        "garbage",
    ]
    report = verify_run(two, logged, name="m")
    json.dumps(report)  # JSON-ready
    overall = report["metrics"]["overall"]
    assert (overall["success_rate"], overall["precision"], overall["mean_tokens"]) == (0.5, 1.0, 40.0)
    assert len(report["errors"]) == 2
    paper = {"model": "Gemini-3-Pro-Preview", "average": {"success_rate": 96.11}, "small": {"success_rate": 93.0}}
    text = format_report(report, paper=paper)
    assert "answers: m" in text and "Gemini-3-Pro-Preview" in text and "93.00" in text and "96.11" in text
