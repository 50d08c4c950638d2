"""Certificates: what an executed answer rests on, in a form another engine can re-check.

A solver backend attaches a certificate to its :class:`~symbolkg.solvers.outcomes.Outcome`
(``Outcome.certificate``, a JSON-serialisable dict; the results Parquet keeps it in the
``certificate`` column). ``symbolkg verify`` re-checks every certificate with an engine other
than the one that produced the answer (:mod:`symbolkg.jobs.inspection.certificates`).

Every certificate is a dict with at least:

* ``kind``: one of :data:`KINDS`, the module of this package that checks it;
* ``version``: the kind's format version (an int);
* ``producer``: the backend that found the answer (``prover9``, ``forward-chainer``, ``z3``, ...).

The kinds (each module's docstring gives its fields and what its checker does):

* ``entailment`` (:mod:`.entailment`): FOL entailment (Prover9, Z3): the goal and the
  premises used; for "False" the negated goal; for "Unknown" countermodels where there are any;
* ``derivation`` (:mod:`.derivation`): a proof tree of a rule-based answer (forward chainer,
  SWI-Prolog, SymBa): each step a rule instance whose body atoms are facts or earlier steps;
* ``constraint`` (:mod:`.constraint`): option answers (CSP, the AR-LSAT DSL): a model of the
  chosen option, and per rejected option an unsatisfiable core or a model, as the question needs.

A checker never trusts the certificate: it reads the program again with our own parser and
checks that everything the certificate cites is in the program, then re-derives the answer from
the cited parts with its own engine. Checkers run inside a solver worker (the
``certificate-check`` language of :mod:`symbolkg.solvers.registry`, :mod:`.recheck`), never in the
orchestrator: the program text is LLM-written, and a re-check may need a solver's time limit.
"""

from __future__ import annotations

import importlib
import time
import traceback
from dataclasses import dataclass
from typing import Any, Literal

from symbolkg.solvers.outcomes import CertificateError, Limits

#: certificate kinds; each is a module of this package with ``check(...) -> Verdict``
KINDS = ("entailment", "derivation", "constraint")

VerdictStatus = Literal["verified", "failed", "unverifiable"]
VERDICTS: tuple[VerdictStatus, ...] = ("verified", "failed", "unverifiable")


@dataclass(frozen=True)
class Verdict:
    """What a checker concluded about one certificate.

    Attributes:
        status: ``verified`` (the answer follows, checked independently), ``failed`` (the
            certificate is wrong: a cited premise is not in the program, a step does not follow,
            a model breaks a constraint, ...) or ``unverifiable`` (the checker cannot decide:
            no certificate, a kind it does not know, its own time limit).
        reason: why, in one line (empty for ``verified`` unless there is something to say).
        checker: the engine that re-checked it (``z3``, ``evaluator``, ...).
        seconds: time the check took.
    """

    status: VerdictStatus
    reason: str = ""
    checker: str = ""
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.status not in VERDICTS:
            raise ValueError(f"Verdict.status must be one of {VERDICTS}, got {self.status!r}")


def field_of(obj: dict[str, Any], key: str, types: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]``, checked to be of ``types`` (a bool is not an int); raises :class:`CertificateError`
    naming ``where`` otherwise. How every checker reads a certificate's JSON."""
    if key not in obj:
        raise CertificateError(f"{where} has no {key!r}")
    value = obj[key]
    if not isinstance(value, types) or (isinstance(value, bool) and types is int):
        raise CertificateError(f"{where}.{key} has the wrong type ({type(value).__name__})")
    return value


def check(
    certificate: dict[str, Any] | None, *, language: str, program: str, answer: str | None, limits: Limits | None = None
) -> Verdict:
    """Re-check ``certificate`` of ``program`` (in ``language``) answering ``answer``.

    Dispatches on ``certificate["kind"]``; never raises for a bad certificate or program (a
    malformed certificate is ``failed``, an unknown kind or a checker bug ``unverifiable``).
    """
    limits = limits or Limits()
    t0 = time.perf_counter()
    if certificate is None:
        return Verdict("unverifiable", "no certificate", seconds=0.0)
    if not isinstance(certificate, dict):
        return Verdict("failed", f"a certificate must be a JSON object, got {type(certificate).__name__}")
    kind = certificate.get("kind")
    if kind not in KINDS:
        return Verdict("unverifiable", f"unknown certificate kind {kind!r} (known: {', '.join(KINDS)})")
    try:
        module = importlib.import_module(f"{__name__}.{kind}")
        verdict: Verdict = module.check(certificate, language=language, program=program, answer=answer, limits=limits)
    except CertificateError as err:
        verdict = Verdict("failed", str(err))
    except RecursionError:
        verdict = Verdict("unverifiable", "certificate nested too deeply to check")
    except Exception as exc:  # noqa: BLE001 - a checker bug is reported, not fatal to the run
        tb = traceback.format_exc(limit=3).strip().splitlines()[-1]
        verdict = Verdict("unverifiable", f"checker error {type(exc).__name__}: {exc} ({tb})")
    if not verdict.seconds:
        verdict = Verdict(verdict.status, verdict.reason, verdict.checker, round(time.perf_counter() - t0, 6))
    return verdict
