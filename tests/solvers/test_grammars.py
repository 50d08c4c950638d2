"""The whole-program grammars (solvers/<family>/grammar.py), checked with xgrammar itself.

vLLM enforces a grammar as xgrammar compiles and matches it, so every check here runs xgrammar's
own matcher on the grammar text (tokenizer-free: a compiler over an empty vocabulary matches the
program's bytes) rather than a reading of the grammar of our own. The recorded programs of the
three Logic-LM models are the main evidence: every one our parser accepts must be admitted.
"""

from __future__ import annotations

import functools
import json
import re

import pytest

from symbolkg.solvers import prompts, registry
from symbolkg.solvers.outcomes import ProgramError
from tests.conftest import FIXTURES, data_or_skip

xgr = pytest.importorskip("xgrammar")

LANGUAGES = ("logiclm-lp", "logiclm-fol", "logiclm-csp", "logiclm-smt")
SETS = {
    "ProntoQA": "logiclm-lp",
    "ProofWriter": "logiclm-lp",
    "FOLIO": "logiclm-fol",
    "LogicalDeduction": "logiclm-csp",
    "AR-LSAT": "logiclm-smt",
}
MODELS = ("gpt-4", "gpt-3.5-turbo", "text-davinci-003")
FIXTURE = json.loads((FIXTURES / "grammars" / "programs.json").read_text())


@functools.cache
def compiled(language: str):
    return xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False).compile_grammar(
        prompts.program_grammar(language)
    )


def admits(language: str, text: str, *, whole: bool = True) -> bool:
    """Whether the grammar takes ``text``; ``whole``: as a finished program (else as a beginning)."""
    matcher = xgr.GrammarMatcher(compiled(language), terminate_without_stop_token=True)
    return matcher.accept_string(text) and (matcher.is_terminated() or not whole)


def parses(language: str, text: str) -> bool:
    try:
        registry.parse(language, text)  # what the solver worker does with the program text
    except ProgramError:
        return False
    return True


# --------------------------------------------------------------------------- the grammar texts


@pytest.mark.parametrize("language", LANGUAGES)
def test_grammar_is_gbnf_that_vllm_sends_to_xgrammar_as_is(language):
    text = prompts.program_grammar(language)
    # vLLM reads a grammar with a '::=' line as EBNF (grammar_is_likely_lark is False), else converts it from Lark
    assert text.splitlines()[0].startswith("root ::= ")
    xgr.Grammar.from_ebnf(text)  # what vLLM's request validation runs


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_repetition_is_bounded(language):
    """No '*', '+' or '{n,}' outside literals and character classes: every path reaches the end."""
    text = prompts.program_grammar(language)
    operators = re.sub(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]', "", text)
    assert not re.search(r"[*+]|\{\d+,\}", operators), language


def test_structured_output_offers_both_constraints():
    for language in LANGUAGES:
        assert prompts.program_structured_output(language, "full") == {"grammar": prompts.program_grammar(language)}
        assert set(prompts.program_structured_output(language)) == {"regex"}  # the default is unchanged
    assert prompts.program_structured_output("prolog", "full") is None
    with pytest.raises(ValueError, match="skeleton, full"):
        prompts.program_structured_output("logiclm-lp", "whole")


# --------------------------------------------------------------------------- what the grammars admit


