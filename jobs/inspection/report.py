"""`symbolkg report`: accuracy, execution rate, errors by kind and timings of a run.

``symbolkg report --summary RUN...`` (:func:`summary`) prints the counts of several runs as one short
table with no timings and no paths: what ``make demo`` ends with, and the sample the README shows.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from symbolkg.actors.engines.metered import prefix_cache_summary, read_request_log
from symbolkg.jobs.inspection.certificates import read_verdict_counts
from symbolkg.jobs.pipeline.store import read_run, run_members


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def latency_stats(values: list[float]) -> dict[str, float]:
    return {
        "count": len(values),
        "p50_s": round(_percentile(values, 0.5), 4),
        "p95_s": round(_percentile(values, 0.95), 4),
        "max_s": round(max(values), 4) if values else 0.0,
        "total_s": round(sum(values), 3),
    }


def _metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    executed = sum(r["executed"] for r in rows)
    correct = sum(r["correct"] for r in rows)
    errors = Counter(r["error_kind"] or r["status"] for r in rows if not r["executed"] or r["error_kind"])
    return {
        "problems": n,
        "executed": executed,
        "execution_rate": round(executed / n, 4) if n else 0.0,
        "correct": correct,
        "accuracy": round(correct / n, 4) if n else 0.0,
        "accuracy_on_executed": round(correct / executed, 4) if executed else 0.0,
        "errors_by_kind": dict(sorted(errors.items())),
        "status_counts": dict(sorted(Counter(r["status"] for r in rows).items())),
    }


def _stages(rows: list[dict[str, Any]]) -> list[dict[str, float]]:
    return [json.loads(r["stage_seconds"] or "{}") for r in rows]


def stage_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-stage time of a run (SymbolLKG's Table 7): ``stage_seconds`` and ``stage_latency``.

    ``stage_seconds`` is stage -> seconds summed over problems (problem-seconds: problems run
    concurrently, so the sum exceeds the wall time); ``stage_latency`` is stage -> the mean,
    p50 and p95 per problem and the stage's share of the summed time. Both empty for runs
    without stage timings (recorded programs). Stages keep pipeline order.
    """
    per_row = _stages(rows)
    order: list[str] = []
    for d in per_row:
        for k in d:
            if k not in order:
                order.append(k)
    totals = {k: sum(d.get(k, 0.0) for d in per_row) for k in order}
    grand = sum(totals.values())
    latency = {}
    for k in order:
        values = [d.get(k, 0.0) for d in per_row]
        latency[k] = {
            "mean_s": round(totals[k] / len(values), 4),
            "p50_s": round(_percentile(values, 0.5), 4),
            "p95_s": round(_percentile(values, 0.95), 4),
            "share": round(totals[k] / grand, 4) if grand else 0.0,
        }
    return {"stage_seconds": {k: round(v, 3) for k, v in totals.items()}, "stage_latency": latency}


