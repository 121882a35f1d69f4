"""Pure parsers for what the inventory script's sections print: each takes the text as the tool printed it
and returns typed facts (:mod:`sparktui.core.inventory.facts`), or raises :class:`Unreadable` with one line
saying why. No I/O."""

from __future__ import annotations

import base64
import binascii
import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from sparktui.core.inventory.facts import (
    Container,
    ContainerRow,
    Gid,
    Gpu,
    Image,
    ImageRow,
    Interface,
    ModelFiles,
    RayStatus,
    RdmaDevice,
    RdmaPort,
    Space,
)


class Unreadable(ValueError):
    """A section's text is not what its tool prints; the message says what was expected."""


def host(text: str) -> tuple[str, str, str, str, str | None]:
    """Kernel name, release, machine and node name, from the four ``uname`` lines, and the kernel's command
    line (``/proc/cmdline``) after them (None where it was not printed)."""
    lines = [line.strip() for line in text.splitlines()]
    if len(lines) < 4:
        raise Unreadable("expected four lines of uname")
    return lines[0], lines[1], lines[2], lines[3], lines[4] if len(lines) > 4 else None


def os_release(text: str) -> str:
    """The system's name and version from /etc/os-release (PRETTY_NAME, else NAME VERSION)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq and re.fullmatch(r"[A-Z_][A-Z0-9_]*", key):
            try:
                words = shlex.split(value)
            except ValueError:
                words = [value]
            values[key] = " ".join(words)
    name = values.get("PRETTY_NAME") or " ".join(v for v in (values.get("NAME"), values.get("VERSION")) if v)
    if not name:
        raise Unreadable("no PRETTY_NAME or NAME in /etc/os-release")
    return name


def gpus(text: str) -> tuple[Gpu, ...]:
    """``nvidia-smi --query-gpu=index,name,memory.total,driver_version[,compute_cap],pci.bus_id
    --format=csv,noheader,nounits``: one GPU a line. Memory is ``[N/A]`` where the GPU shares the host's
    (a GB10)."""
    found = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) not in (5, 6) or not cells[0].isdigit():
            raise Unreadable(f"not a line of nvidia-smi's GPU query: {line[:120]!r}")
        capability = cells[4] if len(cells) == 6 else ""
        memory = cells[2]
        found.append(
            Gpu(
                int(cells[0]),
                cells[1],
                int(memory) if memory.isdigit() else None,
                cells[3],
                "" if capability.startswith("[") else capability,
                cells[-1],
            )
        )
    return tuple(found)


_CUDA = re.compile(r"CUDA Version\s*:?\s*(\d+\.\d+)")


def cuda(text: str) -> str:
    """The highest CUDA version the driver supports, from ``nvidia-smi --version`` or its table's banner."""
    found = _CUDA.search(text)
    if found is None:
        raise Unreadable("no CUDA Version in nvidia-smi's output")
    return found[1]


