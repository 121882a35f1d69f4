"""Local files followed like `tail -F`, through the supervisor and the pipeline: every line written
arrives once, in order, across rotation, truncation, a late start and a missing file."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from sparktui.core.catalogue import Catalogue
from sparktui.core.events import SourceNote, State, StateChange
from sparktui.core.pipeline import run
from sparktui.core.sources.base import Received, supervise
from sparktui.core.sources.follow import FollowedFile

from ..conftest import FIXTURES
from ..waiting import until


def read_to_its_end(path: Path) -> bool:
    """Whether a descriptor this process holds on ``path`` has read it to its end (its offset in fdinfo)."""
    size = path.stat().st_size
    for fd in Path("/proc/self/fd").iterdir():
        try:
            if os.readlink(fd) == str(path):
                info = Path(f"/proc/self/fdinfo/{fd.name}").read_text()
                if int(info.split("pos:", 1)[1].split()[0]) == size:
                    return True
        except OSError:
            continue  # closed meanwhile
    return False


async def test_rotation_truncation_and_late_start(tmp_path: Path) -> None:
    path = tmp_path / "node.log"
    got: list[str] = []
    states: list[StateChange] = []
    notes: list[str] = []

    async def deliver(_name: str, received: Received) -> None:
        got.extend(received.lines)

    def report(change: StateChange | SourceNote) -> None:
        if isinstance(change, SourceNote):
            notes.append(change.text)
        else:
            states.append(change)

    source = FollowedFile(path, "node.log", "n1", poll=0.02)
    task = asyncio.create_task(supervise(source, deliver, report))
    await until(lambda: any(s.state is State.RETRYING for s in states), 10, "not there yet: tail -F waits")
    written: list[str] = []

    def write(lines: range, mode: str = "a") -> None:
        with path.open(mode) as fh:
            for i in lines:
                fh.write(f"line {i}\n")
                written.append(f"line {i}")

    write(range(0, 50), "w")
    await until(lambda: len(got) == 50, 10, "50 lines")
    with path.open("a") as fh:
        fh.write("partial without newline")
    await until(lambda: read_to_its_end(path), 10, "the partial line read")
    assert len(got) == 50  # an incomplete line waits for its newline
    with path.open("a") as fh:
        fh.write(" now complete\r\n")
    written.append("partial without newline now complete")
    await until(lambda: len(got) == 51, 10, "the completed line")
    os.rename(path, tmp_path / "node.log.1")  # rotation: the old file moves away, a new one starts
    write(range(50, 80), "w")
    await until(lambda: len(got) == 81, 10, "the lines after the rotation")
    path.write_text("")  # truncation (copytruncate)
    await until(lambda: read_to_its_end(path), 10, "the file read again from its start")
    write(range(80, 90))
    await until(lambda: len(got) == 91, 10, "the lines after the truncation")
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert got == written
    assert states[-1].state is State.STREAMING
    # Emptied in place with no copy of it (its first bytes nowhere else): what may be lost is said.
    assert notes == [
        f"lines may be lost: {path} was emptied in place while it was followed, and no copy of it was found"
        " (copytruncate's, by its first bytes); what was written after byte 240 in the last 20 ms before it,"
        " if anything, was not read"
    ]


async def test_the_pipeline_diagnoses_a_growing_log(tmp_path: Path, catalogue: Catalogue) -> None:
    real = (FIXTURES / "nccl" / "two-hosts-wrong-socket-ifname" / "rank0.log").read_text().splitlines(True)
    path = tmp_path / "rank0.log"
    pipeline = run(catalogue, [FollowedFile(path, "rank0.log", poll=0.02)], seconds=30)
    with path.open("a") as fh:
        fh.writelines(real[:10])
    await until(lambda: pipeline.lines == 10, 10, "the first 10 lines")
    with path.open("a") as fh:
        fh.writelines(real[10:])
    await until(lambda: pipeline.lines == len(real), 10, "every line")
    pipeline.stop()
    diagnosis = await asyncio.to_thread(pipeline.wait)
    assert diagnosis.findings[0].signature == "nccl-socket-ifname-no-interface"
    assert diagnosis.sources[0].node == "spark-a"


async def test_a_one_batch_queue_loses_nothing(tmp_path: Path, catalogue: Catalogue) -> None:
    path = tmp_path / "big.log"
    path.write_text("".join(f"row {i}\n" for i in range(20000)))
    pipeline = run(catalogue, [FollowedFile(path, "big.log", poll=0.02)], seconds=3, queue_batches=1)
    diagnosis = await asyncio.to_thread(pipeline.wait)
    assert pipeline.lines == 20000
    assert diagnosis.sources[0].lines == 20000


async def test_the_spool_is_a_replayable_bundle(tmp_path: Path, catalogue: Catalogue) -> None:
    from sparktui.core.sources import bundle
    from sparktui.core.sources.spool import Spool

    real = (FIXTURES / "nccl" / "two-hosts-second-group-not-joined" / "rank0.log").read_text()
    path = tmp_path / "rank0.log"
    half = real.index("\n", len(real) // 2) + 1
    path.write_text(real[:half])
    spool = Spool(tmp_path / "spool", max_bytes=2000)
    pipeline = run(catalogue, [FollowedFile(path, "rank0.log", poll=0.02)], spool=spool, seconds=30)
    await until(lambda: pipeline.lines == real[:half].count("\n"), 10, "the first half")
    with path.open("a") as fh:
        fh.write(real[half:])
    await until(lambda: pipeline.lines == real.count("\n"), 10, "every line")
    pipeline.stop()
    await asyncio.to_thread(pipeline.wait)
    loaded = bundle.load(tmp_path / "spool")
    (source,) = loaded.sources
    assert source.node == "spark-a"
    kept = source.path.read_text()
    assert kept and real.endswith(kept)  # rotated at 2000 bytes: the newest lines are kept, whole
    assert (tmp_path / "spool" / f"{source.name}.1").exists()
    times = (source.path.parent / f"{source.path.name}.times").read_text().split()
    assert len(times) == kept.count("\n")


async def test_a_followed_file_of_notes_names_no_node_and_a_log_its_host(tmp_path: Path) -> None:
    """As for a file read once: a capture's notes (meta.txt) make up no node; a log is its NCCL host's."""
    capture = FIXTURES / "nccl4" / "four-hosts-first-collective-hang"
    nodes: dict[str, set[str]] = {}
    sources = []
    for name in ("meta.txt", "rank1.log"):
        (tmp_path / name).write_bytes((capture / name).read_bytes())
        sources.append(FollowedFile(tmp_path / name, name, poll=0.02))

    async def deliver(name: str, received: Received) -> None:
        nodes.setdefault(name, set()).add(next(s for s in sources if s.name == name).node)

    tasks = [asyncio.create_task(supervise(s, deliver, lambda _change: None)) for s in sources]
    await until(lambda: len(nodes) == 2, 10, "both nodes")
    for task in tasks:
        task.cancel()
    assert nodes == {"meta.txt": {""}, "rank1.log": {"node-b"}}
