"""`symbolkg verify RUN.parquet` (the command: :mod:`symbolkg.jobs.commands.verify`): re-check every executed
answer's certificate with another engine.

Each executed row's certificate (:mod:`symbolkg.solvers.certificates`) is re-checked inside a
solver worker (the ``certificate-check`` language), by an engine other than the one that answered
(e.g. a Prover9 entailment re-proved by Z3 from the cited premises only). Rows end as:

* ``verified``: the certificate holds;
* ``failed``: it does not (why: a cited premise is not in the program, a step does not follow, a
  model breaks a constraint, ...);
* ``unverifiable``: it cannot be decided (why: no certificate, the checker's time limit, ...).

Rows that did not execute, and rows that executed without an answer and carry no certificate (a
program whose constraints leave no single option), have no answer to check and are counted apart
(``not_executed``, ``no_answer``).
The verdicts are written beside the run (``RUN.verify.parquet``, one row per executed problem),
where ``symbolkg report`` finds them and adds their counts.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from symbolkg.jobs.pipeline.store import read_run
from symbolkg.solvers.certificates.recheck import request_text
from symbolkg.solvers.outcomes import Limits, SolveRequest

VERIFY_SCHEMA = pa.schema(
    [
        pa.field("problem_id", pa.string(), nullable=False),
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("language", pa.string()),
        pa.field("backend", pa.string(), nullable=False),
        pa.field("kind", pa.string()),
        pa.field("verdict", pa.string(), nullable=False),
        pa.field("reason", pa.string()),
        pa.field("checker", pa.string(), nullable=False),
        pa.field("seconds", pa.float64(), nullable=False),
    ]
)

#: --json summary keys (the issue's contract: rows, executed, with_certificate, verified, failed, unverifiable)
SUMMARY_KEYS = ("rows", "executed", "answered", "with_certificate", "verified", "failed", "unverifiable", "no_answer")


@dataclass(frozen=True)
class RowVerdict:
    """One executed row's verdict (a row of ``RUN.verify.parquet``)."""

    problem_id: str
    dataset: str
    language: str | None
    backend: str
    kind: str | None
    verdict: str
    reason: str | None
    checker: str
    seconds: float


def verdicts_path(run: str | Path) -> Path:
    """Where ``symbolkg verify`` writes the verdicts of ``run``."""
    run = Path(run)
    return run.with_name(run.stem + ".verify.parquet")


def verify_run(
    run: str | Path, pool: Any, *, limits: Limits | None = None, progress: bool = True
) -> tuple[list[RowVerdict], dict[str, Any]]:
    """Re-check every answered row of ``run`` on ``pool`` (each check under ``limits``); returns (verdicts, summary)."""
    limits = limits or Limits(timeout_s=20.0)

    table, _ = read_run(run)
    rows = table.to_pylist()
    # what has an answer to check: executed rows with an answer, and any row with a certificate
    # (an inconsistent LP program certifies that it derives both the query and its negation)
    executed = [r for r in rows if r["executed"] and (r["answer"] is not None or r["certificate"] is not None)]
    verdicts: list[RowVerdict] = []
    checked: dict[str, dict[str, Any]] = {}

    def requests() -> Iterator[SolveRequest]:
        for r in executed:
            if r["certificate"] is None:
                what = r["backend"] or "this backend"
                verdicts.append(
                    RowVerdict(
                        r["problem_id"],
                        r["dataset"],
                        r["language"],
                        r["backend"],
                        None,
                        "unverifiable",
                        f"no certificate ({what} gives none)",
                        "-",
                        0.0,
                    )
                )
                continue
            cert = json.loads(r["certificate"])
            checked[r["problem_id"]] = r
            text = request_text(
                language=r["language"] or "", program=r["program"] or "", answer=r["answer"], certificate=cert
            )
            yield SolveRequest(r["problem_id"], "certificate-check", text, limits)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(executed), unit="row", dynamic_ncols=True, file=sys.stderr, desc="verify")
    try:
        for result in pool.imap_unordered(requests()):
            r = checked[result.request.problem_id]
            o = result.outcome
            if o.executed and o.answer in ("verified", "failed", "unverifiable"):
                verdict, reason = o.answer, o.error_message
            else:  # the check itself timed out, ran out of memory or crashed its worker
                verdict, reason = "unverifiable", f"check {o.status.value}: {o.error_message or o.error_kind}"
            kind = json.loads(r["certificate"]).get("kind")
            verdicts.append(
                RowVerdict(
                    r["problem_id"],
                    r["dataset"],
                    r["language"],
                    r["backend"],
                    kind,
                    verdict,
                    reason,
                    o.backend,
                    round(o.seconds, 6),
                )
            )
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.update(len(verdicts) - bar.n)
            bar.close()
    verdicts.sort(key=lambda v: (v.dataset, v.problem_id))
    return verdicts, summarize(len(rows), verdicts, executed=sum(r["executed"] for r in rows))


