"""Dataset adapters and the generic problem format: every input becomes :class:`Problem` records.

Three kinds of input:

* **Registered datasets** under the shared data folder (see ``../shared/data/README.md``):
  ``logiclm/{prontoqa,proofwriter,folio,logicaldeduction,ar-lsat}``,
  ``logicgraph/{small,medium}``, ``pararule_plus/depth{2,3,4}``,
  ``symba/{proofwriter_dep5,birdselectricity,pararules,prontoqa,clutrr,gsm8k,mawps}`` and
  ``multihop/{hotpotqa,2wikimultihopqa,musique}``. :func:`load_dataset` loads one by name.
* **Logic-LM program files** (``logiclm/programs/<Dataset>_dev_gpt-4.json`` or any file of
  that shape): :func:`load_logiclm_programs` attaches each recorded program to its problem.
* **Our generic format**, JSON Lines or Parquet, for user problem sets: :func:`load_generic`.

:func:`load_problems` dispatches between the three, which is what the CLI calls.

Errors are data at row level, exceptions at file level. A malformed record raises
:class:`InputError` naming the file, the line (JSONL) or 1-based record index (JSON array,
Parquet), and the field; with ``skip_bad=True`` the record is skipped and its error is
collected in :attr:`LoadResult.errors` instead. A file that cannot be read at all (missing,
not JSON, wrong top-level shape) always raises.

Example (a generic JSONL line)::

    {"id": "p1", "context": "Tom is a cat. All cats are animals.",
     "question": "Is Tom an animal?", "options": ["A) True", "B) False"], "answer": "A",
     "program": {"language": "prolog", "text": "cat(tom).\\nanimal(X) :- cat(X).\\n% query: animal(tom)"}}
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping

from symbolkg.jobs.pipeline.rows import PROBLEM_SCHEMA, Problem
from symbolkg.solvers.outcomes import Program
from symbolkg.solvers.registry import LANGUAGES

#: Environment variable naming the data folder (between ``--data-dir`` and the default).
DATA_ENV_VAR = "SYMBOLKG_DATA"

TRUE_FALSE_OPTIONS: tuple[str, ...] = ("A) True", "B) False")

_OPTION_RE = re.compile(r"^([A-Z])\)\s*\S")
_SYMBA_ANSWER_RE = re.compile(r"^answer\(\s*(-?\d+(?:\.\d+)?)\s*\)$")


# --------------------------------------------------------------------------------------
# Errors and results
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# Data folder
# --------------------------------------------------------------------------------------


def _repo_root() -> Path:
    """The checkout this package runs from (editable install), else the working directory.

    ``jobs/`` sits at the top of the repository; an installed wheel has no checkout around it,
    so the default data folder is then looked up from where the command runs.
    """
    checkout = Path(__file__).resolve().parent.parent
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


# --------------------------------------------------------------------------------------
# Field validation
# --------------------------------------------------------------------------------------


def _type_name(value: Any) -> str:
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
class _Where:
    """Location of one record, to build errors with."""

    path: str
    line: int | None
    unit: str = "line"
    record_id: str | None = None

    def error(self, field_name: str | None, message: str) -> InputError:
        return InputError(self.path, self.line, field_name, message, unit=self.unit, record_id=self.record_id)

    def with_id(self, record_id: str) -> "_Where":
        return _Where(self.path, self.line, self.unit, record_id)


class _Obj:
    """A JSON object being validated; every accessor raises :class:`InputError` on a bad value."""

    def __init__(self, data: Any, where: _Where, prefix: str = "") -> None:
        if not isinstance(data, dict):
            raise where.error(prefix.rstrip(".") or None, f"expected a JSON object, got {_type_name(data)}")
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
            raise self.error(key, f"expected a string, got {_type_name(value)}")
        if nonempty and not value.strip():
            raise self.error(key, "must not be empty")
        return value

    def opt_str(self, key: str) -> str | None:
        return self.str_(key) if self.has(key) else None

    def bool_(self, key: str) -> bool:
        value = self._get(key)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {_type_name(value)}")
        return value

    def int_(self, key: str) -> int:
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer, got {_type_name(value)}")
        return value

    def str_list(self, key: str) -> list[str]:
        value = self._get(key)
        if not isinstance(value, list):
            raise self.error(key, f"expected a list of strings, got {_type_name(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.where.error(f"{self.name(key)}[{i}]", f"expected a string, got {_type_name(item)}")
        return list(value)

    def list_(self, key: str) -> list[Any]:
        value = self._get(key)
        if not isinstance(value, list):
            raise self.error(key, f"expected a list, got {_type_name(value)}")
        return value

    def dict_(self, key: str) -> dict[str, Any]:
        value = self._get(key)
        if not isinstance(value, dict):
            raise self.error(key, f"expected a JSON object, got {_type_name(value)}")
        return value

    def sub(self, key: str) -> "_Obj":
        return _Obj(self.dict_(key), self.where, f"{self.name(key)}.")

    def items(self, key: str) -> list["_Obj"]:
        return [_Obj(item, self.where, f"{self.name(key)}[{i}].") for i, item in enumerate(self.list_(key))]

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


# --------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------


def _read_json_document(path: Path) -> Any:
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


def _read_json_array(path: Path) -> list[Any]:
    data = _read_json_document(path)
    if not isinstance(data, list):
        raise InputError(path, None, None, f"expected a JSON array of records, got {_type_name(data)}")
    return data


def _array_records(path: Path, data: list[Any]) -> Iterator[tuple[_Where, Any]]:
    for index, record in enumerate(data, start=1):
        yield _Where(str(path), index, "record"), record


def _jsonl_records(path: Path) -> Iterator[tuple[_Where, Any]]:
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
            where = _Where(str(path), number, "line")
            try:
                yield where, json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                yield where, where.error(None, f"not UTF-8 text (byte {exc.start} of the line)")
            except json.JSONDecodeError as exc:
                yield where, where.error(None, f"invalid JSON: {exc.msg} at column {exc.colno}")


def _count_jsonl_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for raw in handle if raw.strip())


# --------------------------------------------------------------------------------------
# Collecting problems
# --------------------------------------------------------------------------------------


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative integer or None, got {limit!r}")


class _Sink:
    """Per-call accumulator: duplicate-id check, ``skip_bad`` policy and ``limit``."""

    def __init__(self, *, skip_bad: bool, limit: int | None) -> None:
        _check_limit(limit)
        self.skip_bad = skip_bad
        self.limit = limit
        self.problems: list[Problem] = []
        self.errors: list[InputError] = []
        self._first_seen: dict[str, _Where] = {}

    @property
    def full(self) -> bool:
        return self.limit is not None and len(self.problems) >= self.limit

    def bad(self, error: InputError) -> None:
        if not self.skip_bad:
            raise error
        self.errors.append(error)

    def take(self, where: _Where, record: Any, convert: Callable[[Any, _Where], list[Problem]]) -> None:
        """Convert one record and add its problems, routing any InputError through :meth:`bad`."""
        if isinstance(record, InputError):
            self.bad(record)
            return
        try:
            problems = convert(record, where)
        except InputError as error:
            self.bad(error)
            return
        for problem in problems:
            if self.full:
                return
            first = self._first_seen.get(problem.id)
            if first is not None:
                at = f"{first.unit} {first.line}" if first.line is not None else "earlier"
                self.bad(where.with_id(problem.id).error("id", f"duplicate id {problem.id!r} (first at {at})"))
                continue
            self._first_seen[problem.id] = where
            self.problems.append(problem)

    def result(self, notes: list[str] | None = None) -> LoadResult:
        return LoadResult(self.problems, self.errors, notes or [])


def _record_id(obj: _Obj, key: str = "id") -> str:
    """The record's id (a non-empty string), also attached to later errors of the record."""
    record_id = obj.str_(key, nonempty=True)
    obj.where = obj.where.with_id(record_id)
    return record_id


