"""Tests of symbolkg.solvers.prompts: few-shot programs solve, prompts carry the problem, extraction, regexes."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symbolkg.solvers import prompts, registry
from symbolkg.solvers.lp import prompts as lp_prompts
from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError
from symbolkg.solvers.prompts import (
    EXAMPLES,
    answer_structured_output,
    cot_messages,
    direct_messages,
    extract_answer,
    extract_program,
    formulation_messages,
    program_structured_output,
    refine_messages,
)
from tests.conftest import data_or_skip

LANGUAGES = sorted(EXAMPLES)
ALL_EXAMPLES = [(lang, i) for lang in LANGUAGES for i in range(len(EXAMPLES[lang]))]
PROGRAM_FILES = {
    "logiclm-lp": ("ProntoQA", "ProofWriter"),
    "logiclm-fol": ("FOLIO",),
    "logiclm-csp": ("LogicalDeduction",),
    "logiclm-smt": ("AR-LSAT",),
}
TF = ["A) True", "B) False", "C) Unknown"]


def recorded(dataset: str) -> list[dict]:
    path = data_or_skip("logiclm", "programs", f"{dataset}_dev_gpt-4.json")
    return json.loads(path.read_text())


# --------------------------------------------------------------------------- few-shot examples


def test_every_logiclm_language_has_prompts_and_examples():
    from symbolkg.jobs.datasets.logiclm import SET_LANGUAGE

    assert set(SET_LANGUAGE.values()) == set(EXAMPLES)
    for language in EXAMPLES:
        assert language in registry.LANGUAGES
        assert 1 <= len(EXAMPLES[language]) <= 2


def test_the_set_languages_name_real_datasets():
    from symbolkg.jobs.datasets.logiclm import SET_LANGUAGE
    from symbolkg.jobs.datasets.registry import dataset_names

    assert set(SET_LANGUAGE) <= set(dataset_names())


@pytest.mark.parametrize("language,index", ALL_EXAMPLES)
def test_example_program_solves_to_its_answer(language, index):
    example = EXAMPLES[language][index]
    outcome = registry.language_module(language).solve(example.program, Limits(timeout_s=10))
    assert outcome.error_message is None
    assert outcome.answer == example.solver_answer
    # The solver's answer is the example's option: a letter, or the option text for True/False/Unknown.
    texts = dict(prompts._parse_options(example.options))
    if language in ("logiclm-lp", "logiclm-fol"):
        expected_text = {"Unknown": ("Unknown", "Uncertain")}.get(outcome.answer, (outcome.answer,))
        assert texts[example.answer] in expected_text
    else:
        assert outcome.answer == example.answer


@pytest.mark.parametrize("language,index", ALL_EXAMPLES)
def test_example_program_is_extracted_unchanged_and_fits_its_regex(language, index):
    program = EXAMPLES[language][index].program
    assert extract_program(language, program) == program
    assert re.fullmatch(program_structured_output(language)["regex"], program)


@pytest.mark.parametrize("language,index", ALL_EXAMPLES)
def test_examples_are_not_copied_from_the_dev_sets(language, index):
    example = EXAMPLES[language][index]
    for dataset in PROGRAM_FILES[language]:
        for record in recorded(dataset):
            assert example.context[-60:] not in record["context"]
            assert example.program.splitlines()[-1] not in record["raw_logic_programs"][0]


# --------------------------------------------------------------------------- formulation / refine prompts

CONTEXT = "The cow is blue. Blue things are big."
QUESTION = "Is the following statement true, false, or unknown? The cow is big."


@pytest.mark.parametrize("language", LANGUAGES)
def test_formulation_prompt_carries_the_problem(language):
    messages = formulation_messages(language, CONTEXT, QUESTION, TF)
    roles = [role for role, _ in messages]
    assert roles[0] == "system" and roles[-1] == "user"
    assert roles[1:-1] == ["user", "assistant"] * len(EXAMPLES[language])
    last = messages[-1][1]
    assert CONTEXT in last and QUESTION in last and all(option in last for option in TF)
    assert "ONLY the program" in messages[0][1]
    # The examples' programs are the assistant turns, verbatim.
    assert [c for r, c in messages if r == "assistant"] == [ex.program for ex in EXAMPLES[language]]


@pytest.mark.parametrize("language", LANGUAGES)
def test_formulation_prompt_is_compact(language):
    # ~3.3 characters per token for this text (SmolLM2 tokenizer: 540-740 tokens per prefix).
    chars = sum(len(content) for _, content in formulation_messages(language, "", "", []))
    assert chars < 3000


def test_unknown_language_is_an_error():
    with pytest.raises(ValueError, match="prolog"):
        formulation_messages("prolog", CONTEXT, QUESTION, TF)
    assert program_structured_output("prolog") is None


def test_refine_prompt_continues_the_formulation_conversation_with_the_reply_and_the_error():
    program = "Predicates:\nBlue($x, bool)\nFacts:\nBlue(cow True)\nQuery:\nBig(cow, True)"
    messages = refine_messages(
        "logiclm-lp", CONTEXT, QUESTION, TF, program, "syntax", "expected an atom like Pred(Bob, True)", 4
    )
    # The formulation prompt word for word (the engine's prefix cache serves it), the reply, the error.
    assert messages[:-2] == formulation_messages("logiclm-lp", CONTEXT, QUESTION, TF)
    assert messages[-2] == ("assistant", program)
    role, body = messages[-1]
    assert role == "user"
    assert "Error (syntax) on line 4: expected an atom like Pred(Bob, True)" in body
    assert "Line 4: Blue(cow True)" in body
    assert "corrected full program" in body
    # the model's reply as it came (fences, prose) is the assistant turn; lines count in the program
    reply = "Here it is:\n```\n" + program + "\n```"
    messages = refine_messages("logiclm-lp", CONTEXT, QUESTION, TF, program, "syntax", "bad", 4, reply=reply)
    assert messages[-2] == ("assistant", reply) and "Line 4: Blue(cow True)" in messages[-1][1]


def test_refine_prompt_for_no_answer_and_missing_line():
    messages = refine_messages(
        "logiclm-csp",
        CONTEXT,
        QUESTION,
        TF,
        "Variables:\na [IN] [1, 2]",
        "no_answer",
        "options A and B are both entailed",
        None,
    )
    body = messages[-1][1]
    assert "does not give exactly one answer" in body
    assert "Error (no_answer): options A and B are both entailed" in body
    # A line number past the end of the program is reported but not quoted.
    body = refine_messages("logiclm-fol", CONTEXT, QUESTION, TF, "Premises:", "syntax", "bad", 9)[-1][1]
    assert "on line 9: bad" in body and "Line 9:" not in body
    # A huge solver message (a model, a derivation) is cut.
    body = refine_messages("logiclm-smt", CONTEXT, QUESTION, TF, "# Options", "no_answer", "x" * 50_000, None)[-1][1]
    assert len(body) < prompts.MAX_ERROR_CHARS + 2000 and "x ..." in body


# --------------------------------------------------------------------------- extract_program

LP = (
    "Predicates:\nBlue($x, bool)\nFacts:\nBlue(cow, True)\nRules:\nBlue($x, True) >>> Big($x, True)\nQuery:\n"
    "Big(cow, True)"
)


@pytest.mark.parametrize(
    "completion",
    [
        LP,
        f"\n{LP}\n\n",
        f"```\n{LP}\n```",
        f"Here is the logic program:\n\n```prolog\n{LP}\n```\n\nThe query asks whether the cow is big.",
        f"Sure!\n{LP}\n\nExplanation: the cow is blue, so it is big.",
        f"Sure!\n{LP}\nThis program answers the question.",
        f"```\n{LP}",  # unterminated fence (cut off at max_tokens)
        f"```text\nnot this one\n```\n```\n{LP}\n```",
    ],
)
def test_extract_program_strips_fences_and_prose(completion):
    assert extract_program("logiclm-lp", completion) == LP


def test_extract_program_normalises_markdown_headers_and_line_numbers():
    text = (
        "**Predicates:**\nBlue($x, bool)\n## Facts:\nBlue(cow, True)\n### Rules\n**Rules:**\n"
        "Blue($x, True) >>> Big($x, True)\n**Query:** Big(cow, True)"
    )
    out = extract_program("logiclm-lp", text)
    assert out.splitlines()[0] == "Predicates:" and out.endswith("Query:\nBig(cow, True)")
    assert registry.parse("logiclm-lp", out).query.predicate == "Big"
    # Prose that merely starts with a section name is not a header.
    assert extract_program("logiclm-lp", "Predicates and facts follow: none.\n" + LP) == LP
    csp = extract_program("logiclm-csp", "Variables: a [IN] [1, 2]\nConstraints:\na == 1\nQuery: A) a == 1")
    assert csp == "Variables:\na [IN] [1, 2]\nConstraints:\na == 1\nQuery:\nA) a == 1"
    assert registry.parse("logiclm-csp", csp)
    numbered = "\n".join(f"{i:>2} | {line}" for i, line in enumerate(LP.splitlines(), start=1))
    assert extract_program("logiclm-lp", numbered) == LP


def test_extract_program_other_languages():
    fol = (
        "Predicates:\nDog(x) ::: x is a dog.\nPremises:\nDog(rex) ::: Rex is a dog.\nConclusion:\n"
        "Dog(rex) ::: Rex is a dog."
    )
    assert extract_program("logiclm-fol", f"**Premises** first:\n```\n{fol}\n```\nNote: trivially true.") == fol
    assert extract_program("logiclm-fol", f"{fol}\n\nThis conclusion follows.") == fol
    csp = "Domain:\n1: left\nVariables:\na [IN] [1, 2]\nConstraints:\na == 1\nQuery:\nA) a == 1\nB) a == 2"
    assert extract_program("logiclm-csp", f"The program:\n{csp}\nSo the answer is A.") == csp
    smt = EXAMPLES["logiclm-smt"][0].program
    assert extract_program("logiclm-smt", f"Here you go.\n```python\n{smt}\n```\nThe answer is (D).") == smt
    assert extract_program("logiclm-smt", f"{smt}\nThis encodes the puzzle.") == smt


def test_extract_program_without_a_program_returns_the_text():
    assert extract_program("logiclm-lp", "") == ""
    assert extract_program("logiclm-lp", "  I cannot do that.  ") == "I cannot do that."
    assert extract_program("logiclm-fol", "```\nfoo\n```") == "foo"


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(LANGUAGES), st.text())
def test_extract_program_never_raises(language, text):
    assert isinstance(extract_program(language, text), str)


@pytest.mark.parametrize("language", LANGUAGES)
def test_extract_program_keeps_recorded_programs(language):
    """Every recorded GPT-4 program comes out unchanged, also from inside prose and fences."""
    for dataset in PROGRAM_FILES[language]:
        for record in recorded(dataset):
            text = record["raw_logic_programs"][0]
            assert extract_program(language, text) == text.strip(), record["id"]
            wrapped = f"Sure! Here is the program:\n```python\n{text}\n```\nThis encodes the premises."
            assert extract_program(language, wrapped) == text.strip(), record["id"]


# --------------------------------------------------------------------------- structured regexes


@pytest.mark.parametrize("language", LANGUAGES)
def test_program_regex_matches_every_recorded_program_that_parses(language):
    regex = re.compile(program_structured_output(language)["regex"])
    checked = 0
    for dataset in PROGRAM_FILES[language]:
        for record in recorded(dataset):
            text = record["raw_logic_programs"][0]
            try:
                registry.parse(language, text)
            except ProgramError:
                continue
            assert regex.fullmatch(text), record["id"]
            checked += 1
    assert checked > 100


def test_lp_regex_matches_every_recorded_lp_program():
    regex = re.compile(program_structured_output("logiclm-lp")["regex"])
    for dataset in PROGRAM_FILES["logiclm-lp"]:
        for record in recorded(dataset):
            assert regex.fullmatch(record["raw_logic_programs"][0]), record["id"]


@pytest.mark.parametrize(
    "bad",
    [
        "Here is the program:\n" + LP,  # leading prose
        f"```\n{LP}\n```",  # fences
        LP + "\nThis program checks the cow.",  # trailing prose
        LP.replace("Query:\nBig(cow, True)", "Query:"),  # no query
        LP + "\nBig(bull, True)",  # two queries
        LP.replace("Big(cow, True)", "Big($x, True)"),  # variable in the query
        LP.replace("Blue(cow, True)", "Blue(cow)"),  # no truth value
        LP.replace("Blue(cow, True)", "Blue(True)"),  # no argument
        LP.replace("Blue(cow, True)", "Blue(cow, true, maybe)"),
        LP.replace(" >>> ", " => "),
        LP.replace("Facts:", "Facts"),
        LP.replace("Rules:\n", ""),  # a section missing
        LP.replace("Blue(cow, True)", "Blue(cow,\u2028True)"),  # a line break str.splitlines() sees
        "Predicates:\nFacts:\nRules:\nQuery:\nThe cow is big.",
    ],
)
def test_lp_regex_rejects_malformed_programs(bad):
    assert not re.fullmatch(program_structured_output("logiclm-lp")["regex"], bad)


@pytest.mark.parametrize(
    "language,bad",
    [
        ("logiclm-fol", "Predicates:\nDog(x)\nPremises:\nDog(rex)\nConclusion:\nDog(rex)\nDog(max)"),
        ("logiclm-fol", "Sure:\nPredicates:\nDog(x)\nPremises:\nDog(rex)\nConclusion:\nDog(rex)"),
        ("logiclm-csp", "Variables:\na [IN] [1, 2]\nConstraints:\na == 1\nQuery:\na == 1"),
        ("logiclm-csp", "Variables:\na [IN] [1, 2]\nConstraints:\na == 1\nQuery:\nA) a == 1\nSo A."),
        ("logiclm-smt", "# Declarations\nx = EnumSort([a, b])\n# Constraints\nTrue\n# Options\nis_sat(True)"),
        ("logiclm-smt", "# Declarations\nx = EnumSort([a, b])\n# Options\nis_sat(True) ::: (A)"),
    ],
)
def test_skeleton_regexes_reject_malformed_programs(language, bad):
    assert not re.fullmatch(program_structured_output(language)["regex"], bad)


# Characters a negated class may draw from: ASCII, some Unicode, and the extra line breaks.
_POOL = [chr(i) for i in range(32, 127)] + list("\n\t停∀é\x85\u2028\x1c")


def sample_regex(regex: str, rng: random.Random) -> str:
    """A random string matching ``regex`` (the subset our structured-decoding regexes use)."""
    from re import _constants as c
    from re import _parser

    def member(items, ch: str) -> bool:
        found = any(
            (op is c.LITERAL and arg == ord(ch)) or (op is c.RANGE and arg[0] <= ord(ch) <= arg[1]) for op, arg in items
        )
        return found != (items[0][0] is c.NEGATE)

    def gen(tokens) -> str:
        out = []
        for op, arg in tokens:
            if op is c.LITERAL:
                out.append(chr(arg))
            elif op is c.NOT_LITERAL:
                out.append(rng.choice([ch for ch in _POOL if ord(ch) != arg]))
            elif op is c.IN:
                if id(arg) not in allowed:
                    allowed[id(arg)] = [ch for ch in _POOL if member(arg, ch)]
                out.append(rng.choice(allowed[id(arg)]))
            elif op is c.MAX_REPEAT:
                low, high, sub = arg
                out.extend(gen(sub) for _ in range(rng.randint(low, min(high, low + 4))))
            elif op is c.SUBPATTERN:
                out.append(gen(arg[3]))
            elif op is c.BRANCH:
                out.append(gen(rng.choice(arg[1])))
            else:
                raise NotImplementedError(op)
        return "".join(out)

    allowed: dict[int, list[str]] = {}
    return gen(_parser.parse(regex))


def test_every_program_the_lp_regex_admits_parses():
    rng = random.Random(7)
    kinds = Counter()
    for _ in range(250):
        text = sample_regex(lp_prompts.PROGRAM_REGEX, rng)
        assert re.fullmatch(lp_prompts.PROGRAM_REGEX, text)
        try:
            registry.parse("logiclm-lp", text)
            kinds["ok"] += 1
        except ProgramError as exc:  # arities are beyond a regex; nothing else may fail
            assert exc.kind == ErrorKind.TYPE, (text, exc)
            kinds[exc.kind] += 1
    assert kinds["ok"] > 50


def test_lp_regex_keeps_bool_out_of_atoms_and_admits_the_recorded_constants():
    program = "Predicates:\nRed($x, bool)\nFacts:\n{fact}\nRules:\nQuery:\nRed(Bob, True)\n"
    # the degenerate copy of a declaration that SmolLM2-135M writes
    assert not re.fullmatch(lp_prompts.PROGRAM_REGEX, program.format(fact="Red($x, bool, True)"))
    assert not re.fullmatch(lp_prompts.PROGRAM_REGEX, program.format(fact="Red(bool, True)"))
    for const in ("Bob", "squirrel", "b", "bo", "boo", "boolean", "Bool", "the_cat", "x1"):
        assert re.fullmatch(lp_prompts.PROGRAM_REGEX, program.format(fact=f"Red({const}, True)")), const


@pytest.mark.slow
@settings(max_examples=75, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.from_regex(lp_prompts.PROGRAM_REGEX, fullmatch=True))
def test_every_program_the_lp_regex_admits_parses_hypothesis(text):
    try:
        registry.parse("logiclm-lp", text)
    except ProgramError as exc:
        assert exc.kind == ErrorKind.TYPE, exc


def test_regexes_compile_in_xgrammar_as_in_python():
    xgrammar = pytest.importorskip("xgrammar")
    testing = pytest.importorskip("xgrammar.testing")
    regexes = [program_structured_output(lang)["regex"] for lang in LANGUAGES]
    regexes.append(answer_structured_output(TF, cot=True)["regex"])
    samples = [ex.program for exs in EXAMPLES.values() for ex in exs] + [LP, "garbage", "Reason.\nThe answer is C."]
    rng = random.Random(3)
    for regex in regexes:
        grammar = xgrammar.Grammar.from_regex(regex)
        own = [sample_regex(regex, rng) for _ in range(10)]
        for sample in samples + own + [s.replace("\n", "\u2028", 1) for s in own]:
            assert testing._is_grammar_accept_string(grammar, sample) == bool(re.fullmatch(regex, sample)), (
                regex,
                sample,
            )


# --------------------------------------------------------------------------- direct / CoT


def test_direct_and_cot_prompts_carry_the_problem():
    for messages in (direct_messages(CONTEXT, QUESTION, TF), cot_messages(CONTEXT, QUESTION, TF)):
        assert messages[0][0] == "system" and messages[-1][0] == "user"
        assert CONTEXT in messages[-1][1] and QUESTION in messages[-1][1] and "C) Unknown" in messages[-1][1]
    cot = cot_messages(CONTEXT, QUESTION, TF)
    assert "The answer is" in cot[0][1]
    # The worked example's answer is read back by extract_answer and fits the CoT regex.
    example = cot[2][1]
    assert extract_answer(example, TF) == "B"
    assert re.fullmatch(answer_structured_output(TF, cot=True)["regex"], example)


def test_answer_structured_output():
    assert answer_structured_output(TF, cot=False) == {"choice": ["A", "B", "C"]}
    assert answer_structured_output(["A) True", "B) False"], cot=False) == {"choice": ["A", "B"]}
    regex = answer_structured_output(TF, cot=True)["regex"]
    assert re.fullmatch(regex, "The answer is C.")
    assert re.fullmatch(regex, "Blue things are big.\nThe cow is blue, so it is big.\nThe answer is A.")
    assert not re.fullmatch(regex, "The answer is D.")
    assert not re.fullmatch(regex, "The answer is A. Or maybe not.")
    assert not re.fullmatch(regex, "I think A.")
    assert answer_structured_output([], cot=True) is None


FIVE = [
    "A) The fig is first.",
    "B) The plum is first.",
    "C) The pear is first.",
    "D) The kiwi is first.",
    "E) The lime is first.",
]


@pytest.mark.parametrize(
    "text,options,expected",
    [
        ("B", TF, "B"),
        ("B)", TF, "B"),
        ("(B)", TF, "B"),
        (" B. False", TF, "B"),
        ("**B**", TF, "B"),
        ("The answer is B", TF, "B"),
        ("The answer is (C).", TF, "C"),
        ("Answer: A", TF, "A"),
        ("**Answer:** B", TF, "B"),
        ("answer: a) true", TF, "A"),  # a lowercase letter is not an option letter, the text is
        ("The correct option is: B) False", TF, "B"),
        ("Final answer: \\boxed{C}", TF, "C"),
        ("The cow is blue.\nSo it is big.\nThe answer is A.", TF, "A"),
        ("True", TF, "A"),
        ("False.", TF, "B"),
        ("Unknown", ["A) True", "B) False", "C) Uncertain"], "C"),
        ("The answer is uncertain.", TF, "C"),
        ("The answer is The plum is first.", FIVE, "B"),
        ("Let me think.\nThe plum must be first.\nE", FIVE, "E"),
        ("I pick (D) here.", FIVE, "D"),
        # ambiguous or absent -> None
        ("The answer is A or B.", TF, None),
        ("The answer is A.\nThe answer is B.", TF, None),
        ("A and C", TF, None),
        ("(A) or (B)", TF, None),
        ("The answer is D.", TF, None),  # not an option
        ("I don't know.", TF, None),
        ("", TF, None),
        ("A dog is not a cat.", TF, None),
        ("The statement is true, false or unknown.", TF, None),
    ],
)
def test_extract_answer(text, options, expected):
    assert extract_answer(text, options) == expected


def test_extract_answer_unlabelled_options_are_lettered_by_position():
    assert extract_answer("The answer is B.", ["yes", "no"]) == "B"
    assert extract_answer("no", ["yes", "no"]) == "B"
