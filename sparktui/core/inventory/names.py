"""The facts the pre-launch checks are written over: every name, what it means, and the flattening of a
node's inventory and the launch command into them.

A check file may use only the names here (and ``env.NAME`` for any environment variable), so a typo is
refused when the file loads. A fact that could not be read is absent from the map, and its reason is in
the reasons map under the same name (``probe.vllm_archs``: "vLLM is not installed in the image").
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from sparktui.core.inventory.facts import Gid, ImageFacts, NodeInventory, Value
from sparktui.core.launch.serve import Launch

#: Each fact, with what it is. The prefix before the first dot says where it comes from.
FACTS: dict[str, str] = {
    "node.name": "the node's name (as the cluster file or the command line gave it)",
    "node.hostname": "the name the machine gives itself (uname -n)",
    "node.os": "the system and its version (/etc/os-release)",
    "node.kernel": "the kernel release",
    "node.cmdline": "the kernel's command line (/proc/cmdline: kho=off...)",
    "node.arch": "the machine's architecture (x86_64, aarch64)",
    "node.head": "whether the node is the head (the first node, or the cluster file's head)",
    "node.reachable": "whether the node answered (over SSH, or this machine)",
    "node.error": "why the node could not be asked ('' where it answered)",
    "gpu.count": "the GPUs nvidia-smi lists (0 where nvidia-smi is not installed)",
    "gpu.names": "the GPUs' names",
    "gpu.driver": "the NVIDIA driver version",
    "gpu.cuda": "the highest CUDA version the driver supports",
    "gpu.compute_capability": "the first GPU's compute capability (9.0, 12.1)",
    "net.interfaces": "the network interfaces",
    "net.up": "the network interfaces that are up",
    "net.rdma_devices": "the RDMA devices",
    "net.rdma_netdevs": "the network interfaces that have an RDMA device",
    "rdma.ports": "every RDMA port, as NCCL_IB_HCA names one (device:port), from /sys/class/infiniband",
    "rdma.active_ports": "the RDMA ports whose state is ACTIVE",
    "rdma.port_states": "each RDMA port with its state (rocep1s0f1:1=ACTIVE)",
    "rdma.gid_index": "each active RoCE port with the index of its IPv4 RoCE v2 GID (rocep1s0f1:1=3; =none)",
    "rdma.gids": "the GIDs of the active RoCE ports (rocep1s0f1:1/3=IPv4 10.20.21.10 RoCE v2, link-local RoCE v1...)",
    "rdma.subnets": "the IPv4 subnets of the active RoCE ports' IPv4 RoCE v2 GIDs",
    "rdma.subnet_by_port": "each active RoCE port with the subnet of the IPv4 RoCE v2 GID NCCL picks (p:1=10.0.0.0/24)",
    "rdma.mtu_by_subnet": "the active MTU of the active RoCE ports, by subnet (10.0.0.0/24=4096)",
    "rdma.active_mtu": "each active RDMA port with its active MTU (rocep1s0f1:1=1024)",
    "shm.bytes": "the size of the host's /dev/shm",
    "disk.free_bytes": "free space where the model is (or where it would be cached)",
    "docker.version": "the Docker engine's version",
    "image.ref": "the engine image (as named, or the engine container's)",
    "image.present": "whether the node holds the engine image",
    "image.id": "the image's id (sha256 of its config: the same build has the same id everywhere)",
    "image.digest": "the image's registry digest, where it came from a registry",
    "container.name": "the engine container",
    "container.running": "whether the engine container runs",
    "container.shm_bytes": "the engine container's /dev/shm (the host's with --ipc host)",
    "container.ipc": "the engine container's IPC mode",
    "container.network": "the engine container's network mode",
    "container.gpus": "whether the engine container was given GPUs",
    "ray.running": "whether ray status found a Ray cluster from this node",
    "ray.nodes": "the Ray cluster's active nodes",
    "ray.gpus": "the GPUs in the Ray cluster",
    "ray.pending": "what the Ray cluster has waiting (pending demands, placement groups)",
    "model.present": "whether the model's config.json is where the engine will look",
    "model.path": "where the model's files were looked for",
    "model.where": "whether the model was looked for inside the engine container or on the host",
    "model.architectures": "the architectures config.json names",
    "model.model_type": "the model_type config.json names",
    "model.quantization": "the quantization method config.json names",
    "model.files": "the files in the model's folder",
    "ports.listening": "the TCP ports something listens on",
    "probe.via": "where the in-image probe ran (container NAME, image REF)",
    "probe.python": "the image's Python version",
    "probe.interfaces": "the network interfaces the engine container sees",
    "probe.shm_bytes": "the size of /dev/shm where the probe ran",
    "probe.torch": "the image's torch version",
    "probe.torch_cuda": "the CUDA version torch was built with",
    "probe.torch_archs": "the GPU architectures torch's kernels were built for (sm_90, sm_120, compute_120; none: CPU)",
    "probe.nccl": "the NCCL version torch reports (without torch: the version the libnccl it would load says)",
    "probe.nccl_build": "the NCCL library's sha256 (what tells two builds of one version apart)",
    "probe.nccl_path": "the NCCL library torch loads",
    "probe.nccl_build_id": "the GNU build id of the NCCL library torch loads",
    "probe.nccl_gcc": "the newest GCC named in the .comment of the NCCL library torch loads (8.5.0)",
    "probe.nccl_arch": "the architecture of the NCCL library torch loads, from its ELF header (x86_64, aarch64)",
    "probe.vllm": "the image's vLLM version",
    "probe.sglang": "the image's SGLang version",
    "probe.transformers": "the image's transformers version",
    "probe.ray": "the image's Ray version",
    "probe.vllm_program": "whether the image has a vllm program on its PATH",
    "probe.vllm_archs": "the architectures of vLLM's own model registry",
    "probe.model_types": "the model types transformers knows (CONFIG_MAPPING_NAMES)",
    "probe.vllm_flags": "the flags of vLLM's own vllm serve parser",
    "probe.executor_default": "the default of vLLM's --distributed-executor-backend",
    "probe.timed_out": "the probe's parts that did not finish in time",
    "host.nccl": "the system's NCCL version (the libnccl.so.2 of ldconfig's cache, as the file says)",
    "host.nccl_gcc": "the newest GCC named in the .comment of the system's libnccl.so.2",
    "host.nccl_build_id": "the GNU build id of the system's libnccl.so.2",
    "host.nccl_sha256": "the sha256 of the system's libnccl.so.2",
    "host.driver": "the version of the CUDA driver library (libcuda.so.1's file) the host loads",
    "host.kernel_gcc": "the GCC the running kernel was built with (/proc/version)",
    "host.systemd": "systemd's version (loginctl --version)",
    "host.uid": "the uid the node's commands run as (logind spares system users, uid < 1000)",
    "host.remove_ipc": "systemd-logind's RemoveIPC (yes/no): whether a user's IPC objects go with their last session",
    "host.kill_user_processes": "systemd-logind's KillUserProcesses (yes/no)",
    "host.linger": "whether the user lingers (loginctl show-user: Linger), keeping their IPC objects sessionless",
    "launch.engine": "vllm or sglang",
    "launch.model": "the model the launch names (a path or a Hugging Face repo id)",
    "launch.model_is_path": "whether the launch names the model by a path",
    "launch.tp": "tensor parallel size",
    "launch.pp": "pipeline parallel size",
    "launch.dp": "data parallel size",
    "launch.world_size": "GPUs of one copy of the model (tp x pp)",
    "launch.gpus_per_node": "GPUs each node must give (world size over --nnodes)",
    "launch.nnodes": "the --nnodes given (0 when not given)",
    "launch.executor": "the --distributed-executor-backend given ('' when not given)",
    "launch.port": "the port the server will listen on",
    "launch.flags": "every flag the launch gives",
    "launch.headless": "whether the launch is --headless (a node that serves no API)",
    "cluster.nodes": "the nodes checked",
    "cluster.image_pullable": "whether any node's copy of the image came from a registry",
}
ENV_PREFIX = "env."


class _Put(Protocol):
    def __call__(self, name: str, value: Value, reason: str = "") -> None: ...


class _Why(Protocol):
    def __call__(self, key: str, default: str, /) -> str: ...


def known(name: str) -> bool:
    """Whether a check may use ``name``."""
    return name in FACTS or (name.startswith(ENV_PREFIX) and name[len(ENV_PREFIX) :].isidentifier())


@dataclass(frozen=True, slots=True)
class Facts:
    """A node's facts, and why each missing one is missing."""

    values: Mapping[str, Value]
    reasons: Mapping[str, str]

    def get(self, name: str) -> Value:
        return self.values.get(name)


