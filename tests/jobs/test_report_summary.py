"""``symbolkg report --summary``: the counts of several runs in one table, the same on every machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from symbolkg.jobs.cli import main
from symbolkg.jobs.inspection.report import SUMMARY_LEGEND, SummaryLine, format_summary, summary, summary_lines
from tests.conftest import lp_problem, write_jsonl


def _run(tmp: Path, name: str, rows: list[dict]) -> Path:
    """Solve ``rows`` (problems with programs) with the local pool into ``tmp/name.parquet``."""
    src = write_jsonl(tmp / f"{name}.jsonl", rows)
    out = tmp / f"{name}.parquet"
    assert main(["solve", "--programs", str(src), "--out", str(out), "--executor", "local", "--no-progress"]) == 0
    return out


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    """A run over two datasets (one program that does not parse, one wrong answer) and a clean one."""
    mixed = [lp_problem(i) for i in range(6)]
    mixed[1]["answer"] = "A"  # gold says True, the program proves False: executed, answered, wrong
    mixed[5]["program"]["text"] = "Predicates:\nnot a program"
    for row in mixed[3:]:
        row["dataset"] = "custom/second"
    return _run(tmp_path, "mixed", mixed), _run(tmp_path, "clean", [lp_problem(i) for i in range(10, 14)])


def test_lines_count_each_dataset_of_each_run(two_runs):
    mixed, clean = two_runs
    assert summary_lines(mixed) == [
        SummaryLine("recorded: mixed.jsonl", "custom", problems=3, executed=3, correct=2, certified=3),
        SummaryLine("recorded: mixed.jsonl", "custom/second", problems=3, executed=2, correct=2, certified=2),
    ]
    assert summary_lines(clean) == [SummaryLine("recorded: clean.jsonl", "custom", 4, 4, 4, 4)]


def test_summary_keeps_the_order_given_and_leaves_out_paths_and_times(two_runs, tmp_path):
    mixed, clean = two_runs
    text = summary([clean, mixed])
    lines = text.splitlines()
    assert lines[0].split() == ["what", "ran", "dataset", "problems", "executed", "correct", "accuracy", "certified"]
    assert [line.split()[1] for line in lines[2:5]] == ["clean.jsonl", "mixed.jsonl", "mixed.jsonl"]
    assert lines[3].split()[-2:] == ["66.7%", "3"]
    assert text.endswith(SUMMARY_LEGEND)
    assert str(tmp_path) not in text and " s " not in text and "wall" not in text
    assert summary([clean, mixed]) == text  # reading again gives the same text


def test_columns_line_up_whatever_the_labels():
    lines = [
        SummaryLine("logiclm: smollm2-135m", "logiclm/prontoqa", 50, 9, 6, 9),
        SummaryLine("recorded: AR-LSAT_dev_gpt-4.json", "logiclm/ar-lsat", 231, 169, 81, 86),
    ]
    table = format_summary(lines).splitlines()
    header, rows = table[0], table[2:4]
    assert {len(header), *map(len, rows)} == {len(header)}  # one width: every column right-aligned under its head
    assert rows[0].split()[-2:] == ["12.0%", "9"] and rows[1].split()[-2:] == ["35.1%", "86"]


def test_cli_summary_and_its_refusals(two_runs, tmp_path, capsys):
    mixed, clean = two_runs
    capsys.readouterr()
    assert main(["report", "--summary", str(mixed), str(clean)]) == 0
    assert capsys.readouterr().out.strip() == summary([mixed, clean])
    assert main(["report", str(mixed), str(clean)]) == 2
    assert "one RUN at a time" in capsys.readouterr().err
    assert main(["report", "--summary", "--json", str(mixed)]) == 2
    assert main(["report", "--summary", str(mixed), str(tmp_path / "nothing.parquet")]) == 2
    assert "no results" in capsys.readouterr().err
