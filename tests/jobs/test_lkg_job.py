"""The LKG build job (jobs/pipeline/lkg_build.py) end to end with a scripted engine and a real Parquet store.

The engine answers with hand-checked extractions (tests/fixtures/lkg/hand_checked.json: two
FOLIO and two LogicalDeduction contexts copied verbatim from the Logic-LM data). What a user of
``symbolkg lkg build`` / ``lkg show`` would notice is checked: the graphs in the store, the
report's counts, the cache on a rerun, repair rounds, invalid contexts, engine failures and
resume, chunking of long contexts, and the CLI's rendering and argument errors.
"""

from __future__ import annotations

import asyncio
import copy
import html
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from symbolkg.actors.engines.base import ChatRequest, EngineDeadError, EngineError
from symbolkg.actors.engines.scripted import ScriptedEngine, prompt_word_count, word_count
from symbolkg.jobs.cli import main as cli_main
from symbolkg.jobs.core.rows import Problem
from symbolkg.jobs.methods.lkg_extract import LKGConfig
from symbolkg.jobs.pipeline.lkg_build import BuildReport, run_lkg_build
from symbolkg.retrieval.lkg.extract import (
    PROMPT_VERSION,
    chunk_context,
    chunk_schema,
    parse_extraction,
    split_sentences,
)
from symbolkg.retrieval.lkg.schema import Concept, Constraint, Entity, Graph, Provenance, Rule
from symbolkg.retrieval.lkg.store import LKGStore, cache_key

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "lkg" / "hand_checked.json"
MODEL = "scripted-lkg"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------- helpers


def load_fixture() -> list[dict]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))["contexts"]


CONTEXTS = load_fixture()
BY_ID = {c["id"]: c for c in CONTEXTS}


def key_of(context: str, model: str = MODEL) -> str:
    return cache_key(context, model, PROMPT_VERSION)


def problems_of(entries: list[dict]) -> list[Problem]:
    return [
        Problem(p["id"], e["dataset"], e["context"], p["question"], tuple(p["options"]), p["answer"])
        for e in entries
        for p in e["problems"]
    ]


def output_of(entry: dict) -> str:
    return json.dumps(entry["extraction"], ensure_ascii=False)


def expected_graph(entry: dict, output: str | None = None) -> Graph:
    """What parse_extraction makes of ``output`` (the hand-checked extraction by default)."""
    text = output_of(entry) if output is None else output
    return parse_extraction(text, entry["context"], key_of(entry["context"])).graph


def build(
    problems: list[Problem], store_dir: Path, engine: ScriptedEngine, cfg: LKGConfig | None = None, **kw
) -> BuildReport:
    return asyncio.run(run_lkg_build(problems, LKGStore(store_dir), engine, cfg or LKGConfig(), progress=False, **kw))


def hand_checked_engine(entries: list[dict] = CONTEXTS, **kw) -> ScriptedEngine:
    """One hand-checked completion per context (a second request for a context is an EngineError)."""
    return ScriptedEngine({key_of(e["context"]): [output_of(e)] for e in entries}, model=MODEL, **kw)


def shown_text(request: ChatRequest) -> str:
    """The text an extraction request asks about (its last user message is 'Text:\\n...\\n\\nJSON:')."""
    last = request.messages[-1]
    assert last.role == "user"
    match = re.fullmatch(r"Text:\n(.*)\n\nJSON:", last.content, re.DOTALL)
    assert match, last.content
    return match.group(1)


def nodes_per_context(store: LKGStore) -> Counter:
    return Counter(k for batch in store.iter_nodes(columns=["context_key"]) for k in batch.column(0).to_pylist())


def edges_per_context(store: LKGStore) -> Counter:
    return Counter(k for batch in store.iter_edges(columns=["context_key"]) for k in batch.column(0).to_pylist())


# --------------------------------------------------------------------------- the hand-checked fixture


