"""The house rules, read from the code (every import, the ones inside functions included).

* No import cycles anywhere in the package.
* No upward imports between the layers of DESIGN.md: ``solvers`` imports nothing of ours but
  ``solvers``; ``retrieval`` only ``solvers``; ``actors`` only ``retrieval`` and ``solvers``;
  ``cluster`` nothing of ours; ``jobs`` anything.
* ``solvers.certificates`` never imports an engine: only ``solvers.outcomes``, other
  ``certificates`` modules, syntax modules (basename ``syntax`` or ``*_syntax``) and independent
  evaluators (basename ``*_eval``). So a checker is provably independent of the producer.
* Syntax modules import only ``solvers.outcomes`` and other syntax modules.
* A function-local import of one of our modules carries a comment saying why (on its line or the
  line above): an optional heavy dependency, never a way around a cycle.
* Inside ``jobs``: the command modules (``jobs.cli``, ``jobs.commands.*``) are imported by nothing
  but the command line itself; no method or pipeline module imports a server (``jobs.servers``):
  the prolog-agent reaches the MCP server as a client of its own process; no cycle between the
  folders of ``jobs`` (``jobs.pipeline`` -> ``jobs.methods`` -> ``jobs.records``, never back).
* Size: no module over 800 lines unless its docstring says why (the words "long because"), no
  function over 80 lines. A smell detector, not a target: code reshaped only to pass it is the smell.

Each rule is a function over an import graph, tested here on the package and on planted trees.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("solvers", "retrieval", "actors", "jobs", "cluster")
#: layer -> the layers it may import (besides itself)
ALLOWED = {
    "solvers": set(),
    "retrieval": {"solvers"},
    "actors": {"retrieval", "solvers"},
    "cluster": set(),
    "jobs": {"solvers", "retrieval", "actors", "cluster"},
}
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80


@dataclass(frozen=True)
class Import:
    source: str  # importing module, e.g. symbolkg.solvers.fol.engine
    target: str  # imported module of ours
    line: int
    local: bool  # inside a function
    commented: bool  # a comment on its line or the line above


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["symbolkg", *parts])


def _resolve(modules: set[str], name: str, imported: list[str]) -> list[str]:
    """``from name import a, b``: the modules of ours that this names (a submodule or the package)."""
    found = [f"{name}.{n}" for n in imported if f"{name}.{n}" in modules]
    if len(found) < len(imported) and name in modules:
        found.append(name)
    return found


def _function_ranges(tree: ast.AST) -> list[tuple[int, int]]:
    return [
        (n.lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[Import]:
    """Every import of one of our modules by one of our modules under ``root``."""
    files = {
        _module_name(root, p): p
        for pkg in packages
        if (root / pkg).is_dir()
        for p in sorted((root / pkg).rglob("*.py"))
    }
    modules = set(files)
    found: list[Import] = []
    for source, path in files.items():
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        ranges = _function_ranges(tree)
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name in modules]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                    )
                if base.split(".")[0] != "symbolkg" and not node.level:
                    continue
                targets = _resolve(modules, base, [a.name for a in node.names])
            else:
                continue
            local = any(a < node.lineno <= b for a, b in ranges)
            here = lines[node.lineno - 1]
            above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            commented = "#" in here or above.startswith("#")
            found += [Import(source, t, node.lineno, local, commented) for t in targets if t != source]
    return found


def cycles(graph: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    edges: dict[str, set[str]] = {}
    for imp in graph:
        edges.setdefault(imp.source, set()).add(imp.target)
        edges.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # recursion depth = module count (hundreds): fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _layer(module: str) -> str:
    return module.split(".")[1]


def _is_syntax(module: str) -> bool:
    base = module.rpartition(".")[2]
    return base == "syntax" or base.endswith("_syntax")


def _is_eval(module: str) -> bool:
    return module.rpartition(".")[2].endswith("_eval")


def upward_imports(graph: list[Import]) -> list[str]:
    return [
        f"{i.source}:{i.line} imports {i.target} ({_layer(i.source)} may import "
        f"{sorted(ALLOWED[_layer(i.source)]) or 'nothing of ours'})"
        for i in graph
        if _layer(i.target) != _layer(i.source) and _layer(i.target) not in ALLOWED[_layer(i.source)]
    ]


def checker_imports(graph: list[Import]) -> list[str]:
    """Certificates import only outcomes, certificates, syntax and ``_eval`` modules; syntax
    modules only outcomes and syntax."""
    bad = []
    for i in graph:
        ok_target = i.target == "symbolkg.solvers.outcomes" or _is_syntax(i.target) or _is_eval(i.target)
        if i.source.startswith("symbolkg.solvers.certificates"):
            if not (ok_target or i.target.startswith("symbolkg.solvers.certificates")):
                bad.append(
                    f"{i.source}:{i.line} (a checker) imports {i.target}, "
                    "which is neither syntax nor an *_eval evaluator"
                )
        elif _is_syntax(i.source) and not (i.target == "symbolkg.solvers.outcomes" or _is_syntax(i.target)):
            bad.append(f"{i.source}:{i.line} (syntax) imports {i.target}")
    return bad


def uncommented_local_imports(graph: list[Import]) -> list[str]:
    return [
        f"{i.source}:{i.line} imports {i.target} inside a function without a comment saying why"
        for i in graph
        if i.local and not i.commented
    ]


#: the command line: what no other module imports
COMMAND_LINE = ("symbolkg.jobs.cli", "symbolkg.jobs.__main__", "symbolkg.jobs.commands")


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def command_imports(graph: list[Import]) -> list[str]:
    """Command modules imported from outside the command line."""
    return [
        f"{i.source}:{i.line} imports the command module {i.target} (only the command line may)"
        for i in graph
        if _within(i.target, COMMAND_LINE) and not _within(i.source, COMMAND_LINE)
    ]


def server_imports(graph: list[Import]) -> list[str]:
    """Methods and the pipeline never import a server."""
    clients = ("symbolkg.jobs.methods", "symbolkg.jobs.pipeline")
    return [
        f"{i.source}:{i.line} imports the server module {i.target} (a method or the pipeline is a client)"
        for i in graph
        if _within(i.source, clients) and _within(i.target, ("symbolkg.jobs.servers",))
    ]


def _jobs_folder(module: str) -> str | None:
    """``symbolkg.jobs.pipeline.store`` -> ``symbolkg.jobs.pipeline``; a module at jobs/'s root is its own."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) >= 3 and parts[1] == "jobs" else None


