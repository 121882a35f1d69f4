"""A server's ``/metrics``, read every few seconds, as a live source: one line per reading.

Each reading becomes the line of :mod:`sparktui.core.serving.record`, so it goes where every other line goes:
the node's column, the spool, the scans (which hand the readings to the stall rule and the serving health
of the status bar) and replays. A server that cannot be reached, answers with an error or holds no vLLM
metrics makes the source retry with back-off, its state saying why; readings resume where they stopped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from urllib.parse import urlsplit

from sparktui.core.errors import Refused, Unavailable
from sparktui.core.serving import record
from sparktui.core.serving.http import Connect, HttpError, direct, request, split
from sparktui.core.serving.metrics import read_vllm
from sparktui.core.sources.base import Cursor, LiveSource, Received

#: Seconds between two readings (what Spark Pulse samples at; vLLM's own stats line comes every 10 s).
INTERVAL = 5.0


def metrics_url(arg: str) -> str:
    """The ``/metrics`` URL a source argument names: ``metrics://host:port`` or ``http://host:port[/path]``
    (``/metrics`` where no path is given). Raises :class:`Refused` with a one-line reason."""
    scheme, _, rest = arg.partition("://")
    if scheme not in ("metrics", "http") or not rest:
        raise Refused(f"{arg}: expected metrics://host:port or http://host:port/metrics")
    url = f"http://{rest}"
    _, _, path = split(url)  # refuses a bad port
    if scheme == "metrics" and urlsplit(url).port is None:
        raise Refused(f"{arg}: expected metrics://host:port (the server's port, 8000 for vllm serve)")
    netloc = urlsplit(url).netloc
    return f"http://{netloc}{path if path != '/' else '/metrics'}"


class MetricsSource(LiveSource):
    """Reads ``url`` every ``interval`` seconds over ``connect``; the node is the URL's host unless given.
    ``clock`` gives the time each line carries (this machine's local time)."""

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        node: str | None = None,
        interval: float = INTERVAL,
        connect: Connect = direct,
        clock: Callable[[], datetime] = datetime.now,
    ) -> None:
        host, port, _ = split(url)
        self.url = url
        self.endpoint = f"{host}:{port}"
        self.name = name or url
        self.node = node or host
        self.interval = interval
        self.connect = connect
        self.clock = clock

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        count = int(cursor) if isinstance(cursor, int) else 0
        while True:
            started = time.monotonic()
            try:
                answer = await request(self.connect, "GET", self.url, timeout=max(self.interval * 2, 10.0))
            except HttpError as exc:
                raise Unavailable(str(exc)) from None
            if answer.status != 200:
                raise Unavailable(f"GET {self.url}: HTTP {answer.status}")
            reading = read_vllm(answer.body.decode(errors="replace"))
            if reading is None:
                raise Unavailable(f"GET {self.url}: no vLLM metrics in the answer")
            count += 1
            yield Received((record.line(self.endpoint, reading, self.clock()),), count)
            await asyncio.sleep(max(self.interval - (time.monotonic() - started), 0.0))
