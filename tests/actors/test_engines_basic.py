"""The scripted, recorded and replay engine backends (no model, no GPU, no Ray)."""

from __future__ import annotations

import asyncio
import doctest
import json
import multiprocessing
import pickle
import sqlite3
import threading
import time
import traceback
from pathlib import Path

import pytest

from symbolkg.actors.engines import recorded as recorded_module
from symbolkg.actors.engines import replay as replay_module
from symbolkg.actors.engines import scripted as scripted_module
from symbolkg.actors.engines.base import (
    ChatRequest,
    Completion,
    EngineDeadError,
    EngineError,
    Message,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.actors.engines.recorded import RecordedEngine
from symbolkg.actors.engines.replay import CacheError, CachingEngine, CompletionCache, ReplayEngine
from symbolkg.actors.engines.scripted import ScriptedEngine
from tests.conftest import data_or_skip


def req(
    text: str = "Write a program.",
    *,
    problem_id: str = "p1",
    purpose: str = "formulate",
    request_id: str = "",
    params: SamplingParams | None = None,
    structured: StructuredOutput | None = None,
) -> ChatRequest:
    return ChatRequest(
        messages=(Message("system", "You write logic programs."), Message("user", text)),
        params=params or SamplingParams(),
        structured=structured,
        problem_id=problem_id,
        purpose=purpose,
        request_id=request_id or f"{problem_id}:{purpose}",
    )


def run(coro):
    return asyncio.run(coro)


def test_module_examples_run() -> None:
    for module in (scripted_module, recorded_module, replay_module):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__
    assert doctest.testmod(scripted_module).attempted > 0 and doctest.testmod(replay_module).attempted > 0


# --------------------------------------------------------------------------------------
# ScriptedEngine
# --------------------------------------------------------------------------------------


def test_scripted_mapping_is_consumed_in_order_per_problem() -> None:
    engine = ScriptedEngine({"p1": ["first", "second"], "p2": ["other"]})
    out = run(engine.generate([req(problem_id="p1"), req(problem_id="p2")]))
    assert [c.text for c in out] == ["first", "other"]
    assert [c.text for c in run(engine.generate([req(problem_id="p1")]))] == ["second"]
    assert engine.remaining("p1") == 0
    with pytest.raises(EngineError, match=r"problem 'p1' has no response left \(2 used\)"):
        run(engine.generate([req(problem_id="p1")]))
    with pytest.raises(EngineError, match="no script for problem 'p9'"):
        run(engine.generate([req(problem_id="p9")]))


def test_scripted_request_id_takes_precedence_over_problem_id() -> None:
    engine = ScriptedEngine({"p1:refine:1": ["repaired"], "p1": ["formulated"]})
    out = run(engine.generate([req(problem_id="p1", request_id="p1:refine:1"), req(problem_id="p1")]))
    assert [c.text for c in out] == ["repaired", "formulated"]


def test_scripted_counts_words_as_tokens_and_records_requests() -> None:
    engine = ScriptedEngine(lambda r: "Facts: Cat(Tom, True)", model="fake-7b")
    r = req("Is Tom a cat?")
    (c,) = run(engine.generate([r]))
    # "You write logic programs." (4) + "Is Tom a cat?" (4); "Facts: Cat(Tom, True)" is 3 words.
    assert (c.prompt_tokens, c.completion_tokens) == (8, 3)
    assert c.model == "fake-7b" and not c.cached and c.finish_reason == "stop"
    assert engine.requests == [r] and engine.batches == [(r,)] and engine.calls == 1


def test_scripted_raises_scripted_exceptions_after_consuming_the_batch() -> None:
    engine = ScriptedEngine({"p1": [EngineError("server said 500"), "ok"], "p2": ["a", "b"]})
    with pytest.raises(EngineError, match="server said 500"):
        run(engine.generate([req(problem_id="p2"), req(problem_id="p1")]))
    # Both requests of the failed batch consumed their response.
    assert engine.remaining("p1") == 1 and engine.remaining("p2") == 1
    assert len(engine.requests) == 2
    assert [c.text for c in run(engine.generate([req(problem_id="p1")]))] == ["ok"]

    dead = ScriptedEngine(lambda r: EngineDeadError("GPU fell off"))
    with pytest.raises(EngineDeadError, match="GPU fell off"):
        run(dead.generate([req()]))


def test_scripted_completion_passthrough_and_structured_flag() -> None:
    scripted = Completion("x", prompt_tokens=11, completion_tokens=1, finish_reason="length")
    engine = ScriptedEngine({"p1": [scripted], "p2": ["A"]}, supports_structured=True)
    (c,) = run(engine.generate([req(problem_id="p1")]))
    assert c.text == "x" and c.prompt_tokens == 11 and c.finish_reason == "length" and c.model == "scripted"
    (c,) = run(engine.generate([req(problem_id="p2", structured=StructuredOutput(choice=("A", "B")))]))
    assert c.structured
    plain = ScriptedEngine(lambda r: "A")
    (c,) = run(plain.generate([req(structured=StructuredOutput(choice=("A", "B")))]))
    assert not c.structured


def test_scripted_rejects_bad_scripts() -> None:
    with pytest.raises(ValueError, match=r"script\['p1'\] must be a list"):
        ScriptedEngine({"p1": "a bare string"})
    with pytest.raises(TypeError, match="callable or a mapping"):
        ScriptedEngine(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="latency_s"):
        ScriptedEngine({}, latency_s=-1)
    engine = ScriptedEngine(lambda r: 42)  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="expected str, Completion or an exception"):
        run(engine.generate([req()]))


