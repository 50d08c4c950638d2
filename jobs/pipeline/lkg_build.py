"""``symbolkg lkg build``: extract the Logical Knowledge Graphs of a corpus offline (precomputation).

It runs :func:`~symbolkg.jobs.methods.lkg_extract.extract_context` over the distinct contexts of a
dataset or corpus, many in flight through one engine (vLLM batches them), and streams each graph
into an :class:`~symbolkg.retrieval.lkg.store.LKGStore`. The store is also the cache: a context is
keyed by the hash of its text, the extracting model and the prompt version, so a rerun (or
another dataset with the same texts) skips the LLM for every context already stored, and a
killed build resumes where it stopped without duplicating a graph. A context whose extraction
ended with an engine error is reported but not stored, so a rerun asks again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from symbolkg.actors.engines.base import (
    LLMEngine,
)
from symbolkg.actors.engines.metered import MeteredEngine, prefix_cache_summary
from symbolkg.jobs.core.concurrency import for_each_in_flight
from symbolkg.jobs.core.results import Ledger
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.methods.lkg_extract import ContextJob, LKGConfig, context_jobs, extract_context, spent
from symbolkg.retrieval.lkg.schema import ContextRecord
from symbolkg.retrieval.lkg.store import LKGStore


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
) -> tuple[Ledger, dict[str, dict]]:
    """Extract every context of ``todo``, ``max_in_flight`` at a time, each graph stored as it finishes.

    Returns the token and call counts, and the rows of the contexts that had an engine error (not stored).
    """
    ledger = Ledger()
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
        ledger.merge(spent(record))
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