def test_fixture_extractions_validate_without_issues():
    assert [c["dataset"] for c in CONTEXTS].count("logiclm/folio") == 2
    assert [c["dataset"] for c in CONTEXTS].count("logiclm/logicaldeduction") == 2
    for entry in CONTEXTS:
        result = parse_extraction(output_of(entry), entry["context"], "k")
        assert result.ok, (entry["id"], result.errors)
        ext = entry["extraction"]
        quotes = [x["raw_text"] for kind in ("rules", "constraints", "edges") for x in ext[kind]]
        assert all(q in entry["context"] for q in quotes)  # verbatim, not only after whitespace folding
        # what a model structured-decoded to this text's schema could write (whole-sentence quotes, e1/c1/r1/k1 ids)
        jsonschema.validate(ext, chunk_schema(split_sentences(entry["context"])))
        # every listed item survived validation
        assert len(result.graph.nodes) == sum(len(ext[k]) for k in ("entities", "concepts", "rules", "constraints"))
        assert len(result.graph.edges) == len(ext["edges"])
    ld = [c for c in CONTEXTS if c["dataset"] == "logiclm/logicaldeduction"]
    for entry in ld:
        kinds = Counter(k["constraint_type"] for k in entry["extraction"]["constraints"])
        assert kinds["Ordering"] >= 1 and kinds["AllDifferent"] == 1


# --------------------------------------------------------------------------- build, store, report


def test_build_stores_exactly_the_validated_graphs(tmp_path):
    problems = problems_of(CONTEXTS)
    engine = hand_checked_engine(supports_structured=True)
    report = build(problems, tmp_path, engine)

    expected = {e["id"]: expected_graph(e) for e in CONTEXTS}
    assert (report.problems, report.contexts) == (6, 4)  # two stories have two questions each
    assert (report.valid, report.invalid, report.cache_hits, report.cache_misses) == (4, 0, 0, 4)
    assert report.issue_kinds == {}
    assert report.nodes == sum(len(g.nodes) for g in expected.values())
    assert report.edges == sum(len(g.edges) for g in expected.values())
    # one request per context, none per extra question on a shared story
    assert report.llm_calls == len(engine.requests) == 4
    assert report.prompt_tokens == sum(prompt_word_count(r) for r in engine.requests) > 0
    assert report.completion_tokens == sum(word_count(output_of(e)) for e in CONTEXTS)
    assert report.model == MODEL and report.prompt_version == PROMPT_VERSION
    for request, entry in zip(engine.requests, CONTEXTS, strict=True):
        assert request.purpose == "lkg-extract"
        assert request.problem_id == key_of(entry["context"])
        assert request.structured is not None
        assert request.structured.json_schema == chunk_schema(split_sentences(entry["context"]))
        assert split_sentences(shown_text(request)) == split_sentences(entry["context"])
        assert all(p["question"] not in m.content for p in entry["problems"] for m in request.messages)

    fresh = LKGStore(tmp_path)  # a new object: everything is read back from Parquet
    for entry in CONTEXTS:
        key = key_of(entry["context"])
        for p in entry["problems"]:
            assert fresh.graph_for_problem(p["id"]) == expected[entry["id"]], p["id"]
        record = fresh.context(key)
        assert (record.status, record.errors, record.rounds, record.model) == ("valid", (), 1, MODEL)
        assert record.problem_ids == tuple(p["id"] for p in entry["problems"])
    assert nodes_per_context(fresh) == {key_of(e["context"]): len(expected[e["id"]].nodes) for e in CONTEXTS}

    # spot checks a reader of the graphs relies on
    ld = fresh.graph_for_problem("logical_deduction_273")
    above = [n for n in ld.nodes if isinstance(n, Constraint) and n.constraint_type == "Ordering"]
    assert [(n.relation, n.raw_text, [p.sentence for p in n.provenance]) for n in above] == [
        ("ABOVE", "Joe finished above Ana.", [3])
    ]
    joe, ana = (Entity.create(n).id for n in ("Joe", "Ana"))
    assert any(e.edge_type == "ABOVE" and (e.source_id, e.target_id) == (joe, ana) for e in ld.edges)
    rob_second = next(n for n in ld.nodes if isinstance(n, Constraint) and n.constraint_type == "Arithmetic")
    assert (rob_second.operation, rob_second.value) == ("=", "2")
    folio = fresh.graph_for_problem("FOLIO_dev_156")
    assert {n.expression for n in folio.nodes if isinstance(n, Rule)} == {
        "forall x: human(x) -> mortal(x)",
        "forall x: greek(x) -> human(x)",
    }
    airport = fresh.graph_for_problem("FOLIO_dev_181")
    lga = airport.node(Entity.create("LGA airport").id)
    assert [p.sentence for p in lga.provenance] == [0, 2]
    assert all(p.document == key_of(BY_ID["FOLIO_dev_180"]["context"]) for n in airport.nodes for p in n.provenance)


