"""A request log around any engine: when each LLM request was in flight, and what it cost.

:class:`MeteredEngine` wraps an :class:`~symbolkg.actors.engines.base.LLMEngine` and records one
:class:`RequestRecord` per request (submit and finish wall-clock times, tokens, whether the
cache answered, the error if any). The log goes beside the job's results, streamed in files of a
few thousand records as they come (``MeteredEngine(engine, log_to=RUN)``, :meth:`MeteredEngine.flush_log`
at the end, so a job of any length holds only that many) or at once (:func:`write_request_log`),
and ``symbolkg profile`` reads it for what the result rows cannot tell: how many requests the engine
had in flight over time (its batch occupancy), the fraction of the run it was busy, and tokens/s
over time.

Example:
    >>> import asyncio
    >>> from symbolkg.actors.engines.base import ChatRequest, Message
    >>> from symbolkg.actors.engines.scripted import ScriptedEngine
    >>> engine = MeteredEngine(ScriptedEngine(lambda r: "ok"))
    >>> _ = asyncio.run(engine.generate([ChatRequest((Message("user", "hi"),), problem_id="p1", purpose="answer")]))
    >>> [(r.problem_id, r.purpose, r.error) for r in engine.records]
    [('p1', 'answer', None)]
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from symbolkg.actors.engines.base import ChatRequest, Completion, LLMEngine


@dataclass(frozen=True)
class RequestRecord:
    """One LLM request as the job saw it.

    Attributes:
        request_id, problem_id, purpose: from the :class:`~symbolkg.actors.engines.base.ChatRequest`.
        submitted, finished: UNIX times the job handed the request to the engine and got it back.
        prompt_tokens, completion_tokens: as the engine reported them (0 for cache hits).
        cached: a completion cache answered.
        error: the engine error's message; None when the request was answered.
        cached_prompt_tokens: prompt tokens the engine's prefix cache served; None when the
            engine cannot tell or the completion cache answered (logs written before the field
            existed read as None).
    """

    request_id: str
    problem_id: str
    purpose: str
    submitted: float
    finished: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    error: str | None = None
    cached_prompt_tokens: int | None = None


REQUEST_LOG_SCHEMA = pa.schema(
    [
        pa.field("request_id", pa.string()),
        pa.field("problem_id", pa.string()),
        pa.field("purpose", pa.string()),
        pa.field("submitted", pa.float64(), nullable=False),
        pa.field("finished", pa.float64(), nullable=False),
        pa.field("prompt_tokens", pa.int64(), nullable=False),
        pa.field("completion_tokens", pa.int64(), nullable=False),
        pa.field("cached", pa.bool_(), nullable=False),
        pa.field("error", pa.string()),
        pa.field("cached_prompt_tokens", pa.int64()),
    ]
)


REQUEST_LOG_FLUSH_RECORDS = 4096
"""Records a :class:`MeteredEngine` with a run to log to holds before it writes them out."""


class MeteredEngine:
    """An engine that records every request it passes on (see the module docstring).

    Args:
        engine: the engine doing the work; ``model`` and ``supports_structured`` are its own.
        log_to: the run (results path) whose request-log folder (:func:`request_log_dir`) receives
            the records as they come, in files of ``flush_records`` (the rest at :meth:`flush_log`),
            so a job of any length holds at most that many; None: every record stays in
            :attr:`records`.
        flush_records: records held before they are written (with ``log_to``), >= 1.

    Attributes:
        records: without ``log_to``, every record; with it, those not written yet.
        logged: records written to the request log so far.
    """

    def __init__(
        self,
        engine: LLMEngine,
        *,
        log_to: str | os.PathLike[str] | None = None,
        flush_records: int = REQUEST_LOG_FLUSH_RECORDS,
    ) -> None:
        if flush_records < 1:
            raise ValueError(f"flush_records must be >= 1, got {flush_records}")
        self.engine = engine
        self.model = engine.model
        self.supports_structured = engine.supports_structured
        self.records: list[RequestRecord] = []
        self.logged = 0
        self._log_to = Path(log_to) if log_to is not None else None
        self._flush_records = flush_records
        self._file_stem = f"session-{int(time.time() * 1000)}-{os.getpid()}"
        self._files = 0

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        submitted = time.time()
        try:
            completions = await self.engine.generate(requests)
        except Exception as exc:
            finished = time.time()
            self.records.extend(
                RequestRecord(
                    r.request_id,
                    r.problem_id,
                    r.purpose,
                    submitted,
                    finished,
                    error=f"{type(exc).__name__}: {exc}"[:500],
                )
                for r in requests
            )
            self._maybe_flush()
            raise
        finished = time.time()
        self.records.extend(
            RequestRecord(
                r.request_id,
                r.problem_id,
                r.purpose,
                submitted,
                finished,
                c.prompt_tokens,
                c.completion_tokens,
                c.cached,
                cached_prompt_tokens=None if c.cached else c.cached_prompt_tokens,
            )
            for r, c in zip(requests, completions, strict=True)
        )
        self._maybe_flush()
        return completions

    def _maybe_flush(self) -> None:
        if self._log_to is not None and len(self.records) >= self._flush_records:
            self.flush_log()

    def flush_log(self) -> Path | None:
        """Write the records held to the next file of this session's log (with ``log_to``; else None)."""
        if self._log_to is None or not self.records:
            return None
        folder = request_log_dir(self._log_to)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self._file_stem}-{self._files:06d}.parquet"
        _write_records(self.records, path)
        self._files += 1
        self.logged += len(self.records)
        self.records = []
        return path

    async def close(self) -> None:
        await self.engine.close()


