"""``unstated_facts``: an inconsistent LP program's contradiction resting on facts the text does not state.

The programs here are written for these tests, in the shapes qwen2.5-coder-1.5b wrote on ProntoQA
(every declared predicate given a fact about the one entity, some of them the opposite of what the
rules derive) and in shapes the samples do not have: relations, multi-word constants, a negation in
the predicate's name, a contradiction that only a second round of dropping ends, and ones the text
itself does not resolve.
"""

from __future__ import annotations

import json

from symbolkg.solvers import checks, registry
from symbolkg.solvers.lp.engine import solve
from symbolkg.solvers.lp.revision import revise
from symbolkg.solvers.outcomes import CheckSpec, Limits, SolveRequest
from symbolkg.solvers.shared_checks import states

CONTEXT = "Alex is a jompus. Every jompus is small. Each small thing is a vumpus. Alex is not red."
QUESTION = "Is the following statement true or false? Alex is a vumpus."
INVENTED = """Predicates:
Jompus($x, bool) ::: Is x a jompus?
Small($x, bool) ::: Is x small?
Vumpus($x, bool) ::: Is x a vumpus?
Red($x, bool) ::: Is x red?
Facts:
Jompus(alex, True) ::: Alex is a jompus.
Small(alex, False) ::: Alex is not small.
Vumpus(alex, False) ::: Alex is not a vumpus.
Red(alex, False) ::: Alex is not red.
Rules:
Jompus($x, True) >>> Small($x, True)
Small($x, True) >>> Vumpus($x, True)
Query:
Vumpus(alex, True)"""


def test_the_unstated_facts_under_the_contradiction_are_dropped_and_the_stated_ones_kept():
    assert solve(INVENTED, Limits()).error_kind == "inconsistent"
    r = revise(INVENTED, CONTEXT)
    assert r is not None and r.dropped == ("Vumpus(alex, False)",) and r.lines == (9,)
    # one line emptied, every other line as written (line numbers stay)
    assert r.program.splitlines()[8] == "" and r.program.splitlines()[:8] == INVENTED.splitlines()[:8]
    out = solve(r.program, Limits())
    assert (out.status.value, out.answer) == ("proved", "True")
    # Small(alex, False) contradicts a derived atom too, but the query does not rest on it: it stays
    assert "Small(alex, False)" in r.program and "Red(alex, False)" in r.program


def test_the_side_resting_on_stated_facts_wins():
    # Small(alex, True) follows from the stated Jompus(alex, True); Small(alex, False) is the model's
    program = INVENTED.replace("Query:\nVumpus(alex, True)", "Query:\nSmall(alex, True)")
    r = revise(program, CONTEXT)
    assert r is not None and r.dropped == ("Small(alex, False)",)
    assert solve(r.program, Limits()).answer == "True"


def test_a_second_round_drops_what_the_first_uncovered():
    # Vumpus(alex, False) is a fact and also follows from the unstated Red(alex, True): the first
    # round drops the fact, the second finds the other derivation and drops what it rests on
    program = INVENTED.replace("Red(alex, False) ::: Alex is not red.", "Red(alex, True) ::: Alex is red.").replace(
        "Small($x, True) >>> Vumpus($x, True)",
        "Small($x, True) >>> Vumpus($x, True)\nRed($x, True) >>> Vumpus($x, False)",
    )
    r = revise(program, CONTEXT)
    assert r is not None and r.dropped == ("Vumpus(alex, False)", "Red(alex, True)")
    assert solve(r.program, Limits()).answer == "True"
    assert revise(program, CONTEXT, max_steps=1) is None  # one round does not end it


def test_a_contradiction_resting_on_stated_facts_only_is_left_alone():
    # the text says both: no fact may give way, so there is no revision (a guess otherwise)
    context = "Alex is a jompus. Every jompus is small. Alex is not small."
    program = INVENTED.replace("Vumpus(alex, False) ::: Alex is not a vumpus.\n", "").replace(
        "Query:\nVumpus(alex, True)", "Query:\nSmall(alex, True)"
    )
    assert solve(program, Limits()).error_kind == "inconsistent"
    assert revise(program, context) is None


