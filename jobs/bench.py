"""The simulated pipeline benchmark: the real orchestrator at cluster scale on one machine.

The command line is :mod:`symbolkg.jobs.commands.bench`; this module is the benchmark.

``symbolkg bench pipeline --simulated`` runs synthetic problems through the real batch job
(:func:`symbolkg.jobs.pipeline.runner.run_method_job`, method ``logiclm``: formulate -> solve -> refine,
a real :class:`~symbolkg.jobs.pipeline.store.ResultStore`) against ``E`` :class:`~symbolkg.actors.engines.simulated.SimulatedEngine`
replicas behind a :class:`~symbolkg.actors.engines.balanced.BalancedEngine` and a
:class:`SimulatedSolverPool`. Only the backends are simulated; every coroutine, prompt,
program extraction, result row and Parquet write is the real code, running in real time
scaled by ``time_scale`` (see :class:`~symbolkg.actors.engines.simulated.SimClock`). All rates are
per simulated second.

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
import hashlib
import random
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import pyarrow.parquet as pq

from symbolkg.actors.engines.balanced import BalancedEngine
from symbolkg.actors.engines.base import ChatRequest
from symbolkg.actors.engines.metered import MeteredEngine, write_request_log
from symbolkg.actors.engines.simulated import (
    CHARS_PER_TOKEN,
    LLAMA_3_3_70B_4XH100,
    LLAMA_3_3_70B_4XH100_PREFIX_CACHE,
    NO_PREFIX_CACHE,
    LatencyModel,
    PrefixCacheConfig,
    RequestStats,
    SimClock,
    SimulatedEngine,
)
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.pipeline.runner import run_method_job
from symbolkg.jobs.pipeline.rows import Problem, ResultRow
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.runtime.local_pool import PoolResult
from symbolkg.solvers.outcomes import ErrorKind, Outcome, SolveRequest, Status

DATASET = "logiclm/prontoqa"
"""The dataset the synthetic problems claim (its language, LP, decides the prompts)."""

_WORDS = ("wumpus", "yumpus", "zumpus", "dumpus", "rompus", "numpus", "tumpus", "vumpus", "impus", "jompus",
          "gorpus", "shumpus", "lempus", "sterpus", "brimpus", "lorpus", "grimpus")


def _stable_seed(*parts: object) -> int:
    """A seed from ``parts`` that is the same in every process (``hash()`` of a str is not)."""
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def synthetic_problems(n: int, seed: int = 0) -> list[Problem]:
    """``n`` ProntoQA-style problems ``sim-00000``.., gold answer A (True).

    Args:
        n: how many, >= 1.
        seed: varies the contexts' words and lengths.

    Raises:
        ValueError: ``n`` < 1.
    """
    if n < 1:
        raise ValueError(f"the number of problems must be >= 1, got {n}")
    width = max(5, len(str(n - 1)))
    problems = []
    for i in range(n):
        pid = f"sim-{i:0{width}d}"
        rng = random.Random(_stable_seed(seed, "context", pid))
        sentences, words, target = [], 0, rng.randint(60, 180)
        while words < target:
            a, b = rng.sample(_WORDS, 2)
            sentences.append(f"Every {a} is a {b}.")
            words += 5
        name = f"Obj{i}"
        sentences.append(f"{name} is a {rng.choice(_WORDS)}.")
        problems.append(Problem(pid, DATASET, " ".join(sentences), f"Is the following statement true? {name} is a "
                                f"{rng.choice(_WORDS)}.", ("A) True", "B) False"), "A"))
    return problems


class ProgramResponder:
    """The simulated LLM's answers: a well-formed LP program of a seeded length per request.

    The length (in estimated tokens) of the answer to a request is drawn uniformly from
    ``completion_tokens`` by a generator seeded with ``(seed, request_id)`` (the program
    is grown rule by rule until it is that long, so it may be one rule, ~25 tokens, longer).
    A rerun gets the same answers.
    """

    def __init__(self, seed: int = 0, completion_tokens: tuple[int, int] = (150, 450)) -> None:
        """Build the responder.

        Raises:
            ValueError: a range that is empty or starts below 1.
        """
        low, high = completion_tokens
        if not 1 <= low <= high:
            raise ValueError(f"completion_tokens must be a range 1 <= low <= high, got {completion_tokens}")
        self.seed = seed
        self.completion_tokens = (low, high)

    def __call__(self, request: ChatRequest) -> str:
        key = request.request_id or request.problem_id
        rng = random.Random(_stable_seed(self.seed, "program", key))
        target_chars = rng.randint(*self.completion_tokens) * CHARS_PER_TOKEN
        # Facts, a chain of rules and a query, grown until the program is as long as drawn.
        predicates = ["Predicates:"]
        rules = ["Rules:"]
        k = 0
        size = 60  # headers, the fact and the query
        while size < target_chars:
            a, b = rng.choice(_WORDS).capitalize(), rng.choice(_WORDS).capitalize()
            predicates.append(f"{a}{k}($x, bool) ::: Is x a {a.lower()}?")
            rules.append(f"{a}{k}($x, True) >>> {b}{k + 1}($x, True) ::: Every {a.lower()} is a {b.lower()}.")
            size += len(predicates[-1]) + len(rules[-1]) + 2
            k += 1
        obj = request.problem_id or "x"
        return "\n".join([*predicates, "Facts:", f"P0({obj}, True)", *rules, "Query:", f"P{k}({obj}, True)"])


class SimulatedSolverPool:
    """A :class:`~symbolkg.solvers.runtime.local_pool.SolverPool` whose calls take ``solve_s`` simulated seconds on ``workers`` slots.

    The first ``failures_for(problem_id)`` programs of a problem get a syntax error (so the
    method asks for a repair); later ones are proved with answer ``A``.

    Attributes:
        workers: parallel solver slots.
        calls: programs run so far.
    """

    def __init__(self, clock: SimClock, *, workers: int = 32, solve_s: float = 0.05, refine_fraction: float = 0.2,
                 max_failures: int = 4, seed: int = 0) -> None:
        """Build the pool.

        Args:
            clock: the run's simulated clock.
            workers: parallel solver slots, >= 1.
            solve_s: simulated seconds per program, >= 0.
            refine_fraction: probability that a program fails (see the module docstring), in [0, 1).
            max_failures: the most failing programs of one problem (``1 + max_refine_rounds``
                lets a few problems end unanswered).
            seed: with the problem id, decides which problems fail.

        Raises:
            ValueError: a bad value of the above.
        """
        if workers < 1:
            raise ValueError(f"solver workers must be >= 1, got {workers}")
        if solve_s < 0:
            raise ValueError(f"solve_s must be >= 0, got {solve_s}")
        if not 0 <= refine_fraction < 1:
            raise ValueError(f"refine_fraction must be in [0, 1), got {refine_fraction}")
        if max_failures < 0:
            raise ValueError(f"max_failures must be >= 0, got {max_failures}")
        self.workers = workers
        self.solve_s = solve_s
        self.refine_fraction = refine_fraction
        self.max_failures = max_failures
        self.seed = seed
        self.calls = 0
        self._clock = clock
        self._slots = asyncio.Semaphore(workers)
        self._runs: Counter[str] = Counter()

    def failures_for(self, problem_id: str) -> int:
        """How many programs of ``problem_id`` fail before one is proved (deterministic)."""
        rng = random.Random(_stable_seed(self.seed, "refine", problem_id))
        failures = 0
        while failures < self.max_failures and rng.random() < self.refine_fraction:
            failures += 1
        return failures

    async def solve(self, request: SolveRequest) -> PoolResult:
        """Run one program: wait for a slot, take ``solve_s``, return its scripted outcome."""
        queued = self._clock.now()
        async with self._slots:
            await self._clock.sleep(self.solve_s)
        run = self._runs[request.problem_id]
        self._runs[request.problem_id] += 1
        self.calls += 1
        if run < self.failures_for(request.problem_id):
            outcome = Outcome.error(Status.PARSE_ERROR, ErrorKind.SYNTAX, "simulated: expected ':::' after a rule",
                                    line=2, seconds=self.solve_s, backend="simulated")
        else:
            outcome = Outcome(Status.PROVED, answer="A", seconds=self.solve_s, backend="simulated")
        return PoolResult(request, outcome, "simulated/0", 1, self._clock.now() - queued)

    def imap_unordered(self, requests: Iterable[SolveRequest]) -> Iterator[PoolResult]:
        """Not supported: the LLM methods call :meth:`solve`.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError("SimulatedSolverPool serves the LLM methods' solve(); it has no batch mode")

    def close(self) -> None:
        """Nothing to release (no processes)."""