def summarize(n_rows: int, verdicts: list[RowVerdict], *, executed: int) -> dict[str, Any]:
    """Counts over all rows, per dataset, and the reasons of every failed or unverifiable row.

    ``executed`` counts every executed row; ``answered`` those with an answer to check (the rows
    that got a verdict); ``no_answer`` the difference.
    """

    def counts(vs: list[RowVerdict]) -> dict[str, Any]:
        c = Counter(v.verdict for v in vs)
        with_cert = sum(v.kind is not None for v in vs)
        return {
            "answered": len(vs),
            "with_certificate": with_cert,
            "verified": c["verified"],
            "failed": c["failed"],
            "unverifiable": c["unverifiable"],
            "verified_rate": round(c["verified"] / len(vs), 4) if vs else 0.0,
        }

    by_dataset: dict[str, list[RowVerdict]] = {}
    for v in verdicts:
        by_dataset.setdefault(v.dataset, []).append(v)
    return {
        "rows": n_rows,
        "executed": executed,
        **counts(verdicts),
        "no_answer": executed - len(verdicts),
        "not_executed": n_rows - executed,
        "by_kind": dict(sorted(Counter(v.kind or "none" for v in verdicts).items())),
        "by_checker": dict(sorted(Counter(v.checker for v in verdicts).items())),
        "datasets": {d: counts(vs) for d, vs in sorted(by_dataset.items())},
        "problems": [asdict(v) for v in verdicts if v.verdict != "verified"],
    }


def write_verdicts(run: str | Path, verdicts: list[RowVerdict]) -> Path:
    path = verdicts_path(run)
    table = pa.Table.from_pylist([asdict(v) for v in verdicts], schema=VERIFY_SCHEMA)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
    return path


def read_verdict_counts(run: str | Path) -> dict[str, int] | None:
    """The verdict counts ``symbolkg report`` adds, when ``symbolkg verify`` has run on ``run``."""
    path = verdicts_path(run)
    if not path.exists():
        return None
    c = Counter(pq.read_table(path, columns=["verdict"]).column("verdict").to_pylist())
    return {"verified": c["verified"], "failed": c["failed"], "unverifiable": c["unverifiable"]}


def format_summary(summary: dict[str, Any]) -> str:
    lines = [f"{'dataset':28s} {'answered':>8s} {'certified':>9s} {'verified':>8s} {'failed':>6s} {'unverif.':>8s}"]
    for name, c in [*summary["datasets"].items(), ("all", summary)]:
        lines.append(
            f"{name:28s} {c['answered']:8d} {c['with_certificate']:9d} {c['verified']:8d} {c['failed']:6d} "
            f"{c['unverifiable']:8d}"
        )
    lines.append(
        f"rows {summary['rows']}: executed {summary['executed']} ({summary['no_answer']} without an answer), "
        f"not executed {summary['not_executed']} (nothing to check); "
        f"verified {summary['verified_rate']:.1%} of answered; checkers: "
        + ", ".join(f"{k} {v}" for k, v in summary["by_checker"].items())
    )
    for p in summary["problems"]:
        lines.append(f"  {p['verdict']:12s} {p['problem_id']} ({p['dataset']}, {p['backend']}): {p['reason']}")
    return "\n".join(lines)
