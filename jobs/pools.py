"""The solver pool a command's flags ask for (``--executor``, ``--workers``, ``--memory-mb``, ...)."""

from __future__ import annotations

import argparse

from symbolkg.solvers.runtime.local_pool import SolverPool


def make_pool(args: argparse.Namespace) -> SolverPool:
    """Local worker threads (``--executor local``) or Ray actors, each owning one worker process."""
    if args.executor == "local":
        from symbolkg.solvers.runtime.local_pool import LocalSolverPool

        return LocalSolverPool(args.workers, memory_mb=args.memory_mb)
    from symbolkg.actors.solver_pool import RaySolverPool

    return RaySolverPool(args.workers, memory_mb=args.memory_mb, num_cpus=args.cpus_per_worker, address=args.ray_address)
