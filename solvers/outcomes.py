"""Typed records shared by every program language and solver backend.

A solver call never raises for a bad program: it returns an :class:`Outcome`.
Exceptions are reserved for process-level failures (a dead worker, a broken
installation), which the solver pool turns into outcomes of its own.

Answer conventions (``Outcome.answer``):

* entailment programs (Logic-LM LP and FOL, Prover9, Prolog queries):
  ``"True"``, ``"False"`` or ``"Unknown"``;
* option programs (Logic-LM CSP and the AR-LSAT SAT/SMT DSL): the selected
  option letter (``"A"`` ... ``"G"``), or ``None`` when no single option holds;
* SMT-LIB2: ``"sat"``, ``"unsat"`` or ``"unknown"`` (of the last ``check-sat``);
  with a ``; goal: <term>`` line, the entailment verdict True/False/Unknown.

A program that runs but contradicts itself (clashing constraints, an LP program
that derives both an atom and its negation, FOL premises that entail both the
conclusion and its negation) ends as ``Status.UNSAT`` with no answer and
``ErrorKind.INCONSISTENT``, the message naming the conflicting lines: it executed,
it is scored wrong, and the refine loop sends it back like any other error. It is
never answered by whichever proof a solver happened to find first.
"""

from __future__ import annotations

import enum
import time
from dataclasses import asdict, dataclass, field
from typing import Any


class Status(str, enum.Enum):
    """What a solver call ended with."""

    PROVED = "proved"  # the goal (or the selected option) holds
    DISPROVED = "disproved"  # the negation of the goal holds
    UNKNOWN = "unknown"  # neither, within the limits (open world) / no unique option
    SAT = "sat"
    UNSAT = "unsat"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    PARSE_ERROR = "parse_error"
    RUNTIME_ERROR = "runtime_error"

    @property
    def executed(self) -> bool:
        """True when the program ran to a verdict (Logic-LM's "executable")."""
        return self not in _NOT_EXECUTED


_NOT_EXECUTED = frozenset({Status.TIMEOUT, Status.MEMORY, Status.PARSE_ERROR, Status.RUNTIME_ERROR})


class ErrorKind(str, enum.Enum):
    """Why a program did not execute. Reported per kind; fed back to the LLM."""

    SYNTAX = "syntax"  # the text does not follow the language's grammar
    UNDECLARED = "undeclared"  # a symbol used but never declared
    TYPE = "type"  # arity / sort / type mismatch
    UNSUPPORTED = "unsupported"  # valid-looking construct this backend does not implement
    SOLVER = "solver"  # the solver itself reported an error
    NO_ANSWER = "no_answer"  # ran, but the program's answer section is missing or ambiguous
    INCONSISTENT = "inconsistent"  # ran, but its premises contradict each other (they entail anything)
    NO_PROGRAM = "no_program"  # the problem came without a program (nothing to run)
    TIMEOUT = "timeout"
    MEMORY = "memory"
    WORKER_CRASH = "worker_crash"  # the worker process died during the call
    INTERNAL = "internal"  # a bug of ours, caught at the worker boundary
    LLM = "llm_error"  # the LLM engine could not answer (server down, bad request, ...)


@dataclass(frozen=True)
class Limits:
    """Per-call resource limits.

    Attributes:
        timeout_s: wall-clock budget of one solver call. Backends pass it to the
            solver (Z3 ``timeout``, Prover9 ``max_seconds``, chainer deadline); the
            worker pool kills the call ``kill_grace_s`` later if it has not returned.
        memory_mb: address-space limit of the worker process (and of the prover
            subprocesses it starts). Exceeding it yields ``Status.MEMORY``.
        max_depth: recursion / inference depth bound for Prolog-style search.
        max_answers: the most solutions a query enumerates.
        kill_grace_s: extra seconds before a hard kill of a call that ignores
            its own timeout.
    """

    timeout_s: float = 10.0
    memory_mb: int = 2048
    max_depth: int = 10_000
    max_answers: int = 100
    kill_grace_s: float = 3.0

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.memory_mb < 64:
            raise ValueError(f"memory_mb must be >= 64, got {self.memory_mb}")
        if self.max_depth < 1 or self.max_answers < 1:
            raise ValueError("max_depth and max_answers must be >= 1")
        if self.kill_grace_s < 0:
            raise ValueError(f"kill_grace_s must be >= 0, got {self.kill_grace_s}")


@dataclass(frozen=True)
class Program:
    """A program in one of :data:`symbolkg.solvers.registry.LANGUAGES`, as written.

    Attributes:
        language: language name, e.g. ``"logiclm-fol"``.
        text: the program text, unvalidated.
    """

    language: str
    text: str


@dataclass(frozen=True)
class CheckSpec:
    """Ask the worker to run the formalization checks (:mod:`symbolkg.solvers.checks`: parse only)
    on a request's program before solving it, against the problem's text.

    The checks run where the program is solved, never in the orchestrator: they parse LLM-written
    text, and on a batch they cost more than many solves (a parse per check).

    Attributes:
        question: the problem's question (the checks compare the program's query with it).
        options: the problem's answer options, ``"A) ..."``.
        corrections: solve the program as the checks corrected it (query polarity, option position,
            option modality, one name: what the text resolves); False solves it as written (the
            findings are still returned).
    """

    question: str
    options: tuple[str, ...] = ()
    corrections: bool = True


