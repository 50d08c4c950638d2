"""LogicGraph: ``logicgraph/<tier>`` for every ``logicgraph/<tier>.jsonl``.

Rule: every ``<tier>.jsonl`` in the data folder's ``logicgraph/`` whose name is lower-case letters,
digits, ``_``, ``.`` or ``-`` (e.g. one written by ``symbolkg logicgraph generate``).

One instance per line (the repackaged format of ``../shared/data/README.md``). Context = rules then
facts, one per line; the question asks whether the goal can be derived; options True/False,
answer ``A`` (every goal is derivable). Meta: ``knowledge_base, target, num_solutions, solutions,
family_stats, translations, verification`` as in the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.family import Dataset, Family
from symbolkg.jobs.datasets.files import JsonLines, count_jsonl_lines, default_data_dir
from symbolkg.jobs.datasets.records import TRUE_FALSE_OPTIONS, Obj, Where, read_id
from symbolkg.jobs.datasets.stream import Sink

_TIER_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def _find(root: Path) -> list[Dataset]:
    folder = root / "logicgraph"
    if not folder.is_dir():
        return []
    return [
        Dataset(f"logicgraph/{p.stem}", p, FAMILY)
        for p in sorted(folder.glob("*.jsonl"))
        if p.is_file() and _TIER_RE.match(p.stem)
    ]


def logicgraph_tiers(data_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """``logicgraph/<tier>`` for every ``<tier>.jsonl`` in the data folder's ``logicgraph/`` (sorted)."""
    return [d.name for d in _find(default_data_dir(data_dir))]


def _convert(record: Any, where: Where, name: str) -> list[Problem]:
    obj = Obj(record, where)
    problem_id = read_id(obj)
    question = obj.sub("question")
    context = question.sub("context")
    goal = question.str_("question", nonempty=True)
    solutions = obj.sub("solutions")
    proofs = solutions.list_("solutions")
    metadata = obj.sub("metadata")
    num_solutions = metadata.int_("num_solutions")
    if num_solutions != len(proofs):
        raise metadata.error("num_solutions", f"says {num_solutions} but solutions has {len(proofs)} proofs")
    knowledge_base = obj.sub("knowledge_base")
    knowledge_base.list_("rules")
    knowledge_base.list_("facts")
    meta = {
        "knowledge_base": knowledge_base.data,
        "target": obj.dict_("target"),
        "num_solutions": num_solutions,
        "solutions": solutions.data,
        "family_stats": metadata.data.get("family_stats"),
        "translations": obj.data.get("translations"),
        "verification": obj.data.get("verification"),
    }
    return [
        Problem(
            id=problem_id,
            dataset=name,
            context="\n".join(context.str_list("rules") + context.str_list("facts")),
            question=f"Based on the rules and facts above, can the following statement be derived? {goal}",
            options=TRUE_FALSE_OPTIONS,
            # Every LogicGraph goal is derivable: each instance ships >= 2 verified proofs.
            answer="A",
            meta=meta,
        )
    ]


def _read(dataset: Dataset, sink: Sink) -> Iterator[Problem]:
    return sink.take_all(JsonLines(dataset.path), lambda record, where: _convert(record, where, dataset.name))


FAMILY = Family("logicgraph", "logicgraph/<tier> for every logicgraph/<tier>.jsonl", _find, _read, count_jsonl_lines)
