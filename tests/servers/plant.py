"""What the pre-launch check tests plant on the spark test nodes (and tools/capture/commands/sparks.py
captures): a model folder, an engine image whose ``python3`` is another Python of this machine (a different
build under the same tag, with another Python and without Ray), the same image copied from one node to
another (one image id on both), and engine containers that mount the model."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest
from docker.models.containers import Container

from tests.servers.dockerd import _busybox_root
from tests.servers.sparks import PYTHON3, RAY, SparkNode, engine_programs

#: Where a planted model lives on a node (its /root is the node's own overlay) and inside a container.
MODELS = "/root/models"
MOUNTED = "/models"
#: Another Python of this machine, for an image that differs in its Python (and has no Ray).
OTHER_PYTHON = next(
    (p for p in sorted(Path(sys.base_prefix).parent.glob("3.12*")) if (p / "bin" / "python3").exists()), None
)


#: Where a planted NCCL wheel's files are inside an engine container (a pip --target folder).
NCCL_SITE = "/opt/nccl-site"
#: The released NCCL libraries tools/capture/nccl_wheels.py --keep kept (they weigh 200 to 400 MB each).
NCCL_KEPT = Path(os.environ.get("SPARKTUI_NCCL_KEPT") or Path.home() / ".cache" / "sparktui-tests" / "nccl")


def released_nccl(package: str, version: str, arch: str) -> Path:
    """The libnccl.so.2 of a released wheel, as ``tools/capture/nccl_wheels.py --keep`` kept it."""
    found = NCCL_KEPT / f"{package}-{version}-{arch}" / "libnccl.so.2"
    if not found.exists():
        pytest.fail(
            f"no {found}: run `python3 tools/capture/nccl_wheels.py --keep {NCCL_KEPT} --keep-only"
            f" {package}=={version}:{arch}`",
            pytrace=False,
        )
    return found


def model(node: SparkNode, name: str, architectures: list[str], model_type: str) -> str:
    """A model folder on ``node`` whose config.json names ``architectures`` and ``model_type``, with the
    files a checkpoint has; its path inside a container that mounts MODELS at MOUNTED."""
    config = json.dumps({"architectures": architectures, "model_type": model_type, "torch_dtype": "bfloat16"})
    folder = f"{MODELS}/{name}"
    node.run(
        f"mkdir -p {folder} && printf %s {shlex.quote(config)} > {folder}/config.json"
        f" && : > {folder}/model.safetensors && : > {folder}/tokenizer.json"
    )
    return f"{MOUNTED}/{name}"


def other_python_image(node: SparkNode, tag: str) -> Path:
    """``tag`` on ``node``: the engine image with ``python3`` (and ``ray``) running OTHER_PYTHON; returns that
    Python's prefix, which a container must mount."""
    assert OTHER_PYTHON is not None
    python = shlex.quote(str(OTHER_PYTHON / "bin" / "python3"))
    programs = {
        **engine_programs(),
        "python3": PYTHON3.format(python=python, name="python3").encode(),
        "ray": RAY.format(python=python, name="ray").encode(),
    }
    repository, version = tag.split(":")
    node.docker.api.import_image_from_data(_busybox_root(programs), repository=repository, tag=version)
    return OTHER_PYTHON


def engine_image(node: SparkNode, tag: str) -> None:
    """``tag`` on ``node``: the engine image (vLLM's stand-in, this machine's Python and Ray)."""
    repository, version = tag.split(":")
    node.docker.api.import_image_from_data(_busybox_root(engine_programs()), repository=repository, tag=version)


def copy_image(source: SparkNode, target: SparkNode, tag: str) -> None:
    """``tag`` from ``source`` to ``target`` as docker save | docker load does it: the same image id on both."""
    target.docker.api.load_image(b"".join(source.docker.api.get_image(tag)))


def engine(
    node: SparkNode,
    image: str,
    *,
    python: Path | None = None,
    env: dict[str, str] | None = None,
    nccl: Path | None = None,
    **options: object,
) -> Container:
    """The engine container ``vllm_node`` of ``image`` with the node's models mounted, Ray's environment and
    ``env``; ``python``: another Python's prefix to mount (for :func:`other_python_image`); ``nccl``: a
    libnccl.so.2 installed as ``pip install --target NCCL_SITE nvidia-nccl-cu12`` puts it, NCCL_SITE on
    PYTHONPATH (see :func:`released_nccl`)."""
    volumes = {MODELS: {"bind": MOUNTED, "mode": "ro"}}
    if python is not None:
        volumes[str(python)] = {"bind": str(python), "mode": "ro"}
    if nccl is not None:
        volumes[str(nccl)] = {"bind": f"{NCCL_SITE}/nvidia/nccl/lib/libnccl.so.2", "mode": "ro"}
        env = {**(env or {}), "PYTHONPATH": NCCL_SITE}
    return node.engine_container("vllm_node", image=image, volumes=volumes, environment=env or {}, **options)
