"""Our own problem format, for a user's problem sets: JSON Lines, a JSON array, or Parquet.

Rule (as a dataset family): every ``<name>.jsonl`` in the data folder's ``custom/`` is the dataset
``custom/<name>``; any such file can also be given by its path (``--dataset path/to/file.jsonl``),
as the dataset ``custom/<file stem>``.

The minimal record is ``{"id", "context", "question"}``, with ``options`` and ``answer`` when the
problem has them::

    {"id": "p1", "context": "Tom is a cat. All cats are animals.",
     "question": "Is Tom an animal?", "options": ["A) True", "B) False"], "answer": "A"}

Every field is listed in :func:`load_generic`; an unknown field is an error that names it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.family import Dataset, Family
from symbolkg.jobs.datasets.files import JsonArray, JsonLines, RecordSource, count_jsonl_lines, read_json_array
from symbolkg.jobs.datasets.records import InputError, LoadResult, Obj, Where, read_id, type_name
from symbolkg.jobs.datasets.stream import ProblemStream, ReadOptions, Sink
from symbolkg.solvers.outcomes import Program
from symbolkg.solvers.registry import LANGUAGES

_GENERIC_FIELDS = frozenset(
    {"id", "dataset", "context", "question", "options", "answer", "program", "program_language", "program_text", "meta"}
)


def _generic_program(obj: Obj) -> Program | None:
    has_object = obj.has("program")
    has_columns = obj.has("program_language") or obj.has("program_text")
    if has_object and has_columns:
        raise obj.error("program", "give either 'program' or 'program_language' + 'program_text', not both")
    if has_object:
        program = obj.sub("program")
        unknown = sorted(set(program.data) - {"language", "text"})
        if unknown:
            raise program.error(
                unknown[0], f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: 'language', 'text'"
            )
        language_key, text_key = "language", "text"
    elif has_columns:
        program, language_key, text_key = obj, "program_language", "program_text"
        for key in (language_key, text_key):
            if not obj.has(key):
                raise obj.error(key, "required when the other of 'program_language'/'program_text' is given")
    else:
        return None
    language = program.str_(language_key)
    if language not in LANGUAGES:
        raise program.error(
            language_key, f"unknown program language {language!r}; known: {', '.join(sorted(LANGUAGES))}"
        )
    text = program.str_(text_key, nonempty=True)
    return Program(language=language, text=text)


def _generic_meta(obj: Obj) -> dict[str, Any]:
    if not obj.has("meta"):
        return {}
    meta = obj.data["meta"]
    if isinstance(meta, str):
        # The Parquet form (PROBLEM_SCHEMA) stores meta as a JSON string; accept it in JSONL too
        # so that Problem.to_row() output loads back.
        try:
            meta = json.loads(meta)
        except json.JSONDecodeError as exc:
            raise obj.error("meta", f"not a valid JSON string: {exc.msg} at column {exc.colno}") from None
    if not isinstance(meta, dict):
        raise obj.error("meta", f"expected a JSON object, got {type_name(meta)}")
    return meta


def _generic_problem(record: Any, where: Where, default_dataset: str) -> Problem:
    obj = Obj(record, where)
    unknown = sorted(set(obj.data) - _GENERIC_FIELDS)
    if unknown:
        raise where.error(
            unknown[0],
            f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(sorted(_GENERIC_FIELDS))}",
        )
    problem_id = read_id(obj)
    options = obj.options("options") if obj.has("options") else ()
    dataset = obj.str_("dataset", nonempty=True) if obj.has("dataset") else default_dataset
    return Problem(
        id=problem_id,
        dataset=dataset,
        context=obj.str_("context"),
        question=obj.str_("question", nonempty=True),
        options=options,
        answer=obj.answer("answer", options, required=False),
        program=_generic_program(obj),
        meta=_generic_meta(obj),
    )


class ParquetRows:
    """The rows of a Parquet file of :data:`~symbolkg.jobs.core.tables.PROBLEM_SCHEMA`'s columns, a batch at a time.

    The columns are checked when the file is opened (an unknown or missing column is fatal); the
    rows are read by record batches (``iter_batches``), so memory follows one batch. Null cells
    mean "absent", as a missing key would in JSON. Rows are numbered from 1 (``row N`` in errors).
    """

    BATCH_ROWS = 1024

    def __init__(self, path: Path) -> None:
        import pyarrow as pa  # heavy and only for Parquet input: imported when such a file is opened
        import pyarrow.parquet as pq

        from symbolkg.jobs.core.tables import PROBLEM_SCHEMA  # pyarrow too: only for Parquet input, as above

        self.path = Path(path)
        self._arrow_errors = (pa.ArrowException, OSError)
        try:
            self._file = pq.ParquetFile(self.path)
            names = self._file.schema_arrow.names
        except self._arrow_errors as exc:
            raise InputError(self.path, None, None, f"not a readable Parquet file: {exc}") from None
        unknown = sorted(set(names) - set(PROBLEM_SCHEMA.names))
        if unknown:
            raise InputError(
                self.path,
                None,
                unknown[0],
                f"unknown column(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(PROBLEM_SCHEMA.names)}",
            )
        for required in ("id", "context", "question"):
            if required not in names:
                raise InputError(self.path, None, required, "required column is missing")

    def records(self, passes_over: Callable[[str], bool] | None = None) -> Iterator[tuple[Where, Any]]:
        index = 0
        try:
            for batch in self._file.iter_batches(batch_size=self.BATCH_ROWS):
                for row in batch.to_pylist():
                    index += 1
                    yield Where(str(self.path), index, "row"), {k: v for k, v in row.items() if v is not None}
        except self._arrow_errors as exc:
            raise InputError(self.path, None, None, f"not a readable Parquet file: {exc}") from None

    def reread(self, position: int) -> tuple[Where, Any]:
        """Row ``position``, from its row group (a repeated id's first copy: rare)."""
        start = 0
        for group in range(self._file.num_row_groups):
            rows = self._file.metadata.row_group(group).num_rows
            if position <= start + rows:
                row = self._file.read_row_group(group).slice(position - start - 1, 1).to_pylist()[0]
                return Where(str(self.path), position, "row"), {k: v for k, v in row.items() if v is not None}
            start += rows
        raise ValueError(f"{self.path}: no row {position}")


def open_generic(
    path: str | os.PathLike[str],
    *,
    dataset: str = "custom",
    options: ReadOptions = ReadOptions(),
) -> ProblemStream:
    """:func:`load_generic`'s problems as a stream, read as the caller reads it (:mod:`symbolkg.jobs.datasets.stream`).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: an unsupported suffix.
        InputError: a Parquet file that cannot be opened, or has an unknown or missing column
            (now); a bad record (unless ``skip_bad``), when the stream reaches it.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"problem file {str(path)!r} not found")
    return open_records(_source(path), dataset=dataset, options=options)


def load_generic(
    path: str | os.PathLike[str],
    *,
    dataset: str = "custom",
    skip_bad: bool = False,
    limit: int | None = None,
) -> LoadResult:
    """Load problems in our own format.

    Formats, by file suffix: ``.jsonl`` (one JSON object per line), ``.parquet`` (columns of
    :data:`symbolkg.jobs.core.tables.PROBLEM_SCHEMA`; nulls mean absent) or ``.json`` (a JSON array of
    the same objects). Fields:

    * ``id`` (string, required, unique in the file),
    * ``context`` (string, required; may be empty), ``question`` (string, required),
    * ``options`` (list of ``"X) text"`` with distinct letters, optional),
    * ``answer`` (string or null; must be an option letter when there are options),
    * ``program`` (``{"language", "text"}``) or ``program_language`` + ``program_text``
      (optional; the language must be one of :data:`symbolkg.solvers.registry.LANGUAGES`),
    * ``meta`` (object, or a JSON string of one as in Parquet; optional),
    * ``dataset`` (string, optional; overrides the ``dataset`` argument for that row).

    Unknown fields are an error that names them, so typos (``"questoin"``) are caught
    instead of silently dropped. A line that is not valid JSON is a bad row. A job reads the
    same problems as a stream instead (:func:`open_generic`).

    Args:
        path: the file.
        dataset: dataset name for rows without a ``dataset`` field.
        skip_bad: collect bad records in ``errors`` instead of raising.
        limit: keep only the first ``limit`` problems.

    Raises:
        InputError: a bad record (unless ``skip_bad``), or an unreadable file / unknown column.
        FileNotFoundError: the file does not exist.
        ValueError: an unsupported suffix.
    """
    return open_generic(path, dataset=dataset, options=ReadOptions(skip_bad=skip_bad, limit=limit)).collect()


def _source(path: Path) -> RecordSource:
    """The records of a file in our format, by its suffix (``.jsonl``, ``.parquet``, ``.json``)."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return JsonLines(path)
    if suffix == ".parquet":
        return ParquetRows(path)
    if suffix == ".json":
        return JsonArray(path, read_json_array(path))
    raise ValueError(f"{path}: unsupported file type {suffix!r}; use .jsonl, .json or .parquet")


def open_records(source: RecordSource, *, dataset: str, options: ReadOptions) -> ProblemStream:
    """The problems of records in our format (``dataset``: the default of their ``dataset`` field), as a stream."""
    sink = Sink(options)
    return ProblemStream(sink.take_all(source, lambda rec, at: [_generic_problem(rec, at, dataset)]), [sink])


def _find(root: Path) -> list[Dataset]:
    folder = root / "custom"
    if not folder.is_dir():
        return []
    return [Dataset(f"custom/{p.stem}", p, FAMILY) for p in sorted(folder.glob("*.jsonl")) if p.is_file()]


def user_dataset(path: Path) -> Dataset:
    """A user's file given by its path, as the dataset ``custom/<file stem>``."""
    return Dataset(f"custom/{path.stem}", path, FAMILY)


def _read(dataset: Dataset, sink: Sink) -> Iterator[Problem]:
    return sink.take_all(_source(dataset.path), lambda rec, at: [_generic_problem(rec, at, dataset.name)])


FAMILY = Family(
    "custom",
    "custom/<name> for every custom/<name>.jsonl (our own format), or any such file by its path",
    _find,
    _read,
    count_jsonl_lines,
    carries_programs=True,
)
