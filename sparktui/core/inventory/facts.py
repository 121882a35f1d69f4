"""What a node holds, as typed facts: the values the inventory script's sections are parsed into, and the
inventory of one node made of them.

A value nobody could read is None, with the reason in the node's ``unknown`` (``"gpus": "nvidia-smi: not
installed"``); it is never guessed. :meth:`NodeInventory.facts` flattens it all into the dotted names the
pre-launch checks (``diagnostics/checks/``) are written over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sparktui.core.inventory.builds import Build, BuildRow, Logind, rows

#: A fact's value: text, a number, a yes/no, a list of names, or None where it is not known.
Value = str | int | float | bool | tuple[str, ...] | tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class Gpu:
    """One GPU as ``nvidia-smi`` describes it."""

    index: int
    name: str
    memory_mib: int | None  # None where the GPU shares the host's memory (a GB10 says [N/A])
    driver: str
    compute_capability: str  # "9.0"; "" where the driver is too old to say
    bus_id: str


@dataclass(frozen=True, slots=True)
class Interface:
    """One network interface as ``ip`` describes it."""

    name: str
    state: str  # UP, DOWN, UNKNOWN (loopback, some virtual links)
    mtu: int | None
    addresses: tuple[str, ...]  # address/prefix, IPv4 and IPv6
    kind: str = ""  # ether, loopback, infiniband...


@dataclass(frozen=True, slots=True)
class RdmaDevice:
    """One RDMA device's port and the network interface it sits on, as ``ibdev2netdev`` pairs them."""

    device: str  # rocep1s0f1
    port: str
    netdev: str  # enp1s0f1np1, "" where not said
    state: str  # Up / Down / ACTIVE..., "" where not said


@dataclass(frozen=True, slots=True)
class Gid:
    """One populated entry of a port's GID table (``ports/N/gids/I``), with its type
    (``gid_attrs/types/I``: ``RoCE v2``, ``IB/RoCE v1``) and the network device that owns it."""

    index: int
    value: str  # as sysfs prints it: eight groups of four hex digits
    type: str  # "RoCE v2", "IB/RoCE v1", "" where it could not be read
    netdev: str = ""

    @property
    def ipv4(self) -> str:
        """The IPv4 address of an IPv4-mapped GID (``::ffff:a.b.c.d``), else ""."""
        groups = self.value.split(":")
        if len(groups) != 8 or any(g != "0000" for g in groups[:5]) or groups[5].lower() != "ffff":
            return ""
        raw = bytes.fromhex(groups[6] + groups[7])
        return ".".join(str(b) for b in raw)

    @property
    def link_local(self) -> bool:
        return self.value.lower().startswith("fe80:")

    @property
    def roce_v2(self) -> bool:
        return self.type.strip().lower() == "roce v2"


@dataclass(frozen=True, slots=True)
class RdmaPort:
    """One port of an RDMA device, from ``/sys/class/infiniband/DEV/ports/N`` (and ``ibv_devinfo`` where it
    is installed): its state, its link layer, its active MTU, its network device and its GIDs."""

    device: str  # rocep1s0f1
    port: int
    state: str  # ACTIVE, DOWN, INIT, ARMED, ... ("" where unread)
    phys_state: str  # LinkUp, Disabled, Polling, ...
    link_layer: str  # Ethernet (RoCE) or InfiniBand
    rate: str
    netdev: str  # its network device ("" where none is visible here)
    netdev_mtu: int | None
    active_mtu: int | None  # ibv_devinfo's, else (RoCE) what the kernel derives from the netdev's MTU
    gids: tuple[Gid, ...] = ()

    @property
    def name(self) -> str:
        """``device:port``, as NCCL_IB_HCA names a port."""
        return f"{self.device}:{self.port}"

    def ipv4_roce_v2(self) -> tuple[Gid, ...]:
        """The RoCE v2 GIDs that carry an IPv4 address: what NCCL picks by default (2.21.5 and later)."""
        return tuple(g for g in self.gids if g.roce_v2 and g.ipv4)


@dataclass(frozen=True, slots=True)
class Space:
    """A filesystem: where it is mounted, its size and what is free, in bytes."""

    mount: str
    size: int
    free: int


@dataclass(frozen=True, slots=True)
class ImageRow:
    """One image of ``docker images``: its reference, its repository digest where it has one, its id."""

    ref: str  # repository:tag, or the id where it has neither
    digest: str  # sha256:..., "" for an image built or loaded here (no registry digest)
    id: str


@dataclass(frozen=True, slots=True)
class ContainerRow:
    """One container as ``docker ps`` lists it."""

    name: str
    id: str
    image: str
    command: str
    state: str


@dataclass(frozen=True, slots=True)
class Container:
    """The engine container, from ``docker inspect``: what it runs and with which settings."""

    name: str
    id: str
    image: str  # as it was started (a tag)
    image_id: str
    running: bool
    command: tuple[str, ...]
    env: Mapping[str, str]
    shm_bytes: int | None  # its /dev/shm (Docker's default is 64 MiB); None with --ipc host: the host's
    ipc: str
    network: str
    mounts: tuple[tuple[str, str], ...]  # (host path, path inside)
    gpus: bool  # whether it was given GPUs (--gpus or the nvidia runtime)


