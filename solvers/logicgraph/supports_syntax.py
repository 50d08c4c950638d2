"""The records of minimal-support enumeration: results, statuses and the elimination certificate.

Shared by the producer (:mod:`~symbolkg.solvers.logicgraph.elimination`), the reference enumerator
(:mod:`~symbolkg.solvers.logicgraph.dualize`), the first-order variant
(:mod:`~symbolkg.solvers.logicgraph.fol_supports`) and the independent checkers
(:mod:`~symbolkg.solvers.logicgraph.elimination_check`, :mod:`~symbolkg.solvers.logicgraph.support_check`).
Plain data with a JSON form; it imports nothing of ours, so a checker can read a certificate
without importing the code that produced it.

A labelled clause is a clause (literals ``(atom, polarity)``) with a label: the premise ids it was
derived from, plus :data:`GOAL_LABEL` when the negated goal took part. The certificate of a labelled
Davis-Putnam elimination is the table of every labelled clause the elimination kept at some point,
and per eliminated atom the clauses it added (each the resolvent of two named parents), the clauses
it dropped as subsumed (each with a witness) and the witnesses of the resolvents it did not keep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "GOAL_LABEL",
    "EliminationCertificate",
    "EliminationStep",
    "LabelledClause",
    "RecheckError",
    "Status",
    "SupportResult",
    "minimal_sets",
    "set_bits",
    "sort_key",
]

#: ``complete``: the list is provably all minimal supports. ``stopped_at_budget``: the time budget
#: ran out; the sets listed are minimal supports, others may exist. ``stopped_unknown``
#: (first-order only): Z3 answered ``unknown`` on a check the enumeration could not do without.
Status = Literal["complete", "stopped_at_budget", "stopped_unknown"]

#: the label member that stands for the negated goal ``¬G`` (never a premise id: ids are words)
GOAL_LABEL = "¬goal"


class RecheckError(RuntimeError):
    """An independent recheck found a returned set that is not a minimal support (names the set)."""


def set_bits(mask: int) -> list[int]:
    """The positions of the set bits of ``mask``, lowest first (labels and clauses are bitmasks)."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def minimal_sets(sets: set[frozenset[str]]) -> set[frozenset[str]]:
    """The members of ``sets`` with no proper subset in ``sets`` (a subset is looked up through its
    smallest element, so the cost follows the overlaps, not the square of the number of sets)."""
    by_min: dict[str, list[frozenset[str]]] = {}
    for s in sets:
        by_min.setdefault(min(s) if s else "", []).append(s)
    empty = frozenset() in sets
    out = set()
    for s in sets:
        if s and empty:
            continue
        if not any(o < s for e in s for o in by_min.get(e, ())):
            out.add(s)
    return out


def sort_key(s: frozenset[str]) -> tuple[int, list[str]]:
    """The order supports are listed in: by size, then by sorted ids."""
    return (len(s), sorted(s))


@dataclass(frozen=True)
class LabelledClause:
    """One clause of the elimination.

    Attributes:
        literals: ``(atom, polarity)`` pairs, sorted; empty for the empty clause.
        label: sorted premise ids (and :data:`GOAL_LABEL`) the clause was derived from.
        parents: the two clause indices it is the resolvent of (the first holds the eliminated atom
            positively), or None for an input clause.
        source: for an input clause, the premise id (or :data:`GOAL_LABEL`) whose CNF it belongs to.
    """

    literals: tuple[tuple[str, bool], ...]
    label: tuple[str, ...]
    parents: tuple[int, int] | None = None
    source: str | None = None

    def to_json(self) -> list[Any]:
        return [
            [[a, s] for a, s in self.literals],
            list(self.label),
            None if self.parents is None else list(self.parents),
            self.source,
        ]


@dataclass(frozen=True)
class EliminationStep:
    """The elimination of one atom.

    Attributes:
        atom: the atom eliminated.
        added: indices of the clauses this step added (resolvents of clauses live before it).
        dropped: ``(clause, witness)``: a live clause without the atom, dropped because the live
            clause ``witness`` after the step subsumes it (its literals and its label are subsets).
        witnesses: ``(positive parent, negative parent, witness)``: a non-tautological resolvent the
            step did not keep, and the live clause after the step that subsumes it.
    """

    atom: str
    added: tuple[int, ...]
    dropped: tuple[tuple[int, int], ...]
    witnesses: tuple[tuple[int, int, int], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "atom": self.atom,
            "added": list(self.added),
            "dropped": [list(d) for d in self.dropped],
            "witnesses": [list(w) for w in self.witnesses],
        }


@dataclass(frozen=True)
class EliminationCertificate:
    """A labelled Davis-Putnam elimination, replayable in time linear in its size.

    Attributes:
        clauses: every clause the elimination kept at some point; indices ``< initial`` are the
            input clauses (the CNF of each premise and of ``¬G``, subsumed ones left out).
        initial: how many input clauses there are.
        steps: one per eliminated atom, in order; after the last no live clause has a literal.
    """

    clauses: tuple[LabelledClause, ...]
    initial: int
    steps: tuple[EliminationStep, ...]
    kind: str = "labelled-elimination"

    def size(self) -> int:
        """Entries a checker reads: clauses, drops and witnesses."""
        return len(self.clauses) + sum(len(s.dropped) + len(s.witnesses) for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "initial": self.initial,
            "clauses": [c.to_json() for c in self.clauses],
            "steps": [s.to_json() for s in self.steps],
        }


@dataclass(frozen=True)
class SupportResult:
    """The minimal supports of a goal and how far they are proven.

    Attributes:
        supports: the minimal supports found, sorted by (size, sorted ids).
        complete: True when ``supports`` is provably every minimal support.
        status: see :data:`Status`.
        method: the algorithm, e.g. ``"labelled-elimination"``, ``"blocks+dualize"`` or ``"marco-z3"``.
        certificate: the completeness evidence (its class says which kind), or None.
        rechecked: True when every set passed the independent Z3 recheck (a failure raises instead).
        elapsed_ms: wall time of the enumeration (and of the recheck when it ran).
        premises_consistent: False when the premises are inconsistent: then every minimal
            inconsistent subset is a support too (ex falso), and the list includes them; None when not
            determined (first-order, or a stop at the budget).
        solver_calls: satisfiability checks the enumeration made (resolution pairs for the elimination).
    """

    supports: tuple[frozenset[str], ...]
    complete: bool
    status: Status
    method: str
    certificate: Any
    rechecked: bool
    elapsed_ms: float
    premises_consistent: bool | None = None
    solver_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "supports": [sorted(s) for s in self.supports],
            "complete": self.complete,
            "status": self.status,
            "method": self.method,
            "certificate": None if self.certificate is None else self.certificate.to_json(),
            "rechecked": self.rechecked,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "premises_consistent": self.premises_consistent,
            "solver_calls": self.solver_calls,
        }
