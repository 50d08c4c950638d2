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
import json
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal


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
            option modality, one name: what the text resolves), and revise it when its run is
            inconsistent (``unstated_facts``); False solves it as written (the findings are still
            returned).
        context: the problem's premises (``unstated_facts`` compares a program's facts with them);
            empty: no revision.
    """

    question: str
    options: tuple[str, ...] = ()
    corrections: bool = True
    context: str = ""


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

    def to_wire(self) -> str:
        """The request as one JSON line (no newline): what crosses a process boundary to a solver worker.

        The only conversion of a request; :meth:`from_wire` is its inverse (``from_wire(r.to_wire()) == r``).
        """
        d: dict[str, Any] = {
            "problem_id": self.problem_id,
            "language": self.language,
            "text": self.text,
            "limits": asdict(self.limits),
        }
        if self.checks is not None:
            d["checks"] = {
                "question": self.checks.question,
                "options": list(self.checks.options),
                "corrections": self.checks.corrections,
                "context": self.checks.context,
            }
        return json.dumps(d)  # ASCII (non-ASCII escaped): right whatever the pipe's text encoding

    @classmethod
    def from_wire(cls, line: str | bytes) -> SolveRequest:
        """The request :meth:`to_wire` wrote.

        Raises:
            ValueError: not a request's JSON (a missing or mistyped field, bad limits).
        """
        try:
            d = json.loads(line)
            checks = d.get("checks")
            return cls(
                problem_id=d["problem_id"],
                language=d["language"],
                text=d["text"],
                limits=Limits(**d["limits"]),
                checks=CheckSpec(
                    checks["question"], tuple(checks["options"]), checks["corrections"], checks.get("context", "")
                )
                if checks
                else None,
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a solve request: {type(exc).__name__}: {exc}") from None


Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class CheckFinding:
    """One finding of the formalization checks (:mod:`symbolkg.solvers.checks`) as it leaves the worker
    and as a result row records it (``trace["checks"]``, each round's ``attempts_log`` entry).

    The checks' own :class:`symbolkg.solvers.checks.Finding` also holds the corrected program text; this
    record says only whether there is one (``corrects``): the worker applies corrections itself.

    Attributes:
        check: the check's name (one of :data:`symbolkg.solvers.checks.CHECKS`).
        severity: ``"error"`` (worth a refine round), ``"warning"`` or ``"info"``.
        message: what is wrong, where, and what the text says, for an LLM to act on.
        line: the 1-based program line it refers to, if one.
        corrects: the text resolves the mismatch without guessing (the checks have a correction).
    """

    check: str
    severity: Severity
    message: str
    line: int | None = None
    corrects: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The row form: ``{"check", "severity", "message", "line", "corrects"}``."""
        return {
            "check": self.check,
            "severity": self.severity,
            "message": self.message,
            "line": self.line,
            "corrects": self.corrects,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckFinding:
        return cls(d["check"], d["severity"], d["message"], d.get("line"), bool(d.get("corrects", False)))


@dataclass(frozen=True)
class CheckReport:
    """What the formalization checks did to a request's program before it was solved (:class:`CheckSpec`).

    Attributes:
        findings: the findings on the program as given, errors first.
        corrected: the checks' corrections were applied (the spec asked for them and one applied).
        corrections: when ``corrected``, the checks whose corrections were applied, in order.
        original_program: when ``corrected``, the program as given.
        program: when ``corrected``, the program that was solved.
        remaining: when ``corrected``, the findings on the solved program.
    """

    findings: tuple[CheckFinding, ...] = ()
    corrected: bool = False
    corrections: tuple[str, ...] = ()
    original_program: str | None = None
    program: str | None = None
    remaining: tuple[CheckFinding, ...] = ()

    def trace(self) -> dict[str, Any]:
        """The result row's ``trace`` entries: ``checks``, ``corrected``, and when corrected ``corrections``,
        ``original_program`` and ``remaining`` (the solved program is the row's ``program``)."""
        entries: dict[str, Any] = {"checks": [f.to_dict() for f in self.findings], "corrected": self.corrected}
        if self.corrected:
            entries.update(
                corrections=list(self.corrections),
                original_program=self.original_program,
                remaining=[f.to_dict() for f in self.remaining],
            )
        return entries

    def to_dict(self) -> dict[str, Any]:
        """:meth:`trace` with the solved ``program`` when corrected (the wire form)."""
        entries = self.trace()
        if self.corrected:
            entries["program"] = self.program
        return entries

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckReport:
        return cls(
            findings=tuple(CheckFinding.from_dict(f) for f in d.get("checks", ())),
            corrected=bool(d.get("corrected", False)),
            corrections=tuple(d.get("corrections", ())),
            original_program=d.get("original_program"),
            program=d.get("program"),
            remaining=tuple(CheckFinding.from_dict(f) for f in d.get("remaining", ())),
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
        checks: when the request carried a :class:`CheckSpec`: what the checks found and corrected
            (:class:`CheckReport`); else None (also when the worker crashed or was stopped first).
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
    checks: CheckReport | None = None
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
        """JSON-ready form: every field, ``status`` as its value, ``checks`` as :meth:`CheckReport.to_dict`."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["status"] = self.status.value
        d["checks"] = self.checks.to_dict() if self.checks is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Outcome:
        checks = d.get("checks")
        return cls(**{**d, "checks": CheckReport.from_dict(checks) if checks is not None else None})

    def to_wire(self) -> str:
        """The outcome as one JSON line (no newline): what a solver worker sends back to its parent.

        The only conversion of an outcome across a process boundary; :meth:`from_wire` is its inverse.
        """
        return json.dumps(self.to_dict())  # ASCII, as :meth:`SolveRequest.to_wire`

    @classmethod
    def from_wire(cls, line: str | bytes) -> Outcome:
        """The outcome :meth:`to_wire` wrote."""
        return cls.from_dict(json.loads(line))

    def log_entry(self) -> dict[str, Any]:
        """The outcome as a row's ``attempts_log`` entry records it: no proof, and ``checks`` null (the
        entry lists the findings itself, as :meth:`CheckFinding.to_dict` objects)."""
        d = self.to_dict()
        del d["proof"]
        d["checks"] = None
        return d

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
