"""The simulated pipeline benchmark's workload: synthetic problems and the simulated solver pool.

Deterministic given the seed: problems ``sim-00000``.. of dataset ``logiclm/prontoqa`` (LP
programs) with generated contexts; a responder that writes well-formed LP programs of a drawn
length for the simulated engines; and :class:`SimulatedSolverPool`, which rejects a problem's
programs with probability ``refine_fraction`` each (the repair rounds). See
:mod:`symbolkg.jobs.evaluations.pipeline_bench` for the benchmark that runs them.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections import Counter
from collections.abc import Iterable, Iterator

from symbolkg.actors.engines.base import ChatRequest
from symbolkg.actors.engines.simulated import (
    CHARS_PER_TOKEN,
    SimClock,
)
from symbolkg.jobs.core.rows import Problem
from symbolkg.solvers.outcomes import ErrorKind, Outcome, SolveRequest, Status
from symbolkg.solvers.runtime.local_pool import PoolResult

DATASET = "logiclm/prontoqa"
"""The dataset the synthetic problems claim (its language, LP, decides the prompts)."""

_WORDS = (
    "wumpus",
    "yumpus",
    "zumpus",
    "dumpus",
    "rompus",
    "numpus",
    "tumpus",
    "vumpus",
    "impus",
    "jompus",
    "gorpus",
    "shumpus",
    "lempus",
    "sterpus",
    "brimpus",
    "lorpus",
    "grimpus",
)


def _stable_seed(*parts: object) -> int:
    """A seed from ``parts`` that is the same in every process (``hash()`` of a str is not)."""
    digest = hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def synthetic_problems(n: int, seed: int = 0) -> list[Problem]:
    """``n`` ProntoQA-style problems ``sim-00000``.., gold answer A (True): :func:`iter_synthetic_problems` as a list.

    Raises:
        ValueError: ``n`` < 1.
    """
    return list(iter_synthetic_problems(n, seed))


def iter_synthetic_problems(n: int, seed: int = 0) -> Iterator[Problem]:
    """``n`` ProntoQA-style problems ``sim-00000``.., gold answer A (True), made one at a time.

    Args:
        n: how many, >= 1.
        seed: varies the contexts' words and lengths.

    Raises:
        ValueError: ``n`` < 1 (at once, not at the first ``next``).
    """
    if n < 1:
        raise ValueError(f"the number of problems must be >= 1, got {n}")
    return (_synthetic_problem(i, n, seed) for i in range(n))


def synthetic_id(i: int, n: int) -> str:
    """The id of synthetic problem ``i`` of ``n``: ``sim-`` and ``i`` with as many digits as ``n - 1`` (at least 5)."""
    return f"sim-{i:0{max(5, len(str(n - 1)))}d}"


def _synthetic_problem(i: int, n: int, seed: int) -> Problem:
    pid = synthetic_id(i, n)
    rng = random.Random(_stable_seed(seed, "context", pid))
    sentences, words, target = [], 0, rng.randint(60, 180)
    while words < target:
        a, b = rng.sample(_WORDS, 2)
        sentences.append(f"Every {a} is a {b}.")
        words += 5
    name = f"Obj{i}"
    sentences.append(f"{name} is a {rng.choice(_WORDS)}.")
    return Problem(
        pid,
        DATASET,
        " ".join(sentences),
        f"Is the following statement true? {name} is a {rng.choice(_WORDS)}.",
        ("A) True", "B) False"),
        "A",
    )


def problem_index(problem_id: str) -> int:
    """The number of a synthetic problem (``sim-00042`` -> 42)."""
    return int(problem_id.removeprefix("sim-"))


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
    """A :class:`~symbolkg.solvers.runtime.local_pool.SolverPool` of simulated calls.

    Each call takes ``solve_s`` simulated seconds on one of ``workers`` slots.
    The first ``failures_for(problem_id)`` programs of a problem get a syntax error (so the
    method asks for a repair); later ones are proved with answer ``A``.

    Attributes:
        workers: parallel solver slots.
        calls: programs run so far.
    """

    def __init__(
        self,
        clock: SimClock,
        *,
        workers: int = 32,
        solve_s: float = 0.05,
        refine_fraction: float = 0.2,
        max_failures: int = 4,
        seed: int = 0,
    ) -> None:
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
        self._runs: Counter[str] = Counter()  # programs run so far, of the problems without a row yet

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
            outcome = Outcome.error(
                Status.PARSE_ERROR,
                ErrorKind.SYNTAX,
                "simulated: expected ':::' after a rule",
                line=2,
                seconds=self.solve_s,
                backend="simulated",
            )
        else:
            outcome = Outcome(Status.PROVED, answer="A", seconds=self.solve_s, backend="simulated")
        return PoolResult(request, outcome, "simulated/0", 1, self._clock.now() - queued)

    def forget(self, problem_id: str) -> None:
        """The problem has its row: drop its count of programs (so the pool's memory follows the problems in flight)."""
        self._runs.pop(problem_id, None)

    def imap_unordered(self, requests: Iterable[SolveRequest]) -> Iterator[PoolResult]:
        """Not supported: the LLM methods call :meth:`solve`.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError("SimulatedSolverPool serves the LLM methods' solve(); it has no batch mode")

    def close(self) -> None:
        """Nothing to release (no processes)."""
