"""The run page's pictures and tables: the report's and the profile's plots as inline SVG drawn by
matplotlib (text kept as text, so the page's words are searchable and the browser tests read
them), the per-stage and per-dataset tables."""

from __future__ import annotations

import io
from typing import Any

from symbolkg.actors.engines.metered import prefix_cache_summary, read_request_log
from symbolkg.jobs.inspection.profile import in_flight_timeline
from symbolkg.jobs.servers.view.queries import RunSource


def _svg(fig: Any) -> str:
    """A matplotlib figure as an inline ``<svg>`` element (text as text, no XML prologue)."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.find("<svg") :]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # keep labels as <text>: selectable, searchable, testable
    plt.rcParams["font.size"] = 9
    return plt


def run_charts(source: RunSource) -> dict[str, dict[str, Any]]:
    """The run page's plots: name -> ``{"title", "svg"}`` (or ``"note"`` when the run has no such data).

    Accuracy and execution by dataset, errors by kind, per-stage latency, LLM occupancy over time,
    prefix-cache hit rate by request purpose, problems finished over time. Cached by the caller.
    """
    plt = _pyplot()
    charts = {
        "accuracy": _accuracy_chart(plt, source),
        "errors": _errors_chart(plt, source),
        "stages": _stages_chart(plt, source),
    }
    charts.update(_llm_charts(plt, source))
    done = source.aggregate("SELECT finished_at FROM rows ORDER BY finished_at")
    if len(done) > 1:
        t0 = done[0][0]
        fig, ax = plt.subplots(figsize=(6.4, 2.4))
        ax.step([d[0] - t0 for d in done], range(1, len(done) + 1), where="post", color="#334155")
        ax.set_xlabel("seconds since the first row")
        ax.set_ylabel("problems finished")
        charts["throughput"] = {"title": "Problems finished over time", "svg": _svg(fig)}
    return charts


def _accuracy_chart(plt: Any, source: RunSource) -> dict[str, Any]:
    by_ds = source.aggregate(
        "SELECT dataset, count(*), avg(executed::INT), avg(correct::INT) FROM rows GROUP BY 1 ORDER BY 1"
    )
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(by_ds) + 1.2))
    names = [r[0] for r in by_ds]
    ys = range(len(names))
    ax.barh([y + 0.2 for y in ys], [100 * r[2] for r in by_ds], height=0.4, label="execution rate", color="#93c5fd")
    ax.barh([y - 0.2 for y in ys], [100 * r[3] for r in by_ds], height=0.4, label="accuracy", color="#16a34a")
    for y, r in zip(ys, by_ds, strict=True):
        ax.text(100 * r[3] + 1, y - 0.2, f"{100 * r[3]:.1f}%", va="center", fontsize=8)
        ax.text(100 * r[2] + 1, y + 0.2, f"{100 * r[2]:.1f}% (n={r[1]})", va="center", fontsize=8)
    ax.set_yticks(list(ys), names)
    ax.set_xlim(0, 118)
    ax.set_xlabel("% of problems")
    ax.invert_yaxis()
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
    return {"title": "Accuracy and execution rate by dataset", "svg": _svg(fig)}


def _errors_chart(plt: Any, source: RunSource) -> dict[str, Any]:
    errors = source.aggregate("SELECT err, count(*) FROM rows WHERE err IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1")
    if not errors:
        return {"title": "Errors by kind", "note": "no errors"}
    fig, ax = plt.subplots(figsize=(6.4, 0.35 * len(errors) + 1.0))
    ax.barh([e[0] for e in errors], [e[1] for e in errors], color="#f87171")
    for i, e in enumerate(errors):
        ax.text(e[1], i, f" {e[1]}", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("problems")
    return {"title": "Errors by kind (unexecuted, or executed without an answer)", "svg": _svg(fig)}


def _stages_chart(plt: Any, source: RunSource) -> dict[str, Any]:
    stages = stage_table(source)
    if not stages:
        return {"title": "Per-stage latency", "note": "no stage timings (programs given, not written)"}
    fig, ax = plt.subplots(figsize=(6.4, 0.4 * len(stages) + 1.2))
    ys = range(len(stages))
    ax.barh([y - 0.2 for y in ys], [s["mean"] for s in stages], height=0.4, label="mean", color="#a78bfa")
    ax.barh([y + 0.2 for y in ys], [s["p95"] for s in stages], height=0.4, label="p95", color="#fbbf24")
    for y, s in zip(ys, stages, strict=True):
        ax.text(s["mean"], y - 0.2, f" {s['mean']:.3f}s", va="center", fontsize=8)
        ax.text(s["p95"], y + 0.2, f" {s['p95']:.3f}s", va="center", fontsize=8)
    ax.set_yticks(list(ys), [s["stage"] for s in stages])
    ax.invert_yaxis()
    ax.set_xlabel("seconds per problem (waits for the engine and the solver pool included)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8, frameon=False)
    return {"title": "Per-stage latency", "svg": _svg(fig)}


def _llm_charts(plt: Any, source: RunSource) -> dict[str, dict[str, Any]]:
    """LLM occupancy (requests in flight, tokens/s) and prefix-cache hit rate, from the request log."""
    try:
        records = read_request_log(source.files.path)
    except Exception as exc:  # noqa: BLE001 - a damaged log costs its two charts, not the page
        return {"llm": {"title": "LLM occupancy", "note": f"request log unreadable: {exc}"}}
    if not records:
        return {
            "llm": {"title": "LLM occupancy", "note": "no LLM request log (programs given, not written)"},
            "prefix": {"title": "Prefix-cache hit rate", "note": "no LLM request log"},
        }
    charts = {}
    start = min(r.submitted for r in records)
    end = max(r.finished for r in records)
    times, occupancy, tokens, busy = in_flight_timeline(records, start, max((end - start) / 60, 1e-3))
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(6.4, 3.6), sharex=True)
    a1.step(times, occupancy, where="post", color="#2563eb")
    a1.set_ylabel("requests in flight")
    a2.step(times, tokens, where="post", color="#ea580c")
    a2.set_ylabel("completion tok/s")
    a2.set_xlabel("seconds since the first request")
    charts["llm"] = {"title": f"LLM occupancy: busy {busy:.0%} of the time, {len(records)} requests", "svg": _svg(fig)}
    rates = [
        (p, prefix_cache_summary([r for r in records if r.purpose == p])) for p in sorted({r.purpose for r in records})
    ]
    known = [(p, c) for p, c in rates if c["prefix_cache_hit_rate"] is not None]
    if not known:
        charts["prefix"] = {
            "title": "Prefix-cache hit rate",
            "note": "unknown: the engine does not report cached prompt tokens",
        }
        return charts
    total = prefix_cache_summary(records)
    fig, ax = plt.subplots(figsize=(6.4, 0.35 * len(known) + 1.0))
    ax.barh([p for p, _ in known], [100 * c["prefix_cache_hit_rate"] for _, c in known], color="#0d9488")
    for i, (_, c) in enumerate(known):
        ax.text(
            100 * c["prefix_cache_hit_rate"], i, f" {100 * c['prefix_cache_hit_rate']:.1f}%", va="center", fontsize=8
        )
    ax.set_xlim(0, 110)
    ax.invert_yaxis()
    ax.set_xlabel("% of prompt tokens served from the engine's prefix cache")
    charts["prefix"] = {
        "title": f"Prefix-cache hit rate: {100 * total['prefix_cache_hit_rate']:.1f}% overall",
        "svg": _svg(fig),
    }
    return charts


def stage_table(source: RunSource) -> list[dict[str, Any]]:
    """Per stage: mean, p50, p95 seconds per problem and its share of the summed time."""
    # stages in the order they first appear, as `symbolkg report` lists them
    rows = source.aggregate(
        "SELECT j.key, avg(j.value::DOUBLE), quantile_cont(j.value::DOUBLE, 0.5), "
        "quantile_cont(j.value::DOUBLE, 0.95), sum(j.value::DOUBLE), min(rownum * 1000000 + j.id) "
        "FROM rows, json_each(rows.stage_seconds) j GROUP BY 1 ORDER BY 6"
    )
    grand = sum(r[4] for r in rows) or 1.0
    return [{"stage": r[0], "mean": r[1], "p50": r[2], "p95": r[3], "share": r[4] / grand} for r in rows]


def dataset_table(source: RunSource) -> list[dict[str, Any]]:
    """The report's per-dataset lines: problems, executed, rates, latency percentiles."""
    rows = source.aggregate(
        "SELECT dataset, count(*), count(*) FILTER (WHERE executed), avg(executed::INT), avg(correct::INT), "
        "count(*) FILTER (WHERE correct), quantile_cont(solve_seconds, 0.5), quantile_cont(solve_seconds, 0.95), "
        "max(solve_seconds), sum(tokens) FROM rows GROUP BY 1 ORDER BY 1"
    )
    return [
        {
            "dataset": r[0],
            "problems": r[1],
            "executed": r[2],
            "execution_rate": r[3],
            "accuracy": r[4],
            "accuracy_on_executed": (r[5] / r[2]) if r[2] else 0.0,
            "p50": r[6],
            "p95": r[7],
            "max": r[8],
            "tokens": r[9],
        }
        for r in rows
    ]
