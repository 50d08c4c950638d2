"""Tests of the dataset families on the shared data and of our own problem format (jobs/datasets/)."""

from __future__ import annotations

import collections
import json
import os
import pickle
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.core.tables import PROBLEM_SCHEMA
from symbolkg.jobs.datasets import files
from symbolkg.jobs.datasets.files import default_data_dir
from symbolkg.jobs.datasets.logiclm import load_logiclm_programs
from symbolkg.jobs.datasets.records import InputError
from symbolkg.jobs.datasets.registry import dataset_counts, dataset_names, load_dataset, load_problems
from symbolkg.jobs.datasets.user import load_generic
from symbolkg.solvers.outcomes import Program

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
GOOD = FIXTURES / "custom_problems.jsonl"
BAD = FIXTURES / "custom_bad.jsonl"

DATA = Path(os.environ.get("SYMBOLKG_DATA", "/work/shared/data"))
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data not found at {DATA}")

#: Problem counts from ../shared/data/README.md and multihop/README.md.
EXPECTED_COUNTS = {
    "logiclm/prontoqa": 500,
    "logiclm/proofwriter": 600,
    "logiclm/folio": 204,
    "logiclm/logicaldeduction": 300,
    "logiclm/ar-lsat": 231,
    "logicgraph/small": 300,
    "logicgraph/medium": 300,
    "pararule_plus/depth2": 2708,
    "pararule_plus/depth3": 2694,
    "pararule_plus/depth4": 2704,
    "symba/proofwriter_dep5": 300,
    "symba/birdselectricity": 300,
    "symba/pararules": 300,
    "symba/prontoqa": 100,
    "symba/clutrr": 100,
    "symba/gsm8k": 270,
    "symba/mawps": 300,
    "multihop/hotpotqa": 685,
    "multihop/2wikimultihopqa": 164,
    "multihop/musique": 292,
}


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def row(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "p1",
        "context": "c",
        "question": "q?",
        "options": ["A) True", "B) False"],
        "answer": "A",
    }
    base.update(overrides)
    return base


# ----------------------------------------------------------------------------- registry


@needs_data
def test_names_and_languages() -> None:
    assert dataset_names(DATA) == sorted(EXPECTED_COUNTS)
    # the language of each Logic-LM set is told by its recorded programs' sections
    for name, language in (
        ("prontoqa", "logiclm-lp"),
        ("proofwriter", "logiclm-lp"),
        ("folio", "logiclm-fol"),
        ("logicaldeduction", "logiclm-csp"),
        ("ar-lsat", "logiclm-smt"),
    ):
        assert load_dataset(f"logiclm/{name}", DATA, limit=1).problems[0].meta["language"] == language
    assert "language" not in load_dataset("symba/clutrr", DATA, limit=1).problems[0].meta


@needs_data
def test_unknown_dataset_lists_known_names_and_rules(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="logiclm/folio"):
        load_dataset("logiclm/foli", DATA)
    with pytest.raises(ValueError, match=r"known: none .*PARARULE_Plus_Depth<N>_\*\.jsonl"):
        load_dataset("logiclm/folio", tmp_path)  # an empty data folder holds no dataset
    assert dataset_counts(tmp_path) == {}


# ----------------------------------------------------------------------------- data dir


def test_data_dir_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, env, repo = tmp_path / "explicit", tmp_path / "env", tmp_path / "repo"
    default = tmp_path / "shared" / "data"
    for folder in (explicit, env, repo, default):
        folder.mkdir(parents=True)
    monkeypatch.setattr(files, "_repo_root", lambda: repo)

    monkeypatch.setenv("SYMBOLKG_DATA", str(env))
    assert default_data_dir(explicit) == explicit
    assert default_data_dir(None) == env
    monkeypatch.setenv("SYMBOLKG_DATA", "")  # empty counts as unset
    assert default_data_dir(None) == default
    monkeypatch.delenv("SYMBOLKG_DATA")
    assert default_data_dir() == default


def test_data_dir_missing_names_all_three(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "_repo_root", lambda: tmp_path / "repo")
    monkeypatch.setenv("SYMBOLKG_DATA", str(tmp_path / "nope-env"))
    with pytest.raises(FileNotFoundError) as info:
        default_data_dir(None)
    message = str(info.value)
    assert "nope-env" in message and "--data-dir" in message and str(tmp_path / "shared" / "data") in message
    with pytest.raises(FileNotFoundError, match="from --data-dir"):
        default_data_dir(tmp_path / "nope-explicit")


