"""The reaper: after a SIGKILL of the driver, no process of the job is left; after a clean end,
nothing is touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from symbolkg.jobs.pipeline import reaper

# A driver with a reaper, a child in its own session (like a solver worker), a grandchild whose
# parent exits at once (re-parented to init, like Ray's agents) and a child that ignores SIGTERM.
DRIVER = textwrap.dedent("""
    import subprocess, sys, time
    from symbolkg.jobs.pipeline import reaper
    r = reaper.start_reaper()
    ignores_term = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    sleeper = [sys.executable, "-c", ignores_term]
    kids = [subprocess.Popen(sleeper, start_new_session=True)]
    orphaner = subprocess.Popen([sys.executable, "-c",
        "import subprocess, sys; p = subprocess.Popen(sys.argv[1:], start_new_session=True); print(p.pid, flush=True)",
        *sleeper], stdout=subprocess.PIPE, text=True)
    grandchild = int(orphaner.stdout.readline())
    orphaner.wait()
    print(" ".join(str(p) for p in [r.pid, kids[0].pid, grandchild]), flush=True)
    if sys.argv[1] == "clean":
        reaper.stop_reaper(r)
        print("stopped", flush=True)
    time.sleep(600)
""")


def _alive(pid: int) -> bool:
    return reaper._stat(pid) is not None  # None: gone, or a zombie


def _start(mode: str) -> tuple[subprocess.Popen, list[int]]:
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, mode], stdout=subprocess.PIPE, text=True)
    pids = [int(x) for x in proc.stdout.readline().split()]
    time.sleep(3 * reaper.POLL_S)  # the reaper records them
    return proc, pids


def test_a_killed_driver_leaves_no_process():
    driver, (reaper_pid, child, grandchild) = _start("kill")
    assert all(_alive(p) for p in (reaper_pid, child, grandchild))
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in (reaper_pid, child, grandchild)):
        time.sleep(0.05)
    assert not any(_alive(p) for p in (child, grandchild)), "a process of the killed job is still alive"
    assert not _alive(reaper_pid), "the reaper did not exit"


def test_a_clean_end_touches_nothing():
    driver, (reaper_pid, child, grandchild) = _start("clean")
    try:
        assert driver.stdout.readline().strip() == "stopped"
        assert not _alive(reaper_pid)
        assert _alive(child) and _alive(grandchild)
    finally:
        for pid in (child, grandchild, driver.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        driver.wait()


def test_descendants_follow_the_tree():
    table = {10: (1, 100), 11: (10, 101), 12: (11, 102), 13: (1, 103), 14: (12, 104)}
    assert reaper.descendants(10, table) == {11: 101, 12: 102, 14: 104}
    assert reaper.descendants(13, table) == {}


def test_a_reused_pid_is_not_killed():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = reaper._stat(sleeper.pid)[1]
        assert reaper.reap({sleeper.pid: start + 1}) == 0  # another start time: another process
        assert sleeper.poll() is None
        assert reaper.reap({sleeper.pid: start}) == 1
        assert sleeper.wait(timeout=10) == -signal.SIGKILL
    finally:
        sleeper.kill()


def test_a_clean_end_gives_back_the_subreaper_role():
    assert not reaper._is_subreaper()  # a pytest process is none
    proc = reaper.start_reaper()
    try:
        assert reaper._is_subreaper()  # while the job runs, its orphans stay in its tree
    finally:
        reaper.stop_reaper(proc)
    assert not reaper._is_subreaper()  # afterwards this process adopts nothing of what it runs next