def test_scripted_concurrent_calls_overlap_and_consume_each_response_once() -> None:
    # Overlapping calls take one latency (idle: 0.25-0.26 s), one after another they would take n
    # (10 s). The bound is between the two, 20x the overlapped time: no machine load reaches it,
    # and calls run one at a time do not get under it.
    n = 40
    engine = ScriptedEngine({"p1": [f"r{i}" for i in range(n)]}, latency_s=0.25)

    async def main() -> list[str]:
        outs = await asyncio.gather(*(engine.generate([req(problem_id="p1")]) for _ in range(n)))
        return [o[0].text for o in outs]

    started = time.perf_counter()
    texts = run(main())
    elapsed = time.perf_counter() - started
    assert sorted(texts) == sorted(f"r{i}" for i in range(n))
    assert elapsed < 0.25 * n / 2, "latency should overlap across concurrent calls"
    assert engine.calls == n and engine.remaining("p1") == 0


def test_scripted_reports_latency_and_dies_when_closed() -> None:
    engine = ScriptedEngine(lambda r: "t", latency_s=0.02)
    (c,) = run(engine.generate([req()]))
    assert c.latency_s >= 0.02
    run(engine.close())
    run(engine.close())
    with pytest.raises(EngineDeadError, match="closed"):
        run(engine.generate([req()]))


# --------------------------------------------------------------------------------------
# RecordedEngine
# --------------------------------------------------------------------------------------

PROGRAM = "Predicates:\nCat($x, bool)\nFacts:\nCat(Tom, True)\nRules:\nQuery:\nCat(Tom, True)\n"


def _write(tmp_path: Path, records: object, name: str = "ProntoQA_dev_gpt-4.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_recorded_answers_formulate_with_the_exact_program(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        [
            {"id": "ProntoQA_1", "context": "c", "raw_logic_programs": [PROGRAM]},
            {"id": "ProntoQA_2", "raw_logic_programs": ["   \n"]},
            {"id": "ProntoQA_3", "raw_logic_programs": []},
            {"id": "ProntoQA_4"},
        ],
    )
    engine = RecordedEngine.from_logiclm_file(path)
    assert engine.model == "recorded:ProntoQA_dev_gpt-4"
    assert len(engine) == 1 and "ProntoQA_1" in engine
    assert engine.skipped == ("ProntoQA_2", "ProntoQA_3", "ProntoQA_4")
    (c,) = run(engine.generate([req(problem_id="ProntoQA_1")]))
    assert c.text == PROGRAM
    assert (c.prompt_tokens, c.completion_tokens, c.cached, c.model) == (0, 0, False, "recorded:ProntoQA_dev_gpt-4")
    assert not engine.supports_structured


