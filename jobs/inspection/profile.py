"""`symbolkg profile`: where a run's time went — stages, waits, the LLM engine, throughput over time.

Reads a results Parquet (per problem: end-to-end latency, per-stage seconds, solver seconds of
every attempt, tokens) and, when the job wrote them, its LLM request log
(:mod:`symbolkg.actors.engines.metered`: when each request was in flight) and its gate log
(:mod:`symbolkg.jobs.pipeline.gates`: when calls queued for and entered the ``llm`` and ``solve`` stages). Reports:

* ``latency`` and ``stages``: distributions (mean, p50, p90, p95, p99, max) of the end-to-end
  latency per problem and of each stage's seconds per problem;
* ``waits``: ``solver_queue`` = the solve stage minus the solvers' own seconds (waiting at the
  ``solve`` gate and for a free worker, and the round trip), ``orchestrator`` = latency minus the stages (what no stage
  accounts for: scheduling, writing rows);
* ``llm`` (with a request log): requests, errors, cache hits, tokens, request latency per
  purpose, ``busy_fraction`` (share of the run with at least one request in flight),
  ``mean_in_flight`` / ``max_in_flight`` (the batch the engine was offered), tokens/s;
* ``gates`` (with a gate log): per stage, the gate's limit, passes, the distribution of the
  seconds a call waited for a slot, how many waited at all, the peak and time-averaged
  queue depth and the peak slots held;
* ``throughput``: problems finished per time bucket and overall problems/s.

Plots (PNG) go to the output folder beside ``profile.json`` and ``profile.md``:
``stages.png`` (a box per stage), ``throughput.png`` (problems finished over time), with a
request log ``llm.png`` (requests in flight and completion tokens/s over time), and with a gate
log ``gates.png`` (calls waiting at and slots held in each stage over time).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from symbolkg.actors.engines.metered import RequestRecord, prefix_cache_summary, read_request_log
from symbolkg.jobs.pipeline.gates import GateEvent, read_gate_log
from symbolkg.jobs.pipeline.store import read_run


def distribution(values: Sequence[float]) -> dict[str, float]:
    """count, mean, p50, p90, p95, p99 and max of ``values`` (zeros when empty)."""
    if not values:
        return {"count": 0, "mean": 0.0, "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    s = sorted(values)

    def q(p: float) -> float:
        k = (len(s) - 1) * p
        lo, hi = int(k), min(int(k) + 1, len(s) - 1)
        return s[lo] + (s[hi] - s[lo]) * (k - lo)

    return {
        "count": len(s),
        "mean": round(sum(s) / len(s), 4),
        "p50": round(q(0.5), 4),
        "p90": round(q(0.9), 4),
        "p95": round(q(0.95), 4),
        "p99": round(q(0.99), 4),
        "max": round(s[-1], 4),
    }


def _solver_seconds(row: dict[str, Any]) -> float:
    attempts = json.loads(row["attempts_log"] or "[]")
    total = sum(float((a.get("outcome") or {}).get("seconds") or 0.0) for a in attempts)
    return total if attempts else float(row["solve_seconds"])


def in_flight_timeline(
    records: Sequence[RequestRecord], start: float, bucket_s: float
) -> tuple[list[float], list[float], list[float], float]:
    """Per time bucket: mean requests in flight and completion tokens/s; plus the busy fraction.

    Returns:
        (bucket start times relative to ``start``, mean in flight per bucket, completion tokens/s
        per bucket, fraction of [first submit, last finish] with at least one request in flight).
    """
    if not records:
        return [], [], [], 0.0
    end = max(r.finished for r in records)
    n = max(1, int((end - start) / bucket_s) + 1)
    occupancy = [0.0] * n
    tokens = [0.0] * n
    for r in records:
        a, b = r.submitted - start, max(r.finished, r.submitted) - start
        i = int(a / bucket_s)
        while i < n and i * bucket_s < b:
            lo, hi = max(a, i * bucket_s), min(b, (i + 1) * bucket_s)
            occupancy[i] += max(0.0, hi - lo) / bucket_s
            i += 1
        tokens[min(n - 1, int(b / bucket_s))] += r.completion_tokens / bucket_s
    # busy time: the union of the request intervals
    busy, cur_a, cur_b = 0.0, None, None
    for r in sorted(records, key=lambda r: r.submitted):
        if cur_b is None or r.submitted > cur_b:
            if cur_b is not None:
                busy += cur_b - cur_a  # type: ignore[operator]
            cur_a, cur_b = r.submitted, r.finished
        else:
            cur_b = max(cur_b, r.finished)
    busy += (cur_b - cur_a) if cur_b is not None else 0.0  # type: ignore[operator]
    span = end - min(r.submitted for r in records)
    return [i * bucket_s for i in range(n)], occupancy, tokens, (busy / span if span > 0 else 1.0)


def gate_timelines(events: Sequence[GateEvent], start: float) -> dict[str, tuple[list[float], list[int], list[int]]]:
    """Per stage: event times relative to ``start``, calls waiting and slots held after each event.

    The gates record every change, so these are exact step functions (hold each value until
    the next time).
    """
    out: dict[str, tuple[list[float], list[int], list[int]]] = {}
    for e in events:
        times, waiting, running = out.setdefault(e.stage, ([], [], []))
        times.append(e.time - start)
        waiting.append(e.waiting)
        running.append(e.running)
    return out


def gate_report(events: Sequence[GateEvent]) -> dict[str, dict[str, Any]]:
    """What each stage's gate did, from its events (:func:`symbolkg.jobs.pipeline.gates.read_gate_log`).

    Returns:
        Per stage: ``limit``, ``passes``, ``cancelled`` (queued calls that gave up), ``wait`` (the
        distribution of seconds a call waited for a slot), ``waited`` (passes that waited at all),
        ``peak_waiting`` and ``mean_waiting`` (time-averaged queue depth), ``peak_running``.
    """
    report: dict[str, dict[str, Any]] = {}
    for stage, (times, waiting, running) in gate_timelines(events, 0.0).items():
        mine = [e for e in events if e.stage == stage]
        waits = [e.wait_s or 0.0 for e in mine if e.event == "enter"]
        span = times[-1] - times[0]
        area = sum(w * (t1 - t0) for w, t0, t1 in zip(waiting, times, times[1:], strict=False))
        report[stage] = {
            "limit": mine[-1].limit,
            "passes": len(waits),
            "cancelled": sum(e.event == "cancel" for e in mine),
            "waited": sum(w > 0 for w in waits),
            "wait": distribution(waits),
            "peak_waiting": max(waiting),
            "mean_waiting": round(area / span, 3) if span > 0 else 0.0,
            "peak_running": max(running),
        }
    return report


def stage_waits(rows: Sequence[dict[str, Any]]) -> tuple[dict[str, list[float]], list[float], list[float]]:
    """Per stage, the seconds of each row that spent any in it; the solver-queue and orchestrator waits.

    Returns:
        (stage -> seconds per row, ``solve`` minus the solvers' own seconds per row that solved, latency
        minus the stages per row with stage seconds); waits below zero count as zero.
    """
    stages: dict[str, list[float]] = {}
    queue, overhead = [], []
    for r in rows:
        seconds = json.loads(r["stage_seconds"] or "{}")
        for k, v in seconds.items():
            stages.setdefault(k, []).append(float(v))
        if "solve" in seconds:
            queue.append(max(0.0, seconds["solve"] - _solver_seconds(r)))
        if seconds:
            overhead.append(max(0.0, r["latency_seconds"] - sum(seconds.values())))
    return stages, queue, overhead


def llm_report(records: Sequence[RequestRecord], occupancy: Sequence[float], busy: float) -> dict[str, Any]:
    """The profile's ``llm`` section from a non-empty request log.

    ``occupancy`` (requests in flight per bucket) and ``busy`` (the busy fraction) are :func:`in_flight_timeline`'s.
    """
    by_purpose: dict[str, list[float]] = {}
    for r in records:
        by_purpose.setdefault(r.purpose, []).append(r.finished - r.submitted)
    llm_span = max(r.finished for r in records) - min(r.submitted for r in records)
    completion = sum(r.completion_tokens for r in records)
    return {
        "requests": len(records),
        "errors": sum(r.error is not None for r in records),
        "cached": sum(r.cached for r in records),
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": completion,
        "tokens_per_second": round(completion / llm_span, 3) if llm_span > 0 else 0.0,
        "busy_fraction": round(busy, 4),
        "mean_in_flight": round(sum(r.finished - r.submitted for r in records) / llm_span, 3) if llm_span else 0.0,
        "max_in_flight": round(max(occupancy), 3) if occupancy else 0.0,
        "request_latency": {k: distribution(v) for k, v in sorted(by_purpose.items())},
        "prefix_cache": prefix_cache_summary(records),
        "prefix_cache_by_purpose": {
            k: prefix_cache_summary([r for r in records if r.purpose == k]) for k in sorted(by_purpose)
        },
    }


def profile_run(
    run: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None, *, buckets: int = 60
) -> dict[str, Any]:
    """Profile a run; with ``out_dir``, also write ``profile.json``, ``profile.md`` and the plots.

    Args:
        run: the results Parquet of ``symbolkg solve``.
        out_dir: where the report and plots go (created); None = only return the report.
        buckets: time buckets of the timelines.

    Raises:
        FileNotFoundError: no results at ``run``.
    """
    table, meta = read_run(run)
    rows = table.to_pylist()
    records = read_request_log(run)
    gate_events = read_gate_log(run)
    starts = [r["finished_at"] - r["latency_seconds"] for r in rows] + [r.submitted for r in records]
    start = min(starts) if starts else 0.0
    end = max([r["finished_at"] for r in rows] + [r.finished for r in records]) if starts else 0.0
    span = max(end - start, 1e-9)
    bucket_s = max(span / buckets, 1e-3)

    stages, queue, overhead = stage_waits(rows)
    finished = sorted(r["finished_at"] - start for r in rows)
    counts = [0] * buckets
    for t in finished:
        counts[min(buckets - 1, int(t / (span / buckets)))] += 1
    report: dict[str, Any] = {
        "run": str(run),
        "problems": len(rows),
        "span_seconds": round(span, 3),
        "wall_seconds": round(float(meta.get("wall_seconds") or 0.0), 3),
        "problems_per_second": round(len(rows) / span, 4) if rows else 0.0,
        "latency": distribution([r["latency_seconds"] for r in rows]),
        "stages": {k: distribution(v) for k, v in stages.items()},
        "waits": {"solver_queue": distribution(queue), "orchestrator": distribution(overhead)},
        "throughput": {"bucket_seconds": round(span / buckets, 4), "finished_per_bucket": counts},
    }
    times, occupancy, tokens, busy = in_flight_timeline(records, start, bucket_s)
    if records:
        report["llm"] = llm_report(records, occupancy, busy)
    if gate_events:
        report["gates"] = gate_report(gate_events)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        report["plots"] = _plots(report, stages, finished, times, occupancy, tokens, out)
        if gate_events:
            report["plots"].append(_gate_plot(report["gates"], gate_timelines(gate_events, start), out))
        (out / "profile.json").write_text(json.dumps(report, indent=2))
        (out / "profile.md").write_text(format_profile(report) + "\n")
    return report


def format_profile(p: dict[str, Any]) -> str:
    """The profile as text tables."""

    def line(name: str, d: dict[str, float]) -> str:
        return (
            f"  {name:16s} {d['count']:6d} {d['mean']:9.3f} {d['p50']:9.3f} {d['p90']:9.3f} {d['p95']:9.3f} "
            f"{d['p99']:9.3f} {d['max']:9.3f}"
        )

    head = f"  {'':16s} {'n':>6s} {'mean s':>9s} {'p50 s':>9s} {'p90 s':>9s} {'p95 s':>9s} {'p99 s':>9s} {'max s':>9s}"
    lines = [
        f"profile of {p['run']}: {p['problems']} problems over {p['span_seconds']:.1f} s "
        f"({p['problems_per_second']:.3f} problems/s)",
        head,
        line("end to end", p["latency"]),
    ]
    lines += [line(k, d) for k, d in p["stages"].items()]
    lines += [
        "waits:",
        line("solver queue", p["waits"]["solver_queue"]),
        line("orchestrator", p["waits"]["orchestrator"]),
    ]
    if "llm" in p:
        llm = p["llm"]
        lines.append(
            f"LLM: {llm['requests']} requests ({llm['cached']} cached, {llm['errors']} failed), "
            f"{llm['completion_tokens']} completion tokens, {llm['tokens_per_second']:.1f} tokens/s; "
            f"busy {llm['busy_fraction']:.1%} of the time, {llm['mean_in_flight']:.1f} requests in flight "
            f"on average (max {llm['max_in_flight']:.1f})"
        )
        lines.append("LLM request latency by purpose:")
        lines += [line(k, d) for k, d in llm["request_latency"].items()]
        lines.append("prefix-cache hit rate (share of prompt tokens served from the engine's cache) by purpose:")
        for k, c in [*llm["prefix_cache_by_purpose"].items(), ("all", llm["prefix_cache"])]:
            rate = "unknown" if c["prefix_cache_hit_rate"] is None else f"{c['prefix_cache_hit_rate']:.1%}"
            lines.append(
                f"  {k:14s} {rate:>8s}  ({c['cached_prompt_tokens']} of {c['prompt_tokens']} prompt tokens, "
                f"{c['requests_known']} requests)"
            )
    if "gates" in p:
        lines.append("stage gates: seconds a call waited for a slot")
        lines += [line(f"{k} gate", g["wait"]) for k, g in p["gates"].items()]
        lines += [
            f"  {k}: limit {g['limit'] if g['limit'] is not None else 'none'}, {g['waited']} of {g['passes']} "
            f"calls waited, queue depth peak {g['peak_waiting']} (mean {g['mean_waiting']:.2f}), "
            f"slots held peak {g['peak_running']}"
            for k, g in p["gates"].items()
        ]
    if p.get("plots"):
        lines.append("plots: " + ", ".join(p["plots"]))
    return "\n".join(lines)


def _plots(
    report: dict[str, Any],
    stages: dict[str, list[float]],
    finished: list[float],
    times: list[float],
    occupancy: list[float],
    tokens: list[float],
    out: Path,
) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    if stages:
        fig, ax = plt.subplots(figsize=(8, 4))
        ax.boxplot(list(stages.values()), tick_labels=list(stages), showfliers=True)
        ax.set_ylabel("seconds per problem")
        ax.set_title(f"stage latency, {report['problems']} problems")
        fig.tight_layout()
        fig.savefig(out / "stages.png", dpi=110)
        plt.close(fig)
        written.append("stages.png")
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(finished, range(1, len(finished) + 1), drawstyle="steps-post")
    ax.set_xlabel("seconds since the run started")
    ax.set_ylabel("problems finished")
    ax.set_title(f"throughput: {report['problems_per_second']:.3f} problems/s")
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=110)
    plt.close(fig)
    written.append("throughput.png")
    if times:
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
        a1.step(times, occupancy, where="post")
        a1.set_ylabel("requests in flight")
        a1.set_title(f"LLM engine: busy {report['llm']['busy_fraction']:.0%} of the time")
        a2.step(times, tokens, where="post", color="tab:orange")
        a2.set_ylabel("completion tokens/s")
        a2.set_xlabel("seconds since the run started")
        fig.tight_layout()
        fig.savefig(out / "llm.png", dpi=110)
        plt.close(fig)
        written.append("llm.png")
    return written


def _gate_plot(
    gates: dict[str, dict[str, Any]], timelines: dict[str, tuple[list[float], list[int], list[int]]], out: Path
) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(len(timelines), 1, figsize=(8, 2.6 * len(timelines) + 0.6), sharex=True, squeeze=False)
    for ax, (stage, (times, waiting, running)) in zip(axes[:, 0], timelines.items(), strict=True):
        ax.step(times, waiting, where="post", label="waiting at the gate")
        ax.step(times, running, where="post", label="slots held", color="tab:green")
        limit = gates[stage]["limit"]
        if limit is not None:
            ax.axhline(limit, color="tab:red", linestyle="--", linewidth=1, label=f"limit {limit}")
        ax.set_ylabel("calls")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(
            f"{stage} gate: p95 wait {gates[stage]['wait']['p95']:.3f} s, "
            f"{gates[stage]['waited']}/{gates[stage]['passes']} calls waited"
        )
        ax.legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel("seconds since the run started")
    fig.tight_layout()
    fig.savefig(out / "gates.png", dpi=110)
    plt.close(fig)
    return "gates.png"
