"""The results Parquet's JSON columns follow their schemas (jobs/core/schemas.py).

Real runs write the files: the recorded-programs solve on a slice of every Logic-LM program file
(every certificate kind, corrections and ``--cross-check``), the ``logiclm`` method with a scripted
LLM (a repair round, a text-resolved correction, a sampled vote), ``direct``, and ``symbolkg``'s walk
of tests/jobs/test_symbolkg.py. (Every other job a test runs checks its rows as it writes them.) Every row of them fits
its schemas; a planted bad row does not, and the writer refuses it. A DuckDB query reads a certificate's
kind and a sample's rounds straight from the file, as docs/USAGE.md shows.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import duckdb
import pytest

from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs.core import schemas
from symbolkg.jobs.core.rows import Program, ResultRow
from symbolkg.jobs.datasets.logiclm import load_logiclm_programs
from symbolkg.jobs.methods import MethodConfig
from symbolkg.jobs.methods.logiclm import LogicLM
from symbolkg.jobs.pipeline.method_job import run_method_job
from symbolkg.jobs.pipeline.programs_job import run_solve
from symbolkg.jobs.pipeline.store import ResultStore, read_run
from symbolkg.solvers.outcomes import Limits
from symbolkg.solvers.runtime.local_pool import LocalSolverPool
from tests.conftest import data_or_skip
from tests.jobs import test_symbolkg as skg
from tests.jobs.test_checks_refine import FLIPPED, RIGHT, SPLIT, problem

#: Program files of the recorded slice, and how many of each (the first ones: fast, every kind).
SLICE = {"ProntoQA": 2, "ProofWriter": 2, "FOLIO": 3, "LogicalDeduction": 2, "AR-LSAT": 1}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> a results file written by a real job."""
    out = tmp_path_factory.mktemp("runs")
    files = {}
    with LocalSolverPool(1) as pool:
        files["loop"] = _method_run(out / "loop.parquet", pool, _repairing(), LogicLM(), rounds=1)
        files["vote"] = _method_run(
            out / "vote.parquet",
            pool,
            ScriptedEngine(lambda request: {1: RIGHT, 2: FLIPPED}[request.params.seed]),
            LogicLM(samples=2),
            rounds=0,
        )
        files["direct"] = _method_run(
            out / "direct.parquet", pool, ScriptedEngine(lambda request: "B"), None, rounds=0, name="direct"
        )
        files["symbolkg"] = out / "symbolkg.parquet"
        skg.run_job(out, [skg.problem(p) for p in skg.WALK], skg.Script(), out=files["symbolkg"].name)
        files["recorded"] = out / "recorded.parquet"
        flipped = problem("flipped").with_program(Program("logiclm-lp", FLIPPED))
        run_solve(
            [flipped, *_recorded_slice()],
            ResultStore(files["recorded"]),
            pool,
            limits=Limits(timeout_s=20),
            progress=False,
            cross_check=True,
        )
    return files


def _repairing() -> ScriptedEngine:
    """Writes SPLIT (a check error the text does not resolve) until the prompt names it, then RIGHT."""
    return ScriptedEngine(
        lambda request: RIGHT if "[one_name]" in "\n".join(m.content for m in request.messages) else SPLIT
    )


def _method_run(path, pool, engine, method, *, rounds, name="logiclm"):
    """``method`` (None: the registry's ``name``) on two problems with the scripted ``engine``."""
    cfg = MethodConfig(name, max_refine_rounds=rounds)
    problems = [problem("p1"), problem("p2")]
    asyncio.run(run_method_job(problems, ResultStore(path), cfg, engine, pool, progress=False, method=method))
    return path


def _recorded_slice():
    data = data_or_skip()
    for name, n in SLICE.items():
        path = data_or_skip("logiclm", "programs", f"{name}_dev_gpt-4.json")
        yield from [p for p in load_logiclm_programs(path, data_dir=data).problems if p.program is not None][:n]


def _rows(path) -> list[ResultRow]:
    return [ResultRow.from_row(r) for r in read_run(path)[0].to_pylist()]


def test_every_row_of_the_runs_fits_its_schemas(runs):
    for name, path in runs.items():
        rows = _rows(path)
        assert rows, name
        for row in rows:
            assert schemas.row_errors(row) == [], (name, row.problem_id)
    recorded = _rows(runs["recorded"])
    kinds = {json.loads(r.certificate)["kind"] for r in recorded if r.certificate}
    assert kinds == {"entailment", "derivation", "constraint"}  # the slice covers every kind
    traces = [json.loads(r.trace) for r in recorded]
    assert any(t.get("corrected") for t in traces) and any("cross_check" in t for t in traces)
    assert any(a["purpose"] == "correct" for r in _rows(runs["vote"]) for a in json.loads(r.attempts_log))
    assert any(a["purpose"] == "refine" for r in _rows(runs["loop"]) for a in json.loads(r.attempts_log))


