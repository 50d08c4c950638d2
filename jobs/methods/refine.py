"""The formulate -> solve -> refine loop that ``logiclm`` and ``symbolkg`` share.

:func:`formalize_solve_refine` asks the model for a program in a language, runs it in the solver pool
(with the formalization checks of :mod:`symbolkg.solvers.checks`, in the worker), sends what failed
back for repair (:data:`FEEDBACK`) for at most ``--max-refine-rounds`` rounds, keeps the best round
and applies the corrections the text resolves; :class:`Formalized` is what it produced, every round
in its attempts. A repair's budget is the program's unless ``--repair-max-tokens`` bounds it. The
prompts and output parsing are :mod:`symbolkg.solvers.prompts`; the solver pool is only used here,
never imported. The methods around it: :mod:`symbolkg.jobs.methods.logiclm` (one loop, or K sampled
loops and their vote) and :mod:`symbolkg.jobs.methods.symbolkg_stages` (the loop over the premises
retrieved from the graph).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from symbolkg.actors.engines.base import ChatRequest, Completion, SamplingParams, StructuredOutput
from symbolkg.jobs.core.answers import interpret
from symbolkg.jobs.core.results import check_spec
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.methods.base import MethodContext
from symbolkg.solvers import checks, prompts
from symbolkg.solvers.outcomes import CheckFinding, ErrorKind, Outcome, SolveRequest, Status

#: What a repair request is told (``--logiclm-feedback``). ``checks`` (the default): a program that did
#: not execute goes back with the solver's error and its line quoted; one that ran but has
#: formalization-check errors the text does not resolve goes back with the findings (each with its
#: fix). ``solver`` (Logic-LM's self-refiner, section 3.3): only a program that did not execute goes
#: back, with the solver's message alone. (A program that ran to no unique answer is not sent back
#: under either.)
FEEDBACK = ("checks", "solver")


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
    outcome = one.outcome
    if outcome.executed:  # it ran, but it does not say what the problem says
        errors = one.check_errors
        kind, message, line = "formalization", checks.refine_message(errors), errors[0].line
    else:
        kind, message = outcome.error_kind, outcome.error_message or outcome.status.value
        line = None if feedback == "solver" else outcome.error_line
    return prompts.refine_messages(
        language, context, problem.question, problem.options, one.program, kind, message, line, hints, reply=reply
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
