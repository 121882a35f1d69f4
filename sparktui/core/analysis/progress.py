"""The rank-by-stage grid: how far each rank got, side by side, per track.

For a track of communicators (NCCL) a grid has one row per process (a rank) and one column per
communicator across ranks (its peer group: the world, each split, each group NCCL set up); a cell is the
stage that rank's unit of that communicator reached. For the other tracks (an engine's start-up per rank or
node) one column holds the stage each unit reached. A cell is *behind* when other rows of its column got
further; the grid is *symmetric* when every row stopped at the same place short of the end, which points at
something all ranks wait on (the network, a missing peer outside these logs) rather than one rank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sparktui.core.analysis.stages import StageTracker, Unit
from sparktui.core.words import join, ranges

#: How much of a grid a report prints (the cockpit shows it all).
BRIEF_ROWS = 24
BRIEF_COLUMNS = 8
#: How many grids a report prints, and the cockpit shows, where the logs hold many jobs.
REPORT_GRIDS = 4
SCREEN_GRIDS = 12
#: The most communicators (columns) and processes (rows) one grid holds: beyond them (a job of thousands of
#: processes) the most concerning are kept and the verdict says how many were left out.
GRID_COLUMNS = 64
GRID_ROWS = 1024


@dataclass(frozen=True, slots=True)
class Cell:
    """One unit's place: the stage it reached (``stage`` "" where the row has no unit in this column)."""

    stage: str = ""
    label: str = ""
    short: str = ""
    done: bool = False  # reached the track's ``done`` stage (or its last stage where it has none)
    behind: bool = False  # other rows of its column got further, or (with no stage) it never joined the column


@dataclass(frozen=True, slots=True)
class Row:
    """One row of a track's grid: a rank (or a process, or the node) and the stage cells it reached."""

    node: str
    who: str  # "rank 3", "process 556" or the node itself
    cells: tuple[Cell, ...]

    @property
    def behind(self) -> bool:
        return any(c.behind for c in self.cells)


@dataclass(frozen=True, slots=True)
class Grid:
    """A stage track's start-up progress as a grid: ranks down, stages across, and the verdict in a sentence."""

    track: str
    label: str
    columns: tuple[str, ...]
    rows: tuple[Row, ...]
    verdict: str  # one sentence: who is behind, or that every rank stopped at the same place

    def compact(self) -> tuple[Row, ...]:
        """Rows with the same cells on the same node merged ("ranks 0-6"), for reports of many ranks."""
        merged: list[tuple[Row, list[Row]]] = []
        for row in self.rows:
            if merged and merged[-1][0].node == row.node and merged[-1][0].cells == row.cells:
                merged[-1][1].append(row)
            else:
                merged.append((row, [row]))
        return tuple(_merge(first, same) for first, same in merged)

    def brief(self, rows: int = BRIEF_ROWS, columns: int = BRIEF_COLUMNS) -> tuple[Grid, str]:
        """The grid a report prints, with what it leaves out said in a sentence: its rows compacted, and
        where a cluster still gives more rows or communicators than a page holds, the rows and columns
        with someone behind kept first, then those not ready, in their order."""
        keep_columns = _first(range(len(self.columns)), columns, lambda c: _concern(r.cells[c] for r in self.rows))
        narrowed = [Row(r.node, r.who, tuple(r.cells[c] for c in keep_columns)) for r in self.rows]
        compacted = Grid(self.track, self.label, self.columns, tuple(narrowed), "").compact()
        keep_rows = _first(range(len(compacted)), rows, lambda i: _concern(compacted[i].cells))
        left_out = []
        if len(keep_columns) < len(self.columns):
            hidden = len(self.columns) - len(keep_columns)
            left_out.append(f"{hidden} more {'column' if hidden == 1 else 'columns'}")
        if len(keep_rows) < len(compacted):
            hidden = len(compacted) - len(keep_rows)
            left_out.append(f"{hidden} more {'row' if hidden == 1 else 'rows'}")
        note = f"{join(left_out)} not shown (the cockpit's G shows them all)." if left_out else ""
        shown = Grid(
            self.track,
            self.label,
            tuple(self.columns[c] for c in keep_columns),
            tuple(compacted[i] for i in keep_rows),
            self.verdict,
        )
        return shown, note


#: The cell of a row with no unit in a column.
EMPTY = Cell()
#: The cell of a rank that never joined a communicator the others of its column wait in.
ABSENT = Cell(label="never joined", short="absent", behind=True)


