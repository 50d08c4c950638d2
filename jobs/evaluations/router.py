"""Router evaluation: SymbolLKG's mixed stream of the five logic datasets.

Ground truth as in the paper: Z3 for AR-LSAT and LogicalDeduction, Prover9 for FOLIO and
ProofWriter, Prolog / LP for ProntoQA. The first ``per_dataset`` problems of each set are
interleaved round-robin into one stream (the router sees no dataset name) and routed by
:func:`symbolkg.solvers.router.route`; features come from the text and, given an LKG store, from each
problem's graph. The report has the accuracy per dataset and overall, which decision-list rule
fired how often per dataset, and the confusion counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest

from symbolkg.actors.engines.base import (
    ChatRequest,
    EngineDeadError,
    EngineError,
    Message,
    SamplingParams,
    StructuredOutput,
)
from symbolkg.jobs.core.concurrency import for_each_in_flight
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.retrieval.lkg.schema import graph_counts
from symbolkg.retrieval.lkg.store import LKGStore
from symbolkg.solvers.router import (
    Route,
    RouteFeatures,
    Solver,
    combine_vote,
    parse_vote,
    route,
    text_features,
    vote_messages,
)

#: dataset key in the report -> (registry name, the solver the paper routes it to)
ROUTER_GROUND_TRUTH: dict[str, tuple[str, str]] = {
    "prontoqa": ("logiclm/prontoqa", "prolog"),
    "proofwriter": ("logiclm/proofwriter", "prover9"),
    "folio": ("logiclm/folio", "prover9"),
    "logicaldeduction": ("logiclm/logicaldeduction", "z3"),
    "ar-lsat": ("logiclm/ar-lsat", "z3"),
}


def problem_features(problem: Problem, store: LKGStore | None = None, *, use_options: bool = True) -> RouteFeatures:
    """Text features of a problem, plus its LKG's counts when the store has its graph."""
    features = text_features(problem.context, problem.question, problem.options, use_options=use_options)
    graph = store.graph_for_problem(problem.id) if store is not None else None
    if graph is not None:
        features = features.with_graph(*graph_counts(graph))
    return features


def mixed_stream(per_dataset: int, data_dir: str | None = None) -> list[tuple[str, Problem]]:
    """The first ``per_dataset`` problems of each dataset, interleaved round-robin."""
    columns = [
        [(key, p) for p in load_dataset(name, data_dir, limit=per_dataset).problems]
        for key, (name, _) in ROUTER_GROUND_TRUTH.items()
    ]
    return [item for row in zip_longest(*columns) for item in row if item is not None]


@dataclass
class RouterReport:
    """Accuracy per dataset and overall (micro: over all problems), plus how the decisions were made."""

    accuracy: dict[str, float]
    overall: float
    overall_macro: float
    problems: dict[str, int]
    rules: dict[str, dict[str, int]] = field(default_factory=dict)
    confusion: dict[str, dict[str, int]] = field(default_factory=dict)
    with_graph: int = 0
    use_options: bool = True
    llm_vote: bool = False

    def to_dict(self) -> dict:
        return {
            "overall": self.overall,
            **self.accuracy,
            "overall_macro": self.overall_macro,
            "problems": self.problems,
            "with_lkg": self.with_graph,
            "option_features": self.use_options,
            "llm_vote": self.llm_vote,
            "rules": self.rules,
            "confusion": self.confusion,
        }

    def format(self) -> str:
        lines = [
            f"router accuracy on a mixed stream of {sum(self.problems.values())} problems "
            f"({self.with_graph} with an LKG; answer-option features {'on' if self.use_options else 'off'}; "
            f"LLM vote {'on' if self.llm_vote else 'off'})"
        ]
        for key, acc in self.accuracy.items():
            truth = ROUTER_GROUND_TRUTH[key][1]
            rules = ", ".join(f"{r} {n}" for r, n in sorted(self.rules[key].items(), key=lambda x: -x[1]))
            lines.append(f"  {key:<17} {acc:6.1%}  of {self.problems[key]:>4} (-> {truth}; rules: {rules})")
        lines.append(f"  {'overall':<17} {self.overall:6.1%}  (macro {self.overall_macro:.1%})")
        return "\n".join(lines)


async def llm_votes(engine, problems: Sequence[Problem], *, max_in_flight: int = 64) -> dict[str, Solver | None]:
    """Ask the LLM which solver fits each problem (structured: one of the three names).

    Returns:
        problem id -> the voted solver, None where the answer was unusable or the engine failed.
    """
    structured = StructuredOutput(choice=("z3", "prover9", "prolog")) if engine.supports_structured else None
    votes: dict[str, Solver | None] = {}

    async def handle(problem: Problem) -> None:
        messages = vote_messages(problem.context, problem.question, problem.options)
        request = ChatRequest(
            tuple(Message(r, c) for r, c in messages),
            SamplingParams(max_tokens=8),  # type: ignore[arg-type]
            structured,
            problem_id=problem.id,
            purpose="route",
            request_id=f"{problem.id}/route",
        )
        try:
            votes[problem.id] = parse_vote((await engine.generate([request]))[0].text)
        except EngineDeadError:
            raise
        except EngineError:
            votes[problem.id] = None

    await for_each_in_flight(problems, handle, max_in_flight)
    return votes


def evaluate_router(
    stream: Sequence[tuple[str, Problem]],
    store: LKGStore | None = None,
    *,
    use_options: bool = True,
    votes: Mapping[str, Solver | None] | None = None,
) -> tuple[RouterReport, list[tuple[str, Problem, Route]]]:
    """Route every problem of the stream; the report and each (dataset key, problem, route).

    With ``votes`` (problem id -> the LLM's solver), each route is :func:`~symbolkg.solvers.router.combine_vote`d.
    """
    routed = []
    for key, p in stream:
        r = route(problem_features(p, store, use_options=use_options))
        routed.append((key, p, combine_vote(r, votes.get(p.id)) if votes is not None else r))
    correct: Counter[str] = Counter()
    total: Counter[str] = Counter()
    rules: dict[str, Counter[str]] = {k: Counter() for k in ROUTER_GROUND_TRUTH}
    confusion: dict[str, Counter[str]] = {k: Counter() for k in ROUTER_GROUND_TRUTH}
    for key, _, r in routed:
        total[key] += 1
        correct[key] += r.solver == ROUTER_GROUND_TRUTH[key][1]
        rules[key][r.rule] += 1
        confusion[key][r.solver] += 1
    keys = [k for k in ROUTER_GROUND_TRUTH if total[k]]
    accuracy = {k: round(correct[k] / total[k], 4) for k in keys}
    n = sum(total.values())
    report = RouterReport(
        accuracy=accuracy,
        overall=round(sum(correct.values()) / n, 4) if n else 0.0,
        overall_macro=round(sum(accuracy.values()) / len(accuracy), 4) if accuracy else 0.0,
        problems={k: total[k] for k in keys},
        rules={k: dict(rules[k]) for k in keys},
        confusion={k: dict(confusion[k]) for k in keys},
        with_graph=sum(r.features.has_graph for _, _, r in routed),
        use_options=use_options,
        llm_vote=votes is not None,
    )
    return report, routed