def test_a_consistent_program_and_an_empty_context_get_no_revision():
    assert revise(INVENTED.replace("Vumpus(alex, False) ::: Alex is not a vumpus.\n", ""), CONTEXT) is None
    assert checks.revise("logiclm-lp", INVENTED, "  ") is None  # nothing to compare with: no guess
    assert checks.revise("logiclm-fol", INVENTED, CONTEXT) is None  # LP only
    assert checks.revise("logiclm-lp", "Facts:\nSour(Max,", CONTEXT) is None  # does not parse


def test_a_fact_sharing_its_line_with_a_stated_one_is_not_dropped_with_it():
    # `Jompus(alex, True) && Vumpus(alex, False)` on one line: emptying it would drop a stated fact too
    program = INVENTED.replace("Vumpus(alex, False) ::: Alex is not a vumpus.\n", "").replace(
        "Jompus(alex, True) ::: Alex is a jompus.", "Jompus(alex, True) && Vumpus(alex, False)"
    )
    assert solve(program, Limits()).error_kind == "inconsistent"
    assert revise(program, CONTEXT) is None


def test_the_runs_of_a_revision_are_bounded_by_the_requests_limits():
    assert revise(INVENTED, CONTEXT, Limits(timeout_s=1e-9)) is None  # no time for a single run
    assert revise(INVENTED, CONTEXT, Limits(timeout_s=5.0)) is not None


def test_relations_multiword_constants_and_a_negated_name_are_matched_in_the_text():
    sentences = ["The bald eagle does not chase the cat.", "The cat is not cold.", "Bob is big."]
    assert states(sentences, "Chases", ["bald eagle", "cat"], False)
    assert not states(sentences, "Chases", ["bald eagle", "cat"], True)
    assert not states(sentences, "Chases", ["cat", "mouse"], False)  # the mouse is not named
    assert states(sentences, "NotCold", ["cat"], True) and not states(sentences, "NotCold", ["cat"], False)
    assert states(sentences, "Big", ["Bob"], True) and not states(sentences, "Big", ["Bob"], False)
    assert not states(sentences, "Not", ["Bob"], True)  # a name with no content word states nothing


def test_the_worker_revises_only_when_corrections_are_asked_and_says_what_it_dropped():
    spec = CheckSpec(QUESTION, ("A) True", "B) False"), True, CONTEXT)
    request = SolveRequest("p1", "logiclm-lp", INVENTED, Limits(), spec)
    assert SolveRequest.from_wire(request.to_wire()) == request  # the context crosses the pipe
    out = registry.run(request)
    assert (out.status.value, out.answer) == ("proved", "True")
    report = out.checks
    assert report is not None and report.corrected and report.corrections == ("unstated_facts",)
    assert report.original_program == INVENTED and "Vumpus(alex, False)" not in (report.program or "")
    finding = next(f for f in report.findings if f.check == "unstated_facts")
    assert finding.severity == "error" and finding.corrects and finding.line == 9
    assert "Vumpus(alex, False)" in finding.message
    # as written: the findings only, the inconsistent outcome stands
    as_written = registry.run(
        SolveRequest("p1", "logiclm-lp", INVENTED, Limits(), CheckSpec(QUESTION, (), False, CONTEXT))
    )
    assert as_written.error_kind == "inconsistent" and not as_written.checks.corrected


def test_the_lp_language_run_by_swi_prolog_is_revised_alike():
    # the symbolkg router's Prolog route runs LP programs in SWI-Prolog: the same program, the same revision
    spec = CheckSpec(QUESTION, ("A) True", "B) False"), True, CONTEXT)
    out = registry.run(SolveRequest("p1", "logiclm-lp-swipl", INVENTED, Limits(), spec))
    assert (out.status.value, out.answer) == ("proved", "True") and out.backend == "swipl"
    assert out.checks is not None and out.checks.corrections == ("unstated_facts",)
    as_written = registry.run(
        SolveRequest("p1", "logiclm-lp-swipl", INVENTED, Limits(), CheckSpec(QUESTION, (), False, CONTEXT))
    )
    assert as_written.error_kind == "inconsistent"


def test_a_request_written_before_the_context_existed_still_reads():
    old = {"question": "q", "options": [], "corrections": True}
    wire = json.dumps({"problem_id": "p", "language": "logiclm-lp", "text": "x", "limits": {}, "checks": old})
    assert SolveRequest.from_wire(wire).checks == CheckSpec("q", (), True, "")
