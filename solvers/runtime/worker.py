"""The solver worker: a persistent child process that runs programs, and its parent-side handle.

An LLM-written program never runs in the orchestrator. Each solver worker is a
separate Python process (``python -m symbolkg.solvers.runtime.worker``) that keeps its solvers
warm between calls (one Z3 context per process, a persistent SWI-Prolog
subprocess, a Prover9 binary started per call) and speaks JSON lines, one record per line, each
converted once on each side (:meth:`SolveRequest.to_wire` / :meth:`~SolveRequest.from_wire`,
:meth:`Outcome.to_wire` / :meth:`~Outcome.from_wire`):

    parent -> child   {"problem_id": ..., "language": ..., "text": ..., "limits": {...}, "checks": {...}}
    child  -> parent  {"status": ..., "answer": ..., ..., "checks": {...}}   (one outcome per request)

The child runs with the fewest rights that still let it work:

* an address-space limit (``RLIMIT_AS``) inherited by every prover it starts,
  so a memory blow-up ends as ``Status.MEMORY`` or a crash, never as a swapping
  machine;
* no core dumps, a cap on the size of any file it writes (``RLIMIT_FSIZE``),
  a private empty working directory, and an environment scrubbed to what the
  solvers need;
* its own process group, so the parent can kill it together with any Prover9
  or SWI-Prolog child it started.

The parent (:class:`SolverProcess`) enforces the wall-clock limit: a call that
has not answered ``limits.timeout_s + limits.kill_grace_s`` seconds after it was
sent is killed with its whole process group, recorded as ``Status.TIMEOUT``,
and a fresh worker is started for the next call. A worker that dies
mid-call (segfault, OOM killer, ``kill -9``) is recorded as
``ErrorKind.WORKER_CRASH`` and replaced the same way.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time

from symbolkg.solvers import registry
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, SolveRequest, Status
from symbolkg.solvers.runtime import sandbox
from symbolkg.solvers.runtime.sandbox import ChildLimits

#: Environment variables a worker keeps; everything else (API keys, tokens) is dropped.
_ENV_KEEP = (
    "PATH",
    "LANG",
    "LC_ALL",
    "HOME",
    "TMPDIR",
    "SYMBOLKG_PROVER9",
    "SYMBOLKG_SWIPL",
    "OPENBLAS_CORETYPE",
    "SYMBOLKG_FOL_MODEL_CACHE",
)
_MAX_FILE_BYTES = 256 * 1024 * 1024
_MAX_PROOF_CHARS = 20_000


class WorkerStartError(RuntimeError):
    """The worker process could not be started or did not say hello (installation problem)."""


class SolverProcess:
    """Parent-side handle of one solver worker process.

    Not thread-safe: one caller at a time (the Ray actor or a pool thread owns it).

    Args:
        memory_mb: address-space limit of the worker and everything it starts.
        name: label used in ``worker`` columns and logs.
    """

    def __init__(self, memory_mb: int = 2048, name: str = "worker") -> None:
        if memory_mb < 256:
            raise ValueError(f"memory_mb must be >= 256 for a Python worker with Z3 loaded, got {memory_mb}")
        self.memory_mb = memory_mb
        self.name = name
        self.restarts = 0
        self.last_pid: int | None = None  # pid of the process that ran the latest call
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._buffer = b""
        self._eof = False

    # -- lifecycle -------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                return
            self._restart()  # died between calls
        self._workdir = tempfile.TemporaryDirectory(prefix="symbolkg-worker-")
        env = {k: os.environ[k] for k in _ENV_KEEP if k in os.environ}
        env["TMPDIR"] = self._workdir.name
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        self._proc = sandbox.spawn(
            [sys.executable, "-m", "symbolkg.solvers.runtime.worker"],
            ChildLimits(memory_mb=self.memory_mb, file_bytes=_MAX_FILE_BYTES),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self._workdir.name,
            env=env,
            start_new_session=True,  # own process group: killpg reaches provers it started
        )
        self._buffer = b""
        hello = self._read_line(deadline=time.monotonic() + 60.0)
        if hello is None or json.loads(hello).get("ready") is not True:
            code = self._proc.poll()
            self.kill()
            raise WorkerStartError(
                f"solver worker did not start (exit code {code}); "
                "try `python -m symbolkg.solvers.runtime.worker --check`"
            )

    def kill(self) -> None:
        """Kill the worker and every process in its group; safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    close = kill

    def __enter__(self) -> SolverProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    # -- calls -----------------------------------------------------------
    def solve(self, request: SolveRequest) -> Outcome:
        """Run one program; always returns an Outcome, restarting the worker if it had to die."""
        self.start()
        assert self._proc is not None and self._proc.stdin is not None
        self.last_pid = self._proc.pid
        t0 = time.monotonic()
        budget = request.limits.timeout_s + request.limits.kill_grace_s
        try:
            self._proc.stdin.write((request.to_wire() + "\n").encode())
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._crashed(t0, "worker pipe closed before the call")
        line = self._read_line(deadline=t0 + budget)
        if line is None:
            if not self._eof:
                # Still running past its limit: the call ignored its own timeout.
                self._restart()
                return Outcome.error(
                    Status.TIMEOUT,
                    ErrorKind.TIMEOUT,
                    f"killed after {budget:.1f} s (time limit {request.limits.timeout_s:.1f} s)",
                    seconds=time.monotonic() - t0,
                    backend="watchdog",
                )
            return self._crashed(t0, "worker died during the call")
        return Outcome.from_wire(line)

    def _crashed(self, t0: float, what: str) -> Outcome:
        code = None
        if self._proc is not None:
            try:
                code = self._proc.wait(timeout=5.0)  # EOF can come a moment before the exit status
            except subprocess.TimeoutExpired:
                pass
        self._restart()
        # A memory blow-up under RLIMIT_AS ends as MemoryError inside the worker (an outcome);
        # a death is something else (a kill, a segfault in a solver, the OOM killer): the pool
        # retries it once, then records it.
        hint = " (SIGKILL: killed from outside or by the kernel's OOM killer)" if code == -signal.SIGKILL else ""
        return Outcome.error(
            Status.RUNTIME_ERROR,
            ErrorKind.WORKER_CRASH,
            f"{what} (exit code {code}){hint}",
            seconds=time.monotonic() - t0,
            backend="watchdog",
        )

    def _restart(self) -> None:
        self.kill()
        self.restarts += 1

    def _read_line(self, deadline: float) -> bytes | None:
        """One line from the worker, or None on timeout / EOF (then ``self._eof`` is True)."""
        assert self._proc is not None and self._proc.stdout is not None
        self._eof = False
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(timeout=remaining):
                    return None
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    self._eof = True
                    return None
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line