# ----------------------------------------------------------------------------- shared data


@needs_data
def test_counts_match_readme_and_are_fast() -> None:
    started = time.perf_counter()
    counts = dataset_counts(DATA)
    elapsed = time.perf_counter() - started
    assert counts == EXPECTED_COUNTS
    assert elapsed < 3.0, f"dataset_counts took {elapsed:.2f} s"  # idle: 0.14-0.16 s; the bound is 19x that


@needs_data
@pytest.mark.parametrize("name", sorted(EXPECTED_COUNTS))
def test_every_dataset_loads(name: str) -> None:
    result = load_dataset(name, DATA)
    assert result.errors == []
    assert len(result.problems) == EXPECTED_COUNTS[name]
    assert len({p.id for p in result.problems}) == len(result.problems)
    assert {p.dataset for p in result.problems} == {name}
    for problem in result.problems:
        assert problem.question and problem.answer is not None and problem.program is None
        if problem.options:
            assert problem.answer in [o[0] for o in problem.options]
        json.dumps(problem.meta)  # must be serialisable into PROBLEM_SCHEMA's meta column


def answer_counts(name: str) -> dict[str, int]:
    return dict(collections.Counter(p.answer for p in load_dataset(name, DATA).problems))


@needs_data
def test_logiclm_labels_match_readme() -> None:
    assert answer_counts("logiclm/prontoqa") == {"A": 258, "B": 242}
    assert answer_counts("logiclm/proofwriter") == {"A": 200, "B": 200, "C": 200}
    assert answer_counts("logiclm/folio") == {"A": 72, "B": 63, "C": 69}
    assert answer_counts("logiclm/logicaldeduction") == {"A": 64, "B": 60, "C": 62, "D": 31, "E": 45, "F": 21, "G": 17}
    assert answer_counts("logiclm/ar-lsat") == {"A": 49, "B": 48, "C": 47, "D": 42, "E": 45}
    first = load_dataset("logiclm/prontoqa", DATA, limit=1).problems[0]
    assert first.id == "ProntoQA_1" and first.options == ("A) True", "B) False")
    assert first.meta["explanation"][0] == "Max is a yumpus."


@needs_data
def test_pararule_labels_and_meta() -> None:
    for depth, true_count in ((2, 1354), (3, 1347), (4, 1352)):
        assert answer_counts(f"pararule_plus/depth{depth}") == {"A": true_count, "B": true_count}
    first = load_dataset("pararule_plus/depth2", DATA, limit=2).problems
    assert [p.id for p in first] == ["NegationRule-Animal-D2-11451", "NegationRule-Animal-D2-11452"]
    assert first[0].question == "The lion is heavy." and first[0].answer == "A" and first[1].answer == "B"
    assert first[0].meta == {"context_id": "NegationRule-Animal-D2-1145", "QDep": "2", "QCat": "0_not_notTrue"}
    # The files end without a newline: the last context's questions must still load.
    last_line = (DATA / "pararule_plus/PARARULE_Plus_Depth4_shuffled_test.jsonl").read_bytes().splitlines()[-1]
    last_ids = [q["id"] for q in json.loads(last_line)["questions"]]
    assert [p.id for p in load_dataset("pararule_plus/depth4", DATA).problems[-len(last_ids) :]] == last_ids


@needs_data
def test_symba_labels_and_meta() -> None:
    expected_true = {"proofwriter_dep5": 141, "birdselectricity": 150, "pararules": 161, "prontoqa": 37, "clutrr": 50}
    for folder, true_count in expected_true.items():
        counts = answer_counts(f"symba/{folder}")
        assert counts["A"] == true_count and counts["A"] + counts["B"] == EXPECTED_COUNTS[f"symba/{folder}"]
    gsm8k = load_dataset("symba/gsm8k", DATA).problems
    assert gsm8k[0].id == "gsm8k_0" and gsm8k[0].answer == "18" and gsm8k[0].options == ()
    assert gsm8k[0].question == "answer(X)" and gsm8k[0].meta["goal_solved"] == "answer(18)"
    assert all(p.answer.lstrip("-").isdigit() for p in gsm8k)
    clutrr = load_dataset("symba/clutrr", DATA).problems
    assert all(len(p.meta["world_rules"]) == 39 for p in clutrr)
    assert sum("_answer" in p.meta for p in clutrr) == 50
    assert all(p.answer == "B" for p in clutrr if "_answer" in p.meta)
    assert clutrr[0].question == "relation(melba, niece, jenny)" and clutrr[0].context.startswith("[Jenny]")


