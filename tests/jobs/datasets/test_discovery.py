"""Datasets by discovery: files and folders whose names appear nowhere in the code are datasets.

Each test builds a data folder in a temp dir, as a new user would: a depth-7 PARARULE-Plus file,
a SymBa-format folder (string ids, statements without descriptions, a named world rule set, a
numeric answer in a folder that is not a math set), a Logic-LM-layout folder with a new name and
its recorded programs, one whose records name their language, and a user's JSON Lines file.
Each is listed by ``symbolkg datasets --data-dir`` and loads; a wrong record gets the one-line
error that names the file, the record and the field.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main
from symbolkg.jobs.datasets.records import InputError
from symbolkg.jobs.datasets.registry import dataset_names, find_dataset, load_dataset, load_problems, resolve_name
from symbolkg.jobs.methods.logiclm import language_for
from tests.conftest import DATA

PW_LP = """Predicates:
Cat($x, bool) ::: Is x a cat?
Animal($x, bool) ::: Is x an animal?
Facts:
Cat(Tom, True) ::: Tom is a cat.
Rules:
Cat($x, True) >>> Animal($x, True) ::: All cats are animals.
Query:
Animal({who}, True) ::: {who} is an animal."""

WORLD = [
    {
        "id": 0,
        "name": "fair_trial_rules",
        "statements": [
            {
                "id": 0,
                "statement": "fair_trial :- public_hearing, reasonable_time.",
                "description": "A trial is fair when the hearing is public and the time reasonable.",
            },
            {"id": 0, "statement": "reasonable_time :- no_delays."},  # no description: SymBa's own files have such
        ],
    }
]

SYMBA = [
    {
        "id": "001-187689",
        "body_text": "The hearing was public. There were no delays.",
        "world_model": ["fair_trial_rules"],
        "goal": "fair_trial",
        "label": True,
        "program": [
            {"statement": "public_hearing."},
            {"statement": "no_delays.", "description": "There were no delays."},
        ],
    },
    {
        "id": "001-189425",
        "body_text": "The hearing was secret.",
        "world_model": ["fair_trial_rules"],
        "goal": "fair_trial",
        "label": False,
        "program": [],
    },
    {
        "id": 3,
        "body_text": "Ann has 2 apples and buys half an apple.",
        "world_model": [],
        "goal": "answer(X)",
        "label": True,
        "goal_solved": "answer(2.5)",
        "program": [{"statement": "answer(X) :- X is 2 + 0.5."}],
    },
]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def pararule_record(cid: str, depth: int) -> dict:
    q = {"id": f"{cid}1", "text": "The cat is big.", "label": "true", "meta": {"QDep": str(depth), "QCat": "0"}}
    return {
        "id": cid,
        "context": "The cat is big.",
        "questions": [q, {**q, "id": f"{cid}2", "text": "The cat is not big.", "label": "false"}],
    }


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    # no trailing newline, as the source
    write(
        root / "pararule_plus/Depth7/PARARULE_Plus_Depth7_shuffled_test.jsonl",
        "\n".join(json.dumps(pararule_record(f"C-D7-{i}", 7)) for i in range(3)),
    )
    write(root / "symba/fair_trials/test_data.json", json.dumps(SYMBA))
    # SymBa's own files start with a newline
    write(root / "symba/fair_trials/world_data.json", "\n" + json.dumps(WORLD))
    puzzles = [
        {
            "id": f"cats_{i}",
            "context": "Tom is a cat. All cats are animals.",
            "question": f"Is the following statement true or false? {who} is an animal.",
            "options": ["A) True", "B) False"],
            "answer": "A" if who == "Tom" else "B",
        }
        for i, who in enumerate(("Tom", "Rex"))
    ]
    write(root / "logiclm/CatPuzzles/dev.json", json.dumps(puzzles))
    write(
        root / "logiclm/programs/CatPuzzles_dev_gpt-4.json",
        json.dumps(
            [
                {**p, "raw_logic_programs": [PW_LP.format(who=who)]}
                for p, who in zip(puzzles, ("Tom", "Rex"), strict=True)
            ]
        ),
    )
    write(root / "logiclm/Typed/dev.json", json.dumps([{**puzzles[0], "id": "typed_0", "language": "logiclm-fol"}]))
    write(
        root / "custom/mine.jsonl",
        "\n".join(
            json.dumps(r)
            for r in (
                {"id": "m1", "context": "Tom is a cat.", "question": "Is Tom a cat?"},
                {
                    "id": "m2",
                    "context": "Tom is a cat.",
                    "question": "Is Tom a dog?",
                    "options": ["A) Yes", "B) No"],
                    "answer": "B",
                },
            )
        )
        + "\n",
    )
    return root


NAMES = {
    "pararule_plus/depth7": 6,
    "symba/fair_trials": 3,
    "logiclm/catpuzzles": 2,
    "logiclm/typed": 1,
    "custom/mine": 2,
}


def test_the_datasets_command_lists_every_file_of_a_known_family(data: Path, capsys) -> None:
    assert main(["datasets", "--data-dir", str(data), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["datasets"] == dict(sorted(NAMES.items()))
    assert dataset_names(data) == sorted(NAMES)
    for name, count in NAMES.items():
        problems = load_dataset(name, data).problems
        assert len(problems) == count and {p.dataset for p in problems} == {name}


def test_a_depth7_pararule_file_loads_as_depths_2_to_4_do(data: Path) -> None:
    problems = load_dataset("pararule_plus/depth7", data).problems
    assert [(p.id, p.answer) for p in problems[:2]] == [("C-D7-01", "A"), ("C-D7-02", "B")]
    assert problems[0].meta == {"context_id": "C-D7-0", "QDep": "7", "QCat": "0"}
    assert resolve_name("depth7", data) == "pararule_plus/depth7"
    # two files of one depth: each is named by the rest of its file name
    text = (data / "pararule_plus/Depth7/PARARULE_Plus_Depth7_shuffled_test.jsonl").read_text()
    write(data / "pararule_plus/Depth7/PARARULE_Plus_Depth7_shuffled_train.jsonl", text)
    assert [n for n in dataset_names(data) if n.startswith("pararule")] == [
        "pararule_plus/depth7_shuffled_test",
        "pararule_plus/depth7_shuffled_train",
    ]


def test_a_symba_folder_with_string_ids_no_descriptions_and_a_world_rule_set(data: Path) -> None:
    a, b, c = load_dataset("symba/fair_trials", data).problems
    assert [p.id for p in (a, b, c)] == ["fair_trials_001-187689", "fair_trials_001-189425", "fair_trials_3"]
    assert a.meta["source_id"] == "001-187689" and c.meta["source_id"] == "3"
    assert a.meta["program"] == [
        {"statement": "public_hearing.", "description": ""},
        {"statement": "no_delays.", "description": "There were no delays."},
    ]
    assert a.meta["world_rules"] == ["fair_trial :- public_hearing, reasonable_time.", "reasonable_time :- no_delays."]
    assert (a.options, a.answer, b.answer) == (("A) True", "B) False"), "A", "B")
    # a goal with a variable and a solved goal asks for a value, whatever the folder is called
    assert (c.options, c.answer, c.question) == ((), "2.5", "answer(X)")


def test_logiclm_layout_with_new_names_and_the_language_from_records_programs_or_flag(data: Path) -> None:
    cats = load_dataset("logiclm/catpuzzles", data).problems
    assert [p.meta["language"] for p in cats] == ["logiclm-lp"] * 2  # told by the recorded programs' sections
    assert language_for(cats[0]) == "logiclm-lp"
    assert find_dataset("logiclm/catpuzzles", data).programs == data / "logiclm/programs/CatPuzzles_dev_gpt-4.json"
    typed = load_dataset("logiclm/typed", data).problems[0]
    assert typed.meta["language"] == "logiclm-fol"  # the record's own field
    assert load_dataset("logiclm/typed", data, language="logiclm-lp").problems[0].meta["language"] == "logiclm-lp"
    with pytest.raises(ValueError, match="unknown program language 'cobol'"):
        load_dataset("logiclm/typed", data, language="cobol")
    # the program file is told by its name (<Name>_dev_<model>.json beside logiclm/<Name>/dev.json)
    loaded = load_problems(str(data / "logiclm/programs/CatPuzzles_dev_gpt-4.json"), data)
    assert [(p.dataset, p.program.language) for p in loaded.problems] == [("logiclm/catpuzzles", "logiclm-lp")] * 2


def test_a_users_jsonl_file_by_path_or_in_the_custom_folder(data: Path, tmp_path: Path) -> None:
    mine = load_dataset("custom/mine", data).problems
    assert [(p.id, p.options, p.answer) for p in mine] == [("m1", (), None), ("m2", ("A) Yes", "B) No"), "B")]
    elsewhere = write(tmp_path / "elsewhere" / "batch.jsonl", (data / "custom/mine.jsonl").read_text())
    assert resolve_name(str(elsewhere), data) == str(elsewhere)
    by_path = load_dataset(str(elsewhere), data).problems
    assert [p.id for p in by_path] == ["m1", "m2"] and {p.dataset for p in by_path} == {"custom/batch"}


@pytest.mark.parametrize(
    ("relpath", "edit", "where", "field"),
    [
        (
            "pararule_plus/Depth7/PARARULE_Plus_Depth7_shuffled_test.jsonl",
            lambda recs: recs[1]["questions"][0].update(label="yes"),
            ":2 (id 'C-D7-1')",
            "questions[0].label",
        ),
        ("symba/fair_trials/test_data.json", lambda recs: recs[1].update(id=None), ": record 2", "id"),
        (
            "symba/fair_trials/test_data.json",
            lambda recs: recs[0]["program"][0].update(statement=7),
            ": record 1 (id 'fair_trials_001-187689')",
            "program[0].statement",
        ),
        (
            "symba/fair_trials/test_data.json",
            lambda recs: recs[2].update(goal_solved="answer(X, 2)"),
            ": record 3 (id 'fair_trials_3')",
            "goal_solved",
        ),
        (
            "logiclm/CatPuzzles/dev.json",
            lambda recs: recs[1].update(options="A) True"),
            ": record 2 (id 'cats_1')",
            "options",
        ),
        ("custom/mine.jsonl", lambda recs: recs[1].pop("question"), ":2 (id 'm2')", "question"),
    ],
)
def test_a_wrong_record_gets_one_line_naming_file_record_and_field(data: Path, relpath, edit, where, field) -> None:
    path = data / relpath
    text = path.read_text(encoding="utf-8")
    jsonl = path.suffix == ".jsonl"
    records = [json.loads(line) for line in text.splitlines() if line.strip()] if jsonl else json.loads(text)
    edit(records)
    path.write_text("\n".join(json.dumps(r) for r in records) if jsonl else json.dumps(records), encoding="utf-8")
    name = next(n for n in NAMES if find_dataset(n, data).path == path)
    with pytest.raises(InputError) as info:
        load_dataset(name, data)
    message = str(info.value)
    assert message.startswith(f"{path}{where}: field {field!r}: ") and "\n" not in message
    assert info.value.field == field
    assert len(load_dataset(name, data, skip_bad=True).errors) == 1  # never a silent skip


def test_the_solve_command_reports_a_wrong_record_in_one_line(data: Path, tmp_path: Path, capsys) -> None:
    records = json.loads((data / "symba/fair_trials/test_data.json").read_text())
    records[0]["label"] = "yes"
    write(data / "symba/fair_trials/test_data.json", json.dumps(records))
    rc = main(
        [
            "solve",
            "--method",
            "direct",
            "--engine",
            "gold",
            "--dataset",
            "fair_trials",
            "--data-dir",
            str(data),
            "--out",
            str(tmp_path / "r.parquet"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert (
        f"symbolkg solve: bad input: {data / 'symba/fair_trials/test_data.json'}: record 1 "
        "(id 'fair_trials_001-187689'): field 'label': expected true or false, got string"
    ) in err.splitlines()


def test_the_logiclm_method_answers_a_new_logiclm_folder_from_its_recorded_programs(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "cats.parquet"
    assert (
        main(
            [
                "solve",
                "--method",
                "logiclm",
                "--engine",
                "recorded",
                "--recorded",
                str(data / "logiclm/programs/CatPuzzles_dev_gpt-4.json"),
                "--dataset",
                "catpuzzles",
                "--data-dir",
                str(data),
                "--out",
                str(out),
                "--no-progress",
                "--executor",
                "local",
                "--workers",
                "1",
            ]
        )
        == 0
    )
    rows = pq.read_table(out).to_pylist()
    assert [(r["problem_id"], r["language"], r["predicted"], r["correct"]) for r in rows] == [
        ("cats_0", "logiclm-lp", "A", True),
        ("cats_1", "logiclm-lp", "B", True),
    ]


@pytest.mark.skipif(not (DATA / "pararule_plus").is_dir(), reason="shared data not found")
def test_the_template_engine_answers_a_depth7_file_of_real_records(tmp_path: Path) -> None:
    """Real PARARULE-Plus contexts under a depth no shipped file has: the agent answers them as before."""
    source = DATA / "pararule_plus/PARARULE_Plus_Depth4_shuffled_test.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines()[:2]
    write(tmp_path / "d/pararule_plus/PARARULE_Plus_Depth7_mine.jsonl", "\n".join(lines))
    out = tmp_path / "agent.parquet"
    assert (
        main(
            [
                "solve",
                "--method",
                "prolog-agent",
                "--engine",
                "pararule-template",
                "--dataset",
                "pararule_plus/depth7",
                "--data-dir",
                str(tmp_path / "d"),
                "--limit",
                "6",
                "--out",
                str(out),
                "--no-progress",
                "--prolog-agent-max-attempts",
                "3",
                "--executor",
                "local",
                "--workers",
                "1",
            ]
        )
        == 0
    )
    rows = pq.read_table(out).to_pylist()
    assert (
        len(rows) == 6 and all(r["correct"] for r in rows) and {r["dataset"] for r in rows} == {"pararule_plus/depth7"}
    )
