"""PARARULE-Plus: ``pararule_plus/depth<N>`` for every ``PARARULE_Plus_Depth<N>_*.jsonl``.

Rule: every file named ``PARARULE_Plus_Depth<N>_<rest>.jsonl`` anywhere under the data folder's
``pararule_plus/`` (the source repository keeps them in ``Depth<N>/`` folders) is the dataset
``pararule_plus/depth<N>``; when several files have the same depth (a train and a test split),
each is ``pararule_plus/depth<N>_<rest>`` (``<rest>`` in lower case, e.g. ``depth5_shuffled_train``).

One line per context ``{id, context, questions: [{id, text, label: "true"|"false", meta: {QDep,
QCat}}]}``; one problem per question: the statement is the question, options ``A) True`` /
``B) False``, answer ``A`` iff ``label == "true"``; meta ``context_id``, ``QDep``, ``QCat``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.family import Dataset, Family
from symbolkg.jobs.datasets.files import JsonLines, jsonl_records
from symbolkg.jobs.datasets.records import TRUE_FALSE_OPTIONS, Obj, Where, read_id
from symbolkg.jobs.datasets.stream import Sink

_FILE_RE = re.compile(r"^PARARULE_Plus_Depth(?P<depth>\d+)_(?P<rest>.+)\.jsonl$")


def _find(root: Path) -> list[Dataset]:
    folder = root / "pararule_plus"
    if not folder.is_dir():
        return []
    by_depth: dict[int, list[tuple[str, Path]]] = {}
    for path in sorted(folder.rglob("PARARULE_Plus_Depth*_*.jsonl")):
        match = _FILE_RE.match(path.name)
        if match and path.is_file():
            by_depth.setdefault(int(match.group("depth")), []).append((match.group("rest").lower(), path))
    found = []
    for depth, files in sorted(by_depth.items()):
        for rest, path in files:
            name = f"pararule_plus/depth{depth}" if len(files) == 1 else f"pararule_plus/depth{depth}_{rest}"
            found.append(Dataset(name, path, FAMILY))
    return found


def _convert(record: Any, where: Where, name: str) -> list[Problem]:
    obj = Obj(record, where)
    context_id = read_id(obj)
    context = obj.str_("context")
    problems = []
    for q in obj.items("questions"):
        label = q.str_("label")
        if label not in ("true", "false"):
            raise q.error("label", f"expected 'true' or 'false', got {label!r}")
        qmeta = q.sub("meta")
        problems.append(
            Problem(
                id=q.str_("id", nonempty=True),
                dataset=name,
                context=context,
                question=q.str_("text", nonempty=True),
                options=TRUE_FALSE_OPTIONS,
                answer="A" if label == "true" else "B",
                meta={"context_id": context_id, "QDep": qmeta.str_("QDep"), "QCat": qmeta.str_("QCat")},
            )
        )
    return problems


def _question_ids(record: Any) -> list[str] | None:
    """A line's problem ids (its questions'), when each is a non-blank string; else None (the line is converted)."""
    questions = record.get("questions") if isinstance(record, dict) else None
    if not isinstance(questions, list):
        return None
    ids = [q.get("id") if isinstance(q, dict) else None for q in questions]
    return ids if all(isinstance(i, str) and i.strip() for i in ids) else None  # type: ignore[return-value]


def _read(dataset: Dataset, sink: Sink) -> Iterator[Problem]:
    return sink.take_all(
        JsonLines(dataset.path), lambda record, where: _convert(record, where, dataset.name), ids=_question_ids
    )


def _count(path: Path) -> int:
    count = 0
    for _, record in jsonl_records(path):
        if isinstance(record, dict) and isinstance(record.get("questions"), list):
            count += len(record["questions"])
    return count


FAMILY = Family(
    "pararule_plus",
    "pararule_plus/depth<N> for every PARARULE_Plus_Depth<N>_*.jsonl under pararule_plus/ "
    "(depth<N>_<rest> when several files share a depth)",
    _find,
    _read,
    _count,
)
