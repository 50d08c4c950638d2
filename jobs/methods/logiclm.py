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

The loop (:func:`formalize_solve_refine`) is shared with the ``symbolkg`` method. The prompts and
output parsing are :mod:`symbolkg.solvers.prompts`; the solver pool is only used here, never
imported.

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
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from symbolkg.actors.engines.base import (
    ChatRequest,
    Completion,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.jobs.core.answers import interpret
from symbolkg.jobs.core.results import check_spec
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.datasets.logiclm import language_of
from symbolkg.jobs.methods.base import Method, MethodContext
from symbolkg.jobs.methods.vote import Vote, vote
from symbolkg.solvers import checks, prompts
from symbolkg.solvers.outcomes import CheckFinding, ErrorKind, Outcome, SolveRequest, Status

#: What a repair request is told (``--logiclm-feedback``). ``checks`` (the default): a program that did
#: not execute goes back with the solver's error and its line quoted; one that ran but has
#: formalization-check errors the text does not resolve goes back with the findings (each with its
#: fix). ``solver`` (Logic-LM's self-refiner, section 3.3): only a program that did not execute goes
#: back, with the solver's message alone. (A program that ran to no unique answer is not sent back
#: under either.)
FEEDBACK = ("checks", "solver")
#: When the K sampled loops of ``--logiclm-samples K`` run (:class:`LogicLMConfig`).
SAMPLE_ON = ("always", "failure")


def language_for(problem: Problem) -> str | None:
    """The formalization language of a problem (:func:`symbolkg.jobs.datasets.logiclm.language_of`), when
    Logic-LM has prompts for it; else None."""
    language = language_of(problem)
    return language if language in prompts.EXAMPLES else None


@dataclass
class Formalized:
    """What the formulate -> solve -> refine loop produced for one problem.

    Attributes:
        outcome: the kept program's outcome (None when the LLM never gave a program).
        program: the kept program: the best round's (:func:`formalize_solve_refine`), usually the last.
        attempts: one object per round (see :attr:`symbolkg.jobs.core.rows.ResultRow.attempts_log`).
        rounds: programs written and run.
        worker, pool_attempts: where the kept program ran, and how many runs it took.
        kept_round: the round whose program is kept (None before any program ran).
        seconds: ``formalize`` (the first LLM request), ``solve`` (every program, queueing
            included), ``refine`` (the repair requests).
        checks: the formalization checks' findings on the kept round's program as written
            (:mod:`symbolkg.solvers.checks`), as the worker returned them
            (:class:`~symbolkg.solvers.outcomes.CheckFinding`); each round's are in ``attempts``.
        corrections: the checks whose text-resolved corrections were applied to the kept round's
            program after the loop (then ``program`` and ``outcome`` are the corrected program's and
            ``original_program`` the program as written); empty when none applied.
        remaining: with ``corrections``, the findings on the corrected program.
        fixed_point: the round after which the loop stopped because its repair would have asked the
            model exactly what that round asked (its program came back unchanged, with the same
            error); None when it did not. Decoded greedily, that round and every one after it would
            write the same program again. Logic-LM refines until the program runs or the rounds are
            spent; stopping here gives the same kept program and answer. In the kept qwen runs such
            repeats were 16-30% of the rows' completion text. The completion cache served them there,
            but a job without one decodes each again, late in the job and nearly alone
            (benchmarks/RESULTS.md). A sampled loop (temperature > 0) goes on: its next sample may differ.
    """

    outcome: Outcome | None = None
    program: str | None = None
    attempts: list[dict] = field(default_factory=list)
    rounds: int = 0
    worker: str = "-"
    pool_attempts: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: {"formalize": 0.0, "solve": 0.0, "refine": 0.0})
    checks: list[CheckFinding] = field(default_factory=list)
    kept_round: int | None = None
    corrections: list[str] = field(default_factory=list)
    original_program: str | None = None
    remaining: list[CheckFinding] = field(default_factory=list)
    fixed_point: int | None = None
    _kept_rank: int = field(default=-1, repr=False)

    def trace(self) -> dict:
        """The row's ``trace`` entries of the checks.

        Their keys are those the direct path writes (:meth:`symbolkg.solvers.outcomes.CheckReport.trace`).
        """
        entries: dict = {"checks": [f.to_dict() for f in self.checks], "corrected": bool(self.corrections)}
        if self.corrections:
            entries["corrections"] = self.corrections
            entries["original_program"] = self.original_program
            entries["remaining"] = [f.to_dict() for f in self.remaining]
        if self.fixed_point is not None:
            entries["refine_fixed_point"] = self.fixed_point
        return entries

    def keep_if_best(self, one: _Round) -> None:
        """Keep ``one`` when it ranks at least as well as the kept round (the later wins a tie)."""
        if one.rank >= self._kept_rank:
            self.outcome, self.program, self.checks = one.outcome, one.program, list(one.findings)
            self.worker, self.pool_attempts = one.worker, one.pool_attempts
            self.kept_round, self._kept_rank = one.number, one.rank

    def row(
        self, problem: Problem, ctx: MethodContext, *, language: str, latency_s: float, **details: Any
    ) -> ResultRow:
        """The result row of the loop: the kept program, its outcome interpreted for ``problem``, every round.

        ``details`` replace or add :meth:`MethodContext.row`'s (the ``symbolkg`` method's route, its own
        trace and stage seconds).
        """
        outcome = self.final_outcome()
        row = {
            "program": self.program,
            "language": language,
            "rounds": self.rounds,
            "success_round": self.kept_round if outcome.executed else None,
            "attempts": self.attempts,
            "worker": self.worker,
            "pool_attempts": self.pool_attempts,
            "latency_s": latency_s,
            "stage_seconds": self.seconds,
            "trace": self.trace(),
        }
        predicted = interpret(problem, outcome.answer) if outcome.executed else None
        return ctx.row(problem, outcome, predicted=predicted, **{**row, **details})

    def final_outcome(self) -> Outcome:
        """The loop's outcome, or an LLM error outcome when no program was ever run."""
        if self.outcome is not None:
            return self.outcome
        last = self.attempts[-1].get("engine_error", "no completion") if self.attempts else "no completion"
        return Outcome.error(Status.RUNTIME_ERROR, ErrorKind.LLM, last, backend="llm")