def grids(tracker: StageTracker) -> tuple[Grid, ...]:
    """The grids of every track that has units, in the order the tracks were first seen: one per track, or
    for a track of communicators one per job (processes tied together by the communicators they share), so
    that restarts and unrelated runs in the same logs are grids of their own and the cost stays linear."""
    by_track: dict[str, list[Unit]] = {}
    for unit in tracker.units:
        by_track.setdefault(unit.track.id, []).append(unit)
    out: list[Grid] = []
    for units in by_track.values():
        jobs = _jobs(units) if units[0].track.unit == "communicator" else [units]
        for number, job in enumerate(jobs, 1):
            label = units[0].track.label if len(jobs) == 1 else f"{units[0].track.label}, job {number} of {len(jobs)}"
            out.append(_grid(job, label))
    return tuple(out)


def worth_showing(found: Sequence[Grid], limit: int) -> tuple[tuple[Grid, ...], str]:
    """Up to ``limit`` grids, those with a rank behind first, then those not ready, in their order; and a
    sentence saying how many were left out (all of them alike or ready, by that choice)."""
    keep = _first(range(len(found)), limit, lambda i: _concern(c for r in found[i].rows for c in r.cells))
    left = len(found) - len(keep)
    note = f"{left} more {'grid' if left == 1 else 'grids'} (other jobs in these logs) not shown." if left else ""
    return tuple(found[i] for i in keep), note


def _jobs(units: list[Unit]) -> list[list[Unit]]:
    """The units of a track of communicators, split into jobs: the processes that share a communicator
    (its commId, or its parent for a split) are one job, in the order their units were first seen. A
    communicator known only by its ordinal ties processes that have nothing better to go by."""
    parent: dict[str, str] = {}

    def root(process: str) -> str:
        while parent.setdefault(process, process) != process:
            parent[process] = parent[parent[process]]
            process = parent[process]
        return process

    named = {u.process for u in units if not u.group.startswith("#")}
    first_of: dict[str, str] = {}
    for unit in units:
        if unit.group.startswith("#") and unit.process in named:
            root(unit.process)
            continue  # an ordinal says nothing more for a process tied by the names of its communicators
        seen = first_of.setdefault(unit.group, unit.process)
        parent[root(unit.process)] = root(seen)
    jobs: dict[str, list[Unit]] = {}
    for unit in units:
        jobs.setdefault(root(unit.process), []).append(unit)
    return list(jobs.values())


def _grid(units: list[Unit], label: str) -> Grid:
    track = units[0].track
    if track.unit == "communicator":
        first: dict[str, Unit] = {}
        for unit in units:
            first.setdefault(unit.group, unit)
        columns = list(first)
        titles = tuple(_column_title(first[g], i) for i, g in enumerate(columns))
    else:
        columns, titles = [track.id], ("start-up",)
    rows: dict[str, dict[str, Unit]] = {}
    for unit in units:
        column = unit.group if track.unit == "communicator" else track.id
        rows.setdefault(unit.process, {})[column] = unit  # a later unit of the same group replaces it
    in_column: dict[str, list[Unit]] = {c: [] for c in columns}
    for cells_of in rows.values():
        for column, unit in cells_of.items():
            in_column[column].append(unit)
    furthest = {c: max((u.reached for u in in_column[c]), default=-1) for c in columns}
    absent = {c: _absent(c, in_column[c], rows) for c in columns}
    made: dict[tuple[int, bool], Cell] = {}
    kept = list(range(len(columns)))
    if len(columns) > GRID_COLUMNS:  # a column's concern from its units' cells, made once each (cached)
        kept = _first(
            range(len(columns)),
            GRID_COLUMNS,
            lambda i: _concern(
                [_cell(u, furthest[columns[i]], made) for u in in_column[columns[i]]]
                + ([ABSENT] if absent[columns[i]] else [])
            ),
        )
    out = []
    for process, cells_of in rows.items():
        any_unit = next(iter(cells_of.values()))
        cells = tuple(
            ABSENT if process in absent[c] else _cell(cells_of.get(c), furthest[c], made)
            for c in (columns[i] for i in kept)
        )
        out.append(Row(any_unit.node, _row_who(list(cells_of.values())), cells))
    if len(out) > GRID_ROWS:
        out = [out[i] for i in _first(range(len(out)), GRID_ROWS, lambda i: _concern(out[i].cells))]
    kept_titles = tuple(titles[i] for i in kept)
    verdict = _verdict(out, kept_titles)
    left_out = []
    if len(kept) < len(columns):
        hidden = len(columns) - len(kept)
        left_out.append(f"{hidden} more {'communicator' if hidden == 1 else 'communicators'}")
    if len(out) < len(rows):
        hidden = len(rows) - len(out)
        left_out.append(f"{hidden} more {'process' if hidden == 1 else 'processes'}")
    if left_out:  # too big to look at: cut to its most concerning part, so that its cost stays linear
        verdict = f"{verdict} ({join(left_out)}, ready or alike, are left out of this grid.)".lstrip()
    return Grid(track.id, label, kept_titles, tuple(out), verdict)


def _ready(unit: Unit) -> bool:
    """Whether a unit's cell shows it done: its track's ``done`` stage reached, or its last where none."""
    return unit.done if unit.track.done else unit.finished


