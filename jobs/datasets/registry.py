"""The registry of dataset families, and the functions that find and load datasets by name.

:data:`FAMILIES` is data: one :class:`~symbolkg.jobs.datasets.family.Family` per format. A data
folder's datasets are what the families find in it (:func:`find_datasets`), so a file or folder
that follows a family's rule is a dataset without a code change; ``symbolkg datasets --data-dir D``
lists them. A user's own file is loaded by its path.

Mapping into :class:`~symbolkg.jobs.pipeline.rows.Problem`: ``dataset`` is always the dataset's
name; each family's module says how its records map (``logiclm``, ``pararule_plus``, ``symba``,
``logicgraph``, ``multihop``, ``user``).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from symbolkg.jobs.datasets import logicgraph, logiclm, multihop, pararule_plus, symba, user
from symbolkg.jobs.datasets.family import Dataset, Family
from symbolkg.jobs.datasets.files import array_records, default_data_dir, read_json_array
from symbolkg.jobs.datasets.records import LoadResult, Sink, check_limit
from symbolkg.solvers.registry import LANGUAGES

#: Every dataset family, in the order ``symbolkg datasets`` lists them.
FAMILIES: tuple[Family, ...] = (logiclm.FAMILY, logicgraph.FAMILY, pararule_plus.FAMILY, symba.FAMILY,
                                multihop.FAMILY, user.FAMILY)

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
                raise ValueError(f"two datasets are named {dataset.name!r}: {found[dataset.name].path} and "
                                 f"{dataset.path}; rename one")
            found[dataset.name] = dataset
    return dict(sorted(found.items()))


def dataset_names(data_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """The names of the datasets the data folder holds, sorted."""
    return list(find_datasets(data_dir))


def _unknown(name: str, found: dict[str, Dataset]) -> ValueError:
    rules = "; ".join(f.rule for f in FAMILIES)
    return ValueError(f"unknown dataset {name!r}; known: {', '.join(found) or 'none'} (a dataset is a file or folder "
                      f"that follows a family's rule: {rules}; or a .jsonl/.json/.parquet file of our format)")


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
    dataset = find_dataset(name, data_dir, language=language)
    sink = Sink(skip_bad=skip_bad, limit=limit)
    dataset.load(sink)
    return sink.result()


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
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix not in _USER_SUFFIXES:
        if source in _names_if_any(data_dir):
            return load_dataset(source, data_dir, skip_bad=skip_bad, limit=limit, language=language)
        raise ValueError(f"{source!r} is neither a dataset ({', '.join(_names_if_any(data_dir))}) nor a "
                         ".jsonl/.json/.parquet file")
    if not path.is_file():
        raise FileNotFoundError(f"problem file {str(path)!r} not found")
    if suffix != ".json":
        return user.load_generic(path, dataset=dataset or "custom", skip_bad=skip_bad, limit=limit)
    data = read_json_array(path)  # parsed once, handed to whichever loader applies
    if any(isinstance(r, dict) and "raw_logic_programs" in r for r in data):
        check_limit(limit)
        result = logiclm.load_program_data(path, data, dataset=dataset, data_dir=data_dir, skip_bad=skip_bad,
                                           language=language)
        return LoadResult(result.problems[:limit], result.errors, result.notes) if limit is not None else result
    return user.load_records(array_records(path, data), dataset=dataset or "custom", skip_bad=skip_bad, limit=limit)
