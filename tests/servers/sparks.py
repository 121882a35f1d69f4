"""Two DGX-Spark-like test nodes for playbook tests: ``spark-a`` (the head) and ``spark-b``, each in its
own network namespace with a Docker engine and an ``sshd`` of its own.

A bridge in the root namespace (``.254`` of a private /24, 10.213.77.0/24 unless that is routed already)
joins the nodes through veth pairs; inside its namespace a node's end is ``enp1s0f1np1`` (the DGX Spark's
ConnectX name) with address ``.1`` or ``.2``, and ``lo`` is up. Each node runs under an init of its own
(PID, mount and UTS namespaces, hostname = node name) where ``/sys`` shows the node's interfaces,
``/etc/hosts`` names both nodes, ``/root`` is an overlay whose writes stay in the test (the real ``/root``
is never written) and ``/root/.ssh`` is a test directory with a key, ``known_hosts`` and ``config``, so
``ssh spark-a ...`` works from ``spark-b`` and back without a prompt. ``sshd`` listens on the node's
address, port 22, and sets ``DOCKER_HOST`` to the node's engine; ``dockerd`` runs without bridge or
iptables rules, so containers use ``--network host`` and see the node's interfaces.

Names carry ``sparktui-test-<pid>-<start time>-<random>``, so parallel runs do not collide and a later
run removes what a killed one left (its owner process is gone). Every process of a node dies with the
node's init, which dies with the test process (parent-death signal). If ``br_netfilter`` is loaded and
the host's iptables FORWARD chain drops packets, node-to-node traffic cannot pass the bridge.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import docker
from docker.models.containers import Container

from sparktui.core.audit import read_log
from sparktui.core.dirs import state_dir
from sparktui.core.remote.ssh import SshNode
from tests.servers.dockerd import IMAGE, _busybox_root, _Daemon
from tests.servers.sshd import SSHD, SshClient, accepts, children, command_line, keygen
from tests.waiting import wait_until

NODES = ("spark-a", "spark-b")  # the first is the head
IFACE = "enp1s0f1np1"
ENGINE_IMAGE = "sparktui-test/engine:1"
PREFIX = "sparktui-test-"
# Private /24s tried in order: the first with no route and no address of this machine in it is used.
SUBNETS = tuple(ipaddress.IPv4Network(f"10.213.{third}.0/24") for third in range(77, 85))
LOCK = Path("/run/sparktui-test-sparks.lock")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# vLLM's stand-in: `vllm serve MODEL [ARGS...]`, launched with the Ray executor, answers on --port (default
# 8000) as vLLM's OpenAI server does, as far as sparktui asks: GET /health, GET /v1/models (the model named
# as the launch names it) and POST /v1/completions, streamed as server-sent events (eight tokens, then the
# usage; a model named */stalled answers /health and then never a token, as a stalled engine); busybox nc
# runs ANSWER for each connection. busybox nc cannot listen on one address only, so with --host naming one
# address (not 0.0.0.0 or 127.0.0.1) busybox httpd serves /health alone there. Launched without the Ray
# executor, it refuses as a multi-node launch would.
ANSWER = r"""#!/bin/sh
read -r method path _
length=0
while read -r line; do
  line=$(printf %s "$line" | tr -d '\r')
  [ -z "$line" ] && break
  case "$line" in [Cc]ontent-[Ll]ength:*) length=$(echo "${line#*:}" | tr -d ' ') ;; esac
done
[ "$length" -gt 0 ] && head -c "$length" >/dev/null
reply() { printf 'HTTP/1.1 %s\r\nContent-Type: %s\r\nConnection: close\r\n' "$1" "$2"; }
case "$method $path" in
  "GET /health") reply "200 OK" text/plain; printf 'Content-Length: 0\r\n\r\n' ;;
  "GET /v1/models")
    body="{\"object\":\"list\",\"data\":[{\"id\":\"$(cat "$(dirname "$0")/model")\",\"object\":\"model\"}]}"
    reply "200 OK" application/json; printf 'Content-Length: %d\r\n\r\n%s' "${#body}" "$body" ;;
  "POST /v1/completions")
    reply "200 OK" text/event-stream; printf '\r\n'
    case "$(cat "$(dirname "$0")/model")" in */stalled) exec sleep 100000 ;; esac
    for token in 1 2 3 4 5 6 7 8; do
      printf 'data: {"object":"text_completion","choices":[{"index":0,"text":" ok"}]}\n\n'
      usleep 5000
    done
    printf 'data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":8,"total_tokens":12}}\n\n'
    printf 'data: [DONE]\n\n' ;;
  *) reply "404 Not Found" text/plain; printf 'Content-Length: 0\r\n\r\n' ;;