def _absent(column: str, present: list[Unit], rows: dict[str, dict[str, Unit]]) -> set[str]:
    """The processes that never joined a communicator the others wait in: only where the ranks that did
    join (``present``) are short of its size by exactly the rows without it (so a split of a subset names
    nobody). Before a line gives its size (a communicator that stopped at its first line), the size of the one
    its processes completed before stands for it. The rows are only looked through when the counts say so."""
    size = present[0].facts.get("nranks") or next(
        (u.previous.facts["nranks"] for u in present if u.previous is not None and "nranks" in u.previous.facts), None
    )
    missing = len(rows) - len(present)
    if not size or not missing or any(u.done or u.finished for u in present):
        return set()
    if not size.isdigit() or int(size) - len(present) != missing:
        return set()
    return {p for p, r in rows.items() if column not in r}


def _cell(unit: Unit | None, furthest: int, made: dict[tuple[int, bool], Cell]) -> Cell:
    """A unit's cell; cells are values, so one of each kind (``made``, per grid) serves every row."""
    if unit is None:
        return EMPTY
    key = (unit.reached, unit.reached < furthest)
    cell = made.get(key)
    if cell is None:
        stage = unit.track.stages[unit.reached]
        cell = made[key] = Cell(stage.id, stage.label, stage.brief, _ready(unit), key[1])
    return cell


def _row_who(units: list[Unit]) -> str:
    """A row's name: the rank of its process's first communicator (the world, mostly), else the process."""
    first = min(units, key=lambda u: u.ordinal)
    rank = first.facts.get("rank")
    if rank is not None:
        return f"rank {rank}"
    return f"process {first.pid}" if first.pid else first.node


def _column_title(unit: Unit, index: int) -> str:
    """A communicator column: its commId (shortened), or which split of its parent it is, and its size."""
    head, _, split = unit.group.partition(">")
    nranks = unit.facts.get("nranks")
    size = f" ({nranks} ranks)" if nranks else ""
    if unit.group.startswith("#"):
        return f"communicator {index + 1}{size}"
    if split:
        return f"split {split.partition('/')[0]}{size}"
    return f"{head.partition(':')[2][:10]}{size}"


def _verdict(rows: list[Row], titles: tuple[str, ...]) -> str:
    for c, title in enumerate(titles):
        never = [r for r in rows if r.cells[c].behind and not r.cells[c].stage]
        if never:
            return f"{_names(never)} never joined {title.partition(' (')[0]}, which the other ranks wait in."
    behind = [r for r in rows if r.behind]
    if behind:
        names = _names(behind)
        return f"{names} {'is' if len(behind) == 1 else 'are'} behind the other ranks."
    for c in range(len(titles)):
        cells = [r.cells[c] for r in rows if r.cells[c].stage]
        if len(cells) > 1 and not all(cell.done for cell in cells):
            return f"Symmetric: every rank stopped at '{cells[0].label}'."
    if all(cell.done for r in rows for cell in r.cells if cell.stage):
        return "Every rank is ready."
    return ""


def _names(rows: list[Row]) -> str:
    by_node: dict[str, list[Row]] = {}
    for row in rows:
        by_node.setdefault(row.node, []).append(row)
    parts = []
    for node, found in by_node.items():
        numbered = [int(r.who.split()[1]) for r in found if r.who.startswith("rank ")]
        ranks = sorted(set(numbered))  # the same rank of several runs or restarts is said once
        if numbered and len(numbered) == len(found):
            parts.append(f"{'rank' if len(ranks) == 1 else 'ranks'} {ranges(ranks)} on {node}")
        else:
            parts.append(join([f"{r.who} on {node}" if r.who != node else node for r in found]))
    return join(parts)


def _concern(cells: Iterable[Cell]) -> int:
    """How much these cells ask to be shown: 0 someone behind, 1 stopped short of ready, 2 all ready."""
    cells = list(cells)
    if any(c.behind for c in cells):
        return 0
    return 1 if any(c.stage and not c.done for c in cells) else 2


def _first(indexes: range, limit: int, concern: Callable[[int], int]) -> list[int]:
    """Up to ``limit`` of the indexes, the most concerning first, then in order; returned in order."""
    return sorted(sorted(indexes, key=concern)[:limit])


def _merge(first: Row, same: list[Row]) -> Row:
    if len(same) == 1:
        return first
    ranks = [int(r.who.split()[1]) for r in same if r.who.startswith("rank ")]
    if len(ranks) != len(same):
        return Row(first.node, f"{len(same)} processes", first.cells)
    distinct = sorted(set(ranks))
    who = f"ranks {ranges(distinct)}" if len(distinct) > 1 else f"rank {distinct[0]}"
    if len(distinct) < len(ranks):  # the same ranks again: another run or a restart in the same logs
        who += f" ({len(same)} processes)"
    return Row(first.node, who, first.cells)
