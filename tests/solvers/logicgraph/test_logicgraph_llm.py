"""The LogicGraph LLM prompt, schema and answer parser (no model: hand-written outputs)."""

from __future__ import annotations

import json
import re

import pytest

from symbolkg.solvers.logicgraph.instances import Instance
from symbolkg.solvers.logicgraph.prompts import PROMPT_VERSION, answer_schema, messages, parse_answer

#: a hand-made instance: G by MP from Rule1 and Fact1, or by DS from Rule2 and Fact2
RECORD = {
    "id": "Tiny/test_1",
    "question": {
        "context": {
            "rules": ["Rule1: If it rains, the match is off", "Rule2: The match is on or the pitch is dry"],
            "facts": ["Fact1: It rains", "Fact2: The pitch is not dry"],
        },
        "question": "The match is off",
    },
    "knowledge_base": {
        "rules": [
            {"id": "Rule1", "formal": "(A1 → G)", "natural": "If it rains, the match is off"},
            {"id": "Rule2", "formal": "(G ∨ A12)", "natural": "The match is off or the pitch is dry"},
        ],
        "facts": [
            {"id": "Fact1", "formal": "A1", "natural": "It rains"},
            {"id": "Fact2", "formal": "¬A12", "natural": "The pitch is not dry"},
        ],
    },
    "target": {"formal": "G", "natural": "The match is off"},
    "solutions": {"solutions": []},
}


@pytest.fixture
def inst() -> Instance:
    return Instance.from_record(RECORD)


def test_prompt_puts_the_fixed_part_first_and_shows_ids_formulas_and_english(inst):
    other = Instance.from_record({**RECORD, "id": "Tiny/test_2"})
    a, b = messages(inst), messages(other)
    assert a[0] == b[0] and a[0]["role"] == "system"  # byte-identical prefix for every instance
    user = a[1]["content"]
    assert "Rule2: (G | A12)  [The match is off or the pitch is dry]" in user and "Goal: G  [The match is off]" in user
    assert "(A1 -> G)" not in messages(inst, show="natural")[1]["content"]
    assert "Write formulas over these atoms: A1, A12, G" in messages(inst, show="natural")[1]["content"]
    assert "[" not in messages(inst, show="formal")[1]["content"]
    with pytest.raises(ValueError, match="show must be one of"):
        messages(inst, show="pictures")
    assert PROMPT_VERSION


def test_schema_pins_rules_ids_and_atoms(inst):
    schema = answer_schema(inst, max_proofs=3, max_steps=4)
    step = schema["properties"]["proofs"]["items"]["properties"]["steps"]["items"]
    assert step["properties"]["rule"]["enum"] == ["MP", "MT", "HS", "DS", "CD", "DE", "RAA"]
    assert step["properties"]["premises"]["items"]["enum"] == ["Rule1", "Rule2", "Fact1", "Fact2", "S1", "S2", "S3"]
    pattern = re.compile(step["properties"]["conclusion"]["pattern"])
    assert pattern.match("(-A12 -> (A1 | G))") and pattern.match("G")
    assert not pattern.match("A3") and not pattern.match("B1") and not pattern.match("(A1 & G)")
    assert schema["properties"]["proofs"]["maxItems"] == 3
    with pytest.raises(ValueError, match=">= 1"):
        answer_schema(inst, max_proofs=0)


def test_parse_resolves_ids_and_step_references_to_the_dataset_format(inst):
    text = json.dumps(
        {
            "proofs": [
                {"steps": [{"rule": "MP", "premises": ["Rule1", "Fact1"], "conclusion": "G"}]},
                {
                    "steps": [
                        {"rule": "DS", "premises": ["Rule2", "Fact2"], "conclusion": "G"},
                        {"rule": "MP", "premises": ["S1", "S2", "Rule9"], "conclusion": "G"},
                    ]
                },
            ]
        }
    )
    parsed = parse_answer(text, inst)
    assert parsed.errors == [] and not parsed.truncated and len(parsed.solutions) == 2
    first = parsed.solutions[0]["steps"][0]
    assert first == {
        "step_number": 1,
        "rule_applied": "MP",
        "conclusion": "G",
        "premises_used": [{"id": "Rule1", "prover9": "(A1 -> G)"}, {"id": "Fact1", "prover9": "A1"}],
    }
    cited = parsed.solutions[1]["steps"][1]["premises_used"]
    # S1 is an earlier step; S2 is the step itself and Rule9 does not exist: kept for the verifier to label
    assert cited == [{"id": "Derived", "prover9": "G"}, {"id": "S2", "prover9": ""}, {"id": "Rule9", "prover9": ""}]


def test_a_cut_off_answer_keeps_its_complete_proofs(inst):
    whole = {
        "proofs": [
            {"steps": [{"rule": "MP", "premises": ["Rule1", "Fact1"], "conclusion": "G"}]},
            {"steps": [{"rule": "DS", "premises": ["Rule2", "Fact2"], "conclusion": "G"}]},
        ]
    }
    text = json.dumps(whole)
    cut = text[: text.index('"DS"') + 8]  # in the middle of the second proof
    parsed = parse_answer(cut, inst)
    assert parsed.truncated and len(parsed.solutions) >= 1
    assert parsed.solutions[0]["steps"][0]["rule_applied"] == "MP"
    assert parse_answer("```json\n" + text + "\n```", inst).solutions == parse_answer(text, inst).solutions


@pytest.mark.parametrize(
    "text, error",
    [
        ("", "not JSON"),
        ("I think the goal follows.", "not JSON"),
        ('{"answer": "G"}', "no 'proofs' list"),
        ('{"proofs": [{"steps": []}, 3]}', "proof 1: no steps"),
    ],
)
def test_unreadable_answers_are_recorded_not_raised(inst, text, error):
    parsed = parse_answer(text, inst)
    assert parsed.solutions == [] and any(error in e for e in parsed.errors), parsed.errors