@pytest.mark.parametrize("language, name", [(lang, name) for lang in LANGUAGES for name in FIXTURE[lang]])
def test_fixture_programs_parse_and_are_admitted(language, name):
    text = FIXTURE[language][name]
    assert parses(language, text)
    assert admits(language, text)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_prompts_few_shot_programs_are_admitted(language):
    for example in prompts.EXAMPLES[language]:
        assert admits(language, example.program)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_program_cut_off_is_a_beginning_but_not_a_program(language):
    """Cut inside an argument list or right after the last header: what a token budget leaves."""
    text = next(iter(FIXTURE[language].values()))
    opens = [i + 1 for i, ch in enumerate(text) if ch == "("]
    last_header = {
        "logiclm-lp": "Query:\n",
        "logiclm-fol": "Conclusion:\n",
        "logiclm-csp": "Query:\n",
        "logiclm-smt": "# Options\n",
    }[language]
    for cut in (opens[0], opens[len(opens) // 2], opens[-1], text.index(last_header) + len(last_header)):
        assert admits(language, text[:cut], whole=False)
        assert not admits(language, text[:cut]), text[:cut]


def _surplus_paren_repair_admits(language: str, text: str) -> bool:
    """Whether deleting one ')' of a program with more ')' than '(' gives an admitted program.

    The FOL parser drops one surplus ')' when every placement of its '(' reads the same; the
    grammar keeps parentheses balanced (a constrained model is not taught to write them so).
    """
    if language != "logiclm-fol" or text.count(")") <= text.count("("):
        return False
    return any(admits(language, text[:i] + text[i + 1 :]) for i, ch in enumerate(text) if ch == ")")


@pytest.mark.parametrize("dataset, model", [(d, m) for d in SETS for m in MODELS])
def test_every_recorded_program_the_parser_accepts_is_admitted(dataset, model):
    language = SETS[dataset]
    records = json.loads(data_or_skip("logiclm", "programs", f"{dataset}_dev_{model}.json").read_text())
    accepted = admitted = repaired = 0
    for record in records:
        text = (record.get("raw_logic_programs") or [""])[0]
        if not parses(language, text):
            continue
        accepted += 1
        if admits(language, text):
            admitted += 1
        else:
            assert _surplus_paren_repair_admits(language, text), record["id"]
            repaired += 1
    print(
        f"{dataset}_dev_{model}: {len(records)} programs, parser accepts {accepted}, grammar admits {admitted}"
        + (f" (+{repaired} after the parser's surplus-')' repair)" if repaired else "")
    )
    assert accepted > 0.3 * len(records)


# --------------------------------------------------------------------------- what they refuse

LP = FIXTURE["logiclm-lp"]["canonical"]
FOL = FIXTURE["logiclm-fol"]["canonical"]
CSP = FIXTURE["logiclm-csp"]["canonical"]
SMT = FIXTURE["logiclm-smt"]["canonical"]
LP_RULE = "Cold($x, True) && Likes($x, Anne, False) >>> Cold(Anne, True)"


@pytest.mark.parametrize(
    "language, text",
    [
        # a repetition past its bound: nine conjuncts, and the loop a 1.5B model fell into (cut off by its budget)
        ("logiclm-lp", LP.replace(LP_RULE, " && ".join(["Cold($x, True)"] * 9) + " >>> Cold(Anne, True)")),
        ("logiclm-lp", LP.replace(LP_RULE, "Bright($x, True) && " * 60)),
        # a line in the wrong section
        ("logiclm-lp", LP.replace("Predicates:\n", f"Predicates:\n{LP_RULE}\n")),
        ("logiclm-lp", LP + "\nCold(Bob, True)"),  # a second query
        ("logiclm-fol", FOL.replace("Predicates:\n", "Predicates:\n∀x (Dog(x) → Animal(x))\n")),
        ("logiclm-fol", FOL + "\nDog(rex)"),  # a second conclusion
        ("logiclm-csp", CSP.replace("Variables:\n", "Variables:\nred_book < blue_book\n")),
        ("logiclm-smt", SMT.replace("# Constraints\n", "# Constraints\nweeks = EnumSort([1, 2])\n")),
        ("logiclm-smt", SMT.replace("# Options\n", "# Options\nDistinct([k:kids], visits(k))\n")),
        # what the parser refuses
        ("logiclm-lp", LP.replace("Query:\nCold(Anne, True)", "Query:\nCold($x, True)")),  # a variable in the query
        ("logiclm-lp", LP.replace("Cold(Bob, True)", "Cold(Bob, bool)")),
        ("logiclm-lp", LP.replace("Cold(Bob, True)", "Cold(Bob, bool_bool)")),  # what a 135M model wrote next
        ("logiclm-lp", LP.replace("Cold(Bob, True)", "Cold(Bob, bool_x bool_x)")),  # and then
        ("logiclm-lp", LP.replace("Cold(Bob, True)", "Cold(True)")),
        ("logiclm-lp", LP.replace("Cold(Bob, True)", "Bob is cold.")),
        ("logiclm-fol", FOL.replace("∀x (Dog(x) → Animal(x))", "∀x (Dog(x) → Animal(x)))")),
        ("logiclm-fol", FOL.replace("Animal(rex) :::", "(" * 12 + "Animal(rex)" + ")" * 12 + " :::")),  # too deep
        ("logiclm-csp", CSP.replace("C) white_book == 1", "white_book == 1")),  # an option without its letter
        ("logiclm-csp", CSP.replace("C) white_book == 1", "H) white_book == 1")),
        ("logiclm-smt", SMT.replace(" ::: (B)", "")),  # an option without its label
        # what a constrained model must not add around the program
        ("logiclm-lp", "Here is the program:\n" + LP),
        ("logiclm-fol", f"```\n{FOL}\n```"),
        ("logiclm-csp", CSP + "\n\nSo the answer is A."),
        # spellings the parser reads but the grammar leaves out, to keep a model to one
        ("logiclm-lp", LP.replace(" >>> ", " => ")),
        ("logiclm-fol", FOL.replace("→", "->")),
        ("logiclm-csp", CSP.replace("Query:", "**Query:**")),
    ],
)
def test_the_grammar_refuses(language, text):
    assert not admits(language, text)
