"""``symbolkg logicgraph supports``: every minimal support of each instance, proven complete, vs the reference.

For each instance of a LogicGraph tier: enumerate the minimal supports by labelled elimination
(:func:`~symbolkg.solvers.logicgraph.elimination.minimal_supports`, timed alone), recheck every set with Z3
(:func:`~symbolkg.solvers.logicgraph.support_check.recheck_supports`), verify the completeness certificate
with the independent checker (:func:`~symbolkg.solvers.logicgraph.elimination_check.check_certificate`),
and compare the sets with the premise sets of the reference proofs
(:meth:`~symbolkg.solvers.logicgraph.instances.Instance.reference_supports`; on a generated tier those
come from the reference enumerator, :mod:`~symbolkg.solvers.logicgraph.dualize`).

    symbolkg logicgraph supports --dataset logicgraph/small [--data-dir D] [--limit N] [--ids ...]
        [--json] [--out FILE.jsonl]

Exit status: 0 when every instance is complete, rechecked and certified and the sets equal the
reference's; 1 otherwise (the report says where); 2 for bad input (unknown dataset, missing file,
malformed record; the message names the file).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from symbolkg.solvers.logicgraph.elimination import minimal_supports
from symbolkg.solvers.logicgraph.elimination_check import check_certificate
from symbolkg.solvers.logicgraph.instances import Instance, InstanceError, load_instances
from symbolkg.solvers.logicgraph.propositional import parse
from symbolkg.solvers.logicgraph.support_check import recheck_supports
from symbolkg.solvers.logicgraph.supports_syntax import RecheckError
from symbolkg.solvers.outcomes import CertificateError


@dataclass(frozen=True)
class InstanceRow:
    """One instance's outcome (one line of ``--out``).

    Attributes:
        id: the instance id.
        supports: the minimal supports found (sorted ids each).
        reference: the reference proofs' premise sets.
        missing: reference sets not found; extra: found sets not in the reference.
        status: the enumeration's status; complete: provably all minimal supports.
        rechecked: every set passed Z3's recheck; certified: the certificate checked.
        error: why a recheck or certificate check failed ("" when none).
        enumerate_ms, recheck_ms, certificate_ms: wall time of each stage.
        solver_calls: resolution pairs of the elimination; clauses: labelled clauses it kept;
            certificate_size: entries of the certificate (clauses, drops and witnesses).
    """

    id: str
    supports: list[list[str]]
    reference: list[list[str]]
    missing: list[list[str]]
    extra: list[list[str]]
    status: str
    complete: bool
    rechecked: bool
    certified: bool
    error: str
    enumerate_ms: float
    recheck_ms: float
    certificate_ms: float
    solver_calls: int
    clauses: int
    certificate_size: int

    def to_row(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SupportsReport:
    """Totals over a run; :meth:`summary` has the acceptance keys."""

    dataset: str
    rows: list[InstanceRow] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        rows = self.rows
        gt = sum(len(r.reference) for r in rows)
        missing = sum(len(r.missing) for r in rows)
        enum_ms = sorted(r.enumerate_ms for r in rows)
        recheck_ms = sorted(r.recheck_ms for r in rows)
        cert_ms = sorted(r.certificate_ms for r in rows)
        return {
            "dataset": self.dataset,
            "instances": len(rows),
            "gt_sets": gt,
            "found_sets": sum(len(r.supports) for r in rows),
            "recall": (gt - missing) / gt if gt else 1.0,
            "extra": sum(len(r.extra) for r in rows),
            "missing": missing,
            "complete": sum(r.complete for r in rows),
            "rechecked": sum(r.rechecked for r in rows),
            "certified": sum(r.certified for r in rows),
            "recheck_failures": sum(bool(r.error) and not r.rechecked for r in rows),
            "certificate_failures": sum(r.rechecked and r.complete and not r.certified for r in rows),
            "p50_ms": _quantile(enum_ms, 0.5),
            "p95_ms": _quantile(enum_ms, 0.95),
            "max_ms": enum_ms[-1] if enum_ms else 0.0,
            "recheck_p50_ms": _quantile(recheck_ms, 0.5),
            "recheck_p95_ms": _quantile(recheck_ms, 0.95),
            "certificate_p50_ms": _quantile(cert_ms, 0.5),
            "certificate_p95_ms": _quantile(cert_ms, 0.95),
            "certificate_size_max": max((r.certificate_size for r in rows), default=0),
            "mismatches": [
                {"id": r.id, "missing": r.missing, "extra": r.extra, "error": r.error}
                for r in rows
                if r.missing or r.extra or r.error or not r.complete
            ],
        }

    def ok(self) -> bool:
        return all(r.complete and r.rechecked and r.certified and not r.missing and not r.extra for r in self.rows)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile of sorted values (0.0 for none), rounded to microseconds."""
    if not sorted_values:
        return 0.0
    return round(sorted_values[min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1)))], 3)


