"""SymBa (Lee & Hwang, NAACL 2025): backward chaining that asks the LLM only for what a proof lacks.

The solver (:mod:`symbolkg.solvers.symba.engine`, run in a solver worker like every program) proves
the goal top-down over the statements known so far and reports two lists of subgoals: those no
clause head unified with (``missing``, a narrower trigger than the paper's, including atoms under
a ``not`` that succeeded only because nothing unified), and every subgoal that ended without an
answer (``unproved``, a superset). For each subgoal of the list ``--symba-ask`` names, once up to
variable renaming, the method runs one single-step generation (:mod:`symbolkg.solvers.symba.prompts`):

1. fact search over the context (sentences, or "No applicable fact."), then the translation of
   each sentence into a fact;
2. if no fact was accepted: rule search and rule translation;
3. symbolic validation of every statement before it enters the database: it parses, it is one
   statement (a fact where a fact was asked for), and its head unifies with the subgoal.

Then the solver runs again on the larger database. Why ``unproved`` is the default: with
``missing`` a subgoal such as ``eats(A, mouse)`` is never asked once a fact ``eats(squirrel,
mouse)`` is known, so a proof that needs another binding is never found (18 of ProofWriter's 300
gold-engine records end wrong that way; with ``unproved`` none does, benchmarks/symba_method.py).
``unproved`` is Algorithm 1 of the paper (Appendix A): a subgoal is asked about whenever the
database cannot prove it, also when statements with a unifying head exist and all failed, world
rules included (a world model is a set of sufficient conditions, not a closed definition: a case
text may establish an intermediate conclusion such as ``right_to_counsel`` directly), and the
positive dual of a ``not q`` that succeeded by failure is asked about too (its table has no
answer). ``--symba-world-complete`` departs from the paper on purpose: it never asks about a
predicate the world rules define (CLUTRR's ``relation/3``), which saves those calls when the world
model is known to be complete (benchmarks/RESULTS.md, "SymBa as Algorithm 1", measures both).
Every subgoal is asked about the same way, whatever its arguments: a goal that asks the text a
question through a quoted sentence (``checkIf("The applicant was informed promptly.", A)`` in a
world rule) gets its fact search and translation like ``is(bob, red)``. A statement ``not h.`` (a
denial, the translation of a negative sentence) enters the database like a fact; a database that
violates one proves no goal (SymBa's reading, :mod:`symbolkg.solvers.symba.syntax`). This repeats
until the goal is decided or no subgoal is new; a goal is never asked twice. The statement-at-a-time
recursion of the paper becomes rounds here: all subgoals missing in one round are asked at once, the
fact and rule searches of a subgoal are in flight together (the rule search's answer is only used
when no fact was accepted, as in the paper; ``--symba-sequential-search`` waits instead, for fewer
tokens), and the translations of one search are in flight together. The outcome is the same database
the paper's depth-first loop would build, reached in fewer round trips.

Budgets per problem: LLM calls, tokens (prompt + completion) and solver rounds, checked between
rounds (so a round in flight finishes, and a rerun from the completion cache asks exactly the same
calls); when one is used up the method stops asking and answers from what it has, and the row
says which budget ended it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from symbolkg.actors.engines.base import EngineDeadError, EngineError, SamplingParams
from symbolkg.jobs.core.answers import interpret
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.methods.base import Method, MethodContext
from symbolkg.solvers.outcomes import ErrorKind, Outcome, ProgramError, SolveRequest, Status
from symbolkg.solvers.symba import prompts as P
from symbolkg.solvers.symba.engine import atom_variables, head_unifies
from symbolkg.solvers.symba.syntax import parse_clause, parse_goal
from symbolkg.solvers.symba.terms_syntax import format_clause

LANGUAGE = "symba"


@dataclass(frozen=True)
class SymBaConfig:
    """The method's own settings (its ``--symba-*`` flags).

    Attributes:
        max_calls: LLM calls per problem before it stops asking.
        max_tokens: prompt + completion tokens per problem before it stops asking.
        max_rounds: solver runs per problem (each after a round of new statements).
        search_tokens, translate_tokens: most generated tokens of a search / a translation.
        sequential_search: send the rule search only after no fact was accepted (fewer tokens,
            one more round trip) instead of beside the fact search.
        ask: which subgoals get a single-step generation: ``"unproved"`` (every subgoal that
            ended without an answer: Algorithm 1) or ``"missing"`` (only those no clause head
            unified with).
        world_complete: never ask about a predicate the problem's world rules define (the world
            model is taken as complete for its own predicates: fewer calls, but a text that
            states an intermediate conclusion directly is never heard). Off by default, as in
            the paper.
    """

    max_calls: int = 200
    max_tokens: int = 200_000
    max_rounds: int = 24
    search_tokens: int = 160
    translate_tokens: int = 96
    sequential_search: bool = False
    ask: str = "unproved"
    world_complete: bool = False

    def __post_init__(self) -> None:
        if self.ask not in ("unproved", "missing"):
            raise ValueError(f"--symba-ask must be 'unproved' or 'missing', got {self.ask!r}")
        for name in ("max_calls", "max_tokens", "max_rounds", "search_tokens", "translate_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"--symba-{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")


@dataclass
class Statement:
    """A statement in a problem's database, and where it came from."""

    statement: str
    sentence: str  # the context sentence it translates ("" for world rules)
    subgoal: str  # the subgoal that asked for it
    kind: str  # "fact" | "rule" | "world"
    round: int