def _put(values: dict[str, Value], reasons: dict[str, str], name: str, value: Value, reason: str) -> None:
    if value is None:
        reasons[name] = reason
    else:
        values[name] = value


def node_facts(inv: NodeInventory, *, head: bool, cluster: Mapping[str, Value] | None = None) -> Facts:
    """The facts of one node's inventory (without the launch's: see :func:`launch_facts`)."""
    values: dict[str, Value] = {
        "node.name": inv.node,
        "node.head": head,
        "node.reachable": not inv.error,
        "node.error": inv.error,
    }
    values.update(cluster or {})
    reasons: dict[str, str] = {}
    if inv.error:
        for name in FACTS:
            if name not in values and not name.startswith(("launch.", "cluster.")):
                reasons[name] = f"{inv.node} could not be asked: {inv.error}"
        return Facts(values, reasons)
    why = inv.unknown.get

    def put(name: str, value: Value, reason: str = "") -> None:
        _put(values, reasons, name, value, reason or "not read")

    put("node.hostname", inv.hostname or None, why("host", ""))
    put("node.os", inv.os or None, why("os", ""))
    put("node.kernel", inv.kernel or None, why("host", ""))
    put("node.cmdline", inv.cmdline, why("host", "") or "the kernel's command line was not printed")
    put("node.arch", inv.arch or None, why("host", ""))
    if inv.gpus is not None:
        put("gpu.count", len(inv.gpus))
        put("gpu.names", tuple(g.name for g in inv.gpus))
        put("gpu.driver", inv.gpus[0].driver if inv.gpus else None, "no GPU")
        put("gpu.compute_capability", inv.gpus[0].compute_capability or None if inv.gpus else None, "no GPU")
    elif "not installed" in why("gpus", ""):
        put("gpu.count", 0)  # no driver tool: no usable GPU either
        put("gpu.names", ())
    else:
        for name in ("gpu.count", "gpu.names", "gpu.driver", "gpu.compute_capability"):
            put(name, None, why("gpus", ""))
    put("gpu.cuda", inv.cuda or None, why("cuda", ""))
    if "ip" not in inv.unknown:
        put("net.interfaces", inv.interface_names())
        put("net.up", tuple(i.name for i in inv.interfaces if i.state in ("UP", "UNKNOWN")))
    else:
        put("net.interfaces", None, why("ip", ""))
        put("net.up", None, why("ip", ""))
    if "rdma" not in inv.unknown:
        put("net.rdma_devices", tuple(d.device for d in inv.rdma))
        put("net.rdma_netdevs", tuple(d.netdev for d in inv.rdma if d.netdev))
    _fabric(inv, put, why)
    put("shm.bytes", inv.shm.size if inv.shm else None, why("shm", ""))
    put("disk.free_bytes", inv.disk.free if inv.disk else None, why("disk", ""))
    put("docker.version", inv.docker or None, why("docker_version", ""))
    _image(inv, put, why)
    _container(inv, put, why)
    _ray(inv, put, why)
    _model(inv, put, why)
    put("ports.listening", tuple(sorted(inv.ports)) if "ports" not in inv.unknown else None, why("ports", ""))
    _probe(inv.probe, put, why("probe", ""))
    _host_builds(inv, put, why)
    _environment(inv, values)
    return Facts(values, reasons)