def folder_cycles(graph: list[Import]) -> list[list[str]]:
    """Cycles between the folders of ``jobs`` (imports inside one folder do not count)."""
    lifted = []
    for i in graph:
        a, b = _jobs_folder(i.source), _jobs_folder(i.target)
        if a and b and a != b:
            lifted.append(Import(a, b, i.line, i.local, i.commented))
    return cycles(lifted)


def oversized(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    out = []
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")) if (root / pkg).is_dir() else []:
            text = path.read_text()
            tree = ast.parse(text)
            rel = path.relative_to(root)
            n_lines = len(text.splitlines())
            if n_lines > MAX_MODULE_LINES and "long because" not in (ast.get_docstring(tree) or ""):
                out.append(
                    f"{rel}: {n_lines} lines (over {MAX_MODULE_LINES}; a docstring may say why it is 'long because')"
                )
            out += [
                f"{rel}:{a}: a function of {b - a + 1} lines (over {MAX_FUNCTION_LINES})"
                for a, b in _function_ranges(tree)
                if b - a + 1 > MAX_FUNCTION_LINES
            ]
    return out


# --------------------------------------------------------------------------- the package


@pytest.fixture(scope="module")
def graph() -> list[Import]:
    return import_graph(ROOT)


def test_package_has_no_import_cycles(graph):
    assert cycles(graph) == []


def test_package_has_no_upward_imports(graph):
    assert upward_imports(graph) == []


def test_checkers_import_no_engine(graph):
    assert checker_imports(graph) == []


def test_function_local_imports_say_why(graph):
    assert uncommented_local_imports(graph) == []


def test_command_modules_are_imported_by_the_command_line_only(graph):
    assert command_imports(graph) == []


def test_no_method_or_pipeline_module_imports_a_server(graph):
    assert server_imports(graph) == []


def test_no_cycle_between_the_folders_of_jobs(graph):
    assert folder_cycles(graph) == []


def test_modules_and_functions_are_small():
    assert oversized(ROOT) == []


def test_the_graph_sees_the_package(graph):
    """Guards the guards: the walk finds the imports we know are there."""
    pairs = {(i.source, i.target) for i in graph}
    assert ("symbolkg.solvers.registry", "symbolkg.solvers.outcomes") in pairs
    assert any(s.startswith("symbolkg.jobs") and t.startswith("symbolkg.solvers") for s, t in pairs)
    assert len(graph) > 200


# --------------------------------------------------------------------------- planted trees


def _plant(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for parent in path.relative_to(root).parents:
            if str(parent) != ".":
                (root / parent / "__init__.py").touch()
    return root


def test_planted_cycle_is_found(tmp_path):
    root = _plant(
        tmp_path,
        {
            "solvers/a.py": "from symbolkg.solvers import b\n",
            "solvers/b.py": "def f():\n    # lazy: breaks nothing\n    from symbolkg.solvers.a import x\n",
            "solvers/c.py": "import symbolkg.solvers.a\n",
        },
    )
    assert cycles(import_graph(root)) == [["symbolkg.solvers.a", "symbolkg.solvers.b"]]


def test_planted_upward_import_is_found(tmp_path):
    root = _plant(
        tmp_path,
        {
            "jobs/rows.py": "X = 1\n",
            "solvers/checks.py": "def f():\n    from symbolkg.jobs.rows import X  # why: none good\n",
            "retrieval/r.py": "from symbolkg.solvers import checks\n",
            "actors/a.py": "from symbolkg.jobs import rows\n",
        },
    )
    found = upward_imports(import_graph(root))
    assert len(found) == 2
    assert found[0].startswith("symbolkg.actors.a:1 imports symbolkg.jobs.rows") or found[1].startswith(
        "symbolkg.actors.a:1"
    )
    assert any(f.startswith("symbolkg.solvers.checks:2 imports symbolkg.jobs.rows") for f in found)


def test_planted_engine_import_in_a_checker_is_found(tmp_path):
    root = _plant(
        tmp_path,
        {
            "solvers/outcomes.py": "",
            "solvers/fol/syntax.py": "from symbolkg.solvers.outcomes import *\n",
            "solvers/fol/z3_eval.py": "from symbolkg.solvers.fol import syntax\n",
            "solvers/fol/engine.py": "from symbolkg.solvers.fol import syntax\n",
            "solvers/certificates/entailment.py": (
                "from symbolkg.solvers.fol import syntax, z3_eval\nfrom symbolkg.solvers.fol.engine import solve\n"
            ),
            "solvers/lp/syntax.py": "from symbolkg.solvers.lp import engine\n",
            "solvers/lp/engine.py": "",
        },
    )
    found = checker_imports(import_graph(root))
    assert found == [
        "symbolkg.solvers.certificates.entailment:2 (a checker) imports symbolkg.solvers.fol.engine, "
        "which is neither syntax nor an *_eval evaluator",
        "symbolkg.solvers.lp.syntax:1 (syntax) imports symbolkg.solvers.lp.engine",
    ]


def test_planted_uncommented_local_import_and_sizes_are_found(tmp_path):
    long_body = "".join(f"    x{i} = {i}\n" for i in range(90))
    root = _plant(
        tmp_path,
        {
            "jobs/a.py": (
                "def f():\n    from symbolkg.jobs import b\n\n"
                "def g():\n    from symbolkg.jobs import b  # heavy: optional\n"
            ),
            "jobs/b.py": "def long():\n" + long_body,
            "jobs/big.py": '"""Big."""\n' + "x = 1\n" * 801,
            "jobs/big_ok.py": '"""Big, and long because it is a table."""\n' + "x = 1\n" * 801,
        },
    )
    assert uncommented_local_imports(import_graph(root)) == [
        "symbolkg.jobs.a:2 imports symbolkg.jobs.b inside a function without a comment saying why"
    ]
    found = oversized(root)
    assert found == [
        "jobs/b.py:1: a function of 91 lines (over 80)",
        "jobs/big.py: 802 lines (over 800; a docstring may say why it is 'long because')",
    ]


def test_planted_command_server_and_folder_violations_are_found(tmp_path):
    root = _plant(
        tmp_path,
        {
            "jobs/cli.py": "from symbolkg.jobs.commands import solve\n",
            "jobs/commands/solve.py": (
                "from symbolkg.jobs.commands import common\nfrom symbolkg.jobs.pipeline import runner\n"
            ),
            "jobs/commands/common.py": "",
            "jobs/inspection/report.py": "from symbolkg.jobs.commands.common import X\n",
            "jobs/servers/mcp/server.py": "from symbolkg.jobs.records import rows\n",
            "jobs/methods/agent.py": (
                "from symbolkg.jobs.servers.mcp.server import S\nfrom symbolkg.jobs.records import rows\n"
            ),
            "jobs/pipeline/method_job.py": "from symbolkg.jobs.methods import agent\n",
            "jobs/records/rows.py": "def f():\n    # lazy: planted\n    from symbolkg.jobs.pipeline import runner\n",
        },
    )
    g = import_graph(root)
    assert command_imports(g) == [
        "symbolkg.jobs.inspection.report:1 imports the command module symbolkg.jobs.commands.common "
        "(only the command line may)"
    ]
    assert server_imports(g) == [
        "symbolkg.jobs.methods.agent:1 imports the server module symbolkg.jobs.servers.mcp.server "
        "(a method or the pipeline is a client)"
    ]
    # methods -> servers -> records -> (lazily) pipeline -> methods
    cycle = ["symbolkg.jobs.methods", "symbolkg.jobs.pipeline", "symbolkg.jobs.records", "symbolkg.jobs.servers"]
    assert folder_cycles(g) == [cycle]


if __name__ == "__main__":  # `python tests/test_layering.py`: every violation, one per line
    g = import_graph(ROOT)
    for problem in (
        [" <-> ".join(c) for c in cycles(g)]
        + upward_imports(g)
        + checker_imports(g)
        + uncommented_local_imports(g)
        + command_imports(g)
        + server_imports(g)
        + [" <-> ".join(c) for c in folder_cycles(g)]
        + oversized(ROOT)
    ):
        print(problem)
