"""``multipath``: LogicGraph's method: the LLM writes every proof it can find; each is verified step by step.

One problem is one LogicGraph instance (``--dataset logicgraph/<tier>``; the adapter keeps the
knowledge base, target and reference proofs in ``problem.meta``). The method asks the model for as
many independent proofs as it can (structured-decoded to the instance's own schema: the seven rule
names, its premise ids and atoms, :func:`~symbolkg.solvers.logicgraph.prompts.answer_schema`),
checks every proof step by step (:func:`~symbolkg.solvers.logicgraph.scoring.verify_instance`), and
enumerates the complete list of minimal supports by labelled elimination, certified
(:func:`~symbolkg.solvers.logicgraph.elimination.minimal_supports`), to say which of them the valid
proofs cover. The row's answer is ``A`` (the goal is derivable) when at least one proof is valid;
its trace holds the per-proof verdicts and the supports matched.

The job (``symbolkg solve --method multipath``) brings resumability, gates, the results store and
the report, as for every method. ``symbolkg logicgraph verify --results RUN.parquet``
(:mod:`symbolkg.jobs.logicgraph.results`) derives LogicGraph's answers file and the paper's metrics
from the rows: the row's ``program`` is the model's raw completion, and its one ``attempts_log``
entry records how the completion came back (finish reason, structured, cached, prompt version).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from symbolkg.actors.engines.base import Completion, EngineDeadError, EngineError, SamplingParams
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.methods.base import Method, MethodContext
from symbolkg.solvers.logicgraph.answers import Answer
from symbolkg.solvers.logicgraph.elimination import minimal_supports
from symbolkg.solvers.logicgraph.elimination_check import check_certificate
from symbolkg.solvers.logicgraph.instances import Instance, InstanceError
from symbolkg.solvers.logicgraph.prompts import PROMPT_VERSION, SHOW_CHOICES, answer_schema, messages, parse_answer
from symbolkg.solvers.logicgraph.scoring import verify_instance
from symbolkg.solvers.outcomes import CertificateError, ErrorKind, Outcome, Status

__all__ = ["FLAGS", "Multipath", "instance_of"]

#: The method's own flags: name -> argparse keywords. ``symbolkg solve`` takes them as
#: ``--multipath-NAME`` and stores ``multipath_NAME``.
FLAGS: dict[str, dict[str, Any]] = {
    "show": {
        "choices": SHOW_CHOICES,
        "default": "both",
        "help": "premises as formulas and English (default), formulas only, or English only (the paper's setting)",
    },
    "max-proofs": {"type": int, "default": 8, "help": "most proofs the schema allows in one answer (default 8)"},
    "max-steps": {"type": int, "default": 16, "help": "most steps per proof the schema allows (default 16)"},
}


def instance_of(problem: Problem) -> Instance:
    """The LogicGraph instance behind a problem of a ``logicgraph/<tier>`` dataset.

    Raises:
        InstanceError: the problem carries no LogicGraph knowledge base (another dataset).
    """
    meta = problem.meta or {}
    if "knowledge_base" not in meta or "target" not in meta:
        raise InstanceError(
            f"{problem.id}: not a LogicGraph problem (no knowledge base in its meta); use --dataset logicgraph/<tier>"
        )
    record = {
        "id": problem.id,
        "knowledge_base": meta["knowledge_base"],
        "target": meta["target"],
        "solutions": meta.get("solutions") or {"solutions": []},
        "question": {"question": meta["target"].get("natural", "")},
    }
    return Instance.from_record(record)


class Multipath(Method):
    """LogicGraph's multi-path proofs: ask, verify each proof, match against the certified supports."""

    name = "multipath"
    summary = "LogicGraph: the LLM writes every proof it finds; each is verified step by step"

    def __init__(self, *, show: str = "both", max_proofs: int = 8, max_steps: int = 16) -> None:
        if show not in SHOW_CHOICES:
            raise ValueError(f"--multipath-show must be one of {', '.join(SHOW_CHOICES)}, got {show!r}")
        if max_proofs < 1 or max_steps < 1:
            raise ValueError(
                f"--multipath-max-proofs and --multipath-max-steps must be >= 1, got {max_proofs}, {max_steps}"
            )
        self.show = show
        self.max_proofs = max_proofs
        self.max_steps = max_steps

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        """The :data:`FLAGS`, each as ``--multipath-NAME``."""
        for name, kwargs in FLAGS.items():
            metavar = {} if "choices" in kwargs else {"metavar": name.replace("-", "_").upper()}
            group.add_argument(f"--multipath-{name}", dest=_dest(name), **metavar, **kwargs)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Method:
        value = {name: getattr(args, _dest(name), kw["default"]) for name, kw in FLAGS.items()}
        return cls(show=value["show"], max_proofs=value["max-proofs"], max_steps=value["max-steps"])

    def run_info(self) -> dict[str, Any]:
        return {
            "show": self.show,
            "max_proofs": self.max_proofs,
            "max_steps": self.max_steps,
            "prompt_version": PROMPT_VERSION,
        }

    async def run(self, problem: Problem, ctx: MethodContext) -> ResultRow:
        t0 = time.monotonic()
        try:
            instance = instance_of(problem)
        except InstanceError as exc:
            outcome = Outcome.error(Status.PARSE_ERROR, ErrorKind.UNSUPPORTED, str(exc), backend="logicgraph")
            return ctx.row(problem, outcome, predicted=None, latency_s=time.monotonic() - t0)
        request = ctx.chat(
            problem,
            "logicgraph_proofs",
            [(m["role"], m["content"]) for m in messages(instance, show=self.show)],
            params=SamplingParams(max_tokens=ctx.config.formulate_params.max_tokens),
            structured=ctx.structured(
                {"json_schema": answer_schema(instance, max_proofs=self.max_proofs, max_steps=self.max_steps)}
            ),
            request_id=f"{problem.id}/proofs",
        )
        try:
            completion = await ctx.ask(request)
        except EngineDeadError:
            raise
        except EngineError as exc:
            outcome = Outcome.error(Status.RUNTIME_ERROR, ErrorKind.LLM, str(exc), backend="llm")
            return ctx.row(problem, outcome, predicted=None, latency_s=time.monotonic() - t0)
        parsed = parse_answer(completion.text, instance)
        return self._verified_row(problem, ctx, instance, parsed, completion, t0)

    def _verified_row(
        self, problem: Problem, ctx: MethodContext, instance: Instance, parsed: Any, completion: Completion, t0: float
    ) -> ResultRow:
        """Verify the parsed proofs and match them against the certified minimal supports."""
        t_verify = time.monotonic()
        result = verify_instance(instance, Answer(instance.id, tuple(parsed.solutions)))
        premises = {pid: p.formula for pid, p in instance.premises.items()}
        supports = minimal_supports(premises, instance.goal, recheck=False)
        try:
            check_certificate(premises, instance.goal, supports)
            certified = True
        except CertificateError:
            certified = False
        covered = {s for p in result.valid_paths for s in supports.supports if s <= p.used_ids}
        trace = {
            "paths": len(result.paths),
            "valid_paths": len(result.valid_paths),
            "verdicts": [
                {"valid": p.valid, "minimal": p.minimal, "labels": list(p.labels()), "used_ids": sorted(p.used_ids)}
                for p in result.paths
            ],
            "supports": [sorted(s) for s in supports.supports],
            "supports_complete": supports.complete,
            "supports_certified": certified,
            "supports_covered": [sorted(s) for s in sorted(covered, key=sorted)],
            "parse_errors": list(parsed.errors),
            "truncated": parsed.truncated,
        }
        valid = list(result.valid_paths)
        if valid:
            proofs = [parsed.solutions[p.index] for p in valid]
            outcome = Outcome(
                Status.PROVED,
                answer="A",
                proof=json.dumps(proofs, ensure_ascii=False),
                backend="logicgraph-verify",
                seconds=time.monotonic() - t_verify,
            )
        else:
            why = "no proof in the answer" if not result.paths else "no proof in the answer is valid step by step"
            outcome = Outcome(
                Status.UNKNOWN,
                proof=None,
                error_message=why,
                backend="logicgraph-verify",
                seconds=time.monotonic() - t_verify,
            )
        attempts = [
            {
                "round": 1,
                "purpose": "logicgraph_proofs",
                "completion": completion.text,
                "parse_errors": list(parsed.errors),
                "finish_reason": completion.finish_reason,
                "structured": completion.structured,
                "cached": completion.cached,
                "prompt_version": PROMPT_VERSION,
            }
        ]
        if completion.stored_tokens is not None:  # a cache hit: what the model spent on it
            attempts[0]["stored_tokens"] = list(completion.stored_tokens)
        return ctx.row(
            problem,
            outcome,
            predicted="A" if valid else None,
            language="logicgraph-proofs",
            program=completion.text,
            attempts=attempts,
            latency_s=time.monotonic() - t0,
            trace=trace,
            stage_seconds={"verify": time.monotonic() - t_verify},
        )


def _dest(flag: str) -> str:
    """Where argparse stores the method's flag ``flag`` (``max-proofs`` -> ``multipath_max_proofs``)."""
    return "multipath_" + flag.replace("-", "_")
