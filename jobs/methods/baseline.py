"""The LLM-only baselines: ``direct`` (answer at once) and ``cot`` (think, then answer).

"Executed" means an answer could be read off the completion; with options, structured
decoding constrains it to the options where the engine supports it.
"""

from __future__ import annotations

import time

from symbolkg.actors.engines.base import EngineDeadError, EngineError
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.methods.base import Method, MethodContext
from symbolkg.solvers import prompts
from symbolkg.solvers.outcomes import ErrorKind, Outcome, Status


async def answer_directly(problem: Problem, ctx: MethodContext, method: str) -> tuple[str | None, str, str | None]:
    """Ask ``method`` (``direct`` or ``cot``) for the answer. Returns (predicted, completion text, engine error).

    Raises:
        EngineDeadError: the engine is gone.
    """
    cot = method == "cot"
    pairs = (prompts.cot_messages if cot else prompts.direct_messages)(
        problem.context, problem.question, problem.options
    )
    spec = prompts.answer_structured_output(problem.options, cot=cot) if problem.options else None
    cfg = ctx.config
    request = ctx.chat(
        problem,
        "answer",
        pairs,
        params=cfg.cot_params if cot else cfg.answer_params,
        structured=ctx.structured(spec),
        request_id=f"{problem.id}/{method}",
    )
    try:
        completion = await ctx.ask(request)
    except EngineDeadError:
        raise
    except EngineError as exc:
        return None, "", str(exc)
    if problem.options:
        return prompts.extract_answer(completion.text, problem.options), completion.text, None
    text = completion.text.strip()
    return (text.splitlines()[0].strip() if text else None), completion.text, None


class Direct(Method):
    """The LLM answers at once (at most ``answer_params.max_tokens`` tokens)."""

    name = "direct"
    summary = "the LLM answers at once"

    async def run(self, problem: Problem, ctx: MethodContext) -> ResultRow:
        t0 = time.monotonic()
        predicted, text, error = await answer_directly(problem, ctx, self.name)
        if error is not None:
            outcome = Outcome.error(Status.RUNTIME_ERROR, ErrorKind.LLM, error, backend="llm")
        elif predicted is None:
            outcome = Outcome.error(
                Status.PARSE_ERROR, ErrorKind.NO_ANSWER, "no answer could be read off the completion", backend="llm"
            )
        else:
            outcome = Outcome(Status.PROVED, answer=predicted, proof=text, backend="llm")
        attempts = [
            {"round": 1, "purpose": "answer", "completion": text, "predicted": predicted, "engine_error": error}
        ]
        return ctx.row(problem, outcome, predicted=predicted, attempts=attempts, latency_s=time.monotonic() - t0)


class ChainOfThought(Direct):
    """The LLM reasons step by step, then answers (``cot_params``)."""

    name = "cot"
    summary = "the LLM reasons step by step, then answers"