def test_rerun_is_served_from_the_store(tmp_path):
    problems = problems_of(CONTEXTS)
    first = build(problems, tmp_path, hand_checked_engine())

    # Same problems, plus a new question on a stored story: no LLM at all.
    greek = BY_ID["FOLIO_dev_156"]
    extra = Problem(
        "FOLIO_dev_156-bis",
        "logiclm/folio",
        greek["context"],
        "Are Greeks mortal?",
        ("A) True", "B) False", "C) Uncertain"),
        "A",
    )
    idle = ScriptedEngine({}, model=MODEL)
    second = build(problems + [extra], tmp_path, idle)

    assert idle.calls == 0 and idle.requests == []
    assert (second.contexts, second.cache_hits, second.cache_misses) == (4, 4, 0)
    assert second.to_dict()["cache_hit_rate"] == 1.0
    assert (second.prompt_tokens, second.completion_tokens, second.llm_calls, second.llm_seconds) == (0, 0, 0, 0.0)
    assert (second.nodes, second.edges, second.valid) == (first.nodes, first.edges, 4)
    assert second.problems == 7

    fresh = LKGStore(tmp_path)
    for entry in CONTEXTS:
        for p in entry["problems"]:
            assert fresh.graph_for_problem(p["id"]) == expected_graph(entry)
    assert fresh.graph_for_problem("FOLIO_dev_156-bis") == expected_graph(greek)
    # nothing was written twice
    assert nodes_per_context(fresh) == {key_of(e["context"]): len(expected_graph(e).nodes) for e in CONTEXTS}
    assert edges_per_context(fresh) == {key_of(e["context"]): len(expected_graph(e).edges) for e in CONTEXTS}

    # Another model is another cache key: everything is extracted again.
    other = ScriptedEngine({key_of(e["context"], "other-model"): [output_of(e)] for e in CONTEXTS}, model="other-model")
    third = build(problems, tmp_path, other)
    assert (third.cache_hits, third.cache_misses, len(other.requests)) == (0, 4, 4)


# --------------------------------------------------------------------------- repair and invalid output


def _bad_raw_text(entry: dict) -> tuple[str, str]:
    """The entry's extraction with the first rule's raw_text changed to words not in the text."""
    ext = copy.deepcopy(entry["extraction"])
    ext["rules"][0]["raw_text"] = "All humans are immortal."
    return json.dumps(ext), "All humans are immortal."


@pytest.mark.parametrize("bad", ["raw_text", "not_json"])
def test_repair_round_fixes_a_bad_first_output(tmp_path, bad):
    entry = BY_ID["FOLIO_dev_156"]
    key = key_of(entry["context"])
    if bad == "raw_text":
        first, needle = _bad_raw_text(entry)
        kind, path = "raw_text_not_in_context", "$.rules[0].raw_text"
    else:
        first, needle = "Sure! The graph has two rules about humans.", "no JSON object found"
        kind, path = "invalid_json", "$"
    engine = ScriptedEngine({key: [first, output_of(entry)]}, model=MODEL)
    report = build(problems_of([entry]), tmp_path, engine)

    assert [r.purpose for r in engine.requests] == ["lkg-extract", "lkg-repair"]
    repair = engine.requests[1]
    assert repair.messages[-2].role == "assistant" and repair.messages[-2].content == first
    assert f"{path} ({kind})" in repair.messages[-1].content
    assert needle in repair.messages[-1].content
    assert split_sentences(shown_text(ChatRequest(repair.messages[:-2]))) == split_sentences(entry["context"])

    assert (report.valid, report.invalid, report.llm_calls, report.issue_kinds) == (1, 0, 2, {})
    assert report.completion_tokens == word_count(first) + word_count(output_of(entry))
    fresh = LKGStore(tmp_path)
    record = fresh.context(key)
    assert (record.status, record.rounds, record.errors) == ("valid", 2, ())
    assert fresh.graph_for_problem("FOLIO_dev_156") == expected_graph(entry)


