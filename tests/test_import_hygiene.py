"""The shape of the house holds: the core imports no user-interface toolkit (architecture principle 1), every
import points down the floors of the pipeline (no circle, nothing imported from a floor above), and the
command line starts without what only some commands need."""

from __future__ import annotations

import ast
import subprocess
import sys

from .conftest import ROOT

PACKAGE = ROOT / "sparktui"

#: The rooms of the house from the bottom floor up. A room imports only from rooms on floors below its own
#: (and from itself); a room on the same floor is as out of reach as one above.
FLOORS: tuple[frozenset[str], ...] = tuple(
    frozenset(floor)
    for floor in (
        {"core.text"},  # how any text is shown inert: events and kinds clean names and values with it
        {"core.events", "core.errors", "core.kinds", "core.tomlfile", "core.dirs", "core.words"}
        | {"core.floods"}  # many sources saying one thing, folded into a line per kind
        | {"core.address"},  # a node's [user@]host[:port], parsed once
        {"core.formats"}  # the line formats as data, which core.classify applies
        | {"core.search"},  # many patterns or words found in one pass: the matcher's engines and the redaction's
        {"core.classify", "core.clock", "core.lines", "core.taxonomy", "core.cluster", "core.launch", "core.settings"}
        | {"core.audit"}  # above core.dirs, which makes its files private
        | {"core.serving"},  # what the catalogue's metric signatures, the scans and the sources read
        {"core.catalogue", "core.remote", "core.redact"},
        {"core.analysis", "core.sources", "core.inventory", "core.stacks"},
        {"core.outbox"},  # what waits for a front end: lines, tallies, states, diagnoses
        {"core.intake"},  # every input's way into the analysis: the producer/sink contract and the books
        {"core.edge"},  # the scan half run on a cluster's nodes: sources read there, scanned there
        {"core.report", "core.pipeline", "core.remedy"},
        {"core.liveness"},  # the live watch: reads the stacks when the logs go quiet, folds its finding in
        {"richtext"},
        {"tui"},
        {"commands"},
        {"cli"},
    )
)

PROBE = """
import builtins, importlib, pkgutil, sys
real = builtins.__import__
def guard(name, *args, **kwargs):
    if name.split('.')[0] in {'textual', 'rich'}:
        raise ImportError('the core imported ' + name)
    return real(name, *args, **kwargs)
builtins.__import__ = guard
import sparktui.core
walked = [m.name for m in pkgutil.walk_packages(sparktui.core.__path__, 'sparktui.core.')]
for name in walked:
    importlib.import_module(name)
assert not {'textual', 'rich'} & set(sys.modules)
print(len(walked))
"""


def room(module: str) -> str | None:
    """The room a ``sparktui.`` module belongs to: a folder of core (``core.analysis``) or of the front end
    (``tui``), a module of core's own (``core.events``) or of the package (``richtext``)."""
    parts = [p for p in module.split(".")[1:] if p != "__init__"]
    if not parts or parts[0] == "__main__":
        return None
    if parts[0] == "core":
        return ".".join(parts[:2]) if len(parts) > 1 else None
    return parts[0]


def floor_of(name: str) -> int:
    return next(i for i, floor in enumerate(FLOORS) if name in floor)


def imports() -> list[tuple[str, str, str]]:
    """(file, its room, the room it imports) for every import of a sparktui module, lazy ones included."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mine = room(module)
        if mine is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                other = room(name) if name.startswith("sparktui.") else None
                if other is not None and other != mine and any(other in floor for floor in FLOORS):
                    found.append((str(path.relative_to(ROOT)), mine, other))
    return found


def test_every_room_has_a_floor() -> None:
    rooms = {room(".".join(p.relative_to(ROOT).with_suffix("").parts)) for p in PACKAGE.rglob("*.py")}
    assert rooms - {None} <= set().union(*FLOORS)


def test_every_import_points_down() -> None:
    upward = [f"{path}: {mine} imports {other}" for path, mine, other in imports() if floor_of(other) >= floor_of(mine)]
    assert not upward, upward


def test_every_core_module_imports_without_textual_or_rich() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, cwd=ROOT)
    assert int(out.stdout) > 50


def test_the_command_line_loads_ssh_and_the_translator_only_when_used() -> None:
    """`sparktui diagnose` on files starts without asyncssh, the action runner or the SGLang translator."""
    probe = "import sys, sparktui.cli; print(sorted(m for m in LATE if m in sys.modules))"
    late = (
        "{'asyncssh', 'textual', 'sparktui.core.remedy.actions', 'sparktui.core.launch.sglang_to_vllm', "
        "'sparktui.core.remedy.plan'}"
    )
    out = subprocess.run([sys.executable, "-c", f"LATE = {late}\n{probe}"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