def _sets(sets: Iterable[frozenset[str]]) -> list[list[str]]:
    return sorted((sorted(s) for s in sets), key=lambda s: (len(s), s))


def evaluate_instance(instance: Instance, *, budget_s: float | None = None) -> InstanceRow:
    """Enumerate, recheck, certify and compare one instance (failures are recorded, not raised)."""
    premises = {pid: p.formula for pid, p in instance.premises.items()}
    # No garbage collection inside the timed enumeration: otherwise the collector runs there and
    # bills it for the previous recheck's Z3 objects (measured: p95 10.8 -> 6.3 ms). Disabled,
    # not forced: a full gc.collect() per instance cost up to a second in a big process (a test
    # worker after a few hundred tests).
    enabled = gc.isenabled()
    gc.disable()
    try:
        result = minimal_supports(premises, instance.goal, budget_s=budget_s, recheck=False)
    finally:
        if enabled:
            gc.enable()
    error = ""
    t0 = time.perf_counter()
    try:
        recheck_supports(premises, instance.goal, result.supports)
        rechecked = True
    except RecheckError as exc:
        rechecked, error = False, f"recheck: {exc}"
    t1 = time.perf_counter()
    certified = False
    if rechecked and result.complete:  # an incomplete result has nothing to certify
        try:
            check_certificate(premises, instance.goal, result)
            certified = True
        except CertificateError as exc:
            error = f"certificate: {exc}"
    t2 = time.perf_counter()
    found = set(result.supports)
    reference = instance.reference_supports()
    cert = result.certificate
    return InstanceRow(
        id=instance.id,
        supports=_sets(result.supports),
        reference=_sets(reference),
        missing=_sets(s for s in reference if s not in found),
        extra=_sets(found - set(reference)),
        status=result.status,
        complete=result.complete,
        rechecked=rechecked,
        certified=certified,
        error=error,
        enumerate_ms=round(result.elapsed_ms, 3),
        recheck_ms=round((t1 - t0) * 1000, 3),
        certificate_ms=round((t2 - t1) * 1000, 3),
        solver_calls=result.solver_calls,
        clauses=len(cert.clauses) if cert is not None else 0,
        certificate_size=cert.size() if cert is not None else 0,
    )


def _warm_up() -> None:
    """First-call costs (Z3's import and first context) kept out of the first instance's times."""
    premises = {"r": parse("A -> G"), "a": parse("A")}
    minimal_supports(premises, parse("G"), recheck=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="logicgraph/small", help="logicgraph/<tier> (default: %(default)s)")
    parser.add_argument("--data-dir", help="data folder (else $SYMBOLKG_DATA, else ../shared/data)")
    parser.add_argument("--limit", type=int, help="only the first N instances")
    parser.add_argument("--ids", nargs="+", help="only these instance ids (e.g. Small/test_1)")
    parser.add_argument("--budget-s", type=float, default=10.0, help="time budget per instance (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--out", help="write one JSON line per instance to this file")


