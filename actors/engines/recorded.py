"""An engine that answers formulation requests with recorded programs (the ``recorded`` backend).

Logic-LM published the programs GPT-4 wrote for its five dev sets
(``outputs/logic_programs/*_dev_gpt-4.json``). With this engine the LLM stage runs end to
end on those programs, without a model: a ``"formulate"`` request for problem ``X`` is
answered with the program recorded for ``X``, character for character.

Everything else is an :class:`EngineError`: the engine cannot write a *new* program, so a
``"refine"`` request (repair a program that failed) or an ``"answer"`` request has no
answer. A method treats that as "no repair available" and keeps its last outcome.

Token accounting: a recorded completion reports ``prompt_tokens=0`` and
``completion_tokens=0``. No generation happened in this run and the file does not say what
the original generation cost; reporting a word count instead would mix numbers that are not
tokens into throughput and cost reports. ``Completion.model`` (``"recorded:<file stem>"``)
says where the text came from, and ``cached`` stays False because it was not served by the
replay cache.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from symbolkg.actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError

FORMULATE = "formulate"
"""The only ``ChatRequest.purpose`` this engine answers."""


class RecordedEngine:
    """Answers ``"formulate"`` requests with the recorded program of ``request.problem_id``.

    Attributes:
        model: ``"recorded"`` or ``"recorded:<name>"``; part of every cache key.
        supports_structured: always False (the text is fixed; no constraint can apply).
        skipped: ids whose record had no program (only set by :meth:`from_logiclm_file`).
    """

    supports_structured: bool = False

    def __init__(self, programs: Mapping[str, str], *, model: str = "recorded", skipped: Sequence[str] = ()) -> None:
        """Build the engine from problem id -> program text.

        Args:
            programs: the recorded program of each problem id.
            model: the model name reported on completions.
            skipped: ids known to have no program (reported in error messages).

        Raises:
            ValueError: an empty model name, or an empty id or blank program in ``programs``
                (a blank program is "no program": leave the id out instead).
            TypeError: a non-string id or program.
        """
        if not model:
            raise ValueError("model must be a non-empty name (it is part of every cache key)")
        checked: dict[str, str] = {}
        for pid, text in programs.items():
            if not isinstance(pid, str) or not isinstance(text, str):
                raise TypeError(f"programs must map str -> str, got {type(pid).__name__} -> {type(text).__name__}")
            if not pid:
                raise ValueError("programs has an empty problem id")
            if not text.strip():
                raise ValueError(f"the program of problem {pid!r} is blank; leave problems without a program out")
            checked[pid] = text
        self.model = model
        self.skipped: tuple[str, ...] = tuple(skipped)
        self._programs = checked
        self._skipped_set = frozenset(self.skipped)
        self._closed = False

    @classmethod
    def from_logiclm_file(cls, path: str | os.PathLike[str], *, model: str | None = None) -> RecordedEngine:
        """Load a Logic-LM program file: a JSON array of ``{id, ..., raw_logic_programs: [text]}``.

        Each record maps ``id`` to ``raw_logic_programs[0]``. Records whose list is missing,
        empty, or whose first program is blank are skipped (listed in :attr:`skipped`):
        Logic-LM counts those problems as unexecuted, and so will the method, since the
        engine cannot formulate them.

        Args:
            path: the program file (``*_dev_gpt-4.json``).
            model: the model name; default ``"recorded:<file stem>"``
                (e.g. ``"recorded:FOLIO_dev_gpt-4"``).

        Raises:
            FileNotFoundError: no such file.
            ValueError: not JSON, not an array of objects, a record without a string ``id``,
                a duplicate id, or ``raw_logic_programs`` that is not a list of strings.
                The message names the file and the record's index.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"program file {str(path)!r} not found")
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not a JSON file: {exc}") from exc
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON array of records, got {type(data).__name__}")
        programs: dict[str, str] = {}
        skipped: list[str] = []
        seen: set[str] = set()
        for index, record in enumerate(data):
            where = f"{path}: record {index}"
            if not isinstance(record, dict):
                raise ValueError(f"{where}: expected an object, got {type(record).__name__}")
            pid = record.get("id")
            if not isinstance(pid, str) or not pid:
                raise ValueError(f"{where}: field 'id' must be a non-empty string, got {pid!r}")
            if pid in seen:
                raise ValueError(f"{where}: duplicate id {pid!r}")
            seen.add(pid)
            texts = record.get("raw_logic_programs")
            if texts is None:
                texts = []
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise ValueError(f"{where} ({pid!r}): field 'raw_logic_programs' must be a list of strings")
            if texts and texts[0].strip():
                programs[pid] = texts[0]
            else:
                skipped.append(pid)
        return cls(programs, model=model or f"recorded:{path.stem}", skipped=skipped)

    @property
    def programs(self) -> Mapping[str, str]:
        """The recorded programs, read-only."""
        return MappingProxyType(self._programs)

    def __len__(self) -> int:
        return len(self._programs)

    def __contains__(self, problem_id: object) -> bool:
        return problem_id in self._programs

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Answer each ``"formulate"`` request with its problem's recorded program.

        The batch fails as a whole on the first request that cannot be answered.

        Raises:
            EngineError: a request whose purpose is not ``"formulate"``, or whose problem has
                no recorded program.
            EngineDeadError: the engine was closed.
        """
        if self._closed:
            raise EngineDeadError(f"recorded engine {self.model!r} is closed")
        started = time.perf_counter()
        texts = [self._program_for(r) for r in requests]
        latency_s = time.perf_counter() - started
        return [Completion(text=t, latency_s=latency_s, finish_reason="stop", model=self.model) for t in texts]

    async def close(self) -> None:
        """Mark the engine closed; later ``generate`` calls raise EngineDeadError. Idempotent."""
        self._closed = True

    def _program_for(self, request: ChatRequest) -> str:
        if request.purpose != FORMULATE:
            what = "repair a program" if request.purpose == "refine" else f"answer a {request.purpose!r} request"
            raise EngineError(
                f"the recorded engine only answers formulation requests; it cannot {what} "
                f"(problem {request.problem_id!r}, request {request.request_id!r})"
            )
        text = self._programs.get(request.problem_id)
        if text is None:
            why = " (its record has no program)" if request.problem_id in self._skipped_set else ""
            raise EngineError(f"no recorded program for problem {request.problem_id!r}{why} in {self.model!r}")
        return text