class _TimedStore(ResultStore):
    """A ResultStore that also counts rows per problem and notes when each arrived (simulated s)."""

    def __init__(self, path: Path, clock: SimClock) -> None:
        super().__init__(path, run_info={"bench": "pipeline-simulated"})
        self.appends: Counter[str] = Counter()
        self.finished_at_s: list[float] = []
        self._clock = clock

    def append(self, row: ResultRow) -> None:
        self.appends[row.problem_id] += 1
        self.finished_at_s.append(self._clock.now())
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
            raise ValueError(f"sequential_problems must be >= 0 (0: skip the sequential run), "
                             f"got {self.sequential_problems}")
        if not 0 <= self.refine_fraction < 1:
            raise ValueError(f"refine_fraction must be in [0, 1), got {self.refine_fraction}")
        if self.solver_workers < 1 or self.solve_s < 0:
            raise ValueError(f"solver_workers must be >= 1 and solve_s >= 0, "
                             f"got {self.solver_workers} and {self.solve_s}")
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
        problems: problems given; ``max_in_flight``: problems in flight.
        engines, max_batch: the engine replicas and sequences per engine.
        sim_seconds: simulated seconds from the job's start to its end (finalize included);
            ``wall_seconds`` / ``cpu_seconds``: real and process-CPU seconds of the same.
            The store's finalize (merging the Parquet parts) runs after the last row, in real
            time, so it weighs ``1 / time_scale`` times more here than on a real cluster.
        rows: rows in the finished Parquet file.
        lost: problems without a row; ``duplicated``: problems with more than one row
            (appended more than once, or present more than once in the file).
        rounds: programs per problem -> problems.
        requests: per-request stats of every engine.
        engine_names, slot_seconds, busy_seconds, requests_per_engine: per engine.
        finished_at_s: simulated time of every row, in order.
        latency: the latency model of the engines.
        prefix_cache: the engines' prefix cache.
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
    requests: list[RequestStats]
    engine_names: list[str]
    slot_seconds: list[float]
    busy_seconds: list[float]
    requests_per_engine: list[int]
    finished_at_s: list[float]
    latency: LatencyModel
    results: str = ""
    prefix_cache: PrefixCacheConfig = NO_PREFIX_CACHE

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
        total = sum(self.latency.service_s(r.prompt_tokens - r.cached_prompt_tokens, r.completion_tokens,
                                           self.max_batch) for r in self.requests)
        return total / self.problems

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens of all requests."""
        return sum(r.prompt_tokens for r in self.requests)

    @property
    def cached_prompt_tokens(self) -> int:
        """Prompt tokens of all requests that the prefix caches held (not prefilled)."""
        return sum(r.cached_prompt_tokens for r in self.requests)

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
        queue = [r.queue_s for r in self.requests]
        service = [r.service_s for r in self.requests]
        late = [r.late_s for r in self.requests]
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
                self.prefill_seconds_saved / (sum(service) + self.prefill_seconds_saved), 5) if service else 0.0,
            "prompt_tokens": self.prompt_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "engine_capacity_without_prefix_cache_problems_per_second": round(
                self.capacity_without_prefix_cache_problems_per_second, 4),
            "lost": self.lost,
            "duplicated": self.duplicated,
            "rows": self.rows,
            "simulated_seconds": round(self.sim_seconds, 2),
            "last_row_simulated_s": round(max(self.finished_at_s, default=0.0), 2),
            "wall_seconds": round(self.wall_seconds, 2),
            "cpu_seconds": round(self.cpu_seconds, 2),
            "llm_calls": len(self.requests),
            "rounds_histogram": {str(k): v for k, v in sorted(self.rounds.items())},
            "mean_queue_wait_s": round(sum(queue) / len(queue), 3) if queue else 0.0,
            "mean_service_s": round(sum(service) / len(service), 3) if service else 0.0,
            "mean_late_s": round(sum(late) / len(late), 4) if late else 0.0,
            "late_share_of_service": round(sum(late) / sum(service), 4) if service else 0.0,
            "full_batch_service_s_per_problem": round(self.full_batch_service_s_per_problem, 3),
            "engine_utilization": [round(u, 4) for u in self.utilization()],
            "engine_busy_fraction": [round(b / self.sim_seconds, 4) for b in self.busy_seconds],
            "requests_per_engine": self.requests_per_engine,
            "results": self.results,
        }


def _count_duplicates(path: Path, appends: Counter[str]) -> int:
    """Problems appended more than once, or in the finished file more than once (read raw)."""
    in_file = Counter(pq.read_table(path, columns=["problem_id"]).column("problem_id").to_pylist())
    return len({pid for pid, n in appends.items() if n > 1} | {pid for pid, n in in_file.items() if n > 1})


async def _run_async(problems: list[Problem], cfg: BenchConfig, max_in_flight: int, out: Path,
                     progress: bool) -> PipelineRun:
    clock = SimClock(cfg.time_scale)
    responder = ProgramResponder(cfg.seed, cfg.completion_tokens)
    engines = [SimulatedEngine(responder, cfg.latency, clock, name=f"sim-{i}", model="simulated-llm",
                               prefix_cache=cfg.prefix_cache) for i in range(cfg.engines)]
    balanced = BalancedEngine(engines)
    pool = SimulatedSolverPool(clock, workers=cfg.solver_workers, solve_s=cfg.solve_s,
                               refine_fraction=cfg.refine_fraction, max_failures=cfg.max_refine_rounds + 1,
                               seed=cfg.seed)
    store = _TimedStore(out, clock)
    method = MethodConfig(method="logiclm", max_refine_rounds=cfg.max_refine_rounds)
    t_sim, t_wall, t_cpu = clock.now(), time.perf_counter(), time.process_time()
    metered = MeteredEngine(balanced)  # the request log `symbolkg profile` reads
    try:
        await run_method_job(problems, store, method, metered, pool, max_in_flight=max_in_flight, progress=progress)
    finally:
        await balanced.close()
        pool.close()
        write_request_log(out, metered.records)
    sim_seconds = clock.now() - t_sim
    wall_seconds, cpu_seconds = time.perf_counter() - t_wall, time.process_time() - t_cpu
    table, _ = read_run(out)
    ids = set(table.column("problem_id").to_pylist())
    rounds = Counter(table.column("rounds").to_pylist())
    return PipelineRun(
        problems=len(problems), max_in_flight=max_in_flight, engines=cfg.engines, max_batch=cfg.latency.max_batch,
        sim_seconds=sim_seconds, wall_seconds=wall_seconds, cpu_seconds=cpu_seconds, rows=table.num_rows,
        lost=sum(1 for p in problems if p.id not in ids), duplicated=_count_duplicates(out, store.appends),
        rounds=dict(rounds), requests=[r for e in engines for r in e.stats], engine_names=[e.name for e in engines],
        slot_seconds=[e.slot_seconds for e in engines], busy_seconds=[e.busy_seconds for e in engines],
        requests_per_engine=list(balanced.requests_per_engine), finished_at_s=[t - t_sim for t in store.finished_at_s],
        latency=cfg.latency, results=str(out), prefix_cache=cfg.prefix_cache,
    )


def run_pipeline(problems: list[Problem], cfg: BenchConfig, *, max_in_flight: int, out: Path,
                 progress: bool = False) -> PipelineRun:
    """One measured run of the real job over simulated backends (a fresh clock, engines and pool).

    Args:
        problems: the problems.
        cfg: engines, latency model, time scale, workload.
        max_in_flight: problems in flight (1: one at a time).
        out: the results Parquet file (must not exist: a benchmark does not resume).
        progress: progress bar on stderr.

    Raises:
        FileExistsError: ``out`` (or its parts folder) exists already.
    """
    if out.exists() or out.with_name(out.name + ".parts").exists():
        raise FileExistsError(f"results already exist at {out}; give an empty --out folder")
    return asyncio.run(_run_async(problems, cfg, max_in_flight, out, progress))


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
            "prefix_cache": {"capacity_tokens": self.config.prefix_cache.capacity_tokens,
                             "block_tokens": self.config.prefix_cache.block_tokens},
            "latency_model": {
                "name": lm.name, "prefill_tokens_per_s": lm.prefill_tokens_per_s,
                "decode_tokens_per_s_batch1": lm.decode_tokens_per_s, "batch_slowdown": lm.batch_slowdown,
                "max_batch": lm.max_batch,
                "decode_tokens_per_s_per_engine_full_batch": round(lm.decode_throughput(lm.max_batch), 1),
            },
        }


def run_bench(cfg: BenchConfig, out_dir: Path, *, progress: bool = False) -> BenchResult:
    """The whole benchmark: the concurrent run, then the one-at-a-time run on the first problems.

    Args:
        cfg: the benchmark.
        out_dir: where ``pipeline_concurrent.parquet`` and ``pipeline_sequential.parquet`` go.
        progress: progress bars on stderr.

    Raises:
        FileExistsError: results exist in ``out_dir`` already.
    """
    paths = (out_dir / "pipeline_concurrent.parquet", out_dir / "pipeline_sequential.parquet")
    for path in paths:  # both checked before hours of simulated time are spent on the first
        if path.exists() or path.with_name(path.name + ".parts").exists():
            raise FileExistsError(f"results already exist at {path}; give an empty --out folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    problems = synthetic_problems(cfg.problems, cfg.seed)
    concurrent = run_pipeline(problems, cfg, max_in_flight=cfg.in_flight, out=paths[0], progress=progress)
    sequential = None
    if cfg.n_sequential:
        sequential = run_pipeline(problems[: cfg.n_sequential], cfg, max_in_flight=1, out=paths[1], progress=progress)
    return BenchResult(cfg, concurrent, sequential)


def format_report(report: dict[str, Any]) -> str:
    """A short readable table of :meth:`BenchResult.report`."""
    def line(name: str, value: object) -> str:
        return f"{name:<40} {value}"

    lines = [
        line("problems", report["problems"]),
        line("engines x max batch (in flight)",
             f"{report['engines']} x {report['max_batch']} ({report['max_in_flight']})"),
        line("problems/s (simulated)", report["problems_per_second"]),
        line("engine capacity problems/s", report["engine_capacity_problems_per_second"]),
        line("efficiency", report["efficiency"]),
        line("prefix cache hit rate (capacity tokens)",
             f"{report['prefix_cache_hit_rate']} ({report['prefix_cache']['capacity_tokens']})"),
        line("prefill engine-s saved (share)",
             f"{report['prefill_seconds_saved']} ({report['prefill_saved_share_of_service']} of service)"),
        line("engine capacity problems/s without cache",
             report["engine_capacity_without_prefix_cache_problems_per_second"]),
        line("sequential problems/s", f"{report['sequential_problems_per_second']} "
                                      f"(over {report['sequential_problems']} problems)"
             if report["sequential"] else "skipped"),
        line("speedup over sequential", report["speedup"]),
        line("lost / duplicated", f"{report['lost']} / {report['duplicated']}"),
        line("LLM calls (rounds histogram)", f"{report['llm_calls']} {report['rounds_histogram']}"),
        line("mean queue wait s / service s", f"{report['mean_queue_wait_s']} / {report['mean_service_s']}"),
        line("engine utilization", report["engine_utilization"]),
        line("simulated s / wall s (time scale)",
             f"{report['simulated_seconds']} / {report['wall_seconds']} ({report['time_scale']})"),
        line("results", report["results"]),
    ]
    return "\n".join(lines)