@dataclass
class _Problem:
    """The state of one problem's proof (what the row reports)."""

    goal: str
    statements: list[Statement] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    no_fact: int = 0
    no_rule: int = 0
    stop: str = ""
    seconds: dict[str, float] = field(default_factory=lambda: {"search": 0.0, "translate": 0.0, "solve": 0.0})

    def program(self) -> str:
        lines = [s.statement for s in self.statements]
        return "\n".join([*lines, f"?- {self.goal}."])


def _predicate(atom_text: str) -> tuple[str, int] | None:
    """(name, arity) of a subgoal as the solver prints it (None if it does not parse)."""
    try:
        atom = parse_goal(atom_text).atom
    except ProgramError:
        return None
    return atom.pred, atom.arity


def _has_variable(atom_text: str) -> bool:
    """Whether a subgoal as the solver prints it has a variable (the solver names them A, B, ...)."""
    try:
        return bool(atom_variables(parse_goal(atom_text).atom))
    except ProgramError:
        return False


def _validate(text: str, subgoal: str, kind: str, known: set[str]) -> tuple[str | None, str]:
    """The statement in canonical form if it passes symbolic validation, else (None, why)."""
    try:
        clauses = parse_clause(text)
    except ProgramError as exc:
        return None, f"does not parse: {exc}"
    if not clauses:
        return None, "no statement"
    if kind == "fact" and any(c.body for c in clauses):
        return None, "a rule where a fact was asked for"
    goal = parse_goal(subgoal)
    if not any(head_unifies(c, goal) for c in clauses):
        return None, f"its head does not unify with {subgoal}"
    canonical = " ".join(format_clause(c) for c in clauses)
    if canonical in known:
        return None, "already in the database"
    return canonical, ""


def _add_world_rules(state: _Problem, rules: Iterable[str]) -> set[tuple[str, int]]:
    """Add the problem's world rules to ``state``; returns the predicates they define.

    Those are asked about unless ``world_complete`` is set.
    """
    world: set[tuple[str, int]] = set()
    for rule in rules:
        state.statements.append(Statement(rule, "", "", "world", 0))
        try:
            world.update((c.head.pred, c.head.arity) for c in parse_clause(rule) if not c.negated)
        except ProgramError:
            pass  # the solver reports it with its line
    return world


