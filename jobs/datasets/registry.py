"""The registry of dataset families, and the functions that find and load datasets by name.

:data:`FAMILIES` is data: one :class:`~symbolkg.jobs.datasets.family.Family` per format. A data
folder's datasets are what the families find in it (:func:`find_datasets`), so a file or folder
that follows a family's rule is a dataset without a code change; ``symbolkg datasets --data-dir D``
lists them. A user's own file is loaded by its path.

Mapping into :class:`~symbolkg.jobs.core.rows.Problem`: ``dataset`` is always the dataset's
name; each family's module says how its records map (``logiclm``, ``pararule_plus``, ``symba``,
``logicgraph``, ``multihop``, ``user``).

Two ways to read: ``open_*`` return a :class:`~symbolkg.jobs.datasets.stream.ProblemStream` that
reads the input as the caller does (what a job uses: its first problem starts while the rest is
on disk, and memory does not grow with the file); ``load_*`` read it all into a
:class:`~symbolkg.jobs.datasets.records.LoadResult` (small sets, tests, tools that need a list).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from symbolkg.jobs.datasets import logicgraph, logiclm, multihop, pararule_plus, symba, user
from symbolkg.jobs.datasets.family import Dataset, Family
from symbolkg.jobs.datasets.files import JsonArray, default_data_dir, read_json_array
from symbolkg.jobs.datasets.records import LoadResult, check_limit
from symbolkg.jobs.datasets.stream import ProblemStream, ReadOptions
from symbolkg.solvers.registry import LANGUAGES

#: Every dataset family, in the order ``symbolkg datasets`` lists them.
FAMILIES: tuple[Family, ...] = (
    logiclm.FAMILY,
    logicgraph.FAMILY,
    pararule_plus.FAMILY,
    symba.FAMILY,
    multihop.FAMILY,
    user.FAMILY,
)

_USER_SUFFIXES = (".jsonl", ".json", ".parquet")


def find_datasets(data_dir: str | os.PathLike[str] | None = None) -> dict[str, Dataset]:
    """Every dataset the data folder holds, by name (sorted).

    Raises:
        FileNotFoundError: the data folder does not exist.
        ValueError: two files of one family give the same name (e.g. ``logiclm/FOLIO`` and
            ``logiclm/folio``); the message names both.
    """
    root = default_data_dir(data_dir)
    found: dict[str, Dataset] = {}
    for family in FAMILIES:
        for dataset in family.find(root):
            if dataset.name in found:
                raise ValueError(
                    f"two datasets are named {dataset.name!r}: {found[dataset.name].path} and "
                    f"{dataset.path}; rename one"
                )
            found[dataset.name] = dataset
    return dict(sorted(found.items()))


def dataset_names(data_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """The names of the datasets the data folder holds, sorted."""
    return list(find_datasets(data_dir))


def _unknown(name: str, found: dict[str, Dataset]) -> ValueError:
    rules = "; ".join(f.rule for f in FAMILIES)
    return ValueError(
        f"unknown dataset {name!r}; known: {', '.join(found) or 'none'} (a dataset is a file or folder "
        f"that follows a family's rule: {rules}; or a .jsonl/.json/.parquet file of our format)"
    )


def find_dataset(name: str, data_dir: str | os.PathLike[str] | None = None, *, language: str | None = None) -> Dataset:
    """The dataset ``name`` (a name the data folder holds, or the path of a file in our format).

    Args:
        name: a dataset name, or a path ending in ``.jsonl`` / ``.json`` / ``.parquet``.
        data_dir: the data folder; see :func:`~symbolkg.jobs.datasets.files.default_data_dir`.
        language: the program language of a Logic-LM-layout dataset (overrides its records).

    Raises:
        ValueError: unknown name (the message lists the known ones and every family's rule), or
            an unknown ``language``.
        FileNotFoundError: missing data folder, or a path that is not a file.
    """
    if language is not None and language not in LANGUAGES:
        raise ValueError(f"unknown program language {language!r}; known: {', '.join(sorted(LANGUAGES))}")
    if name.lower().endswith(_USER_SUFFIXES) and name not in _names_if_any(data_dir):
        path = Path(name)
        if not path.is_file():
            raise FileNotFoundError(f"problem file {name!r} not found")
        return user.user_dataset(path)
    found = find_datasets(data_dir)
    dataset = found.get(name)
    if dataset is None:
        raise _unknown(name, found)
    return replace(dataset, language=language) if language is not None else dataset


def _names_if_any(data_dir: str | os.PathLike[str] | None) -> dict[str, Dataset]:
    try:
        return find_datasets(data_dir)
    except FileNotFoundError:
        return {}


def resolve_name(name: str, data_dir: str | os.PathLike[str] | None = None) -> str:
    """What a user typed -> a dataset name: exact, else ``logiclm/<name>``, else a unique ``*/<name>``.

    A path of a file in our format (``.jsonl``, ``.json``, ``.parquet``) is returned as it is.

    Raises:
        ValueError: nothing or several datasets match (the message lists the known ones).
        FileNotFoundError: the data folder does not exist.
    """
    if name.lower().endswith(_USER_SUFFIXES) and Path(name).is_file():
        return name
    found = find_datasets(data_dir)
    if name in found:
        return name
    if f"logiclm/{name.lower()}" in found:
        return f"logiclm/{name.lower()}"
    matches = [n for n in found if n.split("/", 1)[-1] == name.lower()]
    if len(matches) == 1:
        return matches[0]
    raise _unknown(name, found)


def dataset_path(name: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data file of a dataset the data folder holds."""
    return find_dataset(name, data_dir).path


def recorded_programs_path(name: str, data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The recorded program file of a Logic-LM-layout dataset, or None if it has none."""
    return find_dataset(name, data_dir).programs


def dataset_counts(data_dir: str | os.PathLike[str] | None = None) -> dict[str, int]:
    """Number of problems per dataset the data folder holds.

    The number is what :func:`load_dataset` returns for a clean file (questions, not
    contexts, for PARARULE-Plus). JSON Lines files are only line-counted; JSON arrays and
    PARARULE lines are parsed but no problem is built.

    Raises:
        FileNotFoundError: the data folder does not exist.
        InputError: a JSON file that does not parse.
    """
    return {name: dataset.count() for name, dataset in find_datasets(data_dir).items()}


def open_dataset(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    options: ReadOptions = ReadOptions(),
    language: str | None = None,
) -> ProblemStream:
    """:func:`load_dataset`'s problems as a stream (``options``: skip-bad, limit, shard).

    Raises:
        ValueError, FileNotFoundError: as :func:`load_dataset`, now.
        InputError: an unreadable file now; a bad record (unless ``skip_bad``) when the stream reaches it.
    """
    return find_dataset(name, data_dir, language=language).open(options)


def carries_programs(name: str, data_dir: str | os.PathLike[str] | None = None, *, limit: int | None = None) -> bool:
    """Whether any of the first ``limit`` problems of the dataset ``name`` has a program.

    Only our own format carries programs, so another family's dataset is not read; a file of ours
    is read up to its first program (bad records skipped here: the job reports them).
    """
    dataset = find_dataset(name, data_dir)
    if not dataset.family.carries_programs:
        return False
    stream = dataset.open(ReadOptions(skip_bad=True, limit=limit))
    try:
        return any(p.program is not None for p in stream)
    finally:
        stream.close()


def load_dataset(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    skip_bad: bool = False,
    limit: int | None = None,
    language: str | None = None,
) -> LoadResult:
    """Load a dataset: one the data folder holds (:func:`dataset_names`), or a file of our format by its path.

    Args:
        name: a name from :func:`dataset_names`, or a ``.jsonl`` / ``.json`` / ``.parquet`` path.
        data_dir: the data folder; see :func:`~symbolkg.jobs.datasets.files.default_data_dir`.
        skip_bad: collect bad records in ``errors`` instead of raising.
        limit: keep only the first ``limit`` problems.
        language: the program language of a Logic-LM-layout dataset (default: its records say).

    Raises:
        ValueError: unknown name or language, or bad ``limit``.
        FileNotFoundError: missing data folder or file.
        InputError: a bad record (unless ``skip_bad``) or an unreadable file.
    """
    check_limit(limit)
    return open_dataset(name, data_dir, options=ReadOptions(skip_bad, limit), language=language).collect()


def load_problems(
    source: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    skip_bad: bool = False,
    limit: int | None = None,
    dataset: str | None = None,
    language: str | None = None,
) -> LoadResult:
    """Load problems from a dataset name or a file (what the CLI's ``--programs`` argument means).

    * a dataset name -> :func:`load_dataset`;
    * ``*.jsonl`` / ``*.parquet`` -> :func:`~symbolkg.jobs.datasets.user.load_generic`;
    * ``*.json``: a JSON array whose records carry ``raw_logic_programs`` ->
      :func:`~symbolkg.jobs.datasets.logiclm.load_logiclm_programs` (``data_dir`` supplies the
      dataset's ``dev.json``), any other JSON array -> our format.

    Args:
        source: dataset name or file path.
        data_dir: the data folder (see :func:`~symbolkg.jobs.datasets.files.default_data_dir`).
        skip_bad: collect bad records in ``errors`` instead of raising.
        limit: keep only the first ``limit`` problems.
        dataset: for a Logic-LM program file, the dataset (checked against the ids);
            for a file of our format, the default ``dataset`` of its rows (``"custom"``).
        language: the program language of a Logic-LM program file or dataset (default: told by the programs).

    Raises:
        ValueError: ``source`` is neither a dataset name nor a supported file.
        FileNotFoundError, InputError: as the loaders.
    """
    check_limit(limit)
    return open_problems(
        source, data_dir, options=ReadOptions(skip_bad, limit), dataset=dataset, language=language
    ).collect()


def open_problems(
    source: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    options: ReadOptions = ReadOptions(),
    dataset: str | None = None,
    language: str | None = None,
) -> ProblemStream:
    """:func:`load_problems`' problems as a stream (``options``: skip-bad, limit, shard).

    A file that cannot be read at all (a JSON document that does not parse, a Parquet file with an
    unknown column) raises now; a bad record (unless ``skip_bad``) when the stream reaches it.

    Raises:
        ValueError, FileNotFoundError, InputError: as :func:`load_problems`.
    """
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix not in _USER_SUFFIXES:
        if source in _names_if_any(data_dir):
            return open_dataset(source, data_dir, options=options, language=language)
        raise ValueError(
            f"{source!r} is neither a dataset ({', '.join(_names_if_any(data_dir))}) nor a .jsonl/.json/.parquet file"
        )
    if not path.is_file():
        raise FileNotFoundError(f"problem file {str(path)!r} not found")
    if suffix != ".json":
        return user.open_generic(path, dataset=dataset or "custom", options=options)
    data = read_json_array(path)  # parsed once, handed to whichever reader applies
    if any(isinstance(r, dict) and "raw_logic_programs" in r for r in data):
        return logiclm.open_program_data(
            path, data, dataset=dataset, data_dir=data_dir, options=options, language=language
        )
    return user.open_records(JsonArray(path, data), dataset=dataset or "custom", options=options)
