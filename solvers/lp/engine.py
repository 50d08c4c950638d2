"""The forward chainer of the Logic-LM LP language (``logiclm-lp``): the registry entry ``parse``/``solve``.

The language (grammar, accepted variants, refusals) is :mod:`symbolkg.solvers.lp.syntax`; the same
programs answered by SWI-Prolog are :mod:`symbolkg.solvers.lp.swipl`.

Semantics: ``Pred(c, True)`` and ``Pred(c, False)`` are two independent atoms
(explicit negation, open world). :func:`solve` computes the least fixpoint of the
facts under the rules (Datalog: always finite, so cyclic rule sets terminate) and
answers the query ``Pred(c, V)``:

* ``"True"`` (``Status.PROVED``) if ``Pred(c, V)`` was derived;
* ``"False"`` (``Status.DISPROVED``) if ``Pred(c, not V)`` was derived;
* ``"Unknown"`` (``Status.UNKNOWN``) if neither was.

If both were derived, the program contradicts itself on the very atom asked about;
the call returns ``Status.UNSAT`` (the program ran: its verdict is "contradictory",
as for CSP and AR-LSAT programs whose constraints clash) with no answer,
``ErrorKind.INCONSISTENT``, a message naming the atom and both derivations in
``proof``, so the refine stage can show the LLM where its translation went wrong. (Logic-LM took
``True and False``, i.e. "False", as the atom's value; on the one recorded program that hits this,
ProntoQA_404, a wrong rule subject causes it and Logic-LM's answer is wrong.) Contradictions on
other atoms do not matter: nothing is derived from them (no ex falso).

``Outcome.proof`` holds the derivation of the answer: every fact and rule
instance used, in the order they build on each other. ``Outcome.certificate`` holds it
in a form another engine re-checks (:mod:`symbolkg.solvers.certificates.derivation`): the
proof tree for True/False (both for an inconsistent program), the closure for Unknown.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from symbolkg.solvers.certificates import derivation
from symbolkg.solvers.lp.syntax import (
    ANSWER_FALSE,
    ANSWER_TRUE,
    ANSWER_UNKNOWN,
    Atom,
    GroundAtom,
    LPProgram,
    Rule,
    Var,
    format_atom,
    lint,
    parse,
)
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

__all__ = [
    "BACKEND",
    "Derivation",
    "Fixpoint",
    "GroundAtom",
    "contradiction",
    "derivation_certificate",
    "forward_chain",
    "parse",
    "solve",
]

BACKEND = "forward-chainer"


@dataclass
class Derivation:
    """How a ground atom was first obtained.

    Attributes:
        line: program line of the fact or rule.
        rule: the rule, or None for a fact.
        binding: the rule's variable values (names without ``$``).
        premises: the ground body atoms the rule instance used.
    """

    line: int
    rule: Rule | None = None
    binding: dict[str, str] = field(default_factory=dict)
    premises: tuple[GroundAtom, ...] = ()


class ChainingTimeout(Exception):
    """The forward chainer's deadline passed before the fixpoint."""


class TooManyAtoms(Exception):
    """The forward chainer derived more atoms than its budget allows."""


