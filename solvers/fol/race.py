"""Countermodels of an Unknown answer, and the finite-model search that races Prover9 on a slow program.

Two jobs, one search (:func:`countermodels`: a finite model of premises ∧ ¬goal and one of
premises ∧ goal, by :func:`symbolkg.solvers.fol.z3_eval.find_models`, one grounding per domain
size for both sides):

* an Unknown answer's certificate needs both models (:func:`symbolkg.solvers.fol.prover9.with_countermodels`);
* when both exist the answer *is* Unknown, whatever Prover9 would say: a finite model of
  premises ∧ ¬goal shows the goal is not entailed, one of premises ∧ goal that its negation is not.
  So a program Prover9 has not decided after :func:`patience` seconds gets a :class:`ModelRace`:
  the same search in a thread of its own (Z3 releases the GIL while it checks; Prover9 runs in its
  own processes), and the first definite answer wins (:func:`symbolkg.solvers.fol.prover9.entailment`):
  a proof stops the search (:meth:`ModelRace.stop` interrupts Z3), two models stop the provers.
  Programs on which Prover9 never ends its search (a transitivity axiom it keeps applying) are
  decided this way in a fraction of a second instead of holding a worker for the whole limit.

Results are cached by the formulas (the program's hash) within the process (:data:`CACHE_SIZE`
entries), so a program solved twice in one worker (a resubmission, the cross-check) searches once;
only definite results are kept (a search cut short by its time budget is not).
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Sequence

from symbolkg.solvers.certificates import entailment as entailment_certificate
from symbolkg.solvers.fol import z3_eval
from symbolkg.solvers.fol.syntax import Formula, Not
from symbolkg.solvers.fol.z3_eval import ModelSearch

#: ``Outcome.backend`` of an answer the race decided.
BACKEND = "z3"

#: :func:`precheck`: the most individuals, and the Z3 resource units per check, of the search before
#: any prover starts (FOLIO's models need 1-3 individuals; the search costs a few milliseconds when it
#: succeeds). Both are deterministic budgets: what the precheck finds does not depend on the
#: machine's load (the largest check over every recorded FOLIO program used 23,012 units).
PRECHECK_MAX_SIZE = 3
PRECHECK_RLIMIT = 200_000

#: Searches kept by :func:`countermodels`' cache (per process); ``SYMBOLKG_FOL_MODEL_CACHE`` sets it
#: (0: none; the solver stage's scale benchmark runs copies of one program set without it).
CACHE_SIZE = int(os.environ.get("SYMBOLKG_FOL_MODEL_CACHE", "512"))

#: :func:`patience`: a race starts after this multiple of the median time Prover9 took to decide
#: the recent programs of this process, clamped to [RACE_AFTER_MIN_S, RACE_AFTER_MAX_S] seconds
#: (RACE_AFTER_DEFAULT_S until RACE_AFTER_SAMPLES programs have been decided).
RACE_AFTER_FACTOR = 4.0
RACE_AFTER_MIN_S = 0.1
RACE_AFTER_MAX_S = 1.0
RACE_AFTER_DEFAULT_S = 0.25
RACE_AFTER_SAMPLES = 8

_cache: OrderedDict[tuple, tuple[ModelSearch, ModelSearch]] = OrderedDict()
_cache_lock = threading.Lock()
_recent: deque[float] = deque(maxlen=64)


def countermodels(
    premises: Sequence[Formula],
    goal: Formula,
    budget_s: float,
    *,
    max_size: int = z3_eval.MAX_MODEL_SIZE,
    within: z3_eval.Session | None = None,
    rlimit: int = z3_eval.MODEL_CHECK_RLIMIT,
) -> tuple[ModelSearch, ModelSearch]:
    """(model of premises ∧ ¬goal, model of premises ∧ goal), each None where none was found.

    The search's own budgets (``max_size`` individuals, ``rlimit`` Z3 units a check) decide what is
    found; ``budget_s`` is a wall-clock safety net.
    """
    key = (tuple(premises), goal, max_size, rlimit)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    sides = z3_eval.find_models(
        list(premises),
        {"goal_false": Not(goal), "goal_true": goal},
        budget_s,
        max_size=max_size,
        within=within,
        rlimit=rlimit,
    )
    result = (sides["goal_false"], sides["goal_true"])
    if all(
        s.model is not None or s.reason.startswith("no model with at most") and "within" not in s.reason for s in result
    ):
        with _cache_lock:
            _cache[key] = result
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return result


def precheck(premises: Sequence[Formula], goal: Formula, timeout_s: float) -> tuple[ModelSearch, ModelSearch]:
    """:func:`countermodels` over at most :data:`PRECHECK_MAX_SIZE` individuals, :data:`PRECHECK_RLIMIT` units a check.

    What a program gets before any prover starts: two models answer Unknown outright, and one
    model rules out the prover search it refutes (:func:`provable_sides`). ``timeout_s`` is only
    the safety net (a quarter of the call's).
    """
    return countermodels(premises, goal, timeout_s / 4, max_size=PRECHECK_MAX_SIZE, rlimit=PRECHECK_RLIMIT)


def provable_sides(goal_false: ModelSearch, goal_true: ModelSearch) -> tuple[str, ...]:
    """The Prover9 searches a proof may still come from (names of :data:`symbolkg.solvers.fol.prover9.SIDES`).

    A model of premises ∧ ¬goal shows the goal is not entailed (no ``goal`` side proof); one of
    premises ∧ goal that its negation is not (no ``negation`` side proof). Either model also shows
    the premises consistent, so neither side can succeed through an inconsistency.
    """
    return tuple(
        side for side, refuted in (("goal", goal_false.model), ("negation", goal_true.model)) if refuted is None
    )


def models_certificate(
    goal: entailment_certificate.Cited, producer: str, goal_false: ModelSearch, goal_true: ModelSearch
) -> dict:
    """The ``entailment`` certificate of an Unknown answer with these models (a side without one says why)."""
    reason = "; ".join(
        f"{side}: {s.reason}" for side, s in (("goal_false", goal_false), ("goal_true", goal_true)) if s.model is None
    )
    return entailment_certificate.unknown(
        goal,
        producer=producer,
        goal_false=goal_false.model.to_json() if goal_false.model else None,
        goal_true=goal_true.model.to_json() if goal_true.model else None,
        reason=reason,
    )


def patience() -> float:
    """Seconds Prover9 gets alone before a :class:`ModelRace` joins (module docstring; adapts to the machine's pace)."""
    if len(_recent) < RACE_AFTER_SAMPLES:
        return RACE_AFTER_DEFAULT_S
    return min(RACE_AFTER_MAX_S, max(RACE_AFTER_MIN_S, RACE_AFTER_FACTOR * statistics.median(_recent)))


def record_decision(seconds: float) -> None:
    """Note how long Prover9 took to decide a program on its own (feeds :func:`patience`)."""
    _recent.append(seconds)


class ModelRace:
    """:func:`countermodels` in a thread of its own, started when Prover9 is slow (module docstring).

    The waiting side (:func:`symbolkg.solvers.fol.prover9.entailment`) starts it at
    :attr:`start_at`, watches :meth:`fileno` (readable when the search has ended) and asks
    :meth:`decided`; :meth:`stop` ends it early. :meth:`result` waits for the search.
    """

    def __init__(
        self, premises: Sequence[Formula], goal: Formula, deadline: float, *, start_at: float | None = None
    ) -> None:
        self.premises, self.goal, self.deadline = list(premises), goal, deadline
        self.start_at = time.perf_counter() + patience() if start_at is None else start_at
        self._session: z3_eval.Session | None = None
        self._thread: threading.Thread | None = None
        self._result: tuple[ModelSearch, ModelSearch] | None = None
        self._read_fd = self._write_fd = -1
        self._lock = threading.Lock()  # guards the descriptors between stop() and the thread's end
        self._stopped = False
        self._ended = False  # the thread has written its byte and closed its end

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        """Begin the search in a daemon thread (at most once, never after :meth:`stop`)."""
        if self._thread is None and not self._stopped:
            self._read_fd, self._write_fd = os.pipe()
            self._session = z3_eval.Session()
            self._thread = threading.Thread(target=self._run, name="symbolkg-model-race", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._result = countermodels(
                self.premises, self.goal, max(0.001, self.deadline - time.perf_counter()), within=self._session
            )
        except Exception as exc:  # noqa: BLE001 - a failed race leaves the answer to Prover9; the reason is kept
            failed = ModelSearch(None, f"model search failed: {type(exc).__name__}: {exc}")
            self._result = (failed, failed)
        finally:
            with self._lock:
                os.write(self._write_fd, b"x")
                os.close(self._write_fd)
                self._ended = True
                if self._stopped:  # stop() gave up waiting: the last one out closes the read end
                    os.close(self._read_fd)

    def fileno(self) -> int:
        """A descriptor that becomes readable when the search has ended."""
        return self._read_fd

    def finished(self) -> bool:
        return self._result is not None

    def decided(self) -> bool:
        """Both models found: the answer is Unknown."""
        return self._result is not None and all(s.model is not None for s in self._result)

    def result(self, timeout_s: float) -> tuple[ModelSearch, ModelSearch] | None:
        """The search's result, waiting up to ``timeout_s`` for it; None if not started or not done in time."""
        if self._thread is None:
            return None
        self._thread.join(max(0.0, timeout_s))
        return self._result

    def stop(self) -> None:
        """End the search now (Z3 interrupted) and release the descriptors; the thread ends on its own."""
        if self._stopped:
            return
        if self._session is not None and self._result is None:
            self._session.interrupt()
        if self._thread is not None:
            self._thread.join(1.0)
        with self._lock:
            self._stopped = True
            if self._thread is not None and self._ended:
                os.close(self._read_fd)  # else the thread closes it when it ends
