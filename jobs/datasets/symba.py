"""SymBa's format: ``symba/<folder>`` for every folder holding SymBa's ``test_data.json``.

Rule: every folder ``<folder>`` under the data folder's ``symba/`` that holds a ``test_data.json``
(a JSON array of records, as in SymBa's repository ``data/<folder>/``) is the dataset
``symba/<folder>``; a ``world_data.json`` beside it, when present, holds its named rule sets.

A record, as SymBa's own code reads it:

* ``id``: any JSON scalar (``0``, ``"001-187689"``), kept as given: the problem id is
  ``<folder>_<id>`` with a string id as it is and any other scalar as its JSON text;
* ``body_text`` (string): the context; ``goal`` (string): the question, a logic-program query;
* ``label`` (boolean): whether the goal is provable;
* ``world_model`` (list of rule-set names, optional): rule sets of ``world_data.json``
  (``[{name, statements: [{statement, description?}]}]``), any names; their statements go to
  ``meta["world_rules"]``;
* ``program`` (list of ``{statement, description?}``, optional): the reference statements;
  ``description`` may be missing (read as ``""``);
* ``goal_solved`` (string, optional): the goal with its answer filled in (``answer(18)``);
  ``_answer`` (string, optional): the right relation of a false ``clutrr`` record.

The answer is decided by the record's goal form, not by the folder's name: a goal with a variable
(``answer(X)``) whose record is labelled true and has ``goal_solved`` asks for a value: no options,
the answer is the variable's value in ``goal_solved`` (``"18"``; numbers are compared as numbers,
:func:`symbolkg.jobs.core.answers.is_correct`). Any other record asks whether the goal is
provable: options ``A) True`` / ``B) False``, answer ``A`` iff ``label`` (SymBa's own scoring).
Meta: ``source_id`` (the id as a string), ``goal, label, world_model, program`` and, when present,
``world_rules``, ``goal_solved``, ``_answer``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.family import Dataset, Family
from symbolkg.jobs.datasets.files import JsonArray, array_records, count_json_array, read_json_array
from symbolkg.jobs.datasets.records import TRUE_FALSE_OPTIONS, Obj, Where, type_name
from symbolkg.jobs.datasets.stream import Sink

_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_VARIABLE = re.compile(r"(?<![\w$])[A-Z_][A-Za-z0-9_]*")


def _find(root: Path) -> list[Dataset]:
    folder = root / "symba"
    if not folder.is_dir():
        return []
    return [
        Dataset(f"symba/{p.name}", p / "test_data.json", FAMILY)
        for p in sorted(folder.iterdir())
        if (p / "test_data.json").is_file()
    ]


def _world_rules(path: Path) -> dict[str, list[str]]:
    """Rule-set name -> rule statements from a SymBa ``world_data.json`` (fatal if malformed)."""
    rules: dict[str, list[str]] = {}
    for where, record in array_records(path, read_json_array(path)):
        obj = Obj(record, where)
        rules[obj.str_("name", nonempty=True)] = [s.str_("statement") for s in obj.items("statements")]
    return rules


def _scalar_id(obj: Obj) -> str:
    """The record's id as a string: a string as it is, another JSON scalar as its JSON text."""
    if "id" not in obj.data:
        raise obj.error("id", "required field is missing")
    value = obj.data["id"]
    if value is None or isinstance(value, (dict, list)):
        raise obj.error("id", f"expected a string, number or boolean, got {type_name(value)}")
    text = value if isinstance(value, str) else json.dumps(value)
    if not text.strip():
        raise obj.error("id", "must not be empty")
    return text


def _split_args(term: str) -> tuple[str, list[str]] | None:
    """``f(a, g(b), "x, y")`` -> ``("f", ["a", "g(b)", '"x, y"'])``; None when ``term`` is not ``name(args)``."""
    match = re.fullmatch(r"\s*([a-z][\w]*)\s*\((.*)\)\s*\.?\s*", term, re.DOTALL)
    if match is None:
        return None
    args, depth, quote, current = [], 0, "", ""
    for ch in match.group(2):
        if quote:
            quote = "" if ch == quote and not current.endswith("\\") else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(current.strip())
            current = ""
            continue
        current += ch
    args.append(current.strip())
    return match.group(1), args


def _solved_value(obj: Obj, goal: str, goal_solved: str) -> str:
    """The value ``goal_solved`` gives the goal's one variable (a whole argument of the goal)."""
    goal_parts, solved_parts = _split_args(goal), _split_args(goal_solved)
    variables = [i for i, a in enumerate(goal_parts[1]) if _VARIABLE.fullmatch(a)] if goal_parts else []
    if (
        goal_parts is None
        or solved_parts is None
        or goal_parts[0] != solved_parts[0]
        or len(goal_parts[1]) != len(solved_parts[1])
        or len(variables) != 1
    ):
        raise obj.error(
            "goal_solved", f"expected the goal {goal!r} with its one variable filled in, got {goal_solved!r}"
        )
    value = solved_parts[1][variables[0]]
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" else value


def _convert(
    record: Any, where: Where, dataset: Dataset, world: dict[str, list[str]], world_path: Path
) -> list[Problem]:
    obj = Obj(record, where)
    source_id = _scalar_id(obj)
    problem_id = f"{dataset.path.parent.name}_{source_id}"
    obj.where = obj.where.with_id(problem_id)
    goal = obj.str_("goal", nonempty=True)
    label = obj.bool_("label")
    world_model = obj.str_list("world_model") if "world_model" in obj.data else []
    program = [
        {"statement": s.str_("statement"), "description": s.opt_str("description") or ""}
        for s in (obj.items("program") if "program" in obj.data else [])
    ]
    meta: dict[str, Any] = {
        "source_id": source_id,
        "goal": goal,
        "label": label,
        "world_model": world_model,
        "program": program,
    }
    if world_model:
        missing = [w for w in world_model if w not in world]
        if missing:
            raise obj.error("world_model", f"rule set(s) {missing} not found in {world_path}")
        meta["world_rules"] = [rule for w in world_model for rule in world[w]]
    if "_answer" in obj.data:
        meta["_answer"] = obj.str_("_answer")
    options, answer = TRUE_FALSE_OPTIONS, "A" if label else "B"
    if "goal_solved" in obj.data:
        meta["goal_solved"] = goal_solved = obj.str_("goal_solved")
        if label and _VARIABLE.search(_QUOTED.sub("", goal)):  # a question for a value
            options, answer = (), _solved_value(obj, goal, goal_solved)
    return [
        Problem(
            id=problem_id,
            dataset=dataset.name,
            context=obj.str_("body_text"),
            question=goal,
            options=options,
            answer=answer,
            meta=meta,
        )
    ]


def _read(dataset: Dataset, sink: Sink) -> Iterator[Problem]:
    world_path = dataset.path.parent / "world_data.json"
    world = _world_rules(world_path) if world_path.is_file() else {}
    # The problem id is the folder's name and the record's id as text: converted to be read.
    return sink.take_all(
        JsonArray(dataset.path, read_json_array(dataset.path)),
        lambda record, where: _convert(record, where, dataset, world, world_path),
        ids=None,
    )


FAMILY = Family(
    "symba",
    "symba/<folder> for every folder symba/<folder>/ holding SymBa's test_data.json (world_data.json beside it "
    "when its records name rule sets)",
    _find,
    _read,
    count_json_array,
)