#: What a node without an active RDMA port is told: NCCL then moves tensors over TCP.
NO_RDMA = "no RDMA devices: NCCL will use sockets"
NO_ACTIVE_RDMA = "no active RDMA port: NCCL will use sockets"


def _fabric(inv: NodeInventory, put: _Put, why: _Why) -> None:
    """The RDMA ports and what NCCL will pick on them, with each GID's subnet from the network device that
    owns it (its IPv4 address and prefix, as ``ip`` listed them)."""
    names = [n for n in FACTS if n.startswith("rdma.")]
    if "fabric" in inv.unknown:
        for name in names:
            put(name, None, why("fabric", ""))
        return
    ports = inv.fabric
    active = [p for p in ports if p.state == "ACTIVE"]
    put("rdma.ports", tuple(p.name for p in ports))
    put("rdma.active_ports", tuple(p.name for p in active))
    put("rdma.port_states", tuple(f"{p.name}={p.state or 'unknown'}" for p in ports))
    if not active:
        for name in names:
            if name not in ("rdma.ports", "rdma.active_ports", "rdma.port_states"):
                put(name, None, NO_ACTIVE_RDMA if ports else NO_RDMA)
        return
    put("rdma.active_mtu", tuple(f"{p.name}={p.active_mtu or 'unknown'}" for p in active))
    roce = [p for p in active if p.link_layer == "Ethernet"]
    if not roce:
        for name in ("rdma.gid_index", "rdma.gids", "rdma.subnets", "rdma.subnet_by_port", "rdma.mtu_by_subnet"):
            put(name, None, "the active RDMA ports are InfiniBand (no RoCE GIDs)")
        return
    put("rdma.gid_index", tuple(f"{p.name}={_first(p.ipv4_roce_v2())}" for p in roce))
    put("rdma.gids", tuple(f"{p.name}/{g.index}={_what(g)}" for p in roce for g in p.gids))
    if "ip" in inv.unknown:
        for name in ("rdma.subnets", "rdma.subnet_by_port", "rdma.mtu_by_subnet"):
            put(name, None, f"the network devices' addresses: {why('ip', '')}")
        return
    subnets: dict[str, None] = {}
    mtus: dict[str, None] = {}
    by_port: list[str] = []
    for port in roce:
        for gid in port.ipv4_roce_v2():
            subnet = _subnet(inv, gid.netdev or port.netdev, gid.ipv4)
            if subnet:
                subnets[subnet] = None
                mtus[f"{subnet}={port.active_mtu or 'unknown'}"] = None
        picked = port.ipv4_roce_v2()[:1]
        subnet = _subnet(inv, picked[0].netdev or port.netdev, picked[0].ipv4) if picked else ""
        if subnet:
            by_port.append(f"{port.name}={subnet}")
    put("rdma.subnets", tuple(subnets))
    put("rdma.subnet_by_port", tuple(by_port))
    put("rdma.mtu_by_subnet", tuple(mtus))


