"""What the pre-launch check tests plant on the spark test nodes (and tools/capture/commands/sparks.py
captures): a model folder, an engine image whose ``python3`` is another Python of this machine (a different
build under the same tag, with another Python and without Ray), the same image copied from one node to
another (one image id on both), and engine containers that mount the model."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

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
    node: SparkNode, image: str, *, python: Path | None = None, env: dict[str, str] | None = None, **options: object
) -> Container:
    """The engine container ``vllm_node`` of ``image`` with the node's models mounted, Ray's environment and
    ``env``; ``python``: another Python's prefix to mount (for :func:`other_python_image`)."""
    volumes = {MODELS: {"bind": MOUNTED, "mode": "ro"}}
    if python is not None:
        volumes[str(python)] = {"bind": str(python), "mode": "ro"}
    return node.engine_container("vllm_node", image=image, volumes=volumes, environment=env or {}, **options)
