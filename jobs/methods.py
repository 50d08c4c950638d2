"""The LLM methods: ``direct``, ``cot``, ``logiclm`` (formulate -> solve -> refine -> interpret) and ``symbolkg``.

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
from typing import TYPE_CHECKING, Literal

from actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError, LLMEngine, Message, SamplingParams, StructuredOutput
from jobs.answers import interpret, is_correct
from jobs.records import Problem, ResultRow
from solvers import prompts
from solvers.pool import SolverPool
from solvers.records import ErrorKind, Limits, Outcome, SolveRequest, Status

if TYPE_CHECKING:
    from jobs.symbolkg import SymbolKG

MethodName = Literal["direct", "cot", "logiclm", "symbolkg"]
METHODS: tuple[str, ...] = ("direct", "cot", "logiclm", "symbolkg")


@dataclass(frozen=True)
class MethodConfig:
    """How a method runs.

    Attributes:
        method: ``direct``, ``cot``, ``logiclm`` or ``symbolkg`` (:mod:`jobs.symbolkg`).
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
    try:
        completion = (await engine.generate([request]))[0]
    except EngineError:
        ledger.calls += 1  # a failed request is a call too (as in the LKG and retrieve stages)
        raise
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
         worker: str = "-", pool_attempts: int = 0, latency_s: float = 0.0, route: str | None = None,
         trace: dict | None = None, stage_seconds: dict[str, float] | None = None) -> ResultRow:
    return ResultRow(
        problem_id=problem.id, dataset=problem.dataset, method=cfg.method, language=language, program=program,
        status=outcome.status.value, executed=outcome.executed, answer=outcome.answer, predicted=predicted,
        gold=problem.answer, correct=outcome.executed and is_correct(problem, predicted),
        error_kind=outcome.error_kind, error_message=outcome.error_message, error_line=outcome.error_line,
        proof=outcome.proof, backend=outcome.backend, solve_seconds=outcome.seconds, latency_seconds=latency_s,
        worker=worker, attempts=pool_attempts, finished_at=time.time(), model=ledger.model,
        prompt_tokens=ledger.prompt_tokens, completion_tokens=ledger.completion_tokens, llm_calls=ledger.calls,
        cached_calls=ledger.cached, llm_seconds=round(ledger.seconds, 4), rounds=rounds, success_round=success_round,
        attempts_log=json.dumps(attempts, ensure_ascii=False), route=route,
        trace=json.dumps(trace or {}, ensure_ascii=False),
        stage_seconds=json.dumps({k: round(v, 4) for k, v in (stage_seconds or {}).items()}),
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


@dataclass
class Formalized:
    """What the formulate -> solve -> refine loop produced for one problem.

    Attributes:
        outcome: the last program's outcome (None when the LLM never gave a program).
        program: the last program run.
        attempts: one object per round (see :attr:`jobs.records.ResultRow.attempts_log`).
        rounds: programs written and run.
        worker, pool_attempts: where the last program ran, and how many runs it took.
        seconds: ``formalize`` (the first LLM request), ``solve`` (every program, queueing
            included), ``refine`` (the repair requests).
    """

    outcome: Outcome | None = None
    program: str | None = None
    attempts: list[dict] = field(default_factory=list)
    rounds: int = 0
    worker: str = "-"
    pool_attempts: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: {"formalize": 0.0, "solve": 0.0, "refine": 0.0})