# --------------------------------------------------------------------------------------
# Adapters: one converter per source format (record -> problems)
# --------------------------------------------------------------------------------------


def _logiclm_record(record: Any, where: _Where, dataset: str) -> tuple[Problem, _Obj]:
    obj = _Obj(record, where)
    problem_id = _record_id(obj)
    options = obj.options("options")
    if not options:
        raise obj.error("options", "expected at least one option")
    meta: dict[str, Any] = {}
    if "explanation" in obj.data:
        meta["explanation"] = obj.str_list("explanation")
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


def _load_logiclm(path: Path, name: str, sink: _Sink) -> None:
    def convert(record: Any, where: _Where) -> list[Problem]:
        return [_logiclm_record(record, where, name)[0]]

    for where, record in _array_records(path, _read_json_array(path)):
        if sink.full:
            break
        sink.take(where, record, convert)


def _load_pararule(path: Path, name: str, sink: _Sink) -> None:
    def convert(record: Any, where: _Where) -> list[Problem]:
        obj = _Obj(record, where)
        context_id = _record_id(obj)
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

    for where, record in _jsonl_records(path):
        if sink.full:
            break
        sink.take(where, record, convert)


def _count_pararule(path: Path) -> int:
    count = 0
    for _, record in _jsonl_records(path):
        if isinstance(record, dict) and isinstance(record.get("questions"), list):
            count += len(record["questions"])
    return count


