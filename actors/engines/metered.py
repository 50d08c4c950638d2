"""A request log around any engine: when each LLM request was in flight, and what it cost.

:class:`MeteredEngine` wraps an :class:`~symbolkg.actors.engines.base.LLMEngine` and records one
:class:`RequestRecord` per request (submit and finish wall-clock times, tokens, whether the
cache answered, the error if any). The job writes the log beside its results
(:func:`write_request_log`) and ``symbolkg profile`` reads it for what the result rows cannot
tell: how many requests the engine had in flight over time (its batch occupancy), the
fraction of the run it was busy, and tokens/s over time.

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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

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


REQUEST_LOG_SCHEMA = pa.schema([
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
])


class MeteredEngine:
    """An engine that records every request it passes on (see the module docstring).

    Args:
        engine: the engine doing the work; ``model`` and ``supports_structured`` are its own.
    """

    def __init__(self, engine: LLMEngine) -> None:
        self.engine = engine
        self.model = engine.model
        self.supports_structured = engine.supports_structured
        self.records: list[RequestRecord] = []

    async def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        submitted = time.time()
        try:
            completions = await self.engine.generate(requests)
        except Exception as exc:
            finished = time.time()
            self.records.extend(RequestRecord(r.request_id, r.problem_id, r.purpose, submitted, finished,
                                              error=f"{type(exc).__name__}: {exc}"[:500]) for r in requests)
            raise
        finished = time.time()
        self.records.extend(RequestRecord(r.request_id, r.problem_id, r.purpose, submitted, finished,
                                          c.prompt_tokens, c.completion_tokens, c.cached,
                                          cached_prompt_tokens=None if c.cached else c.cached_prompt_tokens)
                            for r, c in zip(requests, completions))
        return completions

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
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(pa.Table.from_pylist([asdict(r) for r in records], schema=REQUEST_LOG_SCHEMA), tmp)
    os.replace(tmp, path)
    return path


def read_request_log(run: str | os.PathLike[str]) -> list[RequestRecord]:
    """Every session's request records of a run (empty when the run has no log)."""
    folder = request_log_dir(run)
    if not folder.is_dir():
        return []
    out: list[RequestRecord] = []
    for path in sorted(folder.glob("*.parquet")):
        out.extend(RequestRecord(**row) for row in pq.read_table(path).to_pylist())
    return out
