"""Reasoning methods as plug-ins: the registry, and one problem through a method.

Every ``--method`` of ``symbolkg solve`` is a :class:`~symbolkg.jobs.methods.base.Method`
subclass in its own module. The built-in ones are listed in :data:`BUILTIN`, one line each
(``name: "module:Class"``), and imported only when asked for (but :mod:`.baseline`, whose direct
answer is every method's ``--fallback``); other packages add theirs
with an entry point in the ``symbolkg.methods`` group (``name = "pkg.module:Class"``), and
code (a test, a notebook) with :func:`register`. Adding a method therefore touches its own
module, its tests and one line here, never the CLI or the job.

    >>> "logiclm" in names()
    True
    >>> get("logiclm").needs_solver
    True
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from symbolkg.actors.engines.base import LLMEngine
from symbolkg.jobs.core.answers import is_correct
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.methods.base import Ledger, Method, MethodConfig, MethodContext
from symbolkg.jobs.methods.baseline import answer_directly

if TYPE_CHECKING:
    # a type only: the pool's module brings the solver registry, not needed to list a method's flags
    from symbolkg.solvers.runtime.local_pool import SolverPool

#: The built-in methods: name -> "module:Class". One registration line per method.
BUILTIN: dict[str, str] = {
    "direct": "symbolkg.jobs.methods.baseline:Direct",
    "cot": "symbolkg.jobs.methods.baseline:ChainOfThought",
    "logiclm": "symbolkg.jobs.methods.logiclm:LogicLM",
    "symbolkg": "symbolkg.jobs.methods.symbolkg:SymbolKGMethod",
    "symba": "symbolkg.jobs.methods.symba:SymBa",
    "prolog-agent": "symbolkg.jobs.methods.prolog_agent:PrologAgent",
    "multipath": "symbolkg.jobs.methods.multipath:Multipath",
}
#: Entry-point group through which other installed packages register methods.
ENTRY_POINT_GROUP = "symbolkg.methods"

_registered: dict[str, type[Method]] = {}


def _load(spec: str) -> type[Method]:
    module, _, attr = spec.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise TypeError(f"{spec} is not a symbolkg.jobs.methods.base.Method subclass")
    return cls


def _specs() -> dict[str, str]:
    specs = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        specs.setdefault(ep.name, ep.value)
    return specs


def register(cls: type[Method]) -> type[Method]:
    """Register a method class under its ``name`` (usable as a class decorator).

    Raises:
        ValueError: the class has no name, or another class already has that name.
    """
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise TypeError(f"register() takes a Method subclass, got {cls!r}")
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no name")
    known = _registered.get(cls.name)
    if (known is not None and known is not cls) or (known is None and cls.name in _specs()):
        raise ValueError(f"a method named {cls.name!r} is already registered")
    _registered[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    """Forget a method added with :func:`register` (built-in ones stay)."""
    _registered.pop(name, None)


def names() -> tuple[str, ...]:
    """Every method name, built-in first, in registration order."""
    return tuple(dict.fromkeys([*_specs(), *_registered]))


def get(name: str) -> type[Method]:
    """The method class registered as ``name``.

    Raises:
        ValueError: no such method (the message lists the registered ones).
    """
    if name in _registered:
        return _registered[name]
    spec = _specs().get(name)
    if spec is None:
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(names())}")
    cls = _load(spec)
    if cls.name != name:
        raise ValueError(f"{spec} is registered as {name!r} but names itself {cls.name!r}")
    _registered[name] = cls
    return cls


async def run_problem(
    problem: Problem, cfg: MethodConfig, engine: LLMEngine, solver: SolverPool | None, method: Method | None = None
) -> ResultRow:
    """Run one problem through ``method`` (default: ``cfg.method`` with its default settings).

    When the method gives no answer and ``cfg.fallback`` names a baseline, that baseline
    answers too, in the row's ``fallback_*`` columns (its calls and tokens are added).

    Raises:
        ValueError: the method needs a solver pool and none was given, or ``method`` is not
            the method ``cfg`` names.
        EngineDeadError: the engine is gone.
    """
    method = resolve(cfg, solver, method)
    row = await method.run(problem, MethodContext(engine, solver, cfg))
    if cfg.fallback and row.predicted is None:
        ctx = MethodContext(engine, solver, cfg)
        predicted, _, _ = await answer_directly(problem, ctx, cfg.fallback)
        extra = ctx.ledger
        row = replace(
            row,
            fallback_method=cfg.fallback,
            fallback_predicted=predicted,
            fallback_correct=is_correct(problem, predicted),
            prompt_tokens=row.prompt_tokens + extra.prompt_tokens,
            completion_tokens=row.completion_tokens + extra.completion_tokens,
            llm_calls=row.llm_calls + extra.calls,
            cached_calls=row.cached_calls + extra.cached,
            llm_seconds=round(row.llm_seconds + extra.seconds, 4),
        )
    return row


def resolve(cfg: MethodConfig, solver: SolverPool | None, method: Method | None = None) -> Method:
    """The method to run: ``method``, or the registry's ``cfg.method`` built with its defaults.

    Raises:
        ValueError: an unknown method, ``method`` is not the one ``cfg`` names, the method needs
            a solver pool and ``solver`` is None, or it cannot be built without its own settings.
    """
    cls = type(method) if method is not None else get(cfg.method)
    if cls.name != cfg.method:
        raise ValueError(f"the config names method {cfg.method!r} but the method given is {cls.name!r}")
    if cls.needs_solver and solver is None:
        raise ValueError(f"the {cls.name} method needs a solver pool")
    return method if method is not None else cls()


__all__ = [
    "BUILTIN",
    "ENTRY_POINT_GROUP",
    "Ledger",
    "Method",
    "MethodConfig",
    "MethodContext",
    "get",
    "names",
    "register",
    "resolve",
    "run_problem",
    "unregister",
]
