"""The cockpit on thousands of files and on one big file: how soon it paints, shows lines and how much it
has read, and how soon it answers keys.

    python bench/tui_scale.py [--files 5000] [--mb 64] [--patience 120] [--json OUT]

Three corpora made of the real captures in ``tests/fixtures`` (:mod:`bench.corpus`: whole captures, every
node its own host and processes):
  * 4 files, a few hundred kB (the reference: a handful of node logs, what the cockpit is used on most);
  * ``--files`` small files, one capture of under 3 kB each: every file is its own node;
  * one file of ``--mb`` MiB.
Each is opened as ``sparktui DIR`` opens it (the same sources: every file followed, as ``tail -F``
does), in the real app, headless on a 160x45 terminal, and timed to the frames it paints (Textual's
compositor handing an update to the driver, turned into the terminal's escape sequences as a real
driver does):
  * ``paint ms``: from starting the app to its first frame;
  * ``line ms``: to the first frame that shows a log line;
  * ``progress ms``: to the first frame that says how much of a file was read, in per cent ("—" when
    none did);
  * ``read s``: until the pipeline received every line of the corpus;
  * ``? ms`` and ``esc ms``: key to the first frame of the help screen, and back to the cockpit, pressed
    right after the first line was shown (for the big corpora, while they are still being read); then
    ``? idle ms`` the same once everything was read, and ``S ms`` to the sources screen (every source
    listed);
  * ``q ms``: from the key to the app having ended (its screens gone, the sources stopped);
  * ``idle cpu %``: the process's CPU once everything was read, over two seconds (per cent of one core).
A wait that does not end within ``--patience`` seconds is printed as more than that.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import RenderableType
from textual import events
from textual._compositor import ChopsUpdate, CompositorUpdate, LayoutUpdate
from textual.screen import Screen
from textual.strip import Strip

from bench.corpus import Corpus, build_directory, load_captures
from sparktui.commands.common import open_sources
from sparktui.core import catalogue as cat
from sparktui.tui.app import SparkApp
from sparktui.tui.factory import make_app
from sparktui.tui.screens.help import HelpScreen
from sparktui.tui.session import Session

try:  # the sources screen (S) came with this bench; it measures the cockpit before it too
    from sparktui.tui.screens.sources import SourcesScreen
except ImportError:
    SourcesScreen = None  # type: ignore[assignment,misc]
from sparktui.tui.widgets.logpane import LogPane

SIZE = (160, 45)
#: A capture this small makes one small file.
SMALL = 3000
SEED = 15
#: What a frame shows when it says how much of a file was read (the cockpit's words: "12.5 of 64.0 MiB read
#: (19%)"); log lines hold per cents of their own.
PERCENT = re.compile(r"of [\d.,]+ [KMGT]?i?B read \(\d{1,3}%\)")
#: Seconds over which the CPU of a cockpit with nothing left to read is measured.
IDLE = 2.0

painted_line = False
_render_line = LogPane.render_line


def _watched_render_line(pane: LogPane, y: int) -> Strip:
    """LogPane.render_line, noting that a log line was drawn."""
    global painted_line
    if pane.scroll_offset.y + y < len(pane.shown):
        painted_line = True
    return _render_line(pane, y)


LogPane.render_line = _watched_render_line  # type: ignore[method-assign]


def frame_text(update: CompositorUpdate) -> str:
    """The words a frame puts on the terminal."""
    if isinstance(update, LayoutUpdate):
        return "\n".join(strip.text for strips in update.strips for strip in strips)
    if isinstance(update, ChopsUpdate):
        return "\n".join(strip.text for chop in update.chops for strip in chop.values() if strip is not None)
    return ""


class Measured(SparkApp):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.started = time.perf_counter()
        self.first_paint = self.first_line = self.first_progress = 0.0
        self.frame: tuple[Callable[[Screen[object]], bool], asyncio.Future[float]] | None = None

    def _display(self, screen: Screen[object], renderable: RenderableType | None) -> None:
        global painted_line
        super()._display(screen, renderable)
        if renderable is None or self._batch_count or not isinstance(renderable, CompositorUpdate):
            return
        renderable.render_segments(self.console)  # what a terminal's driver writes; headless skips it
        now = time.perf_counter()
        self.first_paint = self.first_paint or now
        if painted_line and not self.first_line:
            self.first_line = now
        if not self.first_progress and PERCENT.search(frame_text(renderable)):
            self.first_progress = now
        painted_line = False
        if self.frame is not None and self.frame[0](screen):
            self.frame[1].set_result(now)
            self.frame = None

    async def key_to_frame(self, key: str, character: str | None, shows: Callable[[Screen[object]], bool]) -> float:
        """Post a key as the terminal driver does; seconds to the first frame of the screen it leads to."""
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.frame = (shows, future)
        pressed = time.perf_counter()
        self.post_message(events.Key(key, character))
        return await future - pressed


@dataclass(frozen=True, slots=True)
class Result:
    case: str
    files: int
    mib: float
    lines: int
    paint_ms: float
    line_ms: float
    progress_ms: float
    read_s: float
    help_ms: float
    back_ms: float
    help_idle_ms: float
    sources_ms: float
    quit_ms: float
    idle_cpu_pct: float


async def until(condition: Callable[[], bool], patience: float) -> bool:
    deadline = time.monotonic() + patience
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def timed(answer: Awaitable[float], patience: float) -> float:
    """Seconds ``answer`` took to give its own figure; infinite when it took longer than ``patience``."""
    try:
        return await asyncio.wait_for(answer, patience)
    except TimeoutError:
        return float("inf")


async def run(case: str, corpus: Corpus, patience: float) -> Result:
    catalogue = cat.load()
    sources = tuple(open_sources([str(corpus.path)], trust_new_host_key=False))
    app = make_app(Session(case, live=sources), catalogue=catalogue, spool_live=False, kind=Measured)
    assert isinstance(app, Measured)
    help_ms = back_ms = help_idle = sources = quit_ms = float("inf")
    read = cpu = float("nan")
    try:
        async with app.run_test(size=SIZE) as pilot:
            del pilot  # keys are posted as the terminal driver posts them: the pilot waits for idle first
            if await until(lambda: bool(app.first_line), patience):
                help_ms = await timed(app.key_to_frame("question_mark", "?", _help), patience)
                back_ms = await timed(app.key_to_frame("escape", None, _cockpit(app)), patience)
            if await until(lambda: app.pipeline.lines >= corpus.lines, patience):
                read = time.perf_counter() - app.started
                before, wall = time.process_time(), time.perf_counter()
                await asyncio.sleep(IDLE)
                cpu = 100 * (time.process_time() - before) / (time.perf_counter() - wall)
                help_idle = await timed(app.key_to_frame("question_mark", "?", _help), patience)
                await timed(app.key_to_frame("escape", None, _cockpit(app)), patience)
                if SourcesScreen is not None:
                    sources = await timed(app.key_to_frame("S", "S", _sources), patience)
                    await timed(app.key_to_frame("escape", None, _cockpit(app)), patience)
            pressed = time.perf_counter()
            app.post_message(events.Key("q", "q"))
            task = app._task
            assert task is not None
            ended = False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), patience)
                ended = True
        if ended:  # by the key; and the app's own shutdown (every widget removed) is done too
            quit_ms = time.perf_counter() - pressed
    except Exception as exc:  # an app stopped by force after a key went unanswered may break on its way out
        print(f"{case}: the app broke as it was stopped: {type(exc).__name__}: {exc}")

    def since(at: float) -> float:
        return (at - app.started) * 1000 if at else float("inf")

    return Result(
        case,
        corpus.files,
        corpus.mib,
        corpus.lines,
        since(app.first_paint),
        since(app.first_line),
        since(app.first_progress),
        read,
        help_ms * 1000,
        back_ms * 1000,
        help_idle * 1000,
        sources * 1000,
        quit_ms * 1000,
        cpu,
    )


def _help(screen: Screen[object]) -> bool:
    return isinstance(screen, HelpScreen)


def _sources(screen: Screen[object]) -> bool:
    return SourcesScreen is not None and isinstance(screen, SourcesScreen)


def _cockpit(app: SparkApp) -> Callable[[Screen[object]], bool]:
    return lambda screen: screen is app.screen_stack[0]


def corpora(work: Path, files: int, mib: int) -> list[tuple[str, Corpus]]:
    captures = load_captures()
    small = [c for c in captures if c.size < SMALL]
    return [
        ("4 files (reference)", build_directory(work / "four", captures, 4, 400 << 10, SEED)),
        (f"{files:,} small files", build_directory(work / "many", small, files, files * (SMALL // 2), SEED)),
        (f"one {mib} MiB file", build_directory(work / "big", captures, 1, mib << 20, SEED)),
    ]


COLUMNS = (
    ("files", 7, "files", ",d"),
    ("MiB", 7, "mib", ".1f"),
    ("lines", 10, "lines", ",d"),
    ("paint ms", 10, "paint_ms", ",.0f"),
    ("line ms", 10, "line_ms", ",.0f"),
    ("progress ms", 13, "progress_ms", ",.0f"),
    ("read s", 8, "read_s", ".1f"),
    ("? ms", 9, "help_ms", ",.0f"),
    ("esc ms", 9, "back_ms", ",.0f"),
    ("? idle ms", 11, "help_idle_ms", ",.0f"),
    ("S ms", 9, "sources_ms", ",.0f"),
    ("q ms", 9, "quit_ms", ",.0f"),
    ("idle cpu %", 12, "idle_cpu_pct", ".0f"),
)


def row(result: Result, patience: float) -> str:
    values = asdict(result)
    cells = []
    for _, width, key, fmt in COLUMNS:
        value = values[key]
        if value == float("inf"):
            never = key == "progress_ms" or (key == "sources_ms" and SourcesScreen is None)
            cell = "—" if never else f">{patience * 1000:,.0f}"
        else:
            cell = format(value, fmt)
        cells.append(f"{cell:>{width}}")
    return f"{result.case:<24}" + "".join(cells)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000, help="small files in the second case (default 5000)")
    parser.add_argument("--mb", type=int, default=64, help="MiB of the big file (default 64)")
    parser.add_argument("--patience", type=float, default=120, help="seconds any one wait may take (default 120)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results to OUT")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sparktui-scale-"))
    try:
        cases = corpora(work, args.files, args.mb)
        asyncio.run(run("warm-up", cases[0][1], args.patience))  # imports, styles, the pattern cache
        print(f"{'case':<24}" + "".join(f"{label:>{width}}" for label, width, _, _ in COLUMNS))
        results = []
        for case, corpus in cases:
            results.append(asyncio.run(run(case, corpus, args.patience)))
            print(row(results[-1], args.patience), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
