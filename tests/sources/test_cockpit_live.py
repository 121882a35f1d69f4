"""The cockpit on live test nodes: logs followed over real SSH fill the node panes as they are written."""

from __future__ import annotations

from pathlib import Path

from sparktui.core.sources.ssh import SshFileSource
from sparktui.tui.factory import make_app
from sparktui.tui.session import Session
from tests.servers.sshd import SshdCluster

from ..conftest import FIXTURES
from ..waiting import until

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
    app = make_app(Session("ssh", live=tuple(sources)))
    async with app.run_test(size=(160, 48)):
        await until(lambda: len(app.nodes_area.columns) == 2, 10, "both nodes' columns")
        for path, lines in written.items():
            with path.open("a") as fh:
                fh.writelines(lines[5:])
        await until(
            lambda: (
                app.diagnosis
                and app.diagnosis.findings[:1]
                and app.diagnosis.findings[0].signature == "nccl-socket-ifname-no-interface"
            ),
            15,
            "the socket interface finding",
        )
        assert set(app.nodes_area.nodes.names) >= {"spark-a"}  # the NCCL host its lines name; its column a page away
        assert "streaming" in str(app.status_bar.render())
        for node in nodes:
            await node.close()


async def test_a_changed_host_key_and_its_fix_are_shown_in_full(sshd_cluster: SshdCluster, tmp_path: Path) -> None:
    """Trial #90: the status bar cut the refusal at "has CHANGED (now"; the sources screen has all of it,
    the command that fixes it included."""
    from sparktui.tui.screens.sources import SourcesScreen

    known = tmp_path / "known_hosts"
    known.write_text(sshd_cluster.known_hosts_line("node-a", key_of="node-b"))
    node = sshd_cluster.node("node-a", known_hosts=known)
    app = make_app(Session("ssh", live=(SshFileSource(node, "/etc/hostname", name="node-a:hostname"),)))
    async with app.run_test(size=(160, 45)) as pilot:
        await until(lambda: app.errors, 15, "the refusal")
        (error,) = app.errors.values()
        a = sshd_cluster["node-a"]
        assert f"the host key of [{a.address}]:{a.port} has CHANGED" in error and "ssh-keygen -R" in error
        assert error not in str(app.status_bar.render())
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, SourcesScreen)
        box = app.screen.detail.region  # the source under the cursor, as wrapped on screen, read back
        rows = [strip.text[box.x : box.right] for strip in app.screen._compositor.render_strips()]
        shown = " ".join(" ".join(rows[box.y : box.bottom]).split())
        assert " ".join(f"last error: {error}".split()) in shown
    await node.close()
