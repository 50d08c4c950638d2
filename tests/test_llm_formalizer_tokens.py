"""How ``benchmarks/llm_formalizer.py`` costs a row's LLM calls (``row_tokens``): a call the cache answered
counts what the model spent on the request that answered it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "llm_formalizer", Path(__file__).resolve().parents[1] / "benchmarks" / "llm_formalizer.py"
)
assert _spec is not None and _spec.loader is not None
formalizer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(formalizer)


def row(*attempts: dict, cached_calls: int = 1) -> dict:
    return {
        "attempts_log": json.dumps(list(attempts)),
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_calls": cached_calls,
    }


FORMULATION = {"purpose": "formulate", "completion": "P(a).", "prompt_tokens": 700, "completion_tokens": 40}


def test_a_cached_repair_that_wrote_its_formulation_again_costs_the_repair():
    # the same text as the formulation, asked with a longer prompt: the text alone would say 700 prompt tokens
    repair = {
        "purpose": "refine",
        "completion": "P(a).",
        "cached": True,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "stored_tokens": [900, 40],
    }
    costs = {"P(a).": (700, 40)}
    assert formalizer.row_tokens(row(FORMULATION, repair), costs) == (1600, 80)


def test_rows_written_before_stored_tokens_are_costed_by_their_text():
    repair = {"purpose": "refine", "completion": "P(a).", "cached": True, "prompt_tokens": 0, "completion_tokens": 0}
    assert formalizer.row_tokens(row(FORMULATION, repair), {"P(a).": (700, 40)}) == (1400, 80)
    assert formalizer.row_tokens(row(FORMULATION, repair), {}) == (700, 40), "an unknown text costs nothing"


def test_a_row_the_model_answered_whole_counts_its_own_totals():
    untallied = {"round": 1, "purpose": "answer", "completion": "A"}  # a log without tokens per call (direct)
    answered = {
        "attempts_log": json.dumps([untallied]),
        "prompt_tokens": 321,
        "completion_tokens": 7,
        "cached_calls": 0,
    }
    assert formalizer.row_tokens(answered, {"A": (1, 1)}) == (321, 7)
