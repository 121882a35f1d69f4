"""Every input hands over through the one sink: a producer whose scans are made elsewhere, handing over in any
order, gives the diagnosis of the same logs read as files; one that breaks before it lists a source says why."""

from __future__ import annotations

from pathlib import Path

from sparktui.core.analysis.handover import Done
from sparktui.core.analysis.pool import Task, scan_file
from sparktui.core.analysis.scan import Rules, Scanned
from sparktui.core.catalogue import Catalogue
from sparktui.core.intake.sink import Producer, Sink
from sparktui.core.pipeline import run
from sparktui.core.sources.files import FileRead
from sparktui.core.sources.open import file_sources

from ..conftest import FIXTURES

#: Four ranks on four emulated hosts (one log each), hung at the first collective.
HANG = FIXTURES / "nccl4" / "four-hosts-first-collective-hang"


class Scattered(Producer):
    """The files' scans made beforehand (as a worker or a node makes them), handed over last file first,
    block by block taking turns between the files: the opposite of the order they were listed in."""

    finite = True

    def __init__(self, files: list[FileRead], rules: Rules) -> None:
        self.name = "scattered"
        self.files = files
        self.made = [list(scan_file(rules, Task(f.file, f.node))) for f in files]

    async def run(self, sink: Sink) -> None:
        sink.listed([(f.name, f.node) for f in self.files])
        queues = [list(items) for items in reversed(self.made)]
        while any(queues):
            for items in queues:
                if items:
                    sink.scanned(items.pop(0))


class Broken(Producer):
    """An input that breaks before it lists anything."""

    finite = True
    name = "broken://input"

    async def run(self, sink: Sink) -> None:
        raise RuntimeError("the listing broke")


def files(path: Path) -> list[FileRead]:
    sources, _ = file_sources([str(path)])
    return [FileRead(s) for s in sources]


def test_hand_overs_in_any_order_give_the_diagnosis_of_the_files(catalogue: Catalogue) -> None:
    read = run(catalogue, files(HANG), show=False, refresh=False).wait().as_dict()
    scattered = Scattered(files(HANG), Rules(catalogue))
    assert len(scattered.made) >= 4 and all(isinstance(items[-1], Done) for items in scattered.made)
    assert sum(isinstance(i, Scanned) for items in scattered.made for i in items) >= 4
    handed = run(catalogue, [scattered], show=False, refresh=False).wait().as_dict()
    assert read["findings"] and handed == read


def test_an_input_that_breaks_before_listing_says_why_among_the_sources(catalogue: Catalogue) -> None:
    diagnosis = run(catalogue, [Broken(), *files(HANG)], show=False, refresh=False).wait()
    broken = next(s for s in diagnosis.sources if s.name == Broken.name)
    assert broken.error == "failed: RuntimeError: the listing broke"
    assert diagnosis.findings  # the files were read all the same