def interfaces(text: str) -> tuple[Interface, ...]:
    """``ip -j addr show`` (JSON, pretty or not), or ``ip -o addr show`` where JSON is not supported."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            listed = json.loads(stripped)
        except ValueError:
            raise Unreadable("ip -j printed something that is not JSON") from None
        return tuple(_interface(x) for x in listed if isinstance(x, dict) and x.get("ifname"))
    return _interfaces_oneline(text)


def _interface(x: Mapping[str, Any]) -> Interface:
    addresses = tuple(
        f"{a['local']}/{a['prefixlen']}"
        for a in x.get("addr_info") or ()
        if isinstance(a, dict) and "local" in a and "prefixlen" in a
    )
    mtu = x.get("mtu")
    return Interface(
        str(x["ifname"]),
        str(x.get("operstate", "")),
        mtu if isinstance(mtu, int) else None,
        addresses,
        str(x.get("link_type", "")),
    )


_ONELINE = re.compile(r"^\d+:\s+(?P<name>[^\s:@]+)(?:@\S+)?:?\s+(?P<family>inet6?|link/\S+)\s+(?P<address>\S+)")


def _interfaces_oneline(text: str) -> tuple[Interface, ...]:
    addresses: dict[str, list[str]] = {}
    for line in text.splitlines():
        m = _ONELINE.match(line)
        if m is None:
            continue
        listed = addresses.setdefault(m["name"], [])
        if m["family"] in ("inet", "inet6"):
            listed.append(m["address"])
    if not addresses and text.strip():
        raise Unreadable("not the output of ip -o addr show")
    return tuple(Interface(name, "", None, tuple(a)) for name, a in addresses.items())


_IBDEV = re.compile(r"^(?P<dev>\S+) port (?P<port>\d+) ==> (?P<net>\S+) \((?P<state>[^)]*)\)")
_RDMA_LINK = re.compile(r"^link (?P<dev>[^/\s]+)/(?P<port>\d+)\s+state (?P<state>\S+).*?(?:netdev (?P<net>\S+))?\s*$")


def rdma(text: str) -> tuple[RdmaDevice, ...]:
    """RDMA devices and their network interfaces, from whichever tool the script found: ``ibdev2netdev``
    (``rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)``), ``rdma link show`` (``link rocep1s0f1/1 state ACTIVE
    physical_state LINK_UP netdev enp1s0f1np1``) or the sysfs links (``rocep1s0f1/device/net/enp1s0f1np1``).
    A tool that finds no RDMA subsystem at all means no devices."""
    lines = text.splitlines()
    tool = lines[0].strip() if lines else ""
    found = []
    for line in lines[1:]:
        if tool == "# ibdev2netdev" and (m := _IBDEV.match(line)):
            found.append(RdmaDevice(m["dev"], m["port"], m["net"], m["state"]))
        elif tool == "# rdma link" and (m := _RDMA_LINK.match(line)):
            found.append(RdmaDevice(m["dev"], m["port"], m["net"] or "", m["state"]))
        elif tool == "# sysfs" and "/device/net/" in line:
            device, _, net = line.strip().partition("/device/net/")
            found.append(RdmaDevice(device, "", net, ""))
    if tool not in ("# ibdev2netdev", "# rdma link", "# sysfs"):
        raise Unreadable("no RDMA tool named")
    return tuple(found)


#: The IB MTUs a RoCE port can run at, largest first.
IB_MTUS = (4096, 2048, 1024, 512, 256)
#: What RoCE's headers take from the network device's MTU, as the kernel counts them (``iboe_get_mtu`` in
#: include/rdma/ib_addr.h: GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4).
ROCE_OVERHEAD = 96


def roce_mtu(netdev_mtu: int) -> int | None:
    """The active MTU of a RoCE port whose network device has ``netdev_mtu``: the largest IB MTU that fits
    once RoCE's headers are taken off (1500 gives 1024; 4200 and 9000 give 4096)."""
    return next((m for m in IB_MTUS if m <= netdev_mtu - ROCE_OVERHEAD), None)


def _after_colon(value: str) -> str:
    """``4: ACTIVE`` (sysfs) and ``PORT_ACTIVE (4)`` (ibv_devinfo) both as ``ACTIVE``."""
    value = value.strip()
    if re.match(r"^\d+:\s", value):
        value = value.partition(":")[2].strip()
    value = re.sub(r"\s*\(\d+\)$", "", value)
    return value.removeprefix("PORT_")


_DEVINFO = re.compile(r"^[\s`*]*(hca_id|port|state|active_mtu|link_layer):\s*(.*?)[\s`*]*$")


def ibv_devinfo(text: str) -> tuple[RdmaPort, ...]:
    """The ports of ``ibv_devinfo`` (with or without ``-v``): device, port, state, active MTU and link layer;
    the other fields of each are empty. Ports of a block whose ``hca_id`` is not in the text are left out."""
    found: list[RdmaPort] = []
    device, port = "", 0
    fields: dict[str, str] = {}

    def close() -> None:
        if device and port:
            mtu = re.match(r"\d+", fields.get("active_mtu", ""))
            state, layer = _after_colon(fields.get("state", "")), fields.get("link_layer", "")
            found.append(RdmaPort(device, port, state, "", layer, "", "", None, int(mtu[0]) if mtu else None))

    for line in text.splitlines():
        m = _DEVINFO.match(line)
        if m is None:
            continue
        key, value = m[1], m[2]
        if key in ("hca_id", "port"):
            close()
            fields = {}
            if key == "hca_id":
                device, port = value, 0
            else:
                port = int(value) if value.isdigit() else 0
        else:
            fields[key] = value
    close()
    return tuple(found)


