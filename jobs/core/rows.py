"""Typed records of the batch jobs: problems in, result rows out.

Plain Python: their Arrow schemas, the contract of the Parquet files, are in
:mod:`symbolkg.jobs.core.tables` (every writer goes through its :func:`result_table`). They are
kept apart so that what only needs the records (the CLI's parser, every method module) starts
without importing pyarrow.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from symbolkg.solvers.outcomes import Program


@dataclass(frozen=True)
class Problem:
    """One reasoning problem.

    Attributes:
        id: unique within its dataset (the source's own id, as a string).
        dataset: registry name, e.g. ``"logiclm/folio"`` (``"custom"`` for user files).
        context: premises / story / puzzle setup in natural language.
        question: the question (or statement to judge).
        options: answer options ``"A) ..."``; empty for free-form answers.
        answer: gold answer: an option letter when ``options`` is non-empty,
            otherwise free text (multi-hop QA, math word problems); None if unknown.
        program: a recorded or user-supplied program for this problem, if any.
        meta: dataset-specific extras (JSON-serialisable), e.g. answer aliases,
            SymBa goals, LogicGraph knowledge bases.
    """

    id: str
    dataset: str
    context: str
    question: str
    options: tuple[str, ...] = ()
    answer: str | None = None
    program: Program | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"Problem.id must be a non-empty string, got {self.id!r}")
        object.__setattr__(self, "options", tuple(self.options))

    def with_program(self, program: Program | None) -> Problem:
        return Problem(
            self.id, self.dataset, self.context, self.question, self.options, self.answer, program, self.meta
        )

    def to_row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "dataset": self.dataset,
            "context": self.context,
            "question": self.question,
            "options": list(self.options),
            "answer": self.answer,
            "program_language": self.program.language if self.program else None,
            "program_text": self.program.text if self.program else None,
            "meta": json.dumps(self.meta, sort_keys=True, ensure_ascii=False),
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Problem:
        program = None
        if row.get("program_text") is not None:
            program = Program(language=row["program_language"], text=row["program_text"])
        meta = row.get("meta") or "{}"
        return cls(
            id=row["id"],
            dataset=row["dataset"],
            context=row["context"],
            question=row["question"],
            options=tuple(row.get("options") or ()),
            answer=row.get("answer"),
            program=program,
            meta=json.loads(meta) if isinstance(meta, str) else dict(meta),
        )


@dataclass(frozen=True)
class ResultRow:
    """One problem's result: one row of the results Parquet.

    ``attempts_log``, ``trace``, ``stage_seconds`` and ``certificate`` hold JSON text; their schemas (per
    method, per certificate kind) are in :mod:`symbolkg.jobs.core.schemas`, and every row is checked
    against them when it is written (:func:`symbolkg.jobs.core.tables.result_table`).

    Attributes:
        problem_id: :attr:`Problem.id`.
        dataset: :attr:`Problem.dataset`.
        method: how the program was obtained (``"recorded"`` for given programs).
        language: program language that was run (None if there was no program).
        program: the program text that was run.
        status: :class:`symbolkg.solvers.outcomes.Status` value.
        executed: the program ran to a verdict (Logic-LM's "executable").
        answer: the solver's normalised answer (``True``/``False``/``Unknown``, letter, ...).
        predicted: the answer mapped onto the problem's answer space (option letter
            or text); None when the program gave none. Never a random guess.
        gold: :attr:`Problem.answer`.
        correct: ``predicted == gold`` (False when unexecuted).
        error_kind, error_message, error_line: why it did not execute / answer.
        proof: proof, model or trace (possibly truncated).
        backend: which solver ran it.
        solve_seconds: solver time as measured inside the worker.
        latency_seconds: submit-to-result time seen by the job (includes queueing).
        worker: which worker ran it (``pid@host``).
        attempts: how many times the pool had to run the final program (>1 after a worker crash).
        finished_at: UNIX time the row was produced.
        model: the LLM that wrote the program / answer (None for given programs).
        prompt_tokens, completion_tokens: LLM tokens spent on this problem, all rounds
            (cache hits cost 0).
        llm_calls, cached_calls: LLM requests made, and how many the cache answered.
        llm_seconds: summed LLM latency of this problem's requests.
        rounds: programs written and run (1 = first formulation; 0 = none); with
            ``--logiclm-samples``, every sample's.
        success_round: the round whose program executed (None if none did); with
            ``--logiclm-samples``, the round of the sample whose program the row reports.
        attempts_log: JSON list, one object per round: program, completion, status,
            error, tokens, latency (every attempt is kept, not only the last). With
            ``--logiclm-samples K`` > 1: every sample's rounds, sample by sample, each with its ``seed``.
        fallback_method, fallback_predicted, fallback_correct: the named fallback
            method's answer for problems the main method left unanswered; counted
            separately, never folded into ``correct``.
        route: the solver the router chose (``z3`` / ``prover9`` / ``prolog``; ``symbolkg`` only).
        trace: JSON object, the intermediates of the stages before formalization (``symbolkg``:
            the LKG used, the retrieved and pruned node ids, the route and its reasons, which
            premises were formalized); ``logiclm``: the formalization checks' findings, and with
            ``--logiclm-samples K`` > 1 every sample (``samples``: seed, answer, executed, rank,
            counted, why not, checks, program, ...) and the count (``vote``)
            (:func:`symbolkg.jobs.methods.logiclm.run_samples`); ``{}`` for other methods.
        stage_seconds: JSON object, stage -> seconds this problem spent in it (waits for the
            engine and the solver pool included), e.g. ``lkg``, ``retrieve``, ``route``,
            ``formalize``, ``solve``, ``refine``.
        certificate: JSON object, the final outcome's certificate
            (:mod:`symbolkg.solvers.certificates`; ``symbolkg verify`` re-checks it), or None.
    """

    problem_id: str
    dataset: str
    method: str
    language: str | None
    program: str | None
    status: str
    executed: bool
    answer: str | None
    predicted: str | None
    gold: str | None
    correct: bool
    error_kind: str | None
    error_message: str | None
    error_line: int | None
    proof: str | None
    backend: str
    solve_seconds: float
    latency_seconds: float
    worker: str
    attempts: int
    finished_at: float
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    cached_calls: int = 0
    llm_seconds: float = 0.0
    rounds: int = 0
    success_round: int | None = None
    attempts_log: str = "[]"
    fallback_method: str | None = None
    fallback_predicted: str | None = None
    fallback_correct: bool | None = None
    route: str | None = None
    trace: str = "{}"
    stage_seconds: str = "{}"
    certificate: str | None = None

    def to_row(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ResultRow:
        return cls(**{f.name: row[f.name] for f in fields(cls) if f.name in row})


def certificate_json(certificate: dict[str, Any] | None) -> str | None:
    """An outcome's certificate as the ``certificate`` column holds it (None stays None)."""
    return None if certificate is None else json.dumps(certificate, sort_keys=True, ensure_ascii=False)