def _new_statements(state: _Problem, found: Iterable[Iterable[Statement]]) -> list[Statement]:
    """The accepted statements ``state`` does not hold yet, each once.

    In the order the subgoals were met, not the order the calls ended: the same completions give the
    same program, so a rerun from the cache asks exactly the same calls.
    """
    known = {s.statement for s in state.statements}
    fresh: list[Statement] = []
    for statement in (s for accepted in found for s in accepted):
        if statement.statement not in known:
            known.add(statement.statement)
            fresh.append(statement)
    return fresh


class SymBa(Method):
    """Backward chaining over statements the LLM translates on demand, one subgoal at a time."""

    name = "symba"
    summary = "backward chaining that asks the LLM only for the statements a proof is missing"
    needs_solver = True

    def __init__(self, config: SymBaConfig | None = None) -> None:
        self.config = config or SymBaConfig()

    @classmethod
    def add_arguments(cls, g: argparse._ArgumentGroup) -> None:
        g.title = "SymBa method (--method symba)"
        d = SymBaConfig()
        g.add_argument(
            "--symba-max-calls",
            type=int,
            default=d.max_calls,
            help=f"LLM calls per problem before it stops asking (default {d.max_calls})",
        )
        g.add_argument(
            "--symba-max-tokens",
            type=int,
            default=d.max_tokens,
            help=f"prompt + completion tokens per problem before it stops asking (default {d.max_tokens})",
        )
        g.add_argument(
            "--symba-max-rounds",
            type=int,
            default=d.max_rounds,
            help=f"solver runs per problem (default {d.max_rounds})",
        )
        g.add_argument(
            "--symba-search-tokens",
            type=int,
            default=d.search_tokens,
            help=f"most tokens of a fact/rule search (default {d.search_tokens})",
        )
        g.add_argument(
            "--symba-translate-tokens",
            type=int,
            default=d.translate_tokens,
            help=f"most tokens of a translation (default {d.translate_tokens})",
        )
        g.add_argument(
            "--symba-sequential-search",
            action="store_true",
            help="ask the rule search only after no fact was accepted (fewer tokens, more latency)",
        )
        g.add_argument(
            "--symba-ask",
            choices=("unproved", "missing"),
            default=d.ask,
            help="subgoals the LLM is asked about: every one without an answer (default), or only "
            "those no clause head unifies with (fewer calls, misses bindings)",
        )
        g.add_argument(
            "--symba-world-complete",
            action="store_true",
            help="never ask about predicates the world rules define (departs from the paper's Algorithm 1: "
            "fewer calls, but a conclusion the text states directly is never heard)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SymBa:
        return cls(
            SymBaConfig(
                max_calls=args.symba_max_calls,
                max_tokens=args.symba_max_tokens,
                max_rounds=args.symba_max_rounds,
                search_tokens=args.symba_search_tokens,
                translate_tokens=args.symba_translate_tokens,
                sequential_search=args.symba_sequential_search,
                ask=args.symba_ask,
                world_complete=args.symba_world_complete,
            )
        )

    def run_info(self) -> dict[str, Any]:
        return asdict(self.config)

    # -- one problem ----------------------------------------------------------------------------

    async def run(self, problem: Problem, ctx: MethodContext) -> ResultRow:
        if ctx.solver is None:
            raise ValueError("the symba method needs a solver pool")
        t0 = time.monotonic()
        goal = str(problem.meta.get("goal") or problem.question).strip().rstrip(".")
        state = _Problem(goal)
        try:
            parse_goal(goal)
        except ProgramError as exc:
            outcome = Outcome.error(Status.PARSE_ERROR, ErrorKind.SYNTAX, f"the problem's goal does not parse: {exc}")
            return ctx.row(problem, outcome, predicted=None, language=LANGUAGE)
        world = _add_world_rules(state, problem.meta.get("world_rules", []))
        outcome, worker, pool_attempts, rounds = None, "-", 0, 0
        while True:
            rounds += 1
            t = time.perf_counter()
            result = await ctx.solver.solve(SolveRequest(problem.id, LANGUAGE, state.program(), ctx.config.limits))
            state.seconds["solve"] += time.perf_counter() - t
            outcome, worker, pool_attempts = result.outcome, result.worker, result.attempts
            if not outcome.executed:
                state.stop = f"solver: {outcome.status.value}"
                break
            proof = json.loads(outcome.proof or "{}")
            if self._decided(goal, outcome, proof):
                state.stop = "decided"
                break
            new = [
                m
                for m in proof.get(self.config.ask, [])
                if m not in state.asked and not (self.config.world_complete and _predicate(m) in world)
            ]
            if not new:
                state.stop = "nothing left to ask"
                break
            if rounds >= self.config.max_rounds:
                state.stop = "budget: solver rounds"
                break
            if self._spent(ctx):
                state.stop = self._spent(ctx)
                break
            state.asked.extend(new)
            found = await asyncio.gather(*(self._step(problem, ctx, state, m, rounds) for m in new))
            fresh = _new_statements(state, found)
            if not fresh:
                state.stop = "no statement accepted"
                break
            state.statements.extend(fresh)
        predicted = self._predicted(problem, goal, outcome)
        trace = {
            "goal": goal,
            "statements": [asdict(s) for s in state.statements if s.kind != "world"],
            "world_rules": sum(s.kind == "world" for s in state.statements),
            "rejected": state.rejected,
            "asked": state.asked,
            "no_applicable_fact": state.no_fact,
            "no_applicable_rule": state.no_rule,
            "stop": state.stop,
        }
        return ctx.row(
            problem,
            outcome,
            predicted=predicted,
            program=state.program(),
            language=LANGUAGE,
            rounds=rounds,
            success_round=rounds if outcome.executed else None,
            worker=worker,
            pool_attempts=pool_attempts,
            latency_s=time.monotonic() - t0,
            trace=trace,
            stage_seconds=state.seconds,
        )

    @staticmethod
    def _decided(goal: str, outcome: Outcome, proof: dict) -> bool:
        """True when no further statement can change the verdict the solver gave.

        A positive goal, once proved, stays proved (statements are only added), and a ``not``
        goal that failed has a proof of its atom, which also stays, unless a ``not`` literal
        held somewhere in the search: a statement that proves its atom may undo the proof
        (``remedy_due :- not fair_hearing.`` is proved while nothing about the hearing is
        known). Then the method asks on, as Algorithm 1 does: it solves the atom under a
        ``not``, asking for what it lacks, before it lets negation as failure succeed.
        Anything else may still change.
        """
        negated = goal.startswith(("not ", "\\+"))
        monotone = not proof.get("negation_succeeded", False)
        return monotone and outcome.status == (Status.DISPROVED if negated else Status.PROVED)

    def _spent(self, ctx: MethodContext) -> str:
        """Which LLM budget of the problem is used up ("" when none is)."""
        ledger = ctx.ledger
        if ledger.calls >= self.config.max_calls:
            return "budget: LLM calls"
        if ledger.prompt_tokens + ledger.completion_tokens >= self.config.max_tokens:
            return "budget: tokens"
        return ""

    @staticmethod
    def _predicted(problem: Problem, goal: str, outcome: Outcome) -> str | None:
        if not outcome.executed:
            return None
        if problem.options:
            return interpret(problem, outcome.answer)
        # a question with a free answer (SymBa's math sets: answer(X)): the first answer's binding
        answers = json.loads(outcome.proof or "{}").get("answers") or []
        if not answers or not answers[0]:
            return None
        value = next(iter(answers[0].values()))
        return str(value)

    async def _ask(
        self,
        problem: Problem,
        ctx: MethodContext,
        module: str,
        pairs: list[tuple[str, str]],
        max_tokens: int,
        regex: str,
        request_id: str,
    ) -> str | None:
        """One call of ``module``; None when the engine could not answer it."""
        request = ctx.chat(
            problem,
            f"symba-{module}",
            pairs,
            params=SamplingParams(max_tokens=max_tokens),
            structured=ctx.structured({"regex": regex}),
            request_id=request_id,
        )
        try:
            return (await ctx.ask(request)).text
        except EngineDeadError:
            raise
        except EngineError:
            return None

    async def _search(
        self, problem: Problem, ctx: MethodContext, state: _Problem, kind: P.Kind, subgoal: str, round_no: int
    ) -> list[str]:
        t = time.perf_counter()
        text = await self._ask(
            problem,
            ctx,
            f"{kind}-search",
            P.search_messages(kind, problem.context, subgoal),
            self.config.search_tokens,
            P.SEARCH_REGEX[kind],
            f"{problem.id}/{kind}-search/{round_no}/{subgoal}",
        )
        state.seconds["search"] += time.perf_counter() - t
        sentences = P.parse_search(text or "")
        if text is not None and not sentences:
            if kind == "fact":
                state.no_fact += 1
            else:
                state.no_rule += 1
        return sentences

    async def _translate(
        self,
        problem: Problem,
        ctx: MethodContext,
        state: _Problem,
        kind: P.Kind,
        subgoal: str,
        sentences: list[str],
        round_no: int,
    ) -> list[Statement]:
        t = time.perf_counter()
        texts = await asyncio.gather(
            *(
                self._ask(
                    problem,
                    ctx,
                    f"{kind}-translate",
                    P.translate_messages(kind, subgoal, s),
                    self.config.translate_tokens,
                    P.TRANSLATE_REGEX[kind],
                    f"{problem.id}/{kind}-translate/{round_no}/{subgoal}/{i}",
                )
                for i, s in enumerate(sentences)
            )
        )
        state.seconds["translate"] += time.perf_counter() - t
        accepted: list[Statement] = []
        known = {s.statement for s in state.statements}
        for sentence, text in zip(sentences, texts, strict=True):
            statement = P.parse_translation(text or "")
            if statement is None:
                state.rejected.append(
                    {
                        "subgoal": subgoal,
                        "sentence": sentence,
                        "output": text,
                        "why": "no statement" if text is not None else "no answer from the engine",
                    }
                )
                continue
            canonical, why = _validate(statement, subgoal, kind, known)
            if canonical is None:
                state.rejected.append({"subgoal": subgoal, "sentence": sentence, "output": text, "why": why})
                continue
            known.add(canonical)
            accepted.append(Statement(canonical, sentence, subgoal, kind, round_no))
        return accepted

    async def _step(
        self, problem: Problem, ctx: MethodContext, state: _Problem, subgoal: str, round_no: int
    ) -> list[Statement]:
        """Single-step statement generation for ``subgoal``: the statements that passed validation."""
        rule_search: asyncio.Task[list[str]] | None = None
        if not self.config.sequential_search:
            rule_search = asyncio.ensure_future(self._search(problem, ctx, state, "rule", subgoal, round_no))
        try:
            facts = await self._search(problem, ctx, state, "fact", subgoal, round_no)
            accepted = await self._translate(problem, ctx, state, "fact", subgoal, facts, round_no) if facts else []
            # rules too when no fact was accepted (the paper), or when the subgoal has a variable: a fact
            # gives some of its bindings, a rule may give others, and the subgoal is never asked again
            if not accepted or _has_variable(subgoal):
                rules = await (
                    rule_search
                    if rule_search is not None
                    else self._search(problem, ctx, state, "rule", subgoal, round_no)
                )
                rule_search = None
                if rules:
                    accepted += await self._translate(problem, ctx, state, "rule", subgoal, rules, round_no)
        finally:
            if rule_search is not None:
                await rule_search  # its call is made and counted either way; let it finish
        return accepted
