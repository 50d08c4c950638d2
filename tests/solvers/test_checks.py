"""Formalization checks (symbolkg.solvers.checks): each check fires on the mistake it names, leaves
correct programs alone, and its correction is what the text says (checked by solving it)."""

from __future__ import annotations

from symbolkg.jobs.core.answers import interpret
from symbolkg.jobs.core.rows import Problem
from symbolkg.solvers.checks import check_program, correct_program, refine_message
from symbolkg.solvers.csp import engine as csp
from symbolkg.solvers.findings import Finding
from symbolkg.solvers.fol import engine as fol_engine
from symbolkg.solvers.fol import syntax as fol
from symbolkg.solvers.lp import engine as lp
from symbolkg.solvers.outcomes import Limits

TF = ("A) True", "B) False")
TFU = ("A) True", "B) False", "C) Unknown")


def pq(statement: str, gold: str = "A", options: tuple[str, ...] = TF) -> Problem:
    return Problem("p", "test", "", f"Is the following statement true or false? {statement}", options, gold)


def lp_program(
    query: str,
    facts: str = "Tumpus(Max, True)",
    rules: str = "Tumpus($x, True) >>> Sour($x, False)",
    extra_decl: str = "",
) -> str:
    return (
        f"Predicates:\nTumpus($x, bool)\nSour($x, bool){extra_decl}\n\nFacts:\n{facts}\n\n"
        f"Rules:\n{rules}\n\nQuery:\n{query}"
    )


def checks_named(findings: list[Finding], name: str) -> list[Finding]:
    return [f for f in findings if f.check == name]


def answer(text: str, problem: Problem) -> str | None:
    return interpret(problem, lp.solve(text, Limits()).answer)


# --------------------------------------------------------------------------- query_polarity


def test_negated_query_for_a_positive_statement_is_flipped_and_then_answers_right():
    problem = pq("Max is sour.", gold="B")  # Max is a tumpus, tumpuses are not sour
    text = lp_program("Sour(Max, False) ::: Max is not sour.")
    assert answer(text, problem) == "A"  # the wrong answer the negated query gives
    [finding] = checks_named(check_program("logiclm-lp", text, problem), "query_polarity")
    assert (
        finding.severity == "error"
        and finding.line == text.splitlines().index("Sour(Max, False) ::: Max is not sour.") + 1
    )
    assert "Sour(Max, True)" in finding.message and "Max is sour." in finding.message
    assert finding.correction is not None and lp.parse(finding.correction).query.value is True
    assert answer(finding.correction, problem) == "B"
    assert "::: Max is not sour." in finding.correction  # the comment is kept


def test_negative_statement_with_a_negative_query_is_correct_and_left_alone():
    text = lp_program("Sour(Max, False)")
    assert checks_named(check_program("logiclm-lp", text, pq("Max is not sour.")), "query_polarity") == []


def test_negative_statement_with_a_positive_query_is_flipped():
    text = lp_program("Sour(Max, True)")
    [finding] = checks_named(check_program("logiclm-lp", text, pq("Max is not sour.")), "query_polarity")
    assert lp.parse(finding.correction).query == lp.parse(lp_program("Sour(Max, False)")).query


def test_binary_atom_with_a_contracted_negation():
    text = "Predicates:\nEats($x, $y, bool)\nFacts:\nEats(bear, cow, False)\nQuery:\nEats(bear, cow, True)"
    problem = pq("The bear doesn't eat the cow.", options=TFU)
    [finding] = check_program("logiclm-lp", text, problem)
    assert finding.check == "query_polarity" and lp.parse(finding.correction).query.value is False


def test_inline_query_header_and_bang_negation_are_rewritten_in_place():
    text = lp_program(
        "x",
    ).replace("Query:\nx", "Query: !Sour(Max, True)")
    [finding] = checks_named(check_program("logiclm-lp", text, pq("Max is sour.")), "query_polarity")
    assert finding.correction.splitlines()[-1] == "Query: Sour(Max, True)"


def test_no_correction_when_the_sentence_names_another_constant_or_is_not_atomic():
    text = lp_program("Sour(Max, False)", facts="Tumpus(Max, True)\nTumpus(Rex, True)")
    assert check_program("logiclm-lp", text, pq("Rex is sour.")) == [] or all(
        f.check != "query_polarity" for f in check_program("logiclm-lp", text, pq("Rex is sour."))
    )
    for sentence in (
        "Max is sour and Max is a tumpus.",
        "Every tumpus is sour.",
        "Max is not not sour.",
        "Max is kind.",
    ):
        found = check_program("logiclm-lp", text, pq(sentence))
        assert checks_named(found, "query_polarity") == [], sentence


