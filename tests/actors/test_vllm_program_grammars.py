"""The full program grammars in vLLM: each compiles, constrains a real model, and a finished completion parses.

The embedded SmolLM2-135M-Instruct writes one program per language (the logiclm prompts, a small
made-up problem each) under ``program_structured_output(language, "full")`` with a small token
budget. A completion that stops is a whole program, so it must parse; one cut off by the budget
must still be a beginning the grammar admits. Whether the model's programs are right is the
benchmarks' to measure, not this test's.
"""

from __future__ import annotations

import asyncio

import pytest

from symbolkg.actors.engines import models
from symbolkg.actors.engines.base import ChatRequest, Message, SamplingParams, StructuredOutput
from symbolkg.actors.engines.vllm_engine import VLLMConfig
from symbolkg.solvers import prompts, registry
from tests.conftest import requires_vllm

pytestmark = [pytest.mark.slow, pytest.mark.llm, pytest.mark.timeout(1200), requires_vllm]

TF = ("A) True", "B) False", "C) Unknown")
PROBLEMS = {
    "logiclm-lp": ("The cat is green. Green things are kind.", "Is the following statement true? The cat is kind.", TF),
    "logiclm-fol": ("All owls are birds. Hoot is an owl.", "Is the following statement true? Hoot is a bird.", TF),
    "logiclm-csp": (
        "On a shelf there are two books: a red book and a blue book. The red book is to the left of the blue book.",
        "Which of the following is true?",
        ("A) The red book is the leftmost.", "B) The blue book is the leftmost."),
    ),
    "logiclm-smt": (
        "Two children, Ann and Bo, each visit on one of the days 1 and 2, on different days. Ann visits on day 1.",
        "Which one of the following must be true?",
        ("A) Bo visits on day 2.", "B) Bo visits on day 1."),
    ),
}
MAX_TOKENS = 160


@pytest.fixture(scope="module")
def engine():
    try:
        models.prepare(models.DEFAULT_MODEL)
    except models.ModelNotAvailableError as exc:
        pytest.skip(f"the embedded model is not available: {exc}")
    from symbolkg.actors.engines.vllm_engine import VLLMEngine

    eng = VLLMEngine(VLLMConfig(max_num_seqs=4, max_model_len=2048, kv_cache_memory_bytes=512 << 20))
    yield eng
    eng.shutdown()


def request(language: str) -> ChatRequest:
    context, question, options = PROBLEMS[language]
    messages = prompts.formulation_messages(language, context, question, options)
    return ChatRequest(
        tuple(Message(role, content) for role, content in messages),  # type: ignore[arg-type]
        SamplingParams(max_tokens=MAX_TOKENS),
        StructuredOutput(**prompts.program_structured_output(language, "full")),
        problem_id=language,
        purpose="formulate",
        request_id=f"{language}/formulate/1",
    )


def test_a_completion_under_the_full_grammar_that_stops_parses(engine):
    xgr = pytest.importorskip("xgrammar")
    languages = sorted(PROBLEMS)
    completions = asyncio.run(engine.generate([request(lang) for lang in languages]))
    for language, completion in zip(languages, completions, strict=True):
        print(f"{language}: {completion.finish_reason}, {completion.completion_tokens} tokens\n{completion.text}\n")
        assert completion.structured and completion.completion_tokens <= MAX_TOKENS
        compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar(prompts.program_grammar(language))
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        assert matcher.accept_string(completion.text), language  # what was generated is in the grammar
        if completion.finish_reason == "stop":
            assert matcher.is_terminated(), language
            registry.parse(language, completion.text)  # raises ProgramError if it does not parse
        else:
            assert completion.finish_reason == "length", completion.finish_reason
