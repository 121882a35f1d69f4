"""How the cockpit holds up under a flood of log lines: line-to-screen and key-to-screen delays.

    python bench/tui_responsiveness.py [--rate 10000] [--seconds 10] [--nodes 4] [--json OUT]

Streams real captured log lines (the fixtures, cycled; see :func:`streams`) from ``--nodes`` live sources
at ``--rate`` lines per second in total into the real app (headless, Textual's test driver, on a terminal
wide enough for every node's column side by side), and reports:
  * line-to-screen: from the moment a line was due at its source (line n of a source is due n / rate
    seconds after the source started, so a source held back by a full queue counts against the app) to
    the first frame painted whose pane shows that line or a later one of the same source (a flood
    scrolls most lines past between two frames; they count as shown when the frame shows what came
    after them). Median and 99th percentile over every line due after the first second (the columns and
    panes being built). Lines never painted by the end count with the time waited so far, and are
    counted under "not shown". A line still waiting while the help screen covered the cockpit (from its
    first frame to the cockpit's first frame after it) cannot be on screen before the help goes: such
    lines are left out of these figures (their delay is the key's, measured below) and counted under
    "covered";
  * key-to-screen: from the key event being posted to the app (as the terminal driver posts it) to the
    first frame painted with the screen it opens: `?` until a frame of the help screen, `escape` until a
    frame of the cockpit again; repeated every half second or so while the flood goes on;
  * how many lines reached their panes, against how many were sent (nothing may be dropped);
  * the CPU the run took, in per cent of one core: the screen's thread (the app, its handlers and
    every frame) and the rest (the pipeline's thread with the sources, the app's worker), and the
    machine's load average at the end: the delays depend on how much of the machine others leave.
"A frame painted" is Textual's compositor handing its update to the driver (``App._display``); the
headless driver then writes nothing, so this bench also turns each update into the terminal's escape
sequences, as a real terminal's driver does, and counts that time too.

The reference side by side is the same run at a tenth of the rate. A short run before both takes the
process's one-time costs (imports, styles, the pattern database) out of the figures. The goal (issue 13):
at 10,000 lines/s over 4 nodes, key p99 under 50 ms and line p99 under 250 ms; the last lines say whether
the loaded run meets it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from bisect import bisect_right
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import RenderableType
from textual import events
from textual._compositor import CompositorUpdate
from textual.screen import Screen
from textual.strip import Strip

from sparktui.core.classify import classify
from sparktui.core.sources.base import Cursor, LiveSource, Received
from sparktui.tui.app import SparkApp
from sparktui.tui.factory import make_app
from sparktui.tui.messages import LinesArrived
from sparktui.tui.screens.help import HelpScreen
from sparktui.tui.session import Session
from sparktui.tui.widgets.logpane import LogPane
from sparktui.tui.widgets.nodes_area import NARROW_COLUMN

ROOT = Path(__file__).resolve().parents[1]
#: Seconds at the start (the node columns and panes being built) left out of every figure.
WARM_UP = 1.0
#: Seconds between closing the help and pressing `?` again: the help then covers the cockpit about a
#: tenth of the time, and a quarter of the lines wait through it (counted apart, see "covered").
KEYS_APART = 0.5
#: Seconds to wait after the flood for the last lines to be painted.
DRAIN = 5.0
#: The goal of issue 13, for the loaded run (milliseconds).
KEY_P99_GOAL, LINE_P99_GOAL = 50.0, 250.0


def corpus() -> list[str]:
    lines: list[str] = []
    for path in sorted((ROOT / "tests" / "fixtures").rglob("*.log")):
        lines += path.read_text(errors="replace").splitlines()
    return lines


def streams(nodes: int) -> list[tuple[str, list[str]]]:
    """Each source's node and lines: the ``nodes`` hosts the fixtures name most (a line naming its host
    goes to that host's column, whatever source it came from), each with the lines that name it or no
    host at all, so that ``nodes`` sources make ``nodes`` columns."""
    lines = corpus()
    named = [classify(line).node for line in lines]
    hosts = [host for host, _ in Counter(n for n in named if n).most_common(nodes)]
    hosts += [f"node-{i}" for i in range(len(hosts), nodes)]
    result = []
    for i, host in enumerate(hosts):
        own = [line for line, n in zip(lines, named, strict=True) if n in (None, host)]
        result.append((host, own[i * 997 :] + own[: i * 997]))
    return result


class Flood(LiveSource):
    """Yields ``rate`` lines per second in batches every 10 ms, ``rate * seconds`` lines in all; a batch
    held back (the pipeline's queue full) is followed by every line that fell due meanwhile."""

    def __init__(self, name: str, lines: list[str], rate: float, seconds: float) -> None:
        self.name, self.node = name, name
        self.lines, self.rate = lines, rate
        self.total = int(rate * seconds)
        self.sent = 0
        self.start = 0.0  # perf_counter when streaming began: line n is due at start + n / rate

    def due(self, number: int) -> float:
        return self.start + number / self.rate

    async def stream(self, cursor: Cursor | None) -> AsyncIterator[Received]:
        self.start = time.perf_counter()
        index = int(cursor or 0)
        while self.sent < self.total:
            due = min(int((time.perf_counter() - self.start) * self.rate), self.total)
            if due > self.sent:
                batch = tuple(self.lines[(index + i) % len(self.lines)] for i in range(due - self.sent))
                index += len(batch)
                self.sent = due
                yield Received(batch, index)
            await asyncio.sleep(0.01)


#: For every pane, per source, the highest line number drawn since the last frame.
drawn: dict[LogPane, dict[str, int]] = {}
_render_line = LogPane.render_line


def _watched_render_line(pane: LogPane, y: int) -> Strip:
    """LogPane.render_line, noting which line the row showed."""
    strip = _render_line(pane, y)
    index = pane.scroll_offset.y + y
    if 0 <= index < len(pane.shown):
        line = pane.shown[index]
        seen = drawn.setdefault(pane, {})
        if line.number > seen.get(line.source, 0):
            seen[line.source] = line.number
    return strip


LogPane.render_line = _watched_render_line  # type: ignore[method-assign]


class Measured(SparkApp):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.arrived = 0
        # per (pane, source): the numbers of lines put into the pane and not yet painted, oldest first
        self.waiting: dict[tuple[LogPane, str], deque[list[int]]] = {}
        self.painted: list[tuple[float, str, list[int]]] = []  # (frame time, source, line numbers)
        self.frame: tuple[Callable[[Screen[object]], bool], asyncio.Future[float]] | None = None

    def on_lines_arrived(self, message: LinesArrived) -> None:
        super().on_lines_arrived(message)
        message.prevent_default()  # else Textual, walking the MRO, runs SparkApp's handler a second time
        self.arrived += message.count
        for (node, layer), lines in message.panes.items():
            pane = self.nodes_area.columns[node].pane(layer)
            by_source: dict[str, list[int]] = {}
            for line in lines:
                by_source.setdefault(line.source, []).append(line.number)
            for source, numbers in by_source.items():
                self.waiting.setdefault((pane, source), deque()).append(numbers)

    def _display(self, screen: Screen[object], renderable: RenderableType | None) -> None:
        super()._display(screen, renderable)
        if renderable is None or self._batch_count:
            return  # nothing went to the terminal
        if isinstance(renderable, CompositorUpdate):
            renderable.render_segments(self.console)  # what a terminal's driver writes; headless skips it
        now = time.perf_counter()
        for pane, seen in drawn.items():
            for source, through in seen.items():
                queue = self.waiting.get((pane, source))
                while queue and queue[0][0] <= through:
                    numbers = queue.popleft()
                    if numbers[-1] > through:  # part of a group painted; the rest waits
                        split = next(i for i, n in enumerate(numbers) if n > through)
                        queue.appendleft(numbers[split:])
                        numbers = numbers[:split]
                    self.painted.append((now, source, numbers))
        drawn.clear()
        if self.frame is not None and self.frame[0](screen):
            self.frame[1].set_result(now)
            self.frame = None

    async def key_to_frame(
        self, key: str, character: str | None, shows: Callable[[Screen[object]], bool]
    ) -> tuple[float, float]:
        """Post a key as the terminal driver would (the test driver's press() waits for the app to go idle
        first, which a flood never lets it do); when the first frame of the screen it leads to was
        painted (perf_counter), and the seconds since the key."""
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.frame = (shows, future)
        pressed = time.perf_counter()
        self.post_message(events.Key(key, character))
        painted = await future
        return painted, painted - pressed


@dataclass(frozen=True, slots=True)
class Result:
    rate: float
    sent: int
    arrived: int
    not_shown: int
    covered: int
    line_p50_ms: float
    line_p99_ms: float
    key_p50_ms: float
    key_p99_ms: float
    key_max_ms: float
    keys: int
    ui_cpu_pct: float
    rest_cpu_pct: float
    load: float


async def run(rate: float, seconds: float, nodes: int) -> Result:
    sources = [Flood(host, lines, rate / nodes, seconds) for host, lines in streams(nodes)]
    app = make_app(Session("bench", live=tuple(sources)), kind=Measured)
    assert isinstance(app, Measured)
    keys: list[float] = []
    covers: list[tuple[float, float]] = []  # (first frame of the help, first frame of the cockpit after it)
    size = (max(200, nodes * NARROW_COLUMN), 60)  # every node's column side by side
    wall, ui, cpu = time.perf_counter(), time.thread_time(), time.process_time()  # the app runs on this thread
    async with app.run_test(size=size) as pilot:
        started = time.perf_counter()
        await pilot.pause(WARM_UP)
        while time.perf_counter() < started + seconds - 1:
            opened, key = await app.key_to_frame("question_mark", "?", lambda s: isinstance(s, HelpScreen))
            closed, back = await app.key_to_frame("escape", None, lambda s: s is app.screen_stack[0])
            keys += [key, back]
            covers.append((opened, closed))
            await asyncio.sleep(KEYS_APART)
        total = sum(s.total for s in sources)
        while time.perf_counter() < started + seconds + DRAIN and sum(len(n) for _, _, n in app.painted) < total:
            await pilot.pause(0.1)
        ended = time.perf_counter()
        waiting = [(source, numbers) for (_, source), q in app.waiting.items() for numbers in q]
        wall, ui, cpu = ended - wall, time.thread_time() - ui, time.process_time() - cpu
    by_name = {s.name: s for s in sources}
    warm = min(s.start for s in sources) + WARM_UP
    closes = [closed for _, closed in covers]

    def covered(due: float, at: float) -> bool:
        """Whether the line waited (from ``due`` to ``at``) while the help covered the cockpit."""
        i = bisect_right(closes, due)
        return i < len(covers) and covers[i][0] < at

    measured = [
        (due, at)
        for at, source, numbers in [*app.painted, *((ended, s, n) for s, n in waiting)]
        for due in map(by_name[source].due, numbers)
        if due >= warm
    ]
    delays = [at - due for due, at in measured if not covered(due, at)]
    return Result(
        rate,
        sum(s.sent for s in sources),
        app.arrived,
        sum(len(n) for _, n in waiting),
        len(measured) - len(delays),
        percentile(delays, 50),
        percentile(delays, 99),
        percentile(keys, 50),
        percentile(keys, 99),
        percentile(keys, 100),
        len(keys),
        100 * ui / wall,
        100 * (cpu - ui) / wall,
        os.getloadavg()[0],
    )


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile of ``values`` (seconds), in milliseconds."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * p / 100), len(ordered) - 1)] * 1000


COLUMNS = (
    ("lines sent", 12, "sent", ",.0f"),
    ("arrived", 10, "arrived", ",.0f"),
    ("not shown", 11, "not_shown", ",.0f"),
    ("covered", 9, "covered", ",.0f"),
    ("line p50 ms", 13, "line_p50_ms", ".1f"),
    ("line p99 ms", 13, "line_p99_ms", ".1f"),
    ("key p50 ms", 12, "key_p50_ms", ".1f"),
    ("key p99 ms", 12, "key_p99_ms", ".1f"),
    ("key max ms", 12, "key_max_ms", ".1f"),
    ("ui cpu %", 10, "ui_cpu_pct", ".0f"),
    ("rest cpu %", 12, "rest_cpu_pct", ".0f"),
    ("load", 7, "load", ".1f"),
)


def criteria(loaded: Result) -> list[tuple[str, bool]]:
    return [
        (f"key p99 under {KEY_P99_GOAL:.0f} ms: {loaded.key_p99_ms:.1f} ms", loaded.key_p99_ms < KEY_P99_GOAL),
        (f"line p99 under {LINE_P99_GOAL:.0f} ms: {loaded.line_p99_ms:.1f} ms", loaded.line_p99_ms < LINE_P99_GOAL),
        (
            f"every line reached its pane and the screen: {loaded.arrived:,} of {loaded.sent:,}, "
            f"{loaded.not_shown:,} not shown",
            loaded.arrived == loaded.sent and not loaded.not_shown,
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=10_000, help="lines per second in total (default 10000)")
    parser.add_argument("--seconds", type=float, default=10, help="how long to flood (default 10)")
    parser.add_argument("--nodes", type=int, default=4, help="number of sources / node columns (default 4)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write both runs and the verdicts to OUT")
    args = parser.parse_args()
    print(f"{'run':<26}" + "".join(f"{label:>{width}}" for label, width, _, _ in COLUMNS))
    asyncio.run(run(args.rate / 10, 3, args.nodes))  # once before measuring: imports, styles, pattern cache
    results: dict[str, Result] = {}
    for label, rate in (("reference (rate / 10)", args.rate / 10), (f"{args.rate:,.0f} lines/s", args.rate)):
        r = results[label] = asyncio.run(run(rate, args.seconds, args.nodes))
        values = asdict(r)
        print(f"{label:<26}" + "".join(f"{values[key]:>{width}{fmt}}" for _, width, key, fmt in COLUMNS))
    verdicts = criteria(results[f"{args.rate:,.0f} lines/s"])
    for text, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {text}")
    if args.json:
        document = {
            "rate": args.rate,
            "seconds": args.seconds,
            "nodes": args.nodes,
            "runs": {label: asdict(r) for label, r in results.items()},
            "criteria": [{"criterion": text, "pass": ok} for text, ok in verdicts],
        }
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
