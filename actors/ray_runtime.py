"""Joining or starting Ray from a job, the one way every actor host does it.

Ray on Linux ties the processes it starts (GCS, raylet, workers) to the *thread* that called
``ray.init`` (``PR_SET_PDEATHSIG``, "kernel fate sharing"): when that thread exits, the kernel
kills them, and about a minute later the driver's core worker gives up on the GCS and ends the
whole process with exit code 1, mid-job and without a traceback. ``asyncio.to_thread`` and
executor threads exit when their pool shuts down, so ``ray.init`` there is a time bomb.
:func:`ensure_ray` refuses to start Ray off the main thread; callers that build actors in a
thread (:class:`~symbolkg.actors.engines.factory.LazyEngine`) call it on the main thread first.
"""

from __future__ import annotations

import threading


def ensure_ray(address: str | None = None) -> None:
    """Initialise Ray in this process unless it already is.

    Args:
        address: the cluster to join (``"auto"``, ``"ray://..."``, ``host:port``); None joins
            ``RAY_ADDRESS`` when set, else starts a local Ray.

    Raises:
        RuntimeError: called off the main thread while Ray is not initialised (see the module
            docstring for why that would kill Ray when the thread ends).
    """
    import ray

    if ray.is_initialized():
        return
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            "Ray must be initialised on the main thread: the processes ray.init starts die with the "
            f"thread that started them (this is {threading.current_thread().name!r}); call "
            "symbolkg.actors.ray_runtime.ensure_ray() on the main thread first"
        )
    ray.init(address=address, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
