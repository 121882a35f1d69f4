#!/usr/bin/env python3
"""Capture the inventory script's real output on the spark test nodes (tests/servers/sparks.py), over
their SSH connections exactly as ``sparktui check`` runs it, into tests/fixtures/commands/:

* ``inventory-spark-a.txt``: spark-a with its engine container ``vllm_node`` running (this machine's Python
  and Ray 2.60 mounted, a Ray head started in it, NCCL_SOCKET_IFNAME set, the planted model mounted at
  /models/sparktest) and an interface ``enp2s0f0np0`` that only spark-a has (a bridge: the kernel here
  has no dummy links); the probe runs in the container (docker exec).
* ``inventory-spark-b.txt``: spark-b with no container, the image tagged there being another build whose
  ``python3`` is not mounted; the probe runs ``docker run --rm`` of the image and finds no python3.

Each with ``.meta.toml`` (the nonce, the request, the exit status, the seconds). Needs root (network
namespaces), as the tests do:  python3 tools/capture/commands/sparks.py [OUT]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from sparktui.core.inventory import script  # noqa: E402
from sparktui.core.remote.command import Command  # noqa: E402
from sparktui.core.remote.runner import SshRunner  # noqa: E402
from tests.servers import plant  # noqa: E402
from tests.servers.sparks import SparkNode, Sparks, start_sparks, stop_sparks  # noqa: E402
from tests.servers.sshd import wait_until  # noqa: E402

IMAGE = "sparktui-test/check:1"


async def capture(sparks: Sparks, node: SparkNode, request: script.Request, out: Path) -> None:
    runner = SshRunner.to({node.name: node.name})
    run = script.nonce()
    lines: list[str] = []
    started = time.monotonic()
    try:
        code = await runner.run(
            Command("inventory", node.name, "host", script.script(request, run), changes=False),
            lambda _node, line: lines.append(line),
        )
    finally:
        await runner.close()
    seconds = round(time.monotonic() - started, 3)
    (out / f"inventory-{node.name}.txt").write_text("".join(f"{line}\n" for line in lines))
    meta = {
        "nonce": run,
        "machine": f"{node.name} (spark test node)",
        "captured": datetime.now(UTC).isoformat(timespec="seconds"),
        "image": request.image,
        "containers": list(request.containers),
        "model": request.model,
        "probe": request.probe,
        "exit_code": code,
        "seconds": seconds,
    }
    (out / f"inventory-{node.name}.meta.toml").write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in meta.items()))
    print(f"inventory-{node.name}.txt: {len(lines)} lines in {seconds} s, exit {code}")


def plant_scenario(sparks: Sparks) -> str:
    a, b = sparks.head, sparks["spark-b"]
    plant.engine_image(a, IMAGE)
    plant.other_python_image(b, IMAGE)
    model = plant.model(a, "sparktest", ["SparkTestForCausalLM"], "sparktest")
    a.run("ip link add enp2s0f0np0 type bridge && ip link set enp2s0f0np0 up")
    plant.engine(a, IMAGE, env={"NCCL_SOCKET_IFNAME": "enp2s0f0np0", "GLOO_SOCKET_IFNAME": "enp2s0f0np0"})
    a.run(f"docker exec vllm_node ray start --head --port=6379 --node-ip-address={a.address} --disable-usage-stats")
    wait_until(lambda: "Autoscaler status" in a.run("docker exec vllm_node ray status", check=False).stdout, "Ray")
    return model


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "tests" / "fixtures" / "commands"
    root = Path(tempfile.mkdtemp(prefix="spk", dir="/tmp"))
    home = Path(tempfile.mkdtemp(prefix="home", dir="/tmp"))
    sparks = start_sparks(root)
    try:
        (home / ".ssh").mkdir(mode=0o700)
        shutil.copy(sparks.ssh_config, home / ".ssh" / "config")
        shutil.copy(sparks.known_hosts, home / ".ssh" / "known_hosts")
        os.environ["HOME"] = str(home)
        os.environ.pop("SSH_AUTH_SOCK", None)
        model = plant_scenario(sparks)
        request = script.Request(image=IMAGE, containers=("vllm_node",), model=model)
        for node in sparks:
            asyncio.run(capture(sparks, node, request, out))
    finally:
        stop_sparks(sparks)
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