def test_a_repair_that_writes_the_same_output_again_ends_the_repairs(tmp_path):
    """Greedy decoding: a repair that returns the object it was shown would be shown it again, with
    the same issues, and write it a third time. It stops there (a qwen run asked 18 such repeats)."""
    greek = BY_ID["FOLIO_dev_156"]
    ext = copy.deepcopy(greek["extraction"])
    ext["rules"][0]["raw_text"] = "All humans are immortal."  # a quote the text does not have
    broken = json.dumps(ext)
    engine = ScriptedEngine({key_of(greek["context"]): [broken, broken, broken]}, model=MODEL)
    report = build(problems_of([greek]), tmp_path, engine, LKGConfig(max_repair_rounds=2))
    assert (report.invalid, report.llm_calls) == (1, 2)
    assert LKGStore(tmp_path).context(key_of(greek["context"])).rounds == 2


def test_output_that_never_validates_is_stored_invalid_with_its_issues(tmp_path):
    greek, airport = BY_ID["FOLIO_dev_156"], BY_ID["FOLIO_dev_180"]
    ext = copy.deepcopy(greek["extraction"])
    ext["rules"][0]["raw_text"] = "All humans are immortal."
    ext["rules"][1]["raw_text"] = "Every Greek is human."
    worse = json.dumps(ext)
    ext["rules"][1]["raw_text"] = "All Greeks are humans."
    better = json.dumps(ext)  # still one quote that is not in the text
    engine = ScriptedEngine(
        {key_of(greek["context"]): [worse, better], key_of(airport["context"]): [output_of(airport)]}, model=MODEL
    )
    report = build(problems_of([greek, airport]), tmp_path, engine, LKGConfig(max_repair_rounds=1))

    assert (report.valid, report.invalid, report.llm_calls) == (1, 1, 3)
    # the better round is kept: its bad quote drops rule r1, and so r1's two edges dangle
    assert report.issue_kinds == {"raw_text_not_in_context": 1, "dangling_edge": 2}
    assert "remaining issues: dangling_edge 2, raw_text_not_in_context 1" in report.format()
    fresh = LKGStore(tmp_path)
    record = fresh.context(key_of(greek["context"]))
    kept = parse_extraction(better, greek["context"], key_of(greek["context"]))
    assert record.status == "invalid" and record.rounds == 2
    assert record.errors == kept.errors
    assert [(e.path, e.kind) for e in record.errors] == [
        ("$.rules[0].raw_text", "raw_text_not_in_context"),
        ("$.edges[2].source", "dangling_edge"),
        ("$.edges[3].source", "dangling_edge"),
    ]
    assert "All humans are immortal." in record.errors[0].message
    # what passed validation is kept: everything but the rule with the bad quote and its edges
    graph = fresh.graph_for_problem("FOLIO_dev_156")
    assert graph == kept.graph
    full = expected_graph(greek)
    assert (len(graph.nodes), len(graph.edges)) == (len(full.nodes) - 1, len(full.edges) - 2)
    assert fresh.graph_for_problem("FOLIO_dev_180") == expected_graph(airport)


# --------------------------------------------------------------------------- engine failures


