"""Calls in the AR-LSAT DSL's formulas, one kind at a time (solvers/smt/lsat_formula_syntax.py Scope._call)."""

from __future__ import annotations

import pytest

from symbolkg.solvers.outcomes import ErrorKind, ProgramError
from symbolkg.solvers.smt.lsat_formula_syntax import Op, Scope


def _formula(code: str):
    return Scope({}, {}, {}).constraint(code, 3)[0]


def test_connectives_and_fixed_arity_builtins_build_typed_operations():
    assert _formula("And([True, False])") == Op("bool", "and", (_formula("True"), _formula("False")))
    assert _formula("Iff(True, False)").op == "eq"
    assert _formula("If(True, False)").op == "implies"  # an 'if' without 'else' reads as Implies


@pytest.mark.parametrize(
    ("code", "kind", "start"),
    [
        ("Implies(True)", ErrorKind.TYPE, "Implies takes 2 argument(s), got 1; for several conditions"),
        ("AtMost(True)", ErrorKind.UNSUPPORTED, "'AtMost' is not supported; use Count"),
        ("Foo(True)", ErrorKind.UNDECLARED, "function 'Foo' is not declared (declared functions: none)"),
        ("Distinct(1, True)", ErrorKind.TYPE, "Distinct needs arguments of one sort"),
    ],
)
def test_a_bad_call_names_what_is_wrong_at_its_line(code, kind, start):
    with pytest.raises(ProgramError) as caught:
        _formula(code)
    assert caught.value.kind == kind and caught.value.message.startswith(start) and caught.value.line == 3