esac
"""
VLLM = rb"""#!/bin/sh
[ "$1" = serve ] && [ $# -ge 2 ] || { echo "usage: vllm serve MODEL [ARGS...]" >&2; exit 2; }
shift
echo "INFO vllm serve (sparktui test stand-in): model $1, arguments: $*"
model=$1 port=8000 host= ray=
while [ $# -gt 0 ]; do
  case "$1" in
    --port) port=${2:-8000}; [ $# -gt 1 ] && shift ;;
    --port=*) port=${1#*=} ;;
    --host) host=$2; [ $# -gt 1 ] && shift ;;
    --host=*) host=${1#*=} ;;
    --distributed-executor-backend) [ "$2" = ray ] && ray=1; [ $# -gt 1 ] && shift ;;
    --distributed-executor-backend=ray) ray=1 ;;
  esac
  shift
done
if [ -z "$ray" ]; then
  echo "ERROR a multi-node launch needs the Ray executor: add --distributed-executor-backend ray" >&2
  exit 1
fi
dir=$(mktemp -d)
printf %s "$model" > "$dir/model"
cp /bin/vllm-answer "$dir/answer"
case "${host:-0.0.0.0}" in
  0.0.0.0|127.0.0.1|localhost) nc -ll -p "$port" -e "$dir/answer" & ;;
  *) echo ok > "$dir/health"; httpd -f -p "$host:$port" -h "$dir" & ;;
esac
server=$!
trap 'kill $server 2>/dev/null; exit 143' TERM INT
until wget -q -O /dev/null "http://${host:-127.0.0.1}:$port/health" 2>/dev/null; do
  kill -0 $server 2>/dev/null || { echo "ERROR cannot serve on port $port" >&2; exit 1; }
  usleep 20000
done
echo "INFO Application startup complete."
wait $server
"""

# Real Ray in the engine image: python3 and ray run this machine's Python, which a container has when it
# mounts it (see ray_volumes); without the mounts they are missing, as in an image that lacks Ray.
_MISSING = "[ -x {python} ] || {{ echo '{name}: not found' >&2; exit 127; }}\n"
PYTHON3 = f'#!/bin/sh\n{_MISSING}exec {{python}} "$@"\n'
RAY = f'#!/bin/sh\n{_MISSING}exec {{python}} -m ray.scripts.scripts "$@"\n'
# Ray in a container that has no GPU: it counts `gpus` fake ones, and a small object store.
RAY_SHM = "512m"


def audit() -> list[tuple[str, str, int | None]]:
    """(node, step, exit code) of every entry in the user's audit log, in order."""
    return [(e.node, e.step, e.exit_code) for e in read_log(state_dir() / "audit.jsonl")]


def engine_programs() -> dict[str, bytes]:
    """The engine image's programs: the vLLM stand-in, and python3 and ray running this machine's Python."""
    python = shlex.quote(sys.executable)
    return {
        "vllm": VLLM,
        "vllm-answer": ANSWER.encode(),
        "python3": PYTHON3.format(python=python, name="python3").encode(),
        "ray": RAY.format(python=python, name="ray").encode(),
    }


def ray_volumes() -> dict[str, dict[str, str]]:
    """Read-only bind mounts (docker SDK ``volumes``) giving a container this machine's Python, with Ray,
    and the shared libraries it and Ray's binaries load."""
    paths = {sys.base_prefix, sys.prefix, "/lib", "/lib64", "/usr/lib"}
    return {p: {"bind": p, "mode": "ro"} for p in sorted(paths) if os.path.exists(p)}


