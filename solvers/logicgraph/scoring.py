"""LogicGraph's verification and metrics: every answer path checked step by step, then the paper's scores.

Every path is checked by :func:`symbolkg.solvers.logicgraph.proofs.check_path` (local validity,
rule shape, grounding; error labels), then the metrics of LogicGraph's paper (Section 5.2,
Table 4) are computed per tier and overall; docs/LOGICGRAPH.md defines each one. The multipath
method verifies its own answers with :func:`verify_instance`; ``symbolkg logicgraph verify`` scores
answer files and results files. Library use::

    from symbolkg.solvers.logicgraph.answers import Answer
    from symbolkg.solvers.logicgraph.scoring import format_table, metrics, verify_answers, verify_run
    report = verify_answers(instances, [Answer("Small/test_1", tuple(proofs), tokens=812)], name="my-model")
    table = metrics(report)                 # {"small": Metrics, ..., "overall": Metrics}
    table = metrics(report, pool=[report, other_report])   # Originality across several answer sets
    print(format_table(report, table))

    report_json = verify_run(instances, answer_dicts, name="my-model")  # both in one call, JSON-ready
    print(format_report(report_json, paper=PAPER_NUMBERS))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from symbolkg.solvers.logicgraph.answers import Answer, AnswerSet, answer_set
from symbolkg.solvers.logicgraph.instances import Instance
from symbolkg.solvers.logicgraph.proofs import LABELS, MALFORMED, PathCheck, check_path

# ------------------------------------------------------------------ verification


@dataclass(frozen=True)
class InstanceResult:
    """One instance under one answer set.

    Attributes:
        id, tier: the instance.
        answered: the answer set has a line for this id (a missing id counts as no paths).
        paths: one check per proof of the answer.
        tokens: the answer's tokens, if given.
        reference_supports: the instance's minimal supports (the reference's premise sets).
        reference_families: per reference family, the supports of its proofs.
        min_reference_length: steps of the shortest reference proof.
    """

    id: str
    tier: str
    answered: bool
    paths: tuple[PathCheck, ...]
    tokens: int | None
    reference_supports: tuple[frozenset[str], ...]
    reference_families: tuple[tuple[frozenset[str], ...], ...]
    min_reference_length: int

    @property
    def valid_paths(self) -> tuple[PathCheck, ...]:
        return tuple(p for p in self.paths if p.valid)

    @property
    def success(self) -> bool:
        """At least one valid path."""
        return any(p.valid for p in self.paths)

    @property
    def shortest_found(self) -> bool:
        """A valid path with at most as many steps as the shortest reference proof."""
        return any(p.valid and p.length <= self.min_reference_length for p in self.paths)

    def matched(self, *, exact: bool = False) -> frozenset[frozenset[str]]:
        """Reference supports matched by valid paths.

        Args:
            exact: only paths whose used premise set *is* a reference support count (the
                paper's literal set intersection); otherwise a valid path matches every
                reference support contained in its used premise set.
        """
        out: set[frozenset[str]] = set()
        for p in self.paths:
            if p.valid and (not exact or p.minimal):
                out.update(s for s in p.supports if not exact or s == p.used_ids)
        return frozenset(out)

    def to_json(self) -> dict[str, Any]:
        matched = self.matched()
        return {
            "id": self.id,
            "tier": self.tier,
            "answered": self.answered,
            "tokens": self.tokens,
            "paths": len(self.paths),
            "valid_paths": len(self.valid_paths),
            "success": self.success,
            "shortest_found": self.shortest_found,
            "min_reference_length": self.min_reference_length,
            "reference_supports": [sorted(s) for s in self.reference_supports],
            "matched_supports": [sorted(s) for s in self.reference_supports if s in matched],
            "path_checks": [p.to_json() for p in self.paths],
        }


@dataclass(frozen=True)
class VerifyReport:
    """All instances of one or more tiers under one answer set.

    Attributes:
        name: the answer set's name.
        instances: one result per instance, in the order given.
        errors: the answer set's line-level errors.
        unknown_ids: answer ids that are not among the instances (ignored).
    """

    name: str
    instances: tuple[InstanceResult, ...]
    errors: tuple[str, ...] = ()
    unknown_ids: tuple[str, ...] = ()


def _reference_families(instance: Instance) -> tuple[tuple[frozenset[str], ...], ...]:
    return tuple(
        tuple(dict.fromkeys(p.premise_ids() for p in proofs)) for _, proofs in sorted(instance.families().items())
    )


def verify_instance(
    instance: Instance, answer: Answer | None, *, strict_rules: bool = True, allow_contraposition: bool = False
) -> InstanceResult:
    """Check every path of one answer (None: the id is missing, no paths).

    Args:
        instance: the instance with its reference proofs.
        answer: the answer for it, or None.
        strict_rules: a Rule Misapplication makes a path invalid (default).
        allow_contraposition: accept contraposition steps (see ``CONTRAPOSITION``).
    """
    refs = tuple(instance.reference_supports())
    paths = ()
    if answer is not None:
        paths = tuple(
            check_path(
                instance,
                raw,
                index=k,
                reference_supports=refs,
                strict_rules=strict_rules,
                allow_contraposition=allow_contraposition,
            )
            for k, raw in enumerate(answer.solutions)
        )
    min_len = min((len(p.steps) for p in instance.proofs), default=0)
    return InstanceResult(
        instance.id,
        instance.tier,
        answer is not None,
        paths,
        None if answer is None else answer.tokens,
        refs,
        _reference_families(instance),
        min_len,
    )


def verify_answers(
    instances: Iterable[Instance],
    answers: AnswerSet | Mapping[str, Answer] | Iterable[Answer],
    *,
    name: str | None = None,
    strict_rules: bool = True,
    allow_contraposition: bool = False,
) -> VerifyReport:
    """Verify an answer set against instances.

    Args:
        instances: the instances (with reference proofs) to score; instances without an
            answer count as answered with no paths.
        answers: an :class:`AnswerSet`, a mapping id -> :class:`Answer`, or answers.
        name: the report's name (default: the set's name, else ``"answers"``).
        strict_rules: a Rule Misapplication makes a path invalid (default True).
        allow_contraposition: accept contraposition as a rule.

    Returns:
        A :class:`VerifyReport`; pass it to :func:`metrics`.
    """
    errors: tuple[str, ...] = ()
    if isinstance(answers, AnswerSet):
        errors = answers.errors
        name = name or answers.name
        by_id: Mapping[str, Answer] = answers.answers
    elif isinstance(answers, Mapping):
        by_id = answers
    else:
        by_id = {}
        for a in answers:
            by_id.setdefault(a.id, a)  # type: ignore[union-attr]
    results = []
    seen: set[str] = set()
    for inst in instances:
        seen.add(inst.id)
        results.append(
            verify_instance(
                inst, by_id.get(inst.id), strict_rules=strict_rules, allow_contraposition=allow_contraposition
            )
        )
    unknown = tuple(sorted(set(by_id) - seen))
    return VerifyReport(name or "answers", tuple(results), errors, unknown)


# ------------------------------------------------------------------ metrics


@dataclass(frozen=True)
class Metrics:
    """The paper's metrics over a group of instances (one tier, or ``overall``); rates in [0, 1].

    Definitions (docs/LOGICGRAPH.md has the reasoning behind each choice):

    Attributes:
        instances: instances scored.
        answered: instances with an answer line.
        paths, valid_paths, sound_paths: generated paths; valid ones; sound ones (valid but for
            rule names).
        steps, valid_steps: steps of all paths; steps without any label.
        success_rate: instances with at least one valid path / instances.
        precision: valid paths / paths (pooled over the group); None when there are no paths.
        shortest_path_rate: instances with a valid path of at most the shortest reference
            proof's step count / instances.
        diversity: mean over instances of (distinct reference supports matched by valid paths
            / reference supports); a valid path matches every reference support inside the
            premise set it uses.
        diversity_exact: the same counting only paths whose used premise set is exactly a
            reference support (the paper's |S_model ∩ S_GT| / |S_GT| read literally).
        versatility: mean over instances of (reference families with a matched support /
            families).
        originality: mean over instances of (sum over supports s the set matched of 1/n(s)) /
            reference supports, n(s) = answer sets of the pool that matched s on that
            instance. Equals ``diversity`` for a pool of one.
        mean_tokens: mean ``tokens`` over answers that carry it; None if none does.
        non_minimal_valid_paths: valid paths whose used premise set is not itself a reference
            support (they still count for ``diversity``, not for ``diversity_exact``).
        unmatched_valid_paths: valid paths containing no reference support (0 when the
            reference is complete; anything else means the reference or this checker is wrong).
        step_labels: steps carrying each label (a step can carry two); ``Malformed`` counts paths
            that are not in the format at all plus malformed steps.
        path_labels: paths with at least one step carrying each label.
    """

    instances: int
    answered: int
    paths: int
    valid_paths: int
    sound_paths: int
    steps: int
    valid_steps: int
    success_rate: float
    precision: float | None
    shortest_path_rate: float
    diversity: float
    diversity_exact: float
    versatility: float
    originality: float
    mean_tokens: float | None
    non_minimal_valid_paths: int
    unmatched_valid_paths: int
    step_labels: Mapping[str, int] = field(default_factory=dict)
    path_labels: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["step_labels"] = dict(self.step_labels)
        out["path_labels"] = dict(self.path_labels)
        return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _group_metrics(results: Sequence[InstanceResult], originality: Mapping[str, float]) -> Metrics:
    paths = [p for r in results for p in r.paths]
    valid = [p for p in paths if p.valid]
    steps = [s for p in paths for s in p.steps]
    diversity, exact, versatility = [], [], []
    for r in results:
        n_refs = len(r.reference_supports) or 1
        matched = r.matched()
        diversity.append(len(matched) / n_refs)
        exact.append(len(r.matched(exact=True)) / n_refs)
        fams = r.reference_families
        versatility.append(sum(1 for fam in fams if any(s in matched for s in fam)) / len(fams) if fams else 0.0)
    tokens = [r.tokens for r in results if r.tokens is not None]
    step_labels = {label: 0 for label in (*LABELS, MALFORMED)}
    path_labels = dict(step_labels)
    for p in paths:
        labels = p.labels()
        for label in labels:
            step_labels[label] += 1
        for label in set(labels):
            path_labels[label] += 1
    n = len(results)
    return Metrics(
        instances=n,
        answered=sum(r.answered for r in results),
        paths=len(paths),
        valid_paths=len(valid),
        sound_paths=sum(p.sound for p in paths),
        steps=len(steps),
        valid_steps=sum(s.ok for s in steps),
        success_rate=sum(r.success for r in results) / n if n else 0.0,
        precision=len(valid) / len(paths) if paths else None,
        shortest_path_rate=sum(r.shortest_found for r in results) / n if n else 0.0,
        diversity=_mean(diversity),
        diversity_exact=_mean(exact),
        versatility=_mean(versatility),
        originality=_mean([originality.get(r.id, 0.0) for r in results]),
        mean_tokens=_mean(tokens) if tokens else None,
        non_minimal_valid_paths=sum(1 for p in valid if not p.minimal),
        unmatched_valid_paths=sum(1 for p in valid if not p.supports),
        step_labels=step_labels,
        path_labels=path_labels,
    )


def _originality(report: VerifyReport, pool: Sequence[VerifyReport]) -> dict[str, float]:
    """Instance id -> originality of ``report`` against the pool (``report`` counted in it once)."""
    others = [r for r in pool if r is not report]
    other_matches = [{r.id: r.matched() for r in other.instances} for other in others]
    out: dict[str, float] = {}
    for r in report.instances:
        mine = r.matched()
        if not r.reference_supports:
            out[r.id] = 0.0
            continue
        total = 0.0
        for s in mine:
            n = 1 + sum(1 for m in other_matches if s in m.get(r.id, ()))
            total += 1.0 / n
        out[r.id] = total / len(r.reference_supports)
    return out


def metrics(report: VerifyReport, *, pool: Sequence[VerifyReport] | None = None) -> dict[str, Metrics]:
    """The metrics per tier (in the order tiers first appear) and ``"overall"``.

    ``overall`` averages the tier values of every rate (the paper's "Avg" column, which
    weighs tiers equally whatever their sizes) and sums the counts; ``mean_tokens`` and
    ``precision`` pool all instances / paths when a tier has none.

    Args:
        report: from :func:`verify_answers`.
        pool: answer sets to measure Originality against (the same instances; ``report``
            may be in it or not, it counts once). Default: ``report`` alone.
    """
    orig = _originality(report, list(pool or ()))
    tiers: dict[str, list[InstanceResult]] = {}
    for r in report.instances:
        tiers.setdefault(r.tier or "all", []).append(r)
    out = {tier: _group_metrics(results, orig) for tier, results in tiers.items()}
    if len(out) == 1:
        out["overall"] = next(iter(out.values()))
        return out
    groups = list(out.values())
    pooled = _group_metrics(list(report.instances), orig)

    def avg(name: str) -> float:
        return _mean([getattr(g, name) for g in groups])

    precisions = [g.precision for g in groups if g.precision is not None]
    out["overall"] = Metrics(
        instances=pooled.instances,
        answered=pooled.answered,
        paths=pooled.paths,
        valid_paths=pooled.valid_paths,
        sound_paths=pooled.sound_paths,
        steps=pooled.steps,
        valid_steps=pooled.valid_steps,
        success_rate=avg("success_rate"),
        precision=_mean(precisions) if precisions else None,
        shortest_path_rate=avg("shortest_path_rate"),
        diversity=avg("diversity"),
        diversity_exact=avg("diversity_exact"),
        versatility=avg("versatility"),
        originality=avg("originality"),
        mean_tokens=pooled.mean_tokens,
        non_minimal_valid_paths=pooled.non_minimal_valid_paths,
        unmatched_valid_paths=pooled.unmatched_valid_paths,
        step_labels=pooled.step_labels,
        path_labels=pooled.path_labels,
    )
    return out


# ------------------------------------------------------------------ report


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def format_table(report: VerifyReport, table: Mapping[str, Metrics], *, paper: Mapping[str, Any] | None = None) -> str:
    """A readable table of :func:`metrics` for one answer set.

    Args:
        report: the verified answer set (its name and line errors are shown).
        table: :func:`metrics` of it.
        paper: optional reference numbers to print under the table, in percent:
            ``{"model": name, "<tier>" | "average": {"success_rate": 93.0, ...}}``
            (``average`` is shown against ``overall``).
    """
    return _render(report.name, report.errors, report.unknown_ids, table, paper)


def _render(
    name: str,
    errors: Sequence[str],
    unknown_ids: Sequence[str],
    table: Mapping[str, Metrics],
    paper: Mapping[str, Any] | None,
) -> str:
    lines = [f"answers: {name}"]
    if errors:
        lines.append(f"  {len(errors)} answer line problem(s), first: {errors[0]}")
    if unknown_ids:
        lines.append(f"  {len(unknown_ids)} answer id(s) not in the dataset (ignored), e.g. {unknown_ids[0]}")
    header = (
        f"{'tier':10s} {'inst':>5s} {'answ':>5s} {'paths':>6s} {'valid':>6s} {'SR%':>7s} {'Prec%':>7s} "
        f"{'SPF%':>7s} {'Div%':>7s} {'DivEx%':>7s} {'Vers%':>7s} {'Orig%':>7s} {'tokens':>8s}"
    )
    lines += [header, "-" * len(header)]
    for tier, m in table.items():
        tokens = "-" if m.mean_tokens is None else f"{m.mean_tokens:.1f}"
        lines.append(
            f"{tier:10s} {m.instances:5d} {m.answered:5d} {m.paths:6d} {m.valid_paths:6d} "
            f"{_pct(m.success_rate):>7s} {_pct(m.precision):>7s} {_pct(m.shortest_path_rate):>7s} "
            f"{_pct(m.diversity):>7s} {_pct(m.diversity_exact):>7s} {_pct(m.versatility):>7s} "
            f"{_pct(m.originality):>7s} {tokens:>8s}"
        )
    if paper:
        lines.append(f"paper, {paper.get('model', 'reference')} (Table 4; Orig there is over 14 models):")
        for tier in table:
            row = paper.get("average" if tier == "overall" else tier)
            if not isinstance(row, Mapping):
                continue

            def cell(key: str, row: Mapping[str, Any] = row) -> str:
                value = row.get(key)
                return "-" if value is None else f"{float(value):.2f}"

            lines.append(
                f"{tier:10s} {'':5s} {'':5s} {'':6s} {'':6s} {cell('success_rate'):>7s} {cell('precision'):>7s} "
                f"{cell('shortest_path_rate'):>7s} {cell('diversity'):>7s} {'':>7s} {cell('versatility'):>7s} "
                f"{cell('originality'):>7s}"
            )
    overall = table["overall"]
    lines.append(
        f"steps: {overall.valid_steps}/{overall.steps} without error; "
        f"sound paths (rule names aside): {overall.sound_paths}; "
        f"valid paths not minimal: {overall.non_minimal_valid_paths}; "
        f"valid paths matching no reference support: {overall.unmatched_valid_paths}"
    )
    labelled = {k: v for k, v in overall.step_labels.items() if v}
    if labelled:
        lines.append(
            "errors (steps / paths): " + ", ".join(f"{k} {v}/{overall.path_labels[k]}" for k, v in labelled.items())
        )
    return "\n".join(lines)


# ------------------------------------------------------------------ one-call helpers for jobs


def verify_run(
    instances: Iterable[Instance],
    answers: Iterable[Answer | Mapping[str, Any]],
    *,
    name: str = "answers",
    pool: Sequence[VerifyReport] | None = None,
    strict_rules: bool = True,
    allow_contraposition: bool = False,
) -> dict[str, Any]:
    """Verify answers and compute the metrics in one call; a JSON-ready dict (for ``report.json``).

    Args:
        instances: the instances scored (missing answers count as no paths).
        answers: :class:`Answer` objects or answer-file objects (``{id, solutions, tokens?}``,
            extra keys ignored); bad objects become ``errors``, the first of a repeated id wins.
        name: the answer set's name.
        pool: other reports to measure Originality against.
        strict_rules, allow_contraposition: as in :func:`verify_answers`.

    Returns:
        ``{"name", "errors", "unknown_ids", "metrics": {tier: Metrics.to_json(), ..., "overall": ...}}``;
        :func:`format_report` prints it.
    """
    report = verify_answers(
        instances,
        answer_set(name, ((f"{name}[{k}]", item) for k, item in enumerate(answers)), []),
        strict_rules=strict_rules,
        allow_contraposition=allow_contraposition,
    )
    table = metrics(report, pool=pool)
    return {
        "name": report.name,
        "errors": list(report.errors),
        "unknown_ids": list(report.unknown_ids),
        "metrics": {tier: m.to_json() for tier, m in table.items()},
    }


def format_report(report: Mapping[str, Any], *, paper: Mapping[str, Any] | None = None) -> str:
    """The table of a :func:`verify_run` result (optionally with the paper's numbers under it)."""
    table = {tier: Metrics(**m) for tier, m in report["metrics"].items()}
    return _render(report.get("name", "answers"), report.get("errors", ()), report.get("unknown_ids", ()), table, paper)