def _what(gid: Gid) -> str:
    """A GID in a few words: IPv4 10.20.21.10 RoCE v2, link-local RoCE v1, IPv6 RoCE v2."""
    where = f"IPv4 {gid.ipv4}" if gid.ipv4 else "link-local" if gid.link_local else "IPv6"
    return f"{where} {gid.type or '(type unread)'}"


def _first(gids: tuple[Gid, ...]) -> str:
    return str(gids[0].index) if gids else "none"


def interface_of(inv: NodeInventory, netdev: str, address: str) -> ipaddress.IPv4Interface | None:
    """The IPv4 ``address`` with the prefix an interface gives it (``netdev`` first, else any interface that
    has it); None where no interface has it (a stale GID)."""
    for interface in sorted(inv.interfaces, key=lambda i: i.name != netdev):
        for given in interface.addresses:
            try:
                found = ipaddress.ip_interface(given)
            except ValueError:
                continue
            if isinstance(found, ipaddress.IPv4Interface) and str(found.ip) == address:
                return found
    return None


def _subnet(inv: NodeInventory, netdev: str, address: str) -> str:
    """The subnet of ``address`` on ``netdev`` (else on any interface that has it); "" where none has it."""
    found = interface_of(inv, netdev, address)
    return str(found.network) if found is not None else ""


def _image(inv: NodeInventory, put: _Put, why: _Why) -> None:
    if inv.image is not None:
        put("image.ref", inv.image.ref or None, "no image named")
        put("image.present", True)
        put("image.id", inv.image.id)
        put("image.digest", inv.image.digests[0].partition("@")[2] if inv.image.digests else "")
    elif why("docker_version", "").endswith("not installed"):
        put("image.present", None, why("docker_version", ""))
    elif why("image", "").startswith("no image named"):
        put("image.present", None, "no image named and no engine container running")
    elif "image" in inv.unknown:
        put("image.present", False)


