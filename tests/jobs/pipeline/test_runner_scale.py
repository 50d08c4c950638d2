"""The method job at scale: memory follows the work in flight, shards split one job, logs stream.

The memory test runs the real job (``logiclm`` over simulated engines, :mod:`symbolkg.jobs.evaluations.pipeline_bench`)
at two sizes with the same in-flight window and compares what Python allocated at its peak
(``tracemalloc``: deterministic, unlike RSS on a shared machine). Before issue 29 the job kept
~24 KB per finished problem (rows, request logs, gate events, engine stats, the problem list), so
4x the problems cost ~21 MB more at 1,200; now only the store's 8 bytes an id and one byte a
problem of the benchmark's own bookkeeping grow.
"""

from __future__ import annotations

import asyncio
import tracemalloc
from dataclasses import replace

import pyarrow.parquet as pq
import pytest

from symbolkg.actors.engines.metered import MeteredEngine, read_request_log, request_log_dir
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.actors.engines.simulated import LLAMA_3_3_70B_4XH100, NO_PREFIX_CACHE
from symbolkg.jobs.core.ids import Shard
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.evaluations.pipeline_bench import BenchConfig, run_pipeline
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.pipeline import store as store_module
from symbolkg.jobs.pipeline.gates import GateLog, StageGate, gate_log_dir, read_gate_log
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore, read_run

# No prefix cache: the simulated engines' cache (the GPUs' state, bounded by its capacity) would still
# be filling at these sizes.
SMALL = BenchConfig(
    problems=1200,
    engines=2,
    latency=replace(LLAMA_3_3_70B_4XH100, max_batch=8),
    max_in_flight=32,
    time_scale=0.0005,
    sequential_problems=0,
    completion_tokens=(100, 200),
    prefix_cache=NO_PREFIX_CACHE,
)


def traced_peak_mb(tmp_path, problems: int) -> float:
    tracemalloc.start()
    try:
        run = run_pipeline(SMALL, problems=problems, max_in_flight=32, out=tmp_path / f"r{problems}.parquet")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (run.lost, run.duplicated, run.rows) == (0, 0, problems)
    return peak / 2**20


def test_peak_memory_does_not_grow_with_the_problems(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "_MERGE_ROWS", 64)  # finalize's bounded buffer, below both sizes
    traced_peak_mb(tmp_path, 50)  # imports and first-use caches
    small, large = traced_peak_mb(tmp_path, 300), traced_peak_mb(tmp_path, 1200)
    # Before: ~24 KB a problem, i.e. ~21 MB more for the 900 extra problems. Now the peak is the
    # work in flight, plus 8 bytes an id (the store) and 1 byte a problem (the benchmark's counts),
    # plus the log buffers until they first spill (bounded: <= 4,096 request records, <= 65,536 gate
    # events; about 2 MB more at 1,200 problems than at 300).
    assert large - small < 4.0, f"peak {small:.2f} MB at 300 problems, {large:.2f} MB at 1,200"


def problem(pid: str) -> Problem:
    return Problem(pid, "test", f"Context of {pid}.", f"Is {pid} true?", ("A) True", "B) False"), "A")


def run_direct(store: ResultStore, problems, **kw):
    engine = ScriptedEngine(lambda r: "A")
    return asyncio.run(
        run_method_job(problems, store, MethodConfig(method="direct"), engine, None, progress=False, **kw)
    )


def test_a_generator_input_and_two_shards_make_the_whole_run(tmp_path):
    out = tmp_path / "run.parquet"
    ids = [f"q{i}" for i in range(50)]
    summaries = [run_direct(ResultStore(out, shard=Shard(i, 2)), (problem(pid) for pid in ids)) for i in range(2)]
    assert sum(s.solved for s in summaries) == 50 and all(s.solved == s.total for s in summaries)
    assert all(0 < s.total < 50 for s in summaries)
    table, meta = read_run(out)
    assert sorted(table.column("problem_id").to_pylist()) == sorted(ids) and meta["finished"]
    # A rerun of one shard finds its problems done (in its own file) and runs nothing.
    again = run_direct(ResultStore(out, shard=Shard(1, 2)), (problem(pid) for pid in ids))
    assert (again.solved, again.skipped_done) == (0, summaries[1].total)


def test_a_duplicate_id_in_a_lazy_input_is_refused_when_it_comes_up(tmp_path):
    out = tmp_path / "run.parquet"
    with pytest.raises(ValueError, match="duplicate problem id 'q3'"):
        run_direct(ResultStore(out, flush_rows=2), (problem(f"q{i}") for i in [0, 1, 2, 3, 4, 3, 5]), max_in_flight=1)
    done = {r["problem_id"] for r in read_run(out)[0].to_pylist()}
    assert {"q0", "q1", "q2", "q3"} <= done and "q5" not in done  # kept, as after a kill; a rerun resumes


def test_the_request_and_gate_logs_stream_to_files(tmp_path):
    out = tmp_path / "run.parquet"
    engine = MeteredEngine(ScriptedEngine(lambda r: "A"), log_to=out, flush_records=4)
    asyncio.run(
        run_method_job(
            [problem(f"q{i}") for i in range(10)],
            ResultStore(out),
            MethodConfig(method="direct"),
            engine,
            None,
            progress=False,
            max_in_flight=2,
        )
    )
    assert len(engine.records) == 2 and engine.logged == 8  # 10 requests: two files of 4 written, 2 held
    engine.flush_log()
    files = sorted(request_log_dir(out).glob("*.parquet"))
    assert len(files) == 3 and engine.records == [] and engine.logged == 10
    assert sorted(r.problem_id for r in read_request_log(out)) == sorted(f"q{i}" for i in range(10))

    run = tmp_path / "gates.parquet"
    log = GateLog(spill_to=run, flush_events=5)
    gate = StageGate("llm", 1, sink=log)

    async def passes() -> None:
        for _ in range(6):
            async with gate.slot():
                pass

    asyncio.run(passes())  # 12 events: enter and leave per pass
    assert len(log) == 2 and log.written == 10
    log.close()
    files = sorted(gate_log_dir(run).glob("*.parquet"))
    assert [pq.read_table(f).num_rows for f in files] == [5, 5, 2] and len(log) == 0
    assert [e.event for e in read_gate_log(run)] == ["enter", "leave"] * 6  # in order across the files
