"""The command registry (jobs/cli.py) and the contract of the command modules (jobs/commands/)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from symbolkg.jobs import cli, commands

NAMES = (
    "datasets",
    "solve",
    "config",
    "lkg",
    "retrieve",
    "retrieval-eval",
    "router-eval",
    "report",
    "profile",
    "bench",
    "check",
    "mcp",
    "logicgraph",
    "verify",
    "explain",
    "view",
)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_the_registry_builds_every_subcommand_in_help_order():
    assert list(_subcommands(cli.build_parser())) == list(NAMES)


def test_every_command_module_is_registered_and_has_add_parser_and_run():
    folder = Path(commands.__file__).parent
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "common"}
    registered = {
        m.__name__.rpartition(".")[2]: m for m in cli.COMMANDS if m.__name__.startswith(commands.__name__ + ".")
    }
    assert modules == set(registered)
    for module in cli.COMMANDS:
        assert callable(module.add_parser), module.__name__
    for module in registered.values():
        assert callable(module.run), module.__name__


def _leaf_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaf_parsers(child, (*path, name))


def test_every_leaf_command_dispatches_to_a_function():
    leaves = list(_leaf_parsers(cli.build_parser()))
    assert (
        ("lkg", "build") in dict(leaves) and ("mcp", "serve") in dict(leaves) and ("bench", "pipeline") in dict(leaves)
    )
    for path, parser in leaves:
        assert callable(parser.get_default("func")), path


def test_building_the_parser_imports_neither_ray_nor_the_mcp_sdk():
    """`symbolkg --help` (and every command's parser) stays light: Ray and MCP load only when a command runs."""
    code = (
        "import sys; from symbolkg.jobs.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('ray', 'mcp', 'vllm', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("argv", [["lkg"], ["mcp"], ["bench"], ["nosuchcommand"], []])
def test_a_missing_or_unknown_subcommand_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2 and "usage: symbolkg" in capsys.readouterr().err


def test_workers_below_one_is_refused_before_anything_runs(tmp_path, capsys):
    assert cli.main(["verify", str(tmp_path / "run.parquet"), "--workers", "0"]) == 2
    assert "--workers must be >= 1" in capsys.readouterr().err
