"""A problem's way to a solver and back, written once for every job: the checks it asks for, its LLM
accounting, and its scored result row.

* :func:`check_spec`: the formalization checks a worker runs on a problem's program before it solves
  it (the recorded-programs job of ``symbolkg solve`` and the LLM methods' refine loop alike);
* :class:`Ledger`: LLM calls, tokens and seconds (a problem's, a retrieve stage's, an LKG extraction's);
* :func:`result_row`: an outcome scored against the gold, with the ledger, as a
  :class:`~symbolkg.jobs.core.rows.ResultRow` (``MethodContext.row`` is this with the method's
  name and the problem's ledger).

Example:
    >>> from symbolkg.jobs.core.rows import Problem
    >>> from symbolkg.solvers.outcomes import Outcome, Status
    >>> p = Problem(id="p1", dataset="custom", context="", question="A or B?", options=(), answer="A")
    >>> row = result_row(p, Outcome(Status.PROVED, answer="A", backend="z3"), method="m", predicted="A")
    >>> (row.correct, row.llm_calls, row.trace, row.attempts_log)
    (True, 0, '{}', '[]')
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from symbolkg.actors.engines.base import Completion
from symbolkg.jobs.core.answers import is_correct
from symbolkg.jobs.core.rows import Problem, ResultRow, certificate_json
from symbolkg.solvers.outcomes import CheckSpec, Outcome


def check_spec(problem: Problem, *, corrections: bool) -> CheckSpec:
    """The formalization checks the worker runs on ``problem``'s program with its solve.

    Args:
        problem: its question, options and context are what the checks compare the program against.
        corrections: solve the program as the checks corrected it (False: as written; the checks
            still run and are recorded).
    """
    return CheckSpec(problem.question, tuple(problem.options), corrections, problem.context)


@dataclass
class Ledger:
    """LLM accounting: calls, tokens, seconds (a problem's are the row's LLM columns).

    Attributes:
        prompt_tokens, completion_tokens: tokens of the requests answered (cache hits cost 0).
        calls: requests made, failed ones included.
        cached: requests a completion cache answered.
        seconds: summed latency of the requests answered.
        model: the model of the last answer (None before any).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached: int = 0
    seconds: float = 0.0
    model: str | None = None

    def add(self, c: Completion) -> None:
        """One request answered."""
        self.prompt_tokens += c.prompt_tokens
        self.completion_tokens += c.completion_tokens
        self.calls += 1
        self.cached += int(c.cached)
        self.seconds += c.latency_s
        self.model = c.model or self.model

    def failed(self) -> None:
        """One request the engine failed: a call too, with no tokens."""
        self.calls += 1

    def merge(self, other: Ledger) -> None:
        """Add ``other``'s calls, tokens and seconds (spent on this one's behalf: a retrieve stage, an
        extraction). The model stays this ledger's: a row names the model that wrote its answer."""
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.calls += other.calls
        self.cached += other.cached
        self.seconds += other.seconds


def result_row(
    problem: Problem,
    outcome: Outcome,
    *,
    method: str,
    predicted: str | None,
    ledger: Ledger | None = None,
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
    """The result row of ``problem``: the outcome, the answer scored against the gold, the LLM accounting.

    Args:
        problem: the problem (its id, dataset and gold answer).
        outcome: the kept program's outcome.
        method: the ``method`` column.
        predicted: the answer on the problem's answer space (None: unanswered, scored wrong).
        ledger: the problem's LLM accounting (None: no LLM call, as for recorded programs).
        program, language: the program that ran and its language (None: none).
        rounds, success_round: programs written and run, and the round whose program executed.
        attempts: the ``attempts_log`` objects, one per round.
        worker, pool_attempts: where the program ran, and how many runs the pool needed.
        latency_s: submit-to-result seconds of the problem.
        route: the router's solver (``symbolkg`` only).
        trace: the row's ``trace`` object; the parser's ``readings`` of the program are added when it made any.
        stage_seconds: stage -> seconds (rounded to 4 places in the row).
    """
    ledger = ledger or Ledger()
    return ResultRow(
        problem_id=problem.id,
        dataset=problem.dataset,
        method=method,
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