def run(args: argparse.Namespace) -> int:
    if not str(args.dataset).startswith("logicgraph/"):
        print(
            f"symbolkg logicgraph supports: --dataset must be logicgraph/<tier>, got {args.dataset!r}", file=sys.stderr
        )
        return 2
    if args.budget_s is not None and args.budget_s <= 0:
        print(f"symbolkg logicgraph supports: --budget-s must be > 0, got {args.budget_s}", file=sys.stderr)
        return 2
    if args.limit is not None and args.limit < 1:
        print(f"symbolkg logicgraph supports: --limit must be >= 1, got {args.limit}", file=sys.stderr)
        return 2
    # the dataset readers (numpy) only when the command runs: the CLI builds every command's parser
    from symbolkg.jobs.datasets.registry import dataset_path

    try:
        path = dataset_path(args.dataset, args.data_dir)
    except (FileNotFoundError, ValueError) as exc:
        print(f"symbolkg logicgraph supports: {exc}", file=sys.stderr)
        return 2
    if not path.is_file():
        print(f"symbolkg logicgraph supports: dataset file {str(path)!r} does not exist", file=sys.stderr)
        return 2

    _warm_up()
    report = SupportsReport(args.dataset)
    try:
        from tqdm import tqdm  # optional third-party progress bar

        bar = tqdm(desc=f"supports {args.dataset}", unit="inst", file=sys.stderr, disable=None, total=args.limit)
    except ImportError:  # tqdm is optional: no bar
        bar = None
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(args.out, "w", encoding="utf-8")) if args.out else None
        if bar is not None:
            stack.callback(bar.close)
        try:
            for instance in load_instances(path, limit=args.limit, ids=args.ids):
                row = evaluate_instance(instance, budget_s=args.budget_s)
                report.rows.append(row)
                if out is not None:
                    out.write(json.dumps(row.to_row()) + "\n")
                if bar is not None:
                    bar.update(1)
        except InstanceError as exc:
            print(f"symbolkg logicgraph supports: bad record: {exc}", file=sys.stderr)  # exc names file:line
            return 2
    if args.ids:
        unknown = sorted(set(args.ids) - {r.id for r in report.rows})
        if unknown:
            print(f"symbolkg logicgraph supports: ids not in {path}: {', '.join(unknown)}", file=sys.stderr)
            return 2

    summary = report.summary()
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(_table(summary))
    return 0 if report.ok() else 1


def _table(s: dict[str, Any]) -> str:
    header = (
        f"{'dataset':20s} {'inst':>5s} {'gt sets':>7s} {'found':>6s} {'recall':>7s} {'extra':>5s} {'complete':>8s} "
        f"{'rechecked':>9s} {'certified':>9s} {'p50 ms':>7s} {'p95 ms':>7s} {'max ms':>7s}"
    )
    row = (
        f"{s['dataset']:20s} {s['instances']:5d} {s['gt_sets']:7d} {s['found_sets']:6d} {s['recall']:7.1%} "
        f"{s['extra']:5d} {s['complete']:8d} {s['rechecked']:9d} {s['certified']:9d} "
        f"{s['p50_ms']:7.2f} {s['p95_ms']:7.2f} {s['max_ms']:7.2f}"
    )
    checks = (
        f"recheck (Z3) p50/p95 ms: {s['recheck_p50_ms']:.2f} / {s['recheck_p95_ms']:.2f}; "
        f"certificate check p50/p95 ms: {s['certificate_p50_ms']:.2f} / {s['certificate_p95_ms']:.2f}; "
        f"largest certificate: {s['certificate_size_max']} entries"
    )
    lines = [header, "-" * len(header), row, "", checks]
    for m in s["mismatches"]:
        lines.append(f"MISMATCH {m['id']}: missing {m['missing']} extra {m['extra']} {m['error']}".rstrip())
    return "\n".join(lines)