async def formalize_solve_refine(problem: Problem, cfg: MethodConfig, engine: LLMEngine, solver: SolverPool,
                                 ledger: _Ledger, *, language: str, run_as: str | None = None,
                                 context: str | None = None, hints: str = "") -> Formalized:
    """The shared loop: ask for a program, run it, feed errors back, at most ``1 + cfg.max_refine_rounds`` times.

    Args:
        problem: the problem (its question and options are always shown).
        cfg: rounds, sampling, limits, structured decoding.
        engine, solver: the backends.
        ledger: LLM accounting of the problem (updated).
        language: the program language the LLM is prompted for.
        run_as: the registry language the pool runs (default ``language``).
        context: the premises shown (default the problem's whole context).
        hints: knowledge-graph symbols shown after the context (:func:`solvers.prompts.formulation_messages`).

    Raises:
        EngineDeadError: the engine is gone.
    """
    context = problem.context if context is None else context
    run_as = run_as or language
    pairs = prompts.formulation_messages(language, context, problem.question, problem.options, hints)
    structured = _structured(prompts.program_structured_output(language), engine, cfg)
    out = Formalized()
    for round_no in range(1, cfg.max_refine_rounds + 2):
        purpose = "formulate" if round_no == 1 else "refine"
        request = ChatRequest(_messages(pairs), cfg.formulate_params, structured, problem_id=problem.id,
                              purpose=purpose, request_id=f"{problem.id}/{purpose}/{round_no}")
        t0 = time.perf_counter()
        try:
            completion = await _ask(engine, request, ledger)
        except EngineDeadError:
            raise
        except EngineError as exc:
            # No (further) program from the LLM: keep the last outcome. The recorded engine
            # lands here for repairs it does not have.
            out.attempts.append({"round": round_no, "purpose": purpose, "engine_error": str(exc)})
            break
        finally:
            out.seconds["formalize" if round_no == 1 else "refine"] += time.perf_counter() - t0
        out.rounds = round_no
        program = prompts.extract_program(language, completion.text)
        t0 = time.perf_counter()
        result = await solver.solve(SolveRequest(problem.id, run_as, program, cfg.limits))
        out.seconds["solve"] += time.perf_counter() - t0
        out.outcome, out.program, out.worker, out.pool_attempts = result.outcome, program, result.worker, result.attempts
        out.attempts.append({
            "round": round_no, "purpose": purpose, "program": program, "completion": completion.text,
            "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "llm_seconds": round(completion.latency_s, 4), "cached": completion.cached,
            "outcome": {k: v for k, v in result.outcome.to_dict().items() if k != "proof"},
        })
        if result.outcome.executed or round_no > cfg.max_refine_rounds:
            break
        pairs = prompts.refine_messages(language, context, problem.question, problem.options, program,
                                        result.outcome.error_kind,
                                        result.outcome.error_message or result.outcome.status.value,
                                        result.outcome.error_line, hints)
    return out


def final_outcome(formalized: Formalized) -> Outcome:
    """The loop's outcome, or an LLM error outcome when no program was ever run."""
    if formalized.outcome is not None:
        return formalized.outcome
    last = formalized.attempts[-1].get("engine_error", "no completion") if formalized.attempts else "no completion"
    return Outcome.error(Status.RUNTIME_ERROR, ErrorKind.LLM, last, backend="llm")


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
    f = await formalize_solve_refine(problem, cfg, engine, solver, ledger, language=language)
    outcome = final_outcome(f)
    predicted = interpret(problem, outcome.answer) if outcome.executed else None
    return _row(problem, cfg, outcome=outcome, predicted=predicted, program=f.program, language=language,
                ledger=ledger, rounds=f.rounds, success_round=f.rounds if outcome.executed else None,
                attempts=f.attempts, worker=f.worker, pool_attempts=f.pool_attempts,
                latency_s=time.monotonic() - t0, stage_seconds=f.seconds)


async def run_problem(problem: Problem, cfg: MethodConfig, engine: LLMEngine, solver: SolverPool | None,
                      kg: "SymbolKG | None" = None) -> ResultRow:
    """Run ``cfg.method`` (and its fallback, if the main method gave no answer) on one problem.

    ``kg`` holds the ``symbolkg`` method's LKG store, embedder and settings.
    """
    if cfg.method in ("logiclm", "symbolkg") and solver is None:
        raise ValueError(f"the {cfg.method} method needs a solver pool")
    if cfg.method == "symbolkg":
        from jobs.symbolkg import run_symbolkg

        if kg is None:
            raise ValueError("the symbolkg method needs its LKG store and embedder (a jobs.symbolkg.SymbolKG)")
        row = await run_symbolkg(problem, cfg, engine, solver, kg)  # type: ignore[arg-type]
    elif cfg.method == "logiclm":
        row = await run_logiclm(problem, cfg, engine, solver)  # type: ignore[arg-type]
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
