"""A driver killed outright leaves nothing behind: the reaper of a job's processes.

A job's driver starts many processes: Ray's (GCS, raylet, dashboard and runtime-env agents,
workers), solver workers, and the provers those start. Most die with the driver, but not all:
after ``kill -9`` of the driver, Ray's ``DashboardAgent`` and ``RuntimeEnvAgent`` outlive it under
init, and a solver worker busy in a proof finishes it first. A driver cannot clean up after a
SIGKILL, so a second process does.

:func:`start_reaper` starts ``python -m symbolkg.jobs.pipeline.reaper`` with a pipe on its standard
input whose write end only the driver holds. The kernel closes that end when the driver dies, for
whatever reason, so the reaper reads end-of-file exactly then. A driver that ends normally has
cleaned up after itself: :func:`stop_reaper` writes one byte before closing the pipe, and the
reaper then exits without touching anything (the driver may be a test process whose other
children are not the job's). While it waits, the reaper
records every process descended from the driver (pid and start time, read from ``/proc`` every
``poll_s``), because a process whose parent died is re-parented and can no longer be told apart by
its ancestry. So that this cannot happen while the driver lives, :func:`start_reaper` makes the
driver a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): a descendant orphaned during the job
(a daemon that double-forks, Ray's agents when their raylet goes) is re-parented to the driver,
not to init, and stays in the driver's tree. (The cost: such an orphan, if it exits before the job
ends, stays a zombie until the driver exits.) At end-of-file it sends SIGKILL to every recorded
process that still exists with the same start time (so a reused pid is never hit), and to their
descendants, until none is left; then it exits. A process started in the last ``poll_s`` before the
driver died is caught through its parent, which is recorded (unless that parent died in the same
instant).

Linux only (``/proc``); elsewhere :func:`start_reaper` returns None and nothing changes.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

#: How often the reaper records the driver's descendants.
POLL_S = 0.25
_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
_PR_GET_CHILD_SUBREAPER = 37


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of ``pid``; None if it is gone or a zombie (dead,
    waiting for its parent to read its exit status: nothing left to kill)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and ')'
    return None if fields[0] in ("Z", "X") else (int(fields[1]), int(fields[19]))


def _processes() -> dict[int, tuple[int, int]]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None:
                out[int(entry)] = stat
    return out


def descendants(root: int, table: dict[int, tuple[int, int]]) -> dict[int, int]:
    """pid -> start time of every process below ``root`` in ``table`` (pid -> (ppid, start))."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: dict[int, int] = {}
    todo = list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        if pid not in found:
            found[pid] = table[pid][1]
            todo += children.get(pid, ())
    return found


def reap(recorded: dict[int, int], rounds: int = 20) -> int:
    """SIGKILL every recorded process still alive (same start time) and its descendants.

    Returns:
        How many processes were signalled.
    """
    killed = 0
    for _ in range(rounds):
        table = _processes()
        alive = {pid for pid, start in recorded.items() if table.get(pid, (0, -1))[1] == start}
        for pid in list(alive):
            for child, start in descendants(pid, table).items():
                recorded.setdefault(child, start)
                alive.add(child)
        alive.discard(os.getpid())
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    return killed


def watch(driver: int, poll_s: float = POLL_S) -> int:
    """Record the driver's descendants until standard input ends, then reap them unless the
    driver said it ended cleanly (a byte before the end). Returns how many were signalled."""
    recorded: dict[int, int] = {}
    ended = threading.Event()
    clean: list[bool] = []

    def wait_for_eof() -> None:
        while chunk := sys.stdin.buffer.read(1):
            clean.append(bool(chunk))
        ended.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    while not ended.wait(poll_s):
        recorded.update(descendants(driver, _processes()))
    if clean:
        return 0
    recorded.update(descendants(driver, _processes()))
    recorded.pop(os.getpid(), None)
    return reap(recorded)


def _is_subreaper() -> bool:
    flag = ctypes.c_int(0)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    return bool(flag.value)


def _set_subreaper(on: bool) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:  # pragma: no cover - Linux >= 3.4 has it
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def start_reaper() -> subprocess.Popen | None:
    """Start the reaper of this process's descendants (see the module docstring).

    Keep the returned handle for the life of the job (its stdin is the pipe); on a clean exit,
    call :func:`stop_reaper` after the job's own clean-up. Returns None where ``/proc`` is missing.
    """
    if not Path("/proc/self/stat").exists():
        return None
    was_subreaper = _is_subreaper()
    _set_subreaper(True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "symbolkg.jobs.pipeline.reaper", "--driver", str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not in the driver's process group: a killpg of the job spares it
    )
    proc.was_subreaper = was_subreaper  # type: ignore[attr-defined] - stop_reaper restores it
    return proc


def stop_reaper(proc: subprocess.Popen | None, timeout_s: float = 10.0) -> None:
    """The job ended normally: tell the reaper so (it then exits touching nothing) and wait for it.

    This process stops being a subreaper again (unless it was one before :func:`start_reaper`):
    a process that outlives the job (a test process, a notebook) must not adopt the orphans of
    whatever it runs next, e.g. a Ray cluster's agents, which then stay zombies it never reads.
    """
    if proc is None:
        return
    if not getattr(proc, "was_subreaper", True):
        _set_subreaper(False)
    if proc.stdin is not None:
        try:
            proc.stdin.write(b"x")
            proc.stdin.close()
        except BrokenPipeError:
            pass
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="reap a job's processes when its driver dies")
    parser.add_argument("--driver", type=int, required=True)
    parser.add_argument("--poll-s", type=float, default=POLL_S)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the job must not end the reaper first
    watch(args.driver, args.poll_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
