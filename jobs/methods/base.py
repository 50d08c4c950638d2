"""The method interface: what a reasoning method gets from the job, and what it gives back.

A method is a plug-in (see :mod:`symbolkg.jobs.methods` for the registry): a subclass of
:class:`Method` with a ``name`` and one coroutine, :meth:`Method.run`, that turns one
:class:`~symbolkg.jobs.pipeline.rows.Problem` into one :class:`~symbolkg.jobs.pipeline.rows.ResultRow`.
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
    >>> from symbolkg.jobs.pipeline.rows import Problem
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
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from symbolkg.actors.engines.base import (
    ChatRequest,
    Completion,
    EngineError,
    LLMEngine,
    Message,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.jobs.pipeline.answers import is_correct
from symbolkg.jobs.pipeline.rows import Problem, ResultRow, certificate_json
from symbolkg.solvers.outcomes import Limits, Outcome, Status

if TYPE_CHECKING:
    # a type only: the pool's module brings the solver registry, not needed to list a method's flags
    from symbolkg.solvers.runtime.local_pool import SolverPool

__all__ = ["Ledger", "Method", "MethodConfig", "MethodContext", "Outcome", "Status"]


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

    def __post_init__(self) -> None:
        if not self.method or not isinstance(self.method, str):
            raise ValueError(f"method must be a registered method name, got {self.method!r}")
        if self.max_refine_rounds < 0:
            raise ValueError(f"max_refine_rounds must be >= 0, got {self.max_refine_rounds}")
        if self.fallback is not None and self.fallback not in ("direct", "cot"):
            raise ValueError(f"fallback must be 'direct' or 'cot', got {self.fallback!r}")


@dataclass
class Ledger:
    """LLM accounting of one problem: calls, tokens, seconds (the row's LLM columns)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached: int = 0
    seconds: float = 0.0
    model: str | None = None

    def add(self, c: Completion) -> None:
        self.prompt_tokens += c.prompt_tokens
        self.completion_tokens += c.completion_tokens
        self.calls += 1
        self.cached += int(c.cached)
        self.seconds += c.latency_s
        self.model = c.model or self.model


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
            self.ledger.calls += 1
            raise
        self.ledger.add(completion)
        return completion

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

    def row(
        self,
        problem: Problem,
        outcome: Outcome,
        *,
        predicted: str | None,
        program: str | None = None,
        language: str | None = None,
        rounds: int = 0,
        success_round: int | None = None,
        attempts: list[dict] | None = None,
        worker: str = "-",
        pool_attempts: int = 0,
        latency_s: float = 0.0,
        route: str | None = None,
        trace: dict | None = None,
        stage_seconds: dict[str, float] | None = None,
    ) -> ResultRow:
        """The result row of ``problem``: the outcome, the answer scored against the gold, the ledger."""
        ledger = self.ledger
        return ResultRow(
            problem_id=problem.id,
            dataset=problem.dataset,
            method=self.config.method,
            language=language,
            program=program,
            status=outcome.status.value,
            executed=outcome.executed,
            answer=outcome.answer,
            predicted=predicted,
            gold=problem.answer,
            correct=outcome.executed and is_correct(problem, predicted),
            error_kind=outcome.error_kind,
            error_message=outcome.error_message,
            error_line=outcome.error_line,
            proof=outcome.proof,
            backend=outcome.backend,
            solve_seconds=outcome.seconds,
            latency_seconds=latency_s,
            worker=worker,
            attempts=pool_attempts,
            finished_at=time.time(),
            model=ledger.model,
            prompt_tokens=ledger.prompt_tokens,
            completion_tokens=ledger.completion_tokens,
            llm_calls=ledger.calls,
            cached_calls=ledger.cached,
            llm_seconds=round(ledger.seconds, 4),
            rounds=rounds,
            success_round=success_round,
            attempts_log=json.dumps(attempts or [], ensure_ascii=False),
            route=route,
            trace=json.dumps(
                {**(trace or {}), **({"readings": outcome.readings} if outcome.readings else {})}, ensure_ascii=False
            ),
            stage_seconds=json.dumps({k: round(v, 4) for k, v in (stage_seconds or {}).items()}),
            certificate=certificate_json(outcome.certificate),
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
