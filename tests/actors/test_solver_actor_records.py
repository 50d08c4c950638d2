"""The Ray solver actor's body takes and returns the typed records: no dict conversions between the
driver and the actor (Ray serialises the records), one JSON line each way at the worker's pipe."""

from __future__ import annotations

import pytest

from symbolkg.actors.solver_pool import SolverActor
from symbolkg.solvers.outcomes import CheckReport, CheckSpec, Limits, Outcome, SolveRequest
from tests.jobs.test_checks_refine import FLIPPED, problem


def test_the_actor_body_takes_a_request_and_returns_an_outcome_with_typed_checks():
    p = problem()
    request = SolveRequest(p.id, "logiclm-lp", FLIPPED, Limits(timeout_s=20), CheckSpec(p.question, p.options))
    actor = SolverActor(1024, "records")
    try:
        [(outcome, worker)] = actor.solve_batch([request])
        assert isinstance(outcome, Outcome) and isinstance(outcome.checks, CheckReport)
        assert outcome.checks.corrected and outcome.answer == "False"
        assert worker.startswith("records/")
        with pytest.raises(TypeError, match="takes a SolveRequest, got str"):
            actor.solve(request.to_wire())  # the wire form is the worker's business, not the actor's
    finally:
        actor.close()
