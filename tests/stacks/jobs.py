"""Real torch.distributed jobs (torch's CPU build, gloo) that hang, or keep working, the ways of
tools/capture/stacks/scenario.py: started as local processes, each rank with its launcher's variables."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.servers.vllm import ENV_DIR, free_port
from tests.waiting import wait_until

from ..conftest import ROOT

SCENARIO = ROOT / "tools" / "capture" / "stacks" / "scenario.py"
PYTHON = ENV_DIR / "venv" / "bin" / "python"


def _sleep_line() -> int:
    """The line where serve_requests sleeps, as py-spy names the frame of a rank idle there."""
    lines = SCENARIO.read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith("def serve_requests(")))
    return next(i for i, line in enumerate(lines[start:], start + 1) if "time.sleep(" in line)


SLEEP_LINE = _sleep_line()


@dataclass(frozen=True)
class Job:
    port: int
    pids: tuple[int, ...]

    @property
    def job(self) -> str:
        return f"127.0.0.1:{self.port}"


@contextmanager
def job(behaviour: str, folder: Path, ranks: int = 2, *extra: str) -> Iterator[Job]:
    """``ranks`` ranks of ``behaviour``, once each has said it is in place (import torch takes seconds)."""
    assert PYTHON.exists(), f"no python with torch at {PYTHON}: run tools/vllm-cpu-env.sh"
    port = free_port()
    procs = []
    logs = [folder / f"{behaviour}-rank{r}.log" for r in range(ranks)]
    try:
        for rank, log in enumerate(logs):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1")
            env.update(MASTER_PORT=str(port), PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
            with log.open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        [str(PYTHON), str(SCENARIO), behaviour, *extra],
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )

        def ready() -> bool:
            ended = [p.args for p in procs if p.poll() is not None]
            assert not ended, f"a rank ended: {[log.read_text()[-2000:] for log in logs]}"
            return all(b"in place" in log.read_bytes() for log in logs)

        wait_until(ready, 120, f"{ranks} ranks of {behaviour} in place")
        yield Job(port, tuple(p.pid for p in procs))
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
