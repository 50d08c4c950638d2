"""Extraction prompt, JSON schema, completion parsing and chunking."""

from __future__ import annotations

import copy
import itertools
import json

import jsonschema
import pytest

from symbolkg.retrieval.lkg.canonical import split_sentences
from symbolkg.retrieval.lkg.extract import (
    EXAMPLE_CONTEXT,
    EXAMPLE_OUTPUT,
    MAX_OUTPUT_CHARS,
    PROMPT_VERSION,
    RELATION_PATTERN,
    SchemaBounds,
    chunk_context,
    chunk_schema,
    extraction_messages,
    extraction_schema,
    name_spans,
    parse_extraction,
    repair_messages,
)
from symbolkg.retrieval.lkg.merge import merge_graphs
from symbolkg.retrieval.lkg.schema import ValidationIssue
from symbolkg.retrieval.lkg.validate import ValidationLimits, validate_extraction


def _walk(schema):
    yield schema
    for sub in schema.get("properties", {}).values():
        yield from _walk(sub)
    if "items" in schema:
        yield from _walk(schema["items"])


def test_schema_is_simple_bounded_and_accepts_the_example():
    schema = extraction_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(EXAMPLE_OUTPUT, schema)
    for node in _walk(schema):
        assert node["type"] in ("object", "array", "string")
        if node["type"] == "object":
            assert node["additionalProperties"] is False and set(node["required"]) == set(node["properties"])
        if node["type"] == "array":
            assert node["maxItems"] >= 1
    small = extraction_schema(ValidationLimits(max_edges=3))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(EXAMPLE_OUTPUT, small)  # 11 edges > 3


def test_schema_rejects_what_validation_rejects_structurally():
    bad = copy.deepcopy(EXAMPLE_OUTPUT)
    bad["constraints"][0]["constraint_type"] = "Temporal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, extraction_schema())
    bad = copy.deepcopy(EXAMPLE_OUTPUT)
    bad["entities"][0]["extra"] = "x"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, extraction_schema())


def test_text_specific_schema_admits_only_verbatim_sentences_and_prompt_ids():
    sentences = split_sentences(EXAMPLE_CONTEXT)
    schema = extraction_schema(sentences=sentences)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(EXAMPLE_OUTPUT, schema)  # the few-shot example quotes whole sentences
    for mutate in (
        lambda o: o["edges"][0].__setitem__("raw_text", "Mia owns a bicycle."),  # not verbatim
        lambda o: o["rules"][0].__setitem__("raw_text", sentences[0][:-1]),  # a cut sentence
        lambda o: o["entities"][0].__setitem__("id", "mia"),  # not the e<N> pattern
        lambda o: o["edges"][0].__setitem__("type", "owns"),  # not UPPER_SNAKE
        lambda o: o["edges"][0].__setitem__("target", "x9"),  # not a node id pattern
    ):
        bad = copy.deepcopy(EXAMPLE_OUTPUT)
        mutate(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
        jsonschema.validate(bad, extraction_schema())  # the generic schema admits it; validation catches it


def relation_names() -> set[str]:
    """Names near the edges of the relation pattern: the structural types' words and their neighbours
    (one character more, less or changed), joined by underscores, and words at the length bounds."""
    words = ["MENTIONS", "APPLIES", "TO", "MENTION", "MENTIONSX", "APPLIE", "APPLIESS", "APPLIEZ", "T", "TOO", "T0"]
    words += ["OT", "HAS", "IS", "A", "ALL", "RELATED", "OF", "X" * 15, "X" * 16, "X" * 17]
    names = {"_".join(c) for n in (1, 2, 3) for c in itertools.product(words, repeat=n)}
    return names | {"_".join(c) for c in itertools.product(["LEFT", "AB", "TO"], repeat=4)} | {"", "_TO", "A_"}


def test_relation_names_are_upper_snake_except_the_structural_types_a_rule_sends():
    """The schema's relation pattern, by Python's regex engine and by xgrammar's (what vLLM decodes
    with), admits exactly the UPPER_SNAKE names of the relation shape but APPLIES_TO and MENTIONS."""
    import re

    xgr = pytest.importorskip("xgrammar")
    upper_snake = re.compile(r"^[A-Z][A-Z0-9]{0,15}(_[A-Z0-9]{2,15}){0,3}$")
    compiled = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False).compile_json_schema(
        json.dumps({"type": "string", "pattern": RELATION_PATTERN})
    )

    def decodes(name: str) -> bool:
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        return matcher.accept_string(json.dumps(name)) and matcher.is_terminated()

    names = relation_names()
    expected = {n for n in names if upper_snake.match(n) and n not in ("APPLIES_TO", "MENTIONS")}
    assert {"APPLIES_TO", "MENTIONS", "IS_A", "APPLIES_TO_ALL", "MENTIONS_OF", "HAS"} <= names
    assert {n for n in names if re.match(RELATION_PATTERN, n)} == expected
    assert {n for n in names if decodes(n)} == expected


