"""The Docker engine the tests start themselves, a tiny image made with ``docker import`` from Debian's
static busybox, and containers that print real captured logs (the fixtures are in ``test_docker.py``).

If an engine already answers (``DOCKER_HOST`` or the default socket) the tests use it; otherwise a
``dockerd`` of their own runs for the session as root, with its data, exec root and socket in a
temporary directory, no bridge and no iptables rules (containers run with ``--network none``), on
overlay2 or, where that cannot mount, vfs. Everything the tests create is removed afterwards.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import tarfile
import time
import uuid
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

import docker
from docker.errors import DockerException, NotFound

from sparktui.core.text import decode
from tests.conftest import FIXTURES
from tests.servers.sshd import children

BUSYBOX = shutil.which("busybox") or "/bin/busybox"  # Debian's busybox-static
IMAGE = "sparktui-test/busybox:1"
# The same image under the names real deployments use, for discovery by image.
ALIASES = ("rayproject/ray:sparktui-test",)
PREFIX = "sparktui-test-"

# Prints /log line by line (every third line on stderr), remembering in /progress how far it got, so a
# restarted container continues rather than starting over. PAUSE_AT waits for /control/go after that
# line, EXIT_AT exits with EXIT_CODE, OOM_AT allocates memory until the kernel kills it. Then it stays.
WRITER = r"""
n=$(cat /progress 2>/dev/null || echo 0)
i=0
while IFS= read -r line || [ -n "$line" ]; do
  i=$((i+1))
  [ "$i" -le "$n" ] && continue
  if [ $((i % 3)) -eq 0 ]; then printf '%s\n' "$line" >&2; else printf '%s\n' "$line"; fi
  echo "$i" > /progress
  if [ "$i" = "${PAUSE_AT:-0}" ]; then until [ -e /control/go ]; do usleep 10000; done; fi
  if [ "$i" = "${EXIT_AT:-0}" ]; then exit "$EXIT_CODE"; fi
  if [ "$i" = "${OOM_AT:-0}" ]; then x=$(head -c 400000000 /dev/zero | tr '\0' x); fi
  usleep 2000