def test_a_predicate_whose_name_carries_the_negation_absorbs_the_sentences():
    text = "Predicates:\nNotBig($x, bool)\nFacts:\nNotBig(Bob, True)\nQuery:\nNotBig(Bob, True)"
    assert checks_named(check_program("logiclm-lp", text, pq("Bob is not big.")), "query_polarity") == []
    assert checks_named(check_program("logiclm-lp", text, pq("Bob is big.")), "query_polarity") != []


def test_fol_conclusion_polarity():
    text = (
        "Predicates:\nPerform(x) ::: x performs.\nPremises:\nPerform(bonnie) ::: Bonnie performs.\n"
        "Conclusion:\n¬Perform(bonnie) ::: Bonnie performs."
    )
    problem = Problem(
        "f",
        "test",
        "",
        "Is the following statement true, false, or uncertain? Bonnie performs.",
        ("A) True", "B) False", "C) Uncertain"),
        "A",
    )
    [finding] = checks_named(check_program("logiclm-fol", text, problem), "query_polarity")
    conclusion = fol.parse(finding.correction).conclusion
    assert conclusion.formula == fol.Atom("Perform", (fol.Const("bonnie"),))
    ok = text.replace("¬Perform(bonnie) ::: Bonnie", "Perform(bonnie) ::: Bonnie")
    assert checks_named(check_program("logiclm-fol", ok, problem), "query_polarity") == []


# --------------------------------------------------------------------------- one_name

SPLIT = """Predicates:
Wumpus($x, bool)
Impus($x, bool)
Hot($x, bool)
Facts:
Wumpus(Alex, True)
Rules:
Wumpus($x, True) >>> Impuses($x, True)
Impus($x, True) >>> Hot($x, True)
Query:
Hot(Alex, True)"""


def test_one_concept_two_names_is_merged_into_the_declared_one():
    problem = pq("Alex is hot.", gold="A")
    assert answer(SPLIT, problem) == "B"  # the chain breaks at Impuses/Impus (closed world: False)
    [finding] = checks_named(check_program("logiclm-lp", SPLIT, problem), "one_name")
    assert finding.severity == "error" and "Impus" in finding.message and "Impuses" in finding.message
    assert "Impuses" not in finding.correction
    assert answer(finding.correction, problem) == "A"


def test_one_name_without_correction_only_when_arities_differ():
    differ = SPLIT.replace("Impuses($x, True)", "Impuses($x, Bob, True)")
    [finding] = checks_named(check_program("logiclm-lp", differ, pq("Alex is hot.")), "one_name")
    assert finding.correction is None


def test_one_name_keeps_the_first_written_when_both_are_declared_and_the_answer_does_not_depend_on_it():
    both = SPLIT.replace("Impus($x, bool)", "Impuses($x, bool)\nImpus($x, bool)")
    [finding] = checks_named(check_program("logiclm-lp", both, pq("Alex is hot.")), "one_name")
    program = lp.parse(finding.correction)
    assert [d.name for d in program.predicates].count("Impuses") == 1 and "Impus(" not in finding.correction
    other = both.replace("Impuses", "TMP").replace("Impus(", "Impuses(").replace("TMP", "Impus")
    assert answer(finding.correction, pq("Alex is hot.")) == "A"
    assert (
        answer(
            checks_named(check_program("logiclm-lp", other, pq("Alex is hot.")), "one_name")[0].correction,
            pq("Alex is hot."),
        )
        == "A"
    )


def test_case_variants_are_one_name_too():
    text = SPLIT.replace("Impuses($x, True)", "impus($x, True)")
    [finding] = checks_named(check_program("logiclm-lp", text, pq("Alex is hot.")), "one_name")
    assert "impus(" not in finding.correction


def test_corrections_compose():
    text = SPLIT.replace("Query:\nHot(Alex, True)", "Query:\nHot(Alex, False)")
    problem = pq("Alex is hot.", gold="A")
    result = correct_program("logiclm-lp", text, problem)
    assert [f.check for f in result.applied] == ["query_polarity", "one_name"]
    assert result.corrected and result.remaining == ()
    assert answer(result.text, problem) == "A"


# --------------------------------------------------------------------------- the others


def test_free_variable_in_a_rule_conclusion_is_a_warning():
    text = lp_program("Sour(Max, False)", rules="Tumpus($x, True) >>> Sour($y, False)")
    [finding] = checks_named(check_program("logiclm-lp", text, pq("Max is not sour.")), "free_variables")
    assert finding.severity == "warning" and "$y" in finding.message and finding.correction is None


