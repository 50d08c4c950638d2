"""A method job numbers its problems as it admits them, and every request of a problem carries that number.

vLLM serves waiting requests by it (``VLLMConfig.scheduling_policy="priority"``, tested on the real
engine in ``tests/actors/test_vllm_engine.py``): a started problem's repair goes before a later
problem's first request.
"""

from __future__ import annotations

import asyncio

from symbolkg.actors.engines.base import ChatRequest, Message, Prioritized
from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.runtime.local_pool import LocalSolverPool
from tests.jobs.test_methods import BAD_LP, GOOD_LP, problem


def test_prioritized_sets_the_priority_and_keeps_the_engine_face():
    inner = ScriptedEngine(lambda r: "ok", model="m", supports_structured=True)
    engine = Prioritized(inner, 7)
    assert (engine.model, engine.supports_structured) == ("m", True)
    request = ChatRequest((Message("user", "hi"),), problem_id="p")
    out = asyncio.run(engine.generate([request, request]))
    assert [c.text for c in out] == ["ok", "ok"]
    assert [r.priority for r in inner.requests] == [7, 7] and request.priority == 0  # a copy, not the caller's
    assert inner.requests[0].cache_key("m") == request.cache_key("m")  # when, not what: the cache key is the same
    asyncio.run(engine.close())
    assert not inner._closed  # one problem's view never closes the shared engine


def test_every_request_of_a_problem_carries_its_admission_number(tmp_path):
    # Each problem needs a repair: its second request comes after later problems were admitted, and
    # must still carry its own problem's number. Ids are not in sorted order, so the number is the
    # admission order, not the id.
    ids = ["q3", "q1", "q4", "q0", "q2"]
    engine = ScriptedEngine({pid: [BAD_LP, GOOD_LP] for pid in ids})
    out = tmp_path / "run.parquet"
    with LocalSolverPool(2) as pool:
        asyncio.run(
            run_method_job(
                [problem(pid) for pid in ids],
                ResultStore(out),
                MethodConfig("logiclm"),
                engine,
                pool,
                max_in_flight=2,
                progress=False,
            )
        )
    assert all(read_run(out)[0].column("correct").to_pylist())
    seen: dict[str, set[int]] = {}
    for r in engine.requests:
        seen.setdefault(r.problem_id, set()).add(r.priority)
    assert seen == {pid: {i} for i, pid in enumerate(ids)}
    assert len(engine.requests) == 2 * len(ids)