def _container(inv: NodeInventory, put: _Put, why: _Why) -> None:
    c = inv.container
    if c is None:
        reason = why("container", "no engine container")
        for name in FACTS:
            if name.startswith("container."):
                put(name, None, reason)
        return
    put("container.name", c.name)
    put("container.running", c.running)
    put("container.ipc", c.ipc)
    put("container.network", c.network)
    put("container.gpus", c.gpus)
    shm = c.shm_bytes if c.shm_bytes is not None else (inv.shm.size if inv.shm else None)
    put("container.shm_bytes", shm, "the host's /dev/shm could not be read")


def _ray(inv: NodeInventory, put: _Put, why: _Why) -> None:
    ray = inv.ray
    if ray is None:
        for name in ("ray.running", "ray.nodes", "ray.gpus", "ray.pending"):
            put(name, None, why("ray_status", ""))
        return
    put("ray.running", ray.running)
    for name, value in (("ray.nodes", ray.nodes), ("ray.gpus", ray.gpus), ("ray.pending", ray.demands)):
        put(name, value if ray.running else None, f"no Ray cluster: {ray.problem}")


def _model(inv: NodeInventory, put: _Put, why: _Why) -> None:
    inside = inv.probe.model if inv.probe is not None and inv.probe.via.startswith("container") else None
    model, where = (inside, "container") if inside is not None else (inv.model, "host")
    if model is None:
        for name in ("model.present", "model.path", "model.where"):
            put(name, None, why("model", "no model named"))
        return
    put("model.present", model.present)
    put("model.path", model.path)
    put("model.where", where)
    put("model.files", model.files)
    missing = model.problem or "no config.json"
    put("model.architectures", model.architectures if model.present else None, missing)
    put("model.model_type", model.model_type or None if model.present else None, missing)
    put("model.quantization", model.quantization if model.present else None, missing)


def _probe(probe: ImageFacts | None, put: _Put, not_run: str) -> None:
    names = [n for n in FACTS if n.startswith("probe.")]
    if probe is None or probe.problem:
        reason = (probe.problem if probe is not None else "") or not_run or "the probe did not run"
        for name in names:
            put(name, None, f"the in-image probe: {reason}")
        return
    put("probe.via", probe.via)
    put("probe.python", probe.python or None, "no Python version")
    put("probe.interfaces", probe.interfaces, "the probe could not list them")
    put("probe.shm_bytes", probe.shm_bytes, "the probe could not read /dev/shm")
    put("probe.timed_out", probe.timed_out)
    put("probe.vllm_program", bool(probe.programs.get("vllm")))
    for package in ("torch", "vllm", "sglang", "transformers", "ray"):
        put(f"probe.{package}", probe.version(package) or "", "")
    _part(probe, put, "probe.torch_cuda", probe.torch_cuda, "torch", "torch")
    cpu_build = probe.torch_cuda is None and probe.torch_archs is None and "torch" in probe.packages
    archs = () if cpu_build and probe.version("torch") and not _lacks(probe, "torch") else probe.torch_archs
    _part(probe, put, "probe.torch_archs", archs, "torch", "torch")
    loaded = next((b for b in probe.builds if b.component == "nccl"), None)
    # torch's own word, else what the library torch would load says it is; a CPU build of torch loads none
    nccl = probe.nccl or (loaded.version if loaded else None) or ("" if archs == () and cpu_build else None)
    _part(probe, put, "probe.nccl", nccl, "torch", "torch")
    library = probe.nccl_library
    _part(probe, put, "probe.nccl_path", library.path if library else None, "torch", "nccl_library")
    build = (library.sha256 or library.build_id) if library else None
    _part(probe, put, "probe.nccl_build", build or None, "torch", "nccl_library")
    for name, value in (
        ("probe.nccl_build_id", loaded.build_id if loaded else ""),
        ("probe.nccl_gcc", loaded.gcc if loaded else ""),
        ("probe.nccl_arch", loaded.arch if loaded else ""),
    ):
        _part(probe, put, name, value or None, "torch", "nccl_library")
    _part(probe, put, "probe.model_types", probe.model_types, "transformers", "transformers")
    _part(probe, put, "probe.vllm_archs", probe.vllm_archs, "vllm", "vllm_archs")
    flags = tuple(sorted(probe.vllm_flags)) if probe.vllm_flags is not None else None
    _part(probe, put, "probe.vllm_flags", flags, "vllm", "vllm_flags")
    executor = probe.executor_default if probe.vllm_flags is not None else None
    _part(probe, put, "probe.executor_default", "" if executor is None and flags else executor, "vllm", "vllm_flags")


