"""The simulated engine (latency model, batching, queueing) and the least-loaded balancer."""

from __future__ import annotations

import asyncio
import doctest
import time
from dataclasses import replace

import pytest

from symbolkg.actors.engines import balanced as balanced_module
from symbolkg.actors.engines import simulated as simulated_module
from symbolkg.actors.engines.balanced import BalancedEngine
from symbolkg.actors.engines.base import ChatRequest, Completion, EngineDeadError, EngineError, Message, SamplingParams
from symbolkg.actors.engines.replay import CompletionCache
from symbolkg.actors.engines.simulated import (
    LLAMA_3_3_70B_4XH100,
    NO_PREFIX_CACHE,
    LatencyModel,
    PrefixCache,
    PrefixCacheConfig,
    RequestStats,
    SimClock,
    SimulatedEngine,
    cache_responder,
    estimate_prompt_tokens,
    estimate_tokens,
    render_prompt,
)

# 100 prompt tokens (4 template + 96 content) -> 0.1 s prefill; 20 completion tokens.
MODEL = LatencyModel("test", prefill_tokens_per_s=1000.0, decode_tokens_per_s=10.0, batch_slowdown=1.0, max_batch=4)
ANSWER = "x" * 80  # 20 tokens
SCALE = 0.01  # real seconds per simulated second: a 2.1 s request takes 21 ms
# Where a test compares arrival or queueing times (which follow the real clock: a busy machine can
# pause the test between two requests for milliseconds) it runs at SLOW_SCALE, so that a pause of
# up to ~20 ms real stays inside its 0.2 simulated-second tolerances; or it sends its requests in
# one call, which queues them at one instant on any machine. Service times are bookkept in
# simulated time and subtract the loop's lateness (late_s), so they need neither.
SLOW_SCALE = 0.1


def req(i: int = 0, *, content: str = "y" * 384, max_tokens: int = 512) -> ChatRequest:
    return ChatRequest(
        (Message("user", content),),
        SamplingParams(max_tokens=max_tokens),
        problem_id=f"p{i}",
        purpose="formulate",
        request_id=f"p{i}/formulate/1",
    )


def engine(
    model: LatencyModel = MODEL, responder=lambda r: ANSWER, *, name: str = "sim-0", clock: SimClock | None = None
) -> SimulatedEngine:
    return SimulatedEngine(responder, model, clock or SimClock(SCALE), name=name)


def max_overlap(stats: list[RequestStats]) -> int:
    """The most requests in service at one instant, from their recorded intervals."""
    # a finish and a start at the same instant: finish first
    events = sorted(
        [(s.started_at_s, 1) for s in stats] + [(s.finished_at_s, -1) for s in stats], key=lambda e: (e[0], e[1])
    )
    now = peak = 0
    for _, delta in events:
        now += delta
        peak = max(peak, now)
    return peak


def test_doctests():
    for module in (simulated_module, balanced_module):
        assert doctest.testmod(module).failed == 0


# ----------------------------------------------------------------------------- latency model


def test_step_time_grows_linearly_from_batch_one_to_full_batch():
    assert MODEL.step_s(1) == pytest.approx(0.1)
    assert MODEL.step_s(4) == pytest.approx(0.2)  # (1 + batch_slowdown) times as long
    assert MODEL.step_s(2) == pytest.approx(0.1 * (1 + 1 / 3))
    assert MODEL.service_s(100, 20, 1) == pytest.approx(0.1 + 20 * 0.1)
    assert MODEL.service_s(100, 20, 4) == pytest.approx(0.1 + 20 * 0.2)
    # Batching pays: the engine's total throughput grows with the batch although each sequence slows.
    throughputs = [MODEL.decode_throughput(b) for b in range(1, 5)]
    assert throughputs == sorted(throughputs) and throughputs[-1] == pytest.approx(20.0)
    single = LatencyModel("one", 1000.0, 10.0, 5.0, max_batch=1)
    assert single.step_s(1) == pytest.approx(0.1)


