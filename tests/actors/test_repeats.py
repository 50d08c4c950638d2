"""RepeatStop: when the tokens generated so far end in a loop (the engines' stop for self-repeating completions)."""

from __future__ import annotations

import json

import pytest

from symbolkg.actors.engines.repeats import RepeatStop
from tests.conftest import data_or_skip

STOP = RepeatStop()  # 128 tokens, 3 copies, blocks of up to 256 tokens


def looping(prefix: int, block: list[int], tokens: int) -> list[int]:
    """``prefix`` distinct tokens, then ``block`` over and over up to ``tokens`` more."""
    body = (block * (tokens // len(block) + 1))[:tokens]
    return [10_000 + i for i in range(prefix)] + body


@pytest.mark.parametrize("period", [1, 2, 7, 42, 43, 100, 256])
def test_a_tail_of_one_block_repeated_is_a_loop_of_that_block(period):
    block = list(range(100, 100 + period))
    span = max(128, 3 * period)
    assert STOP.period(looping(50, block, span)) == period
    assert STOP.period(looping(50, block, span - 1)) is None  # one token short of the tail it needs


def test_the_shortest_block_is_reported():
    assert STOP.period(looping(3, [5, 6, 5, 6], 200)) == 2


def test_one_changed_token_anywhere_in_the_tail_is_no_loop():
    ids = looping(10, [1, 2, 3, 4, 5, 6, 7], 128)
    for where in (-1, -64, -128):
        changed = list(ids)
        changed[where] = 999
        assert STOP.period(changed) is None, where


def test_blocks_longer_than_max_period_and_short_outputs_are_not_looked_for():
    assert STOP.period(looping(0, list(range(257)), 257 * 4)) is None
    assert RepeatStop(max_period=257).period(looping(0, list(range(257)), 257 * 3)) == 257
    assert STOP.period([7] * 127) is None
    assert STOP.period([7] * 128) == 1
    assert STOP.period([]) is None


def test_two_copies_of_a_long_block_are_not_three():
    assert STOP.period(looping(20, list(range(90)), 180)) is None  # 2 copies over 180 >= 128 tokens
    assert STOP.period(looping(20, list(range(90)), 270)) == 90
    assert RepeatStop(repeats=4).period(looping(20, list(range(90)), 270)) is None


def test_due_looks_every_check_every_tokens_from_min_tokens_on():
    assert not STOP.due(127, 0)
    assert STOP.due(128, 0)
    assert not STOP.due(140, 128)
    assert STOP.due(144, 128)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"repeats": 1}, "repeats"),
        ({"max_period": 0}, "max_period"),
        ({"min_tokens": 2}, "min_tokens"),
        ({"check_every": 0}, "check_every"),
    ],
)
def test_bad_settings_are_refused_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RepeatStop(**kwargs)


def test_no_recorded_program_of_three_models_is_a_loop():
    """Logic-LM's recorded programs (GPT-4, gpt-3.5-turbo, text-davinci-003; every set), in the embedded
    model's tokens, never end in a loop wherever an engine would look (every 16 tokens as it writes)."""
    from symbolkg.actors.engines import models

    root = data_or_skip("logiclm", "programs")
    if not models.is_prepared(models.DEFAULT_MODEL):
        pytest.skip("the embedded model (its tokenizer) is not converted")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(models.model_dir(models.DEFAULT_MODEL)))
    files = sorted(root.glob("*.json"))
    assert len(files) == 15
    programs = [
        (path.name, record["id"], program)
        for path in files
        for record in json.loads(path.read_text())
        for program in record["raw_logic_programs"]
    ]
    assert len(programs) > 5000
    encoded = tokenizer([p for _, _, p in programs], add_special_tokens=False)["input_ids"]
    for (name, pid, _), ids in zip(programs, encoded, strict=True):
        for end in range(STOP.min_tokens, len(ids) + 1, STOP.check_every):
            assert STOP.period(ids[:end]) is None, (name, pid, end)