@needs_data
def test_logicgraph_mapping() -> None:
    for tier, proofs in (("small", 915), ("medium", 1791)):
        problems = load_dataset(f"logicgraph/{tier}", DATA).problems
        assert {p.answer for p in problems} == {"A"}
        assert sum(p.meta["num_solutions"] for p in problems) == proofs
        assert sum(len(p.meta["solutions"]["solutions"]) for p in problems) == proofs
    first = load_dataset("logicgraph/small", DATA, limit=1).problems[0]
    lines = first.context.split("\n")
    assert lines[0].startswith("Rule1: ") and lines[-1].startswith("Fact")
    assert first.meta["target"]["prover9"] == "G"
    assert first.question.endswith(first.meta["target"]["natural"])


@needs_data
def test_multihop_mapping() -> None:
    hotpot = load_dataset("multihop/hotpotqa", DATA).problems
    first = hotpot[0]
    assert first.id == "5a8c7595554299585d9e36b6" and first.answer == "Chief of Protocol" and first.options == ()
    assert first.context.startswith("Meet Corliss Archer: Meet Corliss Archer, a program")
    assert len(first.context.split("\n\n")) == len(first.meta["paragraph_titles"]) == 10
    assert len(first.meta["supporting_titles"]) == 2 and first.meta["source"].startswith("xindili-cmu/")
    assert sum("level" in p.meta for p in hotpot) == 185
    wiki = load_dataset("multihop/2wikimultihopqa", DATA).problems
    assert collections.Counter(len(p.meta["supporting_titles"]) for p in wiki) == {2: 121, 4: 43}
    assert all("evidences" in p.meta and "type" in p.meta for p in wiki)
    musique = load_dataset("multihop/musique", DATA).problems
    assert collections.Counter(len(p.meta["supporting_titles"]) for p in musique) == {2: 192, 3: 64, 4: 36}


@needs_data
def test_limit() -> None:
    assert len(load_dataset("pararule_plus/depth3", DATA, limit=5).problems) == 5
    assert load_dataset("logiclm/folio", DATA, limit=0).problems == []
    with pytest.raises(ValueError, match="limit"):
        load_dataset("logiclm/folio", DATA, limit=-1)


def copy_data(tmp_path: Path, *relpaths: str) -> Path:
    root = tmp_path / "data"
    for relpath in relpaths:
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(DATA / relpath, root / relpath)
    return root


@needs_data
def test_bad_dataset_record_names_file_record_and_field(tmp_path: Path) -> None:
    root = copy_data(tmp_path, "logiclm/FOLIO/dev.json")
    path = root / "logiclm/FOLIO/dev.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    records[16]["options"] = 3
    path.write_text(json.dumps(records), encoding="utf-8")

    with pytest.raises(InputError) as info:
        load_dataset("logiclm/folio", root)
    error = info.value
    assert (error.path, error.line, error.field) == (str(path), 17, "options")
    assert str(error) == f"{path}: record 17 (id 'FOLIO_dev_16'): field 'options': expected a list of strings, got int"

    result = load_dataset("logiclm/folio", root, skip_bad=True)
    assert len(result.problems) == 203 and [e.line for e in result.errors] == [17]