@pytest.mark.parametrize("batch", [0, 5])
def test_step_time_refuses_a_batch_outside_the_engine(batch):
    with pytest.raises(ValueError, match="batch must be in 1..4"):
        MODEL.step_s(batch)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"prefill_tokens_per_s": 0.0}, "must be > 0"),
        ({"decode_tokens_per_s": -1.0}, "must be > 0"),
        ({"batch_slowdown": -0.5}, "batch_slowdown"),
        ({"max_batch": 0}, "max_batch"),
        ({"name": ""}, "name"),
    ],
)
def test_latency_model_validates(kwargs, match):
    args = {"name": "m", "prefill_tokens_per_s": 1.0, "decode_tokens_per_s": 1.0, "batch_slowdown": 0.0, "max_batch": 1}
    with pytest.raises(ValueError, match=match):
        LatencyModel(**{**args, **kwargs})


def test_the_70b_preset_saturates_near_the_published_engine_throughput():
    m = LLAMA_3_3_70B_4XH100
    assert m.max_batch == 64
    assert 30 <= 1 / m.step_s(1) <= 40  # tokens/s of one request alone
    assert 800 <= m.decode_throughput(64) <= 1000  # DESIGN.md: NIM saturates at ~920 tokens/s


def test_token_estimates():
    assert estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    request = ChatRequest((Message("system", "s" * 8), Message("user", "u" * 9)))
    assert estimate_prompt_tokens(request) == (2 + 4) + (3 + 4)


@pytest.mark.parametrize("scale", [0, -1, float("inf")])
def test_clock_refuses_a_bad_time_scale(scale):
    with pytest.raises(ValueError, match="time_scale"):
        SimClock(scale)


# ----------------------------------------------------------------------------- one engine


def test_one_request_takes_the_modelled_time_and_reports_simulated_seconds():
    e = engine(clock=SimClock(SLOW_SCALE))
    [c] = asyncio.run(e.generate([req()]))
    assert c.text == ANSWER and c.finish_reason == "stop" and not c.cached
    assert (c.prompt_tokens, c.completion_tokens) == (100, 20)
    expected = MODEL.service_s(100, 20, 1)  # 2.1 simulated s = 0.21 s real
    assert c.latency_s >= expected
    [s] = e.stats
    # Queued and admitted in one call: microseconds apart idle; 0.2 simulated s is 20 ms real.
    assert s.queue_s < 0.2 and s.service_s == pytest.approx(c.latency_s, abs=0.2)
    # Without the loop's lateness (machine load), the service is the model's to float precision.
    assert s.service_s - s.late_s == pytest.approx(expected, abs=0.01)
    assert e.busy_seconds == pytest.approx(s.service_s, rel=0.05)


def test_a_busy_event_loop_shows_as_late_requests():
    async def run():
        e = engine()
        call = asyncio.create_task(e.generate([req()]))
        await asyncio.sleep(0.001)
        time.sleep(0.06)  # the orchestrator hogs the loop past the request's modelled end (21 ms)
        await call
        return e

    [s] = asyncio.run(run()).stats
    assert s.late_s > 2.5 and s.service_s == pytest.approx(MODEL.service_s(100, 20, 1) + s.late_s, abs=0.3)


def test_a_completion_longer_than_max_tokens_is_cut_and_says_length():
    [c] = asyncio.run(engine().generate([req(max_tokens=5)]))
    assert (c.completion_tokens, c.finish_reason, c.text) == (5, "length", "x" * 20)


def test_decode_slows_down_with_the_batch_it_is_in():
    e = engine()
    # One call: the four arrive at one instant, so they are in one batch of 4 from start to end
    # (four calls could reach the engine a pause of the machine apart, the first ones alone).
    latencies = [c.latency_s for c in asyncio.run(e.generate([req(i) for i in range(4)]))]
    full = MODEL.service_s(100, 20, 4)  # 4.1 s: all four decode together in a batch of 4
    assert min(latencies) >= full * 0.98
    assert all(s.service_s - s.late_s == pytest.approx(full, abs=0.05) for s in e.stats)
    assert full > 1.9 * MODEL.service_s(100, 20, 1)  # so a batch-1 timing could not pass


