"""docs/SEEDS.md stays true: every implementation and every test it names exists.

SEEDS.md maps each step of the five papers to the code that implements it and the test that pins
it, and lists where the code departs from the paper. This file parses its tables and checks:

* every ``symbolkg.<package>.<module>:<qualname>`` it names is defined: the module's file exists
  and the qualname resolves, class by class, to a definition in it (a ``def``, ``class`` or an
  assignment; imports do not count, so a name that moved away is caught where it was cited);
* every ``tests/<path>.py::<name>`` (or ``::<Class>::<name>``) exists: the file, and a function
  (or a method of that class) of that name in it;
* each of the five papers has a section with a step table and a departures table; every step row
  names at least one implementation and one test; every departure row says why and gives a
  measured effect (a ``RESULTS.md § "<heading>"`` citation, "not measured" or "no answer
  changes"), and every cited RESULTS.md heading exists.

The checker reads source files with :mod:`ast` and never imports the code it checks (STYLE.md: a
checker never imports what it checks): no solver, Ray or vLLM is loaded, and a module that would
fail to import for an unrelated reason does not hide a missing name. A test plants a table with a
gone function and a gone test and requires both to be reported, so this check can fail.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "docs" / "SEEDS.md"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"

#: The papers, as their sections' headings name them (``## <name> ...``).
PAPERS: tuple[str, ...] = ("SymbolLKG", "Logic-LM", "SymBa", "PrologMCP", "LogicGraph")
#: Top-level folders installed as ``symbolkg.<folder>`` (pyproject's package-dir).
PACKAGES = frozenset({"jobs", "actors", "retrieval", "solvers", "cluster"})

STEP_HEADER = ("step", "paper reference", "implemented by", "pinned by")
DEPARTURE_HEADER = ("what", "why", "measured effect")
#: What a departure's effect cell must contain (one of them).
EFFECT_WORDS = ("RESULTS.md §", "not measured", "no answer changes")

IMPL_RE = re.compile(r"`(symbolkg(?:\.\w+)+:\w+(?:\.\w+)*)`")
TEST_RE = re.compile(r"`(tests/[\w/.-]+\.py::\w+(?:::\w+)?)`")
RESULTS_RE = re.compile(r'RESULTS\.md §\s*"([^"]+)"')
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class Row:
    """One body row of a table of SEEDS.md."""

    section: str  # the ``## `` heading above it
    kind: str  # "steps" | "departures"
    line: int  # 1-based line in the document
    cells: tuple[str, ...]

    def where(self) -> str:
        return f"line {self.line} ({self.section})"


@dataclass
class Doc:
    """The parsed document: its ``## `` sections, table rows, and shape problems met while parsing."""

    sections: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _cells(line: str) -> tuple[str, ...]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return tuple(c.strip() for c in _CELL_SPLIT.split(inner))


def parse(text: str) -> Doc:
    """Tables of ``text`` by kind (from their header row) under the ``## `` section they are in."""
    doc = Doc()
    section = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
            doc.sections.append(section)
        if not line.lstrip().startswith("|"):
            i += 1
            continue
        header = tuple(c.lower() for c in _cells(line))
        kind = {STEP_HEADER: "steps", DEPARTURE_HEADER: "departures"}.get(header)
        if kind is None:
            doc.problems.append(f"line {i + 1}: a table whose header is neither {STEP_HEADER} nor {DEPARTURE_HEADER}")
        if i + 1 >= len(lines) or not _SEPARATOR.match(lines[i + 1].strip()):
            doc.problems.append(f"line {i + 1}: a table header without a |---| separator line under it")
        i += 2
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            cells = _cells(lines[i])
            if kind is not None:
                if len(cells) != len(header):
                    doc.problems.append(f"line {i + 1}: {len(cells)} cells where the header has {len(header)}")
                doc.rows.append(Row(section, kind, i + 1, cells))
            i += 1
    return doc


# --------------------------------------------------------------------------- resolving names (ast only)