def test_the_schemas_are_json_schema_and_a_standard_validator_agrees(runs):
    jsonschema = pytest.importorskip("jsonschema")
    for schema in [
        *schemas.TRACE_SCHEMAS.values(),
        *schemas.ATTEMPTS_SCHEMAS.values(),
        schemas.STAGE_SECONDS_SCHEMA,
        *schemas.CERTIFICATE_SCHEMAS.values(),
    ]:
        jsonschema.Draft202012Validator.check_schema(schema)
    for path in runs.values():
        for row in _rows(path):
            for text, schema in (
                (row.trace, schemas.trace_schema(row.method)),
                (row.attempts_log, schemas.attempts_schema(row.method)),
            ):
                assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
            if row.certificate:
                cert = json.loads(row.certificate)
                assert jsonschema.Draft202012Validator(schemas.CERTIFICATE_SCHEMAS[cert["kind"]]).is_valid(cert)


def _planted(row: ResultRow, column: str, edit) -> ResultRow:
    value = json.loads(getattr(row, column))
    edit(value)
    return dataclasses.replace(row, **{column: json.dumps(value)})


def test_a_planted_bad_row_fails_and_the_writer_refuses_it(runs, tmp_path):
    vote = next(r for r in _rows(runs["vote"]) if r.certificate)
    assert schemas.row_errors(vote) == []

    def rounds_as_text(trace):
        trace["samples"][0]["rounds"] = str(trace["samples"][0]["rounds"])

    bad = {
        "certificate": _planted(vote, "certificate", lambda c: c.pop("kind")),
        "trace": _planted(vote, "trace", rounds_as_text),
        "attempts_log": _planted(vote, "attempts_log", lambda log: log[0]["checks"].append({"check": "x"})),
        "stage_seconds": _planted(vote, "stage_seconds", lambda s: s.update(solve="1.5")),
    }
    expected = {
        "certificate": "certificate $: missing 'kind'",
        "trace": "trace $.samples[0].rounds: expected integer, got string '1'",
        "attempts_log": "attempts_log $[0].checks[0]: missing 'severity'",
        "stage_seconds": "stage_seconds $.solve: expected number, got string '1.5'",
    }
    for column, row in bad.items():
        assert expected[column] in schemas.row_errors(row), column
    assert schemas.row_errors(dataclasses.replace(vote, trace="{not json")) == [
        "trace: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"
    ]
    store = ResultStore(tmp_path / "bad.parquet", flush_rows=1)
    # the first row the concurrent job wrote (p1 or p2: both have a certificate)
    with pytest.raises(
        schemas.RowSchemaError, match=rf"'{vote.problem_id}' \(method 'logiclm'\).*samples\[0\]\.rounds"
    ):
        store.append(bad["trace"])
    assert not (tmp_path / "bad.parquet").exists()


def test_duckdb_reads_a_certificates_kind_and_a_samples_rounds(runs):
    query = """
        SELECT problem_id,
               json_extract_string(certificate, '$.kind') AS kind,
               json_extract(trace, '$.samples[*].rounds')::INTEGER[] AS rounds,
               json_extract_string(trace, '$.vote.winner') AS winner
        FROM read_parquet(?) ORDER BY problem_id
    """
    rows = duckdb.execute(query, [str(runs["vote"])]).fetchall()
    assert rows == [("p1", "derivation", [1, 1], "B"), ("p2", "derivation", [1, 1], "B")]
    # the query docs/USAGE.md shows, as it is written there
    usage = (Path(__file__).parents[3] / "docs" / "USAGE.md").read_text()
    shown = usage.split("```sql\n")[1].split("```")[0].replace("runs/folio.parquet", str(runs["vote"]))
    shown = [(r[0], r[1], r[2]) for r in duckdb.execute(shown).fetchall()]
    assert sorted(shown) == [("p1", "derivation", [1, 1]), ("p2", "derivation", [1, 1])]
    kinds = duckdb.execute(
        "SELECT json_extract_string(certificate, '$.kind') AS kind, count(*) FROM read_parquet(?) "
        "WHERE certificate IS NOT NULL GROUP BY kind ORDER BY kind",
        [str(runs["recorded"])],
    ).fetchall()
    assert [k for k, _ in kinds] == ["constraint", "derivation", "entailment"]