def test_query_symbols_in_no_premise_and_unused_declarations():
    text = lp_program("Sour(Rex, False)", extra_decl="\nKind($x, bool)", rules="Tumpus($x, True) >>> Cold($x, True)")
    found = checks_named(check_program("logiclm-lp", text, pq("Rex is not sour.")), "unused_symbols")
    messages = " | ".join(f.message for f in found)
    assert "concludes Sour" in messages and "constant Rex" in messages and "Kind is used nowhere" in messages


def test_disconnected_premise_is_reported():
    text = lp_program("Sour(Max, False)", facts="Tumpus(Max, True)\nCold(Rex, True)")
    [finding] = checks_named(check_program("logiclm-lp", text, pq("Max is not sour.")), "disconnected_premises")
    assert finding.severity == "info" and finding.line == text.splitlines().index("Cold(Rex, True)") + 1


def test_a_program_that_does_not_parse_gets_no_findings():
    assert check_program("logiclm-lp", "Facts:\nBig(Bob True)\nQuery:\nBig(Bob, True)", pq("Bob is big.")) == []
    assert check_program("prolog", "x.", pq("Bob is big.")) == []


def test_verdict_language_needs_verdict_options():
    problem = Problem("p", "test", "", "Is Bob big?", ("A) 3", "B) 4"), "A")
    found = checks_named(check_program("logiclm-lp", lp_program("Sour(Max, False)"), problem), "answer_format")
    assert found and found[0].severity == "error"


CSP = """Domain:
1: oldest
5: newest
Variables:
truck [IN] [1, 2, 3, 4, 5]
bus [IN] [1, 2, 3, 4, 5]
Constraints:
truck == 4 ::: The truck is the second-newest.
AllDifferentConstraint([truck, bus])
Query:
A) truck == 2 ::: The truck is the second-newest.
B) bus == 2 ::: The bus is the second-newest."""
CSP_OPTS = ("A) The truck is the second-newest.", "B) The bus is the second-newest.")


def test_option_position_is_corrected_from_the_domain_notes():
    problem = Problem("d", "test", "", "Which of the following is true?", CSP_OPTS, "A")
    found = checks_named(check_program("logiclm-csp", CSP, problem), "option_position")
    assert [f.line for f in found] == [11, 12] and all(f.severity == "error" for f in found)
    fixed = correct_program("logiclm-csp", CSP, problem).text
    assert [o.text for o in csp.parse(fixed).options] == ["truck == 4", "bus == 4"]
    assert csp.solve(fixed, Limits()).answer == "A"


def test_option_position_is_only_a_warning_when_the_constraints_read_positions_the_options_way():
    reversed_notes = CSP.replace("truck == 4 ::: The truck", "truck == 2 ::: The truck")
    problem = Problem("d", "test", "", "Which of the following is true?", CSP_OPTS, "A")
    found = checks_named(check_program("logiclm-csp", reversed_notes, problem), "option_position")
    assert found and all(f.severity == "warning" and f.correction is None for f in found)


GOLF = """Domain:
1: first
4: last
Variables:
Ann [IN] [1, 2, 3, 4]
Bo [IN] [1, 2, 3, 4]
Cy [IN] [1, 2, 3, 4]
Di [IN] [1, 2, 3, 4]
Constraints:
Ann > Bo ::: Ann finished above Bo.
Cy == 4 ::: Cy finished last.
Bo < Di ::: Di finished below Bo.
Di > Ann ::: Ann finished ahead of Di.
AllDifferentConstraint([Ann, Bo, Cy, Di])
Query:
A) Ann == 1 ::: Ann finished first.
B) Bo == 1 ::: Bo finished first."""
GOLF_OPTS = ("A) Ann finished first.", "B) Bo finished first.")


def test_scale_direction_swaps_a_comparison_that_reads_the_order_backwards():
    # 1 is first: "Ann finished above Bo" is Ann < Bo; the two other comparisons already read it so
    problem = Problem("g", "test", "", "Which of the following is true?", GOLF_OPTS, "A")
    [finding] = checks_named(check_program("logiclm-csp", GOLF, problem), "scale_direction")
    assert (finding.severity, finding.line) == ("error", 10) and "Ann < Bo" in finding.message
    assert csp.solve(GOLF, Limits()).answer != "A"
    fixed = correct_program("logiclm-csp", GOLF, problem).text
    assert "Ann < Bo ::: Ann finished above Bo." in fixed and csp.solve(fixed, Limits()).answer == "A"


