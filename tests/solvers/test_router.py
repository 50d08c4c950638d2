"""The feature router: option kinds, text features, every rule of the decision list."""

from __future__ import annotations

import pytest

from symbolkg.solvers.router import RouteFeatures, options_kind, route, text_features


@pytest.mark.parametrize(
    "options, kind",
    [
        (("A) True", "B) False"), "true_false"),
        (("A) True", "B) False", "C) Unknown"), "true_false_unknown"),
        (("A) True", "B) False", "C) Uncertain."), "true_false_unknown"),
        (("A) The owl is second from the left.", "B) The owl is last."), "choices"),
        (("A) True", "B) 7"), "choices"),
        ((), "none"),
    ],
)
def test_options_kind(options, kind):
    assert options_kind(options) == kind


def features(**kw) -> RouteFeatures:
    base = dict(
        options_kind="true_false",
        n_options=2,
        ordering_words=0,
        assignment_question=False,
        numbers=0,
        quantifiers=0,
        disjunctive_sentences=0,
        sentences=4,
    )
    return RouteFeatures(**{**base, **kw})


@pytest.mark.parametrize(
    "kw, solver, rule",
    [
        (dict(graph_constraints={"Ordering": 2, "Generic": 5}), "z3", "lkg_constraints"),
        (dict(graph_constraints={"Ordering": 1, "Generic": 5}, quantifiers=3), "prolog", "closed_world_horn"),
        (dict(options_kind="choices", n_options=5, assignment_question=True), "z3", "choice_assignment"),
        (dict(options_kind="choices", n_options=5, ordering_words=3), "z3", "choice_assignment"),
        (dict(options_kind="true_false_unknown", n_options=3, quantifiers=9), "prover9", "open_world"),
        (dict(options_kind="none", n_options=0, ordering_words=5), "z3", "ordering"),
        (dict(disjunctive_sentences=1, quantifiers=2), "prover9", "disjunctive"),
        (dict(quantifiers=2), "prolog", "closed_world_horn"),
        (dict(graph_rules=3), "prolog", "closed_world_horn"),
        (dict(options_kind="choices", n_options=4, numbers=6), "z3", "arithmetic"),
        (dict(options_kind="choices", n_options=4), "prover9", "default"),
    ],
)
def test_decision_list(kw, solver, rule):
    r = route(features(**kw))
    assert (r.solver, r.rule) == (solver, rule) and r.reasons and r.reasons[0]


def test_forced_route_and_bad_solver():
    r = route(features(options_kind="choices", assignment_question=True), force="prolog")
    assert (r.solver, r.rule, r.reasons) == ("prolog", "forced", ("forced to prolog",))
    with pytest.raises(ValueError, match="unknown solver"):
        route(features(), force="vampire")  # type: ignore[arg-type]


def test_text_features_and_the_option_ablation():
    context = (
        "Either Ann or Bob is first. Some cats are black. Carl finished before Dana. "
        "If someone is kind then they are nice. There are 3 slots."
    )
    f = text_features(context, "Which one of the following could be true?", ("A) Ann is first", "B) Bob is last"))
    assert f.options_kind == "choices" and f.n_options == 2 and f.assignment_question
    assert f.sentences == 5 and f.disjunctive_sentences == 2  # "either/or" and "some", not "someone"
    assert f.ordering_words >= 5 and f.numbers >= 1 and f.quantifiers >= 2 and not f.has_graph
    hidden = text_features(context, "q", ("A) Ann is first",), use_options=False)
    assert hidden.options_kind == "none" and hidden.n_options == 0 and hidden.ordering_words < f.ordering_words
    with_graph = f.with_graph({"AllDifferent": 2}, rules=1, relations=4)
    assert with_graph.has_graph and with_graph.typed_constraints == 2 and with_graph.graph_relations == 4


def test_llm_vote_prompt_parse_and_combination():
    from symbolkg.solvers.router import combine_vote, parse_vote, vote_messages

    messages = vote_messages("x" * 3000, "Is it true?", ("A) True", "B) False"))
    assert messages[0][0] == "system" and messages[1][1].count("x") == 2000 and "A) True" in messages[1][1]
    assert parse_vote("Prolog.") == "prolog" and parse_vote("I'd use Z3 here") == "z3" and parse_vote("vampire") is None
    weak = route(features(options_kind="choices", n_options=4))  # default -> prover9
    assert combine_vote(weak, "z3").solver == "z3" and combine_vote(weak, "z3").rule == "llm_vote"
    strong = route(features(options_kind="true_false_unknown", n_options=3))
    kept = combine_vote(strong, "prolog")
    assert (kept.solver, kept.rule) == ("prover9", "open_world") and kept.reasons[-1] == "LLM vote: prolog"
    assert combine_vote(strong, None).reasons[-1].startswith("LLM vote: none")


def test_target_for_maps_each_route_to_a_prompt_language_and_a_runner():
    from symbolkg.solvers.registry import LANGUAGES
    from symbolkg.solvers.router import target_for

    prolog = target_for("prolog", "Is the following statement true or false? Fae is opaque.")
    assert (prolog.language, prolog.run_as) == ("logiclm-lp", "logiclm-lp-swipl")
    assert target_for("prover9", "True, false, or uncertain?").run_as == "logiclm-fol"
    assert target_for("z3", "Which of the following is true?").language == "logiclm-csp"
    for question in (
        "Which one of the following could be the order?",
        "Which one of the following CANNOT be true?",
        "What is the maximum number of members on the committee?",
        "If Karl sits across from Harriet, then which one of the following must be true?",
    ):
        smt = target_for("z3", question)
        assert smt.language == smt.run_as == "logiclm-smt" and smt.reason, question
    for solver in ("z3", "prover9", "prolog"):
        assert target_for(solver, "q").run_as in LANGUAGES
    with pytest.raises(ValueError, match="unknown solver"):
        target_for("vampire", "q")  # type: ignore[arg-type]


def test_the_prolog_route_runs_lp_programs_in_swi_prolog():
    from symbolkg.solvers.outcomes import Limits, SolveRequest
    from symbolkg.solvers.registry import run

    program = (
        "Predicates:\nCat($x, bool)\nPet($x, bool)\nFacts:\nCat(Tom, True)\nRules:\n"
        "Cat($x, True) >>> Pet($x, True)\nQuery:\nPet(Tom, True)"
    )
    outcome = run(SolveRequest("p", "logiclm-lp-swipl", program, Limits(timeout_s=20)))
    assert (outcome.status.value, outcome.answer, outcome.backend) == ("proved", "True", "swipl")
    bad = run(SolveRequest("p", "logiclm-lp-swipl", "Query:\nPet(Tom, bool)", Limits(timeout_s=20)))
    assert not bad.executed and bad.error_kind == "syntax" and bad.error_line == 2