def test_a_sequence_speeds_up_and_slows_down_as_the_batch_changes_around_it():
    async def run():
        clock = SimClock(SLOW_SCALE)
        e = engine(clock=clock)
        first = asyncio.create_task(e.generate([req(0)]))
        await asyncio.sleep(clock.to_real(1.1))  # p0: prefill 0.1 s + 10 of its 20 tokens alone
        # p1-p3 in one call: they join p0's batch at one instant, on any machine.
        await asyncio.gather(first, e.generate([req(i) for i in range(1, 4)]))
        return {s.problem_id: s for s in e.stats}

    stats = asyncio.run(run())
    p0, p1 = stats["p0"], stats["p1"]
    arrival = p1.started_at_s - p0.started_at_s  # ~1.1 s after p0 started (later if the loop was late)
    # The others must join while p0 decodes alone, after its 0.1 s prefill and early enough that p1's
    # own prefill ends before p0 leaves (before 2.0 s), for the formulas below to hold: the 0.11 s real
    # sleep may end up to 90 ms late for that.
    assert 0.1 < arrival < 2.0
    # p0: prefill, 10 * arrival - 1 tokens alone (0.1 s a step), the rest in a batch of 4 (0.2 s a step).
    expected_p0 = arrival + (20 - (arrival - 0.1) / 0.1) * 0.2
    assert p0.service_s - p0.late_s == pytest.approx(expected_p0, abs=0.05)
    # p1: prefill and decode in the batch of 4 until p0 left, then a batch of 3 (0.1667 s a step).
    in_four = p0.finished_at_s - p1.started_at_s
    expected_p1 = in_four + (20 - (in_four - 0.1) / 0.2) * MODEL.step_s(3)
    assert p1.service_s - p1.late_s == pytest.approx(expected_p1, abs=0.05)


def test_at_most_max_batch_in_service_and_the_rest_queue_fifo():
    async def run(e):
        return await asyncio.gather(*(e.generate([req(i)]) for i in range(10)))

    e = engine(clock=SimClock(SLOW_SCALE))  # arrival order and waits across ten calls (see SLOW_SCALE)
    asyncio.run(run(e))
    assert e.max_in_service == 4 and max_overlap(e.stats) == 4
    assert e.requests == 10 and e.in_service == 0 and e.queued == 0
    started = sorted(e.stats, key=lambda s: s.started_at_s)
    assert [s.problem_id for s in started] == [f"p{i}" for i in range(10)]  # FIFO
    waits = [s.queue_s for s in started]
    assert max(waits[:4]) < 0.2 and min(waits[4:]) > 3.0  # the 5th waited for a full-batch request


def test_a_multi_request_call_is_one_sequence_per_request():
    e = engine()
    out = asyncio.run(e.generate([req(i) for i in range(6)]))
    assert [c.text for c in out] == [ANSWER] * 6 and len(e.stats) == 6 and e.max_in_service == 4


def test_same_requests_give_the_same_completions_and_tokens():
    def responder(r: ChatRequest) -> str:
        return "z" * (10 + 7 * int(r.problem_id[1:]))

    async def run():
        e = engine(responder=responder)
        return await asyncio.gather(*(e.generate([req(i)]) for i in range(6)))

    def strip(results):
        return [(c.text, c.prompt_tokens, c.completion_tokens, c.finish_reason) for [c] in results]

    assert strip(asyncio.run(run())) == strip(asyncio.run(run()))


def test_utilization_is_the_mean_share_of_batch_slots_in_use():
    clock = SimClock(SCALE)
    e = engine(clock=clock)
    [c] = asyncio.run(e.generate([req()]))
    # One sequence of four slots for its whole service: a quarter over that window, half over twice it.
    assert e.utilization(e.busy_seconds) == pytest.approx(0.25)
    assert e.utilization(2 * e.busy_seconds) == pytest.approx(0.125)
    with pytest.raises(ValueError):
        e.utilization(0)