PRICES = """Domain:
1: most expensive
6: pears
Variables:
figs [IN] [1, 2, 3, 4, 5, 6]
kiwis [IN] [1, 2, 3, 4, 5, 6]
limes [IN] [1, 2, 3, 4, 5, 6]
pears [IN] [1, 2, 3, 4, 5, 6]
plums [IN] [1, 2, 3, 4, 5, 6]
dates [IN] [1, 2, 3, 4, 5, 6]
Constraints:
figs == 1 ::: The figs are the cheapest.
kiwis == 2 ::: The kiwis are the third-cheapest.
limes < pears ::: The limes are cheaper than the pears.
pears == 2 ::: The pears are the second-most expensive.
plums > limes ::: The plums are less expensive than the limes.
dates == 1 ::: The dates are the most expensive.
AllDifferentConstraint([figs, kiwis, limes, pears, plums, dates])
Query:
A) limes == 5 ::: The limes are the second-cheapest.
B) plums == 5 ::: The plums are the second-cheapest."""
PRICES_OPTS = ("A) The limes are the second-cheapest.", "B) The plums are the second-cheapest.")


def test_scale_direction_places_positions_counted_from_the_end_the_notes_name_by_its_opposite():
    # only "1: most expensive" names an end ("6: pears" is no end): the cheapest is 6
    problem = Problem("f", "test", "", "Which of the following is true?", PRICES_OPTS, "B")
    found = checks_named(check_program("logiclm-csp", PRICES, problem), "scale_direction")
    assert [(f.line, f.severity) for f in found] == [(12, "error"), (13, "error"), (14, "error")]
    assert "position 6" in found[0].message and "position 4" in found[1].message
    fixed = correct_program("logiclm-csp", PRICES, problem).text
    program = csp.parse(fixed)
    assert [c.text for c in program.constraints[:5]] == [
        "figs == 6",
        "kiwis == 4",
        "limes > pears",
        "pears == 2",
        "plums > limes",  # "plums less expensive than limes": larger, as written
    ]
    assert csp.solve(fixed, Limits()).answer == "B"


def test_scale_direction_reads_other_orderings_than_the_samples():
    # weights, 1 the heaviest: "lighter than" points to the other end, so the lighter is the larger number
    text = """Domain:
1: heaviest
3: lightest
Variables:
ox [IN] [1, 2, 3]
cat [IN] [1, 2, 3]
ant [IN] [1, 2, 3]
Constraints:
ox == 1 ::: The ox is the heaviest.
ant < cat ::: The ant is lighter than the cat.
AllDifferentConstraint([ox, cat, ant])
Query:
A) ant == 3 ::: The ant is the lightest.
B) cat == 3 ::: The cat is the lightest."""
    problem = Problem(
        "w",
        "test",
        "",
        "Which of the following is true?",
        ("A) The ant is the lightest.", "B) The cat is the lightest."),
        "A",
    )
    [finding] = checks_named(check_program("logiclm-csp", text, problem), "scale_direction")
    assert (finding.severity, finding.line) == ("error", 10)
    fixed = correct_program("logiclm-csp", text, problem).text
    assert "ant > cat ::: The ant is lighter" in fixed and csp.solve(fixed, Limits()).answer == "A"


def test_scale_direction_is_only_a_warning_when_every_line_reads_the_notes_the_other_way():
    # every line reads 1 as first; the notes say 1 is last
    flipped = GOLF.replace("Ann > Bo", "Ann < Bo").replace("1: first\n4: last", "1: last\n4: first")
    problem = Problem("g", "test", "", "Which of the following is true?", GOLF_OPTS, "A")
    found = checks_named(check_program("logiclm-csp", flipped, problem), "scale_direction")
    assert found and all(f.severity == "warning" and f.correction is None for f in found)


def test_scale_direction_leaves_notes_that_name_no_pair_of_ends_alone():
    odd = GOLF.replace("4: last", "4: oldest")
    problem = Problem("g", "test", "", "Which of the following is true?", GOLF_OPTS, "A")
    assert checks_named(check_program("logiclm-csp", odd, problem), "scale_direction") == []
    no_notes = GOLF.replace("1: first\n4: last\n", "")
    assert checks_named(check_program("logiclm-csp", no_notes, problem), "scale_direction") == []


def test_option_letters_must_match_the_problem():
    problem = Problem("d", "test", "", "Which?", (*CSP_OPTS, "C) The car is the second-newest."), "A")
    [finding] = checks_named(check_program("logiclm-csp", CSP, problem), "answer_format")
    assert finding.severity == "error" and "missing ['C']" in finding.message


