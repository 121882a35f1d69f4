"""Real Ray nodes (CPU only) on loopback addresses, for the Ray tests and the edge bench.

Only inside a network namespace that has nothing but ``lo`` (``unshare --net``) does Ray keep 127.x
addresses: with any route outside, it replaces a loopback address by the machine's outside address. The
head listens on 127.0.0.1:6379; worker ``k`` on 127.0.0.``k+1``, its dashboard agent on a port of its own
(all nodes share one machine). Each node runs ``ray start --block`` in a PID namespace of its own, so
stopping a node kills exactly its processes, and a parent-death signal takes them down if the caller dies.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.waiting import wait_until

GCS = ("127.0.0.1", 6379)
ADDRESS = "ray://127.0.0.1:6379"
RAY = [sys.executable, "-m", "ray.scripts.scripts"]
NODE_ARGS = ["--num-cpus", "1", "--num-gpus", "0", "--object-store-memory", "100000000", "--disable-usage-stats"]
#: The GCS declares a stopped node dead after about 5 s instead of about 15 s.
FAST_HEALTH_CHECKS = {
    "RAY_health_check_initial_delay_ms": "0",
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "5",
}


@dataclass
class RayNode:
    ip: str
    temp: Path  # its --temp-dir
    process: subprocess.Popen[bytes]  # unshare, whose child `ray start --block` is its PID namespace's init
    node_id: str = ""

    @property
    def logs(self) -> Path:
        """Its Ray log folder (``session_latest/logs``)."""
        return self.temp / "session_latest" / "logs"

    def log(self, filename: str) -> Path:
        return self.logs / filename

    def stop(self) -> None:
        """Kill the node's PID namespace: unshare's death kills its init, and with it every process."""
        self.process.kill()
        self.process.wait()


def node_env(root: Path) -> dict[str, str]:
    """The environment the nodes run in: a home of their own, no usage reports, fast health checks, and no
    sparktui on the path (what runs on a node comes through Ray's runtime environment)."""
    env = {**os.environ, "HOME": str(root / "home"), "RAY_USAGE_STATS_ENABLED": "0", **FAST_HEALTH_CHECKS}
    env.pop("RAY_ADDRESS", None)
    env.pop("PYTHONPATH", None)
    return env


def start_node(root: Path, name: str, ip: str, args: list[str], env: Mapping[str, str]) -> RayNode:
    temp = root / name
    command = ["setpriv", "--pdeathsig", "KILL", "unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]
    command += [*RAY, "start", "--block", "--node-ip-address", ip, "--temp-dir", str(temp), *NODE_ARGS, *args]
    with (root / f"{name}.log").open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=dict(env), cwd=root
        )
    return RayNode(ip, temp, process)


def start_cluster(root: Path, workers: int, env: Mapping[int, Mapping[str, str]] | None = None) -> list[RayNode]:
    """A head and ``workers`` worker nodes, every one alive and its agent answering; ``env`` gives a node
    (by index, 0 the head) an environment other than :func:`node_env`'s."""
    assert [name for _, name in socket.if_nameindex()] == ["lo"], "start Ray nodes inside `unshare --net`"
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    envs = env or {}
    nodes = [
        start_node(
            root,
            "head",
            GCS[0],
            ["--head", "--port", str(GCS[1]), "--include-dashboard", "true"],
            envs.get(0, node_env(root)),
        )
    ]
    try:
        wait_until(gcs_listening, 60, "the head's GCS port")
        for k in range(1, workers + 1):
            # The nodes share this machine: each agent needs a port other than the head's (52365).
            args = ["--address", f"{GCS[0]}:{GCS[1]}", "--dashboard-agent-listen-port", str(52365 + k)]
            nodes.append(start_node(root, f"worker{k}", f"127.0.0.{k + 1}", args, envs.get(k, node_env(root))))
        wait_until(lambda: len(alive_nodes()) == len(nodes), 60 + 30 * workers, "every node alive in the state API")
        ids = alive_nodes()
        for node in nodes:
            node.node_id = ids[node.ip]
            wait_until(lambda n=node: agent_answers(n.node_id), 60, f"the agent of {node.ip}")
    except BaseException:
        for node in nodes:
            node.stop()
        raise
    return nodes


def gcs_listening() -> bool:
    try:
        socket.create_connection(GCS, timeout=1).close()
    except OSError:
        return False
    return True


def alive_nodes() -> dict[str, str]:
    """Node IP -> node id of the alive nodes, or nothing while the head's state API is not up."""
    from ray.util.state import list_nodes

    try:
        return {n.node_ip: n.node_id for n in list_nodes(address="127.0.0.1:6379", timeout=5) if n.state == "ALIVE"}
    except Exception:  # the dashboard is still starting
        return {}


def agent_answers(node_id: str) -> bool:
    """Whether the head relays the node's log listing (its agent registers a while after the node)."""
    from ray.util.state import list_logs

    try:
        list_logs(address="127.0.0.1:6379", node_id=node_id, glob_filter="raylet.out", timeout=5)
    except Exception:
        return False
    return True
