"""Running a playbook from the cockpit: the preview, the question in the screen, the run with its output,
the verification, the rollback offered after a failure, approvals, read-only mode and the audit log.

The playbook is written here into a temporary folder under the id ``free-port``, so it takes the place of
the built-in one as the remediation of the port-in-use finding the replayed bundle holds (key ``p``). Its
steps run ``on = "local"``: on this machine, no SSH needed. One last test runs over the SSH test nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from sparktui.cli import build_parser
from sparktui.core.audit import read_log
from sparktui.core.cluster import Cluster, Deployment, Node
from sparktui.core.dirs import state_dir
from sparktui.core.remedy.approvals import Approvals, cluster_id
from sparktui.core.sources import bundle
from sparktui.core.sources.follow import FollowedFile
from sparktui.tui.app import SparkApp
from sparktui.tui.factory import make_app
from sparktui.tui.screens.finding import FindingScreen
from sparktui.tui.screens.playbook import PlaybookScreen
from sparktui.tui.screens.values import ValuesScreen
from sparktui.tui.session import Session
from tests.servers.sshd import SshdCluster, start_cluster, stop_cluster

from ..waiting import settle, until
from .conftest import make_bundle, wait_done

SIZE = (160, 48)
BIND_ERROR = (
    "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use\n"
)


def write_book(
    folder: Path,
    marker: Path,
    *,
    risk: str = "changes-node",
    pattern: str = "^marked$",
    on: str = "local",
    verify_on: str = "local",
    suffix: str = "",
    extra: str = "",
    first: str = "",
) -> Path:
    """A playbook that writes ``marker`` (``suffix`` appended: ``-{node}`` for one per node), checks it with
    ``cat`` and ``pattern``, and removes it on rollback; ``extra`` is more TOML, after the first step, and
    ``first`` steps before it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "free-port.toml"
    path.write_text(
        f"""
id = "free-port"
title = "Write a marker"
key = "p"
risk = "{risk}"
description = "Writes a marker file; the rollback removes it."

[params.marker]
kind = "path"
from = ["ask"]
default = "{marker}"
{first}
[[steps]]
title = "write the marker"
on = "{on}"
run = "printf 'marked\\\\n' > {{marker}}{suffix}"
{extra}
[verify]
kind = "log"
on = "{verify_on}"
run = "cat {{marker}}{suffix}"
pattern = '{pattern}'
within = 1

[[rollback]]
title = "remove the marker"
on = "{on}"
run = "rm -f {{marker}}{suffix}"
"""
    )
    return folder


def cockpit(tmp_path: Path, books: Path, *, readonly: bool = False, cluster: Cluster | None = None) -> SparkApp:
    """The cockpit on a replayed bundle whose findings include a port already in use."""
    loaded = bundle.load(make_bundle(tmp_path / "bundle", {"server.log": BIND_ERROR}))
    return make_app(
        Session("t", loaded, speed=0),
        export_dir=tmp_path,
        playbook_dirs=[books],
        readonly=readonly,
        cluster=cluster,
    )


async def open_playbook(
    pilot: Pilot[None], app: SparkApp, signature: str = "server-port-in-use", key: str = "p"
) -> PlaybookScreen:
    """From the finding of ``signature``, the remediation on ``key`` (once a replay has ended: the findings
    stay put)."""
    if app.source.bundle is not None:
        await wait_done(pilot, app)
    await until(lambda: app.diagnosis is not None and signature in signatures(app), 20, f"the finding {signature}")
    app.findings_table.focus()
    app.findings_table.move_cursor(row=signatures(app).index(signature))
    await pilot.press("enter")
    await until(lambda: isinstance(app.screen, FindingScreen), 20, "the finding's screen")
    await settle(pilot)  # mounted, so it takes the key
    await pilot.press(key)
    await until(lambda: isinstance(app.screen, PlaybookScreen), 20, "the playbook's screen")
    assert isinstance(app.screen, PlaybookScreen)
    return app.screen


def signatures(app: SparkApp) -> list[str]:
    return [f.signature for f in app.diagnosis.findings] if app.diagnosis else []


