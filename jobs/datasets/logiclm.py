"""Logic-LM's layout: ``logiclm/<Name>/dev.json``, recorded programs ``logiclm/programs/<Name>_dev_gpt-4.json``.

Rule: every folder ``<Name>`` under the data folder's ``logiclm/`` that holds a ``dev.json`` is the
dataset ``logiclm/<name>`` (the folder name in lower case: ``FOLIO`` -> ``logiclm/folio``); its
recorded programs, when present, are ``logiclm/programs/<Name>_dev_gpt-4.json`` (Logic-LM's own
naming). A record is ``{id, context, question, options, answer}`` (``explanation``, a list of
strings, goes to ``meta``), options ``"A) ..."`` with distinct letters and the answer one of them.

The program language (what the ``logiclm`` method prompts for, and what a recorded program is
run as) is, in this order: the one the user gives (``--language``); a record's own ``language``
field (any registered language, :data:`symbolkg.solvers.registry.LANGUAGES`); the shape of the
recorded programs (:func:`program_language`: ``# Declarations`` -> ``logiclm-smt``, ``Domain:`` /
``Variables:`` -> ``logiclm-csp``, ``Premises:`` / ``Conclusion:`` -> ``logiclm-fol``, ``Facts:``
/ ``Rules:`` / ``Query:`` -> ``logiclm-lp``). A known language goes to ``meta["language"]``.

Logic-LM program files (``raw_logic_programs`` beside each record) load with
:func:`load_logiclm_programs`.
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from symbolkg.jobs.core.ids import Shard
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.family import Dataset, Family
from symbolkg.jobs.datasets.files import JsonArray, count_json_array, default_data_dir, read_json_array
from symbolkg.jobs.datasets.records import InputError, LoadResult, Obj, Where, read_id
from symbolkg.jobs.datasets.stream import ProblemStream, ReadOptions, Sink
from symbolkg.solvers.outcomes import Program
from symbolkg.solvers.registry import LANGUAGES

#: Logic-LM's id prefixes (how a program file of its five sets tells which set it belongs to).
_ID_PREFIXES: tuple[tuple[str, str], ...] = (
    ("ProntoQA_", "logiclm/prontoqa"),
    ("ProofWriter_", "logiclm/proofwriter"),
    ("FOLIO_", "logiclm/folio"),
    ("logical_deduction_", "logiclm/logicaldeduction"),
    ("ar_lsat_", "logiclm/ar-lsat"),
)

#: A program file named by Logic-LM's rule: ``<Name>_dev_<model>.json``.
_PROGRAM_FILE_RE = re.compile(r"^(?P<folder>.+?)_dev_.+\.json$")

#: Section headers -> the language whose programs have them (first match wins).
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\s*#\s*Declarations\b", re.MULTILINE | re.IGNORECASE), "logiclm-smt"),
    (re.compile(r"^\s*(?:Domain|Variables)\s*:", re.MULTILINE), "logiclm-csp"),
    (re.compile(r"^\s*(?:Premises|Conclusion)\s*:", re.MULTILINE), "logiclm-fol"),
    (re.compile(r"^\s*(?:Facts|Rules|Query)\s*:", re.MULTILINE), "logiclm-lp"),
)


def program_language(texts: Iterable[str]) -> str | None:
    """The Logic-LM language most of ``texts`` are written in, by their section headers; None if none tells.

    >>> program_language(["Predicates:\\nFacts:\\nQuery:\\n", "Premises:\\nConclusion:\\n", "Facts:\\n"])
    'logiclm-lp'
    """
    votes: collections.Counter[str] = collections.Counter()
    for text in texts:
        language = next((lang for pattern, lang in _SHAPES if pattern.search(text)), None)
        if language is not None:
            votes[language] += 1
    return votes.most_common(1)[0][0] if votes else None


def _recorded_texts(data: list[Any]) -> list[str]:
    return [
        r["raw_logic_programs"][0]
        for r in data
        if isinstance(r, dict)
        and isinstance(r.get("raw_logic_programs"), list)
        and r["raw_logic_programs"]
        and isinstance(r["raw_logic_programs"][0], str)
    ]


#: Logic-LM dataset name -> the program language Logic-LM writes for it: a problem's language when
#: neither the user, its record nor the recorded programs say (:func:`language_of`).
SET_LANGUAGE: dict[str, str] = {
    "logiclm/prontoqa": "logiclm-lp",
    "logiclm/proofwriter": "logiclm-lp",
    "logiclm/folio": "logiclm-fol",
    "logiclm/logicaldeduction": "logiclm-csp",
    "logiclm/ar-lsat": "logiclm-smt",
}


def language_of(problem: Problem) -> str | None:
    """The program language of a problem: its own (``meta["language"]``: the user's ``--language``, its
    record's, or the recorded programs'), else its Logic-LM set's (:data:`SET_LANGUAGE`), else None."""
    language = problem.meta.get("language")
    if isinstance(language, str) and language in LANGUAGES:
        return language
    return SET_LANGUAGE.get(problem.dataset)


