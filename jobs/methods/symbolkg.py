"""The SymbolKG method (``symbolkg solve --method symbolkg``): its flags, and the method built from them.

SymbolLKG's pipeline, lkg -> retrieve -> route -> formalize -> solve -> refine -> answer, one
problem at a time as an independent coroutine, is :mod:`symbolkg.jobs.methods.symbolkg_stages`
(the stages, their settings :class:`~symbolkg.jobs.methods.symbolkg_stages.SymbolKGConfig` and the
per-job state :class:`~symbolkg.jobs.methods.symbolkg_stages.SymbolKG`). This module is the method's
face to the registry: ``symbolkg solve`` imports every method to list its flags, on every
command, so it imports the stages (the LKG store, FAISS, pyarrow, the retrieval hosts) only when
the method is built (:meth:`SymbolKGMethod.from_args`) or run.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.methods.base import Method, MethodContext
from symbolkg.jobs.methods.symbolkg_choices import HINTS, INVALID_LKG
from symbolkg.solvers.router import SOLVERS

if TYPE_CHECKING:
    from symbolkg.jobs.methods.symbolkg_stages import SymbolKG


class SymbolKGMethod(Method):
    """SymbolLKG's pipeline as a method: lkg -> retrieve -> route -> formalize -> solve -> refine.

    Args:
        kg: the per-job state (LKG store, extractions in flight, retrieval hosts); closed with the job.
    """

    name = "symbolkg"
    summary = "LKG, hybrid retrieval, route to a solver, then logiclm's loop"
    needs_solver = True

    def __init__(self, kg: SymbolKG | None = None) -> None:
        if kg is None:
            raise ValueError(
                "the symbolkg method needs its LKG store and embedder: SymbolKGMethod(SymbolKG(...)), "
                "or `symbolkg solve --method symbolkg` with --lkg-store"
            )
        self.kg = kg
        self.extra_info: dict[str, Any] = {}
        self._closed = False

    @classmethod
    def add_arguments(cls, g: argparse._ArgumentGroup) -> None:
        g.title = "SymbolKG method (--method symbolkg; the switches are the ablations)"
        g.add_argument(
            "--lkg-store",
            default="runs/lkg",
            help="LKG store: graphs are read from it, and contexts it lacks are extracted into it (default runs/lkg)",
        )
        g.add_argument(
            "--lkg-max-tokens", type=int, default=1024, help="most tokens per extraction request (default 1024)"
        )
        g.add_argument(
            "--lkg-repair-rounds", type=int, default=2, help="extraction repair rounds per chunk (default 2)"
        )
        g.add_argument(
            "--lkg-chunk-chars",
            type=int,
            default=2000,
            help="longest chunk of a context in one extraction request (default 2000; small models "
            "validate more often on ~200, as in `lkg build --chunk-chars`)",
        )
        g.add_argument(
            "--stage-max-tokens",
            type=int,
            default=256,
            help="most tokens of a query-entity, pruning or vote request (default 256)",
        )
        g.add_argument("--hops", type=int, default=4, help="logical hull depth k (default 4)")
        g.add_argument("--no-retrieval", action="store_true", help="formalize the whole context (ablation)")
        g.add_argument(
            "--lkg-hints",
            choices=HINTS,
            default=HINTS[0],
            help="which graphs show their symbols in the formalization prompt: all (default), valid (only a "
            "graph that passed validation), none (ablation: the prompt is logiclm's)",
        )
        g.add_argument(
            "--invalid-lkg",
            choices=INVALID_LKG,
            default=INVALID_LKG[0],
            help="what a graph that failed validation is used for: use (default: searched, routed on and "
            "shown like a valid one) or skip (the whole context, routed on its text, no symbols)",
        )
        g.add_argument("--no-prune", action="store_true", help="keep the whole logical hull (ablation)")
        g.add_argument("--prune-cap", type=int, default=24, help="most nodes the pruning keeps (default 24)")
        g.add_argument("--force-solver", choices=SOLVERS, help="route every problem here (ablation)")
        g.add_argument("--llm-vote", action="store_true", help="ask the LLM too; it overrules only weak router rules")
        g.add_argument("--no-option-features", action="store_true", help="the router does not read the answer options")
        g.add_argument(
            "--embedder",
            choices=("minilm", "bge-m3", "hashing"),
            default="minilm",
            help="dense model of the retrieval (default minilm: all-MiniLM-L6-v2 from its PyPI package)",
        )
        g.add_argument("--embedder-path", help="local model folder (required for bge-m3)")
        g.add_argument(
            "--retrieval-actors",
            type=int,
            default=0,
            help="run the retrieval search (embedding, FAISS, hull) in N Ray index actors; "
            "default 0: a worker thread of this process",
        )
        g.add_argument(
            "--embedder-actor",
            action="store_true",
            help="with --retrieval-actors: embed queries in one shared Ray actor (e.g. BGE-M3 on a GPU)",
        )
        g.add_argument(
            "--embedder-gpus",
            type=float,
            default=0.0,
            help="GPUs the --embedder-actor reserves (default 0; 1 for bge-m3 on a GPU node)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SymbolKGMethod:
        """The method over ``--lkg-store`` with the retrieval hosts the flags ask for
        (:func:`~symbolkg.jobs.methods.symbolkg_stages.state_from_args`).

        Raises:
            ValueError: a bad flag value, or the embedder's model cannot be found.
        """
        # lazy: the stages and their retrieval stack (LKG store, FAISS, pyarrow, Ray) load when the method is built
        from symbolkg.jobs.methods.symbolkg_stages import state_from_args

        method = cls(state_from_args(args))
        method.extra_info = {
            "lkg_store": args.lkg_store,
            "embedder": args.embedder,
            "retrieval_actors": args.retrieval_actors,
            "embedder_actor": args.embedder_actor,
        }
        return method

    def run_info(self) -> dict[str, Any]:
        c = self.kg.config
        return {
            "retrieval": c.retrieval,
            "prune": c.prune.enabled,
            "force_solver": c.force_solver,
            "llm_vote": c.llm_vote,
            "option_features": c.option_features,
            "hints": c.hints,
            "invalid_lkg": c.invalid_lkg,
            **self.extra_info,
        }

    async def run(self, problem: Problem, ctx: MethodContext) -> ResultRow:
        # loaded by now (building the SymbolKG state imported it); kept local for the reason in the module docstring
        from symbolkg.jobs.methods.symbolkg_stages import run_symbolkg

        return await run_symbolkg(problem, ctx, self.kg)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.kg.close()
