"""The LLM methods: ``direct``, ``cot`` and ``logiclm`` (formulate -> solve -> refine -> interpret).

Each method is one coroutine over one problem. It receives the backends it uses — an
LLM engine and a solver pool — and returns a :class:`jobs.records.ResultRow` with every
attempt recorded. Prompts and output parsing live beside the parsers
(:mod:`solvers.prompts`); the engine and pool are never imported here, only used.

Logic-LM's loop (Pan et al., 2023), with two deliberate differences:

* no random backup answer: a problem whose programs never execute is unanswered and
  scored wrong; a named fallback method may answer it, counted in separate columns;
* the error fed back for repair is structured (kind, line, message) and the program is
  shown with line numbers.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Literal

from actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError, LLMEngine, Message, SamplingParams, StructuredOutput
from jobs.answers import interpret, is_correct
from jobs.records import Problem, ResultRow
from solvers import prompts
from solvers.pool import SolverPool
from solvers.records import ErrorKind, Limits, Outcome, SolveRequest, Status

MethodName = Literal["direct", "cot", "logiclm"]
METHODS: tuple[str, ...] = ("direct", "cot", "logiclm")


@dataclass(frozen=True)
class MethodConfig:
    """How a method runs.

    Attributes:
        method: ``direct``, ``cot`` or ``logiclm``.
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
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.max_refine_rounds < 0:
            raise ValueError(f"max_refine_rounds must be >= 0, got {self.max_refine_rounds}")
        if self.fallback is not None and self.fallback not in ("direct", "cot"):
            raise ValueError(f"fallback must be 'direct' or 'cot', got {self.fallback!r}")


@dataclass
class _Ledger:
    """LLM accounting of one problem."""

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


def _messages(pairs: list[tuple[str, str]]) -> tuple[Message, ...]:
    return tuple(Message(role, content) for role, content in pairs)  # type: ignore[arg-type]


def _structured(spec: dict | None, engine: LLMEngine, cfg: MethodConfig) -> StructuredOutput | None:
    if not spec or not cfg.structured or not engine.supports_structured:
        return None
    return StructuredOutput(**{k: (tuple(v) if k == "choice" else v) for k, v in spec.items()})


async def _ask(engine: LLMEngine, request: ChatRequest, ledger: _Ledger) -> Completion:
    completion = (await engine.generate([request]))[0]
    ledger.add(completion)
    return completion


def language_for(problem: Problem) -> str | None:
    """The formalization language of a problem's dataset (None if the method has none)."""
    return prompts.LANGUAGE_FOR_DATASET.get(problem.dataset)


async def answer_directly(problem: Problem, cfg: MethodConfig, engine: LLMEngine, method: str,
                          ledger: _Ledger) -> tuple[str | None, str, str | None]:
    """``direct``/``cot``: ask for the answer. Returns (predicted, completion text, engine error)."""
    cot = method == "cot"
    pairs = (prompts.cot_messages if cot else prompts.direct_messages)(problem.context, problem.question, problem.options)
    spec = prompts.answer_structured_output(problem.options, cot=cot) if problem.options else None
    request = ChatRequest(_messages(pairs), cfg.cot_params if cot else cfg.answer_params, _structured(spec, engine, cfg),
                          problem_id=problem.id, purpose="answer", request_id=f"{problem.id}/{method}")
    try:
        completion = await _ask(engine, request, ledger)
    except EngineDeadError:
        raise
    except EngineError as exc:
        return None, "", str(exc)
    if problem.options:
        return prompts.extract_answer(completion.text, problem.options), completion.text, None
    text = completion.text.strip()
    return (text.splitlines()[0].strip() if text else None), completion.text, None


def _row(problem: Problem, cfg: MethodConfig, *, outcome: Outcome, predicted: str | None, program: str | None,
         language: str | None, ledger: _Ledger, rounds: int, success_round: int | None, attempts: list[dict],
         worker: str = "-", pool_attempts: int = 0, latency_s: float = 0.0) -> ResultRow:
    return ResultRow(
        problem_id=problem.id, dataset=problem.dataset, method=cfg.method, language=language, program=program,
        status=outcome.status.value, executed=outcome.executed, answer=outcome.answer, predicted=predicted,
        gold=problem.answer, correct=outcome.executed and is_correct(problem, predicted),
        error_kind=outcome.error_kind, error_message=outcome.error_message, error_line=outcome.error_line,
        proof=outcome.proof, backend=outcome.backend, solve_seconds=outcome.seconds, latency_seconds=latency_s,
        worker=worker, attempts=pool_attempts, finished_at=time.time(), model=ledger.model,
        prompt_tokens=ledger.prompt_tokens, completion_tokens=ledger.completion_tokens, llm_calls=ledger.calls,
        cached_calls=ledger.cached, llm_seconds=round(ledger.seconds, 4), rounds=rounds, success_round=success_round,
        attempts_log=json.dumps(attempts, ensure_ascii=False),
    )