def plot_stages(summary: dict[str, Any], rows: list[dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """A bar per dataset (and one for all): mean seconds per problem, stacked by stage."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = list(summary["stage_seconds"])
    groups = sorted({r["dataset"] for r in rows})
    labels = [*groups, "all"] if len(groups) > 1 else groups
    means = {}
    for label in labels:
        sub = _stages([r for r in rows if label == "all" or r["dataset"] == label])
        means[label] = [sum(d.get(k, 0.0) for d in sub) / len(sub) for k in stages]
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(labels) + 1.6))
    left = [0.0] * len(labels)
    for i, stage in enumerate(stages):
        widths = [means[label][i] for label in labels]
        ax.barh(labels, widths, left=left, label=stage)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_xlabel("mean seconds per problem (waits for the engine and the solver pool included)")
    ax.set_title(f"per-stage latency, {summary['problems']} problems")
    ax.legend(ncol=min(len(stages), 6), fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.08))
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def summarize(table: pa.Table, meta: dict[str, Any]) -> dict[str, Any]:
    """The report as one JSON-serialisable object (``--json``)."""
    rows = table.to_pylist()
    out = _metrics(rows)
    wall = float(meta.get("wall_seconds") or 0.0)
    out["wall_seconds"] = round(wall, 3)
    out["problems_per_second"] = round(len(rows) / wall, 3) if wall > 0 else None
    out["finished"] = bool(meta.get("finished", True))
    out["sessions"] = len(meta.get("sessions", {}))
    out["latency_by_backend"] = {
        b: latency_stats([r["solve_seconds"] for r in rows if r["backend"] == b])
        for b in sorted({r["backend"] for r in rows})
    }
    out["latency"] = latency_stats([r["solve_seconds"] for r in rows])
    by_ds: dict[str, Any] = {}
    for ds in sorted({r["dataset"] for r in rows}):
        sub = [r for r in rows if r["dataset"] == ds]
        by_ds[ds] = {**_metrics(sub), "latency": latency_stats([r["solve_seconds"] for r in sub])}
    out["by_dataset"] = by_ds
    out["retried"] = sum(1 for r in rows if r["attempts"] > 1)
    # LLM accounting (zero for runs on given programs)
    out["prompt_tokens"] = sum(r["prompt_tokens"] for r in rows)
    out["completion_tokens"] = sum(r["completion_tokens"] for r in rows)
    out["llm_calls"] = sum(r["llm_calls"] for r in rows)
    out["cached_calls"] = sum(r["cached_calls"] for r in rows)
    out["tokens_per_second"] = round(out["completion_tokens"] / wall, 2) if wall > 0 else None
    out["rounds_histogram"] = {str(k): v for k, v in sorted(Counter(r["rounds"] for r in rows).items())}
    out["success_round_histogram"] = {
        str(k): v for k, v in sorted(Counter(r["success_round"] for r in rows if r["success_round"]).items())
    }
    out["routes"] = dict(sorted(Counter(r["route"] for r in rows if r["route"]).items()))
    for ds, sub in by_ds.items():
        in_ds = [r for r in rows if r["dataset"] == ds]
        sub["routes"] = dict(sorted(Counter(r["route"] for r in in_ds if r["route"]).items()))
        sub["stage_seconds"] = stage_summary(in_ds)["stage_seconds"]
    out.update(stage_summary(rows))
    out["methods"] = sorted({r["method"] for r in rows})
    out["models"] = sorted({r["model"] for r in rows if r["model"]})
    fb = [r for r in rows if r["fallback_method"]]
    if fb:
        out["fallback"] = {
            "method": sorted({r["fallback_method"] for r in fb}),
            "answered": sum(r["fallback_predicted"] is not None for r in fb),
            "correct": sum(bool(r["fallback_correct"]) for r in fb),
            "accuracy_with_fallback": round(
                (out["correct"] + sum(bool(r["fallback_correct"]) for r in fb)) / len(rows), 4
            ),
        }
    return out


def format_table(s: dict[str, Any]) -> str:
    lines = []
    head = (
        f"{'dataset':28s} {'problems':>8s} {'executed':>9s} {'exec rate':>9s} {'accuracy':>9s} {'acc|exec':>9s} "
        f"{'p50 s':>7s} {'p95 s':>7s} {'max s':>7s}"
    )
    lines.append(head)
    lines.append("-" * len(head))

    def line(name: str, m: dict[str, Any], lat: dict[str, float]) -> str:
        return (
            f"{name:28s} {m['problems']:8d} {m['executed']:9d} {m['execution_rate']:9.1%} {m['accuracy']:9.1%} "
            f"{m['accuracy_on_executed']:9.1%} {lat['p50_s']:7.3f} {lat['p95_s']:7.3f} {lat['max_s']:7.2f}"
        )

    for ds, m in s["by_dataset"].items():
        lines.append(line(ds, m, m["latency"]))
    if len(s["by_dataset"]) > 1:
        lines.append(line("ALL", s, s["latency"]))
    lines.append("")
    lines.append(
        f"wall time: {s['wall_seconds']:.1f} s over {s['sessions']} session(s)"
        + (f", {s['problems_per_second']:.1f} problems/s" if s["problems_per_second"] else "")
        + ("" if s["finished"] else "  (UNFINISHED: rerun the same command to resume)")
    )
    if s["errors_by_kind"]:
        lines.append("errors by kind (unexecuted, or executed without an answer):")
        for k, v in sorted(s["errors_by_kind"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  {k:20s} {v:6d}")
    lines.append("solver time by backend:")
    for b, lat in s["latency_by_backend"].items():
        lines.append(
            f"  {b or '-':20s} n={lat['count']:<6d} p50={lat['p50_s']:.3f}s p95={lat['p95_s']:.3f}s "
            f"max={lat['max_s']:.2f}s"
        )
    if s["retried"]:
        lines.append(f"retried after a worker crash: {s['retried']}")
    if s["llm_calls"]:
        lines.append(
            f"LLM: {', '.join(s['models'])}: {s['llm_calls']} calls ({s['cached_calls']} from cache), "
            f"{s['prompt_tokens']} prompt + {s['completion_tokens']} completion tokens"
            + (f", {s['tokens_per_second']:.1f} tokens/s" if s["tokens_per_second"] else "")
        )
        lines.append(
            f"rounds per problem: {s['rounds_histogram']}; round that executed: {s['success_round_histogram']}"
        )
    if "prefix_cache" in s:
        c = s["prefix_cache"]
        rate = (
            "unknown (the engine does not report it)"
            if c["prefix_cache_hit_rate"] is None
            else f"{c['prefix_cache_hit_rate']:.1%} ({c['cached_prompt_tokens']} of {c['prompt_tokens']} prompt tokens)"
        )
        lines.append(f"prefix-cache hit rate: {rate}")
    if s.get("routes"):
        lines.append("routes: " + ", ".join(f"{k} {v}" for k, v in s["routes"].items()))
    if s.get("stage_latency"):
        lines.append("per-stage latency per problem (problem-seconds; engine and pool waits included):")
        lines.append(f"  {'stage':12s} {'mean s':>8s} {'p50 s':>8s} {'p95 s':>8s} {'share':>7s}")
        for k, lat in s["stage_latency"].items():
            lines.append(f"  {k:12s} {lat['mean_s']:8.3f} {lat['p50_s']:8.3f} {lat['p95_s']:8.3f} {lat['share']:7.1%}")
    if s.get("certificates"):
        c = s["certificates"]
        lines.append(
            f"certificates (symbolkg verify): verified {c['verified']}, failed {c['failed']}, "
            f"unverifiable {c['unverifiable']}"
        )
    elif s.get("certified"):
        lines.append(f"certificates: {s['certified']} rows carry one (run `symbolkg verify` to re-check them)")
    if "fallback" in s:
        f = s["fallback"]
        lines.append(
            f"fallback {'/'.join(f['method'])}: answered {f['answered']}, correct {f['correct']} "
            f"(accuracy with fallback {f['accuracy_with_fallback']:.1%}, reported separately)"
        )
    return "\n".join(lines)


def default_plot_path(run: str | os.PathLike[str]) -> Path:
    """Where ``symbolkg report`` writes the stage plot by default: ``RUN_stages.png`` beside the run."""
    run = Path(run)
    return run.with_name(f"{run.stem}_stages.png")


def report(path: str | os.PathLike[str], *, as_json: bool = False, plot: str | os.PathLike[str] | None = None) -> str:
    """The report of a run (the union of its shards, if shards wrote it); with ``plot``, also the stage plot
    there (runs with stage timings only)."""
    table, meta = read_run(path)
    s = summarize(table, meta)
    s["certified"] = sum(r is not None for r in table.column("certificate").to_pylist())
    records = [r for member in run_members(path) for r in read_request_log(member)]  # every shard's log
    if "shards" in meta:
        s["shards"] = meta["shards"]
    if records:
        cache = prefix_cache_summary(records)
        s["prefix_cache_hit_rate"] = cache["prefix_cache_hit_rate"]
        s["prefix_cache"] = cache
    verdicts = read_verdict_counts(path)
    if verdicts is not None:
        s["certificates"] = verdicts
    if plot is not None and s["stage_seconds"]:
        plot_stages(s, table.to_pylist(), plot)
        s["stage_plot"] = str(plot)
    if as_json:
        return json.dumps(s, indent=2)
    return format_table(s) + (f"\nstage plot: {s['stage_plot']}" if "stage_plot" in s else "")


# --------------------------------------------------------------------------- the summary of several runs


@dataclass(frozen=True)
class SummaryLine:
    """One dataset of one run, as ``symbolkg report --summary`` prints it.

    Only counts, never times or paths: the summary is what ``make demo`` ends with and what the
    README shows (``tests/test_readme.py`` rebuilds it from a replayed demo run), so it must come
    out the same on any machine, at any load, from any checkout folder.

    Attributes:
        ran: what produced the answers: ``"METHOD: MODEL"`` for an LLM method, ``"METHOD: FILE"``
            (the program file's name) for recorded programs, else the method alone.
        dataset: the dataset name (``logiclm/prontoqa``).
        problems: rows of that dataset in the run.
        executed: rows whose program ran to an outcome.
        correct: rows whose answer equals the gold one (unanswered rows count as wrong).
        certified: answered rows carrying a certificate (what ``symbolkg verify`` re-checks).
    """

    ran: str
    dataset: str
    problems: int
    executed: int
    correct: int
    certified: int

    @property
    def accuracy(self) -> float:
        """Correct over all problems: an unexecuted or unanswered problem is a wrong one (no guessing)."""
        return self.correct / self.problems if self.problems else 0.0


def _what_ran(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The run's method with its model, or with its program file's name when no model answered.

    The program file comes from the run's stored config (``--programs``), by name only: the folder
    it was read from differs between machines, and the summary must not.
    """
    config = meta.get("config") or {}
    method = "/".join(sorted({r["method"] for r in rows})) or str(config.get("method") or "?")
    models = sorted({r["model"] for r in rows if r["model"]})
    if models:
        return f"{method}: {', '.join(models)}"
    programs = config.get("programs") or meta.get("source")
    return f"{method}: {Path(programs).name}" if programs else method


def summary_lines(path: str | os.PathLike[str]) -> list[SummaryLine]:
    """One :class:`SummaryLine` per dataset of the run at ``path`` (the union of its shards), by dataset name.

    Raises:
        FileNotFoundError: the run has no results.
    """
    table, meta = read_run(path)
    rows = table.select(["dataset", "method", "model", "executed", "correct", "predicted", "certificate"]).to_pylist()
    ran = _what_ran(rows, meta)
    lines = []
    for ds in sorted({r["dataset"] for r in rows}):
        sub = [r for r in rows if r["dataset"] == ds]
        lines.append(
            SummaryLine(
                ran=ran,
                dataset=ds,
                problems=len(sub),
                executed=sum(bool(r["executed"]) for r in sub),
                correct=sum(bool(r["correct"]) for r in sub),
                certified=sum(r["predicted"] is not None and r["certificate"] is not None for r in sub),
            )
        )
    return lines


#: The summary's last two lines: what its columns mean, for a reader who sees it once at the end of ``make demo``.
SUMMARY_LEGEND = (
    "accuracy: correct / problems (a problem without a program or an answer counts as wrong)\n"
    "certified: answers carrying a certificate, which `symbolkg verify` re-checks"
)


def format_summary(lines: list[SummaryLine]) -> str:
    """The summary table: a header, one line per :class:`SummaryLine` in the order given, the legend.

    The label and dataset columns are as wide as their longest entry, so the text depends on the lines alone.
    """
    width = max([len("what ran"), *(len(x.ran) for x in lines)])
    ds_width = max([len("dataset"), *(len(x.dataset) for x in lines)])
    head = (
        f"{'what ran':{width}s}  {'dataset':{ds_width}s} {'problems':>8s} {'executed':>8s} {'correct':>7s} "
        f"{'accuracy':>8s} {'certified':>9s}"
    )
    out = [head, "-" * len(head)]
    for x in lines:
        out.append(
            f"{x.ran:{width}s}  {x.dataset:{ds_width}s} {x.problems:8d} {x.executed:8d} {x.correct:7d} "
            f"{x.accuracy:8.1%} {x.certified:9d}"
        )
    return "\n".join([*out, "", SUMMARY_LEGEND])


def summary(paths: list[str | os.PathLike[str]]) -> str:
    """``symbolkg report --summary RUN...``: the counts of several runs, one table, in the order given.

    What ``make demo`` prints at its end (and the README shows): per run and dataset what ran, the
    problems, how many programs executed, how many answers are correct and how many carry a
    certificate. Timings and paths are left out on purpose (see :class:`SummaryLine`); ``symbolkg
    report RUN`` has them. Adding a run to the demo is one more path.

    Raises:
        FileNotFoundError: a path has no results.
    """
    return format_summary([line for path in paths for line in summary_lines(path)])
