"""The simulated pipeline benchmark: the real orchestrator at cluster scale on one machine.

The command line is :mod:`symbolkg.jobs.commands.bench`; this module is the benchmark.

``symbolkg bench pipeline --simulated`` runs synthetic problems through the real batch job
(:func:`symbolkg.jobs.pipeline.method_job.run_method_job`, method ``logiclm``: formulate -> solve -> refine,
a real :class:`~symbolkg.jobs.pipeline.store.ResultStore`) against ``E``
:class:`~symbolkg.actors.engines.simulated.SimulatedEngine` replicas behind a
:class:`~symbolkg.actors.engines.balanced.BalancedEngine` and a :class:`SimulatedSolverPool`. Only
the backends are simulated; every coroutine, prompt, program extraction, result row and Parquet
write is the real code, running in real time scaled by ``time_scale`` (see
:class:`~symbolkg.actors.engines.simulated.SimClock`). All rates are per simulated second.

It reports the achieved throughput against what the engines allow
(:attr:`PipelineRun.capacity_problems_per_second`), and the same pipeline run one problem
at a time (the papers' way) on a subset, for the ratio.

Reading the efficiency: the gap to 1 is (a) the start and the drain at the end (the last
problems, some with repair rounds, run on emptying engines; it shrinks with more problems),
(b) the store's finalize after the last row, and (c) engine timers firing late while the
event loop is busy with the orchestrator (``late_share_of_service``). (b) and (c) are real
CPU time, which simulated time magnifies ``1 / time_scale``-fold: at a time scale of 0.1
they weigh ten times what they would on a cluster, so the efficiency measured here is a
lower bound, and a time scale too small measures this machine's CPU rather than the design.

The workload (deterministic given the seed):

* problems ``sim-00000``.. of dataset ``logiclm/prontoqa`` (LP programs), each with a
  generated context of 60-180 words; prompts are the real formulation and repair prompts;
* every program the "LLM" writes is a well-formed LP program of a length drawn uniformly
  from ``completion_tokens`` (default 150-450 tokens, like Logic-LM's programs);
* the simulated solver rejects a problem's first program with probability
  ``refine_fraction``, and each repaired one again with that probability (so with 0.2:
  80 % of problems need one LLM call, 16 % two, 3.2 % three, ...); a problem whose every
  program fails stays unanswered, as in a real run.

Prefix caching. Each engine has a prefix cache (:class:`~symbolkg.actors.engines.simulated.PrefixCacheConfig`;
default :data:`~symbolkg.actors.engines.simulated.LLAMA_3_3_70B_4XH100_PREFIX_CACHE`, ``--no-prefix-cache``
turns it off). The prompts are the real Logic-LM ones, so they share what real ones share: every
formulation and repair prompt starts with the same system message and few-shot examples (546 of
a formulation prompt's ~700-800 tokens), then the problem; a repair prompt also repeats its
problem's text, which its formulation prompt put in the cache. The report gives the hit rate
(cached / prompt tokens) and the prefill engine-seconds saved. The engine capacity counts only
the prefill the engines did (uncached tokens), so the efficiency compares the throughput with
what the engines allow with the cache they have, on or off. With the default latency model a
prompt's prefill is well under 1 % of its service (decode dominates), and so is the saving.
"""

from __future__ import annotations

import asyncio
import resource
import time
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from symbolkg.actors.engines.balanced import BalancedEngine
from symbolkg.actors.engines.metered import MeteredEngine
from symbolkg.actors.engines.simulated import (
    LLAMA_3_3_70B_4XH100,
    LLAMA_3_3_70B_4XH100_PREFIX_CACHE,
    NO_PREFIX_CACHE,
    LatencyModel,
    PrefixCacheConfig,
    RequestStats,
    SimClock,
    SimulatedEngine,
)
from symbolkg.jobs.core.ids import Shard, id_hashes
from symbolkg.jobs.core.rows import ResultRow
from symbolkg.jobs.evaluations.workload import (
    ProgramResponder,
    SimulatedSolverPool,
    iter_synthetic_problems,
    problem_index,
    synthetic_id,
)
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore, run_exists, shard_path