async def formalize_solve_refine(
    problem: Problem,
    ctx: MethodContext,
    *,
    language: str,
    run_as: str | None = None,
    context: str | None = None,
    hints: str = "",
    grammar: str = "skeleton",
    params: SamplingParams | None = None,
    request_tag: str = "",
    feedback: str = "checks",
) -> Formalized:
    """The shared loop: ask for a program, run it, feed errors back, at most ``1 + max_refine_rounds`` times.

    Each round's program also goes through the formalization checks (:mod:`symbolkg.solvers.checks`:
    parsing only), in the solver worker with its solve (:class:`~symbolkg.solvers.outcomes.CheckSpec`:
    the orchestrator never parses LLM-written text). A program that ran but has findings of severity
    ``error`` that the text does not resolve is sent back like a solver error while rounds remain
    (:meth:`_Round.needs_repair`); errors the checks correct themselves (a query that states the
    opposite of the question, one concept under two names, a scale read backwards) are left to the
    correction after the loop, not to a repair. A repair can make things worse (a program that
    ran with a check error comes back not parsing): the loop keeps the best round, ranked executed
    without check errors > executed with check errors > not executed, the later round on a tie; its
    program, outcome and findings are what :class:`Formalized` holds (every round stays in ``attempts``).
    When the repairs leave a finding that the text resolves, the kept round's program is corrected and
    solved as the direct path does (:func:`_correct_kept_round`): a file's program or a model's, one answer.
    A greedy repair that returns the program it was shown, failing the same way, ends the loop: the
    rounds after it could only repeat it (:attr:`Formalized.fixed_point`).

    Args:
        problem: the problem (its question and options are always shown).
        ctx: the engine, the solver pool, the shared settings and the problem's ledger (updated).
        language: the program language the LLM is prompted for.
        run_as: the registry language the pool runs (default ``language``).
        context: the premises shown (default the problem's whole context).
        hints: knowledge-graph symbols shown after the context (:func:`symbolkg.solvers.prompts.formulation_messages`).
        grammar: what structured decoding constrains in every request (prompts.program_structured_output).
        params: the sampling of every request of the loop (default ``ctx.config.formulate_params``); a
            sampled loop of a vote (:func:`run_samples`) passes its temperature and seed.
        request_tag: appended to every request id (``p1/formulate/1/seed3``), so that the concurrent
            loops of one problem have distinct ids; ``""`` keeps today's ids.
        feedback: what a repair is told and which rounds get one (:data:`FEEDBACK`).

    Raises:
        EngineDeadError: the engine is gone.
        ValueError: the context has no solver pool.
    """
    if ctx.solver is None:
        raise ValueError("formalize_solve_refine needs a solver pool")
    cfg = ctx.config
    context = problem.context if context is None else context
    run_as = run_as or language
    pairs = prompts.formulation_messages(language, context, problem.question, problem.options, hints)
    asking = _Asking.of(ctx, language, grammar, params, request_tag)
    out = Formalized()
    for round_no in range(1, cfg.max_refine_rounds + 2):
        purpose = "formulate" if round_no == 1 else "refine"
        completion = await _ask_program(
            ctx, asking.request(ctx, problem, pairs, round_no, purpose), round_no, purpose, out
        )
        if completion is None:
            break
        out.rounds = round_no
        one = await _run_round(problem, ctx, language, run_as, completion, round_no, purpose, out)
        out.keep_if_best(one)
        out.attempts.append(one.attempt())
        if not one.needs_repair(feedback) or round_no > cfg.max_refine_rounds:
            break
        repair = _repair_messages(language, context, problem, one, hints, completion.text, feedback)
        if asking.repeats(pairs, repair):
            out.fixed_point = round_no
            break
        pairs = repair
    if out.program is not None:
        await _correct_kept_round(problem, ctx, out, run_as)
    return out