def fabric(text: str) -> tuple[RdmaPort, ...]:
    """The fabric section (see ``script.FABRIC``): every RDMA port with its GIDs and network device, the
    device's MTU, and the active MTU (``ibv_devinfo``'s where it ran, else derived from the MTU for RoCE).
    No port at all means no RDMA devices."""
    lines = text.splitlines()
    cut = lines.index("# ibv_devinfo") if "# ibv_devinfo" in lines else len(lines)
    nets: dict[str, list[str]] = {}
    attrs: dict[tuple[str, int], dict[str, str]] = {}
    gids: dict[tuple[str, int], list[Gid]] = {}
    mtus: dict[str, int] = {}
    for line in lines[:cut]:
        cells = line.split("\t")
        if cells[0] == "net" and len(cells) == 3:
            nets.setdefault(cells[1], []).append(cells[2])
        elif cells[0] == "port" and len(cells) == 5 and cells[2].isdigit():
            attrs.setdefault((cells[1], int(cells[2])), {})[cells[3]] = cells[4].strip()
        elif cells[0] == "gid" and len(cells) == 7 and cells[2].isdigit() and cells[3].isdigit():
            key = (cells[1], int(cells[2]))
            attrs.setdefault(key, {})
            gids.setdefault(key, []).append(Gid(int(cells[3]), cells[4].strip(), cells[5].strip(), cells[6].strip()))
        elif cells[0] == "mtu" and len(cells) == 3 and cells[2].strip().isdigit():
            mtus[cells[1]] = int(cells[2])
    devinfo = {(p.device, p.port): p for p in ibv_devinfo("\n".join(lines[cut + 1 :]))}
    found = []
    for (device, port), values in sorted(attrs.items()):
        table = tuple(sorted(gids.get((device, port), ()), key=lambda g: g.index))
        owners = [g.netdev for g in table if g.netdev]
        own = nets.get(device, [])
        netdev = owners[0] if owners else (own[0] if len(own) == 1 else "")
        layer = values.get("link_layer", "")
        said = devinfo.get((device, port))
        mtu = mtus.get(netdev)
        active = said.active_mtu if said is not None else None
        if active is None and layer == "Ethernet" and mtu is not None:
            active = roce_mtu(mtu)
        state = _after_colon(values.get("state", "")) or (said.state if said is not None else "")
        found.append(
            RdmaPort(
                device,
                port,
                state,
                _after_colon(values.get("phys_state", "")),
                layer or (said.link_layer if said is not None else ""),
                values.get("rate", ""),
                netdev,
                mtu,
                active,
                table,
            )
        )
    return tuple(found)


def df(text: str) -> Space:
    """``df -Pk PATH``: the mount, its size and what is free, in bytes."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or not lines[0].startswith("Filesystem"):
        raise Unreadable("not the output of df -P")
    words = lines[-1].split()
    if len(words) < 6 or not (words[1].isdigit() and words[3].isdigit()):
        raise Unreadable(f"not a line of df -P: {lines[-1][:120]!r}")
    return Space(" ".join(words[5:]), int(words[1]) * 1024, int(words[3]) * 1024)


def docker_version(text: str) -> str:
    """The engine's version from ``docker version --format '{{json .}}'``; raises when only the client
    answered (the daemon is down or refused), with the client's own words."""
    first = text.splitlines()[0] if text.strip() else ""
    try:
        found = json.loads(first)
    except ValueError:
        raise Unreadable(_first_words(text) or "docker version printed nothing") from None
    server = found.get("Server") if isinstance(found, dict) else None
    if not isinstance(server, dict) or not server.get("Version"):
        rest = "\n".join(text.splitlines()[1:])
        raise Unreadable(_first_words(rest) or "the Docker engine did not answer")
    return str(server["Version"])