BIN_S = 10.0
"""Simulated seconds per bin of the time series a run keeps (rows finished, engine occupancy)."""


@dataclass
class RequestTotals:
    """The engines' per-request stats, folded in as requests finish: constant space per request.

    Attributes:
        requests: requests served; ``uncached``: of them, with no prompt token from the prefix cache.
        prompt_tokens, cached_prompt_tokens, completion_tokens: summed.
        queue_s, service_s, late_s: summed simulated seconds (see
            :class:`~symbolkg.actors.engines.simulated.RequestStats`).
        max_batch_at_start: the largest batch a request entered.
        occupancy: engine name -> sequence-seconds in service in each :data:`BIN_S` bin of the run.
        t0: the run's start on the simulated clock (bins count from it).
    """

    requests: int = 0
    uncached: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    queue_s: float = 0.0
    service_s: float = 0.0
    late_s: float = 0.0
    max_batch_at_start: int = 0
    occupancy: dict[str, array] = field(default_factory=dict)
    t0: float = 0.0

    def add(self, r: RequestStats) -> None:
        """Fold in one request."""
        self.requests += 1
        self.uncached += r.cached_prompt_tokens == 0
        self.prompt_tokens += r.prompt_tokens
        self.cached_prompt_tokens += r.cached_prompt_tokens
        self.completion_tokens += r.completion_tokens
        self.queue_s += r.queue_s
        self.service_s += r.service_s
        self.late_s += r.late_s
        self.max_batch_at_start = max(self.max_batch_at_start, r.batch_at_start)
        slots = self.occupancy.setdefault(r.engine, array("d"))
        t, end = r.started_at_s - self.t0, r.finished_at_s - self.t0
        while t < end:
            i = int(t // BIN_S)
            if i >= len(slots):
                slots.extend([0.0] * (i + 1 - len(slots)))
            stop = min(end, (i + 1) * BIN_S)
            slots[i] += stop - t
            t = stop

    def drain(self, engines: Iterable[SimulatedEngine]) -> None:
        """Fold in and drop every request stat the engines hold (they keep one per finished request)."""
        for engine in engines:
            for r in engine.stats:
                self.add(r)
            engine.stats.clear()


class _TimedStore(ResultStore):
    """A ResultStore that also counts rows per synthetic problem (one byte each) and when they arrived.

    Every 256 rows it folds the engines' request stats into ``totals``, so that nothing the run
    keeps grows with its requests but one byte per problem and a few numbers per :data:`BIN_S`.
    """

    def __init__(
        self,
        path: Path,
        clock: SimClock,
        problems: int,
        totals: RequestTotals,
        engines: list[SimulatedEngine],
        pool: SimulatedSolverPool,
        shard: Shard | None = None,
    ) -> None:
        super().__init__(path, run_info={"bench": "pipeline-simulated"}, shard=shard)
        self.appends = np.zeros(problems, dtype=np.uint8)  # rows appended per problem (saturating)
        self.finished = array("q")  # rows finished per BIN_S bin
        self.last_finished_s = 0.0
        self.rows = 0
        self.rss_samples: list[tuple[int, float]] = []  # (rows, resident MiB) at every 5% of the problems
        self._sample_every = max(problems // 20, 1)
        self._clock = clock
        self._totals = totals
        self._engines = engines
        self._pool = pool

    def append(self, row: ResultRow) -> None:
        i = problem_index(row.problem_id)
        self.appends[i] = min(int(self.appends[i]) + 1, 255)
        t = self._clock.now() - self._totals.t0
        b = int(t // BIN_S)
        if b >= len(self.finished):
            self.finished.extend([0] * (b + 1 - len(self.finished)))
        self.finished[b] += 1
        self.last_finished_s = max(self.last_finished_s, t)
        self.rows += 1
        self._pool.forget(row.problem_id)
        if self.rows % 256 == 0:
            self._totals.drain(self._engines)
        if self.rows % self._sample_every == 0:
            self.rss_samples.append((self.rows, round(_rss_mb(), 1)))
        super().append(row)


@dataclass(frozen=True)
class BenchConfig:
    """One simulated pipeline benchmark.

    Attributes:
        problems: synthetic problems of the concurrent run.
        engines: simulated engine replicas behind the balancer.
        latency: the latency model of one engine (its ``max_batch`` is the concurrency per engine).
        max_in_flight: problems in flight in the concurrent run; None: ``2 * engines * max_batch``
            (problems spend time in the solver and between calls, and the engines' queues
            should never run dry).
        time_scale: real seconds per simulated second.
        seed: the workload's seed.
        refine_fraction: probability that a program fails and needs a repair round.
        max_refine_rounds: the method's repair rounds (Logic-LM: 3).
        completion_tokens: the range of a program's length in tokens.
        solver_workers: simulated solver slots.
        solve_s: simulated seconds per solver call.
        sequential_problems: problems of the one-at-a-time run; None: ``min(problems, 100)``
            (one at a time over all of them would take hours of simulated time).
        prefix_cache: each engine's prefix cache (:data:`~symbolkg.actors.engines.simulated.NO_PREFIX_CACHE`: off).
    """

    problems: int = 10_000
    engines: int = 4
    latency: LatencyModel = LLAMA_3_3_70B_4XH100
    max_in_flight: int | None = None
    time_scale: float = 0.1
    seed: int = 0
    refine_fraction: float = 0.2
    max_refine_rounds: int = 3
    completion_tokens: tuple[int, int] = (150, 450)
    solver_workers: int = 32
    solve_s: float = 0.05
    sequential_problems: int | None = None
    prefix_cache: PrefixCacheConfig = LLAMA_3_3_70B_4XH100_PREFIX_CACHE

    def __post_init__(self) -> None:
        if self.problems < 1:
            raise ValueError(f"problems must be >= 1, got {self.problems}")
        if self.engines < 1:
            raise ValueError(f"engines must be >= 1, got {self.engines}")
        if self.max_in_flight is not None and self.max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {self.max_in_flight}")
        if not self.time_scale > 0:
            raise ValueError(f"time_scale must be > 0, got {self.time_scale}")
        if self.sequential_problems is not None and self.sequential_problems < 0:
            raise ValueError(
                f"sequential_problems must be >= 0 (0: skip the sequential run), got {self.sequential_problems}"
            )
        if not 0 <= self.refine_fraction < 1:
            raise ValueError(f"refine_fraction must be in [0, 1), got {self.refine_fraction}")
        if self.solver_workers < 1 or self.solve_s < 0:
            raise ValueError(
                f"solver_workers must be >= 1 and solve_s >= 0, got {self.solver_workers} and {self.solve_s}"
            )
        if self.max_refine_rounds < 0:
            raise ValueError(f"max_refine_rounds must be >= 0, got {self.max_refine_rounds}")
        ProgramResponder(self.seed, self.completion_tokens)  # validates the range

    @property
    def in_flight(self) -> int:
        """Problems in flight in the concurrent run."""
        return self.max_in_flight or 2 * self.engines * self.latency.max_batch

    @property
    def n_sequential(self) -> int:
        """Problems of the one-at-a-time run."""
        return min(self.problems, 100) if self.sequential_problems is None else self.sequential_problems


@dataclass
class PipelineRun:
    """What one run of the pipeline did (rates per simulated second).

    Attributes:
        problems: problems given (of the run's shard, when it has one); ``max_in_flight``: problems in flight.
        engines, max_batch: the engine replicas and sequences per engine.
        sim_seconds: simulated seconds from the job's start to its end (finalize included);
            ``wall_seconds`` / ``cpu_seconds``: real and process-CPU seconds of the same.
            The store's finalize (merging the Parquet parts) runs after the last row, in real
            time, so it weighs ``1 / time_scale`` times more here than on a real cluster.
        rows: rows in the finished Parquet file.
        lost: problems without a row; ``duplicated``: problems with more than one row
            (appended more than once, or present more than once in the file).
        rounds: programs per problem -> problems.
        totals: the engines' requests, summed (:class:`RequestTotals`).
        engine_names, slot_seconds, busy_seconds, requests_per_engine: per engine.
        finished: rows finished in each :data:`BIN_S` bin of simulated time; ``last_row_s``: when
            the last one did.
        latency: the latency model of the engines.
        prefix_cache: the engines' prefix cache.
        peak_rss_mb: the process's peak resident memory when the run ended (MiB; the peak of the
            process so far, as ``/usr/bin/time -v`` reports it at exit).
        rss_samples: (rows finished, resident MiB then) at every 5% of the problems: how memory
            follows the job.
    """

    problems: int
    max_in_flight: int
    engines: int
    max_batch: int
    sim_seconds: float
    wall_seconds: float
    cpu_seconds: float
    rows: int
    lost: int
    duplicated: int
    rounds: dict[int, int]
    totals: RequestTotals
    engine_names: list[str]
    slot_seconds: list[float]
    busy_seconds: list[float]
    requests_per_engine: list[int]
    finished: list[int]
    last_row_s: float
    latency: LatencyModel
    results: str = ""
    prefix_cache: PrefixCacheConfig = NO_PREFIX_CACHE
    peak_rss_mb: float = 0.0
    rss_samples: list[tuple[int, float]] = field(default_factory=list)

    @property
    def problems_per_second(self) -> float:
        """Problems with a row per simulated second."""
        return (self.problems - self.lost) / self.sim_seconds

    @property
    def full_batch_service_s_per_problem(self) -> float:
        """Mean engine service a problem needs if every engine always ran ``max_batch`` sequences.

        The sum over the problem's LLM requests of
        ``latency.service_s(prompt_tokens - cached_prompt_tokens, completion_tokens, max_batch)``
        (the prefill the engine did, i.e. of the tokens the prefix cache did not hold, +
        completion tokens x the full-batch decode step), averaged over problems.
        """
        t = self.totals
        total = self.latency.service_s(t.prompt_tokens - t.cached_prompt_tokens, t.completion_tokens, self.max_batch)
        return total / self.problems

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens of all requests."""
        return self.totals.prompt_tokens

    @property
    def cached_prompt_tokens(self) -> int:
        """Prompt tokens of all requests that the prefix caches held (not prefilled)."""
        return self.totals.cached_prompt_tokens

    @property
    def prefix_cache_hit_rate(self) -> float:
        """``cached_prompt_tokens / prompt_tokens`` (0.0 without requests)."""
        prompt = self.prompt_tokens
        return self.cached_prompt_tokens / prompt if prompt else 0.0

    @property
    def prefill_seconds_saved(self) -> float:
        """Engine-seconds (sequence-seconds of service) of prefill the prefix caches spared, all engines."""
        return self.latency.prefill_s(self.cached_prompt_tokens)

    @property
    def capacity_without_prefix_cache_problems_per_second(self) -> float:
        """:attr:`capacity_problems_per_second` had every prompt been prefilled in full."""
        service_s = self.full_batch_service_s_per_problem + self.prefill_seconds_saved / self.problems
        return self.engines * self.max_batch / service_s

    @property
    def capacity_problems_per_second(self) -> float:
        """What the engines allow: ``engines * max_batch / full_batch_service_s_per_problem``.

        Every engine keeping ``max_batch`` sequences in service all the time, each taking its
        full-batch service time. This is the most the engines can do: by the latency model,
        an engine's throughput grows with the sequences it serves.
        """
        return self.engines * self.max_batch / self.full_batch_service_s_per_problem

    @property
    def efficiency(self) -> float:
        """Achieved throughput / :attr:`capacity_problems_per_second`."""
        return self.problems_per_second / self.capacity_problems_per_second

    def utilization(self) -> list[float]:
        """Per engine: mean fraction of its ``max_batch`` slots in use over the run."""
        return [s / (self.max_batch * self.sim_seconds) for s in self.slot_seconds]

    def summary(self) -> dict[str, Any]:
        """The run's numbers as a JSON-ready dict (no per-request lists)."""
        t = self.totals
        n = t.requests
        return {
            "problems": self.problems,
            "max_in_flight": self.max_in_flight,
            "problems_per_second": round(self.problems_per_second, 4),
            "engine_capacity_problems_per_second": round(self.capacity_problems_per_second, 4),
            "efficiency": round(self.efficiency, 4),
            "prefix_cache_hit_rate": round(self.prefix_cache_hit_rate, 4),
            "prefill_seconds_saved": round(self.prefill_seconds_saved, 2),
            # Of the service the requests would have had without the cache (their service + the saving).
            "prefill_saved_share_of_service": round(
                self.prefill_seconds_saved / (t.service_s + self.prefill_seconds_saved), 5
            )
            if n
            else 0.0,
            "prompt_tokens": self.prompt_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "engine_capacity_without_prefix_cache_problems_per_second": round(
                self.capacity_without_prefix_cache_problems_per_second, 4
            ),
            "lost": self.lost,
            "duplicated": self.duplicated,
            "rows": self.rows,
            "simulated_seconds": round(self.sim_seconds, 2),
            "last_row_simulated_s": round(self.last_row_s, 2),
            "wall_seconds": round(self.wall_seconds, 2),
            "cpu_seconds": round(self.cpu_seconds, 2),
            "cpu_ms_per_problem": round(1000 * self.cpu_seconds / self.problems, 3),
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "rss_mb_by_rows": [list(x) for x in self.rss_samples],
            "llm_calls": n,
            "rounds_histogram": {str(k): v for k, v in sorted(self.rounds.items())},
            "mean_queue_wait_s": round(t.queue_s / n, 3) if n else 0.0,
            "mean_service_s": round(t.service_s / n, 3) if n else 0.0,
            "mean_late_s": round(t.late_s / n, 4) if n else 0.0,
            "late_share_of_service": round(t.late_s / t.service_s, 4) if t.service_s else 0.0,
            "full_batch_service_s_per_problem": round(self.full_batch_service_s_per_problem, 3),
            "engine_utilization": [round(u, 4) for u in self.utilization()],
            "engine_busy_fraction": [round(b / self.sim_seconds, 4) for b in self.busy_seconds],
            "requests_per_engine": self.requests_per_engine,
            "results": self.results,
        }


def _count_duplicates(appends: np.ndarray, in_file: np.ndarray) -> int:
    """Problems appended more than once, or in the finished file more than once (counts per problem)."""
    return int(np.count_nonzero((appends > 1) | (in_file > 1)))


def _read_back(path: Path, problems: int) -> tuple[np.ndarray, Counter[int], int]:
    """Rows per problem in the finished file (read raw, in batches), programs per problem -> problems, rows."""
    in_file = np.zeros(problems, dtype=np.uint8)
    rounds: Counter[int] = Counter()
    rows = 0
    for batch in pq.ParquetFile(path).iter_batches(
        batch_size=16_384, columns=["problem_id", "rounds"], use_threads=False
    ):
        idx = np.fromiter((problem_index(p) for p in batch.column(0).to_pylist()), dtype=np.int64)
        np.add.at(in_file, idx, 1)
        rounds.update(batch.column(1).to_pylist())
        rows += batch.num_rows
    pa.default_memory_pool().release_unused()
    return in_file, rounds, rows


def _rss_mb() -> float:
    """This process's resident memory now, MiB (``/proc/self/statm``; 0.0 where there is none)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except OSError:
        return 0.0
    return pages * resource.getpagesize() / 2**20


def _peak_rss_mb() -> float:
    """This process's peak resident memory so far, MiB (Linux reports ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _run_async(
    cfg: BenchConfig, n_problems: int, max_in_flight: int, out: Path, progress: bool, shard: Shard | None
) -> PipelineRun:
    clock = SimClock(cfg.time_scale)
    responder = ProgramResponder(cfg.seed, cfg.completion_tokens)
    engines = [
        SimulatedEngine(
            responder, cfg.latency, clock, name=f"sim-{i}", model="simulated-llm", prefix_cache=cfg.prefix_cache
        )
        for i in range(cfg.engines)
    ]
    balanced = BalancedEngine(engines)
    pool = SimulatedSolverPool(
        clock,
        workers=cfg.solver_workers,
        solve_s=cfg.solve_s,
        refine_fraction=cfg.refine_fraction,
        max_failures=cfg.max_refine_rounds + 1,
        seed=cfg.seed,
    )
    totals = RequestTotals(t0=clock.now())
    store = _TimedStore(out, clock, n_problems, totals, engines, pool, shard)
    method = MethodConfig(method="logiclm", max_refine_rounds=cfg.max_refine_rounds)
    t_sim, t_wall, t_cpu = clock.now(), time.perf_counter(), time.process_time()
    metered = MeteredEngine(balanced, log_to=store.path)  # the request log `symbolkg profile` reads, streamed
    try:
        await run_method_job(
            islice(iter_synthetic_problems(cfg.problems, cfg.seed), n_problems),
            store,
            method,
            metered,
            pool,
            max_in_flight=max_in_flight,
            progress=progress,
        )
    finally:
        await balanced.close()
        pool.close()
        metered.flush_log()
    sim_seconds = clock.now() - t_sim
    wall_seconds, cpu_seconds = time.perf_counter() - t_wall, time.process_time() - t_cpu
    totals.drain(engines)
    in_file, rounds, rows = _read_back(store.path, n_problems)
    mine = (
        np.ones(n_problems, dtype=bool)
        if shard is None
        else id_hashes(synthetic_id(i, cfg.problems) for i in range(n_problems)) % np.uint64(shard.count)
        == np.uint64(shard.index)
    )
    return PipelineRun(
        problems=int(mine.sum()),
        max_in_flight=max_in_flight,
        engines=cfg.engines,
        max_batch=cfg.latency.max_batch,
        sim_seconds=sim_seconds,
        wall_seconds=wall_seconds,
        cpu_seconds=cpu_seconds,
        rows=rows,
        lost=int(np.count_nonzero(mine & (in_file == 0))) + int(np.count_nonzero(~mine & (in_file > 0))),
        duplicated=_count_duplicates(store.appends, in_file),
        rounds=dict(rounds),
        totals=totals,
        engine_names=[e.name for e in engines],
        slot_seconds=[e.slot_seconds for e in engines],
        busy_seconds=[e.busy_seconds for e in engines],
        requests_per_engine=list(balanced.requests_per_engine),
        finished=list(store.finished),
        last_row_s=store.last_finished_s,
        latency=cfg.latency,
        results=str(store.path),
        prefix_cache=cfg.prefix_cache,
        peak_rss_mb=_peak_rss_mb(),
        rss_samples=store.rss_samples,
    )


def run_pipeline(
    cfg: BenchConfig,
    *,
    problems: int,
    max_in_flight: int,
    out: Path,
    progress: bool = False,
    shard: Shard | None = None,
) -> PipelineRun:
    """One measured run of the real job over simulated backends (a fresh clock, engines and pool).

    Args:
        cfg: engines, latency model, time scale, workload (``cfg.problems`` names the problems:
            ``sim-00000``.. with as many digits as it needs).
        problems: how many of them, from the first (made one at a time as the job reads them).
        max_in_flight: problems in flight (1: one at a time).
        out: the results Parquet file (must not exist: a benchmark does not resume).
        progress: progress bar on stderr.
        shard: run only this shard of the problems (``out`` then gets the shard's files).

    Raises:
        FileExistsError: results exist at ``out`` (its file, parts or shards; with ``shard``, that shard's) already.
    """
    if run_exists(out) if shard is None else run_exists(shard_path(out, shard)):
        raise FileExistsError(f"results already exist at {out}; give an empty --out folder")
    return asyncio.run(_run_async(cfg, problems, max_in_flight, out, progress, shard))


@dataclass
class BenchResult:
    """The concurrent run and the one-at-a-time run (None when skipped) of one benchmark."""

    config: BenchConfig
    concurrent: PipelineRun
    sequential: PipelineRun | None

    def report(self) -> dict[str, Any]:
        """The benchmark's JSON object (the ``--json`` output)."""
        c, s = self.concurrent, self.sequential
        lm = self.config.latency
        return {
            **c.summary(),
            "engines": c.engines,
            "max_batch": c.max_batch,
            "time_scale": self.config.time_scale,
            "seed": self.config.seed,
            "refine_fraction": self.config.refine_fraction,
            "sequential_problems": s.problems if s else 0,
            "sequential_problems_per_second": round(s.problems_per_second, 4) if s else None,
            "speedup": round(c.problems_per_second / s.problems_per_second, 2) if s else None,
            "sequential": s.summary() if s else None,
            "prefix_cache": {
                "capacity_tokens": self.config.prefix_cache.capacity_tokens,
                "block_tokens": self.config.prefix_cache.block_tokens,
            },
            "latency_model": {
                "name": lm.name,
                "prefill_tokens_per_s": lm.prefill_tokens_per_s,
                "decode_tokens_per_s_batch1": lm.decode_tokens_per_s,
                "batch_slowdown": lm.batch_slowdown,
                "max_batch": lm.max_batch,
                "decode_tokens_per_s_per_engine_full_batch": round(lm.decode_throughput(lm.max_batch), 1),
            },
        }


def run_bench(cfg: BenchConfig, out_dir: Path, *, progress: bool = False, shard: Shard | None = None) -> BenchResult:
    """The whole benchmark: the concurrent run, then the one-at-a-time run on the first problems.

    Args:
        cfg: the benchmark.
        out_dir: where ``pipeline_concurrent.parquet`` and ``pipeline_sequential.parquet`` go.
        progress: progress bars on stderr.
        shard: both runs take only this shard's problems and write its files
            (``pipeline_concurrent.shard-i-of-n.parquet``): ``n`` such benchmarks, one per shard,
            share one ``out_dir`` and together make the whole run.

    Raises:
        FileExistsError: results (of this shard) exist in ``out_dir`` already.
    """
    paths = (out_dir / "pipeline_concurrent.parquet", out_dir / "pipeline_sequential.parquet")
    for path in paths:  # both checked before hours of simulated time are spent on the first
        if run_exists(path) if shard is None else run_exists(shard_path(path, shard)):
            raise FileExistsError(f"results already exist at {path}; give an empty --out folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    concurrent = run_pipeline(
        cfg, problems=cfg.problems, max_in_flight=cfg.in_flight, out=paths[0], progress=progress, shard=shard
    )
    sequential = None
    if cfg.n_sequential:
        sequential = run_pipeline(
            cfg, problems=cfg.n_sequential, max_in_flight=1, out=paths[1], progress=progress, shard=shard
        )
    return BenchResult(cfg, concurrent, sequential)


def format_report(report: dict[str, Any]) -> str:
    """A short readable table of :meth:`BenchResult.report`."""

    def line(name: str, value: object) -> str:
        return f"{name:<40} {value}"

    lines = [
        line("problems", report["problems"]),
        line(
            "engines x max batch (in flight)",
            f"{report['engines']} x {report['max_batch']} ({report['max_in_flight']})",
        ),
        line("problems/s (simulated)", report["problems_per_second"]),
        line("engine capacity problems/s", report["engine_capacity_problems_per_second"]),
        line("efficiency", report["efficiency"]),
        line(
            "prefix cache hit rate (capacity tokens)",
            f"{report['prefix_cache_hit_rate']} ({report['prefix_cache']['capacity_tokens']})",
        ),
        line(
            "prefill engine-s saved (share)",
            f"{report['prefill_seconds_saved']} ({report['prefill_saved_share_of_service']} of service)",
        ),
        line(
            "engine capacity problems/s without cache",
            report["engine_capacity_without_prefix_cache_problems_per_second"],
        ),
        line(
            "sequential problems/s",
            f"{report['sequential_problems_per_second']} (over {report['sequential_problems']} problems)"
            if report["sequential"]
            else "skipped",
        ),
        line("speedup over sequential", report["speedup"]),
        line("lost / duplicated", f"{report['lost']} / {report['duplicated']}"),
        line("LLM calls (rounds histogram)", f"{report['llm_calls']} {report['rounds_histogram']}"),
        line("mean queue wait s / service s", f"{report['mean_queue_wait_s']} / {report['mean_service_s']}"),
        line("engine utilization", report["engine_utilization"]),
        line(
            "simulated s / wall s (time scale)",
            f"{report['simulated_seconds']} / {report['wall_seconds']} ({report['time_scale']})",
        ),
        line("driver CPU ms per problem", report["cpu_ms_per_problem"]),
        line("driver peak RSS MiB", report["peak_rss_mb"]),
        line("results", report["results"]),
    ]
    return "\n".join(lines)