def test_engine_error_is_reported_not_cached_and_a_rerun_retries_it(tmp_path):
    greek, airport, puzzle = BY_ID["FOLIO_dev_156"], BY_ID["FOLIO_dev_180"], BY_ID["logical_deduction_256"]
    bad, _ = _bad_raw_text(greek)
    engine = ScriptedEngine(
        {
            key_of(greek["context"]): [bad, EngineError("server answered 500")],  # fails in the repair round
            key_of(airport["context"]): [EngineError("request timed out")],  # fails at once
            key_of(puzzle["context"]): [output_of(puzzle)],
        },
        model=MODEL,
    )
    report = build(problems_of([greek, airport, puzzle]), tmp_path, engine)

    assert (report.contexts, report.valid, report.invalid, report.llm_failed) == (3, 1, 2, 2)
    # greek: round 1's bad quote drops rule r1 and leaves its two edges dangling, round 2 fails
    assert report.issue_kinds == {"raw_text_not_in_context": 1, "dangling_edge": 2, "llm_error": 2}
    assert report.llm_calls == 4  # failed requests count as calls
    fresh = LKGStore(tmp_path)
    # a transient failure is not cached: only the good context is stored
    assert fresh.keys() == [key_of(puzzle["context"])]
    assert fresh.graph_for_problem("FOLIO_dev_181") is None and fresh.graph_for_problem("FOLIO_dev_156") is None
    assert fresh.graph_for_problem("logical_deduction_256") == expected_graph(puzzle)

    # the rerun asks again for exactly the two failed contexts, and stores them
    asked: list[str] = []

    def healthy(request: ChatRequest) -> str:
        asked.append(request.problem_id)
        return output_of(greek if request.problem_id == key_of(greek["context"]) else airport)

    rerun = build(problems_of([greek, airport, puzzle]), tmp_path, ScriptedEngine(healthy, model=MODEL))
    assert sorted(asked) == sorted([key_of(greek["context"]), key_of(airport["context"])])
    assert (rerun.cache_hits, rerun.cache_misses, rerun.valid, rerun.llm_failed) == (1, 2, 3, 0)
    assert LKGStore(tmp_path).graph_for_problem("FOLIO_dev_156") == expected_graph(greek)


@pytest.mark.parametrize("max_in_flight, latency_s", [(1, 0.0), (64, 0.005)], ids=["serial", "concurrent"])
def test_dead_engine_stops_the_build_and_a_rerun_extracts_only_the_rest(tmp_path, max_in_flight, latency_s):
    outputs = {key_of(e["context"]): output_of(e) for e in CONTEXTS}
    served: list[str] = []

    def dies_after_two(request: ChatRequest):
        if len(served) >= 2:  # dead stays dead, like a crashed server
            return EngineDeadError("engine process died")
        served.append(request.problem_id)
        return outputs[request.problem_id]

    problems = problems_of(CONTEXTS)
    with pytest.raises(EngineDeadError, match="engine process died"):
        build(
            problems,
            tmp_path,
            ScriptedEngine(dies_after_two, model=MODEL, latency_s=latency_s),
            max_in_flight=max_in_flight,
        )

    done = [key_of(e["context"]) for e in CONTEXTS[:2]]
    assert served == done  # contexts go out in first-seen order
    fresh = LKGStore(tmp_path)
    assert fresh.keys() == sorted(done)
    for entry in CONTEXTS[:2]:
        for p in entry["problems"]:
            assert fresh.graph_for_problem(p["id"]) == expected_graph(entry)
    assert fresh.graph_for_problem(CONTEXTS[2]["problems"][0]["id"]) is None

    engine = hand_checked_engine(latency_s=latency_s)
    report = build(problems, tmp_path, engine, max_in_flight=max_in_flight)
    assert sorted(r.problem_id for r in engine.requests) == sorted(key_of(e["context"]) for e in CONTEXTS[2:])
    assert (report.cache_hits, report.cache_misses, report.valid, report.llm_calls) == (2, 2, 4, 2)

    fresh = LKGStore(tmp_path)
    assert nodes_per_context(fresh) == {key_of(e["context"]): len(expected_graph(e).nodes) for e in CONTEXTS}
    assert edges_per_context(fresh) == {key_of(e["context"]): len(expected_graph(e).edges) for e in CONTEXTS}
    for entry in CONTEXTS:
        for p in entry["problems"]:
            assert fresh.graph_for_problem(p["id"]) == expected_graph(entry)


# --------------------------------------------------------------------------- chunking

