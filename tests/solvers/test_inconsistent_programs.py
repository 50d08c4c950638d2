"""One program, one answer: a program whose premises contradict each other gets no answer, in every language.

Each language gets a constructed program whose premises (facts, rules, constraints) entail both the
goal and its negation, through the registry as the solver worker runs it, several times: always
``UNSAT``, no answer, ``error_kind == "inconsistent"``, a line of a conflicting premise, and the same
outcome every time (never the proof that happened to finish first). FOLIO_dev_55 as
text-davinci-003 wrote it is the recorded case that used to answer True one run and False the next.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from symbolkg.solvers import registry
from symbolkg.solvers.outcomes import Limits, SolveRequest, Status
from tests.conftest import data_or_skip

LIMITS = Limits(timeout_s=10)

# Each program: premises that entail both answers, and the 1-based lines of the premises in conflict.
PROGRAMS = {
    "logiclm-lp": (
        """\
        Predicates:
        Striker($x, bool)
        Player($x, bool)
        Facts:
        Striker(Robert, True)
        Player(Robert, False)
        Rules:
        Striker($x, True) >>> Player($x, True)
        Query:
        Player(Robert, True)""",
        {5, 6, 8, 10},
    ),
    "logiclm-fol": (
        """\
        Predicates:
        Striker(x) ::: x is a striker.
        Player(x) ::: x is a soccer player.
        Left(x, y) ::: x left y.
        Premises:
        Striker(robert) ::: Robert is a striker.
        ∀x (Striker(x) → Player(x)) ::: Strikers are soccer players.
        Left(robert, bayern) ::: Robert left Bayern.
        ∀x ∀y (Left(x, y) → ¬Player(x)) ::: Whoever left a team is no soccer player.
        Big(robert) ::: Robert is big.
        Conclusion:
        Player(robert) ::: Robert is a soccer player.""",
        {6, 7, 8, 9},
    ),
    "logiclm-fol-z3": None,  # the same program, decided by Z3
    "logiclm-csp": (
        """\
        Domain:
        1: first
        3: third
        Variables:
        a [IN] [1, 2, 3]
        b [IN] [1, 2, 3]
        Constraints:
        a > b ::: a comes after b
        b > a ::: b comes after a
        Query:
        A) a == 1
        B) a == 2""",
        {8, 9},
    ),
    "logiclm-smt": (
        """\
        # Declarations
        people = EnumSort([Ann, Bob])
        rooms = EnumSort([red, blue])
        in_room = Function([people] -> [rooms])

        # Constraints
        in_room(Bob) == red ::: Bob is in the red room
        in_room(Bob) == blue ::: Bob is in the blue room
        in_room(Ann) == red ::: Ann is in the red room

        # Options
        is_valid(in_room(Ann) == red) ::: (A)
        is_valid(in_room(Ann) == blue) ::: (B)""",
        {7, 8},
    ),
    "prover9": (
        """\
        formulas(assumptions).
        striker(robert).
        all x (striker(x) -> player(x)).
        left(robert, bayern).
        all x all y (left(x, y) -> -player(x)).
        end_of_list.
        formulas(goals).
        player(robert).
        end_of_list.""",
        {2, 3, 4, 5},
    ),
}
PROGRAMS["logiclm-fol-z3"] = PROGRAMS["logiclm-fol"]


@pytest.mark.parametrize("language", sorted(PROGRAMS))
def test_inconsistent_premises_give_no_answer_and_name_a_conflicting_line(language):
    text, conflict = PROGRAMS[language]
    outcomes = [registry.run(SolveRequest(f"x{i}", language, textwrap.dedent(text), LIMITS)) for i in range(3)]
    first = outcomes[0]
    assert (first.status, first.answer, first.error_kind) == (Status.UNSAT, None, "inconsistent"), first
    assert first.executed and "contradict" in first.error_message.lower()
    if language not in ("logiclm-fol-z3", "logiclm-lp"):  # Z3 has no proof to cite; LP names the query's atom
        assert first.error_line in conflict, first.error_line
    assert {(o.status, o.answer, o.error_kind, o.error_line) for o in outcomes} == {
        (first.status, first.answer, first.error_kind, first.error_line)
    }


def test_folio_dev_55_of_text_davinci_003_is_inconsistent_on_every_run():
    records = json.loads(data_or_skip("logiclm/programs/FOLIO_dev_text-davinci-003.json").read_text())
    program = next(r for r in records if r["id"] == "FOLIO_dev_55")["raw_logic_programs"][0]
    outcomes = [registry.run(SolveRequest("FOLIO_dev_55", "logiclm-fol", program, LIMITS)) for _ in range(5)]
    assert {(o.status, o.answer, o.error_kind, o.error_line) for o in outcomes} == {
        (Status.UNSAT, None, "inconsistent", 6)
    }
    # every premise of the conflict is named, and the proofs of both answers are kept
    assert all(f"line {n}:" in outcomes[0].error_message for n in (6, 7, 8, 9))
    assert "% --- and ---" in outcomes[0].proof
