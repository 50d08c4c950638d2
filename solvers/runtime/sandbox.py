"""One policy for every child process we start: solver workers, Prover9, SWI-Prolog.

A child gets OS limits (``RLIMIT_AS``, ``RLIMIT_CPU``, ``RLIMIT_FSIZE``, no core files) that are in
force before its first instruction, its own process group (``start_new_session``: killing the group
reaches whatever it starts), and no inherited file descriptors.

How the limits are set, and why this way: the child is started as
``prlimit --as=N --cpu=S:H --fsize=F --core=0 -- PROGRAM ARGS`` (util-linux's ``prlimit``, part of
every Debian/Ubuntu base system), which sets the limits on itself and then ``exec``\\ s the
program. The alternatives are worse:

* ``preexec_fn`` runs Python code between ``fork`` and ``exec``; Python's documentation says it
  is not safe in the presence of threads (a lock held by another thread at fork time deadlocks
  the child), and our parents are threaded (the local solver pool restarts workers from its
  threads; the MCP server creates sessions from many threads).
* ``resource.prlimit(pid, ...)`` after the start leaves a window in which the child runs
  without limits.

Limits are only ever lowered: a value above the parent's hard limit is clamped to it (a solver
worker runs under a memory limit, and the Prover9 it starts inherits it and may only get less).
``prlimit`` is looked up once; if it is missing, :func:`spawn` raises :class:`SandboxError` with
the package to install rather than starting a process without limits.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

#: ``RLIMIT_CPU``: the kernel sends SIGXCPU at the soft limit and SIGKILL at the hard one.
CPU_HARD_GRACE_S = 5


class SandboxError(RuntimeError):
    """The sandbox cannot be set up on this machine (an installation problem, not a bad program)."""


@dataclass(frozen=True)
class ChildLimits:
    """OS limits of one child process; ``None`` leaves that limit as the parent has it.

    Attributes:
        memory_mb: address-space limit (``RLIMIT_AS``) in MiB.
        cpu_s: CPU-time limit (``RLIMIT_CPU``) in seconds: a backstop if the parent cannot kill the
            child in time (wall-clock limits are the caller's job); the hard limit is
            ``cpu_s + CPU_HARD_GRACE_S``.
        file_bytes: largest file the child may write (``RLIMIT_FSIZE``).
    """

    memory_mb: int | None = None
    cpu_s: int | None = None
    file_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in ("memory_mb", "cpu_s", "file_bytes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"ChildLimits.{name} must be a positive int or None, got {value!r}")


@functools.lru_cache(maxsize=1)
def _prlimit_path() -> str:
    path = shutil.which("prlimit") or next((p for p in ("/usr/bin/prlimit", "/bin/prlimit") if os.path.exists(p)), None)
    if path is None:
        raise SandboxError(
            "util-linux's `prlimit` is not installed (apt-get install util-linux): "
            "no child process is started without its limits"
        )
    return path


def _clamp(which: int, value: int) -> int:
    """``value`` lowered to the parent's hard limit (a child may never get more than we have)."""
    _, hard = resource.getrlimit(which)
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def limited_argv(argv: list[str], limits: ChildLimits) -> list[str]:
    """The command line that starts ``argv`` under ``limits`` (exposed for tests and logs)."""
    flags = ["--core=0"]
    if limits.memory_mb is not None:
        flags.append(f"--as={_clamp(resource.RLIMIT_AS, limits.memory_mb * 1024 * 1024)}")
    if limits.cpu_s is not None:
        soft = _clamp(resource.RLIMIT_CPU, limits.cpu_s)
        flags.append(f"--cpu={soft}:{_clamp(resource.RLIMIT_CPU, soft + CPU_HARD_GRACE_S)}")
    if limits.file_bytes is not None:
        flags.append(f"--fsize={_clamp(resource.RLIMIT_FSIZE, limits.file_bytes)}")
    program = argv[0] if os.path.sep in argv[0] else shutil.which(argv[0])
    if program is None or not os.access(program, os.X_OK):
        raise FileNotFoundError(f"program not found or not executable: {argv[0]!r}")
    return [_prlimit_path(), *flags, "--", program, *argv[1:]]


def spawn(argv: list[str], limits: ChildLimits, **popen_kwargs: Any) -> subprocess.Popen:
    """Start ``argv`` under ``limits`` in a new session; safe to call from any thread.

    Args:
        argv: the program and its arguments (``argv[0]`` resolved on ``PATH`` by ``prlimit``).
        limits: the child's OS limits.
        **popen_kwargs: passed to :class:`subprocess.Popen` (stdin/stdout/stderr, cwd, env, ...);
            ``start_new_session`` and ``close_fds`` default to True.

    Raises:
        ValueError: if ``preexec_fn`` is passed (the reason this module exists).
        SandboxError: if ``prlimit`` is missing.
        FileNotFoundError: if ``argv[0]`` is not an executable file or not on ``PATH``.
        OSError: if the program cannot be started.
    """
    if popen_kwargs.get("preexec_fn") is not None:
        raise ValueError(
            "spawn() sets limits without preexec_fn, which is unsafe in a threaded parent; do not pass one"
        )
    popen_kwargs.setdefault("start_new_session", True)
    popen_kwargs.setdefault("close_fds", True)
    return subprocess.Popen(limited_argv(argv, limits), **popen_kwargs)
