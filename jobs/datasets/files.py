"""The data folder, and the record sources every family reads: JSON documents and JSON Lines files.

A source (:class:`RecordSource`) yields ``(where, record)`` one record at a time, and reads one
record again by its position (:meth:`RecordSource.reread`). A stream keeps the ids it has met as
8-byte hashes, not as strings, and on a hash hit rereads the earlier record to compare exactly
(:mod:`symbolkg.jobs.datasets.stream`): a repeat costs one reread, an id costs 16 bytes.

A JSON Lines file is read a line at a time, so memory follows one line whatever the file's size;
a JSON document has no record boundaries to stream by and is parsed whole (the Logic-LM and SymBa
files are small), its records then converted one at a time.
"""

from __future__ import annotations

import json
import os
import re
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from symbolkg.jobs.datasets.records import InputError, Where, type_name

#: Environment variable naming the data folder (between ``--data-dir`` and the default).
DATA_ENV_VAR = "SYMBOLKG_DATA"


def _repo_root() -> Path:
    """The checkout this package runs from (editable install), else the working directory.

    ``jobs/`` sits at the top of the repository; an installed wheel has no checkout around it,
    so the default data folder is then looked up from where the command runs.
    """
    checkout = Path(__file__).resolve().parents[2]  # jobs/datasets/files.py -> the checkout
    return checkout if (checkout / "pyproject.toml").is_file() else Path.cwd()


