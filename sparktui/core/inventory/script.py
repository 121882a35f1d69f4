"""The one shell script that collects a node's inventory in one round trip, and the split of what it prints
into its sections.

Everything the script asks is read-only: ``uname``, ``/etc/os-release``, ``nvidia-smi`` queries, ``ip``,
the RDMA tools, ``df``, ``docker version / images / ps / inspect``, ``ray status`` inside the engine
container, the model's ``config.json``, the builds the host itself would load (the probe's file reader,
run by the host's ``python3`` with ``host``), systemd-logind's ``RemoveIPC`` / ``KillUserProcesses`` and
the user's ``Linger`` (``loginctl``, ``logind.conf``), the listening sockets of ``/proc/net/tcp``, and the in-image
probe (:mod:`sparktui.core.inventory.image_probe`, fed on stdin to ``docker exec -i`` into the running
engine container, or else to ``docker run --rm -i`` of the image). A tool that is missing is a section
that says so (``nvidia-smi: not installed``, exit 127), never a failed script.

The script is two files beside this module, ``fabric.sh`` and ``inventory.sh`` (their heads say what they
do); this module only puts the values they run with before them, each one shell-quoted (the image, the
model, container names, and the probe's source itself), and strips their comment lines, which every node's
process list would otherwise show. Each section is framed by ``@@NONCE begin NAME`` and
``@@NONCE end NAME CODE``, with a random nonce for each run, so nothing a command prints can open or close a
section.
"""

from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from sparktui.core.inventory import image_probe

#: Seconds ``ray status`` may take before it is cut off (it imports Ray and asks the GCS).
RAY_STATUS_TIMEOUT = 20
#: Seconds the in-image probe has in all (each of its parts has its own share; see image_probe).
PROBE_BUDGET = 60
#: Seconds past its budget the probe's ``docker exec`` or ``docker run`` may take before it is cut off: an
#: engine that never starts the probe (an exec hung in the runtime, a python3 that does not return) ends in
#: "no answer within N s" instead of holding the whole check.
PROBE_GRACE = 15
#: The most bytes of a config.json read (they are small; a huge one is not a config).
CONFIG_LIMIT = 1 << 20
#: Where the kernel lists RDMA devices and network devices (sysfs): what the fabric section reads.
IB_ROOT = "/sys/class/infiniband"
NET_ROOT = "/sys/class/net"
#: The words in a container's name, image or command that make it an engine container when none is named.
ENGINE_WORDS = "vllm|sglang|ray"

# Sections, in the order the script prints them.
SECTIONS = (
    "host",
    "os",
    "gpus",
    "cuda",
    "ip",
    "rdma",
    "fabric",
    "shm",
    "docker_version",
    "docker_images",
    "docker_ps",
    "container",
    "image",
    "model",
    "disk",
    "builds",
    "logind",
    "ports",
    "ray_status",
    "probe",
)


@dataclass(frozen=True, slots=True)
class Request:
    """What to look at on a node besides the node itself: the engine ``image`` and ``containers`` (their
    names, the first running one is probed; none named: the first running container whose name, image or
    command says vllm, sglang or ray), the ``model`` (a path or a Hugging Face repo id, as the launch names
    it) and whether to run the in-image probe."""

    image: str = ""
    containers: tuple[str, ...] = ()
    model: str = ""
    probe: bool = True
    probe_budget: int = PROBE_BUDGET


@dataclass(frozen=True, slots=True)
class Section:
    """What one part of the script printed (standard output and error together) and how it ended; ``code``
    is None when the section never ended (the script was cut off)."""

    name: str
    text: str
    code: int | None

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


@dataclass(frozen=True, slots=True)
class Output:
    """A run's sections by name, and whatever was printed outside them (an SSH banner, the shell's errors)."""

    sections: dict[str, Section] = field(default_factory=dict)
    stray: tuple[str, ...] = ()

    def get(self, name: str) -> Section | None:
        return self.sections.get(name)


def nonce() -> str:
    return secrets.token_hex(8)


def probe_source() -> str:
    """The probe's own file: the module is the script."""
    return Path(image_probe.__file__).read_text(encoding="utf-8")


def script(request: Request, run: str) -> str:
    """The inventory script for one node, framed with nonce ``run``."""
    values = {
        "N": run,
        "image": request.image,
        "model": request.model,
        "auto": "0" if request.containers else "1",
        "budget": str(int(request.probe_budget)),
        "grace": str(PROBE_GRACE),
        "limit": str(CONFIG_LIMIT),
        "fmt_images": _IMAGES,
        "fmt_ps": _CONTAINERS,
        "ib": IB_ROOT,
        "sysnet": NET_ROOT,
        "ray_timeout": str(RAY_STATUS_TIMEOUT),
        "engine_words": ENGINE_WORDS,
        "src": probe_source().rstrip("\n"),
        "probe_on": "1" if request.probe else "0",
    }
    head = [f"{name}={shlex.quote(value)}" for name, value in values.items()]
    head.append(f"set -- {' '.join(shlex.quote(c) for c in request.containers)}".rstrip())
    return "\n".join(head) + "\n" + FABRIC + _BODY


def split(lines: list[str], run: str) -> Output:
    """The sections of the output of :func:`script` run with nonce ``run``."""
    begin, end = f"@@{run} begin ", f"@@{run} end "
    sections: dict[str, Section] = {}
    stray: list[str] = []
    name: str | None = None
    body: list[str] = []
    for line in lines:
        if line.startswith(begin):
            if name is not None:  # a section that never ended: kept, without a code
                sections[name] = Section(name, "\n".join(body), None)
            name, body = line[len(begin) :].strip(), []
        elif line.startswith(end) and name is not None:
            words = line[len(end) :].split()
            code = int(words[1]) if len(words) > 1 and words[1].isdigit() else None
            sections[name] = Section(name, "\n".join(body), code)
            name, body = None, []
        elif name is not None:
            body.append(line)
        elif line.strip():
            stray.append(line)
    if name is not None:
        sections[name] = Section(name, "\n".join(body), None)
    return Output(sections, tuple(stray))


#: One line of JSON per image and per running container, with only the fields read (``{{json .}}`` would
#: carry every label, and a line can outgrow what a runner hands over whole).
_IMAGES = '{"Repository":{{json .Repository}},"Tag":{{json .Tag}},"Digest":{{json .Digest}},"ID":{{json .ID}}}'
_CONTAINERS = (
    '{"ID":{{json .ID}},"Names":{{json .Names}},"Image":{{json .Image}},'
    '"Command":{{json .Command}},"State":{{json .State}},"Ports":{{json .Ports}}}'
)


def _shell(name: str) -> str:
    """The shell file ``name`` beside this module, as sent: without its comment lines."""
    text = Path(__file__).with_name(name).read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))


#: The fabric section's function, fabric_part (its file's head says what it prints), and the rest of the
#: script, as sent.
FABRIC = _shell("fabric.sh")
_BODY = _shell("inventory.sh")
