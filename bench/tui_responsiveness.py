"""How the cockpit holds up under a flood of log lines: line-to-screen and key-to-screen delays.

    python bench/tui_responsiveness.py [--rate 10000] [--seconds 10] [--nodes 4]

Streams real captured log lines (the fixtures, cycled) from ``--nodes`` live sources at ``--rate`` lines
per second in total into the real app (headless, Textual's test driver), and reports:
  * line-to-screen: from the moment the pipeline received a line from its source to the moment the app has
    put it into its pane (the pipeline's frame included), median and 99th percentile over every line after
    the first second (the columns and panes being built);
  * key-to-screen: from pressing `?` to the help screen being on screen, and `escape` back, repeated
    while the flood goes on;
  * how many lines arrived, against how many were sent (nothing may be dropped).
The reference side by side is the same run at a tenth of the rate. A short run before both takes the
process's one-time costs (imports, styles, the pattern database) out of the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

from textual import events

from sparktui.core import catalogue as cat
from sparktui.core.sources.base import Cursor, LiveSource, Received
from sparktui.tui.app import Session, SparkApp
from sparktui.tui.messages import LinesArrived
from sparktui.tui.screens.help import HelpScreen

ROOT = Path(__file__).resolve().parents[1]
#: Seconds at the start (the node columns and panes being built) left out of every figure.
WARM_UP = 1.0


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
        self.warm_after = 0.0  # lines received before this (perf_counter) are the start-up, not measured

    def on_lines_arrived(self, message: LinesArrived) -> None:
        super().on_lines_arrived(message)
        self.arrived += message.count
        if message.received_at >= self.warm_after:  # each line's own delay, once the columns are up
            self.delays += [time.perf_counter() - message.received_at] * message.count


async def run(rate: float, seconds: float, nodes: int) -> dict[str, float]:
    lines = corpus()
    sources = [Flood(f"node-{i}", lines[i * 997 :] + lines[: i * 997], rate / nodes, seconds) for i in range(nodes)]
    app = Measured(Session("bench", live=tuple(sources)), cat.load())
    keys: list[float] = []
    async with app.run_test(size=(200, 60)) as pilot:
        deadline = time.perf_counter() + seconds
        app.warm_after = time.perf_counter() + WARM_UP
        await pilot.pause(WARM_UP)
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
    return {
        "sent": sent,
        "arrived": app.arrived,
        "line_p50": percentile(app.delays, 50),
        "line_p99": percentile(app.delays, 99),
        "key_p50": percentile(keys, 50),
        "key_p99": percentile(keys, 99),
        "key_max": percentile(keys, 100),
    }


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile of ``values`` (seconds), in milliseconds."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * p / 100), len(ordered) - 1)] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=10_000, help="lines per second in total (default 10000)")
    parser.add_argument("--seconds", type=float, default=10, help="how long to flood (default 10)")
    parser.add_argument("--nodes", type=int, default=4, help="number of sources / node columns (default 4)")
    args = parser.parse_args()
    print(
        f"{'run':<26}{'lines sent':>12}{'arrived':>10}{'line p50 ms':>13}{'line p99 ms':>13}"
        f"{'key p50 ms':>12}{'key p99 ms':>12}{'key max ms':>12}"
    )
    asyncio.run(run(args.rate / 10, 3, args.nodes))  # once before measuring: imports, styles, pattern cache
    for label, rate in (("reference (rate / 10)", args.rate / 10), (f"{args.rate:,.0f} lines/s", args.rate)):
        r = asyncio.run(run(rate, args.seconds, args.nodes))
        print(
            f"{label:<26}{r['sent']:>12,.0f}{r['arrived']:>10,.0f}{r['line_p50']:>13.1f}{r['line_p99']:>13.1f}"
            f"{r['key_p50']:>12.1f}{r['key_p99']:>12.1f}{r['key_max']:>12.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
