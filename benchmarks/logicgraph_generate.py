"""LogicGraph generator: 100 instances per tier at a fixed seed, every filter rechecked, statistics.

For each tier (small, medium, large) the benchmark generates ``--count`` instances at ``--seed``
with :func:`symbolkg.solvers.logicgraph.generate.generate_instance`, writes them as JSON lines,
reads them back with the dataset's loader (:func:`symbolkg.solvers.logicgraph.instances.load_instances`)
and checks every instance again from the written record, independently of the generator's own
checks: the three solver filters (:func:`~symbolkg.solvers.logicgraph.generate.check_filters`),
every step's shape against the seven forms
(:func:`~symbolkg.solvers.logicgraph.proofs.matching_rules`), the tier's range, and that the
reference supports equal the enumerator's complete list
(:func:`~symbolkg.solvers.logicgraph.elimination.minimal_supports`, run afresh). It then prints the tier
statistics next to the dataset's (small and medium; the paper's Large tier is not in our data).

    python benchmarks/logicgraph_generate.py [--count 100] [--seed 0] [--tiers small medium large]

Writes benchmarks/out/logicgraph_generate.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from symbolkg.jobs.datasets.files import default_data_dir
from symbolkg.jobs.logicgraph.generate import format_statistics
from symbolkg.solvers.logicgraph.elimination import minimal_supports
from symbolkg.solvers.logicgraph.generate import (
    TIERS,
    GenerationError,
    check_filters,
    generate_instance,
    tier_statistics,
)
from symbolkg.solvers.logicgraph.instances import load_instances
from symbolkg.solvers.logicgraph.proofs import matching_rules

OUT = Path(__file__).resolve().parent / "out"


def run_tier(tier: str, count: int, seed: int) -> dict[str, Any]:
    """Generate, write, reload and recheck one tier; returns its part of the JSON report."""
    config = TIERS[tier]
    t0 = time.perf_counter()
    records, seconds, attempts, rejections, failures = [], [], 0, {}, []
    proved = 0
    for index in range(count):
        try:
            generated = generate_instance(config, seed, index)
        except GenerationError as exc:
            failures.append(str(exc))
            continue
        records.append(generated.record)
        seconds.append(generated.seconds)
        attempts += generated.attempts
        proved += generated.proved
        for reason, n in generated.rejections.items():
            rejections[reason] = rejections.get(reason, 0) + n
        print(f"\r{tier}: {index + 1}/{count}", end="", file=sys.stderr, flush=True)
    generation_s = time.perf_counter() - t0
    print(file=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{tier}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        instances = list(load_instances(path))

    t1 = time.perf_counter()
    checks = {
        "stepwise": 0,
        "derivable": 0,
        "consistent": 0,
        "forms": 0,
        "in_tier": 0,
        "reference_equals_enumerator": 0,
    }
    problems: list[str] = []
    for instance in instances:
        premises = {i: p.formula for i, p in instance.premises.items()}
        report = check_filters(premises, instance.goal, instance.proofs)
        checks["stepwise"] += report.stepwise
        checks["derivable"] += report.derivable
        checks["consistent"] += report.consistent
        if all(
            s.rule in matching_rules([c.formula for c in s.premises], s.conclusion)
            for p in instance.proofs
            for s in p.steps
        ):
            checks["forms"] += 1
        else:
            problems.append(f"{instance.id}: a step that is not its form")
        checks["in_tier"] += config.accepts(len(instance.proofs))
        result = minimal_supports(premises, instance.goal)
        if (
            result.complete
            and set(result.supports) == set(instance.reference_supports())
            and len(instance.reference_supports()) == len(instance.proofs)
        ):
            checks["reference_equals_enumerator"] += 1
        else:
            problems.append(
                f"{instance.id}: reference supports differ from the enumerator's (complete={result.complete})"
            )
        problems += [f"{instance.id}: {p}" for p in report.problems]
    check_s = time.perf_counter() - t1
    ms = sorted(s * 1000 for s in seconds)
    return {
        "tier": tier,
        "requested": count,
        "written": len(instances),
        "failures": failures,
        "constructions": attempts,
        "rejections": rejections,
        "proofs_from_search": proved,
        "generation_s": round(generation_s, 2),
        "ms_per_instance": {"p50": round(ms[len(ms) // 2], 1), "max": round(ms[-1], 1)} if ms else {},
        "recheck_s": round(check_s, 2),
        "checks": checks,
        "problems": problems[:20],
        "statistics": tier_statistics(instances),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=100, help="instances per tier (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tiers", nargs="+", default=["small", "medium", "large"], choices=sorted(TIERS))
    ap.add_argument("--data-dir")
    args = ap.parse_args()
    data = default_data_dir(args.data_dir) / "logicgraph"
    results = {}
    for tier in args.tiers:
        result = run_tier(tier, args.count, args.seed)
        dataset_file = data / f"{tier}.jsonl"
        result["dataset_statistics"] = tier_statistics(load_instances(dataset_file)) if dataset_file.is_file() else None
        results[tier] = result
        print()
        print(format_statistics(result["statistics"], result["dataset_statistics"], tier))
        c = result["checks"]
        print(
            f"{tier}: {result['written']}/{result['requested']} written, {result['constructions']} constructions "
            f"(rejected: {result['rejections'] or 'none'}), {result['proofs_from_search']} proofs from the search, "
            f"{result['generation_s']} s generation + {result['recheck_s']} s recheck"
        )
        print(
            f"{tier}: stepwise {c['stepwise']}, derivable {c['derivable']}, consistent {c['consistent']}, "
            f"forms {c['forms']}, in tier {c['in_tier']}, reference == enumerator {c['reference_equals_enumerator']} "
            f"(of {result['written']})"
        )
        for problem in result["problems"]:
            print(f"PROBLEM {problem}")
    OUT.mkdir(exist_ok=True)
    doc = {
        "benchmark": "logicgraph_generate",
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "seed": args.seed,
        "count": args.count,
        "tiers": results,
    }
    (OUT / "logicgraph_generate.json").write_text(json.dumps(doc, indent=1))
    print(f"\nwrote {OUT / 'logicgraph_generate.json'}")


if __name__ == "__main__":
    main()