def _load_logicgraph(path: Path, name: str, sink: _Sink) -> None:
    def convert(record: Any, where: _Where) -> list[Problem]:
        obj = _Obj(record, where)
        problem_id = _record_id(obj)
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

    for where, record in _jsonl_records(path):
        if sink.full:
            break
        sink.take(where, record, convert)


_MULTIHOP_CORE = frozenset({"id", "question", "answer", "answer_aliases", "paragraphs"})


def _load_multihop(path: Path, name: str, sink: _Sink) -> None:
    def convert(record: Any, where: _Where) -> list[Problem]:
        obj = _Obj(record, where)
        problem_id = _record_id(obj)
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
        meta.update({k: v for k, v in obj.data.items() if k not in _MULTIHOP_CORE})
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

    for where, record in _jsonl_records(path):
        if sink.full:
            break
        sink.take(where, record, convert)


_SYMBA_MATH = frozenset({"gsm8k", "mawps"})


def _symba_world_rules(path: Path) -> dict[str, list[str]]:
    """Rule-set name -> rule statements from a SymBa ``world_data.json`` (fatal if malformed)."""
    rules: dict[str, list[str]] = {}
    for where, record in _array_records(path, _read_json_array(path)):
        obj = _Obj(record, where)
        rules[obj.str_("name", nonempty=True)] = [s.str_("statement") for s in obj.items("statements")]
    return rules


def _load_symba(path: Path, name: str, sink: _Sink) -> None:
    folder = path.parent.name
    world_path = path.parent / "world_data.json"
    world = _symba_world_rules(world_path) if world_path.is_file() else {}

    def convert(record: Any, where: _Where) -> list[Problem]:
        obj = _Obj(record, where)
        source_id = obj.int_("id")
        problem_id = f"{folder}_{source_id}"
        obj.where = obj.where.with_id(problem_id)
        goal = obj.str_("goal", nonempty=True)
        label = obj.bool_("label")
        world_model = obj.str_list("world_model")
        program = [{"statement": s.str_("statement"), "description": s.str_("description")} for s in obj.items("program")]
        meta: dict[str, Any] = {
            "source_id": source_id,
            "goal": goal,
            "label": label,
            "world_model": world_model,
            "program": program,
        }
        if world_model:
            missing = [w for w in world_model if w not in world]
            if missing:
                raise obj.error("world_model", f"rule set(s) {missing} not found in {world_path}")
            meta["world_rules"] = [rule for w in world_model for rule in world[w]]
        if "_answer" in obj.data:
            meta["_answer"] = obj.str_("_answer")
        if folder in _SYMBA_MATH:
            goal_solved = obj.str_("goal_solved")
            match = _SYMBA_ANSWER_RE.match(goal_solved.strip())
            if match is None:
                raise obj.error("goal_solved", f"expected 'answer(<number>)', got {goal_solved!r}")
            meta["goal_solved"] = goal_solved
            options: tuple[str, ...] = ()
            answer = match.group(1)
        else:
            options, answer = TRUE_FALSE_OPTIONS, "A" if label else "B"
        return [
            Problem(
                id=problem_id,
                dataset=name,
                context=obj.str_("body_text"),
                question=goal,
                options=options,
                answer=answer,
                meta=meta,
            )
        ]

    for where, record in _array_records(path, _read_json_array(path)):
        if sink.full:
            break
        sink.take(where, record, convert)