def _record_language(obj: Obj) -> str | None:
    if not obj.has("language"):
        return None
    language = obj.str_("language")
    if language not in LANGUAGES:
        raise obj.error("language", f"unknown program language {language!r}; known: {', '.join(sorted(LANGUAGES))}")
    return language


def _problem(record: Any, where: Where, dataset: str, given: str | None, told: str | None) -> tuple[Problem, Obj]:
    """One record; its language is ``given`` (the user's), else the record's own, else ``told`` (by the programs)."""
    obj = Obj(record, where)
    problem_id = read_id(obj)
    options = obj.options("options")
    if not options:
        raise obj.error("options", "expected at least one option")
    meta: dict[str, Any] = {}
    if "explanation" in obj.data:
        meta["explanation"] = obj.str_list("explanation")
    language = given or _record_language(obj) or told
    if language is not None:
        meta["language"] = language
    problem = Problem(
        id=problem_id,
        dataset=dataset,
        context=obj.str_("context"),
        question=obj.str_("question", nonempty=True),
        options=options,
        answer=obj.answer("answer", options, required=True),
        meta=meta,
    )
    return problem, obj


def _find(root: Path) -> list[Dataset]:
    folder = root / "logiclm"
    if not folder.is_dir():
        return []
    found = []
    for sub in sorted(p for p in folder.iterdir() if (p / "dev.json").is_file()):
        programs = folder / "programs" / f"{sub.name}_dev_gpt-4.json"
        found.append(
            Dataset(f"logiclm/{sub.name.lower()}", sub / "dev.json", FAMILY, programs if programs.is_file() else None)
        )
    return found


def _read(dataset: Dataset, sink: Sink) -> Iterator[Problem]:
    told = None
    if dataset.language is None and dataset.programs is not None:
        told = program_language(_recorded_texts(read_json_array(dataset.programs)))
    return sink.take_all(
        JsonArray(dataset.path, read_json_array(dataset.path)),
        lambda record, where: [_problem(record, where, dataset.name, dataset.language, told)[0]],
    )


FAMILY = Family(
    "logiclm",
    "logiclm/<name> for every folder logiclm/<Name>/ holding a dev.json (Logic-LM's layout); recorded programs "
    "in logiclm/programs/<Name>_dev_gpt-4.json",
    _find,
    _read,
    count_json_array,
)


# --------------------------------------------------------------------------------------
# Logic-LM program files
# --------------------------------------------------------------------------------------


