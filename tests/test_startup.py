"""Commands start at once: what ``symbolkg --help`` and ``symbolkg mcp serve`` import before they answer.

No timing here (a loaded machine would make it flaky; ``benchmarks/startup.py`` measures the
seconds): each check runs in a fresh interpreter and asserts which modules are in
``sys.modules`` at the point that matters. Building the parser, every command's ``--help`` (the
subcommands found in the parser itself, so a new command is covered without a change here) and
``symbolkg solve --method M --help`` for every method import none of the heavy libraries, whose
import alone costs 0.2-2 s (pandas, through ``pyarrow.dataset``, ~1 s of it). The MCP server
answers ``initialize`` before the MCP SDK is imported (:mod:`symbolkg.jobs.servers.mcp.start`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: Never imported to build the parser or to print a command's help.
HEAVY = ("ray", "pyarrow", "pandas", "vllm", "torch", "faiss", "matplotlib", "z3", "duckdb")
#: ... and, up to the answer to ``initialize``, not the MCP SDK either.
MCP_SDK = ("mcp", "mcp_types", "pydantic", "httpx", "jsonschema", "starlette", "uvicorn")

_PRELUDE = """
import contextlib, io, json, sys

def loaded(names):
    return sorted(n for n in names if n in sys.modules)
"""


def run_child(code: str, *, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter (its last stdout line is JSON), from the repository root."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_PRELUDE) + textwrap.dedent(code)],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_building_the_parser_imports_no_heavy_library() -> None:
    proc = run_child(f"""
        from symbolkg.jobs.cli import build_parser
        build_parser()
        print(json.dumps(loaded({HEAVY!r})))
    """)
    assert json.loads(proc.stdout.splitlines()[-1]) == []


def test_every_commands_help_imports_no_heavy_library() -> None:
    """``symbolkg --help``, each command's and subcommand's ``--help``, and ``solve --method M --help``."""
    proc = run_child(f"""
        import argparse
        from symbolkg.jobs import methods
        from symbolkg.jobs.cli import build_parser, main

        def commands(parser, prefix=()):
            yield prefix
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    for name, sub in action.choices.items():
                        yield from commands(sub, (*prefix, name))

        argvs = [[*c, "--help"] for c in commands(build_parser())]
        argvs += [["solve", "--method", m, "--help"] for m in methods.names()]
        found = {{}}
        for argv in argvs:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                try:
                    code = main(argv)
                except SystemExit as exc:
                    code = exc.code
            assert code in (0, None) and "usage" in out.getvalue(), (argv, code)
            found[" ".join(argv)] = loaded({HEAVY!r})
        print(json.dumps(found))
    """)
    found = json.loads(proc.stdout.splitlines()[-1])
    assert len(found) > 20 and "solve --help" in found and "mcp serve --help" in found
    assert {argv: heavy for argv, heavy in found.items() if heavy} == {}


def test_mcp_serve_answers_initialize_before_importing_the_sdk() -> None:
    """Up to the answer to ``initialize``: the CLI's parser, then :mod:`symbolkg.jobs.servers.mcp.start`'s steps, as
    :func:`symbolkg.jobs.commands.mcp.run` takes them."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    proc = run_child(
        f"""
        from symbolkg.jobs.servers.mcp import start as mcp_start
        from symbolkg.jobs.cli import build_parser
        build_parser().parse_args(["mcp", "serve"])
        with mcp_start.claim_stdio() as pipes:
            answered = mcp_start.answer_initialize(pipes)
            print(json.dumps({{"answered": answered, "loaded": loaded({HEAVY + MCP_SDK!r})}}), file=sys.stderr)
    """,
        stdin=json.dumps(request) + "\n",
    )
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply["id"] == 1 and reply["result"]["protocolVersion"] == "2025-06-18"
    assert reply["result"]["serverInfo"]["name"] == "symbolkg-prolog"
    assert json.loads(proc.stderr.splitlines()[-1]) == {"answered": True, "loaded": []}


def test_verify_help_names_the_summary_keys_of_the_job() -> None:
    """``verify --json``'s help lists the job's summary keys, written out in the command to keep pyarrow out."""
    from symbolkg.jobs.commands.verify import SUMMARY_KEYS as listed
    from symbolkg.jobs.inspection.certificates import SUMMARY_KEYS

    assert listed == SUMMARY_KEYS
