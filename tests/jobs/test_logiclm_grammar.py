"""``--logiclm-grammar``: what the logiclm method's formulation and repair requests are constrained by."""

from __future__ import annotations

import asyncio

import pytest

from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.cli import build_parser
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.methods import MethodConfig, run_problem
from symbolkg.jobs.methods.logiclm import LogicLM
from symbolkg.solvers import prompts
from symbolkg.solvers.runtime.local_pool import LocalSolverPool

GOOD = """Predicates:
Big($x, bool)
Red($x, bool)
Facts:
Big(Bob, True)
Rules:
Big($x, True) >>> Red($x, True)
Query:
Red(Bob, True)"""
BAD = GOOD.replace("Big($x, True) >>> Red($x, True)", "Big($x, True) >>>")


def problem() -> Problem:
    return Problem(
        "p1",
        "logiclm/proofwriter",
        "Bob is big. Big things are red.",
        "Is Bob red?",
        ("A) True", "B) False", "C) Unknown"),
        "A",
    )


@pytest.fixture(scope="module")
def pool():
    with LocalSolverPool(1) as p:
        yield p


def test_the_flag_defaults_to_the_skeleton_and_is_kept_in_the_run_info():
    parser = build_parser()
    assert LogicLM.from_args(parser.parse_args(["solve", "--method", "logiclm"])).run_info()["grammar"] == "skeleton"
    full = LogicLM.from_args(parser.parse_args(["solve", "--method", "logiclm", "--logiclm-grammar", "full"]))
    assert full.run_info()["grammar"] == "full"
    with pytest.raises(ValueError, match="--logiclm-grammar"):
        LogicLM(grammar="whole")


@pytest.mark.parametrize("grammar, kind", [("skeleton", "regex"), ("full", "grammar")])
def test_formulation_and_repair_requests_carry_the_chosen_constraint(pool, grammar, kind):
    engine = ScriptedEngine({"p1": [BAD, GOOD]}, supports_structured=True)
    row = asyncio.run(run_problem(problem(), MethodConfig("logiclm"), engine, pool, LogicLM(grammar=grammar)))
    assert row.correct and row.rounds == 2
    assert [r.purpose for r in engine.requests] == ["formulate", "refine"]
    expected = prompts.program_structured_output("logiclm-lp", grammar)[kind]
    for request in engine.requests:
        assert request.structured.kind == kind and getattr(request.structured, kind) == expected
