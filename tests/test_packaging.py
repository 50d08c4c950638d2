"""One import package: a wheel built from the repository installs `symbolkg.*` and nothing else.

The wheel goes into a fresh virtual environment outside the repository. Its dependencies are not
downloaded again: a ``.pth`` line puts this venv's site-packages on the fresh one's path, but not
its editable-install finder (a ``.pth`` line adds a folder to ``sys.path``; only site folders
have their own ``.pth`` files run), so ``symbolkg`` can only come from the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TOP_LEVEL_FOLDERS = ("jobs", "actors", "retrieval", "solvers", "cluster")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (path,) = out.glob("symbolkg-*.whl")
    return path


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory, wheel) -> Path:
    root = tmp_path_factory.mktemp("fresh") / "venv"
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "deps-from-the-dev-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    return root


def test_the_wheel_holds_only_the_symbolkg_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"symbolkg", next(t for t in tops if t.endswith(".dist-info"))}, tops
    # every module of the five folders (a subpackage missing from pyproject's list would be absent)
    modules = {
        f"symbolkg/{p.relative_to(REPO).as_posix()}" for name in TOP_LEVEL_FOLDERS for p in (REPO / name).rglob("*.py")
    }
    assert modules - set(names) == set()
    assert not any(n.startswith("symbolkg/tests/") or n.startswith("tests/") for n in names)


def run_outside(venv_root: Path, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": f"{venv_root / 'bin'}:{os.environ.get('PATH', '')}",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "SYMBOLKG_DATA": str(tmp_path),
    }
    return subprocess.run(list(argv), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_installed_outside_the_repo_it_imports_as_symbolkg_only(fresh_venv, tmp_path):
    python = str(fresh_venv / "bin" / "python")
    for name in TOP_LEVEL_FOLDERS:
        probe = run_outside(fresh_venv, tmp_path, python, "-c", f"import {name}")
        assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr, name
    found = run_outside(
        fresh_venv,
        tmp_path,
        python,
        "-c",
        "import symbolkg.solvers, symbolkg.jobs.cli; print(symbolkg.solvers.__file__)",
    )
    assert found.returncode == 0, found.stderr[-2000:]
    assert str(fresh_venv) in found.stdout and str(REPO) not in found.stdout
    site = Path(found.stdout.strip()).parents[2]
    assert not any((site / name).exists() for name in TOP_LEVEL_FOLDERS)


def test_installed_outside_the_repo_symbolkg_solve_runs(fresh_venv, tmp_path):
    symbolkg = str(fresh_venv / "bin" / "symbolkg")
    helped = run_outside(fresh_venv, tmp_path, symbolkg, "--help")
    assert helped.returncode == 0 and "solve" in helped.stdout, helped.stderr[-2000:]
    out = tmp_path / "run.parquet"
    solved = run_outside(
        fresh_venv,
        tmp_path,
        symbolkg,
        "solve",
        "--programs",
        str(FIXTURES / "custom_problems.jsonl"),
        "--skip-bad",
        "--out",
        str(out),
        "--executor",
        "local",
        "--workers",
        "1",
        "--no-progress",
    )
    assert solved.returncode == 0, solved.stderr[-3000:]
    assert out.is_file() and "ALL" in solved.stdout  # the report's total line
