"""Methods are plug-ins: the registry, a toy method through `symbolkg solve`, and bare-name imports nowhere."""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
from pathlib import Path

import pytest

from symbolkg.actors.engines.scripted import ScriptedEngine
from symbolkg.jobs import methods
from symbolkg.jobs.cli import main as cli_main
from symbolkg.jobs.core.answers import interpret
from symbolkg.jobs.core.rows import Problem, ResultRow
from symbolkg.jobs.methods import Method, MethodConfig, MethodContext, run_problem
from symbolkg.jobs.pipeline.store import read_run
from symbolkg.solvers.outcomes import ErrorKind, Outcome, SolveRequest, Status
from tests.conftest import FIXTURES, REPO


class RunGivenProgram(Method):
    """A toy method: runs the problem's own program in the job's solver pool; one flag of its own."""

    name = "toy-run-given"
    summary = "run the problem's own program (a test's toy method)"
    needs_solver = True

    def __init__(self, label: str = "toy") -> None:
        self.label = label
        self.closed = 0

    @classmethod
    def add_arguments(cls, group: argparse._ArgumentGroup) -> None:
        group.add_argument("--toy-label", default="toy", help="a label written into every row's trace")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunGivenProgram:
        if not args.toy_label:
            raise ValueError("--toy-label must not be empty")
        return cls(args.toy_label)

    def run_info(self) -> dict:
        return {"label": self.label}

    async def run(self, problem: Problem, ctx: MethodContext) -> ResultRow:
        if problem.program is None:
            outcome = Outcome.error(Status.PARSE_ERROR, ErrorKind.UNSUPPORTED, "no program given")
            return ctx.row(problem, outcome, predicted=None, trace={"label": self.label})
        result = await ctx.solver.solve(
            SolveRequest(problem.id, problem.program.language, problem.program.text, ctx.config.limits)
        )
        predicted = interpret(problem, result.outcome.answer) if result.outcome.executed else None
        return ctx.row(
            problem,
            result.outcome,
            predicted=predicted,
            program=problem.program.text,
            language=problem.program.language,
            trace={"label": self.label},
        )

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def toy():
    methods.register(RunGivenProgram)
    yield RunGivenProgram
    methods.unregister(RunGivenProgram.name)


def test_builtin_methods_are_registered_lazily():
    assert methods.names()[:4] == ("direct", "cot", "logiclm", "symbolkg")
    assert methods.get("cot").summary and not methods.get("cot").needs_solver
    assert methods.get("symbolkg").needs_solver
    with pytest.raises(ValueError, match="unknown method 'nope'.*logiclm"):
        methods.get("nope")


def test_register_refuses_a_taken_name_and_a_nameless_class(toy):
    class Clash(Method):
        name = "logiclm"

    class Nameless(Method):
        pass

    with pytest.raises(ValueError, match="already registered"):
        methods.register(Clash)
    with pytest.raises(ValueError, match="no name"):
        methods.register(Nameless)
    methods.register(toy)  # the same class again is fine
    assert "toy-run-given" in methods.names()


def test_a_registered_toy_method_runs_through_symbolkg_solve(toy, tmp_path, capsys):
    out = tmp_path / "toy.parquet"
    argv = [
        "solve",
        "--method",
        "toy-run-given",
        "--toy-label",
        "hello",
        "--programs",
        str(FIXTURES / "custom_problems.jsonl"),
        "--skip-bad",
        "--out",
        str(out),
        "--executor",
        "local",
        "--workers",
        "1",
        "--engine",
        "replay",
        "--cache",
        str(tmp_path / "cache"),
        "--model",
        "none",
        "--no-progress",
    ]
    assert cli_main(argv) == 0, capsys.readouterr().err
    table, meta = read_run(out)
    rows = table.to_pylist()
    assert {r["method"] for r in rows} == {"toy-run-given"}
    assert {json.loads(r["trace"])["label"] for r in rows} == {"hello"}
    by_id = {r["problem_id"]: r for r in rows}
    assert by_id["lp-cat"]["correct"] and by_id["fol-socrates"]["correct"]
    assert by_id["no-program"]["error_kind"] == "unsupported"
    assert meta["method"] == "toy-run-given" and meta["toy-run-given"] == {"label": "hello"}


def test_method_flags_are_validated_by_the_method(toy, tmp_path, capsys):
    argv = [
        "solve",
        "--method",
        "toy-run-given",
        "--toy-label",
        "",
        "--programs",
        str(FIXTURES / "custom_problems.jsonl"),
        "--out",
        str(tmp_path / "t.parquet"),
        "--engine",
        "replay",
        "--cache",
        str(tmp_path / "cache"),
        "--model",
        "none",
    ]
    assert cli_main(argv) == 2
    assert "--toy-label must not be empty" in capsys.readouterr().err


def test_run_problem_needs_the_pool_a_method_asks_for(toy):
    p = Problem(id="p", dataset="custom", context="", question="?", options=("A) x", "B) y"), answer="A")
    with pytest.raises(ValueError, match="toy-run-given method needs a solver pool"):
        asyncio.run(run_problem(p, MethodConfig(method="toy-run-given"), ScriptedEngine(lambda r: "A"), None))
    with pytest.raises(ValueError, match="names method 'logiclm'"):
        asyncio.run(run_problem(p, MethodConfig(method="logiclm"), ScriptedEngine(lambda r: "A"), None, toy()))


# --------------------------------------------------------------------------- import hygiene of jobs/
# (import cycles, in jobs/ and everywhere else: tests/test_layering.py)


def test_no_module_imports_the_bare_folder_names():
    """Everything imports as symbolkg.*: a bare `import jobs` would load a second copy (or fail when installed)."""
    bare = ("jobs", "actors", "retrieval", "solvers", "cluster")
    offenders = []
    for folder in (*bare, "tests", "benchmarks"):
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = (
                    [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and not node.level
                    else [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else []
                )
                offenders += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] in bare]
    assert offenders == []


def test_method_modules_live_in_one_folder():
    folder = Path(methods.__file__).parent
    for name in methods.BUILTIN.values():
        module = name.split(":")[0]
        assert module.startswith("symbolkg.jobs.methods."), module
        assert (folder / f"{module.rsplit('.', 1)[1]}.py").is_file()
