"""The cockpit on live test nodes: logs followed over real SSH fill the node panes as they are written."""

from __future__ import annotations

from pathlib import Path

from sparktui.core import catalogue as cat
from sparktui.core.sources.ssh import SshFileSource
from sparktui.tui.app import Session, SparkApp
from tests.servers.sshd import SshdCluster

from ..conftest import FIXTURES

LOGS = FIXTURES / "nccl" / "two-hosts-wrong-socket-ifname"


async def test_cockpit_over_ssh(sshd_cluster: SshdCluster, tmp_path: Path) -> None:
    written = {}
    sources = []
    nodes = []
    for alias, rank in (("node-a", "rank0.log"), ("node-b", "rank1.log")):
        path = tmp_path / rank
        lines = (LOGS / rank).read_text().splitlines(True)
        path.write_text("".join(lines[:5]))
        written[path] = lines
        nodes.append(sshd_cluster.node(alias))
        sources.append(SshFileSource(nodes[-1], str(path), name=f"{alias}:{rank}"))
    app = SparkApp(Session("ssh", live=tuple(sources)), cat.load())
    async with app.run_test(size=(160, 48)) as pilot:
        for _ in range(200):
            if len(app.columns) == 2:
                break
            await pilot.pause(0.05)
        for path, lines in written.items():
            with path.open("a") as fh:
                fh.writelines(lines[5:])
        for _ in range(300):
            findings = app.diagnosis.findings if app.diagnosis else []
            if findings and findings[0].signature == "nccl-socket-ifname-no-interface":
                break
            await pilot.pause(0.05)
        assert app.diagnosis is not None
        assert app.diagnosis.findings[0].signature == "nccl-socket-ifname-no-interface"
        assert set(app.columns) >= {"spark-a"}
        assert "streaming" in str(app.status_bar.render())
        for node in nodes:
            await node.close()