@dataclass(frozen=True)
class SolveRequest:
    """One program to run.

    Attributes:
        problem_id: the problem this program belongs to (kept for row identity).
        language: a name from :data:`symbolkg.solvers.registry.LANGUAGES`.
        text: the program, exactly as written (by the LLM or a user).
        limits: resource limits of this call.
        checks: run the formalization checks on ``text`` first, in the worker (see
            :class:`CheckSpec`); None solves ``text`` as given.
    """

    problem_id: str
    language: str
    text: str
    limits: Limits = field(default_factory=Limits)
    checks: CheckSpec | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"problem_id": self.problem_id, "language": self.language, "text": self.text, "limits": asdict(self.limits)}
        if self.checks is not None:
            d["checks"] = {
                "question": self.checks.question,
                "options": list(self.checks.options),
                "corrections": self.checks.corrections,
            }
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SolveRequest:
        checks = d.get("checks")
        return cls(
            problem_id=d["problem_id"],
            language=d["language"],
            text=d["text"],
            limits=Limits(**d["limits"]),
            checks=CheckSpec(checks["question"], tuple(checks["options"]), checks["corrections"]) if checks else None,
        )


@dataclass(frozen=True)
class Outcome:
    """The result of one solver call.

    Attributes:
        status: see :class:`Status`.
        answer: normalised answer (module docstring), or None.
        proof: proof text, model, or derivation trace, if the backend gives one.
        error_kind: an :class:`ErrorKind` value when the program did not execute
            (or ran without a usable answer), else None.
        error_message: a message an LLM can act on (what is wrong and where).
        error_line: 1-based line of the program the error refers to, if known.
        seconds: wall time of the call as measured by the backend.
        backend: which solver produced it (``z3``, ``prover9``, ``swipl``,
            ``forward-chainer``, ...).
        certificate: a JSON-serialisable object another engine can re-check the answer
            with (:mod:`symbolkg.solvers.certificates`), or None when the backend gives none.
        checks: when the request carried a :class:`CheckSpec`: the checks' trace entries
            (``checks``: the findings on the program as given; ``corrected``; when corrected,
            ``corrections``, the checks applied, ``original_program``, the text as given, and
            ``program``, the text that was solved); else None.
        readings: what the parser read into text that a strict grammar refuses but that has one
            meaning (e.g. an unbound name as "there is some x of sort s"), one line each; a
            result row keeps them in its ``trace``. None when there were none.
    """

    status: Status
    answer: str | None = None
    proof: str | None = None
    error_kind: str | None = None
    error_message: str | None = None
    error_line: int | None = None
    seconds: float = 0.0
    backend: str = ""
    certificate: dict[str, Any] | None = None
    checks: dict[str, Any] | None = None
    readings: list[str] | None = None

    def __post_init__(self) -> None:
        # Accept plain strings (e.g. from JSON) but store the enum.
        if not isinstance(self.status, Status):
            object.__setattr__(self, "status", Status(self.status))
        if isinstance(self.error_kind, ErrorKind):
            object.__setattr__(self, "error_kind", self.error_kind.value)

    @property
    def executed(self) -> bool:
        return self.status.executed

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Outcome:
        return cls(**d)

    @classmethod
    def error(
        cls,
        status: Status,
        kind: ErrorKind | str,
        message: str,
        *,
        line: int | None = None,
        seconds: float = 0.0,
        backend: str = "",
    ) -> Outcome:
        kind_value = kind.value if isinstance(kind, ErrorKind) else kind
        return cls(
            status=status,
            error_kind=kind_value,
            error_message=message,
            error_line=line,
            seconds=seconds,
            backend=backend,
        )


class ProgramError(Exception):
    """Raised by a parser for a malformed program; converted to an Outcome.

    Attributes:
        message: what is wrong, phrased so that an LLM can fix it.
        line: 1-based line number in the program text, if known.
        kind: an :class:`ErrorKind`.
    """

    def __init__(self, message: str, line: int | None = None, kind: ErrorKind = ErrorKind.SYNTAX):
        super().__init__(message if line is None else f"line {line}: {message}")
        self.message = message
        self.line = line
        self.kind = kind

    def to_outcome(self, *, seconds: float = 0.0, backend: str = "") -> Outcome:
        return Outcome.error(
            Status.PARSE_ERROR, self.kind, self.message, line=self.line, seconds=seconds, backend=backend
        )


class Stopwatch:
    """Measures the wall time of a solver call: ``with Stopwatch() as sw: ...; sw.seconds``."""

    def __enter__(self) -> Stopwatch:
        self._t0 = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._t0

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0


class CertificateError(ValueError):
    """A certificate that is malformed, cites what is not in the program, or does not prove what it
    claims (the message says which part or step failed): the check fails."""


class Deadline:
    """A time limit that a long loop polls cheaply: :meth:`tick` raises ``TimeoutError`` once
    ``seconds`` have passed (the clock is read every ``every`` ticks, so a tick costs a counter
    increment). Callers that report the overrun differently catch ``TimeoutError`` at their boundary.

    >>> d = Deadline(60.0)
    >>> d.tick(); d.expired()
    False
    """

    def __init__(self, seconds: float, every: int = 512) -> None:
        self.seconds = seconds
        self._end = time.perf_counter() + seconds
        self._every = every
        self._n = 0

    def tick(self) -> None:
        self._n += 1
        if self._n % self._every == 0 and time.perf_counter() > self._end:
            raise TimeoutError(f"time limit of {self.seconds:g} s reached")

    def expired(self) -> bool:
        return time.perf_counter() > self._end

    def remaining(self) -> float:
        return max(0.0, self._end - time.perf_counter())
