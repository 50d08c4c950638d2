"""An independent recheck of minimal supports with Z3: each set entails the goal, minus any one premise it does not.

Z3 is a different solver from the enumerators' own, so a bug in one is not repeated by the other.
It proves each listed set is a minimal support; that the list holds *every* minimal support is the
certificate's part (:mod:`~symbolkg.solvers.logicgraph.elimination_check`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from symbolkg.solvers.logicgraph.propositional import Formula, to_prover9, to_z3
from symbolkg.solvers.logicgraph.supports_syntax import RecheckError

__all__ = ["recheck_supports"]


def recheck_supports(
    premises: Mapping[str, Formula], goal: Formula, supports: Iterable[frozenset[str]], *, timeout_s: float = 10.0
) -> int:
    """Verify with Z3 that each set is a minimal support: ``S ⊨ G``, and ``S∖{p} ⊭ G`` for each ``p``.

    One fresh ``z3.Context`` per call (Z3 objects are not thread-safe).

    Args:
        premises: premise id -> formula.
        goal: the goal.
        supports: the sets to verify.
        timeout_s: per Z3 check.

    Returns:
        The number of Z3 checks made.

    Raises:
        RecheckError: a set with an unknown id, one that does not entail the goal, one with a
            redundant premise, a duplicate set, or a Z3 ``unknown``; the message names the set.
    """
    import z3  # heavy (~0.2 s): only when a recheck runs, not whenever the enumerator is imported (the CLI's parser)

    sets = [frozenset(s) for s in supports]
    ctx = z3.Context()
    cache: dict[str, Any] = {}
    solver = z3.Solver(ctx=ctx)
    solver.set("timeout", max(1, int(timeout_s * 1000)))
    guards: dict[str, Any] = {}
    for s in sets:
        for pid in s:
            if pid not in premises:
                raise RecheckError(f"support {sorted(s)} names {pid!r}, which is not a premise")
            if pid not in guards:
                guards[pid] = z3.Bool(f"__guard_{len(guards)}", ctx)
                solver.add(z3.Implies(guards[pid], to_z3(premises[pid], ctx, cache)))
    solver.add(z3.Not(to_z3(goal, ctx, cache)))
    checks = 0
    for s in sets:
        members = sorted(s)
        checks += 1
        r = solver.check(*[guards[p] for p in members])
        if r != z3.unsat:
            raise RecheckError(f"support {members} does not entail {to_prover9(goal)} (Z3: {r})")
        for p in members:
            checks += 1
            r = solver.check(*[guards[q] for q in members if q != p])
            if r != z3.sat:
                raise RecheckError(f"support {members} is not minimal: without {p!r} Z3 says {r}")
    if len(set(sets)) != len(sets):
        raise RecheckError("the support list has a duplicate set")
    return checks
