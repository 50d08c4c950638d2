"""Entailment certificates: why a first-order answer True / False / Unknown holds, and their checker.

Produced by the Prover9 path (:func:`symbolkg.solvers.fol.prover9.entail`, used by the
``logiclm-fol`` and ``prover9`` languages; producer ``prover9``) and, for Unknown answers the
finite-model search decided before or beside Prover9 (:mod:`symbolkg.solvers.fol.race`), by Z3
(producer ``z3``, the same countermodels); checked by :func:`check` with Z3 and a plain Python
evaluator, never with Prover9. The checker imports only syntax (:mod:`symbolkg.solvers.fol.syntax`,
:mod:`symbolkg.solvers.fol.prover9_syntax`) and the independent Z3 evaluator
(:mod:`symbolkg.solvers.fol.z3_eval`), never the engine whose answers it checks.

Fields (version 1; every value is plain JSON)::

    {
      "kind": "entailment", "version": 1, "producer": "prover9",
      "answer": "True" | "False" | "Unknown",
      "claim": "goal" | "negation" | "inconsistent" | "independent",
      "goal": {"line": 9, "text": "Animal(rex)", "prover9": "Animal(rex)"},
      "premises": [{"line": 4, "text": "∀x (Dog(x) → Animal(x))", "prover9": "(all x (Dog(x) -> Animal(x)))"}, ...],
      "countermodels": {"goal_false": MODEL | null, "goal_true": MODEL | null, "reason": "..."}
    }

* ``goal``: the conclusion as the program states it: its program ``line`` (1-based; null when
  the caller gave none), its ``text`` exactly as written (comment removed) and the ``prover9``
  formula that was proved or refuted.
* ``premises``: the premises the deciding Prover9 proof used (Prover9 prints every input formula
  a proof uses; each assumption went in labelled with its index), each with its program line,
  text and Prover9 form. Empty for "Unknown" (the countermodels must satisfy every premise).
* ``claim``: what the cited premises establish: ``goal`` (they entail the goal: answer True),
  ``negation`` (they entail the negated goal: False), ``inconsistent`` (they are contradictory,
  so they entail anything; Prover9's convention answers True), ``independent`` (Unknown).
* ``countermodels`` (Unknown only): ``goal_false`` is a finite model of all premises in which
  the goal is false (so the goal is not entailed), ``goal_true`` one in which it is true (so its
  negation is not entailed). Found by Z3 over small finite domains
  (:func:`symbolkg.solvers.fol.z3_eval.find_model`); a side is null when none was found within the
  budget, and ``reason`` says why. A MODEL is ``{"domain_size": n, "constants": {name: i},
  "predicates": {name: [[i, ...], ...]}, "functions": {name: [[[i, ...], j], ...]}}`` over the
  individuals ``0 .. n-1``; a predicate lists the tuples it is true of (``[[]]`` for a true
  proposition, ``[]`` for a false one); names are the program's own.

The checker (:func:`check`) re-reads the program with our parser (``logiclm-fol``:
:func:`symbolkg.solvers.fol.syntax.parse`; ``prover9``: :func:`symbolkg.solvers.fol.prover9_syntax.parse` plus
its reader of Prover9 formulas, :func:`~symbolkg.solvers.fol.prover9_syntax.read_formula`), checks
that the goal is the program's conclusion and every cited premise is one of its premises (same line,
same text, and for ``logiclm-fol`` the same Prover9 translation), that the certificate's answer is
the row's, and then:

* True: Z3 finds the cited premises ∧ ¬goal unsatisfiable (for ``inconsistent``, the cited
  premises alone);
* False: Z3 finds the cited premises ∧ goal unsatisfiable;
* Unknown: a Python evaluator of our formula syntax tree finds every premise of the program true
  in both countermodels, the goal false in ``goal_false`` and true in ``goal_true``.

Z3 ``unknown`` (time limit, incomplete quantifier reasoning), a missing countermodel, and a
Prover9 formula the reader does not support are ``unverifiable`` with the reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from symbolkg.solvers.certificates import Verdict
from symbolkg.solvers.fol import prover9_syntax
from symbolkg.solvers.fol import syntax as fol_syntax
from symbolkg.solvers.fol.syntax import (
    Atom,
    Binary,
    Connective,
    Const,
    Equals,
    Formula,
    Not,
    Quantified,
    Quantifier,
    Term,
    Var,
)
from symbolkg.solvers.fol.z3_eval import ground_size, satisfiable
from symbolkg.solvers.outcomes import CertificateError, Limits, ProgramError

VERSION = 1

#: Largest certificate kept with countermodels; a larger one drops them (with the reason).
MAX_CERTIFICATE_BYTES = 20_000

#: Largest domain a countermodel may have, and the most formula-node evaluations a check makes.
MAX_DOMAIN_SIZE = 64
MAX_EVALUATIONS = 2_000_000

ANSWER_CLAIMS = {"True": ("goal", "inconsistent"), "False": ("negation",), "Unknown": ("independent",)}


# --------------------------------------------------------------------------- producer


@dataclass(frozen=True)
class Cited:
    """A program formula as a certificate cites it: its line, its text as written, its Prover9 form."""

    line: int | None
    text: str
    prover9: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text, "prover9": self.prover9}


def proved(answer: str, goal: Cited, premises: Sequence[Cited], *, inconsistent: bool, producer: str) -> dict[str, Any]:
    """The certificate of a True / False answer decided by a proof that used ``premises``.

    Args:
        answer: ``"True"`` or ``"False"``.
        goal: the conclusion.
        premises: the premises the proof used.
        inconsistent: the proof did not use the goal: the premises alone are contradictory.
        producer: the backend whose proof it is.
    """
    if answer not in ("True", "False"):
        raise ValueError(f"a proof certifies True or False, not {answer!r}")
    claim = "inconsistent" if inconsistent else ("goal" if answer == "True" else "negation")
    return {
        "kind": "entailment",
        "version": VERSION,
        "producer": producer,
        "answer": answer,
        "claim": claim,
        "goal": goal.to_json(),
        "premises": [p.to_json() for p in premises],
    }


def unknown(
    goal: Cited,
    *,
    producer: str,
    goal_false: dict[str, Any] | None = None,
    goal_true: dict[str, Any] | None = None,
    reason: str = "no model finder for this language",
) -> dict[str, Any]:
    """The certificate of an Unknown answer: countermodels (JSON form) where they were found."""
    cert = {
        "kind": "entailment",
        "version": VERSION,
        "producer": producer,
        "answer": "Unknown",
        "claim": "independent",
        "goal": goal.to_json(),
        "premises": [],
        "countermodels": {"goal_false": goal_false, "goal_true": goal_true, "reason": reason},
    }
    if len(json.dumps(cert, ensure_ascii=False).encode()) > MAX_CERTIFICATE_BYTES:
        cert["countermodels"] = {
            "goal_false": None,
            "goal_true": None,
            "reason": f"countermodels dropped: the certificate would exceed {MAX_CERTIFICATE_BYTES} bytes",
        }
    return cert


# --------------------------------------------------------------------------- checker


def check(cert: dict[str, Any], *, language: str, program: str, answer: str | None, limits: Limits) -> Verdict:
    """Re-check an entailment certificate (module docstring) from the program text.

    Raises:
        CertificateError: the certificate is malformed or does not match the program (-> failed).
    """
    t0 = time.perf_counter()
    verdict = _check(cert, language=language, program=program, answer=answer, limits=limits)
    return Verdict(verdict.status, verdict.reason, verdict.checker, round(time.perf_counter() - t0, 6))


def _check(cert: dict[str, Any], *, language: str, program: str, answer: str | None, limits: Limits) -> Verdict:
    if cert.get("version") != VERSION:
        return Verdict(
            "unverifiable", f"entailment certificate version {cert.get('version')!r} (this checker reads {VERSION})"
        )
    claimed = cert.get("answer")
    if claimed not in ANSWER_CLAIMS:
        raise CertificateError(f"certificate answer {claimed!r} is not True, False or Unknown")
    if claimed != answer:
        raise CertificateError(f"the certificate is for answer {claimed!r} but the row answers {answer!r}")
    claim = cert.get("claim")
    if claim not in ANSWER_CLAIMS[claimed]:
        raise CertificateError(
            f"claim {claim!r} does not go with answer {claimed!r} (expected {' or '.join(ANSWER_CLAIMS[claimed])})"
        )
    try:
        read = _read_program(language, program)
    except _Unsupported as err:
        return Verdict("unverifiable", str(err), "z3")
    goal = _match_goal(cert.get("goal"), read)
    cited = _match_premises(cert.get("premises"), read)
    if claimed == "Unknown":
        if cited:
            raise CertificateError(
                "an Unknown certificate cites no premises (its countermodels must satisfy all of them)"
            )
        return _check_countermodels(cert.get("countermodels"), read, goal)
    formulas = [f for _, f in cited]
    if claim == "inconsistent":
        query, what = formulas, "the cited premises"
    elif claim == "goal":
        query, what = [*formulas, Not(goal)], "the cited premises ∧ ¬goal"
    else:
        query, what = [*formulas, goal], "the cited premises ∧ goal"
    result = satisfiable(query, limits.timeout_s)
    if result.result == "unsat":
        return Verdict("verified", f"Z3: {what} is unsatisfiable ({len(formulas)} premises)", "z3")
    if result.result == "sat":
        return Verdict(
            "failed", f"Z3 found a model of {what}: the cited premises do not support answer {claimed}", "z3"
        )
    return Verdict("unverifiable", f"Z3 could not decide {what}: {result.reason or 'unknown'}", "z3")


@dataclass(frozen=True)
class _Read:
    """The program as the checker reads it: (line, text, formula, prover9 form or None) per premise and goal."""

    premises: tuple[tuple[int, str, Any, str | None], ...]
    goal: tuple[int, str, Any, str | None]


def _read_program(language: str, program: str) -> _Read:
    try:
        if language == "logiclm-fol":
            parsed = fol_syntax.parse(program)
            tr = prover9_syntax.to_prover9(parsed)
            premises = tuple((p.line, p.text, p.formula, tr.assumptions[i]) for i, p in enumerate(parsed.premises))
            c = parsed.conclusion
            return _Read(premises, (c.line, c.text, c.formula, tr.goal))
        if language == "prover9":
            problem = prover9_syntax.parse(program)
            read = prover9_syntax.read_formula
            premises = tuple((a.line, a.text, read(a.text), a.text) for a in problem.assumptions)
            g = problem.goal
            return _Read(premises, (g.line, g.text, read(g.text), g.text))
    except ProgramError as err:
        raise CertificateError(f"the program does not parse: {err}") from None
    except prover9_syntax.Unreadable as err:
        raise _Unsupported(str(err)) from None
    raise _Unsupported(f"no entailment checker for language {language!r}")


class _Unsupported(Exception):
    """A program the checker cannot read (not the certificate's fault): unverifiable."""


def _match_goal(goal: Any, read: _Read) -> Any:
    if not isinstance(goal, dict):
        raise CertificateError("the certificate has no goal object")
    line, text, formula, p9 = read.goal
    if goal.get("line") != line or goal.get("text") != text:
        raise CertificateError(
            f"the certificate's goal (line {goal.get('line')!r}, {str(goal.get('text'))[:80]!r}) is not "
            f"the program's conclusion (line {line}, {text[:80]!r})"
        )
    if p9 is not None and goal.get("prover9") != p9:
        raise CertificateError(
            f"the goal's Prover9 form {str(goal.get('prover9'))[:80]!r} is not the translation of the conclusion"
        )
    return formula


def _match_premises(premises: Any, read: _Read) -> list[tuple[int, Any]]:
    if not isinstance(premises, list):
        raise CertificateError("the certificate's premises must be a list")
    by_line = {line: (text, formula, p9) for line, text, formula, p9 in read.premises}
    cited: list[tuple[int, Any]] = []
    seen: set[int] = set()
    for p in premises:
        if not isinstance(p, dict) or not isinstance(p.get("line"), int):
            raise CertificateError(f"a cited premise must be an object with an integer line, got {str(p)[:80]}")
        line = p["line"]
        if line not in by_line:
            raise CertificateError(f"cited premise on line {line} is not a premise of the program")
        text, formula, p9 = by_line[line]
        if p.get("text") != text:
            raise CertificateError(
                f"cited premise on line {line} reads {str(p.get('text'))[:80]!r} but the program has {text[:80]!r}"
            )
        if p9 is not None and p.get("prover9") != p9:
            raise CertificateError(
                f"cited premise on line {line}: Prover9 form {str(p.get('prover9'))[:80]!r} is not its translation"
            )
        if line in seen:
            raise CertificateError(f"premise on line {line} is cited twice")
        seen.add(line)
        cited.append((line, formula))
    return cited


# --------------------------------------------------------------------------- countermodels


def _check_countermodels(models: Any, read: _Read, goal: Any) -> Verdict:
    if not isinstance(models, dict):
        raise CertificateError("an Unknown certificate needs a countermodels object")
    missing = [side for side in ("goal_false", "goal_true") if models.get(side) is None]
    if missing:
        return Verdict(
            "unverifiable",
            f"no countermodel with the goal {' or '.join(s.split('_')[1] for s in missing)}: "
            f"{models.get('reason') or 'none given'}",
            "evaluator",
        )
    premises = [formula for _, _, formula, _ in read.premises]
    for side, want in (("goal_false", False), ("goal_true", True)):
        model = _Model.from_json(models[side], side)
        if model.cost([*premises, goal]) > MAX_EVALUATIONS:
            return Verdict(
                "unverifiable", f"countermodel {side} is too large to evaluate ({model.n} individuals)", "evaluator"
            )
        for line, _, formula, _ in read.premises:
            if not model.holds(formula, {}):
                raise CertificateError(f"countermodel {side}: the premise on line {line} is false in it")
        if model.holds(goal, {}) is not want:
            raise CertificateError(f"countermodel {side}: the goal is {'false' if want else 'true'} in it")
    return Verdict(
        "verified",
        "both countermodels satisfy every premise; the goal is false in one and true in the other",
        "evaluator",
    )


class _Model:
    """A finite interpretation read from a certificate, and a plain evaluator of our FOL syntax tree over it."""

    def __init__(
        self,
        n: int,
        constants: dict[str, int],
        predicates: dict[str, tuple[int, set[tuple[int, ...]]]],
        functions: dict[str, dict[tuple[int, ...], int]],
        side: str,
    ) -> None:
        self.n, self.constants, self.predicates, self.functions, self.side = n, constants, predicates, functions, side

    @classmethod
    def from_json(cls, obj: Any, side: str) -> _Model:
        def bad(what: str) -> CertificateError:
            return CertificateError(f"countermodel {side}: {what}")

        if not isinstance(obj, dict):
            raise bad("must be an object")
        n = obj.get("domain_size")
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_DOMAIN_SIZE:
            raise bad(f"domain_size must be an integer 1..{MAX_DOMAIN_SIZE}, got {n!r}")

        def element(v: Any) -> int:
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < n:
                raise bad(f"{v!r} is not an individual 0..{n - 1}")
            return v

        constants = {str(k): element(v) for k, v in _mapping(obj.get("constants", {}), bad, "constants").items()}
        predicates: dict[str, tuple[int, set[tuple[int, ...]]]] = {}
        for name, tuples in _mapping(obj.get("predicates", {}), bad, "predicates").items():
            if not isinstance(tuples, list) or not all(isinstance(t, list) for t in tuples):
                raise bad(f"predicate {name!r} must be a list of tuples")
            arities = {len(t) for t in tuples}
            if len(arities) > 1:
                raise bad(f"predicate {name!r} has tuples of different lengths")
            predicates[name] = (arities.pop() if arities else -1, {tuple(element(v) for v in t) for t in tuples})
        functions: dict[str, dict[tuple[int, ...], int]] = {}
        for name, table in _mapping(obj.get("functions", {}), bad, "functions").items():
            if not isinstance(table, list):
                raise bad(f"function {name!r} must be a list of [arguments, value]")
            entries: dict[tuple[int, ...], int] = {}
            for entry in table:
                if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)):
                    raise bad(f"function {name!r}: entry {str(entry)[:40]} is not [arguments, value]")
                entries[tuple(element(v) for v in entry[0])] = element(entry[1])
            functions[name] = entries
        return cls(n, constants, predicates, functions, side)

    def cost(self, formulas: Sequence[Formula]) -> int:
        return ground_size(formulas, self.n)

    def term(self, t: Term, env: dict[str, int]) -> int:
        if isinstance(t, Var):
            return env[t.name]
        if isinstance(t, Const):
            if t.name not in self.constants:
                raise CertificateError(f"countermodel {self.side} does not interpret the constant {t.name!r}")
            return self.constants[t.name]
        args = tuple(self.term(a, env) for a in t.args)
        table = self.functions.get(t.name)
        if table is None or args not in table:
            raise CertificateError(f"countermodel {self.side} does not give {t.name}{args}")
        return table[args]

    def holds(self, f: Formula, env: dict[str, int]) -> bool:
        if isinstance(f, Atom):
            if f.predicate not in self.predicates:
                raise CertificateError(f"countermodel {self.side} does not interpret the predicate {f.predicate!r}")
            arity, true = self.predicates[f.predicate]
            if arity not in (-1, len(f.args)):
                raise CertificateError(
                    f"countermodel {self.side}: predicate {f.predicate!r} has arity {len(f.args)}, not {arity}"
                )
            return tuple(self.term(a, env) for a in f.args) in true
        if isinstance(f, Equals):
            return self.term(f.left, env) == self.term(f.right, env)
        if isinstance(f, Not):
            return not self.holds(f.body, env)
        if isinstance(f, Quantified):
            values = (self.holds(f.body, {**env, f.var: i}) for i in range(self.n))
            return all(values) if f.quantifier is Quantifier.FORALL else any(values)
        if not isinstance(f, Binary):
            raise CertificateError(f"cannot evaluate {type(f).__name__}")
        left = self.holds(f.left, env)
        if f.op is Connective.AND:
            return left and self.holds(f.right, env)
        if f.op is Connective.OR:
            return left or self.holds(f.right, env)
        if f.op is Connective.IMPLIES:
            return (not left) or self.holds(f.right, env)
        right = self.holds(f.right, env)
        return left != right if f.op is Connective.XOR else left == right


