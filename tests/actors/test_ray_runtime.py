"""Ray started by a job survives the thread that built its actors.

Regression: ``symbolkg lkg build --llm-actor`` built its LLM actor in an ``asyncio.to_thread``
worker, so ``ray.init`` ran there; Ray ties the processes it starts to the starting thread
(``PR_SET_PDEATHSIG``), the kernel killed GCS and raylet when the executor shut down, and a
minute later the driver ended itself with exit code 1 (a CI run died that way mid-suite).
Each case runs in a fresh interpreter so its Ray is its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytestmark = pytest.mark.timeout(360)

# Not a synchronisation but a watch window: what is checked is that nothing happens. The kernel
# sends the PR_SET_PDEATHSIG signal as the thread exits (already done when this runs), and a SIGKILL
# takes effect as soon as the process is next scheduled: milliseconds, far under the 2 s window.
_ALIVE = """
    import psutil
    time.sleep(2)  # the kernel acts at thread exit; give it a moment
    names = {p.name() for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE}
    print("RAYLET_ALIVE" if "raylet" in names and "gcs_server" in names else f"RAY_DEAD {sorted(names)}")
    ray.shutdown()
"""


def _run(body: str) -> str:
    code = textwrap.dedent(body) + textwrap.dedent(_ALIVE)
    # A Ray temp dir of its own: a plain ray.init() joins the cluster named in <temp dir>/ray_current_cluster,
    # and under pytest-xdist another test of this worker may have left one running there (then no raylet
    # is this interpreter's child, and the check below cannot see it). The path stays short (socket paths).
    ray_tmp = tempfile.mkdtemp(prefix="rt-", dir="/tmp")
    try:
        # Each case takes 14-18 s (measured on a busy machine: a fresh interpreter starting Ray); 300 s is over 10x.
        proc = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "RAY_TMPDIR": ray_tmp},
        )
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_a_lazy_actor_engine_starts_ray_on_the_main_thread_and_ray_outlives_the_build_thread():
    out = _run("""
        import asyncio, threading, time
        import ray
        from symbolkg.actors.engines.factory import LazyEngine
        from symbolkg.actors.engines.scripted import ScriptedEngine
        from symbolkg.actors.engines.base import ChatRequest, Message, SamplingParams
        from symbolkg.actors.ray_runtime import ensure_ray

        built_on = []
        def build():  # what start_llm_actor does, minus the model: needs Ray, runs in a worker thread
            built_on.append(threading.current_thread().name)
            ensure_ray()
            return ScriptedEngine(lambda r: "ok")

        async def main():
            engine = LazyEngine(build, model="m", supports_structured=False, prepare=ensure_ray)
            request = ChatRequest((Message("user", "hi"),), SamplingParams(max_tokens=4))
            return (await engine.generate([request]))[0].text

        assert asyncio.run(main()) == "ok"  # asyncio.run shuts the build thread down
        assert built_on and built_on[0] != "MainThread"
    """)
    assert "RAYLET_ALIVE" in out, out


def test_ensure_ray_refuses_to_start_ray_off_the_main_thread():
    out = _run("""
        import threading, time
        import ray
        from symbolkg.actors.ray_runtime import ensure_ray

        errors = []
        def start():
            try:
                ensure_ray()
            except RuntimeError as exc:
                errors.append(str(exc))
        t = threading.Thread(target=start)
        t.start(); t.join()
        assert errors and "main thread" in errors[0] and not ray.is_initialized(), errors
        ensure_ray()  # on the main thread it starts Ray, and the second call is a no-op
        ensure_ray()
    """)
    assert "RAYLET_ALIVE" in out, out
