"""How long ``sparktui check`` takes on two nodes, beside the fastest ways a person could read the same facts
with OpenSSH.

    python bench/check_nodes.py [--repeat 3]

Starts the two spark test nodes (tests/servers/sparks.py: real sshd and dockerd in network namespaces), an
engine container on each with real Ray (a head on spark-a, spark-b joined), and a model on each. Then, each
``--repeat`` times, wall-clock seconds for:

* ``sparktui check spark-a spark-b --launch ...`` as a user runs it (a new process: Python's start,
  the SSH connections, one round trip per node for the inventory and the in-image probe, the checks);
* by hand over OpenSSH, one command per fact as a person types them (uname, os-release, nvidia-smi, ip,
  rdma, df, docker version / images / ps / inspect, ray status in the container, config.json,
  /proc/net/tcp, the container's Python and Ray versions), the two nodes at once, over a ControlMaster
  connection opened beforehand (the fastest such loop can be);
* the same inventory script as sparktui's, run once per node by OpenSSH over that open connection, and
  over connections of its own (the transport alone: no parsing, no checks).

Needs root (network namespaces), OpenSSH's client and server, Docker and Ray (tools/test.sh installs them).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sparktui.core.inventory import script  # noqa: E402
from tests.servers import plant  # noqa: E402
from tests.servers.sparks import Sparks, start_sparks, stop_sparks  # noqa: E402
from tests.servers.sshd import wait_until  # noqa: E402

IMAGE = "sparktui-test/check:1"
BY_HAND = (
    "uname -a",
    "cat /etc/os-release",
    "nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap --format=csv || true",
    "ip -br addr",
    "rdma link show || true",
    "df -h /dev/shm",
    "docker version",
    "docker images --digests",
    "docker ps",
    "docker inspect vllm_node",
    f"docker image inspect {IMAGE}",
    "docker exec vllm_node ray status",
    "cat /root/models/tiny/config.json",
    "cat /proc/net/tcp",
    "docker exec vllm_node python3 -c 'import sys, ray; print(sys.version, ray.__version__)'",
)


def setup(sparks: Sparks) -> str:
    a, b = sparks.head, sparks["spark-b"]
    plant.engine_image(a, IMAGE)
    plant.copy_image(a, b, IMAGE)
    for node in sparks:
        model = plant.model(node, "tiny", ["Qwen2ForCausalLM"], "qwen2")
        plant.engine(node, IMAGE, shm_size="2g")
    a.run(f"docker exec vllm_node ray start --head --port=6379 --node-ip-address={a.address} --disable-usage-stats")
    b.run(f"docker exec vllm_node ray start --address={a.address}:6379 --node-ip-address={b.address}")
    wait_until(lambda: a.run("docker exec vllm_node ray status", check=False).stdout.count(" node_") == 2, 120, "Ray")
    return f"vllm serve {model} --tensor-parallel-size 2 --distributed-executor-backend ray --port 18080"


def ssh(sparks: Sparks, control: Path | None, node: str, command: str) -> None:
    """``command`` on ``node`` with OpenSSH: over the master at ``control``, or (None) a connection of its own."""
    options = ["-F", str(sparks.ssh_config), "-o", "BatchMode=yes"]
    if control is not None:
        options += ["-o", "ControlMaster=auto", "-o", f"ControlPath={control}/%h", "-o", "ControlPersist=300"]
    subprocess.run(["ssh", *options, node, command], capture_output=True, check=False)


def timed(work: object) -> float:
    started = time.monotonic()
    work()  # type: ignore[operator]
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="spk", dir="/tmp"))
    home = Path(tempfile.mkdtemp(prefix="home", dir="/tmp"))
    control = Path(tempfile.mkdtemp(prefix="mux", dir="/tmp"))
    sparks = start_sparks(root)
    try:
        (home / ".ssh").mkdir(mode=0o700)
        shutil.copy(sparks.ssh_config, home / ".ssh" / "config")
        shutil.copy(sparks.known_hosts, home / ".ssh" / "known_hosts")
        env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
        env.pop("SSH_AUTH_SOCK", None)
        launch = setup(sparks)
        nodes = [n.name for n in sparks]
        inventory = script.script(script.Request(image=IMAGE, containers=("vllm_node",), model="/models/tiny"), "n")
        with ThreadPoolExecutor(len(nodes)) as pool:
            list(pool.map(lambda n: ssh(sparks, control, n, "true"), nodes))  # open the masters

            def check() -> None:
                command = [sys.executable, "-m", "sparktui", "check", "--json", "--launch", launch, *nodes]
                done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
                found = json.loads(done.stdout)
                assert found["verdict"] == "ready", found["findings"]
                rounds.append(max(v["seconds"] for v in found["nodes"].values()))

            def by_hand() -> None:
                list(pool.map(lambda n: [ssh(sparks, control, n, c) for c in BY_HAND], nodes))

            def one_script() -> None:
                list(pool.map(lambda n: ssh(sparks, control, n, f"sh -c {shlex.quote(inventory)}"), nodes))

            def one_script_cold() -> None:
                list(pool.map(lambda n: ssh(sparks, None, n, f"sh -c {shlex.quote(inventory)}"), nodes))

            rounds: list[float] = []
            rows = [
                ("sparktui check (new process, new connections)", check, 1),
                (f"OpenSSH by hand, {len(BY_HAND)} commands a node, open master", by_hand, len(BY_HAND)),
                ("OpenSSH, the inventory script once a node, open master", one_script, 1),
                ("OpenSSH, the inventory script once a node, new connections", one_script_cold, 1),
            ]
            results = {name: [timed(work) for _ in range(args.repeat)] for name, work, _ in rows}
    finally:
        stop_sparks(sparks)
        for path in (root, home, control):
            shutil.rmtree(path, ignore_errors=True)
    print(f"two spark test nodes, {args.repeat} runs each (median, min-max, seconds)")
    print(f"{'':58} {'round trips/node':>16} {'median':>7} {'range':>13}")
    for name, _, trips in rows:
        seconds = results[name]
        print(f"{name:58} {trips:>16} {statistics.median(seconds):7.2f} {min(seconds):6.2f}-{max(seconds):<6.2f}")
    print(f"sparktui's own round trip per node (slowest node, from --json): median {statistics.median(rounds):.2f} s")


if __name__ == "__main__":
    main()