def shown(screen: PlaybookScreen) -> str:
    """The text of the screen's parts, unwrapped."""
    return "\n".join(str(static.content) for static in screen.query(Static))


def log_lines(screen: PlaybookScreen) -> list[str]:
    return [strip.text for strip in screen.output.lines]


def audited() -> list[str]:
    return [f"{e.node} {e.step} {e.exit_code}" for e in read_log(state_dir() / "audit.jsonl")]


async def finished(pilot: Pilot[None], screen: PlaybookScreen) -> None:
    await until(lambda: screen.phase == "finished", 20, "the playbook finished")
    await settle(pilot)  # the log's last lines


async def test_preview_shows_the_exact_commands_verification_and_rollback(tmp_path: Path) -> None:
    marker = tmp_path / "out" / "marker"
    app = cockpit(tmp_path, write_book(tmp_path / "books", marker))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        text = shown(screen)
        assert f"printf 'marked\\n' > {marker}" in text
        assert f"rm -f {marker}" in text
        assert f"'^marked$' in the output of `cat {marker}` on local, up to 1 s" in text
        assert f"marker {marker}" in " ".join(text.split())  # the values used
        assert "changes-node" in text
        assert "r runs it (it asks first)" in text
        assert "r" in screen.active_bindings and "y" not in screen.active_bindings
        palette = [command.title for command in app.get_system_commands(app.screen)]
        assert "Run the playbook (asks first, unless approved)" in palette