def _host_builds(inv: NodeInventory, put: _Put, why: _Why) -> None:
    system = next((b for b in inv.builds if b.component == "nccl_system"), None)
    no_nccl = why("builds", "") or "no libnccl.so.2 in ldconfig's cache"
    put("host.nccl", system.version or None if system else None, no_nccl)
    put("host.nccl_gcc", system.gcc or None if system else None, no_nccl)
    put("host.nccl_build_id", system.build_id or None if system else None, no_nccl)
    put("host.nccl_sha256", system.sha256 or None if system else None, no_nccl)
    driver = next((b for b in inv.builds if b.component == "driver"), None)
    put("host.driver", driver.version or None if driver else None, why("builds", "") or "no libcuda.so.1 here")
    kernel = next((b for b in inv.builds if b.component == "kernel"), None)
    put("host.kernel_gcc", kernel.gcc or None if kernel else None, why("builds", "") or "not in /proc/version")
    logind, unread = inv.logind, why("logind", "") or "not read"
    put("host.uid", logind.uid if logind else None, unread)
    put("host.systemd", logind.systemd or None if logind else None, unread if not logind else "no loginctl")
    for name, value in (
        ("host.remove_ipc", logind.remove_ipc if logind else ""),
        ("host.kill_user_processes", logind.kill_user_processes if logind else ""),
        ("host.linger", logind.linger if logind else ""),
    ):
        put(name, value or None, unread if not logind else "neither loginctl nor logind.conf says")


def _lacks(probe: ImageFacts, part: str) -> bool:
    """Whether the probe's ``part`` did not finish or failed."""
    return part in probe.timed_out or part in probe.failed


def _part(probe: ImageFacts, put: _Put, name: str, value: Value, package: str, part: str) -> None:
    """A fact found by importing a package: when missing, say whether the package is absent, the part timed
    out or failed."""
    if not probe.version(package):
        reason = f"{'vLLM' if package == 'vllm' else package} is not installed in the image"
    elif part in probe.timed_out:
        reason = f"the probe's {part} part did not finish in time"
    else:
        reason = probe.failed.get(part, f"the probe's {part} part found nothing")
    put(name, value, reason)


def _environment(inv: NodeInventory, values: dict[str, Value]) -> None:
    """The engine's environment: NCCL's configuration files (which set only what the environment does not;
    the user's ~/.nccl.conf before /etc/nccl.conf), the image's, then the container's, then (in the probe)
    what the process really has, each over the one before."""
    merged: dict[str, str] = {}
    if inv.probe is not None:
        for path in ("/etc/nccl.conf", "~/.nccl.conf"):
            merged.update(nccl_conf(inv.probe.nccl_conf.get(path, "")))
    if inv.image is not None:
        merged.update(inv.image.env)
    if inv.container is not None:
        merged.update(inv.container.env)
    if inv.probe is not None:
        merged.update(inv.probe.env)
    for name, value in merged.items():
        if name.isidentifier():
            values[ENV_PREFIX + name] = value


def nccl_conf(text: str) -> dict[str, str]:
    """The ``NAME=value`` lines of an nccl.conf (``#`` starts a comment line), as NCCL reads them."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        name, eq, value = line.partition("=")
        if eq and not line.startswith("#") and name.strip().isidentifier():
            found[name.strip()] = value.strip()
    return found


def launch_facts(launch: Launch) -> dict[str, Value]:
    return {
        "launch.engine": launch.engine,
        "launch.model": launch.model,
        "launch.model_is_path": launch.model.startswith(("/", "./", "../")),
        "launch.tp": launch.tensor_parallel,
        "launch.pp": launch.pipeline_parallel,
        "launch.dp": launch.data_parallel,
        "launch.world_size": launch.world_size,
        "launch.gpus_per_node": launch.gpus_per_node,
        "launch.nnodes": launch.nnodes or 0,
        "launch.executor": launch.executor,
        "launch.port": launch.port,
        "launch.flags": launch.flags,
        "launch.headless": launch.headless,
        **{ENV_PREFIX + name: value for name, value in launch.env if name.isidentifier()},
    }