def test_text_schema_constrains_names_ids_and_edge_endpoints():
    sentences = split_sentences(EXAMPLE_CONTEXT)
    schema = chunk_schema(sentences)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(EXAMPLE_OUTPUT, schema)
    for path, value in (
        (("entities", 0, "name"), "Mia Leo"),  # words of the text, but not a run of them
        (("entities", 0, "name"), "Mary"),  # not in the text (a small model copies names from the example)
        (("entities", 0, "id"), "e99"),  # beyond the list's bound
        (("entities", 1, "id"), "e1"),  # ids are positional: the second entity is e2
        (("concepts", 0, "id"), "e1"),  # an entity id in the concept list
        (("edges", 2, "target"), "e1"),  # IS_A to an entity: only concepts
        (("edges", 3, "target"), "k1"),  # APPLIES_TO to a constraint: only entities and concepts
        (("edges", 0, "type"), "IS_A"),  # an entity -> entity edge typed IS_A
        (("edges", 0, "type"), "Owns"),  # not UPPER_SNAKE
        (("rules", 0, "expression"), "x" * 301),  # over its maxLength
        (("constraints", 0, "operation"), ">" * 11),
    ):
        bad = copy.deepcopy(EXAMPLE_OUTPUT)
        holder = bad
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = value
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    # a structural type that only a rule or constraint may send, between entities: the relation shape's
    # names leave out APPLIES_TO and MENTIONS, so the schema rules it out; validation still catches it
    # where the output was not decoded to this schema
    for structural in ("APPLIES_TO", "MENTIONS"):
        gap = copy.deepcopy(EXAMPLE_OUTPUT)
        gap["edges"][3]["source"], gap["edges"][3]["type"] = "e1", structural
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(gap, schema)
        assert parse_extraction(json.dumps(gap), EXAMPLE_CONTEXT, "k").errors[0].kind == "bad_endpoint"
    # the shapes still admit every legal edge type
    ok = copy.deepcopy(EXAMPLE_OUTPUT)
    ok["edges"] += [
        {"source": "e1", "target": "c3", "type": "HAS", "raw_text": sentences[0]},
        {"source": "r1", "target": "k1", "type": "RELATED_TO", "raw_text": sentences[2]},
        {"source": "c1", "target": "e3", "type": "FATHER_OF", "raw_text": sentences[0]},
    ]
    jsonschema.validate(ok, schema)


def test_chunk_bounds_grow_with_the_chunk_and_stop_at_the_validation_caps():
    one = SchemaBounds.for_sentences(1)
    assert (one.entities, one.concepts, one.rules, one.constraints, one.edges) == (3, 3, 1, 1, 6)
    big = SchemaBounds.for_sentences(1000, ValidationLimits(max_nodes_per_list=10, max_edges=20))
    assert (big.entities, big.rules, big.edges) == (10, 10, 20)
    schema = chunk_schema(["Ann is kind."])
    assert schema["properties"]["edges"]["maxItems"] == 6
    entities = schema["properties"]["entities"]
    assert [item["properties"]["id"]["enum"] for item in entities["prefixItems"]] == [["e1"], ["e2"], ["e3"]]
    assert entities["items"] is False and entities["maxItems"] == 3


