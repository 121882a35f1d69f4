"""The cockpit on the spark test nodes: an app whose cluster is the two nodes, and the keys a user presses on a
remediation's screen (values typed in on `e`, then `r` `y`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

from sparktui.core.cluster import Cluster, Deployment, Network, Node
from sparktui.core.sources import bundle
from sparktui.tui.app import SparkApp
from sparktui.tui.factory import make_app
from sparktui.tui.screens.playbook import PlaybookScreen
from sparktui.tui.screens.values import ValuesScreen
from sparktui.tui.session import Session
from tests.servers.sparks import IFACE, Sparks
from tests.tui.conftest import make_bundle
from tests.tui.test_play_screen import shown
from tests.waiting import until

ENGINE = Deployment(containers=("vllm_node",))  # the engine container on each node, nothing else known
NO_NETWORK = Network()
#: vLLM's refusal when tensor parallelism spans nodes without the Ray executor (a finding with three
#: remediations: relaunch, recreate, or edit the launch script).
WORLD_SIZE = "ValueError: World size (2) is larger than the number of available GPUs (1) in this node.\n"


def link(sparks: Sparks) -> Network:
    """The cluster file's [network] for the spark nodes: their test bridge, and the head's address on it."""
    return Network(IFACE, sparks.head.address, "")


def spark_cockpit(
    sparks: Sparks,
    tmp_path: Path,
    extra: dict[str, str] | None = None,
    *,
    deployment: Deployment = ENGINE,
    network: Network = NO_NETWORK,
    books: Sequence[Path] = (),
) -> SparkApp:
    """The cockpit on the replayed two-node hang (plus ``extra`` logs on spark-a), with the spark nodes as
    its cluster, and ``deployment`` and ``network`` as its cluster file's; ``books`` are playbook folders
    over the built-in ones."""
    loaded = bundle.load(make_bundle(tmp_path / "bundle", extra))
    nodes = tuple(Node(n.name, n.name, "head" if n is sparks.head else "worker") for n in sparks)
    cluster = Cluster(tmp_path / "sparktui.toml", nodes, deployment, network)
    return make_app(Session("t", loaded, speed=0), export_dir=tmp_path, cluster=cluster, playbook_dirs=books)


async def type_in(pilot: Pilot[None], screen: PlaybookScreen, values: Mapping[str, str]) -> None:
    """Press `e`, type ``values`` into their fields and apply; back on the screen once it can run."""
    app = screen.app
    await pilot.press("e")
    await until(lambda: isinstance(app.screen, ValuesScreen), 20, "the values' screen")
    for name, value in values.items():
        app.screen.query_one(f"#value-{name}", Input).value = value
    await pilot.press("enter")
    await until(lambda: app.screen is screen and "r runs it" in shown(screen), 30, "the playbook, ready")


async def run(pilot: Pilot[None], screen: PlaybookScreen, seconds: float) -> str:
    """Press `r` `y` and wait until the run has ended or offers its rollback; what the screen shows then."""
    await pilot.press("r", "y")
    await until(lambda: screen.phase in ("finished", "offering"), seconds, "the run's end or its rollback offer")
    return shown(screen)


async def roll_back(pilot: Pilot[None], screen: PlaybookScreen, seconds: float) -> str:
    """Answer `b` to the rollback offer and wait until it has run; what the screen shows then."""
    assert screen.phase == "offering"
    await pilot.press("b")
    await until(lambda: screen.phase == "finished", seconds, "the rollback run")
    return shown(screen)
