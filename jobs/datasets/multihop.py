"""Multi-hop QA: ``multihop/<name>`` for every ``multihop/<name>/dev.jsonl``.

Rule: every folder under the data folder's ``multihop/`` holding a ``dev.jsonl`` (other files, such
as 2WikiMultihopQA's ``extra_hipporag_corpus_6119.jsonl``, passages without questions, are not
problems and are not loaded).

One question per line ``{id, question, answer, answer_aliases, paragraphs: [{title, text,
is_supporting}], ...}``. Context = paragraphs as ``"Title: text"`` separated by blank lines; no
options; answer text. Meta: ``answer_aliases, paragraph_titles, supporting_titles`` and the
source's extras (``source``, ``type``, ``level``, ``evidences``, ``question_decomposition``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.family import Dataset, Family
from symbolkg.jobs.datasets.files import JsonLines, count_jsonl_lines
from symbolkg.jobs.datasets.records import Obj, Where, read_id
from symbolkg.jobs.datasets.stream import Sink

_CORE = frozenset({"id", "question", "answer", "answer_aliases", "paragraphs"})


def _find(root: Path) -> list[Dataset]:
    folder = root / "multihop"
    if not folder.is_dir():
        return []
    return [
        Dataset(f"multihop/{p.name}", p / "dev.jsonl", FAMILY)
        for p in sorted(folder.iterdir())
        if (p / "dev.jsonl").is_file()
    ]


def _convert(record: Any, where: Where, name: str) -> list[Problem]:
    obj = Obj(record, where)
    problem_id = read_id(obj)
    titles: list[str] = []
    supporting: list[str] = []
    rendered: list[str] = []
    for paragraph in obj.items("paragraphs"):
        title, text = paragraph.str_("title"), paragraph.str_("text")
        titles.append(title)
        if paragraph.bool_("is_supporting"):
            supporting.append(title)
        rendered.append(f"{title}: {text}")
    meta: dict[str, Any] = {
        "answer_aliases": obj.str_list("answer_aliases"),
        # Titles in context order, so the context can be split back into paragraphs
        # even when a title contains ": ".
        "paragraph_titles": titles,
        "supporting_titles": supporting,
    }
    # Source-specific extras (source, type, level, evidences, question_decomposition).
    meta.update({k: v for k, v in obj.data.items() if k not in _CORE})
    return [
        Problem(
            id=problem_id,
            dataset=name,
            context="\n\n".join(rendered),
            question=obj.str_("question", nonempty=True),
            options=(),
            answer=obj.str_("answer"),
            meta=meta,
        )
    ]


def _read(dataset: Dataset, sink: Sink) -> Iterator[Problem]:
    return sink.take_all(JsonLines(dataset.path), lambda record, where: _convert(record, where, dataset.name))


FAMILY = Family("multihop", "multihop/<name> for every multihop/<name>/dev.jsonl", _find, _read, count_jsonl_lines)
