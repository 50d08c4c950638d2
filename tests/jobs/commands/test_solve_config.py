"""Reproducible runs end to end: `--config`, `--rerun`, `config show`, and what a results file stores.

Real solver workers, real Parquet, the recorded engine (Logic-LM's GPT-4 programs answer the
formulation requests) and the replay engine (the completion cache the recorded run wrote). Rows are
compared on every column but the ones that time something (:data:`TIMING`); the replay also serves
every call from the cache, which its rows say (``cached_calls``, each attempt's ``cached``).

Runs that must store the very same config are made in folders of their own with the same relative
``--out`` and ``--cache`` (the config records paths as given).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pytest

from symbolkg.actors.engines.models import file_sha256
from symbolkg.jobs.cli import main
from symbolkg.jobs.pipeline.store import read_run, read_run_meta
from tests.conftest import DATA, data_or_skip, lp_problem, write_jsonl

#: Columns that time something or name the process that ran it: never compared.
TIMING = frozenset({"solve_seconds", "latency_seconds", "finished_at", "llm_seconds", "stage_seconds", "worker"})
#: Keys inside ``attempts_log`` that time something.
ATTEMPT_TIMING = frozenset({"seconds", "llm_seconds"})
WORKERS = ["--executor", "local", "--workers", "1", "--no-progress"]


def _untimed(value, drop: frozenset[str]):
    if isinstance(value, dict):
        return {k: _untimed(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_untimed(v, drop) for v in value]
    return value


def rows(path: Path, *, also: frozenset[str] = frozenset()) -> dict[str, dict]:
    """The run's rows by problem id, every column but :data:`TIMING` (and ``also``), attempts untimed."""
    out = {}
    for r in read_run(path)[0].to_pylist():
        r = {k: v for k, v in r.items() if k not in TIMING | also}
        r["attempts_log"] = _untimed(json.loads(r["attempts_log"]), ATTEMPT_TIMING | also)
        out[r["problem_id"]] = r
    return out


