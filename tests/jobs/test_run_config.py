"""`symbolkg solve --config`: the schema read from solve's own parser, the checks, the precedence.

Every refusal is one line on stderr, exit code 2, naming the file, the key or value and what is
allowed; nothing runs (no results file appears).
"""

from __future__ import annotations

import argparse

import pytest

from symbolkg.jobs.cli import main
from symbolkg.jobs.commands.solve import schema
from symbolkg.jobs.pipeline.run_config import ConfigError, Schema, Source, load_file, resolve


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the messages name the file as given: run.yaml


def refused(tmp_path, capsys, text: str, *flags: str, name: str = "run.yaml") -> str:
    """Run `solve --config NAME` on ``text`` (in ``tmp_path``): exit 2, one line on stderr (returned), no results."""
    (tmp_path / name).write_text(text)
    out = tmp_path / "never.parquet"
    capsys.readouterr()
    assert main(["solve", "--config", name, "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert not out.exists()
    return err


def test_unknown_keys_name_the_key_the_closest_one_and_what_is_allowed(tmp_path, capsys):
    err = refused(tmp_path, capsys, "worker: 3\n")
    assert "run.yaml: unknown key 'worker' (did you mean 'workers'?)" in err and "allowed top-level keys:" in err
    err = refused(tmp_path, capsys, "method: symba\nsymba:\n  max_call: 3\n")
    assert "unknown key 'max_call' in section 'symba' (did you mean 'max_calls'?)" in err
    assert "section 'symba' takes: max_calls, max_tokens, max_rounds" in err
    err = refused(tmp_path, capsys, "method: logiclm\nlogiclm:\n  max_token: 384\n")
    assert "unknown key 'max_token' in section 'logiclm' (did you mean the top-level key 'max_tokens'?)" in err
    err = refused(tmp_path, capsys, "method: symba\nmax_calls: 3\n")  # a method's key outside its section
    assert "unknown key 'max_calls' (an option of section 'symba': put it under 'symba:')" in err


@pytest.mark.parametrize(
    "text, message",
    [
        ("workers: two\n", "bad value for 'workers' (--workers): expected an integer, got 'two' (a string)"),
        ("workers: 1.5\n", "expected an integer, got 1.5 (a number)"),
        ("workers: null\n", "expected an integer, got null"),
        ("limit: yes\n", "bad value for 'limit' (--limit): expected an integer or null, got true (a boolean)"),
        ("timeout_s: fast\n", "bad value for 'timeout_s' (--timeout-s): expected a number, got 'fast'"),
        ("no_progress: 1\n", "bad value for 'no_progress' (--no-progress): expected true or false, got 1 (an integer)"),
        ("model: 7\n", "expected a string (quote it) or null, got 7 (an integer)"),
        (
            "engine: vlm\n",
            "bad value for 'engine' (--engine): 'vlm' is not one of vllm, openai, recorded, replay, gold, "
            "pararule-template (did you mean 'vllm'?)",
        ),
        (
            "method: symba\nsymba:\n  ask: sometimes\n",
            "bad value for 'ask' in section 'symba' (--symba-ask): 'sometimes' is not one of unproved, missing",
        ),
        ("method: logic-lm\n", "'logic-lm' is not one of recorded, direct, cot, logiclm"),
        (
            "no-progress: true\nno_progress: false\n",
            "'no_progress' (--no-progress) is given twice (as 'no_progress' too)",
        ),
        ("- workers\n", "run.yaml: a config maps keys to values, got a list"),
        ("workers: [3\n", "run.yaml:2:1: not valid YAML"),
    ],
)
def test_bad_values_name_the_value_and_the_allowed_ones(tmp_path, capsys, text, message):
    assert message in refused(tmp_path, capsys, text)


def test_a_section_or_flag_of_another_method_is_refused(tmp_path, capsys):
    err = refused(tmp_path, capsys, "method: logiclm\nsymba:\n  max_calls: 3\n")
    assert err.endswith(
        "run.yaml: section 'symba' holds options of --method symba, but this run's method is 'logiclm' "
        "(from run.yaml); remove it, or set method: symba"
    )
    err = refused(tmp_path, capsys, "symba:\n  max_calls: 3\n", "--method", "cot")
    assert "this run's method is 'cot' (from the command line)" in err
    err = refused(tmp_path, capsys, "prolog_agent:\n  max_attempts: 2\n")  # the section's name takes underscores
    assert "section 'prolog_agent' holds options of --method prolog-agent" in err and "'recorded' (the default)" in err
    err = refused(tmp_path, capsys, "method: logiclm\n", "--symba-max-calls", "4")
    assert "--symba-max-calls is an option of --method symba, but this run's method is 'logiclm' (from run.yaml)" in err


def test_files_that_cannot_be_read(tmp_path, capsys):
    assert main(["solve", "--config", "none.yaml"]) == 2
    assert capsys.readouterr().err == "symbolkg solve: none.yaml: no such config file\n"
    err = refused(tmp_path, capsys, "{}", name="run.json")
    assert "run.json: a config file is YAML (.yaml, .yml) or TOML (.toml), not '.json'" in err
    assert "not valid TOML" in refused(tmp_path, capsys, "workers = \n", name="run.toml")
    assert main(["solve", "--config", str(tmp_path / "none.yaml"), "--help"]) == 0  # help never reads the file


def test_yaml_and_toml_give_the_same_config_and_flags_override_the_file(tmp_path):
    (tmp_path / "a.yaml").write_text(
        "method: symba\nworkers: 3\nlimit: 5\nno-progress: true\nsymba:\n  max-calls: 50\n  ask: missing\n"
    )
    (tmp_path / "a.toml").write_text(
        'method = "symba"\nworkers = 3\nlimit = 5\nno_progress = true\n[symba]\nmax_calls = 50\nask = "missing"\n'
    )
    options = schema()
    yaml_cfg = resolve(options, {}, file=load_file(tmp_path / "a.yaml"))
    assert yaml_cfg == resolve(options, {}, file=load_file(tmp_path / "a.toml"))
    values = yaml_cfg.values
    assert (values["workers"], values["limit"], values["symba_max_calls"], values["symba_ask"]) == (3, 5, 50, "missing")
    assert values["timeout_s"] == 10.0 and values["symba_max_rounds"] == 24  # defaults fill the rest
    # a flag overrides the file; the method's option at the top level under its flag's name works too
    over = resolve(options, {"workers": 1, "symba_max_calls": 7}, file=load_file(tmp_path / "a.yaml"))
    assert (over.values["workers"], over.values["symba_max_calls"], over.values["limit"]) == (1, 7, 5)
    top = resolve(options, {}, file=Source("t.yaml", {"method": "symba", "symba_max_calls": 9}))
    assert top.values["symba_max_calls"] == 9
    # the document lists every setting of the run, the method's in its section, and reads back the same
    doc = yaml_cfg.document()
    assert list(doc)[0] == "method" and doc["symba"]["max_calls"] == 50 and doc["workers"] == 3
    assert "symba_max_calls" not in doc and "hops" not in doc  # no other method's options
    assert resolve(options, {}, file=Source("back.yaml", doc)) == yaml_cfg


def test_a_stored_config_is_overridden_by_the_file_and_the_flags_and_never_overwrites(tmp_path):
    options = schema()
    stored = Source(
        "old.parquet", {"method": "symba", "workers": 3, "overwrite": True, "limit": 9, "symba": {"max_calls": 50}}
    )
    cfg = resolve(options, {"limit": 2}, file=Source("f.yaml", {"workers": 4}), stored=stored)
    assert (cfg.values["workers"], cfg.values["limit"], cfg.values["symba_max_calls"]) == (4, 2, 50)
    assert cfg.values["overwrite"] is False  # --rerun never discards results it was not told to
    # changing the method drops the stored run's section instead of refusing it
    cot = resolve(options, {"method": "cot"}, stored=stored)
    assert cot.method == "cot" and "symba_max_calls" not in cot.values


def test_schema_keys_come_from_the_parser_and_clashes_are_caught():
    p = argparse.ArgumentParser()
    p.add_argument("--method", choices=("a", "b"), default="a")
    p.add_argument("--depth", type=int, default=1)
    p.add_argument("--b-depth", type=int, default=2)
    p.add_argument("--b-other-depth", dest="b_depth2", type=int)
    options = Schema.from_parser(p, {"b": ["b_depth", "b_depth2"]})
    assert [(o.section, o.key, o.flag) for o in options.options] == [
        (None, "method", "--method"),
        (None, "depth", "--depth"),
        ("b", "depth", "--b-depth"),
        ("b", "depth2", "--b-other-depth"),
    ]
    clash = argparse.ArgumentParser()
    clash.add_argument("--b-x", type=int)
    clash.add_argument("--x", type=int)
    with pytest.raises(ValueError, match="--x and --b-x have the same config key 'x'"):
        Schema.from_parser(clash, {"b": ["b_x", "x"]})
    with pytest.raises(ConfigError, match="bad value for 'depth' in section 'b'"):
        resolve(options, {}, file=Source("f.yaml", {"method": "b", "b": {"depth": "deep"}}))


def test_solve_help_shows_the_chosen_methods_options_only(capsys):
    assert main(["solve", "--method", "symba", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--symba-max-calls" in text and "--config FILE" in text and "--workers" in text
    assert "--prolog-agent-max-attempts" not in text and "--hops" not in text and "--multipath-show" not in text
    assert main(["solve", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--symba-max-calls" not in text and "symbolkg solve --method M --help" in text


def test_out_is_required_somewhere(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text("workers: 1\n")
    assert main(["solve", "--config", str(tmp_path / "r.yaml")]) == 2
    assert "give --out RUN.parquet (or `out:` in the --config file)" in capsys.readouterr().err
    (tmp_path / "w.yaml").write_text("workers: 0\nout: x.parquet\n")
    assert main(["solve", "--config", str(tmp_path / "w.yaml")]) == 2
    assert "--workers must be >= 1, got 0" in capsys.readouterr().err


def test_config_init_prints_every_default_of_the_method_and_reads_back(tmp_path, capsys):
    assert main(["config", "init", "--method", "symba"]) == 0
    text = capsys.readouterr().out
    assert "# --symba-max-calls: LLM calls per problem" in text and "  max_calls: 200" in text
    path = tmp_path / "init.yaml"
    path.write_text(text)
    cfg = resolve(schema(), {}, file=load_file(path))
    assert cfg == resolve(schema(), {"method": "symba"})
