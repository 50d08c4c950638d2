"""Tests of the LogicGraph generator (symbolkg.solvers.logicgraph.generate) and its command."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from symbolkg.jobs.cli import main
from symbolkg.jobs.datasets.registry import load_dataset
from symbolkg.solvers.logicgraph.elimination import minimal_supports
from symbolkg.solvers.logicgraph.generate import (
    TIERS,
    GenerationError,
    TierConfig,
    _ground_truth,
    check_filters,
    construct,
    generate,
    generate_instance,
    premise_ids,
    rename_atoms,
    skeleton_proofs,
    tier_statistics,
)
from symbolkg.solvers.logicgraph.instances import DERIVED, Instance, load_instances
from symbolkg.solvers.logicgraph.proof_search import families
from symbolkg.solvers.logicgraph.proofs import matching_rules
from symbolkg.solvers.logicgraph.propositional import Atom, Implies, Not, atoms, parse, satisfiable

SEED = 11
PER_TIER = {"small": 10, "medium": 10, "large": 6}


@pytest.fixture(scope="module")
def generated():
    """A few instances per tier at a fixed seed, generated once for the module."""
    return {tier: list(generate(tier, n, SEED)) for tier, n in PER_TIER.items()}


def _premises(instance: Instance) -> dict:
    return {i: p.formula for i, p in instance.premises.items()}


# ----------------------------------------------------------------------------- construction


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_constructed_proofs_pass_the_filters(tier):
    for k in range(15):
        rng = random.Random(k)
        skeleton = rename_atoms(construct(rng, TIERS[tier]), rng)
        ids = premise_ids(skeleton.premises)
        proofs = skeleton_proofs(skeleton, ids)
        report = check_filters(ids, skeleton.goal, proofs)
        assert report.ok, report.problems
        # fresh atoms for every new premise: no two knowledge-base items are the same formula,
        # and the derived (intermediate) formulas are never premises themselves
        assert len(set(ids.values())) == len(ids)
        derived = {s.conclusion for p in proofs for s in p.steps}
        assert not derived & set(ids.values())
        for proof in proofs:
            for step in proof.steps:
                assert step.rule in matching_rules([c.formula for c in step.premises], step.conclusion)


def test_premises_are_facts_for_literals_and_rules_for_the_rest():
    rng = random.Random(3)
    ids = premise_ids(rename_atoms(construct(rng, TIERS["medium"]), rng).premises)
    for pid, formula in ids.items():
        literal = isinstance(formula, Atom) or (isinstance(formula, Not) and isinstance(formula.arg, Atom))
        assert pid.startswith("Fact") == literal
    rules = [pid for pid in ids if pid.startswith("Rule")]
    assert rules == [f"Rule{k}" for k in range(1, len(rules) + 1)]


# ----------------------------------------------------------------------------- determinism


def test_same_seed_same_instances_and_instances_are_independent():
    first = [g.record for g in generate("small", 3, 5)]
    again = [g.record for g in generate("small", 3, 5)]
    assert first == again
    # instance i depends only on (tier, seed, i): the third alone is the third of the run
    assert generate_instance("small", 5, 2).record == first[2]
    other = [g.record for g in generate("small", 3, 6)]
    assert other != first
    assert [r["id"] for r in first] == ["Small/gen_s5_1", "Small/gen_s5_2", "Small/gen_s5_3"]


# ----------------------------------------------------------------------------- the three filters and the ground truth


@pytest.mark.parametrize("tier", sorted(PER_TIER))
def test_every_instance_passes_the_filters_and_its_reference_is_the_enumerators(generated, tier):
    config = TIERS[tier]
    for g in generated[tier]:
        instance = g.instance
        premises = _premises(instance)
        assert g.filters.ok
        report = check_filters(premises, instance.goal, instance.proofs)
        assert report.stepwise and report.derivable and report.consistent, report.problems
        assert satisfiable(premises.values()) is not None
        assert config.accepts(len(instance.proofs))
        result = minimal_supports(premises, instance.goal)
        assert result.complete
        # exhaustive by proof: one reference proof per minimal support, no more, no less
        assert sorted(map(sorted, instance.reference_supports())) == sorted(map(sorted, result.supports))
        assert len(instance.proofs) == len(result.supports)
        for proof in instance.proofs:
            assert proof.steps[-1].conclusion == instance.goal
            for step in proof.steps:
                assert step.rule in matching_rules([c.formula for c in step.premises], step.conclusion)
        # the families written are the ones families() finds on the written proofs
        regrouped = families(instance.proofs)
        assert [(p.id, p.family_id, p.path_type, p.branch_from) for f in regrouped for p in f.proofs] == sorted(
            ((p.id, p.family_id, p.path_type, p.branch_from) for p in instance.proofs),
            key=lambda t: (t[1], t[2] != "core", t[0]),
        )


def test_ground_truth_does_not_depend_on_the_construction(generated):
    """Without the constructed proofs the search alone gives a proof for each enumerated support."""
    for g in generated["small"][:5]:
        instance = g.instance
        proofs, reason, proved = _ground_truth(_premises(instance), instance.goal, [], None)
        assert proofs is not None, reason
        assert proved == len(proofs) == len(instance.proofs)
        assert {p.premise_ids() for p in proofs} == set(instance.reference_supports())


def test_tier_statistics_are_in_the_tier(generated):
    stats = {tier: tier_statistics(g.instance for g in gs) for tier, gs in generated.items()}
    assert 2 <= stats["small"]["solutions"]["min"] and stats["small"]["solutions"]["max"] <= 4
    assert 5 <= stats["medium"]["solutions"]["min"] and stats["medium"]["solutions"]["max"] <= 7
    assert stats["large"]["solutions"]["min"] >= 8
    assert stats["small"]["premises"]["mean"] < stats["medium"]["premises"]["mean"] < stats["large"]["premises"]["mean"]
    assert stats["medium"]["core"] + stats["medium"]["branch"] == sum(
        len(g.instance.proofs) for g in generated["medium"]
    )


# ----------------------------------------------------------------------------- broken instances are caught


def test_each_filter_catches_its_breakage(generated):
    instance = generated["small"][0].instance
    premises = _premises(instance)
    proofs = list(instance.proofs)
    assert check_filters(premises, instance.goal, proofs).ok

    # consistency: add the negation of a fact (the goal is still entailed, ex falso)
    fact = next(f for i, f in premises.items() if i.startswith("Fact"))
    inconsistent = {**premises, "Fact99": Not(fact) if not isinstance(fact, Not) else fact.arg}
    report = check_filters(inconsistent, instance.goal, proofs)
    assert not report.consistent and report.stepwise and report.derivable and not report.ok
    assert "unsatisfiable" in " ".join(report.problems)

    # stepwise entailment: a step that concludes something its premises do not entail
    step = proofs[0].steps[0]
    bad_step = replace(step, conclusion=Atom("Unrelated"))
    bad = [replace(proofs[0], steps=(bad_step, *proofs[0].steps[1:])), *proofs[1:]]
    report = check_filters(premises, instance.goal, bad)
    assert not report.stepwise and report.consistent
    assert f"proof {proofs[0].id} step 1" in " ".join(report.problems)

    # global derivability: drop one premise of every minimal support (the goal is no longer entailed)
    cut = {i for s in instance.reference_supports() for i in sorted(s)[:1]}
    weaker = {i: f for i, f in premises.items() if i not in cut}
    report = check_filters(weaker, instance.goal, [])
    assert not report.derivable and report.consistent
    assert "do not entail G" in " ".join(report.problems)


def test_a_citation_of_a_wrong_formula_is_a_stepwise_failure(generated):
    instance = generated["small"][1].instance
    premises = _premises(instance)
    proof = instance.proofs[0]
    step = proof.steps[0]
    wrong = replace(
        step,
        premises=tuple(
            replace(c, formula=Implies(Atom("Q"), Atom("R"))) if c.id != DERIVED else c for c in step.premises
        ),
    )
    report = check_filters(premises, instance.goal, [replace(proof, steps=(wrong, *proof.steps[1:]))])
    assert not report.stepwise
    # a valid step under the wrong form's name is not an application of that form
    renamed = replace(step, rule="CD" if step.rule != "CD" else "MP")
    report = check_filters(premises, instance.goal, [replace(proof, steps=(renamed, *proof.steps[1:]))])
    assert not report.stepwise and "not an application of" in " ".join(report.problems)


def test_generation_gives_up_with_an_error_when_nothing_fits_the_tier():
    # a tier that asks for 2 planned chains but accepts only 9+ proofs can never be met
    impossible = TierConfig("impossible", 9, None, (2, 2), new_family_p=1.0, max_attempts=3)
    with pytest.raises(GenerationError, match="3 attempts rejected"):
        generate_instance(impossible, 0, 0)


def test_tier_config_is_validated():
    with pytest.raises(ValueError, match="max_proofs"):
        TierConfig("x", 5, 3, (5, 5))
    with pytest.raises(ValueError, match="planned_proofs"):
        TierConfig("x", 1, None, (3, 2))
    with pytest.raises(ValueError, match="name"):
        TierConfig("Large!", 1, None, (1, 1))


def test_distractors_add_premises_that_no_proof_uses():
    config = replace(TIERS["small"], distractors=2)
    for index in range(3):
        instance = generate_instance(config, SEED, index).instance
        used = set().union(*instance.reference_supports())
        assert set(instance.premises) - used, "the dead-end chains' premises are in the knowledge base"
        result = minimal_supports(_premises(instance), instance.goal)
        assert set(result.supports) == set(instance.reference_supports())


# ----------------------------------------------------------------------------- records and text


def test_records_have_the_datasets_shape_and_round_trip(generated):
    for g in generated["small"][:3] + generated["medium"][:2]:
        record = json.loads(json.dumps(g.record))
        again = Instance.from_record(record)
        assert again.premises == g.instance.premises and again.proofs == g.instance.proofs
        assert record["metadata"]["num_solutions"] == len(record["solutions"]["solutions"])
        assert record["target"] == {**record["target"], "formal": "G", "prover9": "G"}
        rules = record["question"]["context"]["rules"]
        assert rules and all(line.startswith(f"Rule{k}: ") for k, line in enumerate(rules, 1))
        translations = record["translations"]
        names = set(atoms(g.instance.goal)).union(*(atoms(p.formula) for p in g.instance.premises.values()))
        assert set(translations["natural_facts"]) == set(translations["atomic_facts"]) == names
        for item in record["knowledge_base"]["rules"] + record["knowledge_base"]["facts"]:
            assert item["natural"] and item["prover9_expression"]
            # the instantiated expression is the formula with the atomic_facts substitution
            assert parse(item["prover9_expression"]) is not None
        for proof in record["solutions"]["solutions"]:
            for step in proof["steps"]:
                assert step["natural"]
                assert all({"id", "prover9", "prover9_expression", "natural"} <= set(c) for c in step["premises_used"])
        assert record["verification"]["valid_solutions"] == len(g.instance.proofs)


def test_english_follows_the_connectives(generated):
    instance = generated["small"][0].instance
    facts = instance.record["translations"]["natural_facts"]
    for premise in instance.premises.values():
        f = premise.formula
        if isinstance(f, Implies):
            assert premise.natural.startswith("If ") and ", then " in premise.natural
        elif isinstance(f, Atom):
            assert premise.natural == facts[f.name]
        elif isinstance(f, Not) and isinstance(f.arg, Atom):
            assert " not " in premise.natural
    assert instance.goal_natural == facts["G"]


def test_a_generated_file_is_a_dataset(generated, tmp_path):
    folder = tmp_path / "logicgraph"
    folder.mkdir()
    records = [g.record for g in generated["medium"]]
    (folder / "mytier.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    loaded = load_dataset("logicgraph/mytier", tmp_path)
    assert [p.id for p in loaded.problems] == [r["id"] for r in records]
    assert all(p.answer == "A" and p.dataset == "logicgraph/mytier" for p in loaded.problems)
    assert loaded.problems[0].meta["num_solutions"] == len(records[0]["solutions"]["solutions"])
    assert [i.id for i in load_instances(folder / "mytier.jsonl")] == [r["id"] for r in records]


# ----------------------------------------------------------------------------- the command


def test_cli_writes_the_file_and_prints_statistics(tmp_path, capsys):
    out = tmp_path / "gen" / "small.jsonl"
    rc = main(
        [
            "logicgraph",
            "generate",
            "--tier",
            "small",
            "--count",
            "3",
            "--seed",
            "2",
            "--out",
            str(out),
            "--json",
            "--quiet",
        ]
    )
    assert rc == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == [f"Small/gen_s2_{k}" for k in (1, 2, 3)]
    assert [json.loads(line) for line in lines] == [g.record for g in generate("small", 3, 2)]
    report = json.loads(capsys.readouterr().out)
    assert report["written"] == 3 and report["generated"]["instances"] == 3
    assert not list(out.parent.glob(".*.tmp")), "the temporary file is renamed, not left behind"


def test_llm_readings_are_checked_and_reword_keeps_the_logic():
    import asyncio

    from symbolkg.actors.engines.scripted import ScriptedEngine
    from symbolkg.jobs.logicgraph.generate import word_with_llm
    from symbolkg.solvers.logicgraph.wording import parse_readings, readings_request

    generated = [generate_instance("small", 0, k) for k in range(2)]
    first = generated[0]
    names = sorted(first.readings)
    messages, schema = readings_request(first.theme, names)
    assert set(schema["required"]) == set(names) and first.theme in messages[1]["content"]

    def script(request):
        inst = next(g for g in generated if g.instance.id == request.problem_id)
        if inst is generated[1]:
            return "no JSON here"
        atoms = sorted(inst.readings)
        answer = {a: {"positive": f"Unit {a} is ready", "negative": f"unit {a} is not ready"} for a in atoms}
        answer[atoms[0]] = {"positive": "the crew waits or leaves", "negative": "x"}  # a connective: rejected
        answer[atoms[1]] = dict(answer[atoms[2]])  # the same words as another atom: rejected
        return json.dumps(answer)

    worded, stats = asyncio.run(word_with_llm(generated, ScriptedEngine(script)))
    assert stats["atoms"] == sum(len(g.readings) for g in generated) and stats["engine_errors"] == 0
    assert stats["atoms_from_llm"] == len(first.readings) - 2
    new = worded[0]
    # the logic, the proofs and the first-order atoms are untouched; only English changed
    assert new.instance.premises.keys() == first.instance.premises.keys()
    assert all(
        new.instance.premises[i].formula == p.formula and new.instance.premises[i].expression == p.expression
        for i, p in first.instance.premises.items()
    )
    assert [p.premise_ids() for p in new.instance.proofs] == [p.premise_ids() for p in first.instance.proofs]
    assert any("unit" in p.natural.lower() for p in new.instance.premises.values())
    assert new.record["metadata"]["generator"]["text"].startswith("llm:")
    assert len(new.record["metadata"]["generator"]["text_problems"]) == 2
    assert Instance.from_record(new.record).premises == new.instance.premises
    # unreadable output: every atom keeps its template English, and the record says why
    assert worded[1].instance.premises == generated[1].instance.premises
    assert worded[1].record["metadata"]["generator"]["text_problems"][0].startswith("not JSON")
    readings, problems = parse_readings("[]", first.readings)
    assert readings == dict(first.readings) and problems == ["not a JSON object"]


def test_cli_llm_text_refuses_bad_engine_options_without_writing(tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    assert (
        main(["logicgraph", "generate", "--count", "1", "--out", str(out), "--text", "llm", "--engine", "openai"]) == 2
    )
    assert "--engine openai needs" in capsys.readouterr().err
    assert not out.exists()