def test_responder_errors_fail_the_call_without_queueing():
    def responder(r: ChatRequest) -> str:
        raise EngineError("no answer for " + r.problem_id)

    e = engine(responder=responder)
    with pytest.raises(EngineError, match="no answer for p0"):
        asyncio.run(e.generate([req()]))
    assert e.requests == 0 and e.queued == 0

    e = engine(responder=lambda r: Completion("not a str"))
    with pytest.raises(TypeError, match="expected str"):
        asyncio.run(e.generate([req()]))


def test_close_fails_waiting_requests_and_later_calls():
    async def run():
        e = engine()
        calls = [asyncio.create_task(e.generate([req(i)])) for i in range(6)]
        for _ in range(3):
            await asyncio.sleep(0)  # loop turns, not wall time: every call has reached the engine
        assert e.in_service == 4 and e.queued == 2
        await e.close()
        await e.close()  # idempotent
        results = await asyncio.gather(*calls, return_exceptions=True)
        with pytest.raises(EngineDeadError):
            await e.generate([req()])
        return results

    results = asyncio.run(run())
    assert all(isinstance(r, EngineDeadError) for r in results)


def test_a_cancelled_request_leaves_its_slot_to_the_queue():
    async def run():
        # p0 would take 50 simulated s (0.5 s real); p1 only 2.1.
        e = engine(
            LatencyModel("one", 1000.0, 10.0, 0.0, max_batch=1),
            responder=lambda r: "x" * 2000 if r.problem_id == "p0" else ANSWER,
        )
        first = asyncio.create_task(e.generate([req(0)]))
        second = asyncio.create_task(e.generate([req(1)]))
        for _ in range(3):
            await asyncio.sleep(0)  # loop turns, not wall time: both calls have reached the engine
        assert (e.in_service, e.queued) == (1, 1)
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        assert (e.in_service, e.queued) == (1, 0)
        [c] = await second
        return e, c

    e, c = asyncio.run(run())
    assert [s.problem_id for s in e.stats] == ["p1"]
    assert e.stats[0].queue_s < 10  # it started when p0 was cancelled, not after p0's 50 s


def test_cache_responder_answers_hits_and_fails_misses(tmp_path):
    with CompletionCache(tmp_path / "cache") as cache:
        hit = req(0)
        cache.put(hit.cache_key("llama"), Completion("Facts: a", prompt_tokens=3, completion_tokens=2))
        respond = cache_responder(cache, "llama")
        assert respond(hit) == "Facts: a"
        with pytest.raises(EngineError, match="no cached completion of model 'llama'.*p1/formulate/1"):
            respond(req(1, content="another prompt"))
        e = engine(responder=respond)
        [c] = asyncio.run(e.generate([hit]))
        assert c.text == "Facts: a" and c.completion_tokens == 2 and not c.cached


# ----------------------------------------------------------------------------- prefix cache

# Prefill is the slow part here (100 tokens/s) so that a cache hit shows in the timings; decoding
# 20 tokens takes 2 s at any batch.
PREFILL_HEAVY = LatencyModel(
    "prefill-heavy", prefill_tokens_per_s=100.0, decode_tokens_per_s=10.0, batch_slowdown=0.0, max_batch=4
)
CACHE = PrefixCacheConfig(capacity_tokens=10_000)  # 625 blocks of 16 tokens (64 characters)
SHARED = "s" * 640  # a system message: "<system>" header (12) + 640 + end (4) = 656 characters


def chat(i: int, *, system: str = SHARED, user: str | None = None) -> ChatRequest:
    """A system message then a 64-character user turn that differs from its first character per ``i``."""
    user = user if user is not None else f"{i:04d}" + "u" * 60
    return ChatRequest(
        (Message("system", system), Message("user", user)),
        SamplingParams(max_tokens=512),
        problem_id=f"p{i}",
        request_id=f"p{i}/formulate/1",
    )


def cached_engine(cache: PrefixCacheConfig = CACHE, model: LatencyModel = PREFILL_HEAVY, **kwargs) -> SimulatedEngine:
    return SimulatedEngine(lambda r: ANSWER, model, SimClock(SCALE), prefix_cache=cache, **kwargs)


