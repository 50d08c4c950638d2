"""The one child-process policy (solvers/runtime/sandbox.py): limits in force from the child's first
instruction, only ever lowered, safe from many threads at once, no preexec_fn."""

from __future__ import annotations

import resource
import subprocess
import sys
import threading

import pytest

from symbolkg.solvers.runtime import sandbox
from symbolkg.solvers.runtime.sandbox import ChildLimits

_SHOW_LIMITS = (
    "import resource as r; print(*[r.getrlimit(k) for k in "
    "(r.RLIMIT_AS, r.RLIMIT_CPU, r.RLIMIT_FSIZE, r.RLIMIT_CORE)], sep=';')"
)


def _limits_of_child(limits: ChildLimits) -> list[tuple[int, int]]:
    proc = sandbox.spawn([sys.executable, "-c", _SHOW_LIMITS], limits, stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    return [tuple(int(x) for x in part.strip("()").split(",")) for part in out.strip().split(";")]


def test_limits_are_in_force_in_the_child():
    as_, cpu, fsize, core = _limits_of_child(ChildLimits(memory_mb=512, cpu_s=7, file_bytes=4096))
    assert as_ == (512 * 1024 * 1024, 512 * 1024 * 1024)
    assert cpu == (7, 7 + sandbox.CPU_HARD_GRACE_S)
    assert fsize == (4096, 4096)
    assert core == (0, 0)


def test_unset_limits_are_inherited():
    as_, cpu, _, _ = _limits_of_child(ChildLimits())
    assert as_ == resource.getrlimit(resource.RLIMIT_AS)
    assert cpu == resource.getrlimit(resource.RLIMIT_CPU)


def test_limits_are_only_lowered():
    """A child of a limited process gets at most the parent's hard limit, never more."""
    inner = (
        f"import sys; sys.path[:0] = {sys.path!r}; "
        "from symbolkg.solvers.runtime import sandbox; "
        "print(sandbox.limited_argv(['/bin/true'], sandbox.ChildLimits(memory_mb=4096)))"
    )
    proc = sandbox.spawn([sys.executable, "-c", inner], ChildLimits(memory_mb=1024), stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=60)
    assert f"--as={1024 * 1024 * 1024}" in out


def test_memory_limit_stops_an_allocation():
    code = "x = bytearray(600 * 1024 * 1024)"
    proc = sandbox.spawn([sys.executable, "-c", code], ChildLimits(memory_mb=300), stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "MemoryError" in err


def test_file_size_limit_stops_a_write(tmp_path):
    code = f"open({str(tmp_path / 'f')!r}, 'wb').write(b'x' * 100000)"
    proc = sandbox.spawn([sys.executable, "-c", code], ChildLimits(file_bytes=1000), stderr=subprocess.PIPE)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert (tmp_path / "f").stat().st_size <= 1000


def test_cpu_limit_stops_a_busy_loop():
    proc = sandbox.spawn([sys.executable, "-c", "while True: pass"], ChildLimits(cpu_s=1))
    proc.wait(timeout=60)  # SIGXCPU at 1 s of CPU time
    assert proc.returncode < 0


def test_own_session_and_no_inherited_descriptors():
    proc = sandbox.spawn(
        [sys.executable, "-c", "import os; print(os.getsid(0) == os.getpid(), sorted(os.listdir('/proc/self/fd')))"],
        ChildLimits(),
        stdout=subprocess.PIPE,
        text=True,
    )
    out, _ = proc.communicate(timeout=60)
    assert out.startswith("True")
    assert out.split(" ", 1)[1].strip() == "['0', '1', '2', '3']"  # 3: the listdir handle itself


def test_many_threads_start_children_at_once():
    results: list[list[tuple[int, int]]] = []
    lock = threading.Lock()

    def start() -> None:
        limits = _limits_of_child(ChildLimits(memory_mb=256))
        with lock:
            results.append(limits)

    threads = [threading.Thread(target=start) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == 12
    assert all(r[0] == (256 * 1024 * 1024,) * 2 for r in results)


def test_preexec_fn_is_refused_and_missing_programs_are_named():
    with pytest.raises(ValueError, match="preexec_fn"):
        sandbox.spawn(["/bin/true"], ChildLimits(), preexec_fn=lambda: None)
    with pytest.raises(FileNotFoundError, match="no-such-program-xyz"):
        sandbox.spawn(["no-such-program-xyz"], ChildLimits())
    with pytest.raises(ValueError, match="memory_mb"):
        ChildLimits(memory_mb=0)
