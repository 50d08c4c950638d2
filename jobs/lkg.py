"""The LKG jobs: extract Logical Knowledge Graphs from contexts (offline precomputation) and show one.

``symbolkg lkg build`` runs :func:`extract_context` over the distinct contexts of a dataset
or corpus, many in flight through one engine (vLLM batches them), and streams each graph
into an :class:`~symbolkg.retrieval.lkg.store.LKGStore`. The store is also the cache: a context is
keyed by the hash of its text, the extracting model and the prompt version, so a rerun (or
another dataset with the same texts) skips the LLM for every context already stored, and a
killed build resumes where it stopped without duplicating a graph.

Extraction of one context (SymbolLKG's LKG construction, our prompt):

1. the context is cut into chunks of whole sentences (:func:`~symbolkg.retrieval.lkg.extract.chunk_context`);
2. each chunk is extracted as one JSON object (the chunks of a context concurrently),
   structured-decoded to the chunk's own JSON schema where the engine supports it;
3. the output is validated (:func:`~symbolkg.retrieval.lkg.extract.parse_extraction`); while issues
   remain and repair rounds are left, the model gets its output and the issues back;
4. the chunk graphs are merged by canonical id, keeping provenance.

The question is deliberately not shown: the graph is of the text, so every question on one
story (FOLIO has several) shares one extraction, and retrieval brings the question in later.
A context whose issues survive the last round is stored ``invalid`` with what passed
validation and the remaining issues. An engine error for a request is an ``llm_error``
issue: the context is reported but not stored, so a rerun asks again. Nothing is guessed.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from symbolkg.actors.engines.base import (
    ChatRequest,
    EngineDeadError,
    EngineError,
    LLMEngine,
    Message,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.actors.engines.metered import MeteredEngine, prefix_cache_summary
from symbolkg.jobs.pipeline.concurrency import for_each_in_flight
from symbolkg.jobs.pipeline.rows import Problem
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
from symbolkg.retrieval.lkg.store import LKGStore, cache_key
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


@dataclass
class _Ledger:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    seconds: float = 0.0


async def _extract_chunk(
    text: str,
    sentences: Sequence[str],
    first_sentence: int,
    key: str,
    engine: LLMEngine,
    cfg: LKGConfig,
    ledger: _Ledger,
    request_id: str,
) -> tuple[Graph, tuple[ValidationIssue, ...]]:
    """Extract, validate and repair one chunk. Returns the best graph and its remaining issues."""
    structured = None
    if cfg.structured and engine.supports_structured:
        # the chunk's own schema: raw_text is one of its sentences, lists bounded by its size
        structured = StructuredOutput(json_schema=chunk_schema(sentences))
    pairs = extraction_messages(text)
    best: tuple[Graph, tuple[ValidationIssue, ...]] | None = None
    for round_no in range(1, cfg.max_repair_rounds + 2):
        request = ChatRequest(
            tuple(Message(r, c) for r, c in pairs),
            cfg.params,
            structured,  # type: ignore[arg-type]
            problem_id=key,
            purpose="lkg-extract" if round_no == 1 else "lkg-repair",
            request_id=f"{request_id}/{round_no}",
        )
        ledger.calls += 1  # a failed request is a call too
        try:
            completion = (await engine.generate([request]))[0]
        except EngineDeadError:
            raise
        except EngineError as exc:
            issue = ValidationIssue("$", "llm_error", f"round {round_no}: {exc}")
            if best is None:
                return Graph(key), (issue,)
            return best[0], best[1] + (issue,)
        ledger.prompt_tokens += completion.prompt_tokens
        ledger.completion_tokens += completion.completion_tokens
        ledger.seconds += completion.latency_s
        result = parse_extraction(completion.text, text, key, sentence_offset=first_sentence)
        if completion.finish_reason == "length" and not result.ok:
            # say why the JSON is broken: the model ran out of tokens, not out of syntax
            cut = ValidationIssue(
                "$",
                "too_long",
                f"the output was cut at {completion.completion_tokens} tokens "
                "(the token limit); write a shorter object",
            )
            result = ValidationResult(result.graph, (cut, *result.errors))
        # Keep the round with the fewest issues (a repair can make things worse); ties go to
        # the later round, whose graph was made with the issue list in view.
        if best is None or len(result.errors) <= len(best[1]):
            best = (result.graph, tuple(result.errors))
        if result.ok:
            break
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
    ledger = _Ledger()
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


@dataclass(frozen=True)
class BuildReport:
    """What ``symbolkg lkg build`` did (printed as a table, or as JSON with ``--json``).

    Attributes:
        problems: problems given.
        contexts: distinct contexts among them.
        nodes, edges: of the graphs of those contexts (stored now or before).
        valid, invalid: contexts whose graph validated / kept issues.
        cache_hits: contexts already in the store (no LLM call); ``cache_misses`` = extracted now.
        llm_failed: contexts (counted in ``invalid``) the engine failed on; not stored, so a
            rerun asks again.
        prompt_tokens, completion_tokens, llm_calls: spent by this run.
        llm_seconds: summed LLM latency of this run's requests.
        seconds_saved: summed LLM latency the cache hits cost when they were extracted.
        wall_seconds: this run, end to end.
        issue_kinds: remaining issue kind -> count, over the invalid contexts.
        model, prompt_version, store: what keyed the cache and where it lives.
        prefix_cache_hit_rate: share of this run's prompt tokens the engine served from its prefix
            cache (every chunk prompt starts with the same system message and worked example);
            None when the engine does not report it or nothing was extracted.
    """

    problems: int
    contexts: int
    nodes: int
    edges: int
    valid: int
    invalid: int
    cache_hits: int
    cache_misses: int
    llm_failed: int
    prompt_tokens: int
    completion_tokens: int
    llm_calls: int
    llm_seconds: float
    seconds_saved: float
    wall_seconds: float
    issue_kinds: dict[str, int]
    model: str
    prompt_version: str
    store: str
    prefix_cache_hit_rate: float | None = None

    @property
    def hit_rate(self) -> float:
        return self.cache_hits / self.contexts if self.contexts else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["cache_hit_rate"] = round(self.hit_rate, 4)
        d["tokens_per_second"] = round(self.completion_tokens / self.wall_seconds, 2) if self.wall_seconds else 0.0
        d["contexts_per_second"] = round(self.cache_misses / self.wall_seconds, 4) if self.wall_seconds else 0.0
        return d

    def format(self) -> str:
        d = self.to_dict()
        lines = [
            f"LKG build -> {self.store}  (model {self.model}, prompt {self.prompt_version})",
            f"  problems {self.problems}, distinct contexts {self.contexts}",
            f"  cache: {self.cache_hits} hits, {self.cache_misses} misses (hit rate {d['cache_hit_rate']:.0%}); "
            f"hits saved {self.seconds_saved:.1f} s of LLM time",
            f"  graphs: {self.valid} valid, {self.invalid} invalid; {self.nodes} nodes, {self.edges} edges",
            *(
                [f"  {self.llm_failed} context(s) failed in the engine: not stored, a rerun retries them"]
                if self.llm_failed
                else []
            ),
            f"  LLM: {self.llm_calls} calls, {self.prompt_tokens} prompt + {self.completion_tokens} completion tokens, "
            f"{d['tokens_per_second']} tok/s, {d['contexts_per_second']} contexts/s; prefix-cache hit rate "
            + ("unknown" if self.prefix_cache_hit_rate is None else f"{self.prefix_cache_hit_rate:.1%}"),
            f"  wall {self.wall_seconds:.1f} s",
        ]
        if self.issue_kinds:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.issue_kinds.items(), key=lambda kv: -kv[1]))
            lines.append(f"  remaining issues: {kinds}")
        return "\n".join(lines)


def _totals(
    jobs: Sequence[ContextJob], hit_keys: set[str], failed: dict[str, dict], store: LKGStore
) -> tuple[int, int, int, float, dict[str, int]]:
    """(nodes, edges, valid graphs, LLM seconds the cache hits saved, issue kind -> count) over ``jobs``."""
    nodes = edges = n_valid = 0
    saved = 0.0
    kinds: dict[str, int] = {}
    for job in jobs:
        row = failed.get(job.key) or store.context_row(job.key)
        if row is None:  # cannot happen after a clean run: every job was put
            raise RuntimeError(f"context {job.key} is missing from the store after the build")
        nodes += row["n_nodes"]
        edges += row["n_edges"]
        n_valid += row["status"] == "valid"
        if job.key in hit_keys:
            saved += row["llm_seconds"]
        if row["status"] != "valid":
            record = ContextRecord.from_row(row)
            for issue in record.errors:
                kinds[issue.kind] = kinds.get(issue.kind, 0) + 1
    return nodes, edges, n_valid, saved, kinds


async def run_lkg_build(
    problems: Sequence[Problem],
    store: LKGStore,
    engine: LLMEngine,
    cfg: LKGConfig,
    *,
    max_in_flight: int = 64,
    progress: bool = True,
) -> BuildReport:
    """Extract the LKG of every distinct context of ``problems`` that ``store`` does not hold yet.

    Contexts already stored are cache hits: their new problem ids are linked, nothing is
    asked of the LLM. Graphs stream into the store as contexts finish (committed in parts),
    so a killed build loses at most the uncommitted ones and a rerun extracts only those.

    Args:
        problems: the problems (ids unique); problems with an empty context are skipped.
        store: the LKG store (also the cache).
        engine: the LLM backend; its ``model`` is part of every cache key.
        cfg: extraction settings.
        max_in_flight: contexts extracted concurrently (keep it >= the engine's batch size).
        progress: progress bar on stderr.

    Returns:
        The :class:`BuildReport` of this run.

    Raises:
        EngineDeadError: the engine died; graphs finished so far are committed, a rerun resumes.
        ValueError: duplicate problem ids, or ``max_in_flight`` < 1.
    """
    if max_in_flight < 1:
        raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
    t0 = time.monotonic()
    jobs = context_jobs(problems, engine.model, cfg.prompt_version)
    hits = [j for j in jobs if store.has(j.key)]
    todo = [j for j in jobs if not store.has(j.key)]
    for job in hits:
        store.link_problems(job.key, job.problem_ids)
    metered = MeteredEngine(engine)  # each request's prefix-cache count, for the report
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(jobs), initial=len(hits), unit="context", dynamic_ncols=True, file=sys.stderr)
    try:
        ledger, failed = await _extract_contexts(todo, store, metered, cfg, max_in_flight, bar, t0)
    finally:
        store.flush()
        if bar is not None:
            bar.close()

    nodes, edges, n_valid, saved, kinds = _totals(jobs, {j.key for j in hits}, failed, store)
    return BuildReport(
        problems=len(problems),
        contexts=len(jobs),
        nodes=nodes,
        edges=edges,
        valid=n_valid,
        invalid=len(jobs) - n_valid,
        cache_hits=len(hits),
        cache_misses=len(jobs) - len(hits),
        llm_failed=len(failed),
        prompt_tokens=ledger.prompt_tokens,
        completion_tokens=ledger.completion_tokens,
        llm_calls=ledger.calls,
        llm_seconds=round(ledger.seconds, 3),
        seconds_saved=round(saved, 3),
        wall_seconds=round(time.monotonic() - t0, 3),
        issue_kinds=kinds,
        model=engine.model,
        prompt_version=cfg.prompt_version,
        store=str(store.path),
        prefix_cache_hit_rate=prefix_cache_summary(metered.records)["prefix_cache_hit_rate"],
    )


async def _extract_contexts(
    todo: Sequence[ContextJob],
    store: LKGStore,
    engine: LLMEngine,
    cfg: LKGConfig,
    max_in_flight: int,
    bar: Any,
    t0: float,
) -> tuple[_Ledger, dict[str, dict]]:
    """Extract every context of ``todo``, ``max_in_flight`` at a time, each graph stored as it finishes.

    Returns the token and call counts, and the rows of the contexts that had an engine error (not stored).
    """
    ledger = _Ledger()
    finished = valid = 0
    # Contexts with an engine error are reported but not stored: the store is a cache, and a
    # transient failure (a timeout, a restarting server) must not become a permanent answer.
    failed: dict[str, dict] = {}

    async def extract(job: ContextJob) -> None:
        nonlocal finished, valid
        record, graph = await extract_context(job, engine, cfg)
        if any(e.kind == "llm_error" for e in record.errors):
            failed[job.key] = {**record.to_row(), "n_nodes": len(graph.nodes), "n_edges": len(graph.edges)}
        else:
            store.put(record, graph)
        ledger.prompt_tokens += record.prompt_tokens
        ledger.completion_tokens += record.completion_tokens
        ledger.calls += record.rounds
        ledger.seconds += record.llm_seconds
        finished += 1
        valid += record.status == "valid"
        if bar is not None:
            elapsed = max(time.monotonic() - t0, 1e-9)
            bar.set_postfix(
                valid=f"{valid}/{finished}", tok_s=f"{ledger.completion_tokens / elapsed:.0f}", refresh=False
            )
            bar.update(1)

    await for_each_in_flight(todo, extract, max_in_flight)
    return ledger, failed


# --------------------------------------------------------------------------- show


def graph_to_dot(graph: Graph, title: str = "") -> str:
    """Graphviz DOT source of ``graph``: one shape and colour per node type, edges labelled by type."""
    styles = {
        "Entity": 'shape=box, style="rounded,filled", fillcolor="#dbeafe"',
        "Concept": 'shape=ellipse, style=filled, fillcolor="#dcfce7"',
        "Rule": 'shape=note, style=filled, fillcolor="#fef9c3"',
        "Constraint": 'shape=hexagon, style=filled, fillcolor="#fee2e2"',
    }

    def quote(text: str, limit: int = 60) -> str:
        text = text if len(text) <= limit else text[: limit - 1] + "…"
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'

    lines = [
        "digraph LKG {",
        "  rankdir=LR;",
        '  node [fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8];',
    ]
    if title:
        lines.append(f"  labelloc=t; label={quote(title, 120)};")
    for node in graph.nodes:
        kind = type(node).__name__
        label = _node_label(node)
        lines.append(f"  {quote(node.id, 100)} [label={quote(f'{kind}: {label}')}, {styles.get(kind, '')}];")
    for e in graph.edges:
        lines.append(f"  {quote(e.source_id, 100)} -> {quote(e.target_id, 100)} [label={quote(e.edge_type, 40)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node_label(node) -> str:
    for attr in ("name", "expression", "raw_expression"):
        value = getattr(node, attr, "")
        if value:
            return value
    return node.id


def render_dot(dot: str, fmt: str) -> bytes:
    """Run Graphviz ``dot`` on ``dot`` source (``fmt`` png or svg).

    Raises:
        RuntimeError: Graphviz is not installed (Debian: ``apt-get install graphviz``) or failed.
    """
    import shutil
    import subprocess

    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(
            "Graphviz 'dot' is not installed (apt-get install graphviz); "
            "use --out FILE.html for a page without the drawing"
        )
    done = subprocess.run([exe, f"-T{fmt}"], input=dot.encode(), capture_output=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"dot failed: {done.stderr.decode(errors='replace')[:500]}")
    return done.stdout


def graph_to_html(graph: Graph, record: ContextRecord | None, problem_id: str, context: str | None = None) -> str:
    """A self-contained HTML page: the drawing (inline SVG when Graphviz is installed) and node/edge tables."""
    import html

    esc = html.escape
    try:
        svg = render_dot(graph_to_dot(graph, problem_id), "svg").decode()
        svg = svg[svg.find("<svg") :]
    except RuntimeError as exc:
        svg = f"<p><em>{esc(str(exc))}</em></p>"
    rows = []
    for node in graph.nodes:
        prov = ", ".join(f"s{p.sentence}" for p in node.provenance)
        detail = {
            k: v
            for k, v in node.to_row("").items()
            if k not in ("context_key", "node_id", "node_type", "provenance") and v not in (None, "", [], {})
        }
        rows.append(
            f"<tr><td>{esc(type(node).__name__)}</td><td><code>{esc(node.id[:12])}</code></td>"
            f"<td>{esc(_node_label(node))}</td><td>{esc(str(detail))}</td><td>{esc(prov)}</td></tr>"
        )
    names = {n.id: _node_label(n) for n in graph.nodes}
    erows = [
        f"<tr><td>{esc(names.get(e.source_id, e.source_id))}</td><td>{esc(e.edge_type)}</td>"
        f"<td>{esc(names.get(e.target_id, e.target_id))}</td><td>{esc(e.raw_text)}</td></tr>"
        for e in graph.edges
    ]
    status = ""
    if record is not None:
        status = (
            f"<p>status <b>{esc(record.status)}</b>, model {esc(record.model)}, prompt {esc(record.prompt_version)}, "
            f"{record.rounds} LLM call(s), {record.prompt_tokens}+{record.completion_tokens} tokens</p>"
        )
        if record.errors:
            status += (
                "<ul>"
                + "".join(f"<li>{esc(e.path)} ({esc(e.kind)}): {esc(e.message)}</li>" for e in record.errors)
                + "</ul>"
            )
    ctx = f"<h2>Context</h2><p>{esc(context)}</p>" if context else ""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>LKG "
        f"{esc(problem_id)}</title><style>body{{font-family:sans-serif;margin:2em}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px;vertical-align:top}</style>"
        "</head><body>"
        f"<h1>LKG of {esc(problem_id)}</h1>{status}{ctx}{svg}"
        "<h2>Nodes</h2><table><tr><th>type</th><th>id</th><th>label</th><th>fields</th><th>sentences</th></tr>"
        + "".join(rows)
        + "</table><h2>Edges</h2><table><tr><th>source</th><th>type</th><th>target</th><th>raw text</th></tr>"
        + "".join(erows)
        + "</table></body></html>\n"
    )


def show(store: LKGStore, problem_id: str, out: Path, context: str | None = None) -> Graph:
    """Render the newest graph of ``problem_id`` to ``out`` (``.png`` or ``.html``).

    Raises:
        KeyError: the store has no graph for the problem.
        ValueError: ``out`` has another suffix.
        RuntimeError: PNG without Graphviz.
    """
    suffix = out.suffix.lower()
    if suffix not in (".png", ".html"):
        raise ValueError(f"--out must end in .png or .html, got {out.name!r}")
    graph = store.graph_for_problem(problem_id)
    if graph is None:
        raise KeyError(f"no graph for problem {problem_id!r} in {store.path}")
    record = store.context(graph.context_key)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".png":
        out.write_bytes(render_dot(graph_to_dot(graph, problem_id), "png"))
    else:
        out.write_text(graph_to_html(graph, record, problem_id, context), encoding="utf-8")
    return graph