def solve_in(folder: Path, *args: str) -> Path:
    """`symbolkg solve ARGS` run from ``folder`` (created); returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.chdir(folder):
        assert main(["solve", *args]) == 0
    return folder


def same_metadata(a: dict, b: dict, *, except_config: tuple[str, ...] = ()) -> None:
    """The two runs stored the same config (but ``except_config``) and the same provenance."""
    ca, cb = ({k: v for k, v in m["config"].items() if k not in except_config} for m in (a, b))
    assert ca == cb
    assert a["provenance"] == b["provenance"]
    assert {k: a[k] for k in a if k not in ("config", "sessions", "wall_seconds")} == {
        k: b[k] for k in b if k not in ("config", "sessions", "wall_seconds")
    }


# --------------------------------------------------------------------------- recorded programs


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("input") / "lp.jsonl", [lp_problem(i) for i in range(6)])


@pytest.fixture(scope="module")
def flags_run(tmp_path_factory, programs) -> Path:
    """The recorded-programs job from flags: FOLDER/run.parquet."""
    return (
        solve_in(
            tmp_path_factory.mktemp("flags"),
            "--programs",
            str(programs),
            "--out",
            "run.parquet",
            "--timeout-s",
            "20",
            *WORKERS,
        )
        / "run.parquet"
    )


def test_config_file_and_the_same_flags_give_identical_results(tmp_path, programs, flags_run):
    (tmp_path / "run.yaml").write_text(
        f"programs: {programs}\nout: run.parquet\ntimeout-s: 20\nexecutor: local\nworkers: 1\nno_progress: true\n"
    )
    run = solve_in(tmp_path, "--config", "run.yaml") / "run.parquet"
    assert rows(run) == rows(flags_run)
    same_metadata(read_run_meta(run), read_run_meta(flags_run))


def test_rerun_of_a_programs_run_gives_identical_rows_and_flags_override(tmp_path, flags_run):
    solve_in(tmp_path, "--rerun", str(flags_run), "--out", "again.parquet")
    assert rows(tmp_path / "again.parquet") == rows(flags_run)
    same_metadata(read_run_meta(tmp_path / "again.parquet"), read_run_meta(flags_run), except_config=("out",))
    # a flag given with --rerun overrides the stored setting, and the new file stores the new value
    solve_in(tmp_path, "--rerun", str(flags_run), "--out", "two.parquet", "--limit", "2", "--no-corrections")
    config = read_run_meta(tmp_path / "two.parquet")["config"]
    assert (config["limit"], config["no_corrections"], config["timeout_s"]) == (2, True, 20.0)
    assert len(rows(tmp_path / "two.parquet")) == 2


def test_config_show_round_trips_through_config(tmp_path, capsys, flags_run):
    capsys.readouterr()
    assert main(["config", "show", str(flags_run)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"# the config of {flags_run}") and "\nmethod: recorded\n" in shown
    assert "\ntimeout_s: 20.0\n" in shown and "\nworkers: 1\n" in shown and "\nlimit: null\n" in shown
    (tmp_path / "shown.yaml").write_text(shown)
    run = solve_in(tmp_path, "--config", "shown.yaml") / "run.parquet"  # out: run.parquet, relative
    assert rows(run) == rows(flags_run)
    same_metadata(read_run_meta(run), read_run_meta(flags_run))
    assert main(["config", "show", str(flags_run), "--provenance"]) == 0
    assert "fingerprint:" in capsys.readouterr().out
    assert main(["config", "show", str(tmp_path / "none.parquet")]) == 2
    assert "none.parquet: no results there" in capsys.readouterr().err


def test_programs_run_metadata(flags_run, programs):
    meta = read_run_meta(flags_run)
    config, prov = meta["config"], meta["provenance"]
    assert config["method"] == "recorded" and config["programs"] == str(programs) and config["max_refine_rounds"] == 3
    assert {"symbolkg_version", "git_commit", "git_dirty", "python", "input"} <= prov.keys()
    assert prov["symbolkg_version"] not in ("", None) and prov["git_commit"]  # a checkout here: the commit
    assert prov["input"]["files"] == [
        {"path": str(programs.resolve()), "bytes": programs.stat().st_size, "sha256": file_sha256(programs)}
    ]
    assert len(prov["input"]["fingerprint"]) == 64


# --------------------------------------------------------------------------- the logiclm method


@pytest.fixture(scope="module")
def logiclm(tmp_path_factory) -> dict[str, Path]:
    """A logiclm job with the recorded engine from flags and from a file (each writing its cache), and its replays."""
    recorded = data_or_skip("logiclm", "programs", "ProntoQA_dev_gpt-4.json")
    root = tmp_path_factory.mktemp("logiclm")
    flags = [
        "--method",
        "logiclm",
        "--engine",
        "recorded",
        "--recorded",
        str(recorded),
        "--dataset",
        "logiclm/prontoqa",
        "--data-dir",
        str(DATA),
        "--limit",
        "3",
        "--max-refine-rounds",
        "0",
        "--cache",
        "cache",
        "--out",
        "run.parquet",
        *WORKERS,
    ]
    made = {"flags": solve_in(root / "flags", *flags) / "run.parquet"}
    cfg = root / "config" / "run.toml"
    cfg.parent.mkdir()
    cfg.write_text(
        f'method = "logiclm"\nengine = "recorded"\nrecorded = "{recorded}"\ndataset = "logiclm/prontoqa"\n'
        f'data_dir = "{DATA}"\nlimit = 3\nmax_refine_rounds = 0\ncache = "cache"\nout = "run.parquet"\n'
        'executor = "local"\nworkers = 1\nno_progress = true\n'
    )
    made["config"] = solve_in(cfg.parent, "--config", "run.toml") / "run.parquet"
    # replays of the flags run: one by --rerun, then one from flags and one from a file, each on a copy of the cache
    made["rerun"] = (
        solve_in(
            root / "flags",
            "--rerun",
            str(made["flags"]),
            "--out",
            "replayed.parquet",
            "--engine",
            "replay",
            "--cache",
            "cache",
        )
        / "replayed.parquet"
    )
    replay = ["--engine", "replay", "--model", "recorded:ProntoQA_dev_gpt-4"]
    for name in ("replay-flags", "replay-config"):
        shutil.copytree(root / "flags" / "cache", root / name / "cache")
    made["replay-flags"] = solve_in(root / "replay-flags", *flags, *replay) / "run.parquet"
    (root / "replay-config" / "run.yaml").write_text(
        cfg.read_text().replace(" = ", ": ").replace('"recorded"', '"replay"')
        + "model: 'recorded:ProntoQA_dev_gpt-4'\n"
    )
    made["replay-config"] = solve_in(root / "replay-config", "--config", "run.yaml") / "run.parquet"
    return made


def test_logiclm_config_file_and_flags_give_identical_results(logiclm):
    assert rows(logiclm["config"]) == rows(logiclm["flags"])
    same_metadata(read_run_meta(logiclm["config"]), read_run_meta(logiclm["flags"]))
    assert rows(logiclm["replay-config"]) == rows(logiclm["replay-flags"])
    same_metadata(read_run_meta(logiclm["replay-config"]), read_run_meta(logiclm["replay-flags"]))


def test_rerun_with_the_replay_engine_reproduces_the_rows(logiclm):
    original, replayed = rows(logiclm["flags"]), rows(logiclm["rerun"])
    assert len(original) == 3 and all(r["executed"] for r in original.values())
    assert all(r["cached_calls"] == r["llm_calls"] == 1 for r in replayed.values())  # no model: all from the cache
    served = frozenset({"cached_calls", "cached", "stored_tokens"})  # what being served from the cache changes
    assert rows(logiclm["rerun"], also=served) == rows(logiclm["flags"], also=served)
    assert rows(logiclm["replay-flags"]) == replayed  # a replay from flags is the same replay
    meta = read_run_meta(logiclm["rerun"])
    assert meta["config"]["engine"] == "replay" and meta["config"]["model"] == "recorded:ProntoQA_dev_gpt-4"
    assert meta["config"]["max_refine_rounds"] == 0 and meta["config"]["out"] == "replayed.parquet"


def test_logiclm_metadata_names_the_model_its_files_prompts_sampling_and_input(logiclm):
    meta = read_run_meta(logiclm["flags"])
    prov = meta["provenance"]
    recorded = data_or_skip("logiclm", "programs", "ProntoQA_dev_gpt-4.json")
    assert meta["model"] == "recorded:ProntoQA_dev_gpt-4" == prov["model"]["name"]  # was null
    assert prov["model"]["files_sha256"] == file_sha256(recorded) and prov["model"]["engine"] == "recorded"
    assert {"logiclm/formulate/logiclm-lp", "logiclm/refine/logiclm-fol"} <= prov["prompts"].keys()
    assert all(len(v) == 16 for v in prov["prompts"].values())
    assert prov["sampling"]["formulate"] == {
        "max_tokens": 1024,
        "temperature": 0.0,
        "top_p": 1.0,
        "stop": [],
        "seed": None,
    }
    assert prov["seed"] == {"requests": None, "engine": None}
    assert {Path(f["path"]).name for f in prov["input"]["files"]} == {"dev.json", "ProntoQA_dev_gpt-4.json"}
    assert prov["input"]["limit"] == 3 and prov["input"]["datasets"] == ["logiclm/prontoqa"]
    assert meta["config"]["method"] == "logiclm" and meta["config"]["max_tokens"] is None  # defaults stored too
    assert meta["config"]["repair_max_tokens"] is None and meta["repair_max_tokens"] is None  # Logic-LM's: none
    assert {r["model"] for r in rows(logiclm["flags"]).values()} == {meta["model"]}


# --------------------------------------------------------------------------- a vLLM model's metadata


def test_a_vllm_run_records_the_model_name_and_its_files_hash(tmp_path, monkeypatch):
    """`--engine vllm` with the embedded model, every call a cache hit: the real factory, no model loaded.

    The cache is filled first by a scripted engine under the model's name (make_engine patched for
    that one run); the second run builds vLLM's lazy engine, which the cache never lets start.
    """
    from symbolkg.actors.engines import models
    from symbolkg.actors.engines.replay import CachingEngine, CompletionCache
    from symbolkg.actors.engines.scripted import ScriptedEngine
    from symbolkg.jobs.commands import common

    if not models.is_prepared(models.DEFAULT_MODEL):
        pytest.skip("the embedded model is not converted (python -m symbolkg.actors.engines.models prepare)")
    problems = write_jsonl(
        tmp_path / "p.jsonl", [{k: v for k, v in lp_problem(i).items() if k != "program"} for i in range(2)]
    )
    args = ["--method", "direct", "--engine", "vllm", "--programs", str(problems), "--cache", "cache", *WORKERS]
    real = common.make_engine
    fill = lambda opts: CachingEngine(
        ScriptedEngine(
            lambda r: "A",
            model=models.DEFAULT_MODEL,
            supports_structured=True,
        ),
        CompletionCache(Path("cache")),
    )
    monkeypatch.setattr(common, "make_engine", fill)
    solve_in(tmp_path, *args, "--out", "filled.parquet")
    monkeypatch.setattr(common, "make_engine", real)
    solve_in(tmp_path, *args, "--out", "run.parquet")
    table = rows(tmp_path / "run.parquet")
    assert {r["cached_calls"] for r in table.values()} == {1}
    assert {r["model"] for r in table.values()} == {"smollm2-135m"}
    meta = read_run_meta(tmp_path / "run.parquet")
    model = meta["provenance"]["model"]
    assert meta["model"] == model["name"] == "smollm2-135m" and meta["config"]["model"] is None  # the default, named
    assert model["source"] == "embedded"
    assert model["files_sha256"] == models.folder_sha256(models.model_dir("smollm2-135m"))
    assert meta["provenance"]["seed"]["engine"] == 0 and "direct/direct" in meta["provenance"]["prompts"]


@pytest.mark.parametrize("policy", ["fcfs", "priority"])
def test_the_scheduling_policy_reaches_the_vllm_config(monkeypatch, policy):
    """`--scheduling-policy`'s engine option, to the VLLMConfig the lazy engine builds (no model loads)."""
    from symbolkg.actors.engines import factory, vllm_engine

    assert factory.EngineOptions("vllm").scheduling_policy == "fcfs"  # vLLM's own default
    built = []
    monkeypatch.setattr(vllm_engine, "VLLMEngine", lambda config: built.append(config))
    factory.make_engine(factory.EngineOptions("vllm", scheduling_policy=policy))._build()
    assert [c.scheduling_policy for c in built] == [policy]
