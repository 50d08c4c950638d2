"""The retrieve stage: LLM query entities -> hybrid anchors + hull -> LLM pruning.

Stage code (the only place these LLM calls are made; :mod:`retrieval` builds the prompts and
parses the answers). Every LLM step has a recorded fallback, so a bad or failed call degrades
the result instead of losing the problem:

* query entities: the LLM's list, filtered to mentions that occur in the question; on an engine
  error or unusable output, :func:`~symbolkg.retrieval.anchors.lexical_query_entities`;
* pruning: the LLM's selection of hull nodes (structured output: handles as an enum, capped);
  on an engine error, unusable output or ``PruneConfig(enabled=False)``, the hull itself.

The search itself (anchors + hull) runs inline on a :class:`~symbolkg.retrieval.hybrid.HybridRetriever`, or
elsewhere through an :data:`AsyncSearch` (the job's retrieval hosts); a failed search is recorded
as an error with no anchors and no hull, and the job falls back to the whole context.

:class:`RetrieveOutcome` records which path each step took, the node ids at every step, tokens
and seconds, so a result can show why its premises were chosen.

Example:
    >>> import asyncio
    >>> from symbolkg.actors.engines.scripted import ScriptedEngine
    >>> from symbolkg.retrieval.embed import HashingEmbedder
    >>> from symbolkg.retrieval.hybrid import HybridRetriever
    >>> from symbolkg.retrieval.lkg.schema import Edge, Entity, Graph, Rule
    >>> ann, rule = Entity.create("Ann"), Rule.create("teacher(x) -> kind(x)", "every teacher is kind")
    >>> graph = Graph("ctx", (ann, rule), (Edge(rule.id, ann.id, "MENTIONS"),))
    >>> retriever = HybridRetriever.from_graphs([graph], HashingEmbedder())
    >>> engine = ScriptedEngine(lambda r: '{"entities": ["Ann"]}' if r.purpose == "query-entities"
    ...                         else '{"keep": ["N2"]}')
    >>> out = asyncio.run(retrieve(engine, retriever, graph, "Is Ann kind?", problem_id="p1"))
    >>> out.entities_source, out.pruned == (rule.id,), out.prune_source
    ('llm', True, 'llm')
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from symbolkg.actors.engines.base import (
    ChatRequest,
    EngineDeadError,
    EngineError,
    LLMEngine,
    Message,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.actors.retrieval_actor import RetrievalError
from symbolkg.retrieval.anchors import (
    QUERY_ENTITY_SCHEMA,
    lexical_query_entities,
    parse_query_entities,
    query_entity_messages,
)
from symbolkg.retrieval.hybrid import HybridRetriever, Retrieval
from symbolkg.retrieval.lkg.schema import Graph
from symbolkg.retrieval.prune import PruneConfig, PrunePrompt, parse_pruned, unpruned

#: A search run elsewhere (question, query entities -> result), e.g. a bound
#: :meth:`symbolkg.actors.retrieval_actor.RetrievalService.search`: the job's way, off its event loop.
AsyncSearch = Callable[[str, Sequence[str]], Awaitable[Retrieval]]


@dataclass
class RetrieveOutcome:
    """Every intermediate of the retrieve stage for one problem.

    Attributes:
        entities: query entities used for name matching.
        entities_source: ``"llm"``, ``"lexical"`` (asked for) or ``"lexical-fallback"`` (the LLM failed).
        anchors: anchor node ids (priority order).
        hull: hull node ids (nearest first).
        pruned: node ids handed on (after pruning, or the hull when not pruned).
        prune_source: ``"llm"``, ``"disabled"``, ``"empty"`` (no hull: nothing to ask about), or
            ``"fallback"`` (the LLM failed; the hull is used).
        errors: what went wrong on the way (engine errors, unusable outputs, a failed search).
        search_error: why the search failed (no anchors, no hull); None when it ran.
        prompt_tokens / completion_tokens: LLM tokens of this stage.
        llm_calls / cached_calls: requests made, and how many a completion cache answered.
        llm_seconds: summed latency of those requests.
        seconds: step -> seconds (``entities``, ``retrieve``, ``prune``).
    """

    entities: tuple[str, ...] = ()
    entities_source: Literal["llm", "lexical", "lexical-fallback"] = "lexical"
    anchors: tuple[str, ...] = ()
    hull: tuple[str, ...] = ()
    pruned: tuple[str, ...] = ()
    prune_source: Literal["llm", "disabled", "empty", "fallback"] = "disabled"
    errors: list[str] = field(default_factory=list)
    search_error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    cached_calls: int = 0
    llm_seconds: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)


async def _ask(
    engine: LLMEngine, messages, schema: dict, purpose: str, problem_id: str, max_tokens: int, out: RetrieveOutcome
) -> str | None:
    """One structured call; the text, or None after recording why there is none."""
    structured = StructuredOutput(json_schema=schema) if engine.supports_structured else None
    request = ChatRequest(
        tuple(Message(role, content) for role, content in messages),  # type: ignore[arg-type]
        SamplingParams(max_tokens=max_tokens),
        structured,
        problem_id=problem_id,
        purpose=purpose,
        request_id=f"{problem_id}/{purpose}",
    )
    out.llm_calls += 1
    try:
        completion = (await engine.generate([request]))[0]
    except EngineDeadError:
        raise
    except EngineError as exc:
        out.errors.append(f"{purpose}: engine error: {exc}")
        return None
    out.prompt_tokens += completion.prompt_tokens
    out.completion_tokens += completion.completion_tokens
    out.cached_calls += int(completion.cached)
    out.llm_seconds += completion.latency_s
    return completion.text


async def retrieve(
    engine: LLMEngine | None,
    retriever: HybridRetriever | AsyncSearch,
    graph: Graph | Callable[[Sequence[str]], Graph],
    question: str,
    *,
    problem_id: str = "",
    llm_entities: bool = True,
    prune: PruneConfig | None = None,
    max_tokens: int = 256,
) -> RetrieveOutcome:
    """Run the retrieve stage for one question.

    Args:
        engine: the LLM (None: lexical entities and no pruning).
        retriever: the hybrid retriever over the LKG (searched inline: one-off queries), or an
            :data:`AsyncSearch` awaited for the result (a job with many problems in flight).
        graph: where the pruning prompt reads the hull's nodes: a graph holding them (the problem's LKG),
            or a function from node ids to their subgraph (e.g.
            :func:`~symbolkg.retrieval.hybrid.store_subgraph` on a store).
        question: the query.
        problem_id: for request ids and accounting.
        llm_entities: ask the LLM for the query entities (else lexical).
        prune: pruning settings (default :class:`PruneConfig`; ``enabled=False`` = no pruning).
        max_tokens: budget of each LLM call.

    Returns:
        The :class:`RetrieveOutcome`.

    Raises:
        EngineDeadError: the engine is gone (the job decides what to do with the problem).
    """
    prune = prune or PruneConfig()
    out = RetrieveOutcome()
    t0 = time.perf_counter()
    entities: list[str] | None = None
    if engine is not None and llm_entities:
        text = await _ask(
            engine, query_entity_messages(question), QUERY_ENTITY_SCHEMA, "query-entities", problem_id, max_tokens, out
        )
        if text is not None:
            entities = parse_query_entities(text, question)
            if entities is None:
                out.errors.append(f"query-entities: unusable output {text[:120]!r}")
            elif not entities:
                entities = None  # nothing from the question: fall back rather than match nothing
        out.entities_source = "llm" if entities is not None else "lexical-fallback"
    if entities is None:
        entities = lexical_query_entities(question)
    t1 = time.perf_counter()
    result: Retrieval | None = None
    if isinstance(retriever, HybridRetriever):
        result = retriever.retrieve(question, entities)
    else:
        try:
            result = await retriever(question, entities)
        except RetrievalError as exc:  # recorded: no anchors, no hull, nothing to prune
            out.search_error = str(exc)
            out.errors.append(f"search: {exc}")
    t2 = time.perf_counter()
    out.entities = tuple(entities)
    if result is not None:
        out.anchors = tuple(a.node_id for a in result.anchors)
        out.hull = tuple(result.hull.node_ids)
    if engine is None or not prune.enabled or not out.hull:
        out.prune_source = "disabled" if out.hull else "empty"
        out.pruned = unpruned(out.hull, prune).kept
    else:
        source = graph(out.hull) if callable(graph) else graph
        nodes = [n for n in (source.node(i) for i in out.hull) if n is not None]
        prompt = PrunePrompt.build(question, nodes, prune)
        text = await _ask(engine, prompt.messages, prompt.schema, "prune", problem_id, max_tokens, out)
        parsed = parse_pruned(text, prompt) if text is not None else None
        if parsed is not None and parsed.ok:
            out.prune_source = "llm"
            out.pruned = parsed.kept
        else:
            if parsed is not None:
                out.errors.append(f"prune: {parsed.error}")
            out.prune_source = "fallback"
            out.pruned = unpruned(out.hull, prune).kept
    t3 = time.perf_counter()
    out.seconds = {"entities": t1 - t0, "retrieve": t2 - t1, "prune": t3 - t2}
    return out
