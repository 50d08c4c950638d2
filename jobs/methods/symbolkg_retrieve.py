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
from symbolkg.jobs.core.results import Ledger
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
        llm: the LLM calls, tokens and seconds of this stage (failed requests counted as calls).
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
    llm: Ledger = field(default_factory=Ledger)
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StageLLM:
    """How the stage asks the LLM: one structured request per step, its ids and accounting by problem."""

    engine: LLMEngine
    problem_id: str = ""
    max_tokens: int = 256

    async def ask(self, messages, schema: dict, purpose: str, out: RetrieveOutcome) -> str | None:
        """One structured call; the text, or None after recording why there is none in ``out``.

        Raises:
            EngineDeadError: the engine is gone.
        """
        structured = StructuredOutput(json_schema=schema) if self.engine.supports_structured else None
        request = ChatRequest(
            tuple(Message(role, content) for role, content in messages),  # type: ignore[arg-type]
            SamplingParams(max_tokens=self.max_tokens),
            structured,
            problem_id=self.problem_id,
            purpose=purpose,
            request_id=f"{self.problem_id}/{purpose}",
        )
        try:
            completion = (await self.engine.generate([request]))[0]
        except EngineDeadError:
            raise
        except EngineError as exc:
            out.llm.failed()
            out.errors.append(f"{purpose}: engine error: {exc}")
            return None
        out.llm.add(completion)
        return completion.text


async def find_query_entities(llm: StageLLM | None, question: str, out: RetrieveOutcome) -> tuple[str, ...]:
    """The query entities: the LLM's (``llm``; None: lexical), else the lexical ones, ``out.entities_source`` set.

    An engine error, an unusable answer or an answer naming nothing of the question falls back to the
    lexical entities (``lexical-fallback``), the reason in ``out.errors``.
    """
    entities: list[str] | None = None
    if llm is not None:
        text = await llm.ask(query_entity_messages(question), QUERY_ENTITY_SCHEMA, "query-entities", out)
        if text is not None:
            entities = parse_query_entities(text, question)
            if entities is None:
                out.errors.append(f"query-entities: unusable output {text[:120]!r}")
            elif not entities:
                entities = None  # nothing from the question: fall back rather than match nothing
        out.entities_source = "llm" if entities is not None else "lexical-fallback"
    if entities is None:
        entities = lexical_query_entities(question)
    out.entities = tuple(entities)
    return out.entities


async def search_anchors(
    retriever: HybridRetriever | AsyncSearch, question: str, entities: Sequence[str], out: RetrieveOutcome
) -> None:
    """The search: ``out.anchors`` and ``out.hull``; a failed :data:`AsyncSearch` leaves both empty and
    says why in ``out.search_error``."""
    result: Retrieval | None = None
    if isinstance(retriever, HybridRetriever):
        result = retriever.retrieve(question, list(entities))
    else:
        try:
            result = await retriever(question, list(entities))
        except RetrievalError as exc:  # recorded: no anchors, no hull, nothing to prune
            out.search_error = str(exc)
            out.errors.append(f"search: {exc}")
    if result is not None:
        out.anchors = tuple(a.node_id for a in result.anchors)
        out.hull = tuple(result.hull.node_ids)


async def prune_hull(
    llm: StageLLM | None,
    graph: Graph | Callable[[Sequence[str]], Graph],
    question: str,
    prune: PruneConfig,
    out: RetrieveOutcome,
) -> None:
    """``out.pruned``: the hull nodes the LLM keeps, or the hull itself (``out.prune_source`` says which).

    No LLM, pruning off or an empty hull keep the hull (``disabled`` / ``empty``); a failed or unusable
    answer keeps it too (``fallback``, the reason in ``out.errors``).
    """
    if llm is None or not prune.enabled or not out.hull:
        out.prune_source = "disabled" if out.hull else "empty"
        out.pruned = unpruned(out.hull, prune).kept
        return
    source = graph(out.hull) if callable(graph) else graph
    nodes = [n for n in (source.node(i) for i in out.hull) if n is not None]
    prompt = PrunePrompt.build(question, nodes, prune)
    text = await llm.ask(prompt.messages, prompt.schema, "prune", out)
    parsed = parse_pruned(text, prompt) if text is not None else None
    if parsed is not None and parsed.ok:
        out.prune_source = "llm"
        out.pruned = parsed.kept
        return
    if parsed is not None:
        out.errors.append(f"prune: {parsed.error}")
    out.prune_source = "fallback"
    out.pruned = unpruned(out.hull, prune).kept


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
    llm = StageLLM(engine, problem_id, max_tokens) if engine is not None else None
    t0 = time.perf_counter()
    entities = await find_query_entities(llm if llm_entities else None, question, out)
    t1 = time.perf_counter()
    await search_anchors(retriever, question, entities, out)
    t2 = time.perf_counter()
    await prune_hull(llm, graph, question, prune, out)
    t3 = time.perf_counter()
    out.seconds = {"entities": t1 - t0, "retrieve": t2 - t1, "prune": t3 - t2}
    return out