def _first_words(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:300]


def _json_lines(text: str, what: str) -> list[dict[str, Any]]:
    found = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            raise Unreadable(_first_words(line) or f"not the output of {what}") from None
        if isinstance(value, dict):
            found.append(value)
    return found


def docker_images(text: str) -> tuple[ImageRow, ...]:
    rows = []
    for x in _json_lines(text, "docker images"):
        repo, tag = str(x.get("Repository", "")), str(x.get("Tag", ""))
        digest = str(x.get("Digest", ""))
        ref = f"{repo}:{tag}" if repo not in ("", "<none>") and tag not in ("", "<none>") else str(x.get("ID", ""))
        rows.append(ImageRow(ref, "" if digest == "<none>" else digest, str(x.get("ID", ""))))
    return tuple(rows)


def docker_ps(text: str) -> tuple[ContainerRow, ...]:
    return tuple(
        ContainerRow(
            str(x.get("Names", "")).split(",")[0],
            str(x.get("ID", "")),
            str(x.get("Image", "")),
            str(x.get("Command", "")).strip('"'),
            str(x.get("State", "")),
        )
        for x in _json_lines(text, "docker ps")
    )


def _inspected(text: str, what: str) -> dict[str, Any]:
    try:
        found = json.loads(text)
    except ValueError:
        raise Unreadable(_first_words(text) or f"{what} printed nothing") from None
    if not isinstance(found, list) or not found or not isinstance(found[0], dict):
        raise Unreadable(f"{what} found nothing")
    return found[0]


def env_map(pairs: Any) -> dict[str, str]:
    """``["NAME=value", ...]`` as a mapping (a later NAME wins, as in Docker)."""
    found: dict[str, str] = {}
    for pair in pairs or ():
        name, eq, value = str(pair).partition("=")
        if eq:
            found[name] = value
    return found


def container(text: str) -> Container:
    """``docker inspect --type container NAME``."""
    x = _inspected(text, "docker inspect")
    config, hostconfig, state = x.get("Config") or {}, x.get("HostConfig") or {}, x.get("State") or {}
    ipc = str(hostconfig.get("IpcMode") or "")
    shm = hostconfig.get("ShmSize")
    requests = hostconfig.get("DeviceRequests") or ()
    gpus = hostconfig.get("Runtime") == "nvidia" or any(
        isinstance(r, dict) and ["gpu"] in (r.get("Capabilities") or ()) for r in requests
    )
    command = [*(config.get("Entrypoint") or ()), *(config.get("Cmd") or ())]
    mounts = tuple(
        (str(m.get("Source", "")), str(m.get("Destination", ""))) for m in x.get("Mounts") or () if isinstance(m, dict)
    )
    return Container(
        name=str(x.get("Name", "")).lstrip("/"),
        id=str(x.get("Id", "")),
        image=str(config.get("Image", "")),
        image_id=str(x.get("Image", "")),
        running=bool(state.get("Running")),
        command=tuple(str(c) for c in command),
        env=env_map(config.get("Env")),
        shm_bytes=None if ipc == "host" or not isinstance(shm, int) else shm,
        ipc=ipc,
        network=str(hostconfig.get("NetworkMode") or ""),
        mounts=mounts,
        gpus=gpus,
    )


def image(text: str, ref: str) -> Image:
    """``docker image inspect REF``."""
    x = _inspected(text, "docker image inspect")
    config = x.get("Config") or {}
    return Image(
        ref,
        str(x.get("Id", "")),
        tuple(str(d) for d in x.get("RepoDigests") or ()),
        env_map(config.get("Env")),
        str(x.get("Created", "")),
    )


_ACTIVE = re.compile(r"^\s*(\d+)\s+\S")  # " 1 node_<id>", or a node type in old Ray ("1 ray-legacy-head-node-type")
_USAGE = re.compile(r"^\s*([\d.]+)/([\d.]+)\s+GPU\b")
_RAY_SECTIONS = ("Active:", "Idle:", "Pending:", "Recent failures:", "Healthy:")
_RAY_DEMANDS = ("Demands:", "Pending Demands:", "Total Demands:")
_RAY_USAGE = ("Usage:", "Total Usage:")
_NOTHING = re.compile(r"^\s*\((?:no |none)")