def _count_json_array(path: Path) -> int:
    return len(_read_json_array(path))


# --------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetSpec:
    """One registered dataset.

    Attributes:
        name: registry name, e.g. ``"logiclm/folio"``.
        relpath: data file, relative to the data folder.
        language: the program language its recorded programs are written in, if any.
        programs_relpath: Logic-LM's recorded GPT-4 programs, relative to the data folder.
        loader: ``(path, name, sink)`` adding the file's problems to ``sink``.
        counter: ``path -> number of problems`` without building them.
    """

    name: str
    relpath: str
    loader: Callable[[Path, str, _Sink], None]
    counter: Callable[[Path], int]
    language: str | None = None
    programs_relpath: str | None = None


def _build_registry() -> Mapping[str, DatasetSpec]:
    specs: list[DatasetSpec] = []
    for short, folder, language in (
        ("prontoqa", "ProntoQA", "logiclm-lp"),
        ("proofwriter", "ProofWriter", "logiclm-lp"),
        ("folio", "FOLIO", "logiclm-fol"),
        ("logicaldeduction", "LogicalDeduction", "logiclm-csp"),
        ("ar-lsat", "AR-LSAT", "logiclm-smt"),
    ):
        specs.append(
            DatasetSpec(
                f"logiclm/{short}",
                f"logiclm/{folder}/dev.json",
                _load_logiclm,
                _count_json_array,
                language,
                f"logiclm/programs/{folder}_dev_gpt-4.json",
            )
        )
    for tier in ("small", "medium"):
        specs.append(DatasetSpec(f"logicgraph/{tier}", f"logicgraph/{tier}.jsonl", _load_logicgraph, _count_jsonl_lines))
    for depth in (2, 3, 4):
        specs.append(
            DatasetSpec(
                f"pararule_plus/depth{depth}",
                f"pararule_plus/PARARULE_Plus_Depth{depth}_shuffled_test.jsonl",
                _load_pararule,
                _count_pararule,
            )
        )
    for folder in ("proofwriter_dep5", "birdselectricity", "pararules", "prontoqa", "clutrr", "gsm8k", "mawps"):
        specs.append(DatasetSpec(f"symba/{folder}", f"symba/{folder}/test_data.json", _load_symba, _count_json_array))
    for folder in ("hotpotqa", "2wikimultihopqa", "musique"):
        # 2wikimultihopqa also has extra_hipporag_corpus_6119.jsonl (passages, no questions):
        # a distractor pool for retrieval, not problems, so it is not loaded here.
        specs.append(DatasetSpec(f"multihop/{folder}", f"multihop/{folder}/dev.jsonl", _load_multihop, _count_jsonl_lines))
    return MappingProxyType({spec.name: spec for spec in specs})


#: name -> spec; read-only.
DATASETS: Mapping[str, DatasetSpec] = _build_registry()

#: Logic-LM id prefix -> dataset (how a program file tells which dataset it belongs to).
_LOGICLM_ID_PREFIXES: tuple[tuple[str, str], ...] = (
    ("ProntoQA_", "logiclm/prontoqa"),
    ("ProofWriter_", "logiclm/proofwriter"),
    ("FOLIO_", "logiclm/folio"),
    ("logical_deduction_", "logiclm/logicaldeduction"),
    ("ar_lsat_", "logiclm/ar-lsat"),
)


#: a LogicGraph tier that is not registered by name: any ``logicgraph/<tier>.jsonl`` file
#: (e.g. one written by ``symbolkg logicgraph generate``) is the dataset ``logicgraph/<tier>``.
_LOGICGRAPH_TIER_RE = re.compile(r"^logicgraph/([a-z0-9][a-z0-9_.-]*)$")


def _logicgraph_tier_spec(name: str) -> DatasetSpec | None:
    match = _LOGICGRAPH_TIER_RE.match(name)
    if match is None:
        return None
    return DatasetSpec(name, f"logicgraph/{match.group(1)}.jsonl", _load_logicgraph, _count_jsonl_lines)


def _spec(name: str) -> DatasetSpec:
    spec = DATASETS.get(name) or _logicgraph_tier_spec(name)
    if spec is None:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(dataset_names())}")
    return spec