@dataclass
class Fixpoint:
    """Everything a program derives, with the first derivation of each atom.

    Attributes:
        derived: every ground atom that holds, mapped to how it was derived.
        rounds: how many semi-naive rounds the fixpoint took.
    """

    derived: dict[GroundAtom, Derivation]
    rounds: int

    def holds(self, predicate: str, args: tuple[str, ...], value: bool) -> bool:
        return (predicate, args, value) in self.derived

    def proof_order(self, goals: Sequence[GroundAtom]) -> list[GroundAtom]:
        """Every atom the derivations of ``goals`` use, premises before conclusions, each once."""
        order: list[GroundAtom] = []
        seen: set[GroundAtom] = set()
        stack: list[tuple[GroundAtom, bool]] = [(goal, False) for goal in reversed(goals)]
        while stack:  # iterative post-order DFS: long chains must not hit the recursion limit
            atom, expanded = stack.pop()
            if expanded:
                order.append(atom)
                continue
            if atom in seen:
                continue
            seen.add(atom)
            stack.append((atom, True))
            for premise in reversed(self.derived[atom].premises):
                if premise not in seen:
                    stack.append((premise, False))
        return order

    def explain(self, goal: GroundAtom) -> str:
        """The derivation of ``goal``: each fact and rule instance used, premises first."""
        lines = []
        for atom in self.proof_order([goal]):
            how = self.derived[atom]
            text = format_atom(*atom)
            if how.rule is None:
                lines.append(f"{text}    [fact, line {how.line}]")
            else:
                bind = ", ".join(f"${k}={v}" for k, v in how.binding.items())
                from_text = ", ".join(format_atom(*p) for p in how.premises) or "(no premises)"
                lines.append(
                    f"{text}    [rule, line {how.line}: {how.rule.text}"
                    + (f" with {bind}" if bind else "")
                    + f"; from {from_text}]"
                )
        return "\n".join(lines)


def forward_chain(program: LPProgram, *, deadline: float | None = None, max_facts: int | None = None) -> Fixpoint:
    """Compute every atom the program derives (semi-naive, deterministic).

    Args:
        program: a parsed program.
        deadline: ``time.perf_counter()`` value after which to give up.
        max_facts: give up when more atoms than this have been derived.

    Returns:
        The fixpoint with derivations.

    Raises:
        ChainingTimeout: the deadline passed.
        TooManyAtoms: more than ``max_facts`` atoms were derived.
    """
    return _Chainer(program, deadline, max_facts).run()


class _Chainer:
    """One run of :func:`forward_chain`: the derived atoms, their index, and the semi-naive rounds."""

    def __init__(self, program: LPProgram, deadline: float | None, max_facts: int | None) -> None:
        self.program = program
        self.deadline = deadline
        self.max_facts = max_facts
        self.domain = tuple(program.constants())
        self.derived: dict[GroundAtom, Derivation] = {}
        # (predicate, value) -> list of args: rules join over this index.
        self.index: dict[tuple[str, bool], list[tuple[str, ...]]] = {}
        self.ticks = itertools.count()

    def run(self) -> Fixpoint:
        delta: list[GroundAtom] = []
        for fact in self.program.facts:
            self.add((fact.predicate, tuple(str(a) for a in fact.args), fact.value), Derivation(fact.line), delta)
        for rule in self.program.rules:
            if not rule.body:
                self.fire(rule, {}, [], delta)
        rounds = 0
        while delta:
            rounds += 1
            new: list[GroundAtom] = []
            by_key: dict[tuple[str, bool], list[tuple[str, ...]]] = {}
            for atom in delta:
                by_key.setdefault((atom[0], atom[2]), []).append(atom[1])
            for rule in self.program.rules:
                # Semi-naive: each instance must use at least one atom new in the last round.
                for pinned, atom in enumerate(rule.body):
                    for args in by_key.get((atom.predicate, atom.value), ()):
                        for binding, premises in self.solutions(rule.body, 0, pinned, args, {}, []):
                            self.fire(rule, binding, premises, new)
            delta = new
        return Fixpoint(self.derived, rounds)

    def tick(self) -> None:
        if self.deadline is not None and next(self.ticks) % 256 == 0 and time.perf_counter() > self.deadline:
            raise ChainingTimeout

    def add(self, atom: GroundAtom, how: Derivation, delta: list[GroundAtom]) -> None:
        if atom in self.derived:
            return
        self.derived[atom] = how
        self.index.setdefault((atom[0], atom[2]), []).append(atom[1])
        delta.append(atom)
        if self.max_facts is not None and len(self.derived) > self.max_facts:
            raise TooManyAtoms

    @staticmethod
    def match(pattern: Atom, args: tuple[str, ...], binding: dict[str, str]) -> dict[str, str] | None:
        if len(args) != len(pattern.args):
            return None
        out = binding
        for p, a in zip(pattern.args, args, strict=True):
            if isinstance(p, Var):
                bound = out.get(p.name)
                if bound is None:
                    if out is binding:
                        out = dict(binding)
                    out[p.name] = a
                elif bound != a:
                    return None
            elif p != a:
                return None
        return out

    def solutions(
        self,
        body: tuple[Atom, ...],
        i: int,
        pinned: int,
        pinned_args: tuple[str, ...],
        binding: dict[str, str],
        bound_atoms: list[GroundAtom],
    ) -> Iterator[tuple[dict[str, str], list[GroundAtom]]]:
        if i == len(body):
            yield binding, bound_atoms
            return
        atom = body[i]
        candidates = [pinned_args] if i == pinned else self.index.get((atom.predicate, atom.value), ())
        # The list grows while we iterate (fire() adds atoms); bound the loop by its
        # length now. Atoms added meanwhile are in the next delta, so none is missed.
        for k in range(len(candidates)):
            self.tick()
            args = candidates[k]
            b = self.match(atom, args, binding)
            if b is not None:
                yield from self.solutions(
                    body, i + 1, pinned, pinned_args, b, bound_atoms + [(atom.predicate, args, atom.value)]
                )

    def fire(self, rule: Rule, binding: dict[str, str], premises: list[GroundAtom], delta: list[GroundAtom]) -> None:
        free = sorted({v.name for h in rule.head for v in h.variables() if v.name not in binding})
        for values in itertools.product(self.domain, repeat=len(free)):
            self.tick()
            full = {**binding, **dict(zip(free, values, strict=True))}
            for head in rule.head:
                args = tuple(full[a.name] if isinstance(a, Var) else a for a in head.args)
                self.add((head.predicate, args, head.value), Derivation(rule.line, rule, full, tuple(premises)), delta)


