"""A finding whose node the cluster file names otherwise (trial 2026-12b §4 item 3): logs name hosts as NCCL
prints them, ``sparktui.toml`` names nodes as the user likes. One rule places a host on a node (its name,
its ssh host, an alias, a short name for a qualified one); a host it cannot place is said, with how to
choose, in the CLI (exit 2, one line) and in the cockpit (its "cannot run yet"), never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Static

from sparktui.core.cluster import Cluster, Deployment, Node, load, same_host
from sparktui.core.sources import bundle
from sparktui.tui.factory import make_app
from sparktui.tui.screens.playbook import PlaybookScreen
from sparktui.tui.session import Session
from tests.tui.conftest import make_bundle
from tests.tui.test_play_screen import SIZE, open_playbook
from tests.waiting import until

APP_LOG = (
    "spark-a:839:839 [0] NCCL INFO Bootstrap: Using eth0:192.0.2.2<0>\n"
    "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use\n"
)
CLUSTER = '[[nodes]]\nname = "node5"\nssh = "node5"\nrole = "head"\n'


def play(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(cwd / "config"), "XDG_STATE_HOME": str(cwd / "state")}
    return subprocess.run(
        [sys.executable, "-m", "sparktui", "play", "free-port", "--from", "app.log", "--dry-run", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "sparktui.toml").write_text(CLUSTER)
    (tmp_path / "app.log").write_text(APP_LOG)
    return tmp_path


def test_the_trials_command_says_which_node_it_cannot_place_and_how_to_choose(folder: Path) -> None:
    done = play(folder)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert "cannot place spark-a (where the finding is) on the nodes of" in done.stderr
    assert "(node5): choose the node with `sparktui play free-port --node NAME`" in done.stderr
    assert 'aliases = ["spark-a"]' in done.stderr


def test_node_chooses_where_it_runs(folder: Path) -> None:
    done = play(folder, "--node", "node5")
    assert done.returncode == 0, done.stderr
    assert 'node5 $ ss -Hltnp "sport = :"8000' in done.stdout
    assert "spark-a" not in done.stdout


def test_an_alias_in_the_cluster_file_places_it(folder: Path) -> None:
    (folder / "sparktui.toml").write_text(CLUSTER + 'aliases = ["spark-a"]\n')
    done = play(folder)
    assert done.returncode == 0, done.stderr
    assert 'node5 $ ss -Hltnp "sport = :"8000' in done.stdout


def test_the_ssh_host_places_it(folder: Path) -> None:
    (folder / "sparktui.toml").write_text(CLUSTER.replace('ssh = "node5"', 'ssh = "nvidia@spark-a.lan:2222"'))
    done = play(folder)
    assert done.returncode == 0, done.stderr
    assert 'node5 $ ss -Hltnp "sport = :"8000' in done.stdout


def test_one_rule_for_host_names(tmp_path: Path) -> None:
    assert same_host("spark-a", "SPARK-A.")
    assert same_host("spark-a", "spark-a.lan") and same_host("spark-a.lan", "spark-a")
    assert not same_host("spark-a", "spark-ab.lan") and not same_host("spark-a.lan", "spark-a.other")
    assert not same_host("192", "192.168.1.1") and not same_host("", "")
    path = tmp_path / "c.toml"
    path.write_text(
        '[[nodes]]\nname = "head"\nssh = "u@[fe80::1]:22"\nrole = "head"\n'
        '[[nodes]]\nname = "w"\nssh = "10.0.0.2"\naliases = ["gx10-b"]\n'
    )
    cluster = load(path)
    found = {h: getattr(cluster.node_for(h), "name", None) for h in ("head", "fe80::1", "10.0.0.2", "gx10-b", "x")}
    assert found == {"head": "head", "fe80::1": "head", "10.0.0.2": "w", "gx10-b": "w", "x": None}
    path.write_text('[[nodes]]\nname = "h"\nrole = "head"\naliases = ["a b"]\n')
    with pytest.raises(ValueError, match="aliases: needs an array of host names"):
        load(path)


async def test_the_cockpit_shows_it_instead_of_crashing(tmp_path: Path) -> None:
    loaded = bundle.load(make_bundle(tmp_path / "bundle", {"app.log": APP_LOG}))
    cluster = Cluster(tmp_path / "sparktui.toml", (Node("node5", "node5", "head"),), Deployment())
    (tmp_path / "books").mkdir()
    app = make_app(
        Session("t", loaded, speed=0),
        export_dir=tmp_path,
        playbook_dirs=[tmp_path / "books"],
        cluster=cluster,
    )
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        text = " ".join("\n".join(str(s.content) for s in screen.query(Static)).split())
        assert "Cannot run yet: free-port: cannot place spark-a (where the finding is)" in text
        assert "--node NAME" in text
        await pilot.press("r")
        await until(lambda: any("cannot run" in n.message for n in app._notifications), 20, "the refusal")
        assert isinstance(app.screen, PlaybookScreen) and app.is_running
