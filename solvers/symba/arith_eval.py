"""Arithmetic and comparison of ground SymBa terms: the evaluator the engine and the checker share.

An independent evaluator (no search, no unification): the prover
(:mod:`symbolkg.solvers.symba.engine`) and the certificate checker
(:mod:`symbolkg.solvers.certificates.symba_tree`) both compute ``X = A * 4`` and decide
``Ans != seriously_violated`` with these functions, so the two can only agree on a value the
language defines.

* :func:`evaluate`: the value of a ground expression, ``+ - * / ** %``, unary minus, ``round``,
  ``max``, ``min``, ``abs`` (``/`` is true division, ``round`` rounds halves away from zero,
  ``**`` of ints is exact); undefined (:class:`~.terms_syntax.Undefined`) on division by zero, a
  non-number operand, a result beyond 1e100 or without a real value.
* :func:`subst`: a term with a substitution's values, its ground parts evaluated (the prover's and
  the checker's substitution).
* :func:`compare`: ``= != < <= > >=`` between any two ground values. ``=`` is identity of values
  (a number never equals a constant; ``bob`` and ``"bob"`` are different values, as in clingo);
  the order is total: numbers by value, before identifier constants, before quoted strings, the
  last two in the order of their text. A quoted string that spells a number (``"18"``) is that
  number already when read (:mod:`.syntax`), so numbers and strings compare by value.
"""

from __future__ import annotations

import math
from typing import Any

from symbolkg.solvers.symba.terms_syntax import (
    CONST_TYPES,
    LIMIT,
    VAR_TYPES,
    Expr,
    Str,
    Term,
    Undefined,
    format_term,
    is_number,
    normalize_number,
)

#: The comparison operators, as the parser stores them.
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")


def evaluate(e: Expr) -> int | float:
    """The value of a ground expression (normalised as :func:`normalize_number`).

    Raises:
        Undefined: division or modulo by zero, a non-number operand, a result beyond 1e100 or
            without a real value.
    """
    vals = []
    for a in e.args:
        v = evaluate(a) if type(a) is Expr else a
        if not is_number(v):
            raise Undefined(f"cannot compute {format_term(e)}: {format_term(v)} is not a number")
        vals.append(v)
    op = e.op
    try:
        if op == "+":
            r = vals[0] + vals[1]
        elif op == "-":
            r = vals[0] - vals[1]
        elif op == "*":
            r = vals[0] * vals[1]
        elif op == "/":
            a, b = vals
            if b == 0:
                raise Undefined(f"division by zero in {format_term(e)}")
            r = a // b if type(a) is int and type(b) is int and a % b == 0 else a / b
        elif op == "%":
            a, b = vals
            if b == 0:
                raise Undefined(f"modulo by zero in {format_term(e)}")
            r = a % b
        elif op == "**":
            a, b = vals
            if a == 0 and b < 0:
                raise Undefined(f"division by zero in {format_term(e)}")
            approx = math.pow(float(a), float(b))  # OverflowError / ValueError below
            if abs(approx) > LIMIT:
                raise Undefined(f"{format_term(e)} is too large")
            r = a**b if type(a) is int and type(b) is int and b >= 0 else approx
        elif op == "neg":
            r = -vals[0]
        elif op == "abs":
            r = abs(vals[0])
        elif op == "round":
            v = vals[0]
            r = math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)
        elif op == "max":
            r = max(vals)
        elif op == "min":
            r = min(vals)
        else:  # pragma: no cover - the parser builds no other operator
            raise Undefined(f"unknown operator {op}")
    except OverflowError:
        raise Undefined(f"{format_term(e)} is too large") from None
    except (ValueError, ZeroDivisionError) as exc:
        raise Undefined(f"cannot compute {format_term(e)}: {exc}") from None
    if type(r) is complex:
        raise Undefined(f"{format_term(e)} has no real value")
    return normalize_number(r)


def is_ground(t: Term) -> bool:
    """No variable anywhere in ``t``."""
    tt = type(t)
    if tt in CONST_TYPES:
        return True
    if tt is Expr:
        return all(is_ground(a) for a in t.args)
    return False


def evaluate_ground_parts(t: Term) -> Term:
    """``t`` with every ground sub-expression replaced by its value (raises :class:`Undefined`)."""
    if type(t) is not Expr:
        return t
    args = tuple(evaluate_ground_parts(a) for a in t.args)
    if all(type(a) in CONST_TYPES for a in args):
        return evaluate(Expr(t.op, args))
    return Expr(t.op, args)


def subst(t: Term, env: dict, evaluate_ground: bool = True) -> Term:
    """``t`` with ``env``'s values for its variables (one step: a value is not looked up again); ground
    sub-expressions evaluated when ``evaluate_ground``. The engine's substitution and the checker's.

    Raises:
        Undefined: a ground expression has no value (division by zero, a non-number, ...).
    """
    tt = type(t)
    if tt in VAR_TYPES:
        return env.get(t, t)
    if tt is Expr:
        args = tuple(subst(a, env, evaluate_ground) for a in t.args)
        if evaluate_ground and all(type(a) in CONST_TYPES for a in args):
            return evaluate(Expr(t.op, args))
        return Expr(t.op, args)
    return t


def same_value(a: Any, b: Any) -> bool:
    """Two ground values are the same value (same type and value; numbers are normalised)."""
    return type(a) is type(b) and a == b


def order_key(v: Any) -> tuple:
    """The position of a ground value in the total order :func:`compare` uses."""
    if is_number(v):
        return (0, v)
    if type(v) is Str:
        return (2, v.value)
    return (1, v)


def compare(op: str, left: Any, right: Any) -> bool:
    """Whether ``left op right`` holds, for ground values (module docstring).

    Raises:
        ValueError: ``op`` is not one of :data:`COMPARISONS`.
    """
    if op == "=":
        return same_value(left, right)
    if op == "!=":
        return not same_value(left, right)
    kl, kr = order_key(left), order_key(right)
    if op == "<":
        return kl < kr
    if op == "<=":
        return kl <= kr
    if op == ">":
        return kl > kr
    if op == ">=":
        return kl >= kr
    raise ValueError(f"not a comparison operator: {op!r}")