@needs_data
def test_invalid_json_document_is_fatal_even_with_skip_bad(tmp_path: Path) -> None:
    root = copy_data(tmp_path, "symba/prontoqa/test_data.json")
    path = root / "symba/prontoqa/test_data.json"
    path.write_text('[\n{"id": 0,\n "body_text": }\n]', encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_dataset("symba/prontoqa", root, skip_bad=True)
    assert info.value.line == 3 and "invalid JSON" in str(info.value) and str(info.value).startswith(f"{path}:3:")


@needs_data
def test_pararule_bad_question_and_no_trailing_newline(tmp_path: Path) -> None:
    root = tmp_path / "data"
    path = root / "pararule_plus/PARARULE_Plus_Depth2_shuffled_test.jsonl"
    path.parent.mkdir(parents=True)
    q = {"id": "C-11", "text": "X is big.", "label": "true", "meta": {"QDep": "2", "QCat": "c"}}
    bad = {**q, "id": "C-21", "label": "yes"}
    lines = [
        json.dumps({"id": "C-1", "context": "X is big.", "questions": [q]}),
        json.dumps({"id": "C-2", "context": "Y.", "questions": [bad]}),
        json.dumps({"id": "C-3", "context": "Z.", "questions": [{**q, "id": "C-31", "label": "false"}]}),
    ]
    path.write_text("\n".join(lines), encoding="utf-8")  # no trailing newline, like the source
    with pytest.raises(InputError, match=r":2 \(id 'C-2'\): field 'questions\[0\].label'"):
        load_dataset("pararule_plus/depth2", root)
    result = load_dataset("pararule_plus/depth2", root, skip_bad=True)
    assert [(p.id, p.answer) for p in result.problems] == [("C-11", "A"), ("C-31", "B")]
    assert dataset_counts(root) == {"pararule_plus/depth2": 3}


# ----------------------------------------------------------------------------- program files


@needs_data
@pytest.mark.parametrize(
    ("stem", "name", "language", "missing"),
    [
        ("ProntoQA", "logiclm/prontoqa", "logiclm-lp", None),
        ("ProofWriter", "logiclm/proofwriter", "logiclm-lp", None),
        ("FOLIO", "logiclm/folio", "logiclm-fol", None),
        ("LogicalDeduction", "logiclm/logicaldeduction", "logiclm-csp", "logical_deduction_264"),
        ("AR-LSAT", "logiclm/ar-lsat", "logiclm-smt", "ar_lsat_201306_2-G_4_19"),
    ],
)
def test_program_files_attach_programs_and_keep_missing(
    stem: str, name: str, language: str, missing: str | None
) -> None:
    path = DATA / "logiclm/programs" / f"{stem}_dev_gpt-4.json"
    result = load_logiclm_programs(path, data_dir=DATA)
    dev = load_dataset(name, DATA).problems
    assert [p.id for p in result.problems] == [p.id for p in dev]  # all of them, in the dataset's order
    assert {p.dataset for p in result.problems} == {name}
    without = [p.id for p in result.problems if p.program is None]
    assert without == ([missing] if missing else [])
    assert {p.program.language for p in result.problems if p.program is not None} == {language}
    if missing:
        assert any(missing in note for note in result.notes)
    raw = json.loads(path.read_text(encoding="utf-8"))
    by_id = {p.id: p for p in result.problems}
    assert by_id[raw[0]["id"]].program == Program(language, raw[0]["raw_logic_programs"][0])
    # load_problems recognises the file by its raw_logic_programs field.
    assert load_problems(str(path), DATA).problems == result.problems


@needs_data
def test_program_file_without_dev_json_notes_the_gap(tmp_path: Path) -> None:
    path = DATA / "logiclm/programs/LogicalDeduction_dev_gpt-4.json"
    result = load_logiclm_programs(path, data_dir=tmp_path)
    assert len(result.problems) == 299
    assert any("could not be added" in note for note in result.notes)


@needs_data
def test_program_file_keeps_dev_only_meta() -> None:
    result = load_logiclm_programs(DATA / "logiclm/programs/ProntoQA_dev_gpt-4.json", data_dir=DATA)
    assert result.problems[0].meta["explanation"][0] == "Max is a yumpus."


@needs_data
def test_program_file_dataset_contradicting_ids() -> None:
    path = DATA / "logiclm/programs/FOLIO_dev_gpt-4.json"
    with pytest.raises(InputError, match="contradicts the ids"):
        load_logiclm_programs(path, dataset="logiclm/prontoqa", data_dir=DATA)
    assert len(load_logiclm_programs(path, dataset="logiclm/folio", data_dir=DATA).problems) == 204
    with pytest.raises(ValueError, match="no Logic-LM program format"):
        load_logiclm_programs(path, dataset="symba/clutrr", data_dir=DATA)


def test_program_file_ids_without_prefix(tmp_path: Path) -> None:
    records = [{**row(id="mine_1"), "raw_logic_programs": ["Predicates:\nQuery:\n"]}]
    path = tmp_path / "programs.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(InputError, match="cannot tell the dataset"):
        load_logiclm_programs(path, data_dir=tmp_path)
    result = load_logiclm_programs(path, dataset="logiclm/prontoqa", data_dir=tmp_path)
    assert result.problems[0].program == Program("logiclm-lp", "Predicates:\nQuery:\n")
    mixed = records + [
        {**row(id="FOLIO_dev_0"), "raw_logic_programs": ["x"]},
        {**row(id="ProntoQA_1"), "raw_logic_programs": ["y"]},
    ]
    path.write_text(json.dumps(mixed), encoding="utf-8")
    with pytest.raises(InputError, match="several datasets"):
        load_logiclm_programs(path, data_dir=tmp_path)


def test_program_file_empty_program_is_no_program(tmp_path: Path) -> None:
    records = [
        {**row(id="ProntoQA_1"), "raw_logic_programs": []},
        {**row(id="ProntoQA_2"), "raw_logic_programs": ["  "]},
        {**row(id="ProntoQA_3"), "raw_logic_programs": "text"},
    ]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    result = load_logiclm_programs(path, data_dir=tmp_path, skip_bad=True)
    assert [(p.id, p.program) for p in result.problems] == [("ProntoQA_1", None), ("ProntoQA_2", None)]
    assert [(e.line, e.field) for e in result.errors] == [(3, "raw_logic_programs")]


# ----------------------------------------------------------------------------- generic format


def test_generic_fixture_loads_with_programs() -> None:
    result = load_generic(GOOD)
    assert result.errors == []
    by_id = {p.id: p for p in result.problems}
    assert list(by_id) == ["lp-cat", "fol-socrates", "prolog-grandparent", "smt-three", "no-program"]
    languages = {pid: p.program.language if p.program else None for pid, p in by_id.items()}
    assert languages == {
        "lp-cat": "logiclm-lp",
        "fol-socrates": "logiclm-fol",
        "prolog-grandparent": "prolog",
        "smt-three": "smtlib2",
        "no-program": None,
    }
    assert "% query: grandparent(tom, ann)" in by_id["prolog-grandparent"].program.text
    assert by_id["fol-socrates"].answer == "B" and by_id["fol-socrates"].options[2] == "C) Uncertain"
    assert by_id["lp-cat"].dataset == "custom" and by_id["no-program"].dataset == "custom/extra"
    assert by_id["no-program"].options == () and by_id["no-program"].answer == "5"
    assert load_generic(GOOD, dataset="mine").problems[0].dataset == "mine"


def test_generic_bad_line_names_file_line_and_field() -> None:
    with pytest.raises(InputError) as info:
        load_generic(BAD)
    error = info.value
    assert (Path(error.path), error.line, error.field) == (BAD, 2, "question")
    assert str(error) == f"{BAD}:2 (id 'bad-2'): field 'question': expected a string, got int"


def test_generic_skip_bad_collects_errors() -> None:
    result = load_generic(BAD, skip_bad=True)
    assert [p.id for p in result.problems] == ["ok-1", "ok-3"]
    assert [(e.line, e.field) for e in result.errors] == [(2, "question")]


def test_generic_invalid_json_line_is_a_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(row()) + "\n{not json\n\n" + json.dumps(row(id="p2")), encoding="utf-8")
    with pytest.raises(InputError, match=r"p\.jsonl:2: invalid JSON"):
        load_generic(path)
    result = load_generic(path, skip_bad=True)
    assert [p.id for p in result.problems] == ["p1", "p2"] and [e.line for e in result.errors] == [2]


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        (row(questoin="typo"), "questoin", "unknown field(s) 'questoin'"),
        (
            row(program={"language": "python", "text": "print(1)"}),
            "program.language",
            "unknown program language 'python'",
        ),
        (row(program_language="cobol", program_text="x"), "program_language", "known: logiclm-csp"),
        (row(program={"language": "prolog", "text": "a.", "query": "a"}), "program.query", "unknown field(s) 'query'"),
        (
            row(program={"language": "prolog", "text": "a."}, program_language="prolog", program_text="a."),
            "program",
            "not both",
        ),
        (row(program_language="prolog"), "program_text", "required when"),
        (row(program={"language": "prolog", "text": " "}), "program.text", "must not be empty"),
        (row(answer="C"), "answer", "expected one of the option letters A, B"),
        (row(options=["True", "False"]), "options[0]", "expected an option like 'A) text'"),
        (row(options=["A) x", "A) y"]), "options[1]", "appears twice"),
        (row(id=7), "id", "expected a string, got int"),
        (row(id=""), "id", "must not be empty"),
        (row(meta=[1]), "meta", "expected a JSON object, got list"),
        (row(meta="{oops"), "meta", "not a valid JSON string"),
        ({"id": "p1", "question": "q"}, "context", "required field is missing"),
    ],
)
def test_generic_validation(tmp_path: Path, record: dict[str, object], field: str, message: str) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [record])
    with pytest.raises(InputError) as info:
        load_generic(path)
    assert info.value.field == field and info.value.line == 1
    assert message in str(info.value)


