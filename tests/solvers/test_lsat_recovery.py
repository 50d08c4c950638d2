"""Readings the logiclm-smt parser adds for recorded AR-LSAT programs (see ``solvers/smt/lsat.py``'s docstring).

A range over a whole sort of names (``And(1 <= serviced(v), serviced(v) <= 6)`` over six days) numbers the
members from its lower bound, and under that numbering holds for every member: it reads as ``True``. Bounds
that do not span the sort, and a lone integer bound on a name, have no single reading and stay refused.
"""

from __future__ import annotations

import textwrap

import pytest

from symbolkg.solvers.smt import lsat
from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError, Status

# Three vehicles on three ordered days; b after a, c after b: a Mon, b Tue, c Wed, so only (B) holds.
PROGRAM = """\
# Declarations
vehicles = EnumSort([a, b, c])
days = EnumSort([Mon, Tue, Wed])
serviced = Function([vehicles] -> [days])
{range_line}

# Constraints
Distinct([v:vehicles], serviced(v))
serviced(b) > serviced(a)
serviced(c) > serviced(b)

# Options
Question ::: Which one must be true?
is_valid(serviced(a) == Tue) ::: (A)
is_valid(serviced(c) == Wed) ::: (B)
"""


def program(range_line: str) -> str:
    return PROGRAM.format(range_line=range_line)


def solve(text: str):
    return lsat.solve(textwrap.dedent(text), Limits(timeout_s=10))


@pytest.mark.parametrize(
    "range_line",
    [
        "ForAll([v:vehicles], And(1 <= serviced(v), serviced(v) <= 3))",
        "ForAll([v:vehicles], And(0 <= serviced(v), serviced(v) <= 2))",  # numbered from 0
        "ForAll([v:vehicles], 1 <= serviced(v) <= 3)",
        "ForAll([v:vehicles], And(serviced(v) >= 1, 3 >= serviced(v)))",
        "ForAll([v:vehicles], serviced(v) >= 1 and serviced(v) <= 3)",
        "And(1 <= serviced(a), serviced(a) <= 3)",
    ],
)
def test_range_over_the_whole_sort_is_true(range_line):
    parsed = lsat.parse(program(range_line))
    first = parsed.constraints[0]
    assert first.line == 5
    assert first.expr == lsat.Lit("bool", True) or (
        isinstance(first.expr, lsat.Scoped) and first.expr.body == lsat.Lit("bool", True)
    )
    outcome = solve(program(range_line))
    assert outcome.status is Status.PROVED and outcome.answer == "B"


def test_range_line_changes_no_answer():
    # The same program without the line: the same single option.
    assert solve(program("")).answer == solve(program("ForAll([v:vehicles], And(1 <= serviced(v), serviced(v) <= 3))")).answer == "B"


@pytest.mark.parametrize(
    "range_line",
    [
        "ForAll([v:vehicles], And(1 <= serviced(v), serviced(v) <= 2))",  # does not span the three days
        "ForAll([v:vehicles], And(1 <= serviced(v), serviced(v) <= 4))",  # spans more than the sort
        "ForAll([v:vehicles], 1 <= serviced(v))",  # a lone bound: from which number?
        "ForAll([v:vehicles], And(1 < serviced(v), serviced(v) <= 3))",  # strict: a different count
        "ForAll([v:vehicles], And(1 <= serviced(v), serviced(a) <= 3))",  # two different terms
    ],
)
def test_other_integer_bounds_on_names_stay_refused_with_their_line(range_line):
    with pytest.raises(ProgramError) as info:
        lsat.parse(program(range_line))
    assert info.value.line == 5
    assert info.value.kind is ErrorKind.TYPE
    outcome = solve(program(range_line))
    assert outcome.status is Status.PARSE_ERROR and outcome.error_line == 5


def test_range_on_a_numeric_sort_keeps_its_ordinary_meaning():
    # On integers the bounds are real constraints (here they exclude 3): not rewritten to True.
    text = """\
    # Declarations
    people = EnumSort([p, q])
    slots = EnumSort([1, 2, 3])
    at = Function([people] -> [slots])
    ForAll([x:people], And(1 <= at(x), at(x) <= 2))

    # Constraints
    at(p) < at(q)

    # Options
    is_valid(at(q) == 2) ::: (A)
    is_sat(at(q) == 3) ::: (B)
    """
    parsed = lsat.parse(textwrap.dedent(text))
    assert parsed.constraints[0].expr != lsat.Lit("bool", True)
    outcome = solve(text)
    assert outcome.status is Status.PROVED and outcome.answer == "A"


def test_range_term_with_an_undeclared_name_is_still_reported():
    with pytest.raises(ProgramError) as info:
        lsat.parse(program("ForAll([v:vehicles], And(1 <= servicd(v), servicd(v) <= 3))"))
    assert info.value.line == 5 and info.value.kind is ErrorKind.UNDECLARED
