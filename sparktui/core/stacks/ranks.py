"""A rank process as gathered from a node: where it runs, its launcher's environment, its dumps in time
order and the GPU it holds."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sparktui.core.stacks.dump import Process


@dataclass(frozen=True, slots=True)
class Gpu:
    uuid: str
    index: str
    name: str
    utilization: str
    power: str
    clock: str

    def __str__(self) -> str:
        return f"gpu{self.index} {self.utilization} {self.power} {self.clock}"


@dataclass(frozen=True, slots=True)
class Sample:
    """One ``py-spy dump`` of a rank: when, and the process read (None: why not, in ``error``)."""

    at: float
    process: Process | None
    error: str = ""


@dataclass(frozen=True, slots=True)
class Rank:
    """One rank process found on a node: where it runs, who it is, its dumps in time order."""

    node: str
    place: str  # "host" or the container's name
    pid: int
    command: str
    env: Mapping[str, str]
    samples: tuple[Sample, ...]
    gpu: Gpu | None = None
    gone: bool = False  # it ended while being gathered

    @property
    def rank(self) -> int | None:
        return _int(self.env.get("RANK"))

    @property
    def world(self) -> int | None:
        return _int(self.env.get("WORLD_SIZE"))

    @property
    def job(self) -> str:
        """Which job it belongs to: its store's address where the launcher set one, else its kind."""
        addr, port = self.env.get("MASTER_ADDR"), self.env.get("MASTER_PORT")
        if addr and port:
            return f"{addr}:{port}"
        return next((k for k, p in _ENGINES if p.search(self.command)), "gpu")

    @property
    def name(self) -> str:
        where = self.node if self.place == "host" else f"{self.node}/{self.place}"
        return f"rank {self.rank} on {where}" if self.rank is not None else f"pid {self.pid} on {where}"

    @property
    def latest(self) -> Process | None:
        return next((s.process for s in reversed(self.samples) if s.process is not None), None)


#: The job of an engine process without a store address, by its title. vLLM's engine core drives its workers
#: (it waits on them as a whole): a group of its own, so it is never their rank elsewhere.
_ENGINES = (
    ("vllm-engine-core", re.compile(r"VLLM::EngineCore")),
    ("vllm", re.compile(r"VLLM::|vllm|RayWorkerWrapper")),
    ("sglang", re.compile(r"sglang")),
    ("ray", re.compile(r"ray::")),
)


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None
