"""``symbolkg logicgraph verify``: check answer proofs step by step and compute the paper's metrics.

An answers file is JSON Lines, one object per instance::

    {"id": "Small/test_1", "solutions": [<proof>, ...], "tokens": 1234}

where each proof is in the dataset's own format (``steps`` of ``{step_number, rule_applied,
premises_used: [{id, prover9}], conclusion}``), so the reference proofs are valid answers
(``--write-reference FILE`` writes them, ``--reference`` verifies them in memory).

Every path is checked by :func:`symbolkg.solvers.logicgraph.proofs.check_path` (local validity,
rule shape, grounding; error labels), then the metrics of LogicGraph's paper (Section 5.2,
Table 4) are computed per tier and overall; docs/LOGICGRAPH.md defines each one.

Library use (the LLM ``solve`` job calls these on its own answers)::

    from symbolkg.jobs.logicgraph.verify import Answer, verify_answers, metrics
    report = verify_answers(instances, [Answer("Small/test_1", tuple(proofs), tokens=812)], name="my-model")
    table = metrics(report)                 # {"small": Metrics, ..., "overall": Metrics}
    table = metrics(report, pool=[report, other_report])   # Originality across several answer sets
    print(format_table(report, table))

    report_json = verify_run(instances, answer_dicts, name="my-model")  # both in one call, JSON-ready
    print(format_report(report_json, paper=PAPER_NUMBERS))
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from symbolkg.solvers.logicgraph.instances import Instance, InstanceError, load_instances
from symbolkg.solvers.logicgraph.proofs import LABELS, MALFORMED, PathCheck, check_path

__all__ = [
    "Answer",
    "AnswerSet",
    "InstanceResult",
    "Metrics",
    "VerifyReport",
    "add_arguments",
    "format_report",
    "format_table",
    "metrics",
    "parse_answers",
    "read_answers",
    "reference_answers",
    "run",
    "verify_answers",
    "verify_instance",
    "verify_run",
    "write_answers",
]


# ------------------------------------------------------------------ answers


@dataclass(frozen=True)
class Answer:
    """One instance's answer: the proofs as given (untrusted JSON) and, optionally, tokens spent.

    Attributes:
        id: the instance id (``"Small/test_1"``).
        solutions: the proofs, each one element of the answer's ``solutions`` list, unparsed.
        tokens: completion tokens the model spent on this instance, if known.
    """

    id: str
    solutions: tuple[Any, ...] = ()
    tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "solutions": list(self.solutions)}
        if self.tokens is not None:
            out["tokens"] = self.tokens
        return out


@dataclass(frozen=True)
class AnswerSet:
    """The answers of one model / file.

    Attributes:
        name: shown in reports (the file name, or ``"reference"``).
        answers: instance id -> answer (the first line of an id wins).
        errors: one message per line that could not be used as given (not JSON, no id, a
            duplicate id, ``solutions`` not a list, bad ``tokens``); counted, never raised.
    """

    name: str
    answers: Mapping[str, Answer]
    errors: tuple[str, ...] = ()


def _answer_from_object(obj: Any, where: str) -> tuple[Answer | None, list[str]]:
    if not isinstance(obj, Mapping):
        return None, [f"{where}: not a JSON object"]
    rid = obj.get("id")
    if not isinstance(rid, str) or not rid:
        return None, [f"{where}: no string 'id'"]
    errors: list[str] = []
    raw = obj.get("solutions")
    if isinstance(raw, list):
        solutions = tuple(raw)
    elif isinstance(raw, Mapping) and "steps" in raw:  # a single proof instead of a list of them
        solutions = (raw,)
    else:
        solutions = ()
        errors.append(
            f"{where}: {rid}: 'solutions' is {'missing' if raw is None else type(raw).__name__}, not a list (no paths)"
        )
    tokens = obj.get("tokens")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, (int, float)) or tokens < 0):
        errors.append(f"{where}: {rid}: 'tokens' is not a non-negative number (ignored)")
        tokens = None
    return Answer(rid, solutions, None if tokens is None else int(tokens)), errors


def parse_answers(lines: Iterable[str], *, name: str = "answers") -> AnswerSet:
    """Parse answer JSON lines defensively: bad lines become errors of the set, never exceptions.

    Args:
        lines: the file's lines.
        name: the set's name in reports.
    """
    errors: list[str] = []

    def objects() -> Iterator[tuple[str, Any]]:
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{name}:{lineno}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: not JSON ({exc.msg})")

    return _answer_set(name, objects(), errors)


def _answer_set(name: str, items: Iterable[tuple[str, Any]], errors: list[str]) -> AnswerSet:
    """Answers from ``(where, Answer or answer object)`` pairs; bad objects and repeated ids become
    errors (the first answer of an id is kept)."""
    answers: dict[str, Answer] = {}
    for where, item in items:
        answer, problems = (item, []) if isinstance(item, Answer) else _answer_from_object(item, where)
        errors.extend(problems)
        if answer is None:
            continue
        if answer.id in answers:
            errors.append(f"{where}: duplicate id {answer.id} (the first is kept)")
            continue
        answers[answer.id] = answer
    return AnswerSet(name, answers, tuple(errors))


def read_answers(path: str | Path) -> AnswerSet:
    """:func:`parse_answers` of a file, named by its path.

    Raises:
        FileNotFoundError: no such file.
    """
    with open(path, encoding="utf-8") as fh:
        return parse_answers(fh, name=str(path))


def reference_answers(instances: Iterable[Instance]) -> AnswerSet:
    """The dataset's reference proofs as an answer set (exactly as the file writes them)."""
    answers: dict[str, Answer] = {}
    for inst in instances:
        solutions = inst.record.get("solutions", {})
        raw = solutions.get("solutions", []) if isinstance(solutions, Mapping) else []
        if not raw:  # an instance built in code: print the parsed proofs
            raw = [p.to_json() for p in inst.proofs]
        answers[inst.id] = Answer(inst.id, tuple(raw))
    return AnswerSet("reference", answers)


