"""Waiting for a killed Ray actor to be gone, for tests that kill one and then need it dead."""

from __future__ import annotations

import time
from typing import Any


def kill_and_wait_until_dead(handle: Any, method: str, patience_s: float = 60.0) -> None:
    """``ray.kill`` the actor behind ``handle`` and return once it is dead.

    ``ray.kill`` returns before the actor is gone: a call sent right after it can still reach the
    live actor (a test failed that way on a loaded machine). This polls the actual condition, a
    call to ``method`` (a cheap method of the actor taking no arguments) failing as calls to a
    dead actor do, with a generous deadline instead of a sleep.
    """
    import ray

    ray.kill(handle, no_restart=True)
    wait_until_dead(handle, method, patience_s)


def wait_until_dead(handle: Any, method: str, patience_s: float = 60.0) -> None:
    """Return once calls to ``method`` of the actor behind ``handle`` fail as calls to a dead actor do.

    For an actor something else killed (a service's ``close``, which calls ``ray.kill`` and so
    returns before the actor is gone). Fails the test if it still answers after ``patience_s``.
    """
    import ray
    from ray.exceptions import RayActorError

    deadline = time.monotonic() + patience_s
    while True:
        try:
            ray.get(getattr(handle, method).remote())
        except RayActorError:
            return
        assert time.monotonic() < deadline, f"the killed actor still answers {method}() after {patience_s:g} s"
        time.sleep(0.05)