def test_prefix_cache_config_validates_and_sizes_blocks():
    assert (CACHE.capacity_blocks, CACHE.block_chars, CACHE.enabled) == (625, 64, True)
    assert not NO_PREFIX_CACHE.enabled and not PrefixCacheConfig(capacity_tokens=15).enabled  # under one block
    with pytest.raises(ValueError, match="capacity_tokens must be >= 0"):
        PrefixCacheConfig(capacity_tokens=-1)
    with pytest.raises(ValueError, match="block_tokens must be >= 1"):
        PrefixCacheConfig(capacity_tokens=16, block_tokens=0)
    with pytest.raises(ValueError, match="at least one block"):
        PrefixCache(NO_PREFIX_CACHE)


def test_rendered_prompt_never_has_more_tokens_than_the_estimate():
    for request in (chat(0), chat(1, system="", user="x"), req(), ChatRequest((Message("assistant", "a" * 7),))):
        assert len(render_prompt(request)) / 4 <= estimate_prompt_tokens(request)
    assert render_prompt(chat(0)).startswith("<system>    " + SHARED + "<|>\n<user>      0000u")


def test_a_shared_prefix_is_prefilled_once_and_the_second_request_pays_only_its_tail():
    e = cached_engine()
    # One call: admitted in order at one instant; the first one's blocks are cached as it is admitted.
    first, second = asyncio.run(e.generate([chat(0), chat(1)]))
    prompt = 160 + 4 + 16 + 4  # system 640 chars, user 64 chars, 4 template tokens each
    assert first.prompt_tokens == second.prompt_tokens == prompt
    s0, s1 = sorted(e.stats, key=lambda s: s.problem_id)
    # 736 rendered characters: 11 full blocks; the first 10 (640 characters) are system text and
    # match, the 11th holds the start of the user turn, which differs.
    assert (s0.cached_prompt_tokens, s1.cached_prompt_tokens) == (0, 160)
    assert s0.service_s - s0.late_s == pytest.approx(prompt / 100 + 2.0, abs=0.05)  # 1.84 s prefill + 2 s decode
    assert s1.service_s - s1.late_s == pytest.approx((prompt - 160) / 100 + 2.0, abs=0.05)  # 0.24 s prefill
    assert (e.prompt_tokens, e.cached_prompt_tokens) == (2 * prompt, 160)
    assert e.prefix_cache_hit_rate == pytest.approx(160 / 368)
    assert e.prefill_seconds_saved == pytest.approx(1.6)
    assert len(e.prefix_cache) == 11 + 1  # the shared 10, each prompt's own 11th block


def test_a_different_first_block_is_no_hit_even_when_later_blocks_match():
    e = cached_engine()
    other = "t" + SHARED[1:]  # differs in the first block only: every later block's chained key differs too
    asyncio.run(e.generate([chat(0), chat(1, system=other, user="0000" + "u" * 60)]))
    assert [s.cached_prompt_tokens for s in e.stats] == [0, 0] and e.prefix_cache_hit_rate == 0.0
    assert e.stats[1].service_s - e.stats[1].late_s == pytest.approx(1.84 + 2.0, abs=0.05)


@pytest.mark.parametrize("cache", [NO_PREFIX_CACHE, PrefixCacheConfig(capacity_tokens=15), None])
def test_no_cache_means_no_hits(cache):
    e = cached_engine(cache) if cache is not None else SimulatedEngine(lambda r: ANSWER, PREFILL_HEAVY, SimClock(SCALE))
    asyncio.run(e.generate([chat(0), chat(0), chat(1)]))
    assert e.prefix_cache is None
    assert [s.cached_prompt_tokens for s in e.stats] == [0, 0, 0]
    assert (e.cached_prompt_tokens, e.prefix_cache_hit_rate, e.prefill_seconds_saved) == (0, 0.0, 0.0)
    assert e.prompt_tokens == 3 * 184
    assert all(s.service_s - s.late_s == pytest.approx(1.84 + 2.0, abs=0.05) for s in e.stats)


