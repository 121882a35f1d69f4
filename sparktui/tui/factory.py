"""The one way the cockpit is built, for ``sparktui open`` / ``demo`` / ``replay``, the tests and the benches:
the session chosen (None: the welcome screen, which offers the demo) and the settings it runs with."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path

from sparktui.core import catalogue as cat
from sparktui.core.cluster import Cluster
from sparktui.core.sources import bundle
from sparktui.tui.app import SparkApp
from sparktui.tui.session import Session


def demo(path: Path, speed: float) -> Session:
    """The demo bundle at ``path``, replayed ``speed`` times as fast as it happened."""
    return Session(f"demo: {path.name}", bundle.load(path), speed=speed)


def make_app(
    session: Session | None,
    *,
    catalogue: cat.Catalogue | None = None,
    demo_at: Path | None = None,
    demo_speed: float = 1.0,
    cluster: Cluster | None = None,
    readonly: bool = False,
    spool_live: bool = True,
    spool_raw: bool = False,
    export_dir: Path | None = None,
    playbook_dirs: Sequence[Path] = (),
    kind: type[SparkApp] = SparkApp,
) -> SparkApp:
    """The cockpit on ``session``, or (None) the welcome screen, whose demo (the bundle at ``demo_at``, if
    any) is loaded only if chosen. ``catalogue``: the built-in one unless given (with the user's folders, say).
    ``kind``: SparkApp, or a subclass that measures it (the benches)."""
    return kind(
        session,
        catalogue if catalogue is not None else cat.load(),
        demo=partial(demo, demo_at, demo_speed) if session is None and demo_at is not None else None,
        cluster=cluster,
        readonly=readonly,
        spool_live=spool_live,
        spool_raw=spool_raw,
        export_dir=export_dir,
        playbook_dirs=playbook_dirs,
    )