def ray_environment(gpus: int = 1) -> dict[str, str]:
    """What a Ray container needs here: ``gpus`` GPUs counted (there are none), a 100 MB object store."""
    resources = {"GPU": gpus, "object_store_memory": 100_000_000}
    return {"RAY_OVERRIDE_RESOURCES": json.dumps(resources, separators=(",", ":")), "RAY_USAGE_STATS_ENABLED": "0"}


def ray_run_options(gpus: int = 1) -> list[str]:
    """The same as ``docker run`` options on a node: host network, shared memory, mounts, environment (a
    list of arguments: ``shlex.join`` it into a command line)."""
    options = ["--network", "host", "--shm-size", RAY_SHM]
    for path, mount in ray_volumes().items():
        options += ["-v", f"{path}:{mount['bind']}:ro"]
    for name, value in ray_environment(gpus).items():
        options += ["-e", f"{name}={value}"]
    return options


# PID 1 of a node, run by sh with $1 = node name, $2 = its directory, $3 = a Python: hostname; a fresh
# sysfs (this network namespace's interfaces) keeping the cgroup mounts; /root as an overlay in a tmpfs
# (or left as it is where overlays cannot mount, if /root/.ssh exists to mount over); the test's
# /root/.ssh and /etc/hosts; ~/.bashrc read as empty, as on every test node (sshd.PLAIN_SHELL says why);
# then a reaper of orphans as init.
_INIT = r"""
set -e
hostname "$1"
mount --rbind /sys/fs/cgroup "$2/cgroup"
mount -t sysfs sysfs /sys
mount --move "$2/cgroup" /sys/fs/cgroup
mount -t tmpfs -o mode=700 tmpfs "$2/overlay"
mkdir "$2/overlay/upper" "$2/overlay/work"
chmod --reference=/root "$2/overlay/upper"
mount -t overlay overlay -o "lowerdir=/root,upperdir=$2/overlay/upper,workdir=$2/overlay/work" /root \
  || [ -d /root/.ssh ]
mkdir -p /root/.ssh
mount --bind "$2/ssh" /root/.ssh
mount --bind "$2/hosts" /etc/hosts
[ ! -e /root/.bashrc ] || mount --bind /dev/null /root/.bashrc
touch "$2/ready"
exec "$3" -c 'import os, time
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.5)' "$2"
"""
# The node's init: in new mount, UTS and PID namespaces (a fresh /proc), killed if unshare dies.
_UNSHARE = ["unshare", "--mount", "--propagation", "private", "--uts", "--pid", "--fork", "--kill-child"]
_UNSHARE += ["--mount-proc", "--"]
_PDEATHSIG = ["setpriv", "--pdeathsig", "KILL", "--"]
_SSHD_CONFIG = """\
ListenAddress {address}:22
HostKey {host_key}
AuthorizedKeysFile {authorized_keys}
SetEnv DOCKER_HOST={docker_host}
PidFile none
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel VERBOSE
"""
_RUN = re.compile(rf"{PREFIX}(\d+)-(\d+)-[0-9a-f]+")


def _ip(*args: str, check: bool = True) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (the state first); none if no process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _start_time(pid: int) -> str | None:
    """When ``pid`` started (clock ticks after boot), to tell it from a later process with its number."""
    fields = _stat(pid)
    return fields[19] if fields else None


def _alive(pid: int, started: str | None = None) -> bool:
    """Whether ``pid`` runs (a zombie has ended), and is the one that started at ``started`` if given."""
    fields = _stat(pid)
    return bool(fields) and fields[0] != "Z" and started in (None, fields[19])


def _owner_alive(run: str) -> bool:
    """Whether the test process that made ``run`` (a name starting ``sparktui-test-PID-TIME-``) runs."""
    match = _RUN.match(run)
    return match is None or _alive(int(match[1]), match[2])


