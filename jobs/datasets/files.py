"""The data folder, and the readers of JSON documents and JSON Lines files that every family uses."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

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
        raise InputError(path, exc.lineno, None, f"invalid JSON document: {exc.msg} at column {exc.colno}{hint}") from None


def read_json_array(path: Path) -> list[Any]:
    data = read_json_document(path)
    if not isinstance(data, list):
        raise InputError(path, None, None, f"expected a JSON array of records, got {type_name(data)}")
    return data


def array_records(path: Path, data: list[Any]) -> Iterator[tuple[Where, Any]]:
    for index, record in enumerate(data, start=1):
        yield Where(str(path), index, "record"), record


def jsonl_records(path: Path) -> Iterator[tuple[Where, Any]]:
    """(location, parsed object or InputError) per non-blank line.

    A line that is not valid JSON is a bad row, not a fatal error. The last line may lack
    its newline (the PARARULE-Plus files do). Blank lines are ignored.
    """
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            if not raw.strip():
                continue
            where = Where(str(path), number, "line")
            try:
                yield where, json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                yield where, where.error(None, f"not UTF-8 text (byte {exc.start} of the line)")
            except json.JSONDecodeError as exc:
                yield where, where.error(None, f"invalid JSON: {exc.msg} at column {exc.colno}")


def count_jsonl_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for raw in handle if raw.strip())


def count_json_array(path: Path) -> int:
    return len(read_json_array(path))