LONG_CONTEXT = (
    "Mia owns a bicycle. Every bicycle is a vehicle. Leo owns a boat. Every boat is a vehicle. "
    "Mia sits to the left of Leo. Ann owns a kayak. Every kayak is a boat. Mia is older than Ann. "
    "Ben owns a kayak. Ben sits to the left of Ann."
)


def _mini_extractor(text: str) -> dict:
    """A deterministic 'model': the extraction of each sentence it recognizes, ids unique per call."""
    out: dict[str, list] = {"entities": [], "concepts": [], "rules": [], "constraints": [], "edges": []}
    ids: dict[tuple[str, str], str] = {}

    def node(kind: str, name: str) -> str:
        if (kind, name) not in ids:
            ids[(kind, name)] = f"{kind[0]}{len(ids) + 1}"
            if kind == "entities":
                out[kind].append({"id": ids[(kind, name)], "name": name, "entity_type": "person", "properties": []})
            else:
                out[kind].append({"id": ids[(kind, name)], "name": name, "labels": []})
        return ids[(kind, name)]

    def edge(src: str, dst: str, etype: str, quote: str) -> None:
        out["edges"].append({"source": src, "target": dst, "type": etype, "raw_text": quote})

    for i, s in enumerate(split_sentences(text)):
        if m := re.fullmatch(r"(\w+) owns a (\w+)\.", s):
            edge(node("entities", m[1]), node("concepts", m[2]), "OWNS", s)
        elif m := re.fullmatch(r"Every (\w+) is a (\w+)\.", s):
            a, b = node("concepts", m[1]), node("concepts", m[2])
            rid = f"r{len(out['rules']) + 1}"
            out["rules"].append(
                {"id": rid, "expression": f"forall x: {m[1]}(x) -> {m[2]}(x)", "description": s, "raw_text": s}
            )
            edge(a, b, "IS_A", s)
            edge(rid, a, "APPLIES_TO", s)
        elif m := re.fullmatch(r"(\w+) (sits to the left of|is older than) (\w+)\.", s):
            rel = "LEFT_OF" if m[2].startswith("sits") else "OLDER_THAN"
            x, y = node("entities", m[1]), node("entities", m[3])
            kid = f"k{len(out['constraints']) + 1}"
            out["constraints"].append(
                {
                    "id": kid,
                    "raw_expression": f"{rel.lower()}({m[1]}, {m[3]})",
                    "constraint_type": "Ordering",
                    "relation": rel,
                    "operation": "",
                    "value": "",
                    "raw_text": s,
                }
            )
            edge(x, y, rel, s)
            edge(kid, x, "APPLIES_TO", s)
            edge(kid, y, "APPLIES_TO", s)
        else:
            raise AssertionError(f"the mini extractor does not know sentence {i}: {s!r}")
    return out


