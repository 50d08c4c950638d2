"""Extraction of one context's Logical Knowledge Graph (SymbolLKG's LKG construction, our prompt).

The symbolkg method's first stage, and what the offline build (:mod:`symbolkg.jobs.pipeline.lkg_build`)
runs over a corpus:

1. the context is cut into chunks of whole sentences (:func:`~symbolkg.retrieval.lkg.extract.chunk_context`);
2. each chunk is extracted as one JSON object (the chunks of a context concurrently),
   structured-decoded to the chunk's own JSON schema where the engine supports it;
3. the output is validated (:func:`~symbolkg.retrieval.lkg.extract.parse_extraction`); while issues
   remain and repair rounds are left, the model gets its output and the issues back;
4. the chunk graphs are merged by canonical id, keeping provenance.

The question is deliberately not shown: the graph is of the text, so every question on one
story (FOLIO has several) shares one extraction, and retrieval brings the question in later.
A context whose issues survive the last round is ``invalid`` with what passed validation and the
remaining issues. An engine error for a request is an ``llm_error`` issue. Nothing is guessed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from symbolkg.actors.engines.base import (
    ChatRequest,
    Completion,
    EngineDeadError,
    EngineError,
    LLMEngine,
    Message,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.actors.engines.repeats import FINISH_REASON as REPEAT
from symbolkg.jobs.core.results import Ledger
from symbolkg.jobs.core.rows import Problem
from symbolkg.retrieval.lkg.extract import (
    PROMPT_VERSION,
    chunk_context,
    chunk_schema,
    extraction_messages,
    parse_extraction,
    repair_messages,
)
from symbolkg.retrieval.lkg.merge import merge_graphs
from symbolkg.retrieval.lkg.schema import ContextRecord, Graph, ValidationIssue
from symbolkg.retrieval.lkg.store import cache_key
from symbolkg.retrieval.lkg.validate import ValidationResult


@dataclass(frozen=True)
class LKGConfig:
    """How contexts are extracted.

    Attributes:
        max_repair_rounds: repair requests per chunk after the first extraction (0 = none).
        chunk_chars: most characters per chunk; longer contexts are cut on sentence boundaries
            and the chunk graphs merged (keep a chunk's prompt + output inside the model's
            context length).
        params: sampling of extraction and repair requests. Greedy by default, so a rerun
            without the cache gives the same graphs.
        structured: structured-decode to the extraction JSON schema where the engine supports it.
        prompt_version: part of the cache key; the prompt module's version by default.
    """

    max_repair_rounds: int = 2
    chunk_chars: int = 2000
    params: SamplingParams = field(default_factory=lambda: SamplingParams(max_tokens=1024))
    structured: bool = True
    prompt_version: str = PROMPT_VERSION

    def __post_init__(self) -> None:
        if self.max_repair_rounds < 0:
            raise ValueError(f"max_repair_rounds must be >= 0, got {self.max_repair_rounds}")
        if self.chunk_chars < 100:
            raise ValueError(f"chunk_chars must be >= 100, got {self.chunk_chars}")


@dataclass(frozen=True)
class ContextJob:
    """One distinct context to extract, with every problem that has it.

    Attributes:
        key: :func:`~symbolkg.retrieval.lkg.store.cache_key` of (text, model, prompt version).
        text: the context.
        problem_ids: the problems whose context this is (in input order).
    """

    key: str
    text: str
    problem_ids: tuple[str, ...]


def context_jobs(problems: Iterable[Problem], model: str, prompt_version: str = PROMPT_VERSION) -> list[ContextJob]:
    """The distinct non-empty contexts of ``problems``, in first-seen order.

    Raises:
        ValueError: duplicate problem ids.
    """
    by_text: dict[str, list[str]] = {}
    seen: set[str] = set()
    for p in problems:
        if p.id in seen:
            raise ValueError(f"duplicate problem id {p.id!r} in the input")
        seen.add(p.id)
        if p.context.strip():
            by_text.setdefault(p.context, []).append(p.id)
    return [ContextJob(cache_key(text, model, prompt_version), text, tuple(ids)) for text, ids in by_text.items()]


def spent(record: ContextRecord) -> Ledger:
    """The LLM calls, tokens and seconds the extraction of ``record``'s context cost."""
    return Ledger(
        prompt_tokens=record.prompt_tokens,
        completion_tokens=record.completion_tokens,
        calls=record.rounds,
        seconds=record.llm_seconds,
    )


