"""``symbolkg solve --method symbolkg`` end to end with the embedded model on vLLM, one set per solver route.

What the 135M model achieves is what the report shows (it extracts little, and its programs rarely
run); this checks that every stage runs for real on the first problem of three Logic-LM datasets —
extraction into the LKG store, MiniLM retrieval with LLM query entities and pruning, the router,
formalization with a repair round, the solvers in worker processes — that every intermediate is in
the results and the report (routes, execution rate, rounds, accuracy, per-stage time, per dataset),
and that a rerun is served from the LKG store and the completion cache without loading the model.

The sets run as one mixed stream (``--dataset a,b,...``: ``PER_SET`` of each, interleaved)
through the session's shared vLLM server (``--engine openai``, tests/llm_server.py), so the model is
not loaded again for this test. The rerun also checks that retrieval is stable: a different hull
would change a pruning prompt, miss the completion cache, and cost tokens. (The search runs in a
worker thread here; that Ray index actors give the same rows is tests/jobs/test_symbolkg.py's.)
CI budget: smaller token budgets than the defaults (extraction, stage calls, programs; one repair
round) and one problem per set, the same trade as the logiclm e2e test; a run of 20 per set of all
five sets at larger budgets is in benchmarks/RESULTS.md (benchmarks/llm_methods.py --runs symbolkg).
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from symbolkg.actors.engines.metered import read_request_log
from symbolkg.jobs.cli import main
from symbolkg.jobs.methods.symbolkg_stages import STAGES
from tests.conftest import data_or_skip, openai_engine_args, requires_vllm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800), requires_vllm]

# one set per solver route (ProntoQA -> prolog, FOLIO -> prover9, LogicalDeduction -> z3); the other two
# sets run the same stages on the same routes (benchmarks/llm_methods.py --runs symbolkg runs all five)
DATASETS = ("prontoqa", "folio", "logicaldeduction")
REGISTRY = {"prontoqa": "logiclm/prontoqa", "folio": "logiclm/folio", "logicaldeduction": "logiclm/logicaldeduction"}
BUDGET = (
    "--max-tokens",
    "128",
    "--max-refine-rounds",
    "1",
    "--lkg-max-tokens",
    "128",
    "--lkg-repair-rounds",
    "0",
    "--stage-max-tokens",
    "32",
)
PER_SET = 1  # problem of each dataset


def solve(out, tmp, server) -> int:
    return main(
        [
            "solve",
            "--method",
            "symbolkg",
            "--dataset",
            ",".join(DATASETS),
            "--limit",
            str(PER_SET),
            "--out",
            str(out),
            "--lkg-store",
            str(tmp / "lkg"),
            "--cache",
            str(tmp / "completions"),
            "--executor",
            "local",
            "--workers",
            "2",
            "--no-progress",
            "--data-dir",
            str(data_or_skip()),
            *BUDGET,
            *openai_engine_args(server),
        ]
    )


def report(path, capsys) -> dict:
    capsys.readouterr()
    assert main(["report", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_symbolkg_on_a_few_problems_of_each_set_then_a_free_rerun(tmp_path, capsys, vllm_server):
    first = tmp_path / "mixed.parquet"
    assert solve(first, tmp_path, vllm_server) == 0
    rep = report(first, capsys)
    assert (
        rep["problems"] == PER_SET * len(DATASETS)
        and rep["methods"] == ["symbolkg"]
        and rep["models"] == ["smollm2-135m"]
    )
    assert sorted(rep["by_dataset"]) == sorted(REGISTRY.values())
    for name, ds in rep["by_dataset"].items():
        assert ds["problems"] == PER_SET and sum(ds["routes"].values()) == PER_SET, name
        assert set(ds["routes"]) <= {"z3", "prover9", "prolog"} and 0 <= ds["execution_rate"] <= 1
        assert list(ds["stage_seconds"]) == list(STAGES)
    assert list(rep["stage_seconds"]) == list(STAGES) and rep["stage_seconds"]["lkg"] > 0
    assert rep["completion_tokens"] > 0 and set(rep["rounds_histogram"]) <= {"0", "1", "2"}
    assert (tmp_path / "mixed_stages.png").is_file()
    rows = pq.read_table(first).to_pylist()
    for row in rows:
        trace = json.loads(row["trace"])
        assert trace["lkg"]["source"] in ("store", "extracted", "shared", "llm_error")
        assert trace["route"]["solver"] == row["route"] and trace["route"]["reasons"]
        assert trace["premises"]["source"].startswith(("subgraph", "whole"))
        if trace["retrieve"] is not None:
            assert set(trace["retrieve"]["kept"]) <= set(trace["retrieve"]["hull"])
            assert trace["retrieve"]["entities_source"] in ("llm", "lexical-fallback")
        assert list(json.loads(row["stage_seconds"])) == list(STAGES)
    retrieved = [json.loads(r["trace"])["retrieve"] for r in rows if json.loads(r["trace"])["retrieve"]]
    # the real engine accepts the pruning schema: a pruning request was answered (used, or its output
    # unusable and recorded as a fallback), never refused for its grammar (vLLM once rejected every one)
    assert any(t["prune_source"] in ("llm", "fallback") for t in retrieved), retrieved
    assert not any("Grammar" in e or "grammar" in e for t in retrieved for e in t["errors"])
    # the route follows the problem's kind: True/False/Unknown -> prover9, multiple choice over positions -> z3
    assert rep["by_dataset"]["logiclm/folio"]["routes"] == {"prover9": PER_SET}
    assert rep["by_dataset"]["logiclm/logicaldeduction"]["routes"] == {"z3": PER_SET}
    summary = {
        name: {k: ds[k] for k in ("execution_rate", "accuracy", "routes")} for name, ds in rep["by_dataset"].items()
    }
    print(
        f"symbolkg, SmolLM2-135M, {len(DATASETS)} x {PER_SET}:",
        json.dumps(summary),
        json.dumps({k: rep[k] for k in ("rounds_histogram", "completion_tokens", "wall_seconds", "stage_seconds")}),
    )

    again = tmp_path / "again.parquet"
    assert solve(again, tmp_path, vllm_server) == 0
    rerun = report(again, capsys)
    # every answered request comes from the cache; requests the engine failed are not cached (asked again)
    failed = [len([r for r in read_request_log(p) if r.error]) for p in (first, again)]
    assert rerun["completion_tokens"] == rerun["prompt_tokens"] == 0 and rerun["cached_calls"] > 0
    assert rerun["cached_calls"] + failed[1] == rerun["llm_calls"] and failed[0] == failed[1]
    before = {r["problem_id"]: r for r in rows}
    for row in pq.read_table(again).to_pylist():
        trace = json.loads(row["trace"])
        if json.loads(before[row["problem_id"]]["trace"])["lkg"]["source"] != "llm_error":
            assert trace["lkg"]["source"] == "store"
        assert (row["route"], row["predicted"]) == (
            before[row["problem_id"]]["route"],
            before[row["problem_id"]]["predicted"],
        )
