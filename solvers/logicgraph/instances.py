"""LogicGraph instances as typed records: premises, goal, reference proofs and families.

One LogicGraph instance (``../shared/data/logicgraph/<tier>.jsonl``, one JSON object per line;
schema in the data README) is a propositional knowledge base over abstract atoms ``A1..An, G``,
a goal (always ``G``) and the exhaustive list of minimal reference proofs. This module turns a
record into an :class:`Instance` (formulas parsed from the ``formal`` notation, never from
``prover9_expression``, whose instantiation changes meaning on some instances) and back
(:meth:`Instance.to_record`, used by the generator to write the dataset's own format).

Answers to the task (model proofs, the reference proofs themselves) use the dataset's
``solutions`` format: a list of proofs, each with ``steps`` of ``{step_number, rule_applied,
premises_used: [{id, prover9, ...}], conclusion}``. :class:`Proof` and :class:`Step` are that
format, parsed; parsing of untrusted answers (which may cite ids that do not exist) belongs
to the verifier, which records such problems as errors instead of raising.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from symbolkg.solvers.logicgraph.propositional import (
    Atom,
    Formula,
    FormulaSyntaxError,
    atoms,
    parse,
    to_prover9,
    to_unicode,
)

__all__ = [
    "DERIVED",
    "RULES",
    "Instance",
    "InstanceError",
    "Premise",
    "Proof",
    "Step",
    "StepPremise",
    "load_instances",
]

#: the seven argument forms LogicGraph's proofs use (names as in ``rule_applied``).
RULES: tuple[str, ...] = ("MP", "MT", "HS", "DS", "CD", "DE", "RAA")

#: the ``id`` a proof step uses to cite the conclusion of an earlier step.
DERIVED = "Derived"


class InstanceError(ValueError):
    """A LogicGraph record that does not have the dataset's shape; says which instance and field."""


@dataclass(frozen=True)
class Premise:
    """One knowledge-base item.

    Attributes:
        id: ``"RuleK"`` or ``"FactK"``.
        formula: parsed from ``formal``.
        natural: the English sentence.
        expression: the instantiated first-order Prover9 string (``prover9_expression``), if any.
    """

    id: str
    formula: Formula
    natural: str = ""
    expression: str = ""

    @property
    def is_fact(self) -> bool:
        return self.id.startswith("Fact")


@dataclass(frozen=True)
class StepPremise:
    """One cited premise of a step: a knowledge-base id or :data:`DERIVED`, and its formula."""

    id: str
    formula: Formula


@dataclass(frozen=True)
class Step:
    number: int
    rule: str
    premises: tuple[StepPremise, ...]
    conclusion: Formula
    natural: str = ""


@dataclass(frozen=True)
class Proof:
    """One proof in the dataset's format.

    Attributes:
        id: 1-based number within the instance.
        steps: in order; the last step's conclusion is the goal in a complete proof.
        family_id, path_type, branch_from: the reference's family structure (``"core"`` /
            ``"branch"``; ``branch_from`` indexes the core proof's steps, 0-based); None when absent.
    """

    id: int
    steps: tuple[Step, ...]
    family_id: int | None = None
    path_type: str | None = None
    branch_from: int | None = None

    def premise_ids(self) -> frozenset[str]:
        """The knowledge-base ids the proof cites (its support, possibly non-minimal)."""
        return frozenset(p.id for s in self.steps for p in s.premises if p.id != DERIVED)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family_id": self.family_id,
            "path_type": self.path_type,
            "branch_from": self.branch_from,
            "steps": [
                {
                    "step_number": s.number,
                    "rule_applied": s.rule,
                    "premises_used": [{"id": p.id, "prover9": to_prover9(p.formula)} for p in s.premises],
                    "conclusion": to_prover9(s.conclusion),
                    "natural": s.natural,
                }
                for s in self.steps
            ],
        }


