"""What the cockpit shows, and the one pipeline that reads it."""

from __future__ import annotations

from dataclasses import dataclass

from sparktui.core import catalogue as cat
from sparktui.core.clock import ReplayClock
from sparktui.core.pipeline import Pipeline
from sparktui.core.sources.base import LiveSource, SourceGroup
from sparktui.core.sources.bundle import Bundle
from sparktui.core.sources.replay import replay
from sparktui.core.sources.spool import Spool
from sparktui.core.text import display


@dataclass(frozen=True, slots=True)
class Session:
    """What the app shows: a bundle replayed at its own pace, or live sources (followed files, SSH, Docker
    and Ray streams)."""

    title: str
    bundle: Bundle | None = None
    live: tuple[LiveSource | SourceGroup, ...] = ()
    speed: float = 0.0
    nodes: tuple[tuple[str, str], ...] = ()  # the SSH nodes its live sources read from: (name, [user@]host[:port])

    def __post_init__(self) -> None:
        # The title holds the sources' names as given (a glob may bring a file named to drive a terminal) or a
        # bundle's: shown in the header and kept in the spool, inert as every name is (see text.Inert).
        object.__setattr__(self, "title", display(self.title))

    def pipeline(self, catalogue: cat.Catalogue, *, spool: bool, raw: bool) -> tuple[Pipeline, ReplayClock | None]:
        """The one pipeline over the session's sources: live ones (spooled when ``spool``, secrets kept when
        ``raw``), or the bundle at its pace, with the clock that paces it (none yet for the welcome screen)."""
        if self.bundle is None:
            kept = Spool.new(self.title, raw=raw) if spool and self.live else None
            return Pipeline(catalogue, self.live, spool=kept), None
        clock = ReplayClock(self.speed)
        return Pipeline(catalogue, replay(self.bundle, clock), clock=clock), clock
