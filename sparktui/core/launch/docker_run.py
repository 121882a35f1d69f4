"""The ``docker run`` command that creates a container again with the same settings, from ``docker inspect``.

Docker cannot change a container's command, shared memory or GPUs in place: a playbook renames the old
container, keeps it for the rollback, and creates a new one. This module writes that new ``docker run``
from what ``docker inspect`` says of the old container and ``docker image inspect`` of its image (so only
what differs from the image's own defaults is repeated), as argv that the user sees in full before it
runs. Settings it cannot carry over are named in ``notes`` rather than silently lost.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sparktui.core.errors import Invalid

DEFAULT_SHM = 64 * 1024 * 1024
_NO_NETWORK_FLAG = ("", "default", "bridge")
_DEFAULT_IPC = ("", "private", "shareable")


class RecreateError(Invalid):
    """The inspect output is not that of a container; one line."""


@dataclass(frozen=True, slots=True)
class Recreate:
    """``docker run`` in three parts, so that a playbook can add options or swap the image."""

    options: tuple[str, ...]  # docker run -d --name NAME [OPTIONS...] (--entrypoint among them)
    image: str
    command: tuple[str, ...]  # the words after the image
    notes: tuple[str, ...]  # settings of the old container the new one will not have

    @property
    def argv(self) -> tuple[str, ...]:
        return (*self.options, self.image, *self.command)

    @property
    def line(self) -> str:
        """The whole command, quoted for the shell."""
        return shlex.join(self.argv)


def docker_run(container: Mapping[str, Any], image: Mapping[str, Any] | None = None) -> Recreate:
    """``docker run`` argv creating ``container`` (one element of ``docker inspect``) again under its name."""
    try:
        config: Mapping[str, Any] = container["Config"] or {}
        host: Mapping[str, Any] = container["HostConfig"] or {}
        name = str(container["Name"]).lstrip("/")
    except (KeyError, TypeError):
        raise RecreateError("not the docker inspect output of a container") from None
    base: Mapping[str, Any] = (image or {}).get("Config") or {}
    flags: list[str] = []
    notes: list[str] = []
    add = _adder(flags)
    image_env = set(base.get("Env") or ())
    add("-e", [e for e in config.get("Env") or () if e not in image_env])
    image_labels = base.get("Labels") or {}
    add("--label", [f"{k}={v}" for k, v in sorted((config.get("Labels") or {}).items()) if image_labels.get(k) != v])
    for key, flag in (("User", "--user"), ("WorkingDir", "--workdir"), ("StopSignal", "--stop-signal")):
        if config.get(key) and config.get(key) != base.get(key):
            add(flag, [config[key]])
    if config.get("StopTimeout") is not None:
        add("--stop-timeout", [config["StopTimeout"]])
    flags += ["-t"] * bool(config.get("Tty")) + ["-i"] * bool(config.get("OpenStdin"))
    flags += _host(host, notes)
    flags += _networks(host, container, notes)

    entrypoint = list(config.get("Entrypoint") or ())
    command = list(config.get("Cmd") or ())
    if entrypoint != list(base.get("Entrypoint") or ()):
        flags += ["--entrypoint", entrypoint[0] if entrypoint else ""]
        command = entrypoint[1:] + command
    image_name = str(config.get("Image") or container.get("Image") or "")
    if not image_name:
        raise RecreateError(f"{name}: docker inspect names no image")
    return Recreate(("docker", "run", "-d", "--name", name, *flags), image_name, tuple(command), tuple(notes))


def _adder(flags: list[str]) -> Callable[[str, Iterable[Any]], None]:
    """A function appending ``flag value`` to ``flags`` for each value."""

    def add(flag: str, values: Iterable[Any]) -> None:
        for value in values:
            flags.extend((flag, str(value)))

    return add


def _host(host: Mapping[str, Any], notes: list[str]) -> list[str]:
    flags: list[str] = []
    add = _adder(flags)
    for key, flag in (("IpcMode", "--ipc"), ("PidMode", "--pid"), ("UTSMode", "--uts")):
        value = str(host.get(key) or "")
        if value and not (key == "IpcMode" and value in _DEFAULT_IPC):
            add(flag, [value])
    for key, flag in (("Privileged", "--privileged"), ("AutoRemove", "--rm"), ("Init", "--init")):
        flags += [flag] * bool(host.get(key))
    if host.get("ReadonlyRootfs"):
        flags.append("--read-only")
    add("--cap-add", host.get("CapAdd") or ())
    add("--cap-drop", host.get("CapDrop") or ())
    add("--security-opt", host.get("SecurityOpt") or ())
    add("--group-add", host.get("GroupAdd") or ())
    add("--add-host", host.get("ExtraHosts") or ())
    add("--dns", host.get("Dns") or ())
    add("--volumes-from", host.get("VolumesFrom") or ())
    add("-v", host.get("Binds") or ())
    add("--mount", [_mount(m) for m in host.get("Mounts") or ()])
    add("--tmpfs", [f"{path}:{opts}" if opts else path for path, opts in sorted((host.get("Tmpfs") or {}).items())])
    add("--device", [_device(d) for d in host.get("Devices") or ()])
    add("--gpus", [_gpus(r) for r in host.get("DeviceRequests") or () if _gpus(r)])
    add("--ulimit", [f"{u['Name']}={u['Soft']}:{u['Hard']}" for u in host.get("Ulimits") or ()])
    add("--sysctl", [f"{k}={v}" for k, v in sorted((host.get("Sysctls") or {}).items())])
    shm = host.get("ShmSize")
    if shm and shm != DEFAULT_SHM and host.get("IpcMode") not in ("host",):
        add("--shm-size", [f"{shm}b"])
    for key, flag in (("Memory", "--memory"), ("MemorySwap", "--memory-swap"), ("OomScoreAdj", "--oom-score-adj")):
        if host.get(key):
            add(flag, [f"{host[key]}b" if key != "OomScoreAdj" else host[key]])
    if host.get("NanoCpus"):
        add("--cpus", [f"{host['NanoCpus'] / 1e9:g}"])
    if host.get("Runtime") and host.get("Runtime") != "runc":
        add("--runtime", [host["Runtime"]])
    restart = host.get("RestartPolicy") or {}
    if restart.get("Name") not in (None, "", "no"):
        limit = restart.get("MaximumRetryCount") or 0
        add(
            "--restart",
            [f"{restart['Name']}:{limit}" if restart["Name"] == "on-failure" and limit else restart["Name"]],
        )
    log = host.get("LogConfig") or {}
    if log.get("Type") not in (None, "", "json-file"):
        add("--log-driver", [log["Type"]])
    add("--log-opt", [f"{k}={v}" for k, v in sorted((log.get("Config") or {}).items())])
    for binding in _ports(host.get("PortBindings") or {}):
        add("-p", [binding])
    if host.get("Links"):
        notes.append(f"legacy links not carried over: {', '.join(host['Links'])}")
    return flags


def _networks(host: Mapping[str, Any], container: Mapping[str, Any], notes: list[str]) -> list[str]:
    mode = str(host.get("NetworkMode") or "")
    flags = [] if mode in _NO_NETWORK_FLAG else ["--network", mode]
    attached = sorted(((container.get("NetworkSettings") or {}).get("Networks") or {}).keys())
    others = [n for n in attached if n not in (mode, "bridge") and not (mode == "default" and n == "bridge")]
    if others:
        notes.append(f"also attached to {', '.join(others)}: `docker network connect` it again")
    if mode not in ("host", "none") and not mode.startswith("container:"):
        hostname = str((container.get("Config") or {}).get("Hostname") or "")
        if hostname and not str(container.get("Id", "")).startswith(hostname):
            flags += ["--hostname", hostname]
    return flags


def _mount(m: Mapping[str, Any]) -> str:
    parts = [f"type={m.get('Type', 'volume')}", f"target={m['Target']}"]
    if m.get("Source"):
        parts.insert(1, f"source={m['Source']}")
    if m.get("ReadOnly"):
        parts.append("readonly")
    return ",".join(parts)


def _device(d: Mapping[str, Any]) -> str:
    spec = f"{d['PathOnHost']}:{d.get('PathInContainer') or d['PathOnHost']}"
    permissions = d.get("CgroupPermissions") or "rwm"
    return spec if permissions == "rwm" else f"{spec}:{permissions}"


def _gpus(request: Mapping[str, Any]) -> str:
    """``--gpus`` for a device request that asks for GPUs (``all``, ``3`` or ``"device=0,1"``)."""
    if not any("gpu" in caps for caps in request.get("Capabilities") or ()):
        return ""
    if request.get("DeviceIDs"):  # docker reads --gpus as CSV: several IDs go inside double quotes
        ids = ",".join(request["DeviceIDs"])
        return f'"device={ids}"' if "," in ids else f"device={ids}"
    count = request.get("Count", -1)
    return "all" if count in (-1, None) else str(count)


def _ports(bindings: Mapping[str, Any]) -> list[str]:
    out = []
    for port, hosts in sorted(bindings.items()):
        inside = port.removesuffix("/tcp")
        for h in hosts or ():
            ip, outside = h.get("HostIp") or "", h.get("HostPort") or ""
            out.append(f"{ip}:{outside}:{inside}" if ip else f"{outside}:{inside}" if outside else inside)
    return out
