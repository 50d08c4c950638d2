"""Readings the logiclm-smt parser adds for recorded AR-LSAT programs (see ``solvers/smt/lsat_syntax.py``'s docstring).

A range over a whole sort of names (``And(1 <= serviced(v), serviced(v) <= 6)`` over six days) numbers the
members from its lower bound, and under that numbering holds for every member: it reads as ``True``. Bounds
that do not span the sort, and a lone integer bound on a name, have no single reading and stay refused.

A name a constraint binds nowhere, written as an argument where one sort is expected, is a constant of that
sort: the line reads as ``Exists`` over it (issue 27), and the reading heads the outcome's proof. A name whose
sort its uses do not tell, ``_``, a member misspelled in case, and such a name in an option stay refused at
their line.
"""

from __future__ import annotations

import textwrap

import pytest

from symbolkg.solvers.certificates import check
from symbolkg.solvers.outcomes import ErrorKind, Limits, ProgramError, Status
from symbolkg.solvers.smt import lsat_engine as lsat
from symbolkg.solvers.smt import lsat_formula_syntax

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
    assert first.expr == lsat_formula_syntax.Lit("bool", True) or (
        isinstance(first.expr, lsat_formula_syntax.Scoped) and first.expr.body == lsat_formula_syntax.Lit("bool", True)
    )
    outcome = solve(program(range_line))
    assert outcome.status is Status.PROVED and outcome.answer == "B"


def test_range_line_changes_no_answer():
    # The same program without the line: the same single option.
    assert (
        solve(program("")).answer
        == solve(program("ForAll([v:vehicles], And(1 <= serviced(v), serviced(v) <= 3))")).answer
        == "B"
    )


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
    assert parsed.constraints[0].expr != lsat_formula_syntax.Lit("bool", True)
    outcome = solve(text)
    assert outcome.status is Status.PROVED and outcome.answer == "A"


def test_range_term_with_an_undeclared_name_is_still_reported():
    with pytest.raises(ProgramError) as info:
        lsat.parse(program("ForAll([v:vehicles], And(1 <= servicd(v), servicd(v) <= 3))"))
    assert info.value.line == 5 and info.value.kind is ErrorKind.UNDECLARED


# ------------------------------------------------------------------ names bound nowhere (issue 27)

COURSES = """\
# Declarations
people = EnumSort([Smith, Taj, Vu])
courses = EnumSort([art, bio, chem])
slots = EnumSort([1, 2, 3])
assigned = Function([people, courses] -> [bool])
likes = Function([people, people] -> [bool])
first = Function([people] -> [courses])
used = Function([slots] -> [bool])

# Constraints
ForAll([p:people], Count([c:courses], assigned(p, c)) == 1)
{line}
Not(assigned(Smith, art))
Not(assigned(Taj, bio))

# Options
Question ::: Which one must be true?
{options}
"""
SAME_COURSE = "is_valid(assigned(Taj, chem)) ::: (A)\nis_valid(assigned(Vu, chem)) ::: (B)"


def courses(line: str, options: str = SAME_COURSE) -> str:
    return COURSES.format(line=line, options=options)


def test_a_name_bound_nowhere_reads_as_some_constant_of_its_sort():
    text = courses("And(assigned(Smith, c), assigned(Taj, c)) ::: Smith and Taj take the same course")
    parsed = lsat.parse(text)
    formula = parsed.constraints[1]
    assert formula.line == 12
    assert formula.expr == lsat_formula_syntax.Scoped(
        "bool",
        "exists",
        (lsat_formula_syntax.Binder("c", "courses"),),
        lsat.parse(courses("Exists([c:courses], And(assigned(Smith, c), assigned(Taj, c)))")).constraints[1].expr.body,
    )
    assert parsed.readings and parsed.readings[0].startswith("line 12: c is bound nowhere")
    outcome = solve(text)
    # The same course, not art (Smith), not bio (Taj): chem. Read as ForAll it would contradict itself.
    assert outcome.status is Status.PROVED and outcome.answer == "A"
    assert outcome.proof.startswith("reading: line 12: c is bound nowhere in the constraint")
    assert "Exists([c:courses], ...)" in outcome.proof.splitlines()[0]
    verdict = check(
        outcome.certificate,
        language="logiclm-smt",
        program=textwrap.dedent(text),
        answer="A",
        limits=Limits(timeout_s=10),
    )
    assert verdict.status == "verified", verdict


def test_several_names_are_bound_in_the_order_of_their_first_use():
    parsed = lsat.parse(courses("And(assigned(q, c), Not(assigned(Vu, c)), likes(q, Vu))"))
    assert parsed.constraints[1].expr.binders == (
        lsat_formula_syntax.Binder("q", "people"),
        lsat_formula_syntax.Binder("c", "courses"),
    )
    assert parsed.readings == (
        "line 12: q, c are bound nowhere in the constraint and stand where one sort is expected: read as "
        "Exists([q:people, c:courses], ...) (some q of sort people; some c of sort courses), as Z3 reads a free "
        "constant",
    )


def test_each_constraint_line_reads_its_free_names_on_its_own():
    # c on two lines is two constants: Smith takes some course, Taj avoids some course; both may take art.
    # (One constant shared by both lines would forbid that, and no option would pass.)
    text = courses(
        "assigned(Smith, c)\nNot(assigned(Taj, c))",
        "is_sat(And(assigned(Vu, art), assigned(Taj, art))) ::: (A)\nis_valid(assigned(Vu, art)) ::: (B)",
    )
    outcome = solve(text)
    assert outcome.status is Status.PROVED and outcome.answer == "A"
    assert [line.split(":")[1].strip() for line in outcome.proof.splitlines()[:2]] == ["line 12", "line 13"]


def test_a_free_name_of_a_numeric_sort_ranges_over_its_numbers():
    text = courses("And(used(k), Not(used(1)), Not(used(2)))", "is_valid(used(3)) ::: (A)\nis_valid(used(1)) ::: (B)")
    outcome = solve(text)
    assert outcome.status is Status.PROVED and outcome.answer == "A"
    assert "(some k of sort slots)" in outcome.proof


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("first(Smith) != nobody", "'nobody' is not declared"),  # compared, never an argument: no sort
        ("And(assigned(Smith, x), likes(x, Taj))", "stands where sorts courses and people are expected"),
        ("Not(assigned(_, chem))", "as a wildcard it means 'anyone'"),  # under Not 'no one'; a constant: 'someone'
        ("assigned(smith, c)", "sort 'people' has the member 'Smith'"),  # a misspelled member, or a constant?
        ("assigned(Vu, Art)", "sort 'courses' has the member 'art'"),
        # bound, used outside
        ("And(Exists([c:courses], assigned(Smith, c)), assigned(Taj, c))", "'c' is not declared"),
    ],
)
def test_a_free_name_without_one_reading_is_refused_at_its_line(line, says):
    with pytest.raises(ProgramError) as info:
        lsat.parse(courses(line))
    assert info.value.line == 12 and info.value.kind is ErrorKind.UNDECLARED
    assert says in info.value.message
    outcome = solve(courses(line))
    assert outcome.status is Status.PARSE_ERROR and outcome.error_line == 12


def test_a_free_name_in_an_option_is_refused():
    # is_valid of 'some c' is 'for some c, in every model' or 'in every model, for some c': two readings.
    text = courses("Not(assigned(Vu, bio))", "is_valid(assigned(Taj, c)) ::: (A)\nis_sat(assigned(Vu, art)) ::: (B)")
    with pytest.raises(ProgramError) as info:
        lsat.parse(text)
    assert info.value.line == 18 and info.value.kind is ErrorKind.UNDECLARED