@dataclass
class SparkNode:
    """One node: its name and address, its engine (``docker``: an SDK client), and ``run`` for commands
    inside it."""

    name: str
    address: str
    namespace: str  # the network namespace, under /run/netns
    root: Path  # its files: keys, configs, logs, the engine's data
    init: subprocess.Popen[bytes]  # holds its namespaces; its child is the node's PID 1
    init_pid: int = 0  # PID 1 of the node, as this machine numbers it: all its processes end with it
    init_started: str | None = None
    sshd: subprocess.Popen[bytes] | None = None
    daemon: _Daemon | None = None
    docker: docker.DockerClient = field(init=False, repr=False)  # set once the engine answers

    @property
    def docker_host(self) -> str:
        """The engine's address for ``DOCKER_HOST`` or ``docker.DockerClient(base_url=...)``."""
        return f"unix://{self.root / 'docker' / 'docker.sock'}"

    @property
    def env(self) -> dict[str, str]:
        """The environment of commands run in the node (as an SSH session has it)."""
        return {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8", "DOCKER_HOST": self.docker_host}

    def enter(self) -> list[str]:
        """The command prefix that runs a program inside the node (all its namespaces)."""
        return ["nsenter", f"--target={self.init_pid}", "--mount", "--uts", "--net", "--pid", "--wd=/", "--"]

    def engine_container(
        self,
        name: str = "vllm_node",
        command: Sequence[str] = ("sleep", "infinity"),
        *,
        ray: bool = True,
        gpus: int = 1,
        image: str = ENGINE_IMAGE,
        volumes: Mapping[str, dict[str, str]] | None = None,
        environment: Mapping[str, str] | None = None,
        **options: Any,
    ) -> Container:
        """Start a container of the engine image (or ``image``) as the launchers do (host network, shared
        memory), with real Ray (this machine's Python mounted, ``gpus`` GPUs counted) unless ``ray`` is
        false, and ``volumes`` and ``environment`` besides. It runs under Docker's init, so that ``docker
        stop`` ends it at once (``sleep`` as PID 1 ignores SIGTERM, and each stop would wait its whole
        timeout)."""
        options.setdefault("init", True)
        options.setdefault("shm_size", RAY_SHM)
        return self.docker.containers.run(
            image,
            list(command),
            name=name,
            detach=True,
            network_mode="host",
            volumes={**(ray_volumes() if ray else {}), **(volumes or {})},
            environment={**(ray_environment(gpus) if ray else {}), **(environment or {})},
            **options,
        )

    def run(self, command: str, *, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run a shell command inside the node; with ``check``, fail showing its output unless it exits 0."""
        done = subprocess.run(
            [*self.enter(), "sh", "-c", command], capture_output=True, text=True, timeout=timeout, env=self.env
        )
        if check and done.returncode:
            raise AssertionError(f"{self.name}: {command!r} exited {done.returncode}:\n{done.stdout}{done.stderr}")
        return done


@dataclass
class Sparks(SshClient):
    """The two nodes, the bridge joining them, and the client files that reach them over SSH."""

    root: Path
    run_id: str
    subnet: ipaddress.IPv4Network
    bridge: str
    user_key: Path
    known_hosts: Path
    ssh_config: Path
    nodes: dict[str, SparkNode] = field(default_factory=dict)
    made: list[SshNode] = field(default_factory=list)
    #: Images a session fixture imported, which :meth:`reset` keeps.
    kept: set[str] = field(default_factory=set)
    first: ClassVar[str] = NODES[0]

    def __getitem__(self, name: str) -> SparkNode:
        return self.nodes[name]

    def __iter__(self) -> Iterator[SparkNode]:
        return iter(self.nodes.values())

    @property
    def head(self) -> SparkNode:
        return self.nodes[NODES[0]]

    @property
    def workers(self) -> list[SparkNode]:
        return [n for n in self.nodes.values() if n is not self.head]

    def reset(self) -> None:
        """Remove every container from each node, and every image and tag but the two imported and the
        ``kept`` (a test that replaced those under their tags must import them again)."""
        for node in self:
            api = node.docker.api
            for c in api.containers(all=True):
                api.remove_container(c["Id"], force=True)
            for image in api.images():
                tags = [t for t in image.get("RepoTags") or () if t != "<none>:<none>"]
                extra = [t for t in tags if t not in (IMAGE, ENGINE_IMAGE, *self.kept)]
                for tag in extra:
                    api.remove_image(tag, force=True)  # only untags while another tag remains
                if not tags:
                    api.remove_image(image["Id"], force=True)


def _bridge(run: str) -> str:
    """The run's bridge; its veths add the last letter of the node's name."""
    return f"spt{run.rsplit('-', 1)[-1]}"


def _namespaces(run: str = "") -> list[str]:
    return [line.split()[0] for line in _ip("netns", "list").splitlines() if line.startswith(PREFIX + run)]


def _links(run: str = "") -> list[tuple[str, str]]:
    """(name, owner) of the root namespace's links whose alias names a run."""
    links = json.loads(_ip("-j", "link", "show") or "[]")
    return [(x["ifname"], x["ifalias"]) for x in links if x.get("ifalias", "").startswith(PREFIX + run)]


def leftovers(sparks: Sparks | None = None) -> list[str]:
    """What ``sparks`` (default: any run) has on this machine: namespaces, links, and running processes:
    a node's init (every process of the node ends with it) or any naming the run or its files."""
    run = sparks.run_id if sparks else ""
    found = [f"netns {ns}" for ns in _namespaces(run)] + [f"link {name}" for name, _ in _links(run)]
    if sparks is not None:
        found += [f"init of {n.name}: {n.init_pid}" for n in sparks if _alive(n.init_pid, n.init_started)]
        for pid in (int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()):
            line = command_line(pid)
            if (str(sparks.root) in line or run in line) and _alive(pid):
                found.append(f"process {pid}: {line}")
    return found


def _kill_all(ns: str) -> None:
    """Kill every process in network namespace ``ns`` and wait until they are gone."""

    def pids() -> list[int]:
        return [int(pid) for pid in _ip("netns", "pids", ns, check=False).split()]

    for pid in pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not pids(), 15, f"the processes in {ns} to end")


def _remove_run(run: str) -> None:
    """Kill every process in the run's namespaces (their inits take their PID namespaces along), then
    delete the namespaces and the links."""
    for ns in _namespaces(run):
        _kill_all(ns)
        _ip("netns", "delete", ns, check=False)
    bridge = _bridge(run)  # by name too: a link may not have its alias yet
    for name in {bridge, *(f"{bridge}{node[-1]}" for node in NODES)} | {n for n, _ in _links(run)}:
        _ip("link", "delete", name, check=False)


def remove_leftovers() -> None:
    """Remove what runs whose test process is gone left behind."""
    runs = {m[0] for name in [*_namespaces(), *(alias for _, alias in _links())] if (m := _RUN.match(name))}
    for run in runs:
        if not _owner_alive(run):
            _remove_run(run.removeprefix(PREFIX))


def _in_use(subnet: ipaddress.IPv4Network) -> bool:
    """Whether any route (but the default one) or address of this machine falls in ``subnet``."""
    for route in json.loads(_ip("-4", "-j", "route", "show", "table", "all") or "[]"):
        if route["dst"] != "default" and ipaddress.IPv4Network(route["dst"], strict=False).overlaps(subnet):
            return True
    addresses = json.loads(_ip("-4", "-j", "addr", "show") or "[]")
    return any(ipaddress.IPv4Address(a["local"]) in subnet for x in addresses for a in x.get("addr_info", []))


_NO_IPV6 = "/proc/sys/net/ipv6/conf/default/disable_ipv6"


def _disable_ipv6(interface: str) -> None:
    """No link-local IPv6 address on ``interface`` (root namespace): the nodes use only their IPv4."""
    with contextlib.suppress(FileNotFoundError):
        Path(f"/proc/sys/net/ipv6/conf/{interface}/disable_ipv6").write_text("1")


def _network(run_id: str, bridge: str) -> ipaddress.IPv4Network:
    """The bridge with its address in the first free subnet (chosen under a lock, so that parallel runs
    pick different ones)."""
    LOCK.touch()
    with LOCK.open() as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        remove_leftovers()
        subnet = next((s for s in SUBNETS if not _in_use(s)), None)
        if subnet is None:
            raise RuntimeError(f"every test subnet is in use: {', '.join(map(str, SUBNETS))}")
        _ip("link", "add", bridge, "type", "bridge")
        _ip("link", "set", bridge, "alias", PREFIX + run_id)
        _disable_ipv6(bridge)
        _ip("addr", "add", f"{subnet[254]}/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
    return subnet


def _plug(sparks: Sparks, name: str, address: str) -> str:
    """The node's network namespace, joined to the bridge; returns the namespace's name."""
    ns = f"{PREFIX}{sparks.run_id}-{name}"
    outside = f"{sparks.bridge}{name[-1]}"  # as _bridge says
    _ip("netns", "add", ns)
    # Interfaces made in the namespace from now on get no IPv6 address (lo keeps ::1).
    _ip("netns", "exec", ns, "sh", "-c", f"[ ! -e {_NO_IPV6} ] || echo 1 > {_NO_IPV6}")
    _ip("link", "add", outside, "type", "veth", "peer", "name", IFACE, "netns", ns)
    _ip("link", "set", outside, "alias", PREFIX + sparks.run_id)
    _disable_ipv6(outside)
    _ip("link", "set", outside, "master", sparks.bridge, "up")
    _ip("-n", ns, "addr", "add", f"{address}/24", "dev", IFACE)
    _ip("-n", ns, "link", "set", IFACE, "up")
    _ip("-n", ns, "link", "set", "lo", "up")
    return ns


def _files(sparks: Sparks) -> dict[str, Path]:
    """Keys and configurations: the client's, and each node's directory with its ``/root/.ssh``."""
    root = sparks.root
    root.chmod(0o700)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    keygen(sparks.user_key, "sparktui-tests")
    node_key = keygen(root / "id_node", "sparktui-tests-node")
    (root / "authorized_keys").write_text(
        sparks.user_key.with_suffix(".pub").read_text() + node_key.with_suffix(".pub").read_text()
    )
    addresses = {name: str(sparks.subnet[i]) for i, name in enumerate(NODES, 1)}
    host_keys = {name: keygen(root / f"host_key_{name}", name) for name in NODES}
    sparks.known_hosts.write_text(
        "".join(
            f"{name},{addresses[name]} {' '.join(host_keys[name].with_suffix('.pub').read_text().split()[:2])}\n"
            for name in NODES
        )
    )
    sparks.ssh_config.write_text(
        "".join(
            f"Host {name}\n  HostName {addresses[name]}\n  Port 22\n  User root\n"
            f"  UserKnownHostsFile {sparks.known_hosts}\n  IdentityFile {sparks.user_key}\n"
            for name in NODES
        )
    )
    dirs = {}
    for name in NODES:
        d = dirs[name] = root / name
        for sub in ("ssh", "cgroup", "overlay", "docker"):
            (d / sub).mkdir(parents=True, mode=0o700)
        shutil.copy(node_key, d / "ssh" / "id_ed25519")
        shutil.copy(sparks.known_hosts, d / "ssh" / "known_hosts")
        (d / "ssh" / "config").write_text(
            "".join(f"Host {n}\n  HostName {a}\n" for n, a in addresses.items()) + "Host *\n  User root\n"
        )
        (d / "hosts").write_text("127.0.0.1 localhost\n" + "".join(f"{a} {n}\n" for n, a in addresses.items()))
        (d / "sshd_config").write_text(
            _SSHD_CONFIG.format(
                address=addresses[name],
                host_key=host_keys[name],
                authorized_keys=root / "authorized_keys",
                docker_host=f"unix://{d / 'docker' / 'docker.sock'}",
            )
        )
    return dirs


def _boot(sparks: Sparks, name: str, directory: Path) -> SparkNode:
    """The node's init in its namespaces, and its sshd."""
    address = str(sparks.subnet[NODES.index(name) + 1])
    ns = _plug(sparks, name, address)
    # The parent-death signal reaches unshare, which takes the node's init (its child) along.
    enter_netns = [*_PDEATHSIG, "nsenter", f"--net=/run/netns/{ns}", "--", *_UNSHARE]
    with (directory / "init.log").open("wb") as log:
        init = subprocess.Popen(
            [*enter_netns, "sh", "-c", _INIT, "sh", name, str(directory), sys.executable],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    node = SparkNode(name, address, ns, directory, init)
    sparks.nodes[name] = node
    wait_until(lambda: (directory / "ready").exists() or init.poll() is not None, 15, f"{name}'s init")
    if init.poll() is not None:
        raise RuntimeError(f"{name}'s init exited: {(directory / 'init.log').read_text()[-2000:]}")
    node.init_pid = wait_until(lambda: next(iter(children(init.pid)), 0), 15, f"{name}'s PID 1")
    node.init_started = _start_time(node.init_pid)
    with (directory / "sshd.log").open("ab") as log:
        node.sshd = subprocess.Popen(
            [*node.enter(), SSHD, "-D", "-e", "-f", str(directory / "sshd_config")],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=node.env,
        )
    return node


def _wait_for_sshd(node: SparkNode) -> None:
    sshd = node.sshd
    assert sshd is not None
    wait_until(lambda: accepts(node.address, 22) or sshd.poll() is not None, 15, f"{node.name}'s sshd")
    if sshd.poll() is not None:
        raise RuntimeError(f"{node.name}'s sshd exited: {(node.root / 'sshd.log').read_text()[-2000:]}")


def _engine(node: SparkNode) -> None:
    """The node's dockerd (overlay2, else vfs) with both images imported."""
    node.daemon = _Daemon(node.root / "docker", prefix=node.enter(), env=node.env)
    failures = []
    for driver in ("overlay2", "vfs"):
        client = node.daemon.start(driver)
        if client is not None:
            break
        failures.append((node.root / "docker" / f"dockerd-{driver}.log").read_text(errors="replace")[-2000:])
    else:
        raise RuntimeError(f"{node.name}: dockerd did not start:\n" + "\n---\n".join(failures))
    node.docker = client
    repository, tag = ENGINE_IMAGE.split(":")
    client.api.import_image_from_data(_busybox_root(engine_programs()), repository=repository, tag=tag)


def _on_each(sparks: Sparks, work: Callable[[SparkNode], None]) -> None:
    """Run ``work`` on every node at once (in threads: what it starts must not carry a parent-death
    signal, which a thread's end would deliver); raise the first failure after all ended."""
    errors: list[BaseException] = []

    def one(node: SparkNode) -> None:
        try:
            work(node)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=one, args=(node,)) for node in sparks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _stop_engine(node: SparkNode) -> None:
    """Remove the node's containers (best effort: the node is killed next anyway), then stop dockerd."""
    if hasattr(node, "docker"):
        with contextlib.suppress(Exception):
            for c in node.docker.api.containers(all=True):
                node.docker.api.remove_container(c["Id"], force=True)
        node.docker.close()
    if node.daemon is not None:
        node.daemon.stop()


def start_sparks(root: Path) -> Sparks:
    """Start both nodes with their files under ``root``; on any failure, remove what was made."""
    longest = root / "spark-a" / "docker" / "exec" / "containerd" / "containerd.sock.ttrpc"
    if len(str(longest)) >= 108:
        raise ValueError(f"{root} is too long a path for the engines' unix sockets (at most 57 characters)")
    run_id = f"{os.getpid()}-{_start_time(os.getpid())}-{secrets.token_hex(3)}"
    bridge = _bridge(run_id)
    sparks = None
    try:
        subnet = _network(run_id, bridge)
        sparks = Sparks(root, run_id, subnet, bridge, root / "id_user", root / "known_hosts", root / "ssh_config")
        for name, directory in _files(sparks).items():
            _boot(sparks, name, directory)
        _on_each(sparks, _engine)
        for node in sparks:
            _wait_for_sshd(node)
    except BaseException:
        if sparks is None:
            _remove_run(run_id)
        else:
            stop_sparks(sparks)
        raise
    return sparks


def stop_sparks(sparks: Sparks) -> None:
    """Stop the engines (containers removed first), kill everything else in the nodes, and delete the
    namespaces and links; fails if anything of the run is left."""
    try:
        _on_each(sparks, _stop_engine)
    finally:
        # Killing a node's init ends its PID namespace; the processes started from here (unshare, the
        # nsenter of sshd and dockerd) then end and are reaped, so no zombie waits on this machine's init.
        for node in sparks:
            if node.init_pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(node.init_pid, signal.SIGKILL)
        for node in sparks:
            for process in (node.init, node.sshd, node.daemon.process if node.daemon else None):
                if process is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(10)
        _remove_run(sparks.run_id)  # anything else, and the namespaces and links
    for node in sparks:
        shutil.rmtree(node.root / "docker", ignore_errors=True)
    try:
        wait_until(lambda: not leftovers(sparks), 10, "the test nodes to be gone")
    except AssertionError:
        raise AssertionError("the test nodes left: " + "; ".join(leftovers(sparks))) from None
