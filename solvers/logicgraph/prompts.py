"""The LLM's side of LogicGraph: the prompt, the output schema, and the parser of its answer.

The model sees the instance's premises (ids, formulas over the abstract atoms, and by default
their English sentences) and the goal, and is asked for as many *independent* proofs as it can
find, each a list of steps in one of the seven argument forms. Its output is one JSON object::

    {"proofs": [{"steps": [{"rule": "DS", "premises": ["Rule1", "Fact1"], "conclusion": "-A1"},
                           {"rule": "MT", "premises": ["Rule7", "S1"], "conclusion": "G"}]}]}

``S<k>`` cites the conclusion of step ``k`` of the same proof. With structured decoding the
schema pins ``rule`` to the seven names, ``premises`` to the instance's own ids and ``S1..S<n>``,
and ``conclusion`` to Prover9 text over the instance's own atoms, so a small model cannot
invent an id or an atom; it can still cite the wrong ones, which the verifier scores.

:func:`parse_answer` turns that object into the dataset's ``solutions`` format (the format
``symbolkg logicgraph verify`` reads), resolving ``S<k>`` to ``{"id": "Derived", "prover9": ...}``.
A reference to a step that does not exist stays as written (``"S9"``): the verifier labels it a
hallucinated citation instead of this parser guessing what was meant. Output cut off by the
token limit is salvaged up to its last complete value (:func:`~symbolkg.solvers.json_text.close_truncated`).

The prompt is laid out for prefix caching: the fixed instructions and the worked example come
first and are byte-identical for every instance; the instance follows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from symbolkg.solvers.json_text import close_truncated
from symbolkg.solvers.logicgraph.instances import DERIVED, RULES, Instance
from symbolkg.solvers.logicgraph.propositional import to_prover9

__all__ = ["PROMPT_VERSION", "ParsedAnswer", "answer_schema", "messages", "parse_answer"]

#: part of every cache key: bump when the prompt or the schema changes.
PROMPT_VERSION = "logicgraph-1"

SHOW_CHOICES: tuple[str, ...] = ("both", "formal", "natural")

_SYSTEM = """You write formal proofs in propositional logic.

You get numbered premises (rules and facts) and a goal. Find every different way to derive the goal: \
each proof must use a different set of premises, and use no premise it does not need.

Write each proof as steps. A step applies exactly one of these seven argument forms to premises or \
to conclusions of earlier steps of the same proof:
- MP (modus ponens): from (P -> Q) and P, conclude Q.
- MT (modus tollens): from (P -> Q) and -Q, conclude -P.
- DS (disjunctive syllogism): from (P | Q) and -P, conclude Q.
- HS (hypothetical syllogism): from (P -> Q) and (Q -> R), conclude (P -> R).
- CD (constructive dilemma): from (P -> R), (Q -> S) and (P | Q), conclude (R | S).
- DE (disjunction elimination): from (P | Q), (P -> R) and (Q -> R), conclude R.
- RAA (reductio ad absurdum): from (P -> Q) and (P -> -Q), conclude -P.
A double negation --X is written X.

Formulas use Prover9 notation: - for not, | for or, -> for implies, and parentheses around every \
binary formula, e.g. (-A3 -> (A1 | A2)).
Cite a premise by its id (Rule2, Fact1) and an earlier step k of the same proof as Sk.
The last step of every proof concludes the goal.

Answer with one JSON object: {"proofs": [{"steps": [{"rule": ..., "premises": [...], "conclusion": ...}, ...]}, ...]}

