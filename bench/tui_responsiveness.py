"""How the cockpit holds up under a flood of log lines: line-to-screen and key-to-screen delays.

    python bench/tui_responsiveness.py [--rate 10000] [--seconds 10] [--nodes 4]

Streams real captured log lines (the fixtures, cycled) from ``--nodes`` live sources at ``--rate`` lines
per second in total into the real app (headless, Textual's test driver), and reports:
  * line-to-screen: from the moment the app received a line from its source to the moment it has put it
    into its pane (the batching interval included), median and 99th percentile;
  * key-to-screen: from pressing `?` to the help screen being on screen, and `escape` back, repeated
    while the flood goes on;
  * how many lines arrived, against how many were sent (nothing may be dropped).
The reference side by side is the same run at a tenth of the rate.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path

from textual import events

from sparktui.core import catalogue as cat
from sparktui.core.sources.base import Cursor, LiveSource, Received
from sparktui.tui.app import BatchArrived, Session, SparkApp
from sparktui.tui.screens.help import HelpScreen

ROOT = Path(__file__).resolve().parents[1]


def corpus() -> list[str]:
    lines: list[str] = []
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*.log")):
        lines += path.read_text(errors="replace").splitlines()
    return lines


class Flood(LiveSource):
    """Yields ``rate`` lines per second in batches every 10 ms, for ``seconds``."""

    def __init__(self, name: str, lines: list[str], rate: float, seconds: float) -> None:
        self.name, self.node = name, name
        self.lines, self.rate, self.seconds = lines, rate, seconds
        self.sent = 0

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        start = time.perf_counter()
        index = int(cursor or 0)
        while time.perf_counter() - start < self.seconds:
            due = int((time.perf_counter() - start) * self.rate)
            if due > self.sent:
                batch = tuple(self.lines[(index + i) % len(self.lines)] for i in range(due - self.sent))
                index += len(batch)
                self.sent = due
                yield Received(batch, index)
            await asyncio.sleep(0.01)


class Measured(SparkApp):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.delays: list[float] = []
        self.arrived = 0

    def on_batch_arrived(self, message: BatchArrived) -> None:
        super().on_batch_arrived(message)
        self.arrived += len(message.batch.lines)
        if message.batch.lines:
            self.delays.append(time.perf_counter() - message.batch.received_at)


async def run(rate: float, seconds: float, nodes: int) -> dict[str, float]:
    lines = corpus()
    sources = [Flood(f"node-{i}", lines[i * 997 :] + lines[: i * 997], rate / nodes, seconds) for i in range(nodes)]
    app = Measured(Session("bench", live=tuple(sources)), cat.load())
    keys: list[float] = []
    async with app.run_test(size=(200, 60)) as pilot:
        deadline = time.perf_counter() + seconds
        await pilot.pause(1.0)
        while time.perf_counter() < deadline - 1:
            # Post the key as the terminal driver would; the test driver's press() waits for the app to
            # go idle first, which a flood never lets it do.
            pressed = time.perf_counter()
            app.post_message(events.Key("question_mark", "?"))
            while not isinstance(app.screen, HelpScreen):
                await asyncio.sleep(0.001)
            keys.append(time.perf_counter() - pressed)
            app.post_message(events.Key("escape", None))
            while isinstance(app.screen, HelpScreen):
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.2)
        while time.perf_counter() < deadline + 2 and app.arrived < sum(s.sent for s in sources):
            await pilot.pause(0.1)
        sent = sum(s.sent for s in sources)
    delays = sorted(app.delays)
    return {
        "sent": sent,
        "arrived": app.arrived,
        "line_p50": statistics.median(delays) * 1000 if delays else float("nan"),
        "line_p99": delays[int(len(delays) * 0.99)] * 1000 if delays else float("nan"),
        "key_p50": statistics.median(keys) * 1000 if keys else float("nan"),
        "key_max": max(keys) * 1000 if keys else float("nan"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=10_000, help="lines per second in total (default 10000)")
    parser.add_argument("--seconds", type=float, default=10, help="how long to flood (default 10)")
    parser.add_argument("--nodes", type=int, default=4, help="number of sources / node columns (default 4)")
    args = parser.parse_args()
    print(
        f"{'run':<26}{'lines sent':>12}{'arrived':>10}{'line p50 ms':>13}{'line p99 ms':>13}"
        f"{'key p50 ms':>12}{'key max ms':>12}"
    )
    for label, rate in (("reference (rate / 10)", args.rate / 10), (f"{args.rate:,.0f} lines/s", args.rate)):
        r = asyncio.run(run(rate, args.seconds, args.nodes))
        print(
            f"{label:<26}{r['sent']:>12,.0f}{r['arrived']:>10,.0f}{r['line_p50']:>13.1f}{r['line_p99']:>13.1f}"
            f"{r['key_p50']:>12.1f}{r['key_max']:>12.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