def test_recorded_refuses_repairs_other_purposes_and_unknown_problems(tmp_path: Path) -> None:
    engine = RecordedEngine({"p1": PROGRAM}, model="recorded:test")
    with pytest.raises(EngineError, match="only answers formulation requests; it cannot repair a program"):
        run(engine.generate([req(problem_id="p1", purpose="refine")]))
    with pytest.raises(EngineError, match="cannot answer a 'answer' request"):
        run(engine.generate([req(problem_id="p1", purpose="answer")]))
    with pytest.raises(EngineError, match="no recorded program for problem 'p2'"):
        run(engine.generate([req(problem_id="p2")]))
    skipped = RecordedEngine.from_logiclm_file(_write(tmp_path, [{"id": "q1", "raw_logic_programs": [""]}]))
    with pytest.raises(EngineError, match=r"no recorded program for problem 'q1' \(its record has no program\)"):
        run(skipped.generate([req(problem_id="q1")]))
    run(engine.close())
    with pytest.raises(EngineDeadError):
        run(engine.generate([req(problem_id="p1")]))


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ({"id": "x"}, "expected a JSON array"),
        ([["not", "an", "object"]], "record 0: expected an object"),
        ([{"raw_logic_programs": [PROGRAM]}], "record 0: field 'id' must be a non-empty string"),
        ([{"id": "a", "raw_logic_programs": [PROGRAM]}, {"id": "a"}], "record 1: duplicate id 'a'"),
        ([{"id": "a", "raw_logic_programs": PROGRAM}], r"record 0 \('a'\): field 'raw_logic_programs' must be a list"),
    ],
)
def test_recorded_file_errors_name_file_and_record(tmp_path: Path, records: object, message: str) -> None:
    path = _write(tmp_path, records, name="bad.json")
    with pytest.raises(ValueError, match=message) as info:
        RecordedEngine.from_logiclm_file(path)
    assert "bad.json" in str(info.value)


