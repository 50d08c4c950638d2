"""The PARARULE-Plus translator, its encoding, and the formalizer agent's prompt and parser.

Programs are run on the real swipl (solvers/prolog/language.py's harness), so the encoding's meaning is
checked, not only its text: the initial-facts reading of body negation, the closure reading of
the question, tabling on recursive rules, and the plain SLDNF alternative that differs or loops.
"""

from __future__ import annotations

import json

import pytest

from symbolkg.solvers.outcomes import Limits
from symbolkg.solvers.prolog import language as prolog
from symbolkg.solvers.prolog import pararule as P
from tests.conftest import DATA

LIMITS = Limits(timeout_s=10, max_depth=100_000_000, max_answers=1)
FILES = [DATA / "pararule_plus" / f"PARARULE_Plus_Depth{d}_shuffled_test.jsonl" for d in (2, 3, 4)]


def verdict(program: str, goal: str) -> str:
    """true / false / loops of goal on program (loops: it ran out of inferences, see sldnf_probe)."""
    result = prolog.run_query(program, P.sldnf_probe(goal), LIMITS)
    assert result.status == "ok", (result.status, result.message, program)
    if not result.solutions:
        return "false"
    return "loops" if dict(result.solutions[0].bindings)["R"] == P.LOOP_MARK else "true"


def ask(context: str, question: str, *, sldnf: bool = False) -> str:
    t = P.translate(context, question)
    return verdict(t.sldnf_program, t.sldnf_goal) if sldnf else verdict(t.program, t.goal)


# -- every template ---------------------------------------------------------------------------------

PEOPLE = (
    "Alan is big. Alan is kind. Bob is thin. All big people are strong. Kind people are nice. "
    "If someone is thin then they are short. If someone is strong and nice then they are wealthy. "
    "If someone is big and not quiet then they are bad. If someone is not rough then they are dull."
)
ANIMALS = (
    "The bald eagle is heavy. The wolf sees the mouse. The mouse is small. All heavy animals are big. "
    "Small animals are cute. If something sees the mouse then it is fierce. "
    "If something is not kind then it attacks the dog. If something is fierce then it chases the rabbit. "
    "If something is cute and small then it is lovely. If something is big and not lovely then it is awful."
)


def test_every_fact_and_rule_template_is_read():
    theory = P.parse_context(PEOPLE + " " + ANIMALS)
    facts = {f.atom for f in theory.facts}
    assert P.Atom("big", ("alan",)) in facts
    assert P.Atom("heavy", ("bald_eagle",)) in facts
    assert P.Atom("sees", ("wolf", "mouse")) in facts  # a binary relation
    rules = {r.sentence: r for r in theory.rules}
    X = P.VAR
    assert rules["All big people are strong"].body == (P.Literal(P.Atom("big", (X,))),)
    assert rules["Kind people are nice"].head == P.Atom("nice", (X,))
    assert rules["Small animals are cute"].body == (P.Literal(P.Atom("small", (X,))),)
    assert rules["If someone is big and not quiet then they are bad"].body == (
        P.Literal(P.Atom("big", (X,))),
        P.Literal(P.Atom("quiet", (X,)), negated=True),
    )
    assert rules["If someone is not rough then they are dull"].body == (P.Literal(P.Atom("rough", (X,)), True),)
    assert rules["If something sees the mouse then it is fierce"].body == (P.Literal(P.Atom("sees", (X, "mouse"))),)
    assert rules["If something is not kind then it attacks the dog"].head == P.Atom("attacks", (X, "dog"))
    assert rules["If something is fierce then it chases the rabbit"].head == P.Atom("chases", (X, "rabbit"))
    assert rules["If something is cute and small then it is lovely"].body == (
        P.Literal(P.Atom("cute", (X,))),
        P.Literal(P.Atom("small", (X,))),
    )
    assert theory.entities[:3] == ("alan", "bob", "bald_eagle")
    assert {"mouse", "dog", "rabbit"} <= set(theory.entities)  # objects of relations are individuals too


def test_questions_positive_negative_and_relations():
    assert P.parse_question("The bald eagle is not heavy.") == P.Literal(P.Atom("heavy", ("bald_eagle",)), True)
    assert P.parse_question("Anne is kind.") == P.Literal(P.Atom("kind", ("anne",)))
    assert P.parse_question("The wolf sees the mouse.") == P.Literal(P.Atom("sees", ("wolf", "mouse")))
    assert P.parse_question("The wolf does not chase the mouse.") == P.Literal(
        P.Atom("chases", ("wolf", "mouse")), True
    )
    assert P.goal_text(P.parse_question("The wolf is not big.")) == "\\+ big(wolf)"


@pytest.mark.parametrize(
    "text",
    [
        "Anne might be kind.",
        "Every kind person is nice.",
        "If someone is kind or big then they are nice.",
        "Anne is kind",
    ],
)
def test_an_unreadable_sentence_is_a_clear_error(text):
    with pytest.raises(P.TranslationError) as info:
        P.parse_context("Bob is big. " + text)
    assert text.rstrip(".") in str(info.value) or "end with" in str(info.value)


def test_an_unreadable_question_is_a_clear_error():
    with pytest.raises(P.TranslationError, match="Is Anne kind"):
        P.translate("Anne is kind.", "Is Anne kind?")


# -- the meaning, on swipl ----------------------------------------------------------------------------


