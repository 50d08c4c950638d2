"""`symbolkg explain`: premise provenance (jobs/inspection/explain.py) and the command on real recorded programs.

The end-to-end tests solve one recorded GPT-4 program of FOLIO, LogicalDeduction and ProntoQA, and
assert that the premises `explain` lists are exactly the lines the row's certificate cites.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from symbolkg.jobs.cli import main as cli
from symbolkg.jobs.inspection.explain import best_sentence, explain_row, format_html, format_text, provenance
from tests.conftest import data_or_skip

CONTEXT = "Jompuses are not shy. Every jompus is a yumpus. Max is a yumpus. Bob is happy."


def test_best_sentence_matches_symbols_to_words_across_case_plural_and_camel_case():
    from symbolkg.retrieval.lkg.canonical import split_sentences

    s = split_sentences(CONTEXT)
    assert best_sentence("Jompus($x, True) >>> Shy($x, False)", s) == (0, "Jompuses are not shy.")
    assert best_sentence("Jompus($x, True) >>> Yumpus($x, True)", s)[0] == 1
    assert best_sentence("Yumpus(Max, True)", s)[0] == 2
    assert best_sentence("IsHappy(Bob)", s)[0] == 3
    assert best_sentence("Wooden(Sam, True)", s) is None


def test_provenance_prefers_the_sentence_a_line_states_and_marks_guesses():
    program = "Facts:\nYumpus(Max, True)\nShy(Max, False) ::: Jompuses are not shy.\nWooden(Sam, True)"
    p1, p2, p3 = provenance(program, [2, 3, 4], CONTEXT)
    assert (p1.how, p1.sentence_index) == ("matched", 2)
    assert (p2.how, p2.sentence, p2.text) == (
        "stated",
        "Jompuses are not shy.",
        "Shy(Max, False) ::: Jompuses are not shy.",
    )
    assert (p3.how, p3.sentence) == ("none", None)
    (stated,) = provenance(program, [3], None)  # no context at hand: the line's own sentence
    assert (stated.how, stated.sentence) == ("stated", "Jompuses are not shy.")


def test_provenance_matches_among_the_sentences_the_knowledge_graph_selected():
    # "Jompus ... Yumpus" matches sentence 1 best; the formalizer was only shown sentences 0 and 2.
    program = "Rules:\nJompus($x, True) >>> Yumpus($x, True)"
    (free,) = provenance(program, [2], CONTEXT)
    assert (free.sentence_index, free.lkg) == (1, False)
    (via,) = provenance(program, [2], CONTEXT, selected=[2, 0, 99])  # out-of-range indices are ignored
    assert (via.sentence_index, via.lkg) == (0, True)
    from symbolkg.solvers.lp import engine as lp
    from symbolkg.solvers.outcomes import Limits

    program = (
        "Predicates:\nJompus($x, bool)\nYumpus($x, bool)\nFacts:\nJompus(Max, True)\n"
        "Rules:\nJompus($x, True) >>> Yumpus($x, True)\nQuery:\nYumpus(Max, True)"
    )
    outcome = lp.solve(program, Limits())
    row = {
        "problem_id": "p1",
        "dataset": "custom",
        "answer": outcome.answer,
        "predicted": "A",
        "gold": "A",
        "correct": True,
        "language": "logiclm-lp",
        "backend": outcome.backend,
        "program": program,
        "certificate": json.dumps(outcome.certificate),
        "trace": json.dumps({"premises": {"source": "subgraph", "sentences": [0, 2], "of": 4}}),
    }
    e = explain_row(row, context=CONTEXT)
    assert [p.line for p in e.premises] == [5, 7] and all(p.lkg and p.sentence_index in (0, 2) for p in e.premises)
    assert "(best match, via the LKG)" in format_text(e)


def test_a_row_without_a_certificate_says_so():
    row = {
        "problem_id": "p1",
        "dataset": "custom",
        "answer": "True",
        "predicted": "A",
        "gold": "A",
        "correct": True,
        "language": "logiclm-lp",
        "backend": "forward-chainer",
        "program": "x",
        "certificate": None,
    }
    e = explain_row(row, question="Is Max shy?")
    assert e.kind is None and e.premises == () and "certificate: none" in format_text(e)
    assert "<h2>p1" in format_html(e)


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """Four recorded GPT-4 programs each of FOLIO, LogicalDeduction and ProntoQA, solved and verified."""
    tmp = tmp_path_factory.mktemp("explain")
    runs = {}
    for name in ("FOLIO", "LogicalDeduction", "ProntoQA"):
        programs = data_or_skip("logiclm", "programs", f"{name}_dev_gpt-4.json")
        runs[name] = tmp / f"{name}.parquet"
        assert (
            cli(
                [
                    "solve",
                    "--programs",
                    str(programs),
                    "--out",
                    str(runs[name]),
                    "--limit",
                    "4",
                    "--executor",
                    "local",
                    "--workers",
                    "2",
                    "--no-progress",
                ]
            )
            == 0
        )
        assert cli(["verify", str(runs[name]), "--executor", "local", "--workers", "2", "--no-progress"]) == 0
    return runs


def first_row(run, kind: str, answers: tuple[str, ...]) -> dict:
    for row in pq.read_table(run).to_pylist():
        cert = json.loads(row["certificate"]) if row["certificate"] else None
        if cert and cert["kind"] == kind and row["answer"] in answers and row["correct"]:
            return row
    pytest.fail(f"no {kind} certificate answering {answers} in {run}")


@pytest.mark.parametrize(
    "name, kind, answers, shows",
    [
        ("FOLIO", "entailment", ("True", "False"), "entail"),
        ("LogicalDeduction", "constraint", ("A", "B", "C", "D", "E", "F", "G"), "] fails"),
        ("ProntoQA", "derivation", ("True", "False"), "<-"),
    ],
)
def test_explain_lists_exactly_the_certificates_premises_with_their_sentences(
    solved, name, kind, answers, shows, capsys, tmp_path
):
    from symbolkg.solvers.certificates import constraint, derivation, entailment

    row = first_row(solved[name], kind, answers)
    cert = json.loads(row["certificate"])
    module = {"entailment": entailment, "constraint": constraint, "derivation": derivation}[kind]
    capsys.readouterr()
    assert cli(["explain", str(solved[name]), "--id", row["problem_id"]]) == 0
    out = capsys.readouterr().out
    assert "question: " in out and "symbolkg verify: verified" in out and shows in out
    listed = [int(line.split()[1].rstrip(":")) for line in out.splitlines() if line.startswith("  line ")]
    assert listed == module.premise_lines(cert) and listed
    program = row["program"].splitlines()
    for n in listed:  # each premise is printed as the program has it, and the sentences come from the context
        assert f"  line {n}: {program[n - 1].strip()}" in out
    assert "sentence" in out
    page = tmp_path / "e.html"
    assert cli(["explain", str(solved[name]), "--id", row["problem_id"], "--html", str(page)]) == 0
    assert page.read_text().count("<tr><td>") == len(listed)


def test_explain_names_a_missing_id(solved, capsys):
    assert cli(["explain", str(solved["FOLIO"]), "--id", "nope"]) == 2
    assert "no row with id 'nope'" in capsys.readouterr().err


def test_every_recorded_folio_premise_cites_each_sentence_its_text_contains():
    """All 204 recorded GPT-4 FOLIO programs: a premise line cites exactly the context sentences
    whose words its ``:::`` text contains (FOLIO_dev_10's line 10 formalizes sentences 2-5 and cites
    all four, not sentence 1); a text that contains none cites a close paraphrase or says it matches
    none, never a nearest guess."""
    from symbolkg.jobs.inspection.explain import _words
    from symbolkg.retrieval.lkg.canonical import split_sentences

    records = json.loads(data_or_skip("logiclm/programs/FOLIO_dev_gpt-4.json").read_text())
    assert len(records) == 204
    hows: dict[str, int] = {}
    for record in records:
        program = record["raw_logic_programs"][0]
        premise_lines, section = [], None
        for n, line in enumerate(program.splitlines(), start=1):
            if line.strip().rstrip(":") in ("Predicates", "Premises", "Conclusion"):
                section = line.strip().rstrip(":")
            elif section == "Premises" and ":::" in line:
                premise_lines.append(n)
        sentences = split_sentences(record["context"])
        for p in provenance(program, premise_lines, record["context"]):
            said = _words(p.text.partition(":::")[2])
            contained = [i for i, s in enumerate(sentences) if _words(s) and _words(s) <= said]
            hows[p.how] = hows.get(p.how, 0) + 1
            if contained:
                assert p.how == "stated" and [i for i, _ in p.cited] == contained, (record["id"], p)
            else:
                assert p.how in ("close", "unmatched"), (record["id"], p)
                assert (p.how == "unmatched") == (not p.cited), (record["id"], p)
            if record["id"] == "FOLIO_dev_10" and p.line == 10:
                assert [i + 1 for i, _ in p.cited] == [2, 3, 4, 5]
    assert hows["stated"] > 900 and set(hows) <= {"stated", "close", "unmatched"}, hows


def test_a_text_that_matches_no_sentence_says_so_instead_of_citing_the_nearest():
    program = (
        "Premises:\nShy(max) ::: Max is shy and owns a violin.\nHappy(bob) ::: Bob is happy.\nConclusion:\nShy(max)"
    )
    unmatched, stated = provenance(program, [2, 3], CONTEXT)
    assert (unmatched.how, unmatched.sentence, unmatched.cited) == ("unmatched", None, ())
    assert (stated.how, stated.cited) == ("stated", ((3, "Bob is happy."),))
    row = {
        "problem_id": "p1",
        "dataset": "custom",
        "answer": "True",
        "predicted": "A",
        "gold": "A",
        "correct": True,
        "language": "logiclm-fol",
        "backend": "prover9",
        "program": program,
        "certificate": None,
    }
    assert "matches no sentence" not in format_text(explain_row(row))  # no certificate: nothing cited