def test_name_spans_are_runs_of_words_within_one_sentence():
    spans = name_spans(["Mia's red bike, new.", "Leo runs."], max_words=3)
    assert "Mia's red bike" in spans and "bike new" in spans and "red" in spans
    assert "new Leo" not in spans  # never across sentences
    assert "Mia's red bike new" not in spans  # longer than max_words
    assert all(s == s.strip(".,") for s in spans)
    assert len(spans) == len(set(spans))


def test_parse_extraction_validates_the_example_completion():
    completion = json.dumps(EXAMPLE_OUTPUT, indent=2)
    result = parse_extraction(completion, EXAMPLE_CONTEXT, "example")
    assert result.ok, result.errors
    assert result.graph.counts() == {"Entity": 3, "Concept": 3, "Rule": 1, "Constraint": 3, "edges": 11}


@pytest.mark.parametrize(
    "wrap",
    [
        "{}",
        "```json\n{}\n```",
        "```\n{}\n```\nThat is all.",
        "Here is the graph:\n{}\nHope it helps! {not json}",
        "```json\n{}",  # fence never closed (max_tokens hit after the object)
        "{}\n```",  # a stray fence after the object
    ],
)
def test_parse_tolerates_fences_and_prose(wrap):
    completion = wrap.replace("{}", json.dumps(EXAMPLE_OUTPUT))
    assert parse_extraction(completion, EXAMPLE_CONTEXT, "example").ok


@pytest.mark.parametrize(
    "text, kind",
    [
        ("I cannot do that.", "invalid_json"),
        ('{"entities": [', "invalid_json"),  # cut off
        ("{'entities': []}", "invalid_json"),  # Python, not JSON
        ("[" * 100_000, "invalid_json"),  # no object at all
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "too_long"),
        ("x" * (MAX_OUTPUT_CHARS + 1), "too_long"),
        ('{"a":' * 20_000 + "1" + "}" * 20_000, "invalid_json"),  # nests too deeply for the decoder
        ("[1, 2]", "invalid_json"),
    ],
)
def test_parse_turns_bad_output_into_one_issue(text, kind):
    result = parse_extraction(text, EXAMPLE_CONTEXT, "example")
    assert [e.kind for e in result.errors] == [kind]
    assert result.graph.nodes == () and result.status == "invalid"


def test_parse_misuse_raises():
    with pytest.raises(ValueError):
        parse_extraction(None, EXAMPLE_CONTEXT, "k")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        parse_extraction("{}", EXAMPLE_CONTEXT, "")


def test_extraction_messages_shape_and_question():
    msgs = extraction_messages("Bob is big.", question="Is Bob big?")
    assert [r for r, _ in msgs] == ["system", "user", "assistant", "user"]
    assert json.loads(msgs[2][1]) == EXAMPLE_OUTPUT
    assert "Bob is big." in msgs[-1][1] and "Is Bob big?" in msgs[-1][1]
    assert "Is Bob big?" not in extraction_messages("Bob is big.")[-1][1]
    with pytest.raises(ValueError):
        extraction_messages("  ")
    assert PROMPT_VERSION


def test_repair_messages_share_the_prefix_and_list_the_issues():
    errors = [ValidationIssue("$.edges[0].target", "dangling_edge", "'e9' is not the id of any valid node")] * 25
    previous = '{"entities": []}'
    msgs = repair_messages("Bob is big.", previous, errors)
    assert msgs[:4] == extraction_messages("Bob is big.")
    assert msgs[4] == ("assistant", previous)
    assert msgs[5][0] == "user"
    assert msgs[5][1].count("dangling_edge") == 20 and "5 more" in msgs[5][1]
    long_previous = "x" * 100_000
    assert len(repair_messages("Bob is big.", long_previous, errors[:1])[4][1]) < 13_000
    with pytest.raises(ValueError):
        repair_messages("Bob is big.", previous, [])


