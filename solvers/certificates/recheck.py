"""The ``certificate-check`` language: one certificate re-check, run inside a solver worker.

The "program" is a JSON object ``{"language", "program", "answer", "certificate"}``: the row's
program language and text, its answer, and its certificate. :func:`solve` runs
:func:`symbolkg.solvers.certificates.check` on it and returns the verdict as an Outcome, so that
``symbolkg verify`` gets the solver pool's isolation, limits and crash recovery for free:

* ``verified``     -> ``Status.PROVED``,    answer ``"verified"``;
* ``failed``       -> ``Status.DISPROVED``, answer ``"failed"``,       reason in ``error_message``;
* ``unverifiable`` -> ``Status.UNKNOWN``,   answer ``"unverifiable"``, reason in ``error_message``.

``Outcome.backend`` names the checker.
"""

from __future__ import annotations

import json
from typing import Any

from symbolkg.solvers.certificates import check
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch

_STATUS = {"verified": Status.PROVED, "failed": Status.DISPROVED, "unverifiable": Status.UNKNOWN}


def request_text(*, language: str, program: str, answer: str | None, certificate: dict[str, Any] | None) -> str:
    """The ``certificate-check`` program that re-checks one row."""
    return json.dumps(
        {"language": language, "program": program, "answer": answer, "certificate": certificate}, ensure_ascii=False
    )


def parse(text: str) -> dict[str, Any]:
    """The check request in ``text``; raises ProgramError when it is not one."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise ProgramError(f"a certificate check must be a JSON object: {err.msg}", line=err.lineno) from None
    if not isinstance(obj, dict):
        raise ProgramError("a certificate check must be a JSON object")
    missing = [k for k in ("language", "program", "answer", "certificate") if k not in obj]
    if missing:
        raise ProgramError(f"a certificate check needs the keys {', '.join(missing)}", kind=ErrorKind.SYNTAX)
    if not isinstance(obj["language"], str) or not isinstance(obj["program"], str):
        raise ProgramError("language and program must be strings", kind=ErrorKind.TYPE)
    return obj


def solve(text: str, limits: Limits) -> Outcome:
    """Re-check one certificate (module docstring). Never raises for a bad request."""
    with Stopwatch() as sw:
        try:
            req = parse(text)
        except ProgramError as err:
            return err.to_outcome(seconds=sw.elapsed(), backend="certificate-check")
        verdict = check(
            req["certificate"], language=req["language"], program=req["program"], answer=req["answer"], limits=limits
        )
    return Outcome(
        _STATUS[verdict.status],
        answer=verdict.status,
        error_message=verdict.reason or None,
        seconds=sw.seconds,
        backend=verdict.checker or "certificate-check",
    )
