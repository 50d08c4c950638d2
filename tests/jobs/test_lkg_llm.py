"""LKG extraction with the embedded vLLM CPU engine (SmolLM2-135M-Instruct) over FOLIO dev contexts.

What a 135M model extracts is what the store holds; these tests check that the offline
build runs end to end (the first build with the engine in a Ray LLM actor, as on a cluster),
that every output validates (contexts cut into chunks of about two sentences, each
structured-decoded to its own schema), that every stored graph keeps to the validation rules
(each raw_text is in its context, each edge joins stored nodes), that a second build is served
entirely from the store, and that hybrid retrieval with LLM query entities and pruning runs
over the built store (asking the session's shared vLLM server, tests/llm_server.py). CI builds one
story (shared by 3 problems, 4 chunks); benchmarks/llm_methods.py --runs lkg builds 3 and
benchmarks/lkg_extraction.py 16, with validity and speed. Validity is not quality:
benchmarks/lkg_quality.py measures how much of the hand-checked graphs a model recovers.
"""

from __future__ import annotations

import json

import pytest

from symbolkg.jobs.cli import main
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.retrieval.lkg.canonical import collapse_whitespace
from symbolkg.retrieval.lkg.store import LKGStore
from tests.conftest import data_or_skip, openai_engine_args, requires_vllm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800), requires_vllm]

LIMIT = 3  # FOLIO dev problems: one story shared by all three


@pytest.fixture
def ray_down():
    yield
    import ray

    ray.shutdown()


def build(store, capsys, *extra: str) -> dict:
    capsys.readouterr()
    code = main(
        [
            "lkg",
            "build",
            "--dataset",
            "folio",
            "--limit",
            str(LIMIT),
            "--store",
            str(store),
            "--json",
            "--no-progress",
            "--data-dir",
            str(data_or_skip()),
            "--max-tokens",
            "2048",
            "--chunk-chars",
            "200",
            "--max-repair-rounds",
            "1",
            *extra,
        ]
    )
    assert code == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_lkg_build_on_folio_then_a_rebuild_served_from_the_store(tmp_path, capsys, ray_down, vllm_server):
    store_dir = tmp_path / "lkg"
    first = build(store_dir, capsys, "--llm-actor")  # the engine in a Ray LLM actor, as on a cluster
    problems = load_dataset("logiclm/folio", data_or_skip(), limit=LIMIT).problems
    contexts = {p.context for p in problems}
    assert first["problems"] == LIMIT and first["contexts"] == len(contexts) == 1
    assert first["cache_misses"] == first["contexts"] and first["cache_hits"] == 0
    # every output validates: small chunks, each structured-decoded to its own schema (quotes, names,
    # ids and edge endpoints constrained), with room for the longest output such a schema admits
    assert (first["valid"], first["invalid"], first["issue_kinds"]) == (first["contexts"], 0, {}), first
    assert first["completion_tokens"] > 0 and first["llm_calls"] >= first["contexts"]

    store = LKGStore(store_dir)
    by_id = {p.id: p for p in problems}
    for pid, problem in by_id.items():
        graph = store.graph_for_problem(pid)
        record = store.context(graph.context_key)
        assert record is not None and record.model == "smollm2-135m"
        assert (record.status == "valid") == (not record.errors)
        text = collapse_whitespace(problem.context)
        for node in graph.nodes:  # what was stored passed validation
            raw = getattr(node, "raw_text", "")
            assert not raw or collapse_whitespace(raw) in text
        ids = {n.id for n in graph.nodes}
        assert all(e.source_id in ids and e.target_id in ids for e in graph.edges)

    second = build(store_dir, capsys)
    assert second["cache_hits"] == second["contexts"] == first["contexts"] and second["cache_misses"] == 0
    assert second["completion_tokens"] == second["prompt_tokens"] == second["llm_calls"] == 0
    assert second["nodes"] == first["nodes"] and second["edges"] == first["edges"]
    assert second["seconds_saved"] > 0 and second["wall_seconds"] < first["wall_seconds"]
    print(f"lkg build, SmolLM2-135M, FOLIO[:{LIMIT}]:", json.dumps(first), "\nrebuild:", json.dumps(second))

    # hybrid retrieval over the built store (MiniLM indexes built on first use), with the LLM
    # naming the query entities and pruning the hull; failures fall back and are recorded
    capsys.readouterr()
    code = main(
        [
            "retrieve",
            "--store",
            str(store_dir),
            "--query",
            problems[0].question,
            "--prune",
            "--json",
            "--max-nodes",
            "48",
            *openai_engine_args(vllm_server),
        ]
    )
    assert code == 0
    found = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert found["entities_source"] in ("llm", "lexical-fallback")
    assert found["prune_source"] in ("llm", "fallback", "empty") and set(found["kept"]) <= set(found["hull"])
    assert found["prompt_tokens"] > 0 and (store_dir / "indexes" / "all-MiniLM-L6-v2").is_dir()
    print(
        "retrieve --prune:",
        json.dumps({k: found[k] for k in ("entities", "entities_source", "prune_source", "errors")}),
        len(found["hull"]),
        "->",
        len(found["kept"]),
    )