@dataclass(frozen=True)
class Instance:
    """One LogicGraph instance.

    Attributes:
        id: ``"<Tier>/test_N"``.
        premises: knowledge-base id -> premise, rules first then facts, in file order.
        goal: the target formula (``G``).
        goal_natural: the goal in English.
        proofs: the reference proofs (empty for an instance without ground truth yet).
        record: the source JSON object (kept for round trips and the English texts).
    """

    id: str
    premises: Mapping[str, Premise]
    goal: Formula
    goal_natural: str = ""
    proofs: tuple[Proof, ...] = ()
    record: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def tier(self) -> str:
        return self.id.split("/", 1)[0].lower() if "/" in self.id else ""

    def atoms(self) -> frozenset[str]:
        out: set[str] = set(atoms(self.goal))
        for premise in self.premises.values():
            out |= atoms(premise.formula)
        return frozenset(out)

    def reference_supports(self) -> list[frozenset[str]]:
        """The distinct premise sets of the reference proofs, in proof order."""
        seen: list[frozenset[str]] = []
        for proof in self.proofs:
            ids = proof.premise_ids()
            if ids not in seen:
                seen.append(ids)
        return seen

    def families(self) -> dict[int, list[Proof]]:
        """family id -> its proofs (core first), from the reference's ``family_id``."""
        out: dict[int, list[Proof]] = {}
        for proof in self.proofs:
            if proof.family_id is not None:
                out.setdefault(proof.family_id, []).append(proof)
        for proofs in out.values():
            proofs.sort(key=lambda p: (p.path_type != "core", p.id))
        return out

    def context_text(self) -> str:
        """The English rules and facts, one ``"RuleK: ..."`` line each, as the dataset shows them."""
        question = self.record.get("question", {})
        context = question.get("context", {}) if isinstance(question, dict) else {}
        lines = list(context.get("rules", [])) + list(context.get("facts", []))
        if lines:
            return "\n".join(lines)
        return "\n".join(f"{p.id}: {p.natural}" for p in self.premises.values())

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Instance:
        """Parse one dataset line.

        Raises:
            InstanceError: a missing or malformed field (names the instance and the field).
        """
        rid = record.get("id") if isinstance(record, Mapping) else None
        if not isinstance(rid, str) or not rid:
            raise InstanceError(f"LogicGraph record without a string 'id': {str(record)[:80]!r}")
        reader = _Reader(rid)
        premises = reader.premises(record.get("knowledge_base"))
        target = record.get("target")
        if not isinstance(target, Mapping):
            raise reader.fail("target", "missing or not an object")
        goal = reader.formula(target.get("formal", target.get("prover9")), "target.formal")
        solutions = record.get("solutions", {})
        raw_proofs = solutions.get("solutions", []) if isinstance(solutions, Mapping) else solutions
        if not isinstance(raw_proofs, list):
            raise reader.fail("solutions.solutions", "not a list")
        proofs = [reader.proof(raw, k) for k, raw in enumerate(raw_proofs)]
        question = record.get("question", {})
        goal_natural = question.get("question", "") if isinstance(question, Mapping) else ""
        return cls(rid, premises, goal, goal_natural or str(target.get("natural", "")), tuple(proofs), record)

    def to_record(self) -> dict[str, Any]:
        """The dataset's JSON shape (the fields :meth:`from_record` reads, plus metadata)."""
        rules = [p for p in self.premises.values() if not p.is_fact]
        facts = [p for p in self.premises.values() if p.is_fact]

        def item(p: Premise) -> dict[str, Any]:
            return {
                "id": p.id,
                "formal": to_unicode(p.formula),
                "prover9_expression": p.expression or to_prover9(p.formula),
                "natural": p.natural,
            }

        families: dict[str, dict[str, int]] = {}
        for proof in self.proofs:
            if proof.family_id is not None:
                stats = families.setdefault(str(proof.family_id), {"core": 0, "branch": 0})
                stats["core" if proof.path_type == "core" else "branch"] += 1
        return {
            "id": self.id,
            "question": {
                "context": {
                    "rules": [f"{p.id}: {p.natural}" for p in rules],
                    "facts": [f"{p.id}: {p.natural}" for p in facts],
                },
                "question": self.goal_natural,
            },
            "knowledge_base": {"rules": [item(p) for p in rules], "facts": [item(p) for p in facts]},
            "solutions": {
                "solution_stats": {
                    "total_solutions": len(self.proofs),
                    "details": [{"solution_id": p.id, "steps_count": len(p.steps)} for p in self.proofs],
                },
                "solutions": [p.to_json() for p in self.proofs],
            },
            "target": {
                "formal": to_unicode(self.goal),
                "prover9": to_prover9(self.goal),
                "prover9_expression": to_prover9(self.goal),
                "natural": self.goal_natural,
            },
            "metadata": {"num_solutions": len(self.proofs), "family_stats": families},
        }


