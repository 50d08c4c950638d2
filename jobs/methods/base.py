"""The method interface: what a reasoning method gets from the job, and what it gives back.

A method is a plug-in (see :mod:`symbolkg.jobs.methods` for the registry): a subclass of
:class:`Method` with a ``name`` and one coroutine, :meth:`Method.run`, that turns one
:class:`~symbolkg.jobs.core.rows.Problem` into one :class:`~symbolkg.jobs.core.rows.ResultRow`.
Everything the job provides arrives in a :class:`MethodContext`: the LLM engine, the solver
pool (when the method asks for one), the shared settings (:class:`MethodConfig`) and a fresh
per-problem :class:`Ledger` that counts the LLM calls the method makes through
:meth:`MethodContext.ask`.

The job (reading problems, the in-flight window, the stage gates, the results store, the
report) knows no method by name; a method knows nothing of the job. Per-job state (an LKG
store, retrieval hosts) lives on the method instance and is released by :meth:`Method.close`.

Example: a toy method, run on one problem with the scripted engine::

    >>> import asyncio
    >>> from symbolkg.actors.engines.scripted import ScriptedEngine
    >>> from symbolkg.jobs.core.rows import Problem
    >>> class Echo(Method):
    ...     name = "echo"
    ...     async def run(self, problem, ctx):
    ...         text = (await ctx.ask(ctx.chat(problem, "answer", [("user", problem.question)]))).text
    ...         return ctx.row(problem, Outcome(Status.PROVED, answer=text, backend="llm"), predicted=text)
    >>> p = Problem(id="p1", dataset="custom", context="", question="A or B?", options=(), answer="A")
    >>> ctx = MethodContext(ScriptedEngine(lambda r: "A"), None, MethodConfig(method="echo"))
    >>> row = asyncio.run(Echo().run(p, ctx))
    >>> (row.predicted, row.correct, row.llm_calls)
    ('A', True, 1)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

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
from symbolkg.jobs.core.results import Ledger, result_row
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.solvers.outcomes import Limits, Outcome, Status

if TYPE_CHECKING:
    # a type only: the pool's module brings the solver registry, not needed to list a method's flags
    from symbolkg.solvers.runtime.local_pool import SolverPool

__all__ = ["Ledger", "Method", "MethodConfig", "MethodContext", "Outcome", "Reply", "Status"]


@dataclass(frozen=True)
class MethodConfig:
    """The settings every method shares (the job's ``--max-tokens``, limits, refine rounds, ...).

    A method's own settings (the ``symbolkg`` method's retrieval switches, say) live on its
    instance, built from its own flags by :meth:`Method.from_args`.

    Attributes:
        method: the registered name of the method (the ``method`` column of every row).
        max_refine_rounds: repair rounds after the first formulation (Logic-LM: 3), so at
            most ``1 + max_refine_rounds`` programs per problem.
        limits: solver limits per program.
        formulate_params: sampling for formulation and repair requests.
        repair_max_tokens: the most tokens a repair request may generate (``--repair-max-tokens``);
            None (the default) gives a repair the program's budget (``formulate_params``), as
            Logic-LM does. A bound below it is a departure: with qwen2.5-coder-1.5b no repair longer
            than 311 tokens ever gave a program that ran, and the repairs that run to the budget are
            what a job's last minutes decode nearly alone (benchmarks/RESULTS.md, the ceiling).
        answer_params: sampling for direct answers; ``cot_params`` for chains of thought.
        structured: use structured decoding where the engine supports it and the
            language has a constraint that keeps programs well-formed.
        fallback: a method (``direct`` or ``cot``) that answers problems the main method
            left unanswered, in separate columns; None for none.
    """

    method: str = "logiclm"
    max_refine_rounds: int = 3
    limits: Limits = field(default_factory=Limits)
    formulate_params: SamplingParams = field(default_factory=lambda: SamplingParams(max_tokens=1024))
    answer_params: SamplingParams = field(default_factory=lambda: SamplingParams(max_tokens=16))
    cot_params: SamplingParams = field(default_factory=lambda: SamplingParams(max_tokens=512))
    structured: bool = True
    fallback: str | None = None
    repair_max_tokens: int | None = None

    def __post_init__(self) -> None:
        if not self.method or not isinstance(self.method, str):
            raise ValueError(f"method must be a registered method name, got {self.method!r}")
        if self.max_refine_rounds < 0:
            raise ValueError(f"max_refine_rounds must be >= 0, got {self.max_refine_rounds}")
        if self.repair_max_tokens is not None and self.repair_max_tokens < 1:
            raise ValueError(f"--repair-max-tokens must be >= 1, got {self.repair_max_tokens}")
        if self.fallback is not None and self.fallback not in ("direct", "cot"):
            raise ValueError(f"fallback must be 'direct' or 'cot', got {self.fallback!r}")


@dataclass(frozen=True)
class Reply:
    """One LLM request of a method's round (:meth:`MethodContext.try_ask`).

    Attributes:
        completion: the answer, or None when the engine failed this request.
        error: the engine's message when it failed (None when it answered).
        seconds: how long the request took, queueing included.
    """

    completion: Completion | None
    error: str | None
    seconds: float


@dataclass
class MethodContext:
    """What the job gives a method for one problem.

    Attributes:
        engine: the LLM engine (shared by every problem in flight; call it concurrently).
        solver: the solver pool, or None when the method does not ask for one.
        config: the shared settings.
        ledger: this problem's LLM accounting; :meth:`ask` keeps it.
    """

    engine: LLMEngine
    solver: SolverPool | None
    config: MethodConfig
    ledger: Ledger = field(default_factory=Ledger)

    async def ask(self, request: ChatRequest) -> Completion:
        """One LLM call, counted in the ledger (a failed call is a call too).

        Raises:
            EngineDeadError: the engine is gone (the job stops; a rerun resumes).
            EngineError: this request failed (the method records it and goes on).
        """
        try:
            completion = (await self.engine.generate([request]))[0]
        except EngineError:
            self.ledger.failed()
            raise
        self.ledger.add(completion)
        return completion

    async def try_ask(self, request: ChatRequest) -> Reply:
        """:meth:`ask`, a failed request given back as data: a round of a method's loop records it and stops.

        Raises:
            EngineDeadError: the engine is gone (the job stops; a rerun resumes).
        """
        t0 = time.perf_counter()
        try:
            completion = await self.ask(request)
        except EngineDeadError:
            raise
        except EngineError as exc:
            return Reply(None, str(exc), time.perf_counter() - t0)
        return Reply(completion, None, time.perf_counter() - t0)

    def structured(self, spec: dict | None) -> StructuredOutput | None:
        """``spec`` as a structured-output constraint, or None where it is off or unsupported."""
        if not spec or not self.config.structured or not self.engine.supports_structured:
            return None
        return StructuredOutput(**{k: (tuple(v) if k == "choice" else v) for k, v in spec.items()})

    def chat(
        self,
        problem: Problem,
        purpose: str,
        pairs: Sequence[tuple[str, str]],
        *,
        params: SamplingParams | None = None,
        structured: StructuredOutput | None = None,
        request_id: str | None = None,
    ) -> ChatRequest:
        """A chat request of ``problem`` from (role, content) pairs; ``params`` default the answer params."""
        messages = tuple(Message(role, content) for role, content in pairs)  # type: ignore[arg-type]
        return ChatRequest(
            messages,
            params or self.config.answer_params,
            structured,
            problem_id=problem.id,
            purpose=purpose,
            request_id=request_id or f"{problem.id}/{purpose}",
        )

    def row(self, problem: Problem, outcome: Outcome, *, predicted: str | None, **details: Any) -> ResultRow:
        """The result row of ``problem``: the outcome, the answer scored against the gold, the ledger.

        ``details`` are :func:`~symbolkg.jobs.core.results.result_row`'s (program, language, rounds,
        success_round, attempts, worker, pool_attempts, latency_s, route, trace, stage_seconds).
        """
        return result_row(
            problem, outcome, method=self.config.method, predicted=predicted, ledger=self.ledger, **details
        )


class Method:
    """A reasoning method: one coroutine per problem, plus the flags and per-job state it owns.

    Subclasses set ``name`` (the ``--method`` value), ``summary`` (one line for ``--help``) and
    ``needs_solver`` (or ``wants_solver``), and implement :meth:`run`. Override :meth:`add_arguments` and
    :meth:`from_args` to add flags of the method's own, :meth:`run_info` to record its settings
    in the run's metadata, and :meth:`close` to release per-job state.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    needs_solver: ClassVar[bool] = False
    #: Runs without a solver pool but uses one when the job has it (``symbolkg solve`` then
    #: starts one): the prolog agent re-derives its answers there for their certificates.
    wants_solver: ClassVar[bool] = False

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        """Add the method's own flags to ``symbolkg solve`` (``group`` is titled after the method)."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Method:
        """The method as ``symbolkg solve``'s flags configure it.

        Raises:
            ValueError: a flag of the method has a bad value (the message names it).
        """
        return cls()

    def run_info(self) -> dict[str, Any]:
        """The method's settings, stored in the run's metadata."""
        return {}

    async def run(self, problem: Problem, ctx: MethodContext) -> ResultRow:
        """Solve one problem; record what went wrong in the row instead of raising.

        Raises:
            EngineDeadError: the engine is gone (the job stops; a rerun resumes).
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release per-job state; called once when the job ends, however it ends."""