def test_an_identical_prompt_still_computes_its_last_token():
    # 240 characters of content + 16 of template: 256 rendered characters, 4 full blocks, 64 tokens
    # estimated: every token is in a cached block, but one is recomputed (as vLLM does).
    requests = [
        ChatRequest((Message("user", "q" * 240),), SamplingParams(max_tokens=512), problem_id=f"p{i}") for i in range(2)
    ]
    assert estimate_prompt_tokens(requests[0]) == 64 and len(render_prompt(requests[0])) == 256
    e = cached_engine()
    asyncio.run(e.generate(requests))
    s0, s1 = sorted(e.stats, key=lambda s: s.problem_id)  # stats are in finishing order: p1 finishes first
    assert (s0.cached_prompt_tokens, s1.cached_prompt_tokens) == (0, 63)
    assert s1.service_s - s1.late_s == pytest.approx(0.01 + 2.0, abs=0.05)


def test_a_block_hits_only_after_the_same_blocks():
    cache = PrefixCache(PrefixCacheConfig(capacity_tokens=16, block_tokens=1))  # blocks of 4 characters
    cache.insert(cache.block_hashes("aaaabbbbcccc"))
    assert cache.match(cache.block_hashes("aaaabbbbcccc")) == 3
    assert cache.match(cache.block_hashes("aaaabbbbxxxxcccc")) == 2
    # Block texts that are cached, but after other blocks: the keys chain the whole prefix.
    assert cache.match(cache.block_hashes("bbbbcccc")) == 0
    assert cache.match(cache.block_hashes("xxxxbbbbcccc")) == 0


def test_lru_eviction_drops_the_least_recently_used_prompt_and_a_prompt_keeps_its_head_longest():
    cache = PrefixCache(PrefixCacheConfig(capacity_tokens=4, block_tokens=1))  # 4 blocks of 4 characters
    a, b, c = (cache.block_hashes(x * 8) for x in "abc")  # 2 blocks each
    cache.insert(a)
    cache.insert(b)
    assert (cache.match(a), cache.match(b), len(cache)) == (2, 2, 4)
    cache.insert(a)  # a used again: b is now the least recently used
    cache.insert(c)
    assert (cache.match(a), cache.match(b), cache.match(c), cache.evictions) == (2, 0, 2, 2)
    # A prompt longer than the cache keeps its leading blocks: its tail is evicted first.
    long = cache.block_hashes("d" * 24)  # 6 blocks
    cache.insert(long)
    assert cache.match(long) == 4 and cache.match(a) == cache.match(c) == 0
    assert cache.match(cache.block_hashes("d" * 16 + "x" * 8)) == 4  # the same first 4 blocks: a hit
    assert cache.block_hashes("abc") == []  # no full block


def test_lru_eviction_in_the_engine_forgets_an_evicted_prefix():
    # Room for 11 blocks: one prompt. Admitted one after another (max_batch 1): p0, p1 (a different
    # system message, which evicts all of p0's blocks), then p0's prompt again: no hit.
    e = cached_engine(PrefixCacheConfig(capacity_tokens=11 * 16), replace(PREFILL_HEAVY, max_batch=1))
    other = "t" * 640
    asyncio.run(e.generate([chat(0), chat(1, system=other), chat(2), chat(3)]))
    hits = {s.problem_id: s.cached_prompt_tokens for s in e.stats}
    assert hits == {"p0": 0, "p1": 0, "p2": 0, "p3": 160}  # p2 missed (evicted by p1); p3 hit p2's blocks
    # p1 evicted p0's 11 blocks, p2 p1's 11, p3 (10 shared blocks and its own 11th) p2's 11th.
    assert e.prefix_cache.evictions == 11 + 11 + 1 and len(e.prefix_cache) == 11


def test_prefix_caching_is_deterministic():
    def run():
        e = cached_engine(PrefixCacheConfig(capacity_tokens=40 * 16))
        systems = [SHARED, "t" * 640, SHARED[:300] + "v" * 340]
        requests = [chat(i, system=systems[i % 3]) for i in range(12)]
        asyncio.run(e.generate(requests))
        return sorted((s.problem_id, s.prompt_tokens, s.cached_prompt_tokens) for s in e.stats), e.cached_prompt_tokens

    first = run()
    assert first == run() and first[1] > 0