def logicgraph_tiers(data_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """``logicgraph/<tier>`` for every ``<tier>.jsonl`` in the data folder's ``logicgraph/`` (sorted)."""
    folder = default_data_dir(data_dir) / "logicgraph"
    if not folder.is_dir():
        return []
    return sorted(f"logicgraph/{p.stem}" for p in folder.glob("*.jsonl") if _LOGICGRAPH_TIER_RE.match(f"logicgraph/{p.stem}"))


def dataset_names() -> list[str]:
    """All registered dataset names, sorted."""
    return sorted(DATASETS)


def default_language(dataset: str) -> str | None:
    """The program language of a dataset's Logic-LM formalisation, or None if it has none (yet).

    Args:
        dataset: a registry name (``"logiclm/folio"``) or anything else (``"custom"``).
    """
    spec = DATASETS.get(dataset)
    return spec.language if spec is not None else None


def dataset_path(name: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data file of a registered dataset (it may not exist)."""
    return default_data_dir(data_dir) / _spec(name).relpath


def recorded_programs_path(name: str, data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """Logic-LM's recorded GPT-4 program file for ``name``, or None if it has none / it is absent."""
    spec = _spec(name)
    if spec.programs_relpath is None:
        return None
    path = default_data_dir(data_dir) / spec.programs_relpath
    return path if path.is_file() else None


def dataset_counts(data_dir: str | os.PathLike[str] | None = None) -> dict[str, int]:
    """Number of problems per dataset, for datasets whose file exists.

    The number is what :func:`load_dataset` returns for a clean file (questions, not
    contexts, for PARARULE-Plus). JSON Lines files are only line-counted; JSON arrays and
    PARARULE lines are parsed but no problem is built.

    Raises:
        FileNotFoundError: the data folder does not exist.
        InputError: a JSON file that does not parse.
    """
    root = default_data_dir(data_dir)
    counts: dict[str, int] = {}
    for name in sorted(set(dataset_names()) | set(logicgraph_tiers(root))):
        spec = _spec(name)
        path = root / spec.relpath
        if path.is_file():
            counts[name] = spec.counter(path)
    return counts


def load_dataset(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    skip_bad: bool = False,
    limit: int | None = None,
) -> LoadResult:
    """Load a registered dataset.

    Mapping into :class:`Problem` (``dataset`` is always the registry name):

    * ``logiclm/*``: records as they are (options, answer letter); ProntoQA's
      ``explanation`` goes to ``meta["explanation"]``. No programs (see
      :func:`load_logiclm_programs`).
    * ``pararule_plus/depthN``: one problem per question; the statement is the question,
      options ``A) True``/``B) False``, answer ``A`` iff ``label == "true"``; meta
      ``context_id``, ``QDep``, ``QCat``.
    * ``symba/<folder>``: id ``"<folder>_<id>"``; context ``body_text``; question the goal.
      Logic sets: options True/False, answer ``A`` iff ``label``. ``gsm8k``/``mawps``: no
      options, answer the number of ``goal_solved`` (``"answer(18)"`` -> ``"18"``). Meta:
      ``source_id, goal, label, world_model, program`` (``[{statement, description}]``),
      ``_answer`` and ``goal_solved`` when present, and ``world_rules`` (the statements of
      the ``world_data.json`` rule sets named by ``world_model``; clutrr).
    * ``logicgraph/*``: context = rules then facts, one per line; question asks whether the
      goal can be derived; options True/False, answer ``A`` (every goal is derivable). Meta:
      ``knowledge_base, target, num_solutions, solutions, family_stats, translations,
      verification`` as in the file.
    * ``multihop/*``: context = paragraphs as ``"Title: text"`` separated by blank lines;
      no options; answer text. Meta: ``answer_aliases, paragraph_titles,
      supporting_titles`` and the source's extras (``source``, ``type``, ``level``,
      ``evidences``, ``question_decomposition``). 2WikiMultihopQA's
      ``extra_hipporag_corpus_6119.jsonl`` (passages only) is not loaded.

    Args:
        name: a name from :func:`dataset_names`.
        data_dir: the data folder; see :func:`default_data_dir`.
        skip_bad: collect bad records in ``errors`` instead of raising.
        limit: keep only the first ``limit`` problems.

    Raises:
        ValueError: unknown name or bad ``limit``.
        FileNotFoundError: missing data folder or dataset file.
        InputError: a bad record (unless ``skip_bad``) or an unreadable file.
    """
    spec = _spec(name)
    root = default_data_dir(data_dir)
    path = root / spec.relpath
    if not path.is_file():
        raise FileNotFoundError(f"dataset {name!r}: file {str(path)!r} not found in data folder {str(root)!r}")
    sink = _Sink(skip_bad=skip_bad, limit=limit)
    spec.loader(path, name, sink)
    return sink.result()


# --------------------------------------------------------------------------------------
# Logic-LM program files
# --------------------------------------------------------------------------------------


def _infer_logiclm_dataset(path: Path, data: list[Any], dataset: str | None) -> str:
    found: dict[str, str] = {}
    for record in data:
        record_id = record.get("id") if isinstance(record, dict) else None
        if not isinstance(record_id, str):
            continue
        for prefix, name in _LOGICLM_ID_PREFIXES:
            if record_id.startswith(prefix):
                found.setdefault(name, record_id)
                break
    if len(found) > 1:
        examples = ", ".join(f"{rid!r} ({name})" for name, rid in sorted(found.items()))
        raise InputError(path, None, "id", f"ids of several datasets in one program file: {examples}")
    if dataset is not None:
        spec = DATASETS.get(dataset)
        if spec is None or spec.language is None or not dataset.startswith("logiclm/"):
            known = ", ".join(n for n in dataset_names() if n.startswith("logiclm/"))
            raise ValueError(f"dataset {dataset!r} has no Logic-LM program format; expected one of: {known}")
        if found and dataset not in found:
            (inferred, example), = found.items()
            raise InputError(
                path, None, "id", f"--dataset {dataset} contradicts the ids, which are {inferred}'s (e.g. {example!r})"
            )
        return dataset
    if not found:
        prefixes = ", ".join(p for p, _ in _LOGICLM_ID_PREFIXES)
        raise InputError(path, None, "id", f"cannot tell the dataset from the ids (known prefixes: {prefixes}); pass the dataset")
    return next(iter(found))


def _load_logiclm_program_data(
    path: Path,
    data: list[Any],
    *,
    dataset: str | None,
    data_dir: str | os.PathLike[str] | None,
    skip_bad: bool,
) -> LoadResult:
    name = _infer_logiclm_dataset(path, data, dataset)
    spec = DATASETS[name]
    language = spec.language
    if language is None:  # _infer_logiclm_dataset only returns logiclm/* names, which all have one
        raise RuntimeError(f"dataset {name!r} has no program language")

    def convert(record: Any, where: _Where) -> list[Problem]:
        problem, obj = _logiclm_record(record, where, name)
        texts = obj.str_list("raw_logic_programs")
        if len(texts) > 1:
            raise obj.error("raw_logic_programs", f"expected one program, got {len(texts)}")
        # An empty list or blank string is "no program": Logic-LM counts such problems as
        # unexecuted, and so do we (program=None), rather than running an empty program.
        text = texts[0] if texts and texts[0].strip() else None
        return [problem.with_program(Program(language=language, text=text) if text is not None else None)]

    sink = _Sink(skip_bad=skip_bad, limit=None)
    for where, record in _array_records(path, data):
        sink.take(where, record, convert)

    notes: list[str] = []
    if data_dir is None:
        try:
            root: Path | None = default_data_dir(None)
        except FileNotFoundError:
            root = None
    else:
        root = default_data_dir(data_dir)
    dev_path = root / spec.relpath if root is not None else None
    if dev_path is None or not dev_path.is_file():
        notes.append(
            f"{name}: dataset file not found ({dev_path or 'no data folder'}), so problems that have no "
            f"record in {path} could not be added; any such problems are missing from this run"
        )
        return sink.result(notes)

    dev = load_dataset(name, root, skip_bad=skip_bad)
    by_id = {p.id: p for p in sink.problems}
    merged: list[Problem] = []
    missing: list[str] = []
    for problem in dev.problems:
        recorded = by_id.pop(problem.id, None)
        if recorded is None:
            missing.append(problem.id)
            merged.append(problem)
        else:
            # Program files drop dev.json-only fields (ProntoQA's explanation); keep them.
            merged.append(replace(recorded, meta={**problem.meta, **recorded.meta}))
    extra = [p for p in sink.problems if p.id in by_id]
    merged.extend(extra)
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        notes.append(
            f"{name}: {len(missing)} problem(s) have no program in {path} and are kept with program=None "
            f"(counted as unexecuted): {shown}"
        )
    if extra:
        notes.append(f"{name}: {len(extra)} problem(s) of {path} are not in {dev_path}; kept at the end")
    return LoadResult(merged, sink.errors + dev.errors, notes)


def load_logiclm_programs(
    path: str | os.PathLike[str],
    *,
    dataset: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    skip_bad: bool = False,
) -> LoadResult:
    """Load a Logic-LM program file as it is, one problem per record with its program.

    The file is a JSON array of ``{id, context, question, answer, options,
    raw_logic_programs}`` (Logic-LM's ``outputs/logic_programs/*.json``). Each problem gets
    ``program=Program(language=default_language(dataset), text=raw_logic_programs[0])``; an
    empty list or a blank program means no program (``program=None``).

    Problems of the dataset that have **no record** in the file (Logic-LM's GPT-4 files lack
    ``logical_deduction_264`` and ``ar_lsat_201306_2-G_4_19``) are still returned, with
    ``program=None`` and in the dataset's order, when the data folder has the dataset's
    ``dev.json`` -- so that a run counts them as unexecuted instead of silently scoring
    only the problems that happen to have a program. :attr:`LoadResult.notes` says how
    many were added, or that ``dev.json`` was not found and none could be.

    Args:
        path: the program file.
        dataset: a ``logiclm/*`` name; inferred from the id prefixes (``ProntoQA_``,
            ``ProofWriter_``, ``FOLIO_``, ``logical_deduction_``, ``ar_lsat_``) when None.
        data_dir: the data folder holding the dataset's ``dev.json``; when None the default
            (:func:`default_data_dir`) is used if it exists.
        skip_bad: collect bad records in ``errors`` instead of raising.

    Raises:
        InputError: unreadable file, a bad record (unless ``skip_bad``), ids of several
            datasets, no recognisable ids without ``dataset``, or ``dataset`` contradicting the ids.
        ValueError: ``dataset`` is not a ``logiclm/*`` name.
        FileNotFoundError: the file, or an explicitly given ``data_dir``, does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"program file {str(path)!r} not found")
    return _load_logiclm_program_data(path, _read_json_array(path), dataset=dataset, data_dir=data_dir, skip_bad=skip_bad)


# --------------------------------------------------------------------------------------
# Generic format
# --------------------------------------------------------------------------------------

_GENERIC_FIELDS = frozenset(
    {"id", "dataset", "context", "question", "options", "answer", "program", "program_language", "program_text", "meta"}
)


def _generic_program(obj: _Obj) -> Program | None:
    has_object = obj.has("program")
    has_columns = obj.has("program_language") or obj.has("program_text")
    if has_object and has_columns:
        raise obj.error("program", "give either 'program' or 'program_language' + 'program_text', not both")
    if has_object:
        program = obj.sub("program")
        unknown = sorted(set(program.data) - {"language", "text"})
        if unknown:
            raise program.error(unknown[0], f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: 'language', 'text'")
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
        raise program.error(language_key, f"unknown program language {language!r}; known: {', '.join(sorted(LANGUAGES))}")
    text = program.str_(text_key, nonempty=True)
    return Program(language=language, text=text)


def _generic_meta(obj: _Obj) -> dict[str, Any]:
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
        raise obj.error("meta", f"expected a JSON object, got {_type_name(meta)}")
    return meta


def _generic_problem(record: Any, where: _Where, default_dataset: str) -> Problem:
    obj = _Obj(record, where)
    unknown = sorted(set(obj.data) - _GENERIC_FIELDS)
    if unknown:
        raise where.error(
            unknown[0], f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(sorted(_GENERIC_FIELDS))}"
        )
    problem_id = _record_id(obj)
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


def _parquet_records(path: Path) -> Iterator[tuple[_Where, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(path, None, None, f"not a readable Parquet file: {exc}") from None
    unknown = sorted(set(table.column_names) - set(PROBLEM_SCHEMA.names))
    if unknown:
        raise InputError(
            path, None, unknown[0], f"unknown column(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(PROBLEM_SCHEMA.names)}"
        )
    for required in ("id", "context", "question"):
        if required not in table.column_names:
            raise InputError(path, None, required, "required column is missing")
    for index, row in enumerate(table.to_pylist(), start=1):
        # Null cells mean "absent", as a missing key would in JSON.
        yield _Where(str(path), index, "row"), {k: v for k, v in row.items() if v is not None}


def load_generic(
    path: str | os.PathLike[str],
    *,
    dataset: str = "custom",
    skip_bad: bool = False,
    limit: int | None = None,
) -> LoadResult:
    """Load problems in our own format.

    Formats, by file suffix: ``.jsonl`` (one JSON object per line), ``.parquet`` (columns of
    :data:`symbolkg.jobs.pipeline.rows.PROBLEM_SCHEMA`; nulls mean absent) or ``.json`` (a JSON array of
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
    instead of silently dropped. A line that is not valid JSON is a bad row.

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
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"problem file {str(path)!r} not found")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        records: Iterator[tuple[_Where, Any]] = _jsonl_records(path)
    elif suffix == ".parquet":
        records = _parquet_records(path)
    elif suffix == ".json":
        records = _array_records(path, _read_json_array(path))
    else:
        raise ValueError(f"{path}: unsupported file type {suffix!r}; use .jsonl, .json or .parquet")
    return _load_generic_records(records, dataset=dataset, skip_bad=skip_bad, limit=limit)


def _load_generic_records(
    records: Iterator[tuple[_Where, Any]], *, dataset: str, skip_bad: bool, limit: int | None
) -> LoadResult:
    sink = _Sink(skip_bad=skip_bad, limit=limit)
    for where, record in records:
        if sink.full:
            break
        sink.take(where, record, lambda rec, at: [_generic_problem(rec, at, dataset)])
    return sink.result()


# --------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------


def load_problems(
    source: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    skip_bad: bool = False,
    limit: int | None = None,
    dataset: str | None = None,
) -> LoadResult:
    """Load problems from a dataset name or a file (what the CLI's problem argument means).

    * a registered dataset name -> :func:`load_dataset`;
    * ``*.jsonl`` / ``*.parquet`` -> :func:`load_generic`;
    * ``*.json``: a JSON array whose records carry ``raw_logic_programs`` ->
      :func:`load_logiclm_programs` (``data_dir`` supplies the dataset's ``dev.json``),
      any other JSON array -> the generic format.

    Args:
        source: dataset name or file path.
        data_dir: the data folder (see :func:`default_data_dir`).
        skip_bad: collect bad records in ``errors`` instead of raising.
        limit: keep only the first ``limit`` problems.
        dataset: for a Logic-LM program file, the dataset (checked against the ids);
            for a generic file, the default ``dataset`` of its rows (``"custom"``).

    Raises:
        ValueError: ``source`` is neither a dataset name nor a supported file.
        FileNotFoundError, InputError: as the loaders.
    """
    if source in DATASETS or _logicgraph_tier_spec(source) is not None:
        return load_dataset(source, data_dir, skip_bad=skip_bad, limit=limit)
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".json", ".parquet"):
        raise ValueError(
            f"{source!r} is neither a dataset ({', '.join(dataset_names())}) nor a .jsonl/.json/.parquet file"
        )
    if not path.is_file():
        raise FileNotFoundError(f"problem file {str(path)!r} not found")
    if suffix != ".json":
        return load_generic(path, dataset=dataset or "custom", skip_bad=skip_bad, limit=limit)
    data = _read_json_array(path)  # parsed once, handed to whichever loader applies
    if any(isinstance(r, dict) and "raw_logic_programs" in r for r in data):
        result = _load_logiclm_program_data(path, data, dataset=dataset, data_dir=data_dir, skip_bad=skip_bad)
        if limit is not None:
            _check_limit(limit)
            result = LoadResult(result.problems[:limit], result.errors, result.notes)
        return result
    return _load_generic_records(_array_records(path, data), dataset=dataset or "custom", skip_bad=skip_bad, limit=limit)