def _infer_dataset(path: Path, data: list[Any], dataset: str | None, root: Path | None) -> str:
    """The ``logiclm/*`` dataset a program file belongs to: given, else by its ids, else by its file name."""
    found: dict[str, str] = {}
    for record in data:
        rid = record.get("id") if isinstance(record, dict) else None
        if isinstance(rid, str):
            name = next((n for prefix, n in _ID_PREFIXES if rid.startswith(prefix)), None)
            if name is not None:
                found.setdefault(name, rid)
    if len(found) > 1:
        examples = ", ".join(f"{rid!r} ({name})" for name, rid in sorted(found.items()))
        raise InputError(path, None, "id", f"ids of several datasets in one program file: {examples}")
    if dataset is not None:
        if not dataset.startswith("logiclm/") or dataset == "logiclm/":
            raise ValueError(f"dataset {dataset!r} has no Logic-LM program format; expected logiclm/<name>")
        if found and dataset not in found:
            ((inferred, example),) = found.items()
            raise InputError(
                path, None, "id", f"--dataset {dataset} contradicts the ids, which are {inferred}'s (e.g. {example!r})"
            )
        return dataset
    if found:
        return next(iter(found))
    named = _PROGRAM_FILE_RE.match(path.name)
    if named and root is not None and (root / "logiclm" / named.group("folder") / "dev.json").is_file():
        return f"logiclm/{named.group('folder').lower()}"
    prefixes = ", ".join(p for p, _ in _ID_PREFIXES)
    raise InputError(
        path,
        None,
        "id",
        "cannot tell the dataset from the ids (known prefixes: "
        f"{prefixes}) or the file name (<Name>_dev_<model>.json beside logiclm/<Name>/dev.json); "
        "pass the dataset",
    )


def _data_root(data_dir: str | os.PathLike[str] | None) -> Path | None:
    if data_dir is not None:
        return default_data_dir(data_dir)
    try:
        return default_data_dir(None)
    except FileNotFoundError:
        return None


def open_program_data(
    path: Path,
    data: list[Any],
    *,
    dataset: str | None,
    data_dir: str | os.PathLike[str] | None,
    options: ReadOptions = ReadOptions(),
    language: str | None = None,
) -> ProblemStream:
    """:func:`load_logiclm_programs` on a file already parsed (``data``), as a stream.

    The program file is converted whole now (a join by id: its records are in memory already,
    and its bad records come first, as they always have); the dataset's problems are then read
    in its order as the stream is, each with its recorded program.
    """
    root = _data_root(data_dir)
    name = _infer_dataset(path, data, dataset, root)
    texts = _recorded_texts(data)
    told = program_language(texts) if language is None else None
    if language is None and told is None and any(t.strip() for t in texts):
        raise InputError(
            path,
            None,
            "raw_logic_programs",
            "cannot tell the programs' language from their sections; pass the language (--language)",
        )

    def convert(record: Any, where: Where) -> list[Problem]:
        problem, obj = _problem(record, where, name, language, told)
        programs = obj.str_list("raw_logic_programs")
        if len(programs) > 1:
            raise obj.error("raw_logic_programs", f"expected one program, got {len(programs)}")
        # An empty list or blank string is "no program": Logic-LM counts such problems as
        # unexecuted, and so do we (program=None), rather than running an empty program.
        text = programs[0] if programs and programs[0].strip() else None
        return [
            problem.with_program(Program(language=problem.meta["language"], text=text) if text is not None else None)
        ]

    recorded_sink = Sink(ReadOptions(skip_bad=options.skip_bad))
    recorded = {p.id: p for p in recorded_sink.take_all(JsonArray(path, data), convert)}
    # Under a limit every problem up to it is counted, whatever its shard, and its program is not
    # extra: the sink takes them all and the merge keeps the shard's.
    sink = Sink(options if options.limit is None else replace(options, shard=None))
    dev = next((d for d in _find(root) if d.name == name), None) if root is not None else None
    if dev is None:
        sink.notes.append(
            f"{name}: dataset file not found ({root / 'logiclm' if root is not None else 'no data folder'} has no "
            f"folder for it), so problems that have no record in {path} could not be added; any such problems are "
            "missing from this run"
        )
        return ProblemStream(_of_shard(sink.offer(recorded.values()), options.shard), [recorded_sink, sink])
    merged = _of_shard(
        _merged(path, name, recorded, replace(dev, language=language or told), sink, options.shard), options.shard
    )
    return ProblemStream(merged, [recorded_sink, sink])


def _of_shard(problems: Iterable[Problem], shard: Shard | None) -> Iterator[Problem]:
    """The problems of ``shard`` (all when None)."""
    return iter(problems) if shard is None else (p for p in problems if shard.takes(p.id))