class _PeakEngine(ScriptedEngine):
    """A scripted engine that counts the requests it holds at once.

    Every call is held until ``expect`` requests are in the engine together, or ``patience_s`` has
    passed (then no later call waits). What it measures is thus whether the job sends them at once,
    not whether they happened to overlap within some sleep on this machine: a job that sends them
    one by one shows a peak of 1 after one patience period, however fast or loaded the machine.
    """

    def __init__(self, *args, expect: int, patience_s: float = 10.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.in_flight = self.peak = 0
        self.expect = expect
        self.patience_s = patience_s
        self._release: asyncio.Event | None = None  # made in the job's event loop

    async def generate(self, requests):
        if self._release is None:
            self._release = asyncio.Event()
        self.in_flight += len(requests)
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight >= self.expect:
            self._release.set()
        try:
            try:
                await asyncio.wait_for(self._release.wait(), self.patience_s)
            except TimeoutError:
                self._release.set()  # they do not come together; let everything through
            return await super().generate(requests)
        finally:
            self.in_flight -= len(requests)


def test_the_chunks_of_one_context_are_in_flight_together(tmp_path):
    cfg = LKGConfig(chunk_chars=100)
    chunks = chunk_context(LONG_CONTEXT, cfg.chunk_chars)
    engine = _PeakEngine(lambda r: json.dumps(_mini_extractor(shown_text(r))), model=MODEL, expect=len(chunks))
    report = build(
        [Problem("long-1", "custom", LONG_CONTEXT, "Who is oldest?")], tmp_path, engine, cfg, max_in_flight=1
    )
    assert engine.peak == len(chunks) >= 3  # one context at a time, all its chunks at once
    assert (report.valid, report.llm_calls) == (1, len(chunks))


def test_long_context_is_extracted_in_chunks_and_merged_with_global_sentence_indices(tmp_path):
    cfg = LKGConfig(chunk_chars=100)
    chunks = chunk_context(LONG_CONTEXT, cfg.chunk_chars)
    assert len(chunks) >= 3  # the test is only meaningful when the context is really cut
    engine = ScriptedEngine(lambda r: json.dumps(_mini_extractor(shown_text(r))), model=MODEL)
    problem = Problem("long-1", "custom", LONG_CONTEXT, "Who is oldest?")
    report = build([problem], tmp_path, engine, cfg)

    key = key_of(LONG_CONTEXT)
    assert [shown_text(r) for r in engine.requests] == [c.text for c in chunks]
    assert all(r.problem_id == key and r.purpose == "lkg-extract" for r in engine.requests)
    assert (report.contexts, report.valid, report.llm_calls) == (1, 1, len(chunks))
    fresh = LKGStore(tmp_path)
    assert fresh.context(key).rounds == len(chunks)
    graph = fresh.graph_for_problem("long-1")

    # One node per thing, whichever chunks named it; provenance in whole-context sentence numbers.
    def sentences(node_id: str) -> list[int]:
        return [p.sentence for p in graph.node(node_id).provenance]

    assert [c.first_sentence for c in chunks] == [0, 4, 8]
    mia, leo, ann, ben = (Entity.create(n).id for n in ("Mia", "Leo", "Ann", "Ben"))
    boat, vehicle, kayak = (Concept.create(n).id for n in ("boat", "vehicle", "kayak"))
    assert [n.name for n in graph.nodes if isinstance(n, Entity)] == ["Mia", "Leo", "Ann", "Ben"]
    assert sentences(mia) == [0, 4, 7] and sentences(leo) == [2, 4] and sentences(ann) == [5, 7, 9]
    assert sentences(ben) == [8, 9]  # named only in the last chunk: global numbers, not 0 and 1
    assert sentences(boat) == [2, 3, 6] and sentences(vehicle) == [1, 3] and sentences(kayak) == [5, 6, 8]
    older = next(n for n in graph.nodes if isinstance(n, Constraint) and n.relation == "OLDER_THAN")
    assert older.provenance == (Provenance(key, 7),)
    ben_left = next(e for e in graph.edges if e.edge_type == "LEFT_OF" and e.source_id == ben)
    assert (ben_left.target_id, ben_left.provenance) == (ann, (Provenance(key, 9),))
    assert {p.document for n in graph.nodes for p in n.provenance} == {key}
    assert {e.edge_type for e in graph.edges} >= {"OWNS", "IS_A", "LEFT_OF", "OLDER_THAN", "APPLIES_TO"}

    # The same graph as one extraction of the whole text (up to node and edge order).
    whole = parse_extraction(json.dumps(_mini_extractor(LONG_CONTEXT)), LONG_CONTEXT, key)
    assert whole.ok
    assert {n.id: n for n in graph.nodes} == {n.id: n for n in whole.graph.nodes}
    assert {e.key: e for e in graph.edges} == {e.key: e for e in whole.graph.edges}


# --------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def built_store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("lkg-store")
    report = build(problems_of(CONTEXTS), store, hand_checked_engine())
    assert report.valid == 4
    return store


def _labels(graph: Graph) -> list[str]:
    return [getattr(n, "name", None) or getattr(n, "expression", None) or n.raw_expression for n in graph.nodes]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_cli_show_writes_a_png(built_store, tmp_path, capsys):
    out = tmp_path / "g" / "ld.png"
    assert (
        cli_main(["lkg", "show", "--store", str(built_store), "--id", "logical_deduction_273", "--out", str(out)]) == 0
    )
    assert out.read_bytes().startswith(PNG_MAGIC) and out.stat().st_size > 1000
    graph = expected_graph(BY_ID["logical_deduction_263"])
    assert f"{len(graph.nodes)} nodes, {len(graph.edges)} edges" in capsys.readouterr().out


def test_cli_show_writes_html_with_the_graph(built_store, tmp_path):
    for pid, entry in (
        ("FOLIO_dev_181", BY_ID["FOLIO_dev_180"]),
        ("logical_deduction_256", BY_ID["logical_deduction_256"]),
    ):
        out = tmp_path / f"{pid}.html"
        assert cli_main(["lkg", "show", "--store", str(built_store), "--id", pid, "--out", str(out)]) == 0
        page = out.read_text(encoding="utf-8")
        assert page.startswith("<!doctype html>") and pid in page
        for label in _labels(expected_graph(entry)):
            assert html.escape(label) in page, label
        assert "status <b>valid</b>" in page


def test_cli_show_errors(built_store, tmp_path, capsys):
    out = tmp_path / "x.png"
    assert cli_main(["lkg", "show", "--store", str(built_store), "--id", "no_such_problem", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no graph for problem 'no_such_problem'" in err and "Traceback" not in err
    assert not out.exists()

    bad = tmp_path / "graph.svg"
    assert cli_main(["lkg", "show", "--store", str(built_store), "--id", "FOLIO_dev_156", "--out", str(bad)]) == 2
    assert "must end in .png or .html" in capsys.readouterr().err
    assert not bad.exists()

    assert (
        cli_main(
            [
                "lkg",
                "show",
                "--store",
                str(tmp_path / "missing"),
                "--id",
                "FOLIO_dev_156",
                "--out",
                str(tmp_path / "y.html"),
            ]
        )
        == 2
    )
    assert "no store at" in capsys.readouterr().err


def test_cli_build_needs_exactly_one_input(tmp_path, capsys):
    store = tmp_path / "store"
    assert cli_main(["lkg", "build", "--dataset", "folio", "--corpus", "x.jsonl", "--store", str(store)]) == 2
    assert "exactly one of --dataset NAME and --corpus FILE" in capsys.readouterr().err
    assert cli_main(["lkg", "build", "--store", str(store)]) == 2
    assert "exactly one of --dataset NAME and --corpus FILE" in capsys.readouterr().err
    assert not store.exists()


@pytest.mark.parametrize(
    "finish_reason, says",
    [("length", "(the token limit); write a shorter object"), ("repeat", "over and over); write each item once")],
)
def test_a_cut_extraction_says_why_it_was_cut(finish_reason, says):
    """A repair is told that the JSON broke off at the token limit, or at a loop the engine stopped."""
    from symbolkg.actors.engines.base import Completion
    from symbolkg.jobs.methods.lkg_extract import _cut_issue

    issue = _cut_issue(Completion('{"entities": [', completion_tokens=300, finish_reason=finish_reason), 300)
    assert issue is not None and issue.kind == "too_long"
    assert issue.message.startswith("the output was cut at 300 tokens") and issue.message.endswith(says)
    assert _cut_issue(Completion("{}", completion_tokens=2, finish_reason="stop"), 300) is None


def test_a_cut_completion_from_the_cache_still_says_the_limit():
    """A cached completion carries no token count (it was free): the limit comes from the request.
    (A qwen run's store said "cut at 0 tokens" where a repair round repeated an earlier prompt.)"""
    from symbolkg.actors.engines.base import Completion
    from symbolkg.jobs.methods.lkg_extract import _cut_issue

    cached = Completion('{"entities": [', completion_tokens=0, finish_reason="length", cached=True)
    assert _cut_issue(cached, 1024).message.startswith("the output was cut at 1024 tokens (the token limit)")
    looped = Completion('{"entities": [', completion_tokens=0, finish_reason="repeat", cached=True)
    assert _cut_issue(looped, 1024).message.startswith("the output was cut (it repeated one block")
