"""Which containers of a Docker engine run an inference engine or Ray, and in which role."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sparktui.core.remote.docker import SDK_ERRORS, connect, engine_name, problem


@dataclass(frozen=True, slots=True)
class ContainerInfo:
    """A running container that runs an inference engine or Ray."""

    name: str
    id: str
    image: str
    role: str  # vllm, sglang, ray-head, ray-worker, or ray (a Ray image running something else)
    command: str


_COMMAND_ROLES = (
    ("vllm", re.compile(r"\bvllm\s+serve\b|\bvllm\.entrypoints\b")),
    ("sglang", re.compile(r"\bsglang\.launch_server\b")),
    ("ray-head", re.compile(r"\bray\s+start\b.*\s--head\b")),
    ("ray-worker", re.compile(r"\bray\s+start\b")),
)
_IMAGE_ROLES = (("vllm", "vllm"), ("sglang", "sglang"), ("ray", "ray"), ("rayproject", "ray"))


def role_of(image: str, command: str) -> str | None:
    """What a container runs, judged from its command first (an engine before Ray, when a script
    starts both) and then from the words of its image name; None for anything else."""
    for role, pattern in _COMMAND_ROLES:
        if pattern.search(command):
            return role
    words = set(re.split(r"[/:@._-]", image.lower()))
    return next((role for word, role in _IMAGE_ROLES if word in words), None)


def discover_containers(base_url: str | None = None, engine: str | None = None) -> list[ContainerInfo]:
    """The running containers of the engine at ``base_url`` (default: the local engine; named ``engine`` in
    errors) that run vLLM, SGLang or Ray, by name. Blocks; raises :class:`Unavailable` or :class:`Refused`
    with a one-line reason when the engine cannot be asked."""
    engine = engine or engine_name(base_url)
    client = connect(base_url, engine)
    try:
        listed = client.api.containers()
    except SDK_ERRORS as exc:
        raise problem(exc, engine) from None
    finally:
        client.close()
    found = []
    for c in listed:
        role = role_of(c["Image"], c["Command"])
        if role is not None:
            name = c["Names"][0].lstrip("/") if c["Names"] else c["Id"][:12]
            found.append(ContainerInfo(name, c["Id"], c["Image"], role, c["Command"]))
    return sorted(found, key=lambda info: info.name)