def write_answers(answers: AnswerSet, path: str | Path) -> int:
    """Write an answer set as JSON lines; returns the number of lines."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(answer.to_json(), ensure_ascii=False) + "\n" for answer in answers.answers.values())
    return len(answers.answers)


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
        _answer_set(name, ((f"{name}[{k}]", item) for k, item in enumerate(answers)), []),
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dataset",
        action="append",
        default=None,
        metavar="NAME",
        help="logicgraph/<tier>, repeatable (default: every logicgraph tier in the data folder)",
    )
    parser.add_argument(
        "--data-dir", default=None, help="the shared data folder (default: $SYMBOLKG_DATA or ../shared/data)"
    )
    parser.add_argument(
        "--answers",
        action="append",
        default=[],
        metavar="FILE",
        help="answers JSON lines {id, solutions, tokens?}; repeatable (Originality is measured across all)",
    )
    parser.add_argument(
        "--reference", action="store_true", help="also verify the dataset's reference proofs as an answer set"
    )
    parser.add_argument(
        "--write-reference", metavar="FILE", default=None, help="write the reference proofs as an answers file"
    )
    parser.add_argument("--limit", type=int, default=None, help="first N instances of each tier")
    parser.add_argument(
        "--lenient-rules", action="store_true", help="count paths whose only errors are Rule Misapplications as valid"
    )
    parser.add_argument(
        "--allow-contraposition",
        action="store_true",
        help="accept contraposition (CP: P->Q |- -Q->-P) as an eighth rule",
    )
    parser.add_argument(
        "--details", metavar="FILE", default=None, help="write per-instance, per-path checks as JSON lines"
    )
    parser.add_argument("--json", action="store_true", help="print the metrics as JSON")


def _load(args: argparse.Namespace) -> list[Instance]:
    # the dataset readers (numpy) only when the command runs: the CLI builds every command's parser, and the
    # multipath method, which the parser imports too, verifies with this module
    from symbolkg.jobs.datasets.logicgraph import logicgraph_tiers
    from symbolkg.jobs.datasets.registry import dataset_path  # as above

    # the paper's tier order (Small/Medium/Large) first, any generated tier after
    order = {"logicgraph/small": 0, "logicgraph/medium": 1, "logicgraph/large": 2}
    names = args.dataset or sorted(logicgraph_tiers(args.data_dir), key=lambda n: (order.get(n, 3), n))
    if not names:
        raise FileNotFoundError("no logicgraph/<tier>.jsonl in the data folder")
    instances: list[Instance] = []
    for name in names:
        if not name.startswith("logicgraph/"):
            raise ValueError(f"--dataset {name!r}: expected logicgraph/<tier>")
        path = dataset_path(name, args.data_dir)
        if not path.is_file():
            raise FileNotFoundError(f"{name}: no file {path}")
        instances.extend(load_instances(path, limit=args.limit))
    return instances


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        print(f"symbolkg logicgraph verify: --limit must be >= 1, got {args.limit}", file=sys.stderr)
        return 2
    try:
        instances = _load(args)
    except (FileNotFoundError, ValueError, InstanceError, KeyError) as exc:
        print(f"symbolkg logicgraph verify: {exc}", file=sys.stderr)
        return 2
    if args.write_reference:
        n = write_answers(reference_answers(instances), args.write_reference)
        print(f"wrote {n} reference answers to {args.write_reference}", file=sys.stderr)
    sets: list[AnswerSet] = []
    if args.reference:
        sets.append(reference_answers(instances))
    for path in args.answers:
        try:
            sets.append(read_answers(path))
        except OSError as exc:
            print(f"symbolkg logicgraph verify: {path}: {exc}", file=sys.stderr)
            return 2
    if not sets:
        if args.write_reference:
            return 0
        print("symbolkg logicgraph verify: nothing to verify (give --answers FILE or --reference)", file=sys.stderr)
        return 2

    started = time.perf_counter()
    reports = [
        verify_answers(
            instances, s, strict_rules=not args.lenient_rules, allow_contraposition=args.allow_contraposition
        )
        for s in sets
    ]
    tables = [metrics(r, pool=reports) for r in reports]
    elapsed = time.perf_counter() - started

    if args.details:
        with open(args.details, "w", encoding="utf-8") as fh:
            for report in reports:
                fh.writelines(
                    json.dumps({"answers": report.name, **r.to_json()}, ensure_ascii=False) + "\n"
                    for r in report.instances
                )
    if args.json:
        print(
            json.dumps(
                {
                    "seconds": round(elapsed, 3),
                    "answer_sets": [
                        {
                            "name": report.name,
                            "errors": list(report.errors),
                            "unknown_ids": list(report.unknown_ids),
                            "metrics": {tier: m.to_json() for tier, m in table.items()},
                        }
                        for report, table in zip(reports, tables, strict=True)
                    ],
                },
                indent=2,
            )
        )
    else:
        for report, table in zip(reports, tables, strict=True):
            print(format_table(report, table))
            print()
        print(f"verified {sum(len(r.instances) for r in reports)} instance answers in {elapsed:.1f} s")
    return 0
