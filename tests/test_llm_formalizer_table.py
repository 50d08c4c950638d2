"""The Markdown table ``benchmarks/llm_formalizer.py`` writes of every tabulated run (``markdown``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "llm_formalizer", Path(__file__).resolve().parents[1] / "benchmarks" / "llm_formalizer.py"
)
assert _spec is not None and _spec.loader is not None
formalizer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(formalizer)


def cells(problems: int, correct: int, tokens: int | None, seconds: float | None) -> dict:
    return {
        "problems": problems,
        "executed": problems - 1,
        "correct": correct,
        "certified": correct + 1,
        "tokens_per_correct": tokens,
        "seconds_per_correct": seconds,
    }


def results(first: int | None = None) -> dict:
    return {
        "model": "m",
        "machine": "box (2 cores)",
        "date": "2026-12-07",
        "first": first,
        "runs": {
            "logiclm-skeleton": {"sets": {"folio": cells(50, 12, 12345, 210.4), "ar-lsat": cells(50, 0, None, None)}},
            "symbolkg-default": {"sets": {"folio": cells(10, 3, 999, 7.0)}},
        },
    }


def test_a_row_per_run_and_set_with_the_anchors_only_beside_whole_slices():
    lines = formalizer.markdown(results()).splitlines()
    rows = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert rows == [
        "| logiclm-skeleton | folio | 12 | 50 | 49 | 13 | 12,345 | 210 | 9 | 24 |",
        "| logiclm-skeleton | ar-lsat | 0 | 50 | 49 | 1 | n/a | n/a | 2 | 0 |",
        # ten problems are not the anchors' first 50: no anchor beside them
        "| symbolkg-default | folio | 3 | 10 | 9 | 4 | 999 | 7 |  |  |",
    ]
    assert "box (2 cores)" in lines[0] and "first" not in lines[0]


def test_a_table_of_the_first_k_problems_says_so():
    assert "only the first 10 problems of each set" in formalizer.markdown(results(first=10)).splitlines()[0]


def test_a_variant_no_method_has_is_refused_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as stop:
        formalizer.main(["--methods", "symbolkg", "--variants", "no-hints,no-hint", "--tabulate"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "no method has no-hint;" in err and "symbolkg: default, no-retrieval" in err
    # a variant of another method is no typo: a mixed call runs each method's own (or its first)
    assert formalizer.unknown_variants(["skeleton", "no-hints", "default"]) == []
    assert formalizer.variants_of("symba", ["skeleton", "no-hints"]) == ["default"]