def prefix_cache_summary(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """The prefix-cache hit rate of the requests an engine served: cached prompt tokens / prompt tokens.

    Counts only requests the engine answered (not completion-cache hits, not errors) and that
    report a cached count. ``prefix_cache_hit_rate`` is None when none does (the engine cannot
    tell: unknown, not zero); ``requests_unknown`` says how many were left out for that reason.
    """
    served = [r for r in records if not r.cached and r.error is None]
    known = [r for r in served if r.cached_prompt_tokens is not None]
    prompt = sum(r.prompt_tokens for r in known)
    hit = sum(r.cached_prompt_tokens or 0 for r in known)
    return {
        "prefix_cache_hit_rate": round(hit / prompt, 4) if known and prompt else None,
        "prompt_tokens": prompt,
        "cached_prompt_tokens": hit,
        "requests_known": len(known),
        "requests_unknown": len(served) - len(known),
    }


def request_log_dir(run: str | os.PathLike[str]) -> Path:
    """Where a run's request logs live: ``RUN.parquet.requests/``, one file per job session."""
    run = Path(run)
    return run.with_name(run.name + ".requests")


def write_request_log(run: str | os.PathLike[str], records: Sequence[RequestRecord]) -> Path | None:
    """Write one session's request log beside the run; None when there is nothing to write."""
    if not records:
        return None
    folder = request_log_dir(run)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"session-{int(time.time() * 1000)}-{os.getpid()}.parquet"
    _write_records(records, path)
    return path


def _write_records(records: Sequence[RequestRecord], path: Path) -> None:
    """The records as one Parquet file of :data:`REQUEST_LOG_SCHEMA`, renamed into place."""
    columns = {name: [getattr(r, name) for r in records] for name in REQUEST_LOG_SCHEMA.names}
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(pa.table(columns, schema=REQUEST_LOG_SCHEMA), tmp)
    os.replace(tmp, path)


def read_request_log(run: str | os.PathLike[str]) -> list[RequestRecord]:
    """Every session's request records of a run (empty when the run has no log)."""
    folder = request_log_dir(run)
    if not folder.is_dir():
        return []
    out: list[RequestRecord] = []
    for path in sorted(folder.glob("*.parquet")):
        out.extend(RequestRecord(**row) for row in pq.read_table(path).to_pylist())
    return out