def test_generic_non_object_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [[1, 2]])
    with pytest.raises(InputError, match="expected a JSON object, got list"):
        load_generic(path)


def test_generic_duplicate_id(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [row(), row(context="other"), row(id="p2")])
    with pytest.raises(InputError) as info:
        load_generic(path)
    assert (info.value.line, info.value.field) == (2, "id") and "first at line 1" in str(info.value)
    result = load_generic(path, skip_bad=True)
    assert [(p.id, p.context) for p in result.problems] == [("p1", "c"), ("p2", "c")]


def test_generic_parquet_round_trip(tmp_path: Path) -> None:
    problems = load_generic(GOOD).problems
    path = tmp_path / "problems.parquet"
    pq.write_table(pa.Table.from_pylist([p.to_row() for p in problems], schema=PROBLEM_SCHEMA), path)
    assert load_generic(path).problems == problems
    assert load_problems(str(path)).problems == problems
    assert [Problem.from_row(r) for r in pq.read_table(path).to_pylist()] == problems


def test_generic_jsonl_of_to_row_round_trip(tmp_path: Path) -> None:
    problems = load_generic(GOOD).problems
    path = write_jsonl(tmp_path / "rows.jsonl", [p.to_row() for p in problems])
    assert load_generic(path).problems == problems


