"""Input errors and record validation, shared by every dataset family.

Errors are data at row level, exceptions at file level. A malformed record raises
:class:`InputError` naming the file, the line (JSONL) or 1-based record index (JSON array,
Parquet), and the field; with ``skip_bad=True`` the record is skipped and its error is
collected instead (:attr:`LoadResult.errors`, or a stream's ``errors`` as it is read:
:mod:`symbolkg.jobs.datasets.stream`). A file that cannot be read at all (missing, not JSON,
wrong top-level shape) always raises.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from symbolkg.jobs.core.rows import Problem

TRUE_FALSE_OPTIONS: tuple[str, ...] = ("A) True", "B) False")

_OPTION_RE = re.compile(r"^([A-Z])\)\s*\S")


class InputError(ValueError):
    """Malformed input: a bad record, or a file that cannot be read as the expected format.

    Attributes:
        path: the file, as given.
        line: 1-based line of a JSONL file (or of a JSON document that does not parse), or
            1-based record index of a JSON array / row of a Parquet file; None for the file
            as a whole.
        field: the offending field (dotted / indexed path such as ``questions[3].label``), if any.
        message: what is wrong, phrased so that the user can fix it.
        unit: what ``line`` counts: ``"line"``, ``"record"`` (JSON array) or ``"row"`` (Parquet).
        record_id: the record's ``id`` when it could be read, to find it without counting.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        line: int | None,
        field: str | None,
        message: str,
        *,
        unit: str = "line",
        record_id: str | None = None,
    ) -> None:
        if unit not in ("line", "record", "row"):
            raise ValueError(f"InputError.unit must be 'line', 'record' or 'row', got {unit!r}")
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        self.unit = unit
        self.record_id = record_id
        super().__init__(self.path, line, field, message)

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep the keyword-only attributes when an error crosses a process boundary.
        return (_rebuild_input_error, (self.path, self.line, self.field, self.message, self.unit, self.record_id))

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}" if self.unit == "line" else f": {self.unit} {self.line}"
        if self.record_id is not None:
            where += f" (id {self.record_id!r})"
        body = f"field {self.field!r}: {self.message}" if self.field else self.message
        return f"{where}: {body}"


def _rebuild_input_error(
    path: str, line: int | None, field_name: str | None, message: str, unit: str, record_id: str | None
) -> InputError:
    return InputError(path, line, field_name, message, unit=unit, record_id=record_id)


@dataclass(frozen=True)
class LoadResult:
    """What a loader returns.

    Attributes:
        problems: the problems, in file order (for program files: the dataset's order).
        errors: bad records that were skipped; only non-empty when ``skip_bad=True``.
        notes: things the user should know that are not errors, e.g. problems of a
            Logic-LM dataset that have no recorded program and were kept with
            ``program=None``. The CLI prints them.
    """

    problems: list[Problem]
    errors: list[InputError]
    notes: list[str] = field(default_factory=list)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


@dataclass(frozen=True)
class Where:
    """Location of one record, to build errors with."""

    path: str
    line: int | None
    unit: str = "line"
    record_id: str | None = None

    def error(self, field_name: str | None, message: str) -> InputError:
        return InputError(self.path, self.line, field_name, message, unit=self.unit, record_id=self.record_id)

    def with_id(self, record_id: str) -> Where:
        return Where(self.path, self.line, self.unit, record_id)


class Obj:
    """A JSON object being validated; every accessor raises :class:`InputError` on a bad value."""

    def __init__(self, data: Any, where: Where, prefix: str = "") -> None:
        if not isinstance(data, dict):
            raise where.error(prefix.rstrip(".") or None, f"expected a JSON object, got {type_name(data)}")
        self.data: dict[str, Any] = data
        self.where = where
        self.prefix = prefix

    def name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def error(self, key: str, message: str) -> InputError:
        return self.where.error(self.name(key), message)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def _get(self, key: str) -> Any:
        if key not in self.data:
            raise self.error(key, "required field is missing")
        return self.data[key]

    def str_(self, key: str, *, nonempty: bool = False) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {type_name(value)}")
        if nonempty and not value.strip():
            raise self.error(key, "must not be empty")
        return value

    def opt_str(self, key: str) -> str | None:
        return self.str_(key) if self.has(key) else None

    def bool_(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {type_name(value)}")
        return value

    def int_(self, key: str) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer, got {type_name(value)}")
        return value

    def str_list(self, key: str) -> list[str]:
        value = self._get(key)
        if not isinstance(value, list):
            raise self.error(key, f"expected a list of strings, got {type_name(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.where.error(f"{self.name(key)}[{i}]", f"expected a string, got {type_name(item)}")
        return list(value)

    def list_(self, key: str) -> list[Any]:
        value = self._get(key)
        if not isinstance(value, list):
            raise self.error(key, f"expected a list, got {type_name(value)}")
        return value

    def dict_(self, key: str) -> dict[str, Any]:
        value = self._get(key)
        if not isinstance(value, dict):
            raise self.error(key, f"expected a JSON object, got {type_name(value)}")
        return value

    def sub(self, key: str) -> Obj:
        return Obj(self.dict_(key), self.where, f"{self.name(key)}.")

    def items(self, key: str) -> list[Obj]:
        return [Obj(item, self.where, f"{self.name(key)}[{i}].") for i, item in enumerate(self.list_(key))]

    def options(self, key: str) -> tuple[str, ...]:
        """A list of ``"X) text"`` strings with distinct letters (empty allowed)."""
        options = self.str_list(key)
        letters: set[str] = set()
        for i, option in enumerate(options):
            match = _OPTION_RE.match(option)
            if match is None:
                raise self.where.error(f"{self.name(key)}[{i}]", f"expected an option like 'A) text', got {option!r}")
            if match.group(1) in letters:
                raise self.where.error(f"{self.name(key)}[{i}]", f"option letter {match.group(1)} appears twice")
            letters.add(match.group(1))
        return tuple(options)

    def answer(self, key: str, options: tuple[str, ...], *, required: bool) -> str | None:
        """The gold answer; an option letter when there are options."""
        value = self.str_(key) if required else self.opt_str(key)
        if value is not None and options:
            letters = [o[0] for o in options]
            if value not in letters:
                raise self.error(key, f"expected one of the option letters {', '.join(letters)}, got {value!r}")
        return value


def check_limit(limit: int | None) -> None:
    """Raise ValueError unless ``limit`` is None or an integer >= 0."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative integer or None, got {limit!r}")


def read_id(obj: Obj, key: str = "id") -> str:
    """The record's id (a non-empty string), also attached to later errors of the record."""
    record_id = obj.str_(key, nonempty=True)
    obj.where = obj.where.with_id(record_id)
    return record_id