async def test_a_missing_value_stops_it_until_e_gives_one_that_fits_its_kind(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    no_value = '\n[params.port]\nkind = "port"\ndescription = "the port"\nfrom = ["ask"]\n'
    app = cockpit(tmp_path, write_book(tmp_path / "books", marker, extra=no_value))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        text = shown(screen)
        assert "Cannot run yet: free-port: no value for port" in text
        assert "Cannot run: a value is missing or refused (above). e gives the values." in text
        await pilot.press("r")
        await settle(pilot)
        assert screen.phase == "ready" and not marker.exists() and audited() == []
        await pilot.press("e")
        await until(lambda: isinstance(app.screen, ValuesScreen), 20, "the values' screen")
        values = app.screen
        assert values.query_one("#value-marker", Input).value == str(marker)  # the value in use, shown
        assert values.query_one("#value-port", Input).has_focus  # the first one without a value
        await pilot.press("enter")
        await until(lambda: "needed" in str(values.query_one("#why-port", Static).content), 20, "why no port")
        assert app.screen is values and "needed: a port number" in str(values.query_one("#why-port", Static).content)
        await pilot.press(*"99999", "enter")
        await until(lambda: "refused" in str(values.query_one("#why-port", Static).content), 20, "the port refused")
        assert app.screen is values and "refused: not a port number: 99999" in str(
            values.query_one("#why-port", Static).content
        )
        values.query_one("#value-port", Input).value = "8001"
        await pilot.press("enter")
        await until(lambda: app.screen is screen and "r runs it" in shown(screen), 20, "the playbook, ready")
        assert "port 8001" in " ".join(shown(screen).split())
        assert app.given == {"free-port": {"port": "8001"}}  # kept for the next time it opens
        await pilot.press("r", "y")
        await finished(pilot, screen)
        assert marker.read_text() == "marked\n"


async def test_r_then_n_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    app = cockpit(tmp_path, write_book(tmp_path / "books", marker))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        await pilot.press("r")
        assert screen.phase == "asking"
        assert "Run 1 commands on local (changes-node)?" in shown(screen)
        assert {"y", "n", "a"} <= set(screen.active_bindings) and "r" not in screen.active_bindings
        await pilot.press("n")
        assert screen.phase == "ready" and "Nothing ran." in shown(screen)
        await settle(pilot)
        assert not marker.exists() and audited() == [] and app.ran == []


async def test_r_then_y_runs_verifies_audits_and_exports(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    app = cockpit(tmp_path, write_book(tmp_path / "books", marker))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        await pilot.press("r", "y")
        await finished(pilot, screen)
        assert marker.read_text() == "marked\n"
        assert "Succeeded, verified: '^marked$' seen in" in shown(screen)
        lines = log_lines(screen)
        assert any(line.strip() == "local marked" for line in lines)  # the verification's output, by node
        assert any("✓ step 1/1  local: write the marker: ok" in line for line in lines)
        assert any("✓ verification  local: verify: passed" in line for line in lines)
        assert audited() == ["local write the marker 0", "local verify 0"]
        assert [e.step for e in app.ran] == ["write the marker", "verify"]
        await pilot.press("escape")  # closes, now that it finished
        assert isinstance(app.screen, FindingScreen)
        await pilot.press("escape", "x")
        await until(lambda: any(tmp_path.glob("sparktui-report-*/bundle/audit.jsonl")), 20, "the export")
        (exported,) = tmp_path.glob("sparktui-report-*/bundle/audit.jsonl")
        assert [e.step for e in read_log(exported)] == ["write the marker", "verify"]
        assert not (tmp_path / "bundle" / "audit.jsonl").exists()  # the replayed bundle is left alone


async def test_a_failed_check_before_any_change_offers_no_rollback(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    check = '\n[[steps]]\ntitle = "precheck"\non = "local"\nchanges = false\nrun = "false"\n'
    app = cockpit(tmp_path, write_book(tmp_path / "books", marker, first=check))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        await pilot.press("r", "y")
        await finished(pilot, screen)
        assert "Failed before changing anything (only checks ran): local: precheck: exit 1" in shown(screen)
        assert audited() == ["local precheck 1"] and not marker.exists()


@pytest.mark.parametrize(("key", "kept"), [("b", False), ("k", True)])
async def test_a_failed_verification_offers_the_rollback(tmp_path: Path, key: str, kept: bool) -> None:
    marker = tmp_path / "marker"
    app = cockpit(tmp_path, write_book(tmp_path / "books", marker, pattern="^never$"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        await pilot.press("r", "y")
        await until(lambda: screen.phase == "offering", 20, "the rollback offered")
        text = shown(screen)
        assert "verification failed: not within 1 s: '^never$' not yet in" in text
        assert "b run the rollback (1 commands) · k keep things as they are" in text
        await pilot.press("escape")
        assert app.screen is screen  # no closing while the run waits
        await pilot.press(key)
        await finished(pilot, screen)
        assert marker.exists() is kept
        final = "Failed, left as is (the rollback was declined)" if kept else "Failed, rolled back"
        assert final in shown(screen)
        undone = [] if kept else ["local remove the marker 0"]
        assert audited() == ["local write the marker 0", "local verify 1", *undone]


async def test_always_remembers_and_the_next_run_does_not_ask(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    app = cockpit(tmp_path, write_book(tmp_path / "books", marker))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        await pilot.press("r", "a")
        await finished(pilot, screen)
        assert Approvals.default().granted(cluster_id(None, ("spark-a",)), screen.playbook)
        marker.unlink()
        await pilot.press("escape")
        screen = await open_playbook_again(pilot, app)
        assert "approved before: it will not ask" in shown(screen)
        await pilot.press("r")
        assert screen.phase != "asking"
        await finished(pilot, screen)
        assert marker.exists()
        assert any(line.startswith("approved before") for line in log_lines(screen))


async def open_playbook_again(pilot: Pilot[None], app: SparkApp) -> PlaybookScreen:
    await pilot.press("p")
    await until(lambda: isinstance(app.screen, PlaybookScreen), 20, "the playbook's screen")
    assert isinstance(app.screen, PlaybookScreen)
    return app.screen


async def test_read_only_mode_refuses_a_playbook_that_changes_nodes(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    app = cockpit(tmp_path, write_book(tmp_path / "books", marker), readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        assert (
            "Read-only mode: this playbook changes the node (risk changes-node), so it cannot run from here"
            in shown(screen)
        )
        await pilot.press("r")
        refused = "free-port changes the node (risk changes-node): refused in read-only mode"
        await until(lambda: any(refused in n.message for n in app._notifications), 20, "the refusal's notification")
        assert screen.phase == "ready"
        assert not marker.exists() and audited() == []


def test_the_cockpit_commands_take_readonly() -> None:
    for argv in (["open", "--readonly"], ["demo", "--readonly"], ["replay", "BUNDLE", "--readonly"]):
        assert build_parser().parse_args(argv).readonly
    assert not build_parser().parse_args(["open"]).readonly


async def test_read_only_mode_runs_a_read_only_playbook(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    app = cockpit(tmp_path, write_book(tmp_path / "books", marker, risk="read-only"), readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        await pilot.press("r", "y")
        await finished(pilot, screen)
        assert marker.exists() and "Succeeded" in shown(screen)


async def test_escape_sequences_from_a_node_are_shown_inert(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    hostile = """
[[steps]]
title = "print escapes"
on = "local"
run = \'\'\'printf '\\033[2J\\033]0;pwned\\007safe text\\001\\n'\'\'\'
"""
    app = cockpit(tmp_path, write_book(tmp_path / "books", marker, extra=hostile))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        await pilot.press("r", "y")
        await finished(pilot, screen)
        lines = log_lines(screen)
        (printed,) = [line for line in lines if "safe text" in line]
        assert printed.strip() == "local safe text\\x01"
        assert not any(c in line for line in lines for c in "\x1b\x07\x01")


async def test_a_live_session_records_the_run_in_its_incident_once(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    log = tmp_path / "server.log"
    log.write_text(BIND_ERROR)
    app = make_app(
        Session("live", live=(FollowedFile(log, "server.log", poll=0.02),)),
        export_dir=tmp_path,
        playbook_dirs=[write_book(tmp_path / "books", marker)],
    )
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        await pilot.press("r", "y")
        await finished(pilot, screen)
        assert app.pipeline.spool is not None
        spool = app.pipeline.spool
        assert [e.step for e in read_log(spool.path / "audit.jsonl")] == ["write the marker", "verify"]
        await pilot.press("escape", "escape", "x")
        await until(lambda: any(tmp_path.glob("sparktui-report-*/bundle/audit.jsonl")), 20, "the export")
        (exported,) = tmp_path.glob("sparktui-report-*/bundle/audit.jsonl")
        assert [e.step for e in read_log(exported)] == ["write the marker", "verify"]


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdCluster]:
    cluster = start_cluster(Path(tmp_path_factory.mktemp("sshd")))
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


async def test_over_ssh_on_every_node_of_the_cluster(
    nodes: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nodes.home_for(tmp_path / "home", monkeypatch)
    cluster = Cluster(
        tmp_path / "sparktui.toml", (Node("node-a", "node-a", "head"), Node("node-b", "node-b", "worker")), Deployment()
    )
    books = write_book(tmp_path / "books", tmp_path / "marker", on="all", verify_on="head", suffix="-{node}")
    app = cockpit(tmp_path, books, cluster=cluster)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        await pilot.press("r", "y")
        await finished(pilot, screen)
        assert "Succeeded, verified" in shown(screen)
        assert (tmp_path / "marker-node-a").exists() and (tmp_path / "marker-node-b").exists()
        assert audited() == ["node-a write the marker 0", "node-b write the marker 0", "node-a verify 0"]


SERVE_BOOK = """
id = "free-port"
title = "Serve with vLLM"
key = "p"
risk = "restarts"
description = "Starts vllm serve as translated from the cluster file's SGLang launch."

[params.serve]
kind = "text"
from = ["sglang:launch", "ask"]

[[steps]]
title = "serve"
on = "local"
run = "echo {serve}"
"""


async def test_a_translated_launch_shows_what_did_not_carry_over(tmp_path: Path) -> None:
    books = tmp_path / "books"
    books.mkdir()
    (books / "free-port.toml").write_text(SERVE_BOOK)
    launch = "python3 -m sglang.launch_server --model-path org/m --tp 2 --attention-backend flashinfer"
    cluster = Cluster(
        tmp_path / "sparktui.toml", (Node("spark-a", "spark-a", "head"),), Deployment("sglang", launch=launch)
    )
    app = cockpit(tmp_path, books, cluster=cluster)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_playbook(pilot, app)
        text = shown(screen)
        assert "vllm serve org/m --tensor-parallel-size 2 --distributed-executor-backend ray" in text
        assert "serve: translated from the cluster file's SGLang launch" in text
        assert "dropped --attention-backend flashinfer" in text