def test_generic_parquet_errors(tmp_path: Path) -> None:
    path = tmp_path / "extra.parquet"
    pq.write_table(pa.table({"id": ["a"], "context": ["c"], "question": ["q"], "label": ["x"]}), path)
    with pytest.raises(InputError, match="unknown column\\(s\\) 'label'"):
        load_generic(path)
    path = tmp_path / "missing.parquet"
    pq.write_table(pa.table({"id": ["a"], "context": ["c"]}), path)
    with pytest.raises(InputError, match="field 'question': required column is missing"):
        load_generic(path)
    path = tmp_path / "types.parquet"
    pq.write_table(pa.table({"id": [1, 2], "context": ["c", "c"], "question": ["q", "q"]}), path)
    result = load_generic(path, skip_bad=True)
    assert [(e.unit, e.line, e.field) for e in result.errors] == [("row", 1, "id"), ("row", 2, "id")]
    assert str(result.errors[0]).startswith(f"{path}: row 1: field 'id'")
    path = tmp_path / "junk.parquet"
    path.write_bytes(b"not parquet")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        load_generic(path)


def test_load_problems_dispatch(tmp_path: Path) -> None:
    assert len(load_problems(str(GOOD)).problems) == 5
    array = tmp_path / "problems.json"
    array.write_text(json.dumps([row(), row(id="p2")]), encoding="utf-8")
    assert [p.id for p in load_problems(str(array), limit=1).problems] == ["p1"]
    with pytest.raises(ValueError, match="neither a dataset"):
        load_problems("logiclm/nope")
    with pytest.raises(FileNotFoundError):
        load_problems(str(tmp_path / "absent.jsonl"))
    jsonl_named_json = tmp_path / "lines.json"
    jsonl_named_json.write_text(json.dumps(row()) + "\n" + json.dumps(row(id="p2")) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="name it .jsonl"):
        load_problems(str(jsonl_named_json))


@needs_data
def test_load_problems_by_name() -> None:
    assert len(load_problems("symba/mawps", DATA, limit=3).problems) == 3


def test_input_error_pickles() -> None:
    error = InputError("f.json", 3, "options", "bad", unit="record", record_id="x")
    clone = pickle.loads(pickle.dumps(error))
    assert str(clone) == str(error) == "f.json: record 3 (id 'x'): field 'options': bad"
    assert str(InputError("f.jsonl", None, None, "empty")) == "f.jsonl: empty"
