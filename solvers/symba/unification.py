"""Unification and environment look-up over SymBa terms, for the tabled prover (:mod:`.engine`).

Environments are dicts from variables (clause variables, a call's canonical ``AVar``, fresh
renamings) to terms, undone through a trail; canonical forms number a term's variables by
first occurrence, so that variant calls share one table. Part of the engine: the certificate
checker has its own matching (:mod:`.model_eval`). The one-step substitution both use is
:func:`.arith_eval.subst`.
"""

from __future__ import annotations

from typing import Any

from symbolkg.solvers.symba.arith_eval import evaluate as evaluate_expression
from symbolkg.solvers.symba.terms_syntax import CONST_TYPES, VAR_TYPES, AVar, Expr, Fresh, Str, format_term

#: The marker of a variable without a value in an environment.
UNBOUND = object()


def deref(t: Any, env: dict) -> Any:
    while type(t) in VAR_TYPES:
        nxt = env.get(t, UNBOUND)
        if nxt is UNBOUND:
            return t
        t = nxt
    return t


def resolve(t: Any, env: dict) -> Any:
    """``t`` with every bound variable replaced and ground expressions evaluated."""
    tt = type(t)
    if tt in CONST_TYPES:
        return t
    if tt in VAR_TYPES:
        t = deref(t, env)
        tt = type(t)
        if tt is not Expr:
            return t
    if tt is Expr:
        args = tuple(resolve(a, env) for a in t.args)
        if all(type(a) in CONST_TYPES for a in args):
            return evaluate_expression(Expr(t.op, args))
        return Expr(t.op, args)
    return t


def resolve_raw(t: Any, env: dict) -> Any:
    """Like :func:`resolve` but keeps expressions unevaluated (builtin leaves of proof trees)."""
    tt = type(t)
    if tt in VAR_TYPES:
        t = deref(t, env)
        tt = type(t)
    if tt is Expr:
        return Expr(t.op, tuple(resolve_raw(a, env) for a in t.args))
    return t


def occurs(v: Any, t: Any, env: dict) -> bool:
    t = deref(t, env)
    if t is v or (type(t) is type(v) and t == v):
        return True
    if type(t) is Expr:
        return any(occurs(v, a, env) for a in t.args)
    return False


def unify(a: Any, b: Any, env: dict, trail: list) -> bool:
    a = deref(a, env)
    b = deref(b, env)
    ta, tb = type(a), type(b)
    if ta is tb and a == b:
        return True
    if ta in VAR_TYPES:
        if tb is Expr and occurs(a, b, env):
            return False
        env[a] = b
        trail.append(a)
        return True
    if tb in VAR_TYPES:
        if ta is Expr and occurs(b, a, env):
            return False
        env[b] = a
        trail.append(b)
        return True
    if ta is Expr and tb is Expr and a.op == b.op and len(a.args) == len(b.args):
        return all(unify(x, y, env, trail) for x, y in zip(a.args, b.args, strict=True))
    return False


def unify_args(xs: tuple, ys: tuple, env: dict, trail: list) -> bool:
    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys, strict=True):
        if not unify(x, y, env, trail):
            return False
    return True


def undo(env: dict, trail: list, mark: int) -> None:
    while len(trail) > mark:
        del env[trail.pop()]


def canon(t: Any, mapping: dict) -> Any:
    tt = type(t)
    if tt in VAR_TYPES:
        v = mapping.get(t)
        if v is None:
            v = mapping[t] = AVar(len(mapping))
        return v
    if tt is Expr:
        return Expr(t.op, tuple(canon(a, mapping) for a in t.args))
    return t


def ground_args(args: tuple) -> bool:
    for a in args:
        if type(a) not in CONST_TYPES:
            return False
    return True


def rename(args: tuple) -> tuple:
    mapping: dict = {}

    def ren(t: Any) -> Any:
        if type(t) is AVar:
            v = mapping.get(t)
            if v is None:
                v = mapping[t] = Fresh()
            return v
        if type(t) is Expr:
            return Expr(t.op, tuple(ren(a) for a in t.args))
        return t

    return tuple(ren(a) for a in args)


def match(pattern: Any, target: Any, sigma: dict) -> bool:
    """One-way matching of canonical variables in ``pattern`` against ``target``."""
    if type(pattern) is AVar:
        bound = sigma.get(pattern, UNBOUND)
        if bound is UNBOUND:
            sigma[pattern] = target
            return True
        return type(bound) is type(target) and bound == target
    if type(pattern) is Expr:
        return (
            type(target) is Expr
            and pattern.op == target.op
            and len(pattern.args) == len(target.args)
            and all(match(p, t, sigma) for p, t in zip(pattern.args, target.args, strict=True))
        )
    return type(pattern) is type(target) and pattern == target


def value(t: Any) -> Any:
    """An answer value: numbers as numbers, constants as str."""
    if type(t) in (int, float, str):
        return t
    if type(t) is Str:
        return t.value
    return format_term(t)