def test_recorded_file_not_json_or_missing(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("[{", encoding="utf-8")
    with pytest.raises(ValueError, match="broken.json: not a JSON file"):
        RecordedEngine.from_logiclm_file(path)
    with pytest.raises(FileNotFoundError, match="nope.json"):
        RecordedEngine.from_logiclm_file(tmp_path / "nope.json")
    with pytest.raises(ValueError, match="blank"):
        RecordedEngine({"p": " "})


def test_recorded_real_logiclm_file() -> None:
    path = data_or_skip("logiclm", "programs", "FOLIO_dev_gpt-4.json")
    records = json.loads(path.read_text(encoding="utf-8"))
    engine = RecordedEngine.from_logiclm_file(path)
    assert len(engine) + len(engine.skipped) == len(records) == 204
    last = records[-1]
    (c,) = run(engine.generate([req(problem_id=last["id"])]))
    assert c.text == last["raw_logic_programs"][0]


# --------------------------------------------------------------------------------------
# CompletionCache
# --------------------------------------------------------------------------------------


def test_cache_keys_follow_content_not_problem_identity() -> None:
    base = req("Is Tom a cat?", problem_id="p1", request_id="p1:formulate")
    same_prompt = req("Is Tom a cat?", problem_id="p2", purpose="refine", request_id="p2:refine:3")
    assert base.cache_key("m") == same_prompt.cache_key("m")
    variants = [
        req("Is Tom a cat?", params=SamplingParams(max_tokens=100)),
        req("Is Tom a cat?", params=SamplingParams(temperature=0.7, seed=1)),
        req("Is Tom a cat?", structured=StructuredOutput(choice=("A", "B"))),
        req("Is Tom a dog?"),
    ]
    keys = {base.cache_key("m"), base.cache_key("other-model"), *(v.cache_key("m") for v in variants)}
    assert len(keys) == 2 + len(variants)


def test_cache_put_get_len_and_reopen_keeps_original_counts(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "cache"
    with CompletionCache(path) as cache:
        assert cache.db_path == path / "completions.sqlite" and cache.db_path.is_file()
        assert len(cache) == 0 and "k" not in cache and cache.get("k") is None
        assert cache.put(
            "k",
            Completion(
                "text",
                prompt_tokens=12,
                completion_tokens=3,
                finish_reason="length",
                model="m",
                structured=True,
                latency_s=1.5,
            ),
        )
        assert not cache.put("k", Completion("another text", model="m")), "first write wins"
    with CompletionCache(path) as reopened:
        assert len(reopened) == 1 and "k" in reopened
        record = reopened.get("k")
        assert record is not None
        assert (record.text, record.prompt_tokens, record.completion_tokens) == ("text", 12, 3)
        assert (record.finish_reason, record.model, record.structured, record.latency_s) == ("length", "m", True, 1.5)
        assert abs(record.created_at - time.time()) < 60
        hit = record.to_completion()
        assert hit.cached and hit.prompt_tokens == 0 and hit.completion_tokens == 0 and hit.text == "text"
        assert hit.stored_tokens == (12, 3), "a hit keeps what the model spent on it first"


def test_cache_rejects_cached_completions_and_empty_keys(tmp_path: Path) -> None:
    with CompletionCache(tmp_path / "cache") as cache:
        with pytest.raises(ValueError, match="cached completion"):
            cache.put("k", Completion("t", cached=True))
        with pytest.raises(ValueError, match="non-empty"):
            cache.put_many([("a", Completion("t")), ("", Completion("t"))])
        assert len(cache) == 0, "a rejected batch stores nothing"


def test_cache_many_keys_in_one_call(tmp_path: Path) -> None:
    with CompletionCache(tmp_path / "cache") as cache:
        items = [(f"k{i}", Completion(f"t{i}", completion_tokens=i)) for i in range(1234)]
        assert cache.put_many(items) == 1234
        assert cache.put_many(items[:10]) == 0
        found = cache.get_many([f"k{i}" for i in range(0, 1300)])
        assert len(found) == 1234 and found["k1000"].completion_tokens == 1000


def test_cache_bad_files_and_closed_use(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hello", encoding="utf-8")
    with pytest.raises(CacheError, match="notes.txt' is a file"):
        CompletionCache(a_file)
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "completions.sqlite").write_bytes(b"this is not a database file, just some bytes" * 100)
    with pytest.raises(CacheError, match="junk/completions.sqlite"):
        CompletionCache(junk)
    old = CompletionCache(tmp_path / "old")
    old.close()
    with sqlite3.connect(old.db_path) as conn:
        conn.execute("UPDATE meta SET value = '0' WHERE name = 'schema_version'")
    with pytest.raises(CacheError, match="schema version 0"):
        CompletionCache(tmp_path / "old")
    cache = CompletionCache(tmp_path / "cache")
    cache.close()
    cache.close()
    with pytest.raises(CacheError, match="closed"):
        cache.get("k")


def test_cache_pickles_as_its_path(tmp_path: Path) -> None:
    cache = CompletionCache(tmp_path / "cache", busy_timeout_s=5)
    cache.put("k", Completion("t"))
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.path == cache.path and copy.busy_timeout_s == 5
    assert copy.get("k") == cache.get("k") is not None
    copy.close()
    cache.close()


def test_cache_concurrent_writers_from_threads(tmp_path: Path) -> None:
    path = tmp_path / "shared"
    caches = [CompletionCache(path), CompletionCache(path)]
    n = 150
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(n):
                caches[w].put(f"w{w}-{i}", Completion(f"text {w} {i}", completion_tokens=i))
                caches[w].put(f"shared-{i}", Completion(f"shared by {w}", completion_tokens=1))
                assert caches[1 - w].get(f"w{w}-{i}") is not None, "a committed write is visible to the other object"
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for cache in caches:
        assert len(cache) == 3 * n
        assert cache.get(f"w1-{n - 1}").text == f"text 1 {n - 1}"  # type: ignore[union-attr]
        assert cache.get("shared-0").text in {"shared by 0", "shared by 1"}  # type: ignore[union-attr]
        cache.close()
    with sqlite3.connect(path / "completions.sqlite") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _process_writer(path: str, worker: int, n: int) -> None:
    try:
        cache = CompletionCache(path)
        for i in range(n):
            cache.put(f"p{worker}-{i}", Completion(f"from {worker}"))
            cache.put(f"shared-{i}", Completion(f"from {worker}"))
        cache.close()
    except BaseException:
        # The exit code alone would not say why; the test shows this file.
        Path(f"{path}.error{worker}").write_text(traceback.format_exc(), encoding="utf-8")
        raise


def test_cache_concurrent_writers_from_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared")
    n = 100
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_writer, args=(path, w, n)) for w in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    errors = [Path(f"{path}.error{w}") for w in (0, 1)]
    assert [p.exitcode for p in procs] == [0, 0], "\n".join(e.read_text() for e in errors if e.exists())
    with CompletionCache(path) as cache:
        assert len(cache) == 3 * n


# --------------------------------------------------------------------------------------
# ReplayEngine and CachingEngine
# --------------------------------------------------------------------------------------


def _echo_engine(**kwargs: object) -> ScriptedEngine:
    """Answers each request with a text derived from its last message (so texts are checkable)."""
    return ScriptedEngine(lambda r: f"program for {r.messages[-1].content}", **kwargs)  # type: ignore[arg-type]


def test_caching_engine_second_run_costs_nothing(tmp_path: Path) -> None:
    requests = [req(f"problem number {i}", problem_id=f"p{i}") for i in range(5)]
    inner = _echo_engine(model="m")
    with CompletionCache(tmp_path / "cache") as cache:
        engine = CachingEngine(inner, cache)
        first = run(engine.generate(requests))
        assert inner.calls == 1 and len(inner.requests) == 5
        assert all(not c.cached and c.completion_tokens > 0 for c in first)
        assert len(cache) == 5

        second = run(engine.generate(requests))
        assert inner.calls == 1, "the second run must not reach the inner engine"
        assert [c.text for c in second] == [c.text for c in first]
        assert all(c.cached for c in second)
        assert sum(c.completion_tokens + c.prompt_tokens for c in second) == 0
        assert [c.stored_tokens for c in second] == [(c.prompt_tokens, c.completion_tokens) for c in first]
        assert all(c.stored_tokens is None for c in first), "a fresh completion's own counts are its cost"
        assert (engine.hits, engine.misses) == (5, 5)


def test_caching_engine_sends_only_misses_in_one_call_in_order(tmp_path: Path) -> None:
    inner = _echo_engine()
    with CompletionCache(tmp_path / "cache") as cache:
        engine = CachingEngine(inner, cache)
        run(engine.generate([req("b", problem_id="b"), req("d", problem_id="d")]))
        batch = [req(x, problem_id=x) for x in "abcde"]
        out = run(engine.generate(batch))
        assert [c.text for c in out] == [f"program for {x}" for x in "abcde"]
        assert [c.cached for c in out] == [False, True, False, True, False]
        assert inner.calls == 2
        assert [r.problem_id for r in inner.batches[1]] == ["a", "c", "e"]


def test_caching_engine_same_prompt_for_two_problems_is_generated_once(tmp_path: Path) -> None:
    inner = _echo_engine()
    with CompletionCache(tmp_path / "cache") as cache:
        engine = CachingEngine(inner, cache)
        out = run(engine.generate([req("same", problem_id="p1"), req("same", problem_id="p2")]))
        assert [len(b) for b in inner.batches] == [1]
        assert out[0].text == out[1].text
        assert (out[0].cached, out[1].cached) == (False, True)
        assert out[1].completion_tokens == 0 and out[0].completion_tokens > 0
        assert out[1].stored_tokens == (out[0].prompt_tokens, out[0].completion_tokens)


def test_caching_engine_forwards_identity_and_close(tmp_path: Path) -> None:
    inner = ScriptedEngine(lambda r: "t", model="m-1", supports_structured=True)
    with CompletionCache(tmp_path / "cache") as cache:
        engine = CachingEngine(inner, cache)
        assert (engine.model, engine.supports_structured, engine.inner) == ("m-1", True, inner)
        run(engine.close())
        run(engine.close())
        with pytest.raises(EngineDeadError):
            run(inner.generate([req()]))
        with pytest.raises(EngineDeadError):
            run(engine.generate([req()]))


def test_caching_engine_never_caches_errors(tmp_path: Path) -> None:
    inner = ScriptedEngine({"p1": [EngineError("overloaded"), "recovered"]})
    with CompletionCache(tmp_path / "cache") as cache:
        engine = CachingEngine(inner, cache)
        with pytest.raises(EngineError, match="overloaded"):
            run(engine.generate([req()]))
        assert len(cache) == 0
        (c,) = run(engine.generate([req()]))
        assert c.text == "recovered" and not c.cached and inner.calls == 2
        (c,) = run(engine.generate([req()]))
        assert c.text == "recovered" and c.cached and inner.calls == 2


def test_caching_engine_rejects_a_short_answer_from_inner(tmp_path: Path) -> None:
    class Short(ScriptedEngine):
        async def generate(self, requests):  # type: ignore[no-untyped-def]
            return (await super().generate(requests))[:-1]

    with CompletionCache(tmp_path / "cache") as cache:
        engine = CachingEngine(Short(lambda r: "t"), cache)
        with pytest.raises(EngineError, match="returned 1 completions for 2 requests"):
            run(engine.generate([req("a"), req("b")]))
        assert len(cache) == 0


def test_caching_engine_dedupes_concurrent_misses(tmp_path: Path) -> None:
    inner = _echo_engine(latency_s=0.05)
    with CompletionCache(tmp_path / "cache") as cache:
        engine = CachingEngine(inner, cache)

        async def main() -> list[list[Completion]]:
            return await asyncio.gather(*(engine.generate([req("same", problem_id=f"p{i}")]) for i in range(8)))

        outs = [o[0] for o in run(main())]
        assert len(inner.requests) == 1, "eight concurrent asks for one key make one generation"
        assert {c.text for c in outs} == {"program for same"}
        assert sum(not c.cached for c in outs) == 1
        # "program for same" is 3 words, counted once: the shared copies are free.
        assert sum(c.completion_tokens for c in outs) == 3
        assert engine.hits == 7 and engine.misses == 1


def test_caching_engine_waiter_retries_when_the_shared_generation_fails(tmp_path: Path) -> None:
    answers = iter([EngineError("transient"), "fine"])
    inner = ScriptedEngine(lambda r: next(answers), latency_s=0.05)
    with CompletionCache(tmp_path / "cache") as cache:
        engine = CachingEngine(inner, cache)

        async def main() -> list[object]:
            return await asyncio.gather(engine.generate([req()]), engine.generate([req()]), return_exceptions=True)

        first, second = run(main())
        assert isinstance(first, EngineError) and "transient" in str(first)
        assert isinstance(second, list) and second[0].text == "fine" and not second[0].cached
        assert inner.calls == 2 and len(cache) == 1


def test_replay_engine_misses_clearly_on_a_fresh_cache(tmp_path: Path) -> None:
    with CompletionCache(tmp_path / "fresh") as cache:
        engine = ReplayEngine(cache, "m")
        r = req(problem_id="FOLIO_dev_3")
        with pytest.raises(EngineError, match=r"replay miss: .*problem 'FOLIO_dev_3'.*\(key [0-9a-f]{64}\)") as info:
            run(engine.generate([r]))
        assert r.cache_key("m") in str(info.value)


def test_replay_engine_replays_a_cached_run_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "cache"
    requests = [req(f"q{i}", problem_id=f"p{i}") for i in range(3)]
    with CompletionCache(path) as cache:
        originals = run(CachingEngine(_echo_engine(model="m"), cache).generate(requests))
    with CompletionCache(path) as cache:
        engine = ReplayEngine(cache, "m")
        out = run(engine.generate(requests))
        assert [c.text for c in out] == [c.text for c in originals]
        assert all(c.cached and c.prompt_tokens == 0 and c.completion_tokens == 0 for c in out)
        assert [c.stored_tokens for c in out] == [(c.prompt_tokens, c.completion_tokens) for c in originals]
        assert all(c.model == "m" for c in out)
        with pytest.raises(EngineError, match="replay miss"):
            run(ReplayEngine(cache, "another-model").generate(requests[:1]))
        run(engine.close())
        with pytest.raises(EngineDeadError):
            run(engine.generate(requests))


def test_replay_engine_claims_structured_support_as_the_filling_engine_did(tmp_path: Path) -> None:
    choice = StructuredOutput(choice=("A", "B", "C"))
    inner = ScriptedEngine(lambda r: "A", model="m", supports_structured=True)
    with CompletionCache(tmp_path / "cache") as cache:
        assert cache.supports_structured("m") is None
        (original,) = run(CachingEngine(inner, cache).generate([req(structured=choice)]))
        assert original.structured and cache.supports_structured("m") is True
        replay = ReplayEngine(cache, "m")
        assert replay.supports_structured
        (c,) = run(replay.generate([req(structured=choice)]))
        assert c.text == "A" and c.structured and c.cached
        assert not ReplayEngine(cache, "m", supports_structured=False).supports_structured
        assert not ReplayEngine(cache, "unknown-model").supports_structured