done < /log
exec sleep 1000000
"""
# Stand-ins for the programs discovery looks for: only their command lines matter.
_PROGRAMS = ("vllm", "ray", "python3")


def log_lines(path: Path) -> list[str]:
    """The lines of a captured log as a source must deliver them (decoded, CRLF as LF)."""
    return decode(path.read_bytes()).replace("\r\n", "\n").removesuffix("\n").split("\n")


def _answers(base_url: str | None) -> docker.DockerClient | None:
    try:
        client = docker.from_env(timeout=5) if base_url is None else docker.DockerClient(base_url, timeout=5)
        client.ping()
    except DockerException:
        return None
    return client


def _busybox_root(programs: Mapping[str, bytes] | None = None) -> bytes:
    """A root filesystem: busybox with a link per applet, and ``programs`` (name: script, in /bin;
    default: the stand-ins that only sleep)."""
    applets = subprocess.run([BUSYBOX, "--list"], check=True, capture_output=True, text=True).stdout.split()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for d in ("bin", "tmp", "control"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        tar.add(BUSYBOX, "bin/busybox")
        for applet in applets:
            if applet != "busybox":
                info = tarfile.TarInfo(f"bin/{applet}")
                info.type, info.linkname = tarfile.SYMTYPE, "busybox"
                tar.addfile(info)
        if programs is None:
            programs = dict.fromkeys(_PROGRAMS, b"#!/bin/sh\nexec sleep 1000000\n")
        for program, script in programs.items():
            info = tarfile.TarInfo(f"bin/{program}")
            info.size, info.mode = len(script), 0o755
            tar.addfile(info, io.BytesIO(script))
    return out.getvalue()


@dataclass
class _Daemon:
    root: Path
    # Runs dockerd inside a test node: a command that enters its namespaces (``nsenter``, which forks, so
    # the daemon is its child), and the environment the daemon gets there.
    prefix: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"unix://{self.root}/docker.sock"

    def start(self, driver: str) -> docker.DockerClient | None:
        (self.root / "daemon.json").write_text("{}")
        log = (self.root / f"dockerd-{driver}.log").open("wb")
        self.process = subprocess.Popen(
            [
                *self.prefix,
                shutil.which("dockerd") or "/usr/sbin/dockerd",
                f"--host={self.base_url}",
                f"--data-root={self.root / 'data'}",
                f"--exec-root={self.root / 'exec'}",
                f"--pidfile={self.root / 'dockerd.pid'}",
                f"--config-file={self.root / 'daemon.json'}",
                f"--storage-driver={driver}",
                "--iptables=false",
                "--ip6tables=false",
                "--ip-masq=false",
                "--bridge=none",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=self.env,
        )
        log.close()
        deadline = time.monotonic() + 60
        while self.process.poll() is None and time.monotonic() < deadline:
            client = _answers(self.base_url)
            if client is not None:
                try:  # the storage driver is only really tried by the first import
                    client.api.import_image_from_data(_busybox_root(), repository=IMAGE.split(":")[0], tag="1")
                    return client
                except DockerException:
                    client.close()
                    break
            time.sleep(0.1)
        self.stop()
        return None

    def pid(self) -> int | None:
        """dockerd's own process: the one started, or the child of the ``prefix`` command (its only
        child, listed first among its descendants)."""
        assert self.process is not None
        if not self.prefix:
            return self.process.pid
        return next(iter(children(self.process.pid)), None)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        pid = self.pid()
        if pid is not None:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@dataclass
class DockerEngine:
    base_url: str
    client: docker.DockerClient
    daemon: _Daemon | None = None  # ours, or None for an engine that was already running
    image: str = IMAGE


def start_engine(root: Path) -> DockerEngine:
    """An engine that answers, with the test image imported: the one already running, else our own
    ``dockerd`` with its files under ``root``."""
    existing = _answers(None)
    if existing is not None:
        existing.api.import_image_from_data(_busybox_root(), repository=IMAGE.split(":")[0], tag="1")
        engine = DockerEngine(os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"), existing)
    else:
        daemon = _Daemon(root)
        failures = []
        for driver in ("overlay2", "vfs"):
            client = daemon.start(driver)
            if client is not None:
                break
            failures.append((root / f"dockerd-{driver}.log").read_text(errors="replace")[-2000:])
        else:
            raise RuntimeError("dockerd did not start:\n" + "\n---\n".join(failures))
        engine = DockerEngine(daemon.base_url, client, daemon)
    for alias in ALIASES:
        repository, tag = alias.split(":")
        engine.client.api.tag(IMAGE, repository, tag)
    return engine


def stop_engine(engine: DockerEngine) -> None:
    """Remove what the tests made; stop the engine if it is ours."""
    api = engine.client.api
    for c in api.containers(all=True, filters={"name": PREFIX}):
        with suppress(NotFound):
            api.remove_container(c["Id"], force=True)
    for image in (IMAGE, *ALIASES):
        with suppress(NotFound):
            api.remove_image(image, force=True)
    engine.client.close()
    if engine.daemon is not None:
        engine.daemon.stop()
        shutil.rmtree(engine.daemon.root, ignore_errors=True)


@dataclass
class Containers:
    """Creates test containers (named with :data:`PREFIX`) and removes them at the end of a test."""

    engine: DockerEngine
    control: Path
    names: list[str] = field(default_factory=list)

    def new_name(self) -> str:
        return f"{PREFIX}{uuid.uuid4().hex[:10]}"

    def create(
        self,
        command: list[str] | None = None,
        *,
        name: str | None = None,
        log: str | None = None,
        env: dict[str, str] | None = None,
        image: str = IMAGE,
        tty: bool = False,
        memory: str | None = None,
        start: bool = True,
    ) -> str:
        """A container running ``command`` (default: the writer printing ``log``, a path under
        tests/fixtures)."""
        api = self.engine.client.api
        name = name or self.new_name()
        binds = {str(self.control): {"bind": "/control", "mode": "ro"}}
        if log is not None:
            binds[str(FIXTURES / log)] = {"bind": "/log", "mode": "ro"}
        host_config = api.create_host_config(network_mode="none", binds=binds, mem_limit=memory, memswap_limit=memory)
        api.create_container(
            image,
            command or ["/bin/sh", "-c", WRITER],
            name=name,
            environment=env or {},
            tty=tty,
            host_config=host_config,
        )
        self.names.append(name)
        if start:
            api.start(name)
        return name

    def go(self) -> None:
        """Let every paused writer continue."""
        (self.control / "go").touch()

    def remove_all(self) -> None:
        for name in self.names:
            with suppress(NotFound):
                self.engine.client.api.remove_container(name, force=True)