# -- child side ----------------------------------------------------------
def _serve() -> None:
    # Solvers and C libraries may print to stdout; keep the protocol on a private fd.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    proto.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    for raw in sys.stdin:
        if not raw.strip():
            continue
        try:
            request = SolveRequest.from_wire(raw)
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            outcome = Outcome.error(Status.RUNTIME_ERROR, ErrorKind.INTERNAL, f"bad request to worker: {exc}")
        else:
            outcome = registry.run(request)
        if outcome.proof and len(outcome.proof) > _MAX_PROOF_CHARS:
            outcome = dataclasses.replace(outcome, proof=outcome.proof[:_MAX_PROOF_CHARS] + "\n... (truncated)")
        proto.write(outcome.to_wire() + "\n")


def _check() -> int:
    """`python -m symbolkg.solvers.runtime.worker --check`: run one tiny program per language."""
    samples = {
        "smtlib2": "(declare-const x Int)\n(assert (> x 1))\n(check-sat)\n",
        "prover9": "formulas(assumptions).\nP(a).\nend_of_list.\nformulas(goals).\nP(a).\nend_of_list.\n",
        "prolog": "p(a).\n% query: p(a)\n",
    }
    ok = True
    with SolverProcess(name="check") as proc:
        for language, text in samples.items():
            outcome = proc.solve(SolveRequest("check", language, text, Limits(timeout_s=10)))
            good = outcome.executed
            ok &= good
            print(
                f"{language:10s} {outcome.status.value:14s} {outcome.answer!s:8s} {outcome.backend} "
                f"{outcome.error_message or ''}"
            )
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m symbolkg.solvers.runtime.worker", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="start a worker and run one program per native language")
    args = parser.parse_args(argv)
    if args.check:
        return _check()
    _serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
