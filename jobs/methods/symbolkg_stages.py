"""The SymbolKG method's stages: lkg -> retrieve -> route -> formalize -> solve -> refine -> answer.

SymbolLKG's pipeline, one problem at a time as an independent coroutine (the job runs many
at once, so the engine batches their LLM calls):

1. **lkg**: the Logical Knowledge Graph of the problem's context, from the LKG store, or
   extracted now (once per distinct context, even when several problems in flight share it)
   and stored, so the next run and the next question on the same story skip the LLM;
2. **retrieve**: LLM query entities -> dense and name anchors -> the logical hull -> LLM
   pruning (:func:`symbolkg.jobs.methods.symbolkg_retrieve.retrieve`), over that graph; the query is the question and
   its options. The search runs off the event loop, on the job's retrieval hosts (a worker
   thread, or index actors: :mod:`symbolkg.actors.retrieval_actor`), batched across problems in flight;
3. **premises**: the context sentences the kept nodes were read from, in text order; when
   the kept nodes cover no sentence (an empty graph, an empty hull) or retrieval is off
   (ablation), the whole context. Which one was used is recorded;
4. **route**: :func:`symbolkg.solvers.router.route` over the text features of the problem (the whole
   context: what kind of problem it is does not change with retrieval) and the counts of the
   pruned subgraph (constraints by type, rules, typed relations); an optional
   LLM vote; a forced solver for ablations. :func:`symbolkg.solvers.router.target_for` turns the
   solver into the program language the LLM writes and the one the pool runs;
5. **formalize / solve / refine**: the loop shared with ``logiclm``
   (:func:`symbolkg.jobs.methods.refine.formalize_solve_refine`), with the premises as the context and the
   subgraph's symbols (entities -> constants or variables, concepts -> predicates or sorts,
   rules, constraints) shown as hints.

Every intermediate lands in the result row: ``route``, ``trace`` (the LKG used, anchors, hull,
kept node ids, the route's rule and reasons, the premise sentences) and ``stage_seconds``.
Nothing here runs a program: the pool does, in worker processes.

The method itself (its flags; built on :func:`state_from_args`) is
:class:`symbolkg.jobs.methods.symbolkg.SymbolKGMethod`, which imports this module only when it is
built: the retrieval stack here (pyarrow, FAISS) is not needed to list its flags.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from symbolkg.actors.engines.base import (
    EngineDeadError,
    EngineError,
    LLMEngine,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.actors.retrieval_actor import EmbedderSpec, HostConfig, RetrievalService
from symbolkg.jobs.core.results import Ledger
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.methods.base import MethodContext
from symbolkg.jobs.methods.lkg_extract import ContextJob, LKGConfig, extract_context, spent
from symbolkg.jobs.methods.refine import formalize_solve_refine
from symbolkg.jobs.methods.symbolkg_choices import HINTS, INVALID_LKG
from symbolkg.jobs.methods.symbolkg_retrieve import RetrieveOutcome, retrieve
from symbolkg.retrieval.embed import Embedder, ModelNotFoundError, make_embedder
from symbolkg.retrieval.hull import HullConfig
from symbolkg.retrieval.lkg.canonical import split_sentences
from symbolkg.retrieval.lkg.schema import (
    STRUCTURAL_EDGE_TYPES,
    Concept,
    Constraint,
    ContextRecord,
    Entity,
    Graph,
    Rule,
    graph_counts,
)
from symbolkg.retrieval.lkg.store import LKGStore, cache_key
from symbolkg.retrieval.prune import PruneConfig
from symbolkg.solvers.router import (
    SOLVERS,
    Route,
    Target,
    combine_vote,
    parse_vote,
    route,
    target_for,
    text_features,
    vote_messages,
)

#: Retrievers (FAISS indexes of one context's graph) kept per retrieval host, least recently used dropped first.
MAX_RETRIEVERS = 256

#: Stages in pipeline order (the keys of ``stage_seconds``).
STAGES: tuple[str, ...] = ("lkg", "retrieve", "route", "formalize", "solve", "refine")


@dataclass(frozen=True)
class SymbolKGConfig:
    """The SymbolKG stages' settings; the switches are the paper's ablations.

    Attributes:
        retrieval: False = no retrieval: the whole context is formalized (and routed), the
            graph still gives the router its counts and the prompt its symbols.
        hops: depth k of the logical hull (a rule chain costs two hops per link: concept ->
            rule -> concept; ProntoQA-style chains want more than constraint puzzles).
        llm_entities: ask the LLM for the query entities (else lexical).
        prune: pruning settings; ``PruneConfig(enabled=False)`` = no pruning (the hull is kept).
        force_solver: ``z3`` / ``prover9`` / ``prolog`` whatever the router says; None = route.
        llm_vote: ask the LLM which solver fits; it may overrule only weak router rules.
        option_features: let the router read the answer options.
        stage_max_tokens: budget of the query-entity, pruning and vote requests.
        lkg: extraction settings for contexts the store does not hold.
        hints: which graphs show their symbols in the formalization prompt
            (:data:`~symbolkg.jobs.methods.symbolkg_choices.HINTS`):
            ``all`` (default), ``valid`` (only a graph that passed validation; an invalid one is
            what survived a cut or a bad output), ``none`` (ablation: the prompt is logiclm's).
        invalid_lkg: what an invalid graph is used for
            (:data:`~symbolkg.jobs.methods.symbolkg_choices.INVALID_LKG`): ``use`` (default: like a valid one) or
            ``skip`` (nothing: the whole context, routed on its text, no symbols, as for an empty LKG).
    """

    retrieval: bool = True
    hops: int = 4
    llm_entities: bool = True
    prune: PruneConfig = field(default_factory=PruneConfig)
    force_solver: str | None = None
    llm_vote: bool = False
    option_features: bool = True
    stage_max_tokens: int = 256
    lkg: LKGConfig = field(default_factory=LKGConfig)
    hints: str = "all"
    invalid_lkg: str = "use"

    def host_config(self, store_path: str | os.PathLike[str], embedder: EmbedderSpec | None = None) -> HostConfig:
        """The retrieval hosts' settings: the hull of ``hops`` cut to what pruning may show,
        node embeddings cached in ``STORE/embeddings``; ``embedder`` for hosts that build their own."""
        return HostConfig(
            embedder or EmbedderSpec(),
            cache_path=os.fspath(Path(store_path) / "embeddings"),
            hull=HullConfig(k=self.hops, max_nodes=self.prune.max_shown),
            max_retrievers=MAX_RETRIEVERS,
        )

    def __post_init__(self) -> None:
        if self.force_solver is not None and self.force_solver not in SOLVERS:
            raise ValueError(f"force_solver must be one of {', '.join(SOLVERS)}, got {self.force_solver!r}")
        if self.hints not in HINTS:
            raise ValueError(f"hints must be one of {', '.join(HINTS)}, got {self.hints!r}")
        if self.invalid_lkg not in INVALID_LKG:
            raise ValueError(f"invalid_lkg must be one of {', '.join(INVALID_LKG)}, got {self.invalid_lkg!r}")
        if self.hops < 0:
            raise ValueError(f"hops must be >= 0, got {self.hops}")
        if self.stage_max_tokens < 1:
            raise ValueError(f"stage_max_tokens must be >= 1, got {self.stage_max_tokens}")


@dataclass(frozen=True)
class ProblemGraph:
    """A problem's LKG and where it came from.

    Attributes:
        key: the context's cache key (text, model, prompt version).
        graph: the graph (empty for an empty context or a failed extraction).
        record: the store's record (status, issues, tokens); None when nothing was stored.
        source: ``store`` (a hit), ``extracted`` (by this problem's request), ``shared`` (extracted
            for another problem in flight with the same context), ``llm_error`` (the engine failed:
            not stored, a rerun asks again) or ``empty`` (no context).
    """

    key: str
    graph: Graph
    record: ContextRecord | None
    source: str


class SymbolKG:
    """The per-job state of the method: the LKG store, the extractions in flight, the retrieval hosts.

    Args:
        store: the LKG store (read, and written for contexts extracted now).
        embedder: embeds graph nodes and queries (node vectors are cached in ``STORE/embeddings``) in
            a worker thread of this process; None when ``retrieval`` is given.
        config: the stage settings.
        retrieval: where searches run (e.g. :meth:`RetrievalService.actors` over
            :meth:`SymbolKGConfig.host_config`); None = one host in a worker thread with ``embedder``.
            Closed with the job.
    """

    def __init__(
        self,
        store: LKGStore,
        embedder: Embedder | None,
        config: SymbolKGConfig | None = None,
        *,
        retrieval: RetrievalService | None = None,
    ) -> None:
        self.store = store
        self.config = config or SymbolKGConfig()
        self._extracting: dict[str, asyncio.Task] = {}
        if retrieval is None:
            if embedder is None:
                raise ValueError("SymbolKG needs an embedder or a retrieval service")
            retrieval = RetrievalService.local(self.config.host_config(store.path), embedder)
        self.retrieval = retrieval

    # -- lkg --------------------------------------------------------------------------------
    async def graph_for(self, problem: Problem, engine: LLMEngine, ledger: Ledger) -> ProblemGraph:
        """The LKG of ``problem``'s context: from the store, or extracted once and stored.

        Raises:
            EngineDeadError: the engine died during an extraction.
        """
        key = cache_key(problem.context, engine.model, self.config.lkg.prompt_version)
        if not problem.context.strip():
            return ProblemGraph(key, Graph(key), None, "empty")
        if key not in self._extracting and self.store.has(key):
            self.store.link_problems(key, [problem.id])
            return ProblemGraph(key, self.store.get(key) or Graph(key), self.store.context(key), "store")
        owner = key not in self._extracting
        if owner:
            job = ContextJob(key, problem.context, (problem.id,))
            self._extracting[key] = asyncio.ensure_future(self._extract_and_store(job, engine))
        record, graph = await asyncio.shield(self._extracting[key])
        if any(e.kind == "llm_error" for e in record.errors):
            if owner:
                self._extracting.pop(key, None)  # not stored: the next problem (or run) asks again
            return ProblemGraph(key, graph, record, "llm_error")
        if owner:  # the extraction's tokens are this problem's; sharers add nothing
            ledger.merge(spent(record))
        else:
            self.store.link_problems(key, [problem.id])
        return ProblemGraph(key, graph, record, "extracted" if owner else "shared")

    async def _extract_and_store(self, job: ContextJob, engine: LLMEngine) -> tuple[ContextRecord, Graph]:
        """Extract one context; store it unless the engine failed (stored before any waiter resumes)."""
        record, graph = await extract_context(job, engine, self.config.lkg)
        if not any(e.kind == "llm_error" for e in record.errors):
            self.store.put(record, graph)
        return record, graph

    def close(self) -> None:
        """Commit what was extracted (the graphs) to the store; stop the retrieval hosts."""
        try:
            self.store.flush()
        finally:
            self.retrieval.close()


# --------------------------------------------------------------------------- premises and hints


def subgraph(graph: Graph, node_ids: Sequence[str]) -> Graph:
    """The nodes ``node_ids`` of ``graph`` and the edges among them."""
    keep = [n for n in (graph.node(i) for i in node_ids) if n is not None]
    ids = {n.id for n in keep}
    return Graph(
        graph.context_key, tuple(keep), tuple(e for e in graph.edges if e.source_id in ids and e.target_id in ids)
    )


def premise_sentences(context: str, sub: Graph) -> tuple[int, ...]:
    """Indices of the context sentences the subgraph's nodes and edges were read from, in text order."""
    n = len(split_sentences(context))
    found = {p.sentence for item in (*sub.nodes, *sub.edges) for p in item.provenance if 0 <= p.sentence < n}
    return tuple(sorted(found))


def _camel(name: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", name)
    out = "".join(w[:1].upper() + w[1:] for w in words)
    return out if out[:1].isalpha() else f"X{out}"


def _snake(name: str) -> str:
    out = "_".join(w.lower() for w in re.findall(r"[A-Za-z0-9]+", name))
    return out if out[:1].isalpha() else f"x_{out}"


#: per program language: (what an entity becomes, what a concept becomes, symbol style)
_ROLES: dict[str, tuple[str, str, Callable[[str], str]]] = {
    "logiclm-lp": ("constants", "predicates", _camel),
    "logiclm-fol": ("constants", "predicates", _camel),
    "logiclm-csp": ("variables", "value domains", _snake),
    "logiclm-smt": ("elements", "sorts (EnumSort)", _camel),
}


def subgraph_hints(sub: Graph, language: str, max_items: int = 24) -> str:
    """The subgraph's symbols as a prompt section: how the graph maps onto the program.

    Entities become constants (LP, FOL), variables (CSP) or sort elements (SMT); concepts become
    predicates, value domains or sorts; rules and constraints are listed as the axioms and
    assertions to write. Empty when the subgraph has no nodes.
    """
    if not sub.nodes:
        return ""
    entity_role, concept_role, style = _ROLES.get(language, ("constants", "predicates", _camel))
    entities = [n for n in sub.nodes if isinstance(n, Entity)][:max_items]
    concepts = [n for n in sub.nodes if isinstance(n, Concept)][:max_items]
    lines = ["Knowledge graph of these premises (use its symbols in the program):"]
    if entities:
        lines.append(f"- {entity_role}: " + ", ".join(style(n.name) for n in entities))
    if concepts:
        lines.append(f"- {concept_role}: " + ", ".join(style(n.name) for n in concepts))
    for rule in [n for n in sub.nodes if isinstance(n, Rule)][:max_items]:
        lines.append(f"- rule: {rule.expression}" + (f"  ({rule.description})" if rule.description else ""))
    for c in [n for n in sub.nodes if isinstance(n, Constraint)][:max_items]:
        lines.append(f"- {c.constraint_type} constraint: {c.raw_expression}")
    names = {n.id: n.name for n in (*entities, *concepts)}
    relations = [e for e in sub.edges if e.edge_type not in STRUCTURAL_EDGE_TYPES]
    for e in relations[:max_items]:
        lines.append(f"- relation: {e.edge_type}({names.get(e.source_id, '?')}, {names.get(e.target_id, '?')})")
    return "\n".join(lines)


# --------------------------------------------------------------------------- one problem


async def _vote(
    ctx: MethodContext, problem: Problem, context: str, cfg: SymbolKGConfig
) -> tuple[str | None, str | None]:
    """The LLM's solver vote (or None) and the error, if the call failed (not counted as a call)."""
    structured = StructuredOutput(choice=SOLVERS) if ctx.engine.supports_structured else None
    params = SamplingParams(max_tokens=min(8, cfg.stage_max_tokens))
    request = ctx.chat(
        problem,
        "route",
        vote_messages(context, problem.question, problem.options),
        params=params,
        structured=structured,
    )
    try:
        completion = (await ctx.engine.generate([request]))[0]
    except EngineDeadError:
        raise
    except EngineError as exc:
        return None, str(exc)
    ctx.ledger.add(completion)
    return parse_vote(completion.text), None


def _lkg_trace(pg: ProblemGraph) -> dict:
    record = pg.record
    return {
        "key": pg.key,
        "source": pg.source,
        "status": record.status if record else None,
        "nodes": len(pg.graph.nodes),
        "edges": len(pg.graph.edges),
        "issues": len(record.errors) if record else 0,
    }


def _retrieve_trace(out: RetrieveOutcome) -> dict:
    return {
        "entities": list(out.entities),
        "entities_source": out.entities_source,
        "anchors": list(out.anchors),
        "hull": list(out.hull),
        "kept": list(out.pruned),
        "prune_source": out.prune_source,
        "errors": list(out.errors),
    }


def _route_trace(r: Route) -> dict:
    f = r.features
    return {
        "solver": r.solver,
        "rule": r.rule,
        "reasons": list(r.reasons),
        "features": {
            "options_kind": f.options_kind,
            "n_options": f.n_options,
            "ordering_words": f.ordering_words,
            "assignment_question": f.assignment_question,
            "numbers": f.numbers,
            "quantifiers": f.quantifiers,
            "disjunctive_sentences": f.disjunctive_sentences,
            "sentences": f.sentences,
            "graph_constraints": dict(f.graph_constraints),
            "graph_rules": f.graph_rules,
            "graph_relations": f.graph_relations,
        },
    }


@dataclass(frozen=True)
class Premises:
    """What the retrieve stage hands on: the subgraph and the premises to formalize.

    Attributes:
        sub: the kept nodes' subgraph (the whole LKG when retrieval did not run).
        context: the premise sentences in text order, or the whole context (``trace["source"]`` says why).
        retrieved: the row's ``trace["retrieve"]`` (None when retrieval did not run).
        trace: the row's ``trace["premises"]``: ``source``, the sentence indices, ``of`` how many.
    """

    sub: Graph
    context: str
    retrieved: dict | None
    trace: dict


def choose_premises(problem: Problem, graph: Graph, out: RetrieveOutcome | None, retrieval: bool = True) -> Premises:
    """The premises of ``problem``: the context sentences the kept nodes cite, else the whole context.

    Args:
        problem: its context is split into sentences.
        graph: the problem's LKG.
        out: the retrieve stage's outcome; None when it did not run (``retrieval`` off, or an empty LKG).
        retrieval: the ablation switch (only says why the whole context is used when ``out`` is None).
    """
    if out is None:
        sub, sentences, retrieved = graph, (), None
        source = "whole: retrieval off" if not retrieval else "whole: empty LKG"
    else:
        sub, retrieved = subgraph(graph, out.pruned), _retrieve_trace(out)
        sentences = premise_sentences(problem.context, sub)
        if out.search_error is not None:
            source = "whole: search failed"
        else:
            source = "subgraph" if sentences else "whole: the kept nodes cite no sentence"
    all_sentences = split_sentences(problem.context)
    context = " ".join(all_sentences[i] for i in sentences) if sentences else problem.context
    return Premises(sub, context, retrieved, {"source": source, "sentences": list(sentences), "of": len(all_sentences)})


async def retrieve_premises(problem: Problem, ctx: MethodContext, kg: SymbolKG, pg: ProblemGraph) -> Premises:
    """The retrieve stage over the problem's LKG (when on and the LKG has nodes), then :func:`choose_premises`.

    The stage's LLM calls and tokens go into ``ctx.ledger``.

    Raises:
        EngineDeadError: the engine is gone.
    """
    opts = kg.config
    if opts.invalid_lkg == "skip" and pg.record is not None and pg.record.status == "invalid":
        whole = choose_premises(problem, Graph(pg.key), None, opts.retrieval)
        return dataclasses.replace(whole, trace={**whole.trace, "source": "whole: invalid LKG skipped"})
    if not (opts.retrieval and pg.graph.nodes):
        return choose_premises(problem, pg.graph, None, opts.retrieval)
    out = await retrieve(
        ctx.engine,
        functools.partial(kg.retrieval.search, pg.key, pg.graph),
        pg.graph,
        " ".join([problem.question, *problem.options]),
        problem_id=problem.id,
        llm_entities=opts.llm_entities,
        prune=opts.prune,
        max_tokens=opts.stage_max_tokens,
    )
    ctx.ledger.merge(out.llm)
    return choose_premises(problem, pg.graph, out)


@dataclass(frozen=True)
class Routed:
    """The route stage's decision: the solver, the languages it means, and a failed vote's error."""

    decided: Route
    target: Target
    vote_error: str | None = None

    def trace(self) -> dict:
        """The row's ``trace["route"]``."""
        t = self.target
        return {**_route_trace(self.decided), "language": t.language, "run_as": t.run_as, "language_reason": t.reason}


async def route_problem(problem: Problem, ctx: MethodContext, opts: SymbolKGConfig, premises: Premises) -> Routed:
    """The router over the problem's text and the subgraph's counts; the LLM's vote when asked; the target.

    Raises:
        EngineDeadError: the engine is gone (during the vote).
    """
    # the kind of problem does not change with retrieval: text features of the whole problem
    features = text_features(problem.context, problem.question, problem.options, use_options=opts.option_features)
    features = features.with_graph(*graph_counts(premises.sub))
    decided = route(features, force=opts.force_solver)  # type: ignore[arg-type]
    error = None
    if opts.llm_vote and opts.force_solver is None:
        vote, error = await _vote(ctx, problem, premises.context, opts)
        decided = combine_vote(decided, vote)
    return Routed(decided, target_for(decided.solver, problem.question), error)


async def run_symbolkg(problem: Problem, ctx: MethodContext, kg: SymbolKG) -> ResultRow:
    """One problem through every SymbolKG stage (module docstring); its result row with the trace.

    Raises:
        EngineDeadError: the engine is gone (the job stops; a rerun resumes).
    """
    seconds = dict.fromkeys(STAGES, 0.0)
    t_start = time.monotonic()
    t0 = time.perf_counter()
    pg = await kg.graph_for(problem, ctx.engine, ctx.ledger)
    seconds["lkg"] = time.perf_counter() - t0
    trace: dict = {"lkg": _lkg_trace(pg)}

    t0 = time.perf_counter()
    premises = await retrieve_premises(problem, ctx, kg, pg)
    trace["retrieve"], trace["premises"] = premises.retrieved, premises.trace
    seconds["retrieve"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    routed = await route_problem(problem, ctx, kg.config, premises)
    if routed.vote_error:
        trace["route_vote_error"] = routed.vote_error
    trace["route"] = routed.trace()
    seconds["route"] = time.perf_counter() - t0

    target = routed.target
    valid = pg.record is not None and pg.record.status == "valid"
    shown = kg.config.hints == "all" or (kg.config.hints == "valid" and valid)
    trace["hints"] = hints = subgraph_hints(premises.sub, target.language) if shown else ""
    f = await formalize_solve_refine(
        problem, ctx, language=target.language, run_as=target.run_as, context=premises.context, hints=hints
    )
    seconds.update(f.seconds)
    if f.fixed_point is not None:
        trace["refine_fixed_point"] = f.fixed_point
    return f.row(
        problem,
        ctx,
        language=target.run_as,
        latency_s=time.monotonic() - t_start,
        route=routed.decided.solver,
        trace=trace,
        stage_seconds=seconds,
    )


# --------------------------------------------------------------------------- from the command line


def config_from_args(args: argparse.Namespace) -> SymbolKGConfig:
    """The :class:`SymbolKGConfig` of ``solve --method symbolkg``'s flags. Raises ValueError."""
    if args.lkg_max_tokens < 1:
        raise ValueError(f"--lkg-max-tokens must be >= 1, got {args.lkg_max_tokens}")
    lkg = LKGConfig(
        max_repair_rounds=args.lkg_repair_rounds,
        chunk_chars=args.lkg_chunk_chars,
        params=SamplingParams(max_tokens=args.lkg_max_tokens),
        structured=not args.no_structured,
    )
    prune = PruneConfig(enabled=not args.no_prune, cap=args.prune_cap)
    return SymbolKGConfig(
        retrieval=not args.no_retrieval,
        hops=args.hops,
        prune=prune,
        force_solver=args.force_solver,
        llm_vote=args.llm_vote,
        option_features=not args.no_option_features,
        stage_max_tokens=args.stage_max_tokens,
        lkg=lkg,
        hints=args.lkg_hints,
        invalid_lkg=args.invalid_lkg,
    )


def state_from_args(args: argparse.Namespace) -> SymbolKG:
    """The per-job state ``solve --method symbolkg``'s flags describe: the LKG store at ``--lkg-store``,
    searched in a worker thread or in ``--retrieval-actors`` Ray actors
    (:meth:`symbolkg.jobs.methods.symbolkg.SymbolKGMethod.from_args` builds the method on it).

    Raises:
        ValueError: a bad flag value, or the embedder's model cannot be found.
    """
    config = config_from_args(args)
    if args.retrieval_actors < 0 or (args.embedder_actor and not args.retrieval_actors):
        raise ValueError("--retrieval-actors must be >= 0, and --embedder-actor needs --retrieval-actors")
    try:
        store = LKGStore(args.lkg_store)
        if args.retrieval_actors:
            spec = EmbedderSpec(args.embedder, args.embedder_path)
            spec.build()  # fail here, with the reason, rather than in every actor
            service = RetrievalService.actors(
                config.host_config(store.path, spec),
                args.retrieval_actors,
                embedder_actor=args.embedder_actor,
                embedder_gpus=args.embedder_gpus,
                address=getattr(args, "ray_address", None),
            )
            return SymbolKG(store, None, config, retrieval=service)
        return SymbolKG(store, make_embedder(args.embedder, args.embedder_path), config)
    except ModelNotFoundError as exc:
        raise ValueError(str(exc)) from exc