#: A round's rank (:attr:`_Round.rank`): executed without check errors > executed with > not executed.
_RANK_CLEAN, _RANK_FLAGGED, _RANK_FAILED = 2, 1, 0


@dataclass
class _Round:
    """One formulate/refine round: the program the model wrote, its outcome and its checks' findings."""

    number: int
    purpose: str
    program: str
    completion: Completion
    outcome: Outcome
    findings: tuple[CheckFinding, ...]
    worker: str
    pool_attempts: int

    @property
    def check_errors(self) -> list[CheckFinding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def rank(self) -> int:
        if not self.outcome.executed:
            return _RANK_FAILED
        return _RANK_FLAGGED if self.check_errors else _RANK_CLEAN

    def needs_repair(self, feedback: str) -> bool:
        """Whether the round's program goes back to the model under ``feedback`` (:data:`FEEDBACK`).

        A program that did not execute always does. One that ran goes back (``checks`` only) for the
        check errors the text does not resolve; when the checks correct every error themselves, the
        correction after the loop does it (:func:`_correct_kept_round`): surer and cheaper than a
        repair, which can fix the line it is shown and break another.
        """
        if self.rank == _RANK_FAILED:
            return True
        return feedback == "checks" and any(not f.corrects for f in self.check_errors)

    def attempt(self) -> dict:
        """The round's entry of the row's ``attempts_log``."""
        c = self.completion
        entry = {
            "round": self.number,
            "purpose": self.purpose,
            "program": self.program,
            "completion": c.text,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "finish_reason": c.finish_reason,
            "llm_seconds": round(c.latency_s, 4),
            "cached": c.cached,
            "outcome": self.outcome.log_entry(),
            "checks": [f.to_dict() for f in self.findings],
        }
        if c.stored_tokens is not None:  # a cache hit: what the model spent on it when it answered
            entry["stored_tokens"] = list(c.stored_tokens)
        return entry


@dataclass(frozen=True)
class _Asking:
    """How one loop asks for programs: the same sampling, constraint and request-id tag in every round."""

    params: SamplingParams
    structured: StructuredOutput | None
    tag: str = ""

    @classmethod
    def of(cls, ctx: MethodContext, language: str, grammar: str, params: SamplingParams | None, tag: str) -> _Asking:
        """The loop's asking: ``params`` (default the context's ``formulate_params``), ``grammar``'s constraint."""
        structured = ctx.structured(prompts.program_structured_output(language, grammar))
        return cls(params or ctx.config.formulate_params, structured, tag)

    def repeats(self, pairs: prompts.Messages, following: prompts.Messages) -> bool:
        """Whether asking ``following`` after ``pairs`` can only get the same completion again: the
        same messages, decoded greedily (a sampled request may get another)."""
        return following == pairs and self.params.temperature == 0

    def request(
        self, ctx: MethodContext, problem: Problem, pairs: prompts.Messages, round_no: int, purpose: str
    ) -> ChatRequest:
        """Round ``round_no``'s request (its id ``problem/purpose/round`` plus the tag); a repair's budget
        is bounded by ``repair_max_tokens`` where the config sets one."""
        params, bound = self.params, ctx.config.repair_max_tokens
        if purpose == "refine" and bound is not None and bound < params.max_tokens:
            params = replace(params, max_tokens=bound)
        return ctx.chat(
            problem,
            purpose,
            pairs,
            params=params,
            structured=self.structured,
            request_id=f"{problem.id}/{purpose}/{round_no}{self.tag}",
        )


async def _ask_program(
    ctx: MethodContext, request: ChatRequest, round_no: int, purpose: str, out: Formalized
) -> Completion | None:
    """One round's request for a program; None when the engine gave none (recorded in ``out.attempts``)."""
    reply = await ctx.try_ask(request)
    out.seconds["formalize" if round_no == 1 else "refine"] += reply.seconds
    if reply.completion is None:
        # No (further) program from the LLM: keep the last outcome. The recorded engine lands here
        # for repairs it does not have.
        out.attempts.append({"round": round_no, "purpose": purpose, "engine_error": reply.error})
    return reply.completion


async def _run_round(
    problem: Problem,
    ctx: MethodContext,
    language: str,
    run_as: str,
    completion: Completion,
    round_no: int,
    purpose: str,
    out: Formalized,
) -> _Round:
    """The round's program out of the completion, solved with its formalization checks in a worker."""
    program = prompts.extract_program(language, completion.text)
    t0 = time.perf_counter()
    result = await ctx.solver.solve(
        SolveRequest(problem.id, run_as, program, ctx.config.limits, check_spec(problem, corrections=False))
    )
    out.seconds["solve"] += time.perf_counter() - t0
    report = result.outcome.checks  # None when the worker crashed or was stopped before its checks ended
    findings = report.findings if report is not None else ()
    return _Round(round_no, purpose, program, completion, result.outcome, findings, result.worker, result.attempts)


def _repair_messages(
    language: str, context: str, problem: Problem, one: _Round, hints: str, reply: str, feedback: str
) -> prompts.Messages:
    """The next round's conversation: the checks' errors when the program ran, else the solver's error
    with the line it names (``feedback="solver"``, Logic-LM's refiner: the solver's message alone; a
    program that ran is not sent back under it, :meth:`_Round.needs_repair`)."""
    program, outcome = one.program, one.outcome
    if outcome.executed:  # it ran, but it does not say what the problem says
        errors = one.check_errors
        return prompts.refine_messages(
            language,
            context,
            problem.question,
            problem.options,
            program,
            "formalization",
            checks.refine_message(errors),
            errors[0].line,
            hints,
            reply=reply,
        )
    return prompts.refine_messages(
        language,
        context,
        problem.question,
        problem.options,
        program,
        outcome.error_kind,
        outcome.error_message or outcome.status.value,
        None if feedback == "solver" else outcome.error_line,
        hints,
        reply=reply,
    )


async def _correct_kept_round(problem: Problem, ctx: MethodContext, out: Formalized, run_as: str) -> None:
    """Apply the corrections the text resolves to the kept round's program, and solve it: the direct path's way.

    When the model's repairs did not fix a finding that the text resolves (query polarity, option
    position, option modality, one name; :func:`symbolkg.solvers.checks.correct_program`), the
    program is corrected exactly as the solve stage's worker corrects a
    program read from a file, so a program gets the same answer on both paths. The corrected
    program, its outcome and the corrections become what ``out`` holds; ``out.checks`` stays the
    findings on the program as the model wrote it, and the step is one more entry of ``attempts``.
    The worker corrects and solves in one call, asked only when a finding of the kept round has a
    correction (``corrects``), or when the kept program's run was inconsistent (the worker then revises
    it: ``unstated_facts``, :func:`symbolkg.solvers.checks.revise`); when it applied none (a correction
    that does not parse, a contradiction the text does not resolve), or returned no checks (it was
    stopped first), the kept round stands.
    """
    inconsistent = out.outcome is not None and out.outcome.error_kind == ErrorKind.INCONSISTENT.value
    if not inconsistent and not any(f.corrects for f in out.checks):
        return
    t0 = time.perf_counter()
    request = SolveRequest(
        problem.id, run_as, out.program or "", ctx.config.limits, check_spec(problem, corrections=True)
    )
    result = await ctx.solver.solve(request)  # type: ignore[union-attr]
    out.seconds["solve"] += time.perf_counter() - t0
    report = result.outcome.checks
    if report is None or not report.corrected:
        return
    out.corrections, out.remaining = list(report.corrections), list(report.remaining)
    # the same checks on the same program, plus what only its run shows (``unstated_facts``)
    out.checks = list(report.findings)
    out.original_program = out.program
    out.outcome, out.program = result.outcome, report.program
    out.worker, out.pool_attempts = result.worker, result.attempts
    out.attempts.append(
        {
            "round": out.kept_round,
            "purpose": "correct",
            "program": out.program,
            "corrections": out.corrections,
            "outcome": result.outcome.log_entry(),
            "checks": [f.to_dict() for f in out.remaining],
        }
    )


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