def _merged(
    path: Path, name: str, recorded: dict[str, Problem], dev: Dataset, sink: Sink, shard: Shard | None
) -> Iterator[Problem]:
    """The dev set's problems in its order, each with its recorded program (or none); extra records last.

    The notes (problems without a program, records not in the dev set) count what the stream
    carried (of ``shard``), and come at its end.
    """
    missing: list[str] = []
    for problem in dev.problems(sink):
        mine = recorded.pop(problem.id, None)
        if mine is None:
            if shard is None or shard.takes(problem.id):
                missing.append(problem.id)
            yield problem
        else:
            # Program files drop dev.json-only fields (ProntoQA's explanation); keep them.
            yield replace(mine, meta={**problem.meta, **mine.meta})
    # A sink with a shard passed over another shard's dev problems, so their programs are left here: not extra.
    sharded = sink.options.shard
    extra = [p for p in recorded.values() if sharded is None or sharded.takes(p.id)]
    yield from sink.offer(extra)
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        sink.notes.append(
            f"{name}: {len(missing)} problem(s) have no program in {path} and are kept with program=None "
            f"(counted as unexecuted): {shown}"
        )
    extra_here = sum(1 for p in extra if shard is None or shard.takes(p.id))
    if extra_here:
        sink.notes.append(f"{name}: {extra_here} problem(s) of {path} are not in {dev.path}; kept at the end")


def load_logiclm_programs(
    path: str | os.PathLike[str],
    *,
    dataset: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    skip_bad: bool = False,
    language: str | None = None,
) -> LoadResult:
    """Load a Logic-LM program file as it is, one problem per record with its program.

    The file is a JSON array of ``{id, context, question, answer, options,
    raw_logic_programs}`` (Logic-LM's ``outputs/logic_programs/*.json``). Each problem gets
    ``program=Program(language, raw_logic_programs[0])``; an empty list or a blank program means
    no program (``program=None``). The language is ``language`` if given, else the programs'
    own (:func:`program_language`).

    Problems of the dataset that have **no record** in the file (Logic-LM's GPT-4 files lack
    ``logical_deduction_264`` and ``ar_lsat_201306_2-G_4_19``) are still returned, with
    ``program=None`` and in the dataset's order, when the data folder has the dataset's
    ``dev.json`` -- so that a run counts them as unexecuted instead of silently scoring
    only the problems that happen to have a program. :attr:`LoadResult.notes` says how
    many were added, or that ``dev.json`` was not found and none could be.

    Args:
        path: the program file.
        dataset: a ``logiclm/<name>`` name; when None, inferred from the id prefixes of Logic-LM's
            five sets (``ProntoQA_``, ``ProofWriter_``, ``FOLIO_``, ``logical_deduction_``,
            ``ar_lsat_``), else from the file name ``<Name>_dev_<model>.json`` when the data folder
            has ``logiclm/<Name>/dev.json``.
        data_dir: the data folder holding the dataset's ``dev.json``; when None the default
            (:func:`~symbolkg.jobs.datasets.files.default_data_dir`) is used if it exists.
        skip_bad: collect bad records in ``errors`` instead of raising.
        language: the programs' language (a registered one); None: told by the programs.

    Raises:
        InputError: unreadable file, a bad record (unless ``skip_bad``), ids of several
            datasets, no dataset to be told without ``dataset``, ``dataset`` contradicting the
            ids, or programs whose language cannot be told without ``language``.
        ValueError: ``dataset`` is not a ``logiclm/*`` name, or ``language`` is not registered.
        FileNotFoundError: the file, or an explicitly given ``data_dir``, does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"program file {str(path)!r} not found")
    if language is not None and language not in LANGUAGES:
        raise ValueError(f"unknown program language {language!r}; known: {', '.join(sorted(LANGUAGES))}")
    return open_program_data(
        path,
        read_json_array(path),
        dataset=dataset,
        data_dir=data_dir,
        options=ReadOptions(skip_bad=skip_bad),
        language=language,
    ).collect()