class _Reader:
    """The field readers of :meth:`Instance.from_record` for one record (errors name it and the field)."""

    def __init__(self, rid: str) -> None:
        self.rid = rid

    def fail(self, where: str, why: str) -> InstanceError:
        return InstanceError(f"{self.rid}: {where}: {why}")

    def formula(self, text: Any, where: str) -> Formula:
        if not isinstance(text, str):
            raise self.fail(where, f"expected a formula string, got {type(text).__name__}")
        try:
            return parse(text)
        except FormulaSyntaxError as exc:
            raise self.fail(where, str(exc)) from None

    def premises(self, kb: Any) -> dict[str, Premise]:
        if not isinstance(kb, Mapping):
            raise self.fail("knowledge_base", "missing or not an object")
        premises: dict[str, Premise] = {}
        for group in ("rules", "facts"):
            items = kb.get(group)
            if not isinstance(items, list):
                raise self.fail(f"knowledge_base.{group}", "missing or not a list")
            for k, item in enumerate(items):
                where = f"knowledge_base.{group}[{k}]"
                if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
                    raise self.fail(where, "expected an object with a string 'id'")
                if item["id"] in premises:
                    raise self.fail(where, f"duplicate id {item['id']!r}")
                premises[item["id"]] = Premise(
                    item["id"],
                    self.formula(item.get("formal"), f"{where}.formal"),
                    str(item.get("natural", "")),
                    str(item.get("prover9_expression", "")),
                )
        return premises

    def step(self, raw_step: Any, j: int, swhere: str) -> Step:
        if not isinstance(raw_step, Mapping):
            raise self.fail(swhere, "not an object")
        cited = raw_step.get("premises_used")
        if not isinstance(cited, list):
            raise self.fail(f"{swhere}.premises_used", "missing or not a list")
        step_premises: list[StepPremise] = []
        for i, c in enumerate(cited):
            if not isinstance(c, Mapping):
                raise self.fail(f"{swhere}.premises_used[{i}]", "not an object")
            step_premises.append(
                StepPremise(str(c.get("id")), self.formula(c.get("prover9"), f"{swhere}.premises_used[{i}].prover9"))
            )
        return Step(
            int(raw_step.get("step_number", j + 1)),
            str(raw_step.get("rule_applied", "")),
            tuple(step_premises),
            self.formula(raw_step.get("conclusion"), f"{swhere}.conclusion"),
            str(raw_step.get("natural", "")),
        )

    def proof(self, raw: Any, k: int) -> Proof:
        where = f"solutions.solutions[{k}]"
        if not isinstance(raw, Mapping) or not isinstance(raw.get("steps"), list):
            raise self.fail(where, "expected an object with a 'steps' list")
        steps = [self.step(raw_step, j, f"{where}.steps[{j}]") for j, raw_step in enumerate(raw["steps"])]
        return Proof(
            int(raw.get("id", k + 1)), tuple(steps), raw.get("family_id"), raw.get("path_type"), raw.get("branch_from")
        )


def load_instances(
    path: str | Path, *, limit: int | None = None, ids: Sequence[str] | None = None
) -> Iterator[Instance]:
    """Instances of one tier file, in file order.

    Args:
        path: a ``<tier>.jsonl`` file.
        limit: stop after this many (after filtering by ``ids``).
        ids: only these instance ids.

    Raises:
        InstanceError: a line that is not JSON or not a LogicGraph record (names file and line).
        FileNotFoundError: no such file.
    """
    wanted = set(ids) if ids is not None else None
    count = 0
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            if limit is not None and count >= limit:
                return
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InstanceError(f"{path}:{lineno}: not JSON ({exc.msg})") from None
            if wanted is not None and record.get("id") not in wanted:
                continue
            try:
                yield Instance.from_record(record)
            except InstanceError as exc:
                raise InstanceError(f"{path}:{lineno}: {exc}") from None
            count += 1


def goal_atom(instance: Instance) -> str:
    """The goal's atom name (LogicGraph goals are single atoms)."""
    if not isinstance(instance.goal, Atom):
        raise InstanceError(f"{instance.id}: the goal {to_prover9(instance.goal)!r} is not an atom")
    return instance.goal.name