# ----------------------------------------------------------------------------- balancer


class GateEngine:
    """An engine whose calls finish when the test opens their gate."""

    def __init__(self, model: str = "m") -> None:
        self.model = model
        self.supports_structured = False
        self.gates: list[asyncio.Event] = []
        self.closed = False

    async def generate(self, requests):
        gate = asyncio.Event()
        self.gates.append(gate)
        await gate.wait()
        return [Completion("ok", model=self.model) for _ in requests]

    async def close(self):
        self.closed = True


def test_balancer_ties_go_round_robin():
    engines = [GateEngine() for _ in range(3)]
    b = BalancedEngine(engines)
    assert [b.pick() for _ in range(2)] == [0, 0]  # pick() alone does not move the pointer

    async def one_at_a_time():
        for _ in range(7):
            call = asyncio.create_task(b.generate([req()]))
            await asyncio.sleep(0)
            for e in engines:
                for g in e.gates:
                    g.set()
            await call

    asyncio.run(one_at_a_time())
    assert b.requests_per_engine == [3, 2, 2] and b.outstanding == [0, 0, 0]


def test_balancer_sends_a_call_to_the_least_loaded_engine_not_the_next_in_turn():
    async def run():
        engines = [GateEngine(), GateEngine()]
        b = BalancedEngine(engines)
        a = asyncio.create_task(b.generate([req(0), req(1)]))  # -> engine 0, two requests outstanding
        c = asyncio.create_task(b.generate([req(2)]))  # -> engine 1 (fewest outstanding)
        await asyncio.sleep(0)
        assert b.outstanding == [2, 1]
        engines[1].gates[0].set()
        await c
        # Round-robin would now pick engine 0; least-loaded picks engine 1 again.
        d = asyncio.create_task(b.generate([req(3)]))
        await asyncio.sleep(0)
        assert b.outstanding == [2, 1] and len(engines[1].gates) == 2
        for e in engines:
            for g in e.gates:
                g.set()
        await asyncio.gather(a, d)
        return b

    b = asyncio.run(run())
    assert b.requests_per_engine == [2, 2] and b.calls_per_engine == [1, 2] and b.outstanding == [0, 0]


def test_balancer_spreads_many_concurrent_calls_evenly_over_simulated_engines():
    async def run():
        clock = SimClock(SCALE)
        engines = [engine(name=f"sim-{i}", clock=clock) for i in range(4)]
        b = BalancedEngine(engines)
        await asyncio.gather(*(b.generate([req(i)]) for i in range(40)))
        await b.close()
        return b, engines

    b, engines = asyncio.run(run())
    assert b.requests_per_engine == [10, 10, 10, 10]
    assert [len(e.stats) for e in engines] == [10, 10, 10, 10]
    assert all(e.max_in_service == 4 for e in engines)


def test_balancer_errors_release_the_slot_and_close_closes_all():
    class Failing(GateEngine):
        async def generate(self, requests):
            raise EngineError("boom")

    async def run():
        engines = [Failing(), GateEngine()]
        b = BalancedEngine(engines)
        with pytest.raises(EngineError, match="boom"):
            await b.generate([req()])
        assert b.outstanding == [0, 0]
        await b.close()
        await b.close()
        with pytest.raises(EngineDeadError):
            await b.generate([req()])
        return engines

    assert all(e.closed for e in asyncio.run(run()))


def test_balancer_refuses_no_engines_or_different_models():
    with pytest.raises(ValueError, match="at least one"):
        BalancedEngine([])
    with pytest.raises(ValueError, match="different models"):
        BalancedEngine([GateEngine("a"), GateEngine("b")])
    structured = GateEngine()
    structured.supports_structured = True
    with pytest.raises(ValueError, match="supports_structured"):
        BalancedEngine([GateEngine(), structured])