def _cut_issue(completion: Completion, max_tokens: int) -> ValidationIssue | None:
    """Why a completion ended before its object did: the token limit (``max_tokens``), or a loop the engine stopped.

    A completion the cache answered carries no token count (it cost nothing this time), so the
    limit is said from the request, and a loop's length only when the completion knows it.
    """
    if completion.finish_reason == "length":
        return ValidationIssue(
            "$", "too_long", f"the output was cut at {max_tokens} tokens (the token limit); write a shorter object"
        )
    if completion.finish_reason == REPEAT:
        at = f" at {completion.completion_tokens} tokens" if completion.completion_tokens else ""
        return ValidationIssue(
            "$", "too_long", f"the output was cut{at} (it repeated one block over and over); write each item once"
        )
    return None


async def _extract_chunk(
    text: str,
    sentences: Sequence[str],
    first_sentence: int,
    key: str,
    engine: LLMEngine,
    cfg: LKGConfig,
    ledger: Ledger,
    request_id: str,
) -> tuple[Graph, tuple[ValidationIssue, ...]]:
    """Extract, validate and repair one chunk. Returns the best graph and its remaining issues."""
    structured = None
    if cfg.structured and engine.supports_structured:
        # the chunk's own schema: raw_text is one of its sentences, lists bounded by its size
        structured = StructuredOutput(json_schema=chunk_schema(sentences))
    pairs = extraction_messages(text)
    best: tuple[Graph, tuple[ValidationIssue, ...]] | None = None
    previous = None  # the last round's text
    for round_no in range(1, cfg.max_repair_rounds + 2):
        request = ChatRequest(
            tuple(Message(r, c) for r, c in pairs),
            cfg.params,
            structured,  # type: ignore[arg-type]
            problem_id=key,
            purpose="lkg-extract" if round_no == 1 else "lkg-repair",
            request_id=f"{request_id}/{round_no}",
        )
        try:
            completion = (await engine.generate([request]))[0]
        except EngineDeadError:
            raise
        except EngineError as exc:
            ledger.failed()  # a failed request is a call too
            issue = ValidationIssue("$", "llm_error", f"round {round_no}: {exc}")
            if best is None:
                return Graph(key), (issue,)
            return best[0], best[1] + (issue,)
        ledger.add(completion)
        result = parse_extraction(completion.text, text, key, sentence_offset=first_sentence)
        cut = _cut_issue(completion, request.params.max_tokens)
        if cut is not None and not result.ok:
            # say why the JSON is broken: the model ran out of tokens or into a loop, not out of syntax
            result = ValidationResult(result.graph, (cut, *result.errors))
        # Keep the round with the fewest issues (a repair can make things worse); ties go to
        # the later round, whose graph was made with the issue list in view.
        if best is None or len(result.errors) <= len(best[1]):
            best = (result.graph, tuple(result.errors))
        if result.ok:
            break
        if round_no > 1 and completion.text == previous and request.params.temperature == 0:
            break  # the repair wrote what it was shown: the next prompt would be this one again, answered alike
        previous = completion.text
        if round_no <= cfg.max_repair_rounds:
            pairs = repair_messages(text, completion.text, result.errors)
    assert best is not None  # the loop runs at least once
    return best


async def extract_context(job: ContextJob, engine: LLMEngine, cfg: LKGConfig) -> tuple[ContextRecord, Graph]:
    """Extract the LKG of one context: chunk, extract, validate, repair, merge.

    Args:
        job: the context and its problems.
        engine: the LLM backend (may be shared by many concurrent calls).
        cfg: extraction settings.

    Returns:
        The store record (status, remaining issues, tokens, rounds, LLM seconds) and the graph.

    Raises:
        EngineDeadError: the engine can serve no more requests.
    """
    ledger = Ledger()
    graphs: list[Graph] = []
    issues: list[ValidationIssue] = []
    chunks = chunk_context(job.text, cfg.chunk_chars)
    # The chunks of one context are independent requests: all in flight at once (the engine
    # batches them). A dead engine cancels the context's other chunks.
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(
                    _extract_chunk(
                        chunk.text,
                        chunk.sentences,
                        chunk.first_sentence,
                        job.key,
                        engine,
                        cfg,
                        ledger,
                        f"{job.key[:16]}/chunk{i}",
                    )
                )
                for i, chunk in enumerate(chunks)
            ]
    except BaseExceptionGroup as group_error:
        raise group_error.exceptions[0] from None
    for i, (graph, errors) in enumerate(task.result() for task in tasks):
        graphs.append(graph)
        prefix = f"chunk {i}: " if len(chunks) > 1 else ""
        issues.extend(ValidationIssue(e.path, e.kind, prefix + e.message) for e in errors)
    merged = merge_graphs(graphs, job.key)
    record = ContextRecord(
        key=job.key,
        problem_ids=job.problem_ids,
        status="invalid" if issues else "valid",
        errors=tuple(issues),
        model=engine.model,
        prompt_version=cfg.prompt_version,
        prompt_tokens=ledger.prompt_tokens,
        completion_tokens=ledger.completion_tokens,
        rounds=ledger.calls,
        llm_seconds=round(ledger.seconds, 4),
    )
    return record, merged
