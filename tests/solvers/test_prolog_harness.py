"""The SWI-Prolog harnesses are real Prolog files.

They ship as package data, load from their installed path, and are lint-clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from symbolkg.solvers.prolog import process

SWIPL = shutil.which(os.environ.get("SYMBOLKG_SWIPL") or "swipl")
pytestmark = pytest.mark.skipif(SWIPL is None, reason="SWI-Prolog not installed")


@pytest.mark.parametrize("harness", ["query_harness.pl", "session_harness.pl"])
def test_harness_loads_without_a_warning_and_passes_check(harness: str) -> None:
    path = process.harness_path(harness)
    assert Path(path).parent == process.HARNESS_DIR
    done = subprocess.run(
        [
            SWIPL,
            "-f",
            "none",
            "--no-packs",
            "-q",
            "-g",
            f"load_files('{path}', []), check, writeln(lint_done), halt",
            "-t",
            "halt(1)",
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "lint_done" in done.stdout, output
    # load_files/2 and check/0 print every warning (singletons, undefined or unreachable predicates) on stderr.
    assert "Warning" not in output and "ERROR" not in output, output


def test_every_harness_file_is_package_data() -> None:
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"symbolkg.solvers.prolog" = ["*.pl"]' in pyproject
    names = {p.name for p in process.HARNESS_DIR.glob("*.pl")}
    assert {
        "policy.pl",
        "query_harness.pl",
        "session_harness.pl",
        "session_guard.pl",
        "session_load.pl",
        "session_goals.pl",
        "session_tools.pl",
    } <= names


def test_a_missing_harness_is_reported_as_unavailable() -> None:
    with pytest.raises(process.PrologUnavailable, match="reinstall"):
        process.harness_path("no_such_harness.pl")


def test_processes_start_under_os_limits() -> None:
    """A swipl started here runs under the limits of solvers/runtime/sandbox.py from its first instruction."""
    from symbolkg.solvers.runtime.sandbox import ChildLimits

    proc = process.SwiplProcess(
        [*process.BASE_FLAGS, "-g", "writeln(ready), read_term(_, []), halt"],
        ChildLimits(memory_mb=512, cpu_s=30, file_bytes=1 << 20),
    )
    try:
        assert proc.read_line(time.monotonic() + process.STARTUP_TIMEOUT_S) == b"ready"
        limits = Path(f"/proc/{proc.pid}/limits").read_text()
        assert "swipl" in Path(f"/proc/{proc.pid}/cmdline").read_text()
        row = {line[:26].strip(): line[26:].split() for line in limits.splitlines()[1:]}
        assert row["Max address space"][:2] == [str(512 << 20)] * 2
        assert row["Max cpu time"][:2] == ["30", "35"]
        assert row["Max file size"][0] == str(1 << 20)
        assert row["Max core file size"][0] == "0"
        assert os.getpgid(proc.pid) == proc.pid  # its own process group
    finally:
        proc.kill()
    assert not proc.alive()