def _answer(program: LPProgram, fixpoint: Fixpoint) -> tuple[Status, GroundAtom | None, GroundAtom | None]:
    """The query's status, and the derived atom(s) that decide it (both when inconsistent)."""
    q = program.query
    args = tuple(str(a) for a in q.args)
    positive: GroundAtom = (q.predicate, args, q.value)
    negative: GroundAtom = (q.predicate, args, not q.value)
    has_pos, has_neg = positive in fixpoint.derived, negative in fixpoint.derived
    if has_pos and has_neg:
        return Status.RUNTIME_ERROR, positive, negative
    if has_pos:
        return Status.PROVED, positive, None
    if has_neg:
        return Status.DISPROVED, negative, None
    return Status.UNKNOWN, None, None


def contradiction(program: LPProgram, fixpoint: Fixpoint) -> tuple[GroundAtom, GroundAtom] | None:
    """The query atom and its negation when the program derives both (it is inconsistent); else None."""
    _, first, second = _answer(program, fixpoint)
    return None if first is None or second is None else (first, second)


_ANSWERS = {Status.PROVED: ANSWER_TRUE, Status.DISPROVED: ANSWER_FALSE, Status.UNKNOWN: ANSWER_UNKNOWN}


def solve(text: str, limits: Limits) -> Outcome:
    """Parse and run an LP program with the forward chainer. Never raises for a bad program.

    Args:
        text: the program.
        limits: ``timeout_s`` bounds the chaining; ``memory_mb`` bounds the number
            of derived atoms (about 2,000 per MB).

    Returns:
        The outcome (see the module docstring for the answer and status mapping).
    """
    with Stopwatch() as sw:
        try:
            program = parse(text)
        except ProgramError as exc:
            return exc.to_outcome(seconds=sw.elapsed(), backend=BACKEND)
        try:
            fixpoint = forward_chain(
                program,
                deadline=time.perf_counter() + limits.timeout_s - sw.elapsed(),
                max_facts=limits.memory_mb * 2000,
            )
        except ChainingTimeout:
            return Outcome.error(
                Status.TIMEOUT,
                ErrorKind.TIMEOUT,
                f"forward chaining did not reach a fixpoint within {limits.timeout_s:g} s",
                seconds=sw.elapsed(),
                backend=BACKEND,
            )
        except TooManyAtoms:
            return Outcome.error(
                Status.MEMORY,
                ErrorKind.MEMORY,
                f"the rules derive more than {limits.memory_mb * 2000} atoms; "
                "check for rules with variables only in the conclusion",
                seconds=sw.elapsed(),
                backend=BACKEND,
            )
        status, first, second = _answer(program, fixpoint)
    if first is not None and second is not None:
        message = (
            f"the program is inconsistent: it derives both {format_atom(*first)} and {format_atom(*second)}; "
            "a fact or rule contradicts another (check the True/False values against the text)"
        )
        proof = f"{fixpoint.explain(first)}\n--- and ---\n{fixpoint.explain(second)}"
        return Outcome(
            status=Status.UNSAT,
            proof=proof,
            error_kind=ErrorKind.INCONSISTENT.value,
            error_message=message,
            error_line=program.query.line,
            seconds=sw.seconds,
            backend=BACKEND,
            certificate=derivation_certificate(text, program, fixpoint, None, (first, second)),
        )
    if first is not None:
        proof = fixpoint.explain(first)
    else:
        proof = f"neither {program.query} nor its negation is derivable ({len(fixpoint.derived)} atoms derived)"
        proof += "".join(f"\nhint: {hint}" for hint in lint(program))
    certificate = derivation_certificate(text, program, fixpoint, _ANSWERS[status], () if first is None else (first,))
    return Outcome(
        status=status,
        answer=_ANSWERS[status],
        proof=proof,
        seconds=sw.seconds,
        backend=BACKEND,
        certificate=certificate,
    )