def test_rule_body_negation_reads_the_initial_facts_and_the_question_the_closure():
    # rough is derived for Anne, but it was not stated: "not rough" in a rule body still holds
    ctx = "Anne is big. If someone is big then they are rough. If someone is not rough then they are smart."
    assert ask(ctx, "Anne is rough.") == "true"
    assert ask(ctx, "Anne is smart.") == "true"
    assert ask(ctx, "Anne is not rough.") == "false"  # the question's negation sees the derived fact
    assert ask(ctx, "Anne is smart.", sldnf=True) == "false"  # plain SLDNF answers the other way


def test_relations_and_negated_relations_run():
    ctx = (
        "The wolf sees the mouse. The mouse is small. If something sees the mouse then it is fierce. "
        "If something is not small then it chases the mouse. If something chases the mouse then it is big."
    )
    assert ask(ctx, "The wolf is fierce.") == "true"
    assert ask(ctx, "The wolf chases the mouse.") == "true"
    assert ask(ctx, "The mouse does not chase the mouse.") == "true"
    assert ask(ctx, "The wolf is big.") == "true"
    assert ask(ctx, "The mouse is big.") == "false"
    assert ask(ctx, "The wolf is lazy.") == "false"  # a predicate nobody defines fails, no existence_error


def test_recursive_rules_are_tabled_and_terminate_where_plain_sldnf_loops():
    ctx = "The bear is tired. If something is big then it is heavy. If something is heavy then it is big."
    t = P.translate(ctx, "The bear is not big.")
    assert ":- table big/1, heavy/1." in t.program
    assert ":- table" not in t.sldnf_program
    assert verdict(t.program, t.goal) == "true"
    assert verdict(t.sldnf_program, t.sldnf_goal) == "loops"
    # a depth limit would not tell: the cut branch fails inside \+, and the loop reads as "true"
    cut = prolog.run_query(t.sldnf_program, t.sldnf_goal, Limits(timeout_s=10, max_depth=2000, max_answers=1))
    assert cut.status == "ok" and cut.solutions


def test_no_tabling_without_recursion():
    assert ":- table" not in P.translate(PEOPLE, "Alan is strong.").program


def test_the_questions_of_a_context_share_one_program():
    a = P.translate(ANIMALS, "The wolf is fierce.")
    b = P.translate(ANIMALS, "The mouse is not lovely.")
    assert a.program == b.program and a.goal != b.goal
    c = P.translate(ANIMALS, "The tiger is awful.")  # names an individual the context does not
    assert "entity(tiger)." in c.program and c.program != a.program
    assert ask(ANIMALS, "The tiger is not awful.") == "true"


# -- prompt and parser ----------------------------------------------------------------------------------


def test_the_prompt_carries_context_and_statement_and_reads_back():
    pairs = P.formalize_messages("Anne is kind.\n  Bob is big.", "Anne is nice.")
    assert pairs[0][0] == "system" and "initially" in pairs[0][1] and "<goal_true>" in pairs[0][1]
    assert P.read_request(pairs[1][1]) == ("Anne is kind. Bob is big.", "Anne is nice.")
    with pytest.raises(ValueError):
        P.read_request("write a program")


def test_parse_response_reads_the_tags():
    form = P.parse_response("Sure.\n<prolog>\nkind(anne).\n</prolog>\n<goal_true>?- kind(anne).</goal_true>")
    assert form == P.Formalization("kind(anne).\n", "kind(anne)")
    fenced = P.parse_response("<prolog>```prolog\na.\n```</prolog><goal_true>\\+ a</goal_true>")
    assert fenced.program == "a.\n" and fenced.goal == "\\+ a"
    t = P.translate(PEOPLE, "Alan is not wealthy.")
    assert P.parse_response(P.render_response(t.program, t.goal)) == P.Formalization(t.program, t.goal)


@pytest.mark.parametrize(
    "text, why",
    [
        ("kind(anne).", "no <prolog>"),
        ("<prolog>a.</prolog>", "no <goal_true>"),
        ("<prolog></prolog><goal_true>a</goal_true>", "empty"),
        ("<prolog>a.</prolog><prolog>b.</prolog><goal_true>a</goal_true>", "2 <prolog> tags"),
        ("<prolog>a.</prolog><goal_true>a. halt</goal_true>", "more than one clause"),
    ],
)
def test_parse_response_refuses_malformed_answers(text, why):
    with pytest.raises(P.FormatError, match=why):
        P.parse_response(text)


def test_a_quoted_period_is_not_a_second_clause():
    assert P.parse_response("<prolog>a('x. y').</prolog><goal_true>a('x. y')</goal_true>").goal == "a('x. y')"


def test_repair_message_carries_the_structured_error():
    text = P.repair_message(
        "goal",
        {
            "kind": "existence_error",
            "message": "unknown procedure nice/1",
            "prolog_term": "error(existence_error(procedure,nice/1),nice/1)",
        },
    )
    assert "existence_error" in text and "nice/1" in text and "<prolog>" in text


# -- the dataset ----------------------------------------------------------------------------------------


@pytest.mark.skipif(not all(f.exists() for f in FILES), reason=f"PARARULE-Plus not found under {DATA}")
def test_every_context_and_question_of_depths_2_to_4_translates():
    contexts = questions = 0
    for path in FILES:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            theory = P.parse_context(record["context"])
            assert len(theory.facts) + len(theory.rules) == len(P.split_sentences(record["context"]))
            contexts += 1
            for q in record["questions"]:
                t = P.translate(record["context"], q["text"])
                assert t.goal.replace("\\+ ", "").split("(")[0].isidentifier()
                questions += 1
    assert (contexts, questions) == (900, 8106)


def test_the_module_examples_run():
    import doctest

    assert doctest.testmod(P).failed == 0