def test_refine_message_lists_only_errors_with_their_lines():
    findings = [Finding("query_polarity", "error", "flip it", 9), Finding("unused_symbols", "info", "meh", 2)]
    message = refine_message(findings)
    assert "[query_polarity] (line 9) flip it" in message and "meh" not in message


def test_fol_positive_conclusion_for_a_negative_statement_gets_the_negation():
    text = "Premises:\nPerform(bonnie)\nConclusion:\nPerform(bonnie) ::: Bonnie does not perform."
    problem = Problem(
        "f",
        "test",
        "",
        "Is the following statement true, false, or uncertain? Bonnie does not perform.",
        ("A) True", "B) False", "C) Uncertain"),
        "B",
    )
    [finding] = checks_named(check_program("logiclm-fol", text, problem), "query_polarity")
    assert fol.parse(finding.correction).conclusion.formula == fol.Not(fol.Atom("Perform", (fol.Const("bonnie"),)))
    assert fol_engine.solve(finding.correction, Limits()).answer == "False"


# --------------------------------------------------------------------------- option_modality

SMT = """# Declarations
people = EnumSort([Ann, Bob, Cy])
slot = Function([people] -> [int])
ForAll([p:people], And(1 <= slot(p), slot(p) <= 3))
Distinct([p:people], slot(p))
# Constraints
slot(Ann) < slot(Bob) ::: Ann goes before Bob.
# Options
Question ::: {question}
{check}(And(slot(Ann) == 1, slot(Bob) == 2, slot(Cy) == 3)) ::: (A)
{check}(And(slot(Bob) == 1, slot(Ann) == 2, slot(Cy) == 3)) ::: (B)"""
ORDERS = ("A) Ann, Bob, Cy", "B) Bob, Ann, Cy")


def lsat_problem(question: str, gold: str = "A") -> Problem:
    return Problem("s", "test", "", question, ORDERS, gold)


def test_could_be_question_checked_with_is_valid_is_rewritten_to_is_sat():
    from symbolkg.solvers.smt import lsat_engine as lsat

    question = "Which one of the following could be the order, from first to last?"
    text = SMT.format(question=question, check="is_valid")
    assert lsat.solve(text, Limits()).answer is None  # no full order is forced: no option passes
    [finding] = checks_named(check_program("logiclm-smt", text, lsat_problem(question)), "option_modality")
    assert finding.severity == "error" and "could be true" in finding.message and finding.line == 10
    fixed = correct_program("logiclm-smt", text, lsat_problem(question)).text
    assert "is_sat(And(slot(Ann) == 1" in fixed and "::: (A)" in fixed
    assert lsat.solve(fixed, Limits()).answer == "A"


def test_modality_left_alone_when_it_matches_or_the_clause_is_unclear():
    from symbolkg.solvers.smt import lsat_engine as lsat

    for question, check in [
        ("Which one of the following could be the order?", "is_sat"),
        ("Which one of the following must be true?", "is_valid"),
        ("Which one of the following CANNOT be true?", "is_unsat"),
        ("Which one of the following CANNOT be true?", "is_exception(is_sat"),  # same meaning
        ("Which one of the following, if true, must be the order?", "is_sat"),  # own 'if'
        ("Which one of the following could be true or must be false?", "is_valid"),  # two
        ("Ann goes first if which one of the following is true?", "is_valid"),  # none
    ]:
        text = SMT.format(question=question, check=check)
        if check.startswith("is_exception"):
            text = text.replace(")) ::: (", "))) ::: (")
        lsat.parse(text)
        found = checks_named(check_program("logiclm-smt", text, lsat_problem(question)), "option_modality")
        assert found == [], (question, check)


def test_except_questions_ask_for_the_exception_of_the_positive_check():
    from symbolkg.solvers.smt import lsat_engine as lsat

    question = "Each of the following must be true EXCEPT:"
    text = SMT.format(question=question, check="is_exception(is_sat").replace(")) ::: (", "))) ::: (")
    [finding] = checks_named(check_program("logiclm-smt", text, lsat_problem(question, "B")), "option_modality")
    assert "EXCEPTION to 'must be true'" in finding.message
    fixed = correct_program("logiclm-smt", text, lsat_problem(question, "B")).text
    assert fixed.count("is_exception(is_valid(And(") == 2
    lsat.parse(fixed)


def test_list_questions_are_left_alone():
    from symbolkg.solvers.smt import lsat_engine as lsat

    question = "Which one of the following could be a complete and accurate list?"
    text = SMT.format(question=question, check="is_accurate_list([").replace(")) ::: (", "))]) ::: (")
    lsat.parse(text)
    assert checks_named(check_program("logiclm-smt", text, lsat_problem(question)), "option_modality") == []