def ray_status(text: str) -> RayStatus:
    """``ray status`` in each form it has had: ``Healthy:`` (old) or ``Active:`` / ``Idle:`` nodes,
    ``Usage:`` or ``Total Usage:``, ``Demands:`` or ``Pending Demands:``. Output without the autoscaler's
    banner means no cluster answered: the first line of what Ray said instead is the problem."""
    if "Node status" not in text or "Autoscaler status" not in text:
        return RayStatus(False, problem=_ray_problem(text))
    section = ""
    nodes = pending = 0
    gpus = used = 0.0
    failures: list[str] = []
    demands: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in (
            *_RAY_SECTIONS,
            *_RAY_DEMANDS,
            *_RAY_USAGE,
            "From request_resources:",
            "Resources",
            "Node status",
        ):
            section = stripped
            continue
        if not stripped or stripped.startswith(("---", "===")) or _NOTHING.match(stripped):
            continue
        if section in ("Active:", "Idle:", "Healthy:") and (m := _ACTIVE.match(line)):
            nodes += int(m[1])
        elif section == "Pending:" and (m := _ACTIVE.match(line)):
            pending += int(m[1])
        elif section == "Recent failures:":
            failures.append(stripped)
        elif section in _RAY_USAGE and (m := _USAGE.match(line)):
            used, gpus = float(m[1]), float(m[2])
        elif section in _RAY_DEMANDS:
            demands.append(stripped)
    return RayStatus(True, nodes, gpus, used, pending, tuple(failures), tuple(demands))


_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception):\s")


def _ray_problem(text: str) -> str:
    """What Ray said instead of a status: the exception it ended with, else its first line that is not
    a log line of its C++ core (``[2026-... W ...]``)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    raised = [line for line in lines if _EXCEPTION.match(line)]
    if raised:
        return raised[-1][:300]
    return next((line for line in lines if not line.startswith("[")), "ray status printed nothing")[:300]


def model(text: str) -> ModelFiles:
    """The model section: ``path P``, a ``file NAME`` line for each file there, then ``config`` and
    config.json in base64."""
    lines = text.splitlines()
    path = next((line[5:] for line in lines if line.startswith("path ")), "")
    files = tuple(line[5:] for line in lines if line.startswith("file "))
    if "config" not in lines:
        said = next((line for line in lines if not line.startswith(("path ", "file "))), "no config.json")
        return ModelFiles(path, False, files, problem=said)
    encoded = "".join(lines[lines.index("config") + 1 :])
    try:
        raw = base64.b64decode(encoded, validate=True)
        config = json.loads(raw)
    except (binascii.Error, ValueError):
        return ModelFiles(path, True, files, problem="config.json is not JSON")
    return config_facts(path, files, config)


def config_facts(path: str, files: tuple[str, ...], config: Any) -> ModelFiles:
    """What decides whether an engine can load the model: architectures, model_type, the quantization."""
    if not isinstance(config, dict):
        return ModelFiles(path, True, files, problem="config.json is not a JSON object")
    archs = config.get("architectures") or ()
    quant = config.get("quantization_config")
    method = ""
    if isinstance(quant, dict):
        method = str(quant.get("quant_method") or quant.get("quant_algo") or "unknown")
    elif isinstance(quant, str):
        method = quant
    return ModelFiles(
        path,
        True,
        files,
        tuple(str(a) for a in archs) if isinstance(archs, list) else (),
        str(config.get("model_type") or ""),
        method,
    )


def ports(text: str) -> frozenset[int]:
    """Listening TCP ports from the local-address column of /proc/net/tcp and tcp6 (``0100007F:1F90``)."""
    found = set()
    for line in text.split():
        _, _, port = line.rpartition(":")
        try:
            found.add(int(port, 16))
        except ValueError:
            continue
    return frozenset(found)