def _mapping(value: Any, bad: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad(f"{what} must be an object")
    return value


# --------------------------------------------------------------------------- for people (symbolkg explain)


def premise_lines(cert: dict[str, Any]) -> list[int]:
    """Program lines of the premises the answer rests on (none for Unknown: every premise is)."""
    return [p["line"] for p in cert.get("premises", []) if isinstance(p, dict) and isinstance(p.get("line"), int)]


def _model_text(model: dict[str, Any]) -> str:
    def extension(tuples: list[Any]) -> str:
        if tuples == [[]]:
            return "true"  # a proposition
        return "{" + ", ".join("(" + ", ".join(map(str, t)) + ")" for t in tuples) + "}"

    consts = ", ".join(f"{k}={v}" for k, v in sorted(model.get("constants", {}).items()))
    preds = "; ".join(f"{k} = {extension(v)}" for k, v in sorted(model.get("predicates", {}).items()))
    n = model.get("domain_size")
    return f"{n} individual{'' if n == 1 else 's'}; constants {consts or '-'}; {preds or 'no predicates'}"


def explain_lines(cert: dict[str, Any]) -> list[str]:
    """The certificate for people: what the cited premises establish, or the two countermodels."""
    goal = cert.get("goal", {})
    where = f"line {goal.get('line')}" if goal.get("line") else "the conclusion"
    claim = cert.get("claim")
    lines = []
    if claim in ("goal", "negation", "inconsistent"):
        what = {
            "goal": f"entail the conclusion ({where}): {goal.get('text')}",
            "negation": f"entail the negation of the conclusion ({where}): ¬({goal.get('text')})",
            "inconsistent": "contradict each other, so they entail anything (answered True)",
        }[claim]
        lines.append(f"the {len(cert.get('premises', []))} premises above {what}")
        lines.append(
            f"(found by {cert.get('producer')}; `symbolkg verify` re-proves it with Z3 from these premises only)"
        )
        return lines
    lines.append(f"neither the conclusion ({where}) nor its negation follows: {goal.get('text')}")
    models = cert.get("countermodels") or {}
    for side, label in (
        ("goal_false", "every premise true, the conclusion false"),
        ("goal_true", "every premise true, the conclusion true"),
    ):
        m = models.get(side)
        lines.append(f"  model with {label}: " + (_model_text(m) if m else f"none found ({models.get('reason', '')})"))
    return lines
