from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from sparktui.core.sources import bundle
from sparktui.tui.app import SparkApp
from sparktui.tui.factory import make_app
from sparktui.tui.session import Session

from ..conftest import FIXTURES
from ..waiting import settle, until

HANG = FIXTURES / "nccl" / "two-hosts-second-group-not-joined"
#: Four ranks on two hosts, rank 3 never joining the others' first collective of a split communicator.
LAGGARD = FIXTURES / "nccl4" / "two-hosts-2ranks-own-hostid-first-collective-hang"


def make_bundle(root: Path, extra: dict[str, str] | None = None, logs: Mapping[str, Path] | None = None) -> Path:
    """A bundle of real captured logs, lines 100 ms apart: ``logs`` maps each source's name ("node/file")
    to its log; by default the two-host hang, each rank's log as one node."""
    manifest = ["format = 1", 'title = "second communicator never joined"']
    logs = logs or {"spark-a/nccl.log": HANG / "rank0.log", "spark-b/nccl.log": HANG / "rank1.log"}
    for name, source in logs.items():
        log = root / name
        log.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, log)
        count = log.read_bytes().count(b"\n")
        log.with_name(log.name + ".times").write_text("\n".join(str(i * 100) for i in range(count)) + "\n")
        manifest += ["[[sources]]", f'name = "{name}"', f'node = "{log.parent.name}"']
    for name, text in (extra or {}).items():
        (root / name).write_text(text)
        manifest += ["[[sources]]", f'name = "{name}"', 'node = "spark-a"']
    (root / "bundle.toml").write_text("\n".join(manifest) + "\n")
    return root


@pytest.fixture
def hang_app(tmp_path: Path) -> SparkApp:
    loaded = bundle.load(make_bundle(tmp_path / "bundle"))
    return make_app(Session("test", loaded, speed=0), export_dir=tmp_path)


async def wait_done(pilot: Pilot[Any], app: SparkApp) -> None:
    """Until the replay has ended (its last batch handled before) and the screen settled."""
    await until(lambda: app.done, 20, "the replay's end")
    await settle(pilot)