async def run_baseline(problem: Problem, cfg: MethodConfig, engine: LLMEngine) -> ResultRow:
    """``direct`` / ``cot``: the LLM answers; "executed" means an answer could be read off."""
    ledger = _Ledger()
    t0 = time.monotonic()
    predicted, text, error = await answer_directly(problem, cfg, engine, cfg.method, ledger)
    if error is not None:
        outcome = Outcome.error(Status.RUNTIME_ERROR, ErrorKind.LLM, error, backend="llm")
    elif predicted is None:
        outcome = Outcome.error(Status.PARSE_ERROR, ErrorKind.NO_ANSWER,
                                "no answer could be read off the completion", backend="llm")
    else:
        outcome = Outcome(Status.PROVED, answer=predicted, proof=text, backend="llm")
    attempts = [{"round": 1, "purpose": "answer", "completion": text, "predicted": predicted, "engine_error": error}]
    return _row(problem, cfg, outcome=outcome, predicted=predicted, program=None, language=None, ledger=ledger,
                rounds=0, success_round=None, attempts=attempts, latency_s=time.monotonic() - t0)


async def run_logiclm(problem: Problem, cfg: MethodConfig, engine: LLMEngine, solver: SolverPool) -> ResultRow:
    """Formulate -> solve -> (refine on error, <= cfg.max_refine_rounds) -> interpret."""
    ledger = _Ledger()
    t0 = time.monotonic()
    language = language_for(problem)
    if language is None:
        outcome = Outcome.error(Status.PARSE_ERROR, ErrorKind.UNSUPPORTED,
                                f"logiclm has no formalization language for dataset {problem.dataset!r}")
        return _row(problem, cfg, outcome=outcome, predicted=None, program=None, language=None, ledger=ledger,
                    rounds=0, success_round=None, attempts=[])
    pairs = prompts.formulation_messages(language, problem.context, problem.question, problem.options)
    structured = _structured(prompts.program_structured_output(language), engine, cfg)
    attempts: list[dict] = []
    outcome: Outcome | None = None
    program: str | None = None
    worker, pool_attempts = "-", 0
    rounds = 0
    for round_no in range(1, cfg.max_refine_rounds + 2):
        purpose = "formulate" if round_no == 1 else "refine"
        request = ChatRequest(_messages(pairs), cfg.formulate_params, structured, problem_id=problem.id,
                              purpose=purpose, request_id=f"{problem.id}/{purpose}/{round_no}")
        try:
            completion = await _ask(engine, request, ledger)
        except EngineDeadError:
            raise
        except EngineError as exc:
            # No (further) program from the LLM: keep the last outcome. The recorded engine
            # lands here for repairs it does not have.
            attempts.append({"round": round_no, "purpose": purpose, "engine_error": str(exc)})
            break
        rounds = round_no
        program = prompts.extract_program(language, completion.text)
        result = await solver.solve(SolveRequest(problem.id, language, program, cfg.limits))
        outcome, worker, pool_attempts = result.outcome, result.worker, result.attempts
        attempts.append({
            "round": round_no, "purpose": purpose, "program": program, "completion": completion.text,
            "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "llm_seconds": round(completion.latency_s, 4), "cached": completion.cached,
            "outcome": {k: v for k, v in outcome.to_dict().items() if k != "proof"},
        })
        if outcome.executed or round_no > cfg.max_refine_rounds:
            break
        pairs = prompts.refine_messages(language, problem.context, problem.question, problem.options, program,
                                        outcome.error_kind, outcome.error_message or outcome.status.value,
                                        outcome.error_line)
    if outcome is None:
        last = attempts[-1].get("engine_error", "no completion") if attempts else "no completion"
        outcome = Outcome.error(Status.RUNTIME_ERROR, ErrorKind.LLM, last, backend="llm")
    predicted = interpret(problem, outcome.answer) if outcome.executed else None
    return _row(problem, cfg, outcome=outcome, predicted=predicted, program=program, language=language, ledger=ledger,
                rounds=rounds, success_round=rounds if outcome.executed else None, attempts=attempts, worker=worker,
                pool_attempts=pool_attempts, latency_s=time.monotonic() - t0)


async def run_problem(problem: Problem, cfg: MethodConfig, engine: LLMEngine, solver: SolverPool | None) -> ResultRow:
    """Run ``cfg.method`` (and its fallback, if the main method gave no answer) on one problem."""
    if cfg.method == "logiclm":
        if solver is None:
            raise ValueError("the logiclm method needs a solver pool")
        row = await run_logiclm(problem, cfg, engine, solver)
    else:
        row = await run_baseline(problem, cfg, engine)
    if cfg.fallback and row.predicted is None:
        ledger = _Ledger()
        predicted, _, _ = await answer_directly(problem, cfg, engine, cfg.fallback, ledger)
        data = asdict(row)
        data.update(
            fallback_method=cfg.fallback, fallback_predicted=predicted,
            fallback_correct=is_correct(problem, predicted),
            prompt_tokens=row.prompt_tokens + ledger.prompt_tokens,
            completion_tokens=row.completion_tokens + ledger.completion_tokens,
            llm_calls=row.llm_calls + ledger.calls, cached_calls=row.cached_calls + ledger.cached,
            llm_seconds=round(row.llm_seconds + ledger.seconds, 4),
        )
        row = ResultRow(**data)
    return row