def test_chunks_keep_global_sentence_indices():
    text = " ".join(f"Person{i} likes item{i}." for i in range(30))
    sentences = split_sentences(text)
    chunks = chunk_context(text, 100)
    assert len(chunks) > 3
    assert all(len(c.text) <= 100 for c in chunks)
    assert [s for c in chunks for s in c.sentences] == sentences
    for c in chunks:
        assert split_sentences(c.text) == list(c.sentences)
        assert sentences[c.first_sentence] == c.sentences[0]
    assert chunk_context("", 10) == []
    (big,) = chunk_context("A" * 50 + ".", 10)  # never cut inside a sentence
    assert big.text == "A" * 50 + "."
    with pytest.raises(ValueError):
        chunk_context(text, 0)


def test_chunked_extraction_merges_to_the_whole_context_graph():
    text = "Ann is a nurse. Bob is a pilot. Ann sits left of Bob. Cid is a nurse. Cid sits left of Ann."
    facts = [("Ann", "nurse"), ("Bob", "pilot"), ("Cid", "nurse")]

    def output_for(context: str) -> dict:
        # What a perfect model would answer for this context.
        entities, concepts, edges = [], [], []
        for person, job in facts:
            if f"{person} is a {job}." in context:
                entities.append({"id": person, "name": person})
                concepts.append({"id": job, "name": job + "s"})
                edges.append({"source": person, "target": job, "type": "IS_A", "raw_text": f"{person} is a {job}."})
        for a, b in (("Ann", "Bob"), ("Cid", "Ann")):
            sentence = f"{a} sits left of {b}."
            if sentence in context:
                for p in (a, b):
                    entities.append({"id": p, "name": p})
                edges.append({"source": a, "target": b, "type": "LEFT_OF", "raw_text": sentence})
        return {"entities": entities, "concepts": concepts, "edges": edges}

    whole = validate_extraction(output_for(text), text, "ctx")
    parts = [
        validate_extraction(output_for(c.text), c.text, "ctx", sentence_offset=c.first_sentence)
        for c in chunk_context(text, 40)
    ]
    assert whole.ok and all(p.ok for p in parts)
    merged = merge_graphs([p.graph for p in parts], "ctx")
    assert {n.id: n.provenance for n in merged.nodes} == {n.id: n.provenance for n in whole.graph.nodes}
    assert {e.key: e.provenance for e in merged.edges} == {e.key: e.provenance for e in whole.graph.edges}


def test_a_truncated_output_keeps_the_items_completed_before_the_cut():
    text = json.dumps(EXAMPLE_OUTPUT)
    whole = parse_extraction(text, EXAMPLE_CONTEXT, "k")
    cut_in_last_edge = parse_extraction(text[: text.rindex('{"source"') + 20], EXAMPLE_CONTEXT, "k")
    assert cut_in_last_edge.errors[0].kind == "truncated"
    assert cut_in_last_edge.graph.nodes == whole.graph.nodes  # every node was complete
    assert cut_in_last_edge.graph.edges == whole.graph.edges[:-1]  # the last edge was not
    # a cut inside the first item leaves nothing to keep: plain invalid JSON
    assert [e.kind for e in parse_extraction(text[:12], EXAMPLE_CONTEXT, "k").errors] == ["invalid_json"]
    # broken in the middle (not a truncation): not salvaged
    broken = text.replace('"concepts": [', '"concepts": [}', 1)
    assert [e.kind for e in parse_extraction(broken, EXAMPLE_CONTEXT, "k").errors] == ["invalid_json"]


def test_a_word_except_some_words_at_its_length_bounds():
    import re

    from symbolkg.retrieval.lkg.extract import _word_except

    pattern = _word_except(("AB", "A"), "AB", "AB", 1, 2)  # an excluded word as long as the longest word
    assert [w for w in ("A", "B", "AA", "AB", "BA", "BB", "ABA") if re.fullmatch(pattern, w)] == ["B", "AA", "BA", "BB"]
    with pytest.raises(ValueError, match="no word"):
        _word_except(("A", "B"), "AB", "AB", 1, 1)