def default_data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The benchmark data folder.

    Resolution order: ``explicit`` (the CLI's ``--data-dir``), else ``$SYMBOLKG_DATA`` if set
    and non-empty, else ``<repo root>/../shared/data`` where the repo root is the checkout holding
    ``jobs/`` (an installed wheel: the working directory).

    Args:
        explicit: a folder given by the user, or None.

    Returns:
        The resolved folder (not made absolute beyond what was given).

    Raises:
        FileNotFoundError: the resolved folder does not exist or is not a directory; the
            message names all three candidates so the user sees which one was used.
    """
    env_value = os.environ.get(DATA_ENV_VAR) or None
    default = _repo_root().parent / "shared" / "data"
    if explicit is not None:
        chosen, source = Path(explicit), "--data-dir"
    elif env_value is not None:
        chosen, source = Path(env_value), f"${DATA_ENV_VAR}"
    else:
        chosen, source = default, "the default"
    if not chosen.is_dir():
        raise FileNotFoundError(
            f"data folder {str(chosen)!r} (from {source}) does not exist. The data folder is taken from "
            f"--data-dir (given: {str(explicit) if explicit is not None else 'no'}), else ${DATA_ENV_VAR} "
            f"(set: {env_value if env_value is not None else 'no'}), else {str(default)!r}."
        )
    return chosen


class RecordSource(Protocol):
    """Where a family's records come from, one at a time, each with its location."""

    path: Path

    def records(self, passes_over: Callable[[str], bool] | None = None) -> Iterator[tuple[Where, Any]]:
        """``(where, record)`` per record, in file order; a record that cannot be read is an InputError in its place.

        Args:
            passes_over: given when a record's own ``"id"`` is its one problem's id: a record whose id
                this says yes to may be left out unparsed, when the source can read the id cheaply
                (another shard's lines of a JSON Lines file).
        """
        ...

    def reread(self, position: int) -> tuple[Where, Any]:
        """The record at ``position`` (its ``where.line``, already read by :meth:`records`), read again."""
        ...


def read_json_document(path: Path) -> Any:
    """Parse a whole JSON file; a document that does not parse is fatal (with its position)."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, None, None, f"not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " (if this is JSON Lines, name it .jsonl)" if exc.msg == "Extra data" else ""
        raise InputError(
            path, exc.lineno, None, f"invalid JSON document: {exc.msg} at column {exc.colno}{hint}"
        ) from None


def read_json_array(path: Path) -> list[Any]:
    """Parse a JSON file whose document must be an array of records (anything else is fatal)."""
    data = read_json_document(path)
    if not isinstance(data, list):
        raise InputError(path, None, None, f"expected a JSON array of records, got {type_name(data)}")
    return data


class JsonArray:
    """The records of a JSON array already parsed (``data``), numbered from 1 (``record N`` in errors)."""

    def __init__(self, path: Path, data: list[Any]) -> None:
        self.path = Path(path)
        self.data = data

    def records(self, passes_over: Callable[[str], bool] | None = None) -> Iterator[tuple[Where, Any]]:
        """Every record (the document is parsed already: nothing is saved by passing one over)."""
        for index, record in enumerate(self.data, start=1):
            yield Where(str(self.path), index, "record"), record

    def reread(self, position: int) -> tuple[Where, Any]:
        return Where(str(self.path), position, "record"), self.data[position - 1]


def array_records(path: Path, data: list[Any]) -> Iterator[tuple[Where, Any]]:
    """(location, record) of each record of a parsed JSON array."""
    return JsonArray(path, data).records()


_BOM = b"\xef\xbb\xbf"

#: A line that opens with ``{"id": "<string>"``: the id, still JSON-escaped.
_FIRST_ID = re.compile(rb'\s*\{\s*"id"\s*:\s*"((?:[^"\\]|\\.)*)"\s*[,}]', re.DOTALL)

#: Every spelling of the string ``"id"`` in JSON (``\u0069`` is ``i``, ``\u0064`` is ``d``).
_ID_KEY = re.compile(rb'"(?:i|\\u0069)(?:d|\\u0064)"')


def peek_id(raw: bytes) -> str | None:
    """The top-level ``"id"`` of a JSON Lines line read without parsing the line, when that is certain; else None.

    Certain means: the object's first key is ``"id"`` with a string value, and no other string of
    the line spells ``id`` (a repeated key, whose last value ``json.loads`` would keep, or a value
    that happens to be "id" send the line to the parser). So the answer is the one
    ``json.loads(raw)["id"]`` gives, whenever the line is valid JSON; a line that is not valid
    JSON past its id is read, and reported, by whoever takes that id.

    >>> peek_id(b'{"id": "p\\u00e9-1", "question": "q"}'), peek_id(b'{"question": "q", "id": "p1"}')
    ('p\xe9-1', None)
    """
    match = _FIRST_ID.match(raw)
    if match is None or len(_ID_KEY.findall(raw)) != 1:
        return None
    try:
        value = json.loads(b'"' + match.group(1) + b'"')
    except ValueError:  # a bad escape or UTF-8 in the id: the parser says what is wrong
        return None
    return value if isinstance(value, str) else None


class JsonLines:
    """A JSON Lines file, read a line at a time.

    A line that is not valid JSON is a bad row (an InputError in its place), not a fatal error.
    The last line may lack its newline (the PARARULE-Plus files do). Blank lines are ignored but
    counted, so that ``line N`` is the line an editor shows.
    """

    #: Lines between two remembered byte offsets: a reread reads at most this many lines, and the
    #: offsets cost 8 bytes per this many lines.
    CHECKPOINT_LINES = 64

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._checkpoints = array("q")  # byte offset of lines 1, 1 + CHECKPOINT_LINES, ...

    def records(self, passes_over: Callable[[str], bool] | None = None) -> Iterator[tuple[Where, Any]]:
        with self.path.open("rb") as handle:
            offset = 0
            for number, raw in enumerate(handle, start=1):
                start, offset = offset, offset + len(raw)
                k, first_of_k = divmod(number - 1, self.CHECKPOINT_LINES)
                if first_of_k == 0 and k == len(self._checkpoints):  # not when records() runs again
                    self._checkpoints.append(start)
                if number == 1 and raw.startswith(_BOM):
                    raw = raw[3:]
                if not raw or raw.isspace():
                    continue
                if passes_over is not None:
                    record_id = peek_id(raw)
                    if record_id is not None and passes_over(record_id):
                        continue
                yield self._parse(raw, number)

    def reread(self, position: int) -> tuple[Where, Any]:
        k = (position - 1) // self.CHECKPOINT_LINES
        if not 0 <= k < len(self._checkpoints):
            raise ValueError(f"{self.path}: line {position} has not been read yet")
        with self.path.open("rb") as handle:
            handle.seek(self._checkpoints[k])
            for _ in range(k * self.CHECKPOINT_LINES + 1, position + 1):
                raw = handle.readline()
        return self._parse(raw[3:] if position == 1 and raw.startswith(_BOM) else raw, position)

    def _parse(self, raw: bytes, number: int) -> tuple[Where, Any]:
        where = Where(str(self.path), number, "line")
        try:
            return where, json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            return where, where.error(None, f"not UTF-8 text (byte {exc.start} of the line)")
        except json.JSONDecodeError as exc:
            return where, where.error(None, f"invalid JSON: {exc.msg} at column {exc.colno}")


def jsonl_records(path: Path) -> Iterator[tuple[Where, Any]]:
    """(location, parsed object or InputError) per non-blank line of a JSON Lines file."""
    return JsonLines(path).records()


def count_jsonl_lines(path: Path) -> int:
    """Non-blank lines (a line a problem, for the families that have one problem a line)."""
    with path.open("rb") as handle:
        return sum(1 for raw in handle if raw.strip())


def count_json_array(path: Path) -> int:
    """Records of a JSON array file (parsed, no problem built)."""
    return len(read_json_array(path))
