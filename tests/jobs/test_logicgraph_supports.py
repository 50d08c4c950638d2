"""``symbolkg logicgraph supports`` on the shared LogicGraph data, and its input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from symbolkg.jobs.cli import main
from symbolkg.solvers.logicgraph.generate import generate
from tests.conftest import data_or_skip


@pytest.mark.parametrize("tier", ["small", "medium"])
def test_first_instances_match_the_reference(tier: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = data_or_skip("logicgraph", f"{tier}.jsonl")
    out = tmp_path / "rows.jsonl"
    code = main(
        [
            "logicgraph",
            "supports",
            "--dataset",
            f"logicgraph/{tier}",
            "--data-dir",
            str(path.parent.parent),
            "--limit",
            "20",
            "--json",
            "--out",
            str(out),
        ]
    )
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, summary["mismatches"]
    for key in ("instances", "gt_sets", "found_sets", "recall", "extra", "complete", "p50_ms", "p95_ms"):
        assert key in summary
    assert summary["instances"] == 20 and summary["complete"] == 20
    assert summary["recall"] == 1.0 and summary["extra"] == 0 and summary["found_sets"] == summary["gt_sets"]
    assert summary["rechecked"] == 20 and summary["certified"] == 20
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 20 and all(r["supports"] == r["reference"] for r in rows)


def test_table_and_ids(capsys: pytest.CaptureFixture[str]) -> None:
    path = data_or_skip("logicgraph", "small.jsonl")
    code = main(
        [
            "logicgraph",
            "supports",
            "--dataset",
            "logicgraph/small",
            "--data-dir",
            str(path.parent.parent),
            "--ids",
            "Small/test_1",
        ]
    )
    text = capsys.readouterr().out
    assert code == 0
    assert "logicgraph/small" in text and "100.0%" in text


def test_missing_file_and_bad_record_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "logicgraph").mkdir()
    assert main(["logicgraph", "supports", "--dataset", "logicgraph/tiny", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "tiny.jsonl" in err or "'logicgraph/tiny'" in err  # the dataset registry names the dataset
    bad = tmp_path / "logicgraph" / "broken.jsonl"
    bad.write_text(
        '{"id": "Broken/test_1", "knowledge_base": {"rules": [], "facts": [{"id": "Fact1", "formal": "(A ∨"}]}}\n'
    )
    assert main(["logicgraph", "supports", "--dataset", "logicgraph/broken", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "broken.jsonl:1" in err and "knowledge_base.facts[0].formal" in err
    assert main(["logicgraph", "supports", "--dataset", "logiclm/folio", "--data-dir", str(tmp_path)]) == 2


def test_a_generated_tier_of_15_to_19_proofs_is_complete_certified_and_matches_the_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the file's reference proofs come from the reference enumerator (dualize), so this compares the
    # elimination with an independent algorithm on the paper's largest proof counts
    folder = tmp_path / "logicgraph"
    folder.mkdir()
    records = [g.record for g in generate("large_15_19", 2, seed=3)]
    (folder / "large_15_19.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code = main(
        ["logicgraph", "supports", "--dataset", "logicgraph/large_15_19", "--data-dir", str(tmp_path), "--json"]
    )
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, summary["mismatches"]
    assert summary["instances"] == 2 and summary["complete"] == 2 and summary["certified"] == 2
    assert summary["recall"] == 1.0 and summary["extra"] == 0 and summary["gt_sets"] >= 30