@dataclass(frozen=True, slots=True)
class Image:
    """The engine image, from ``docker image inspect``."""

    ref: str
    id: str
    digests: tuple[str, ...]  # repo@sha256:...
    env: Mapping[str, str]
    created: str


@dataclass(frozen=True, slots=True)
class RayStatus:
    """What ``ray status`` said: whether a cluster answered, its active nodes, its GPUs, what is waiting."""

    running: bool
    nodes: int = 0
    gpus: float = 0.0
    gpus_used: float = 0.0
    pending_nodes: int = 0
    failures: tuple[str, ...] = ()
    demands: tuple[str, ...] = ()  # "{'GPU': 1.0} * 2 (PACK): 1+ pending placement groups"
    problem: str = ""  # why no cluster answered


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """The model's folder and what its config.json says."""

    path: str
    present: bool
    files: tuple[str, ...] = ()
    architectures: tuple[str, ...] = ()
    model_type: str = ""
    quantization: str = ""
    problem: str = ""  # no config.json, unreadable...


@dataclass(frozen=True, slots=True)
class NodeInventory:
    """Everything read on one node in one round trip. ``unknown`` says, per part, why it could not be read;
    ``error`` is set when the node could not be asked at all (then nothing else is)."""

    node: str
    seconds: float = 0.0
    error: str = ""
    hostname: str = ""
    os: str = ""
    kernel: str = ""
    cmdline: str | None = None  # the kernel's command line (/proc/cmdline); None where it was not read
    arch: str = ""
    gpus: tuple[Gpu, ...] | None = None
    cuda: str = ""
    interfaces: tuple[Interface, ...] = ()
    rdma: tuple[RdmaDevice, ...] = ()
    fabric: tuple[RdmaPort, ...] = ()  # every RDMA port (empty: no RDMA devices; see unknown["fabric"])
    shm: Space | None = None
    docker: str = ""  # the engine's (server) version
    images: tuple[ImageRow, ...] = ()
    containers: tuple[ContainerRow, ...] = ()
    container: Container | None = None
    image: Image | None = None
    ray: RayStatus | None = None
    model: ModelFiles | None = None
    disk: Space | None = None
    ports: frozenset[int] = frozenset()
    probe: ImageFacts | None = None
    builds: tuple[Build, ...] = ()  # what the host itself would load (the engine's are the probe's)
    logind: Logind | None = None
    unknown: Mapping[str, str] = field(default_factory=dict)

    def all_builds(self) -> tuple[Build, ...]:
        """The host's builds, then the engine image's."""
        return self.builds + (self.probe.builds if self.probe is not None else ())

    def build_rows(self) -> tuple[BuildRow, ...]:
        """This node's rows of the build table."""
        why = self.error or self.unknown.get("builds", "") or (self.probe.problem if self.probe else "")
        return rows(self.node, self.all_builds(), why)

    def interface_names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.interfaces)


@dataclass(frozen=True, slots=True)
class Flag:
    """One option of vLLM's own ``vllm serve`` parser."""

    name: str
    dest: str
    default: Value
    takes_value: bool
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NcclLibrary:
    """The NCCL shared library a node would load: where it is, how it was found, and what identifies its build."""

    path: str
    source: str  # "loaded by torch", "found"
    sha256: str
    build_id: str


@dataclass(frozen=True, slots=True)
class ImageFacts:
    """What the in-image probe found (see image_probe.py); each part it could not finish is in
    ``timed_out``, each that failed in ``failed`` with why."""

    via: str  # "container vllm_node" or "image nvcr.io/...": where the probe ran
    python: str = ""
    packages: Mapping[str, str | None] = field(default_factory=dict)
    programs: Mapping[str, str | None] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    nccl_conf: Mapping[str, str] = field(default_factory=dict)
    shm_bytes: int | None = None
    interfaces: tuple[str, ...] | None = None
    model: ModelFiles | None = None
    torch_cuda: str | None = None
    torch_archs: tuple[str, ...] | None = None  # sm_120, compute_120...: what torch's kernels were built for
    nccl: str | None = None  # the version torch reports
    nccl_library: NcclLibrary | None = None
    model_types: tuple[str, ...] | None = None
    vllm_archs: tuple[str, ...] | None = None
    vllm_flags: Mapping[str, Flag] | None = None
    executor_default: Value = None
    seconds: float = 0.0
    timed_out: tuple[str, ...] = ()
    failed: Mapping[str, str] = field(default_factory=dict)
    problem: str = ""  # the probe printed no JSON, or said why it could not run
    builds: tuple[Build, ...] = ()  # torch's NCCL first, then what builds() read

    def version(self, package: str) -> str | None:
        return self.packages.get(package)
