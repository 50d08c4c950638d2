"""benchmarks/scheduling_sim.py's engine model on cases small enough to count by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "scheduling_sim", Path(__file__).resolve().parents[1] / "benchmarks" / "scheduling_sim.py"
)
sim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sim)


def test_step_seconds_interpolates_tokens_per_second():
    seconds = sim.step_seconds([(1, 10.0), (3, 20.0)])
    assert seconds(1) == pytest.approx(0.1) and seconds(3) == pytest.approx(0.15)
    assert seconds(2) == pytest.approx(0.125) and seconds(5) == pytest.approx(0.2)  # beyond: the last slope


def test_a_chain_costs_the_job_its_rounds_in_sequence():
    def flat(b: int) -> float:  # a step costs the same at any batch size
        return 1.0

    # one problem, two rounds of 2 tokens: the job decodes them one after the other (4 steps), the
    # ceiling both at once (2 steps)
    assert sim.simulate([[2, 2]], 4, 4, "fcfs", flat, True) == pytest.approx(1.0)
    assert sim.simulate([[2, 2]], 4, 4, "fcfs", flat, False) == pytest.approx(2.0)
    # independent problems: the same either way; a batch of one serialises them
    assert sim.simulate([[3], [3]], 2, 2, "priority", flat, True) == pytest.approx(2.0)
    assert sim.simulate([[3], [3]], 1, 2, "priority", flat, True) == pytest.approx(1.0)
    # one in flight admits the second problem only when the first is done
    assert sim.simulate([[3], [3]], 2, 1, "fcfs", flat, True) == pytest.approx(1.0)
