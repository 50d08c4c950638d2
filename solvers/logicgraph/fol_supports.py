"""Minimal supports of a first-order goal: MARCO over Z3, complete when the map is exhausted.

Input is SMT-LIB 2 (Z3's ``parse_smt2_string``): ``declarations`` holds the ``declare-sort`` /
``declare-fun`` / ``declare-const`` commands shared by all formulas, each premise and the goal are
Boolean terms, e.g. ``"(forall ((x U)) (=> (P x) (Q x)))"``.

The map solver proposes a seed (a premise subset not above a found support nor below a found
non-entailing set); Z3 decides ``seed ∪ {¬G}``: satisfiable -> grown to a maximal non-entailing set
and blocked downwards; unsatisfiable -> shrunk (unsat core, then deletion) to a minimal support and
blocked upwards. When the map has no seed left, every minimal support is found (MARCO's duality).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import z3

from symbolkg.solvers.logicgraph.supports_syntax import Status, SupportResult, sort_key

__all__ = ["FolCertificate", "minimal_supports_fol"]


@dataclass(frozen=True)
class FolCertificate:
    """What the first-order enumeration saw: the maximal non-entailing sets it found (each checked
    satisfiable with ``¬G`` by Z3) and its call counts. When complete, the minimal hitting sets of
    their complements are exactly the supports (MARCO's duality); the per-set claims rest on Z3.
    """

    non_entailing: tuple[tuple[str, ...], ...]
    solver_calls: int
    unknown_calls: int
    kind: str = "marco-z3"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "non_entailing": [list(s) for s in self.non_entailing],
            "solver_calls": self.solver_calls,
            "unknown_calls": self.unknown_calls,
        }


class _Stop(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status)
        self.status = status


class _Marco:
    """One enumeration: the guarded check solver, the map solver, the deadline and the counts."""

    def __init__(
        self, premises: Mapping[str, str], goal: str, declarations: str, deadline: float, call_timeout_s: float
    ) -> None:
        self.ctx = z3.Context()
        self.declarations = declarations
        self.deadline = deadline
        self.call_timeout_s = call_timeout_s
        self.ids = list(premises)
        formulas = {p: self.parse(f"premise {p!r}", premises[p]) for p in self.ids}
        goal_f = self.parse("goal", goal)
        self.guards = {p: z3.Bool(f"__support_{i}", self.ctx) for i, p in enumerate(self.ids)}
        self.check_solver = z3.Solver(ctx=self.ctx)
        for p in self.ids:
            self.check_solver.add(z3.Implies(self.guards[p], formulas[p]))
        self.check_solver.add(z3.Not(goal_f))
        self.map_solver = z3.Solver(ctx=self.ctx)
        self.calls = 0
        self.unknown_calls = 0
        self.found: list[frozenset[str]] = []
        self.mss: list[frozenset[str]] = []

    def parse(self, name: str, term: str) -> Any:
        try:
            parsed = z3.parse_smt2_string(f"{self.declarations}\n(assert {term})", ctx=self.ctx)
        except z3.Z3Exception as exc:
            raise ValueError(f"{name}: not an SMT-LIB Boolean term ({exc})") from None
        return parsed[0] if len(parsed) == 1 else z3.And(*parsed)

    def check(self, subset: Iterable[str]) -> bool:
        """True when ``subset ∪ {¬G}`` is satisfiable (the subset does not entail G)."""
        left = self.deadline - time.perf_counter()
        if left <= 0:
            raise _Stop("stopped_at_budget")
        self.check_solver.set("timeout", max(1, int(min(left, self.call_timeout_s) * 1000)))
        self.calls += 1
        r = self.check_solver.check(*[self.guards[p] for p in subset])
        if r == z3.sat:
            return True
        if r == z3.unsat:
            return False
        self.unknown_calls += 1
        reason = self.check_solver.reason_unknown()
        # a time limit (the call's own cap or the budget) is a budget stop; anything else (e.g.
        # incomplete quantifier instantiation) is Z3 not knowing
        timed_out = "timeout" in reason or "canceled" in reason
        raise _Stop("stopped_at_budget" if timed_out else "stopped_unknown")

    def core(self, subset: Iterable[str]) -> list[str]:
        names = {str(g) for g in self.check_solver.unsat_core()}
        return [p for p in subset if str(self.guards[p]) in names]

    def seed(self) -> list[str] | None:
        """The next unexplored subset, or None when the map is exhausted."""
        left = self.deadline - time.perf_counter()
        if left <= 0:
            raise _Stop("stopped_at_budget")
        self.map_solver.set("timeout", max(1, int(left * 1000)))
        r = self.map_solver.check()
        if r == z3.unsat:
            return None
        if r != z3.sat:
            raise _Stop("stopped_at_budget")
        m = self.map_solver.model()
        # unassigned guards default to "in": larger seeds reach maximal sets sooner
        return [p for p in self.ids if not z3.is_false(m.eval(self.guards[p], model_completion=False))]

    def grow(self, seed: list[str]) -> None:
        grown = list(seed)
        for p in self.ids:
            if p not in grown and self.check(grown + [p]):
                grown.append(p)
        self.mss.append(frozenset(grown))
        self.map_solver.add(
            z3.Or([self.guards[p] for p in self.ids if p not in grown] or [z3.BoolVal(False, self.ctx)])
        )

    def shrink(self, seed: list[str]) -> None:
        current = self.core(seed)
        i = 0
        while i < len(current):
            trial = current[:i] + current[i + 1 :]
            if self.check(trial):
                i += 1
            else:
                current = self.core(trial)
        self.found.append(frozenset(current))
        self.map_solver.add(z3.Or([z3.Not(self.guards[p]) for p in current] or [z3.BoolVal(False, self.ctx)]))

    def run(self) -> Status:
        try:
            while (seed := self.seed()) is not None:
                if self.check(seed):
                    self.grow(seed)
                else:
                    self.shrink(seed)
        except _Stop as stop:
            return stop.status
        return "complete"


def minimal_supports_fol(
    premises: Mapping[str, str],
    goal: str,
    *,
    budget_s: float,
    declarations: str = "",
    language: Literal["smtlib"] = "smtlib",
    call_timeout_s: float = 5.0,
) -> SupportResult:
    """Minimal supports of a first-order goal: MARCO over Z3 (see the module docstring).

    Args:
        premises: premise id -> SMT-LIB Boolean term.
        goal: SMT-LIB Boolean term.
        budget_s: wall-clock budget for the whole enumeration.
        declarations: SMT-LIB declarations the terms use.
        language: ``"smtlib"`` (the only one so far).
        call_timeout_s: cap per Z3 check (also never beyond the budget left), so no call hangs.

    Returns:
        status ``complete``, ``stopped_at_budget`` (the budget ran out, possibly inside a check), or
        ``stopped_unknown`` (Z3 said ``unknown`` for a reason other than the time limit, e.g.
        incomplete quantifier reasoning, where the enumeration needed a definite answer). The
        supports listed are minimal supports in every case (each set and its minimality were
        decided by Z3).

    Raises:
        ValueError: a formula that Z3 cannot parse (names its id) or an unknown language.
    """
    if language != "smtlib":
        raise ValueError(f"language {language!r} is not supported; use 'smtlib'")
    start = time.perf_counter()
    marco = _Marco(premises, goal, declarations, start + budget_s, call_timeout_s)
    status = marco.run()
    return SupportResult(
        supports=tuple(sorted(marco.found, key=sort_key)),
        complete=status == "complete",
        status=status,
        method="marco-z3",
        certificate=FolCertificate(tuple(tuple(sorted(s)) for s in marco.mss), marco.calls, marco.unknown_calls),
        rechecked=False,
        elapsed_ms=(time.perf_counter() - start) * 1000,
        premises_consistent=None,
        solver_calls=marco.calls,
    )
