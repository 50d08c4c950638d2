"""Logic-LM (Pan et al., 2023): formulate -> solve -> refine on error -> interpret.

Deliberate differences from the paper (each with its reason and effect in docs/SEEDS.md):

* no backup answer by default: a problem whose programs never execute is unanswered and scored
  wrong (the paper falls back to chain of thought, Logic-LM's released code to a random option);
  ``--fallback cot`` or ``direct`` answers it, counted in separate columns;
* the error fed back for repair is the solver's own (kind, the line it points at, quoted, and its
  message), with no demonstrations of repairs;
* a program that runs but whose formalization checks find an error the text does not resolve
  (:mod:`symbolkg.solvers.checks`) is sent back too; errors the checks correct themselves are
  corrected after the loop instead.

``--logiclm-feedback solver`` is the paper's refiner instead (:data:`FEEDBACK`): only a program that
did not execute goes back, with the solver's message alone (no line quoted, no check findings), so
the two can be measured side by side (benchmarks/llm_formalizer.py).

The loop (:func:`symbolkg.jobs.methods.refine.formalize_solve_refine`) is shared with the
``symbolkg`` method.

With ``--logiclm-samples K`` > 1 the method samples K whole loops (seeds 1..K, concurrently:
:func:`run_samples`) and answers with the certified vote of :mod:`symbolkg.jobs.methods.vote`: only
samples whose program executed, gave an answer and has no check error count; a tie, or no such
sample, leaves the problem unanswered. Every sample and the count are in the row's trace.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from typing import Any

from symbolkg.jobs.core.answers import interpret
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.datasets.logiclm import language_of
from symbolkg.jobs.methods.base import Method, MethodContext
from symbolkg.jobs.methods.refine import FEEDBACK, Formalized, formalize_solve_refine
from symbolkg.jobs.methods.vote import Vote, vote
from symbolkg.solvers import prompts
from symbolkg.solvers.outcomes import CheckFinding, ErrorKind, Outcome, Status

#: When the K sampled loops of ``--logiclm-samples K`` run (:class:`LogicLMConfig`).
SAMPLE_ON = ("always", "failure")


def language_for(problem: Problem) -> str | None:
    """The formalization language of a problem (:func:`symbolkg.jobs.datasets.logiclm.language_of`), when
    Logic-LM has prompts for it; else None."""
    language = language_of(problem)
    return language if language in prompts.EXAMPLES else None


@dataclass(frozen=True)
class LogicLMConfig:
    """The logiclm method's own settings (its ``--logiclm-*`` flags; a run config's ``logiclm`` section).

    Attributes:
        grammar: what structured decoding constrains (``"skeleton"``, the default, or ``"full"``;
            :func:`symbolkg.solvers.prompts.program_structured_output`).
        samples: programs sampled per problem, each a whole formulate -> solve -> refine loop with its
            own repairs; the answer is the certified vote of :mod:`symbolkg.jobs.methods.vote`. 1 (the
            default) is the single greedy loop, every request as without this option, so completion
            caches written before it still replay.
        temperature: the sampling temperature of every request of a sampled loop (only with
            ``samples > 1``: one greedy loop needs none, and K greedy loops would be K copies). Sample
            ``i`` (1..K) has seed ``i``, so a rerun asks the same calls and a cache replays them.
        feedback: what a repair is told (:data:`FEEDBACK`): ``"checks"`` (the default) or
            ``"solver"`` (Logic-LM's refiner).
        sample_on: when the sampled loops run (:data:`SAMPLE_ON`; only with ``samples > 1``):
            ``"always"`` (the default: the vote of K sampled loops answers every problem) or
            ``"failure"`` (the greedy loop first, its requests those of ``samples=1``; the K sampled
            loops and their vote only when its program did not execute, the greedy loop then in the
            row as sample 0). Samples cost K loops; with ``failure`` only where one loop got nothing.
    """

    grammar: str = "skeleton"
    samples: int = 1
    temperature: float = 0.7
    feedback: str = "checks"
    sample_on: str = "always"

    def __post_init__(self) -> None:
        if self.grammar not in prompts.PROGRAM_CONSTRAINTS:
            choices = ", ".join(prompts.PROGRAM_CONSTRAINTS)
            raise ValueError(f"--logiclm-grammar must be one of {choices}, got {self.grammar!r}")
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1:
            raise ValueError(f"--logiclm-samples must be an integer >= 1, got {self.samples!r}")
        if self.feedback not in FEEDBACK:
            raise ValueError(f"--logiclm-feedback must be one of {', '.join(FEEDBACK)}, got {self.feedback!r}")
        if self.sample_on not in SAMPLE_ON:
            raise ValueError(f"--logiclm-sample-on must be one of {', '.join(SAMPLE_ON)}, got {self.sample_on!r}")
        if self.sample_on != "always" and self.samples == 1:
            raise ValueError(f"--logiclm-sample-on {self.sample_on} needs --logiclm-samples K > 1")
        if not 0.0 <= self.temperature <= 5.0:
            raise ValueError(f"--logiclm-temperature must be in [0, 5], got {self.temperature!r}")
        if self.samples > 1 and self.temperature == 0.0:
            raise ValueError(
                f"--logiclm-temperature 0 with --logiclm-samples {self.samples} would sample the same "
                "greedy program every time; give a temperature above 0, or --logiclm-samples 1"
            )


@dataclass
class Sample:
    """One sampled loop of a vote (``--logiclm-samples K``): its seed, what it produced, its answer.

    Attributes:
        seed: the sample's seed (1..K), also the tag of its request ids and attempts; 0 is the greedy
            loop that failed before the samples ran (``--logiclm-sample-on failure``).
        formalized: the loop's result (its kept program, outcome, checks, attempts).
        predicted: the outcome's answer on the problem's answer space (an option letter), None when
            the kept program did not execute or its answer maps onto no option.
    """

    seed: int
    formalized: Formalized
    predicted: str | None

    @property
    def findings(self) -> list[CheckFinding]:
        """The checks' findings on the program whose outcome stands: the corrected program's when the
        text-resolved corrections were applied (what remains), else the kept round's as written."""
        f = self.formalized
        return f.remaining if f.corrections else f.checks

    @property
    def executed(self) -> bool:
        return self.formalized.outcome is not None and self.formalized.outcome.executed

    @property
    def rank(self) -> str:
        """``clean`` (executed, no check error), ``flagged`` (executed with a check error) or ``failed``."""
        if not self.executed:
            return "failed"
        return "flagged" if any(f.severity == "error" for f in self.findings) else "clean"

    @property
    def excluded(self) -> str | None:
        """Why the sample casts no vote (None when it counts): not executed, check errors, or no answer."""
        if not self.executed:
            outcome = self.formalized.final_outcome()
            return f"not executed ({outcome.error_kind or outcome.status.value})"
        if self.rank == "flagged":
            names = sorted({f.check for f in self.findings if f.severity == "error"})
            return "check errors (" + ", ".join(names) + ")"
        return None if self.predicted is not None else "no answer on the options"

    def entry(self) -> dict[str, Any]:
        """The sample's entry of the row's ``trace["samples"]`` (module :func:`run_samples`)."""
        f = self.formalized
        outcome = f.final_outcome()
        attempts = [a for a in f.attempts if "prompt_tokens" in a]
        return {
            "seed": self.seed,
            "answer": self.predicted,
            "solver_answer": outcome.answer,
            "executed": self.executed,
            "rank": self.rank,
            "counted": self.excluded is None,
            "excluded": self.excluded,
            "kept_round": f.kept_round,
            "rounds": f.rounds,
            "fixed_point": f.fixed_point,
            "status": outcome.status.value,
            "error_kind": outcome.error_kind,
            "error_message": outcome.error_message,
            "checks": [f.to_dict() for f in self.findings],
            "corrected": bool(f.corrections),
            "program": f.program,
            "prompt_tokens": sum(a["prompt_tokens"] for a in attempts),
            "completion_tokens": sum(a["completion_tokens"] for a in attempts),
        }


async def run_samples(problem: Problem, ctx: MethodContext, config: LogicLMConfig, language: str) -> list[Sample]:
    """``config.samples`` whole formulate -> solve -> refine loops of ``problem``, concurrently, in seed order.

    Sample ``i`` asks every request with ``config.temperature`` and seed ``i`` (1..K) and tags its
    request ids ``/seed{i}``. The loops run together (``asyncio.gather``), so the engine batches their
    requests and its prefix cache serves the few-shot prefix they share. Their LLM calls and tokens
    all land in ``ctx.ledger``.

    Raises:
        EngineDeadError: the engine is gone (the other loops are cancelled first).
    """
    base = ctx.config.formulate_params

    async def one(seed: int) -> Sample:
        f = await formalize_solve_refine(
            problem,
            ctx,
            language=language,
            grammar=config.grammar,
            params=replace(base, temperature=config.temperature, seed=seed),
            request_tag=f"/seed{seed}",
            feedback=config.feedback,
        )
        outcome = f.final_outcome()
        return Sample(seed, f, interpret(problem, outcome.answer) if outcome.executed else None)

    tasks = [asyncio.ensure_future(one(seed)) for seed in range(1, config.samples + 1)]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        # a dead engine (or a bug) in one loop: stop the others before the job sees the error
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _no_winner_outcome(result: Vote, samples: list[Sample]) -> Outcome:
    """The row's outcome when the vote names no answer: unanswered, the message saying why.

    A tie is ``unknown`` (the counted programs ran to verdicts; no unique answer). With no sample
    counted the status is ``unknown`` when some program ran (with check errors, or an answer on no
    option), else the first sample's failure status (parse error, timeout, ...), so the execution
    rate stays honest; the message lists why each sample was left out.
    """
    message = result.reason
    status = Status.UNKNOWN
    if not result.counted:
        excluded = Counter(s.excluded for s in samples)
        message += ": " + ", ".join(f"{why} x{n}" for why, n in excluded.items())
        if not any(s.executed for s in samples):
            status = samples[0].formalized.final_outcome().status
    return Outcome.error(status, result.error_kind or "", message, backend="vote")


def _vote_row(
    problem: Problem,
    ctx: MethodContext,
    language: str,
    samples: list[Sample],
    t0: float,
    before: Formalized | None = None,
) -> ResultRow:
    """The row of a vote: the first winning sample's outcome, program and certificate, or unanswered.

    Every sample is in ``trace["samples"]`` (:meth:`Sample.entry`) and the count in ``trace["vote"]``;
    ``attempts_log`` holds every sample's attempts in seed order, each tagged with its ``seed``;
    ``rounds`` counts the programs of every sample; ``stage_seconds`` is the slowest sample's per
    stage (the loops overlap, so a sum would count the same seconds K times), plus the greedy loop's
    when one ran before them (``before``, ``--logiclm-sample-on failure``: it is sample 0, and it failed).
    """
    sampled = samples
    if before is not None:
        samples = [Sample(0, before, None), *sampled]
    result = vote([s.predicted if s.excluded is None else None for s in samples])
    winner = samples[result.first] if result.first is not None else None
    trace = winner.formalized.trace() if winner else {"checks": [], "corrected": False}
    trace["samples"] = [s.entry() for s in samples]
    trace["vote"] = {**result.to_dict(), "seed": winner.seed if winner else None}
    attempts = [{"seed": s.seed, **a} for s in samples for a in s.formalized.attempts]
    seconds = {
        k: max(s.formalized.seconds[k] for s in sampled) + (before.seconds[k] if before is not None else 0.0)
        for k in sampled[0].formalized.seconds
    }
    common = dict(
        language=language,
        rounds=sum(s.formalized.rounds for s in samples),
        attempts=attempts,
        latency_s=time.monotonic() - t0,
        stage_seconds=seconds,
        trace=trace,
    )
    if winner is None:
        return ctx.row(problem, _no_winner_outcome(result, samples), predicted=None, **common)
    f = winner.formalized
    return ctx.row(
        problem,
        f.final_outcome(),
        predicted=winner.predicted,
        program=f.program,
        success_round=f.kept_round,
        worker=f.worker,
        pool_attempts=f.pool_attempts,
        **common,
    )


class LogicLM(Method):
    """Formulate in the dataset's language -> solve -> refine on error (<= --max-refine-rounds) -> interpret.

    With ``--logiclm-samples K`` > 1, K such loops are sampled and the certified vote answers
    (:func:`run_samples`, :mod:`symbolkg.jobs.methods.vote`).

    Args:
        grammar: ``--logiclm-grammar``; samples: ``--logiclm-samples``; temperature:
            ``--logiclm-temperature``; feedback: ``--logiclm-feedback`` (:class:`LogicLMConfig`).

    Raises:
        ValueError: a setting out of range (the message names its flag).
    """

    name = "logiclm"
    summary = "formulate a program, solve it, refine on error"
    needs_solver = True

    def __init__(
        self,
        *,
        grammar: str = "skeleton",
        samples: int = 1,
        temperature: float = 0.7,
        feedback: str = "checks",
        sample_on: str = "always",
    ) -> None:
        self.config = LogicLMConfig(grammar, samples, temperature, feedback, sample_on)

    @property
    def grammar(self) -> str:
        return self.config.grammar

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        d = LogicLMConfig()
        group.add_argument(
            "--logiclm-grammar",
            choices=prompts.PROGRAM_CONSTRAINTS,
            default=d.grammar,
            help="what structured decoding constrains in formulation and repair requests: the section skeleton "
            "(default), or the language's full grammar (every line's syntax, every repetition bounded, so a "
            "completion that stops is a whole program; with --no-structured, nothing)",
        )
        group.add_argument(
            "--logiclm-samples",
            type=int,
            default=d.samples,
            metavar="K",
            help="programs sampled per problem, each with its own repairs; the answer is the one most of the "
            "samples that executed with clean formalization checks agree on, unanswered on a tie "
            f"(default {d.samples}: one greedy loop, the requests as without this flag)",
        )
        group.add_argument(
            "--logiclm-sample-on",
            choices=SAMPLE_ON,
            default=d.sample_on,
            help="with --logiclm-samples K > 1: 'always' (default) votes K sampled loops on every problem; "
            "'failure' runs the greedy loop first and samples only when its program did not execute",
        )
        group.add_argument(
            "--logiclm-temperature",
            type=float,
            default=d.temperature,
            metavar="T",
            help=f"sampling temperature of the sampled loops, seeds 1..K (only with --logiclm-samples > 1; "
            f"default {d.temperature})",
        )
        group.add_argument(
            "--logiclm-feedback",
            choices=FEEDBACK,
            default=d.feedback,
            help="what a repair request is told: 'checks' (default) sends back programs that did not execute "
            "(the solver's error, its line quoted) and programs that ran with formalization-check errors (the "
            "findings and their fixes); 'solver' is Logic-LM's refiner: only programs that did not execute, "
            "with the solver's message alone",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LogicLM:
        d = LogicLMConfig()
        return cls(
            grammar=getattr(args, "logiclm_grammar", None) or d.grammar,
            samples=_given(getattr(args, "logiclm_samples", None), d.samples),
            temperature=_given(getattr(args, "logiclm_temperature", None), d.temperature),
            feedback=getattr(args, "logiclm_feedback", None) or d.feedback,
            sample_on=getattr(args, "logiclm_sample_on", None) or d.sample_on,
        )

    def run_info(self) -> dict[str, Any]:
        return asdict(self.config)

    async def run(self, problem: Problem, ctx: MethodContext) -> ResultRow:
        t0 = time.monotonic()
        language = language_for(problem)
        if language is None:
            outcome = Outcome.error(
                Status.PARSE_ERROR,
                ErrorKind.UNSUPPORTED,
                f"logiclm has no formalization language for dataset {problem.dataset!r}",
            )
            return ctx.row(problem, outcome, predicted=None)
        if self.config.samples > 1 and self.config.sample_on == "always":
            return _vote_row(problem, ctx, language, await run_samples(problem, ctx, self.config, language), t0)
        f = await formalize_solve_refine(
            problem, ctx, language=language, grammar=self.config.grammar, feedback=self.config.feedback
        )
        greedy = f.final_outcome()
        if self.config.samples == 1 or greedy.executed:
            return f.row(problem, ctx, language=language, latency_s=time.monotonic() - t0)
        return _vote_row(problem, ctx, language, await run_samples(problem, ctx, self.config, language), t0, before=f)


def _given(value: Any, default: Any) -> Any:
    """A flag's value, or ``default`` where the namespace has none (solve's parser keeps no defaults)."""
    return default if value is None else value
