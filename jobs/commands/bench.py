"""``symbolkg bench pipeline``: the real orchestrator against simulated engines.

The benchmark is :mod:`symbolkg.jobs.evaluations.pipeline_bench`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from symbolkg.actors.engines.simulated import (
    LLAMA_3_3_70B_4XH100_PREFIX_CACHE,
    NO_PREFIX_CACHE,
    PREFIX_CACHE_PRESETS,
    PRESETS,
    PrefixCacheConfig,
)

if TYPE_CHECKING:
    from symbolkg.jobs.evaluations.pipeline_bench import BenchConfig

PROG = "symbolkg bench pipeline"


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``bench`` with its ``pipeline`` subcommand."""
    bench = sub.add_parser("bench", help="benchmarks of the pipeline itself")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True)
    p = bench_sub.add_parser(
        "pipeline", help="the real orchestrator against simulated vLLM engines: throughput vs what the engines allow"
    )
    p.add_argument(
        "--simulated", action="store_true", help="simulated engines and solver (required: the only mode so far)"
    )
    p.add_argument("--problems", type=int, default=10_000, help="synthetic problems (default 10000)")
    p.add_argument("--engines", type=int, default=4, help="engine replicas behind the balancer (default 4)")
    p.add_argument("--concurrency", type=int, default=64, help="sequences one engine serves at once (default 64)")
    p.add_argument("--in-flight", type=int, help="problems in flight (default 2 x engines x concurrency)")
    p.add_argument(
        "--time-scale",
        type=float,
        default=0.1,
        help="real seconds per simulated second (default 0.1; smaller is faster but the "
        "orchestrator's own CPU time then weighs more)",
    )
    p.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    p.add_argument(
        "--refine-fraction",
        type=float,
        default=0.2,
        help="probability that a program fails and needs a repair round (default 0.2)",
    )
    p.add_argument(
        "--sequential-problems",
        type=int,
        help="problems of the one-at-a-time comparison (default min(problems, 100); 0 skips it)",
    )
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="llama-3.3-70b-4xh100",
        help="latency model of one engine (default llama-3.3-70b-4xh100; an assumption, see "
        "actors/engines/simulated.py)",
    )
    cache = p.add_mutually_exclusive_group()
    cache.add_argument(
        "--prefix-cache-tokens",
        type=int,
        metavar="N",
        help="tokens of prompt blocks each engine's prefix cache holds (default: the preset's, "
        f"{LLAMA_3_3_70B_4XH100_PREFIX_CACHE.capacity_tokens} for llama-3.3-70b-4xh100, "
        "sized from its KV cache; 0 turns it off)",
    )
    cache.add_argument(
        "--no-prefix-cache", action="store_true", help="no prefix caching: every prompt is prefilled in full"
    )
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="run only shard I of N of the problems (by a stable hash of the id), writing that shard's "
        "files in --out: N such commands with one --out make the whole run",
    )
    p.add_argument("--out", help="folder for the results Parquet files (default: a temporary folder)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def _config(args: argparse.Namespace) -> BenchConfig:
    """The :class:`BenchConfig` of the flags. Raises ValueError on a bad value."""
    # the job only when the command runs (pyarrow and more): the CLI builds every command's parser
    from symbolkg.jobs.evaluations.pipeline_bench import BenchConfig

    latency = replace(PRESETS[args.preset], max_batch=args.concurrency)
    if args.no_prefix_cache:
        prefix_cache = NO_PREFIX_CACHE
    elif args.prefix_cache_tokens is not None:
        prefix_cache = PrefixCacheConfig(capacity_tokens=args.prefix_cache_tokens)
    else:
        prefix_cache = PREFIX_CACHE_PRESETS[args.preset]
    return BenchConfig(
        problems=args.problems,
        engines=args.engines,
        latency=latency,
        max_in_flight=args.in_flight,
        time_scale=args.time_scale,
        seed=args.seed,
        refine_fraction=args.refine_fraction,
        sequential_problems=args.sequential_problems,
        prefix_cache=prefix_cache,
    )


def run(args: argparse.Namespace) -> int:
    """``symbolkg bench pipeline``: run it, print the report; 2 on bad flags, 1 if rows were lost."""
    # the job only when the command runs (pyarrow and more): the CLI builds every command's parser
    from symbolkg.jobs.core.ids import Shard  # numpy: as above
    from symbolkg.jobs.evaluations.pipeline_bench import format_report, run_bench  # as above

    if not args.simulated:
        print(f"{PROG}: only the simulated mode exists so far; add --simulated", file=sys.stderr)
        return 2
    try:
        cfg = _config(args)
        shard = Shard.parse(args.shard) if args.shard else None
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    try:
        if args.out:
            result = run_bench(cfg, Path(args.out), progress=not args.no_progress, shard=shard)
        else:
            with tempfile.TemporaryDirectory(prefix="symbolkg-bench-") as tmp:
                result = run_bench(cfg, Path(tmp), progress=not args.no_progress, shard=shard)
    except FileExistsError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    report = result.report()
    if not args.out:
        report["results"] = "(temporary; give --out DIR to keep them)"
    print(json.dumps(report) if args.json else format_report(report))
    if report["lost"] or report["duplicated"] or (report["sequential"] or {}).get("lost"):
        print(f"{PROG}: rows were lost or duplicated", file=sys.stderr)
        return 1
    return 0
