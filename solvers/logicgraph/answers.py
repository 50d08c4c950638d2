"""LogicGraph answer sets: a model's proofs per instance, read defensively from JSON lines.

An answers file is JSON Lines, one object per instance::

    {"id": "Small/test_1", "solutions": [<proof>, ...], "tokens": 1234}

where each proof is in the dataset's own format (``steps`` of ``{step_number, rule_applied,
premises_used: [{id, prover9}], conclusion}``), so the reference proofs are valid answers
(:func:`reference_answers`). Bad lines become errors of the set, never exceptions: the proofs are
untrusted (a model wrote them); :mod:`symbolkg.solvers.logicgraph.scoring` checks them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symbolkg.solvers.logicgraph.instances import Instance


@dataclass(frozen=True)
class Answer:
    """One instance's answer: the proofs as given (untrusted JSON) and, optionally, tokens spent.

    Attributes:
        id: the instance id (``"Small/test_1"``).
        solutions: the proofs, each one element of the answer's ``solutions`` list, unparsed.
        tokens: completion tokens the model spent on this instance, if known.
    """

    id: str
    solutions: tuple[Any, ...] = ()
    tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "solutions": list(self.solutions)}
        if self.tokens is not None:
            out["tokens"] = self.tokens
        return out


@dataclass(frozen=True)
class AnswerSet:
    """The answers of one model / file.

    Attributes:
        name: shown in reports (the file name, or ``"reference"``).
        answers: instance id -> answer (the first line of an id wins).
        errors: one message per line that could not be used as given (not JSON, no id, a
            duplicate id, ``solutions`` not a list, bad ``tokens``); counted, never raised.
    """

    name: str
    answers: Mapping[str, Answer]
    errors: tuple[str, ...] = ()


def _answer_from_object(obj: Any, where: str) -> tuple[Answer | None, list[str]]:
    if not isinstance(obj, Mapping):
        return None, [f"{where}: not a JSON object"]
    rid = obj.get("id")
    if not isinstance(rid, str) or not rid:
        return None, [f"{where}: no string 'id'"]
    errors: list[str] = []
    raw = obj.get("solutions")
    if isinstance(raw, list):
        solutions = tuple(raw)
    elif isinstance(raw, Mapping) and "steps" in raw:  # a single proof instead of a list of them
        solutions = (raw,)
    else:
        solutions = ()
        errors.append(
            f"{where}: {rid}: 'solutions' is {'missing' if raw is None else type(raw).__name__}, not a list (no paths)"
        )
    tokens = obj.get("tokens")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, (int, float)) or tokens < 0):
        errors.append(f"{where}: {rid}: 'tokens' is not a non-negative number (ignored)")
        tokens = None
    return Answer(rid, solutions, None if tokens is None else int(tokens)), errors


def parse_answers(lines: Iterable[str], *, name: str = "answers") -> AnswerSet:
    """Parse answer JSON lines defensively: bad lines become errors of the set, never exceptions.

    Args:
        lines: the file's lines.
        name: the set's name in reports.
    """
    errors: list[str] = []

    def objects() -> Iterator[tuple[str, Any]]:
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{name}:{lineno}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: not JSON ({exc.msg})")

    return answer_set(name, objects(), errors)


def answer_set(name: str, items: Iterable[tuple[str, Any]], errors: list[str]) -> AnswerSet:
    """Answers from ``(where, Answer or answer object)`` pairs; bad objects and repeated ids become
    errors (the first answer of an id is kept)."""
    answers: dict[str, Answer] = {}
    for where, item in items:
        answer, problems = (item, []) if isinstance(item, Answer) else _answer_from_object(item, where)
        errors.extend(problems)
        if answer is None:
            continue
        if answer.id in answers:
            errors.append(f"{where}: duplicate id {answer.id} (the first is kept)")
            continue
        answers[answer.id] = answer
    return AnswerSet(name, answers, tuple(errors))


def read_answers(path: str | Path) -> AnswerSet:
    """:func:`parse_answers` of a file, named by its path.

    Raises:
        FileNotFoundError: no such file.
    """
    with open(path, encoding="utf-8") as fh:
        return parse_answers(fh, name=str(path))


def reference_answers(instances: Iterable[Instance]) -> AnswerSet:
    """The dataset's reference proofs as an answer set (exactly as the file writes them)."""
    answers: dict[str, Answer] = {}
    for inst in instances:
        solutions = inst.record.get("solutions", {})
        raw = solutions.get("solutions", []) if isinstance(solutions, Mapping) else []
        if not raw:  # an instance built in code: print the parsed proofs
            raw = [p.to_json() for p in inst.proofs]
        answers[inst.id] = Answer(inst.id, tuple(raw))
    return AnswerSet("reference", answers)


def write_answers(answers: AnswerSet, path: str | Path) -> int:
    """Write an answer set as JSON lines; returns the number of lines."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(answer.to_json(), ensure_ascii=False) + "\n" for answer in answers.answers.values())
    return len(answers.answers)