def derivation_certificate(
    text: str,
    program: LPProgram,
    fixpoint: Fixpoint,
    answer: str | None,
    goals: tuple[GroundAtom, ...],
    *,
    producer: str = BACKEND,
) -> dict:
    """The ``derivation`` certificate of an answer (:mod:`symbolkg.solvers.certificates.derivation`).

    Args:
        text: the program text (facts are cited by their line's text).
        program: ``text`` parsed.
        fixpoint: what the program derives, with the first derivation of each atom.
        answer: ``True``, ``False``, ``Unknown``, or None for an inconsistent program.
        goals: the deciding atom (the query for True, its negation for False); none for
            Unknown; both for an inconsistent program.
        producer: the backend that answered.

    Returns:
        For True/False the proof tree of the goal, premises first, each atom once (for an
        inconsistent program, of both); for Unknown the closure (every derived atom), which
        shows that neither atom is derivable.
    """
    q = program.query
    query: GroundAtom = (q.predicate, tuple(str(a) for a in q.args), q.value)
    if not goals:
        return derivation.closure_certificate(producer=producer, query=query, query_line=q.line, atoms=fixpoint.derived)
    lines = text.splitlines()
    ids: dict[GroundAtom, int] = {}
    steps = []
    for atom in fixpoint.proof_order(goals):
        how = fixpoint.derived[atom]
        ids[atom] = len(ids) + 1
        if how.rule is None:
            fact_text = lines[how.line - 1].split(":::", 1)[0].strip()
            steps.append(
                {
                    "id": ids[atom],
                    "atom": format_atom(*atom),
                    "rule": None,
                    "line": how.line,
                    "rule_text": fact_text,
                    "binding": {},
                    "body": [],
                }
            )
        else:
            steps.append(
                {
                    "id": ids[atom],
                    "atom": format_atom(*atom),
                    "rule": how.line,
                    "line": how.line,
                    "rule_text": how.rule.text,
                    "binding": {f"${k}": v for k, v in sorted(how.binding.items())},
                    "body": [ids[p] for p in how.premises],
                }
            )
    return derivation.proof_certificate(producer=producer, answer=answer, query=query, query_line=q.line, steps=steps)