Example.
Premises:
Rule1: (B1 -> G)
Rule2: (B2 | B3)
Rule3: (B3 -> B1)
Rule4: (B2 -> B1)
Fact1: B4
Rule5: (B4 -> G)
Goal: G
Answer:
{"proofs": [{"steps": [{"rule": "MP", "premises": ["Rule5", "Fact1"], "conclusion": "G"}]}, \
{"steps": [{"rule": "DE", "premises": ["Rule2", "Rule4", "Rule3"], "conclusion": "B1"}, \
{"rule": "MP", "premises": ["Rule1", "S1"], "conclusion": "G"}]}]}"""


def _premise_line(instance: Instance, pid: str, show: str) -> str:
    premise = instance.premises[pid]
    formal = to_prover9(premise.formula)
    if show == "formal" or not premise.natural:
        return f"{pid}: {formal}"
    if show == "natural":
        return f"{pid}: {premise.natural}"
    return f"{pid}: {formal}  [{premise.natural}]"


def messages(instance: Instance, *, show: str = "both") -> list[dict[str, str]]:
    """The chat messages for one instance (system: fixed instructions; user: the instance).

    Args:
        instance: the instance.
        show: ``"both"`` formulas and English (default), ``"formal"`` formulas only, or
            ``"natural"`` English only (the paper's setting; the model must then name the
            atoms itself, which the schema still restricts to the instance's atoms).

    Raises:
        ValueError: an unknown ``show``.
    """
    if show not in SHOW_CHOICES:
        raise ValueError(f"show must be one of {SHOW_CHOICES}, got {show!r}")
    lines = ["Premises:"]
    lines += [_premise_line(instance, pid, show) for pid in instance.premises]
    goal = to_prover9(instance.goal)
    if show == "natural" and instance.goal_natural:
        lines.append(f"Goal: {instance.goal_natural}")
    elif show == "both" and instance.goal_natural:
        lines.append(f"Goal: {goal}  [{instance.goal_natural}]")
    else:
        lines.append(f"Goal: {goal}")
    if show == "natural":
        atoms = ", ".join(sorted(instance.atoms(), key=_atom_order))
        lines.append(f"Write formulas over these atoms: {atoms}")
    lines.append("Answer:")
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def _atom_order(name: str) -> tuple[int, int, str]:
    match = re.fullmatch(r"([A-Za-z]+)(\d+)", name)
    return (1, 0, name) if match is None else (0, int(match.group(2)), match.group(1))


def answer_schema(instance: Instance, *, max_proofs: int = 8, max_steps: int = 16) -> dict[str, Any]:
    """The JSON schema of an answer for ``instance`` (for structured decoding).

    Args:
        instance: pins the premise ids and the atoms.
        max_proofs: most proofs in one answer.
        max_steps: most steps in one proof (also the highest ``S<k>`` that can be cited).

    Raises:
        ValueError: a bound < 1.
    """
    if max_proofs < 1 or max_steps < 1:
        raise ValueError(f"max_proofs and max_steps must be >= 1, got {max_proofs} and {max_steps}")
    ids = list(instance.premises) + [f"S{k}" for k in range(1, max_steps)]
    # longest first so that A12 is tried before A1 (the language is the same either way)
    atoms = sorted(instance.atoms(), key=lambda a: (-len(a), a))
    formula = "^(?:[-() |]|->|" + "|".join(re.escape(a) for a in atoms) + ")+$"
    step = {
        "type": "object",
        "properties": {
            "rule": {"enum": list(RULES)},
            "premises": {"type": "array", "items": {"enum": ids}, "minItems": 1, "maxItems": 3},
            "conclusion": {"type": "string", "pattern": formula, "minLength": 1, "maxLength": 80},
        },
        "required": ["rule", "premises", "conclusion"],
        "additionalProperties": False,
    }
    proof = {
        "type": "object",
        "properties": {"steps": {"type": "array", "items": step, "minItems": 1, "maxItems": max_steps}},
        "required": ["steps"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"proofs": {"type": "array", "items": proof, "minItems": 1, "maxItems": max_proofs}},
        "required": ["proofs"],
        "additionalProperties": False,
    }


@dataclass
class ParsedAnswer:
    """The model's answer in the dataset's ``solutions`` format.

    Attributes:
        solutions: proofs as the verifier reads them.
        errors: what could not be read (the text is not JSON, a proof without steps, ...);
            a proof that could not be read at all is not in ``solutions``.
        truncated: the text was cut off and salvaged up to its last complete value.
    """

    solutions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    truncated: bool = False


def parse_answer(text: str, instance: Instance) -> ParsedAnswer:
    """Read the model's answer; never raises for bad output (it is recorded in ``errors``).

    Args:
        text: the completion text.
        instance: the instance asked about (resolves cited ids to their formulas).
    """
    out = ParsedAnswer()
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = re.sub(r"^```[a-zA-Z]*\s*|\s*```$", "", stripped)
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as exc:
        start = stripped.find("{")
        salvaged = close_truncated(stripped[start:]) if start >= 0 else None
        if salvaged is None:
            out.errors.append(f"not JSON: {exc.msg} at character {exc.pos}")
            return out
        data, _ = salvaged
        out.truncated = True
    proofs = data.get("proofs") if isinstance(data, dict) else None
    if not isinstance(proofs, list):
        out.errors.append("no 'proofs' list in the answer")
        return out
    for k, raw in enumerate(proofs, 1):
        steps = raw.get("steps") if isinstance(raw, dict) else None
        if not isinstance(steps, list) or not steps:
            out.errors.append(f"proof {k}: no steps")
            continue
        converted: list[dict[str, Any]] = []
        for j, step in enumerate(steps, 1):
            if not isinstance(step, dict):
                out.errors.append(f"proof {k} step {j}: not an object")
                break
            cited: list[dict[str, Any]] = []
            for ref in step.get("premises") or []:
                ref = str(ref)
                if ref in instance.premises:
                    cited.append({"id": ref, "prover9": to_prover9(instance.premises[ref].formula)})
                elif re.fullmatch(r"S\d+", ref) and 1 <= int(ref[1:]) < j:
                    cited.append({"id": DERIVED, "prover9": converted[int(ref[1:]) - 1]["conclusion"]})
                else:
                    cited.append({"id": ref, "prover9": ""})  # no such premise or step: the verifier labels it
            converted.append(
                {
                    "step_number": j,
                    "rule_applied": str(step.get("rule", "")),
                    "premises_used": cited,
                    "conclusion": str(step.get("conclusion", "")),
                }
            )
        else:
            out.solutions.append({"id": len(out.solutions) + 1, "steps": converted})
    return out