@cache
def _tree(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None


def _definitions(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """Names defined by the statements (defs, classes, assignments), looking into if/try blocks."""
    names: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Name):
                        names[t.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.If):
            names.update(_definitions(node.body))
            names.update(_definitions(node.orelse))
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                names.update(_definitions(block))
    return names


def module_file(module: str, root: Path) -> Path | None:
    """The source file of ``symbolkg.<package>.<...>`` under ``root`` (None if there is none)."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "symbolkg" or parts[1] not in PACKAGES:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _resolve_chain(tree: ast.Module, chain: list[str]) -> str | None:
    """None when ``a.b.c`` is defined in ``tree`` (classes walked into), else what is missing."""
    body: list[ast.stmt] = tree.body
    for k, name in enumerate(chain):
        found = _definitions(body).get(name)
        if found is None:
            return ".".join(chain[: k + 1])
        if k + 1 < len(chain):
            if not isinstance(found, ast.ClassDef):
                return f"{'.'.join(chain[: k + 1])} (not a class, so it has no {chain[k + 1]!r})"
            body = found.body
    return None


def check_implementation(ref: str, root: Path) -> str | None:
    """None when ``symbolkg.pkg.module:qual.name`` is defined, else the reason it is not."""
    module, _, qualname = ref.partition(":")
    path = module_file(module, root)
    if path is None:
        return f"`{ref}`: no module {module} (no {module.split('.', 1)[-1].replace('.', '/')}.py)"
    tree = _tree(path)
    if tree is None:
        return f"`{ref}`: {path.relative_to(root)} does not parse"
    missing = _resolve_chain(tree, qualname.split("."))
    return None if missing is None else f"`{ref}`: {missing} is not defined in {path.relative_to(root)}"


def check_test(ref: str, root: Path) -> str | None:
    """None when ``tests/path.py::name`` (or ``::Class::name``) is defined, else the reason it is not."""
    file, _, rest = ref.partition("::")
    path = root / file
    if not path.is_file():
        return f"`{ref}`: no test file {file}"
    tree = _tree(path)
    if tree is None:
        return f"`{ref}`: {file} does not parse"
    chain = rest.split("::")
    missing = _resolve_chain(tree, chain)
    if missing is not None:
        return f"`{ref}`: {missing} is not defined in {file}"
    return None


# --------------------------------------------------------------------------- the checks


def reference_errors(doc: Doc, root: Path) -> list[str]:
    """Every implementation and test named anywhere in the tables that does not exist."""
    errors: list[str] = []
    for row in doc.rows:
        text = " ".join(row.cells)
        for ref in IMPL_RE.findall(text):
            if (why := check_implementation(ref, root)) is not None:
                errors.append(f"{row.where()}: {why}")
        for ref in TEST_RE.findall(text):
            if (why := check_test(ref, root)) is not None:
                errors.append(f"{row.where()}: {why}")
    return errors


def shape_errors(doc: Doc, results_text: str) -> list[str]:
    """Sections, columns, one implementation and one test per step, a why and an effect per departure."""
    errors = list(doc.problems)
    for paper in PAPERS:
        sections = [s for s in doc.sections if s.split()[0] == paper]
        if len(sections) != 1:
            errors.append(f"paper {paper}: {len(sections)} sections named '## {paper} ...' (want 1)")
            continue
        kinds = {r.kind for r in doc.rows if r.section == sections[0]}
        for kind in ("steps", "departures"):
            if kind not in kinds:
                errors.append(f"paper {paper}: no {kind} table in its section")
    headings = [line.lstrip("#").strip() for line in results_text.splitlines() if line.startswith("#")]
    for row in doc.rows:
        if not row.section or row.section.split()[0] not in PAPERS:
            errors.append(f"{row.where()}: a table outside the five papers' sections")
        if row.kind == "steps":
            step, ref, impl, test = (row.cells + ("", "", "", ""))[:4]
            if not step or not ref:
                errors.append(f"{row.where()}: a step row without its step or its paper reference")
            if not IMPL_RE.search(impl):
                errors.append(f"{row.where()}: names no implementation (`symbolkg.pkg.module:qualname`)")
            if not TEST_RE.search(test):
                errors.append(f"{row.where()}: names no test (`tests/path.py::test_name`)")
        else:
            what, why, effect = (row.cells + ("", "", ""))[:3]
            if not what or not why or not effect:
                errors.append(f"{row.where()}: a departure row needs what, why and measured effect")
            elif not any(word in effect for word in EFFECT_WORDS):
                errors.append(
                    f"{row.where()}: the effect cell cites no RESULTS.md section and says neither "
                    "'not measured' nor 'no answer changes'"
                )
        for cited in RESULTS_RE.findall(" ".join(row.cells)):
            if not any(h.startswith(cited) for h in headings):
                errors.append(f'{row.where()}: RESULTS.md has no section "{cited}"')
    return errors


@pytest.fixture(scope="module")
def doc() -> Doc:
    return parse(SEEDS.read_text(encoding="utf-8"))


def test_every_named_implementation_and_test_exists(doc):
    assert doc.rows, "docs/SEEDS.md has no tables"
    errors = reference_errors(doc, ROOT)
    assert not errors, "docs/SEEDS.md names what is gone:\n" + "\n".join(errors)


def test_each_paper_has_a_section_and_every_row_its_parts(doc):
    errors = shape_errors(doc, RESULTS.read_text(encoding="utf-8"))
    assert not errors, "docs/SEEDS.md is malformed:\n" + "\n".join(errors)


def test_every_step_table_has_rows_for_each_paper(doc):
    counts = {p: sum(r.kind == "steps" and r.section.split()[0] == p for r in doc.rows) for p in PAPERS}
    assert all(n >= 5 for n in counts.values()), counts


# --------------------------------------------------------------------------- the checker can fail

PLANTED = """
## SymBa (planted)

| step | paper reference | implemented by | pinned by |
|---|---|---|---|
| a step whose code is gone | Alg. 1 | `symbolkg.solvers.outcomes:no_such_function` | `tests/test_seeds.py::test_no_such_test` |
| a real step | §3 | `symbolkg.solvers.outcomes:Outcome` | `tests/test_seeds.py::test_every_named_implementation_and_test_exists` |
| a gone method, module and test file | §3 | `symbolkg.solvers.outcomes:Outcome.no_such_method`, `symbolkg.solvers.no_such_module:f` | `tests/no_such_file.py::test_x` |
| a step with no test | §4 | `symbolkg.solvers.outcomes:Outcome` | none yet |

### Departures

| what | why | measured effect |
|---|---|---|
| a departure | a reason | it is faster |
| another | a reason | RESULTS.md § "No such section" |
"""  # noqa: E501 - a markdown table row is one line


def test_a_planted_row_with_a_gone_function_and_a_gone_test_is_reported():
    planted = parse(PLANTED)
    errors = reference_errors(planted, ROOT)
    joined = "\n".join(errors)
    assert "`symbolkg.solvers.outcomes:no_such_function`: no_such_function is not defined" in joined
    assert "`tests/test_seeds.py::test_no_such_test`: test_no_such_test is not defined in tests/test_seeds.py" in joined
    assert "Outcome.no_such_method is not defined" in joined
    assert "no module symbolkg.solvers.no_such_module" in joined
    assert "no test file tests/no_such_file.py" in joined
    assert len(errors) == 5, errors  # the real row and the row without a test name nothing gone
    assert not any("line 7 " in e for e in errors)  # the real step resolves


def test_a_planted_document_missing_papers_tests_and_effects_is_reported():
    errors = "\n".join(shape_errors(parse(PLANTED), "# Benchmark results\n## Some section\n"))
    for paper in ("SymbolLKG", "Logic-LM", "PrologMCP", "LogicGraph"):
        assert f"paper {paper}: 0 sections" in errors
    assert "line 9 (SymBa (planted)): names no test" in errors
    assert "line 15 (SymBa (planted)): the effect cell cites no RESULTS.md section" in errors
    assert 'line 16 (SymBa (planted)): RESULTS.md has no section "No such section"' in errors


def test_names_resolve_through_classes_and_blocks_but_not_through_imports(tmp_path):
    pkg = tmp_path / "solvers"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text(
        "from os import path\n"
        "try:\n    import fast as impl\nexcept ImportError:\n    impl = None\n"
        "class A:\n    x: int = 1\n    def f(self):\n        pass\n"
        "    class B:\n        async def g(self):\n            pass\n"
        "def h():\n    pass\n"
    )
    ok = ["A", "A.x", "A.f", "A.B.g", "h", "impl"]
    assert [check_implementation(f"symbolkg.solvers.m:{q}", tmp_path) for q in ok] == [None] * len(ok)
    assert "path is not defined" in check_implementation("symbolkg.solvers.m:path", tmp_path)  # imported only
    assert "not a class" in check_implementation("symbolkg.solvers.m:h.x", tmp_path)
    assert "no module" in check_implementation("symbolkg.elsewhere.m:A", tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_t.py").write_text("class TestA:\n    def test_a(self):\n        pass\n")
    assert check_test("tests/test_t.py::TestA::test_a", tmp_path) is None
    assert "TestA.test_b is not defined" in check_test("tests/test_t.py::TestA::test_b", tmp_path)


def test_the_checker_imports_nothing_it_checks():
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in {"symbolkg", *PACKAGES}}, imported
