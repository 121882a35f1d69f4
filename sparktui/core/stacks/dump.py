"""Reading what ``py-spy dump`` prints: processes, their threads (idle, active, holding the GIL) and each
thread's frames, innermost first. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PROCESS = re.compile(r"^Process (?P<pid>\d+): (?P<command>.*)$")
_PYTHON = re.compile(r"^Python v(?P<version>\S+)")
_THREAD = re.compile(r'^Thread (?P<id>\S+) \((?P<status>[a-z+]+)\)(?:: "(?P<name>.*)")?\s*$')
#: A frame: ``function (file:line)`` for Python, ``symbol (library)`` or ``0xADDR (library)`` for native ones.
_FRAME = re.compile(r"^ {4}(?P<function>\S.*?) \((?P<where>[^()]*?)(?::(?P<line>\d+))?\)\s*$")


@dataclass(frozen=True, slots=True)
class Frame:
    function: str
    file: str
    line: int | None = None

    @property
    def native(self) -> bool:
        """A frame py-spy read from native code (``--native``): no line number, a shared library."""
        return self.line is None

    def __str__(self) -> str:
        return f"{self.function} ({self.file}{'' if self.line is None else f':{self.line}'})"


@dataclass(frozen=True, slots=True)
class Thread:
    id: str
    name: str
    status: frozenset[str]  # "idle" or "active", and "gil" when it holds the GIL
    frames: tuple[Frame, ...]  # innermost first

    @property
    def idle(self) -> bool:
        return "idle" in self.status

    @property
    def main(self) -> bool:
        return self.name == "MainThread"

    @property
    def status_text(self) -> str:
        return "+".join(s for s in ("idle", "active", "gil") if s in self.status)


@dataclass(frozen=True, slots=True)
class Process:
    pid: int
    command: str
    python: str
    threads: tuple[Thread, ...]

    @property
    def main_thread(self) -> Thread | None:
        """The interpreter's main thread (py-spy names it MainThread), else the first one listed."""
        return next((t for t in self.threads if t.main), self.threads[0] if self.threads else None)


class Unreadable(ValueError):
    """Not what py-spy prints for a process; the message is py-spy's own first line where it said why."""


def threads(text: str) -> list[Thread]:
    """The threads of ``text``: py-spy's ``Thread ...`` blocks without their process header (as the examples
    of ``diagnostics/stacks/`` quote them)."""
    return [t for p in parse(f"Process 0: (threads)\n{text}") for t in p.threads]


def parse(text: str) -> list[Process]:
    """Every process in ``text`` (one or more ``py-spy dump`` outputs one after the other). Lines py-spy adds
    with ``--locals`` (deeper indents) are skipped. Raises :class:`Unreadable` when no process is found,
    with py-spy's error line if it printed one."""
    processes: list[Process] = []
    header: tuple[int, str] | None = None
    python = ""
    threads: list[Thread] = []
    thread: tuple[str, str, frozenset[str]] | None = None
    frames: list[Frame] = []

    def end_thread() -> None:
        nonlocal thread, frames
        if thread is not None:
            threads.append(Thread(thread[0], thread[1], thread[2], tuple(frames)))
        thread, frames = None, []

    def end_process() -> None:
        nonlocal header, threads, python
        end_thread()
        if header is not None:
            processes.append(Process(header[0], header[1], python, tuple(threads)))
        header, threads, python = None, [], ""

    for line in text.splitlines():
        if m := _PROCESS.match(line):
            end_process()
            header = (int(m["pid"]), m["command"])
        elif header is None:
            continue
        elif m := _PYTHON.match(line):
            python = m["version"]
        elif m := _THREAD.match(line):
            end_thread()
            thread = (m["id"], m["name"] or "", frozenset(m["status"].split("+")))
        elif thread is not None and (m := _FRAME.match(line)):
            frames.append(Frame(m["function"], m["where"], int(m["line"]) if m["line"] else None))
    end_process()
    error = _error(text)
    if error and (not processes or any(not p.threads for p in processes)):
        raise Unreadable(error)
    if not processes:
        said = next((line.strip() for line in text.splitlines() if line.strip()), "")
        raise Unreadable(said or "py-spy printed nothing")
    return processes


_CAUSE = re.compile(r"^\s+\d+: (?P<cause>.+)$")


def _error(text: str) -> str:
    """py-spy's error and its causes in one line (``Error: Failed to get stack traces: Failed to suspend
    process: EPERM: Operation not permitted``), or "" when it printed none."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith("Error: ")), None)
    if start is None:
        return ""
    parts = [lines[start].strip()]
    for line in lines[start + 1 :]:
        if (m := _CAUSE.match(line)) and m["cause"].strip() not in parts:
            parts.append(m["cause"].strip())
    return ": ".join(parts)
