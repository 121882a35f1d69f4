"""`sparktui discover` looks at real SSH test nodes and writes a cluster file that loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import cluster as config
from tests.servers.sshd import SshdCluster


def test_discover_writes_a_usable_cluster_file(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    out = tmp_path / "sparktui.toml"
    assert main(["discover", "node-a", "node-b", "--output", str(out)]) == 0
    # No Docker engine listens on these nodes: said of the node's socket, not of the local forward to it.
    said = [line for line in capsys.readouterr().err.splitlines() if "docker" in line]
    assert said and all("/var/run/docker.sock on node-a" in line or "node-b" in line for line in said), said
    assert not any("sparktui-ssh-" in line or "unix://" in line for line in said), said
    assert "could not look at this node: node-a:" not in out.read_text().replace("docker:", "")
    cluster = config.load(out)
    assert [n.ssh for n in cluster.nodes] == ["node-a", "node-b"]
    assert cluster.head.ssh == "node-a"
    assert len({n.name for n in cluster.nodes}) == 2
    assert main(["discover", "node-a", "--output", str(out)]) == 2  # never replaced without --force
    assert "--force" in capsys.readouterr().err
    assert main(["discover", "down", "--output", str(tmp_path / "other.toml")]) == 2
    assert not (tmp_path / "other.toml").exists()
