"""The scan half of the analysis in worker processes: a directory of logs spread over every core.

A :class:`ScanPool` starts worker processes that each build the catalogue's :class:`~.scan.Rules` once, then
take whole files from a shared queue and scan each in line order, handing over a
:class:`~.scan.Scanned` after every block. One correlation in the calling process merges them (it takes
any order of sources, each source's own in order), so the findings are those of a scan in one process.

The results queue is bounded: when the correlation falls behind, the workers wait instead of piling
results up in memory. Workers are started by ``forkserver`` (never ``fork``: the caller has threads).
"""

from __future__ import annotations

import multiprocessing
import os
import queue
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import Protocol

from sparktui.core.analysis.handover import Done, InOrder
from sparktui.core.analysis.scan import Rules, Scan, Scanned
from sparktui.core.catalogue import Catalogue
from sparktui.core.classify import NodeLearner
from sparktui.core.lines import BytesRead

DIED = "the scanning worker process ended before the file was read"
#: Bytes of logs below which scanning them here is quicker than starting workers (each loads the rules: ~0.5 s).
WORTH_A_WORKER = 16 << 20
#: Results waiting for the correlation, per worker; beyond it the workers wait.
WAITING_PER_WORKER = 16


class Readable(Protocol):
    """A log file as the pool reads it (``sources.files.FileSource`` is one); it must pickle."""

    @property
    def name(self) -> str: ...

    @property
    def node(self) -> str | None: ...

    def blocks(self, counted: BytesRead | None = None) -> Iterator[str]:
        """Decoded blocks of complete lines; raises an exception whose text is one line for the user.
        ``counted`` counts the bytes of the stored file read."""
        ...

    def learner(self, node: str) -> NodeLearner:
        """What learns the node of its lines from its blocks (``node``: the one they have until then)."""
        ...


@dataclass(frozen=True, slots=True)
class Task:
    """A file to scan, the node to give its lines until its content names one, and the names its machine
    goes by, where they are known (a file read on the machine itself)."""

    file: Readable
    node: str
    known: frozenset[str] = frozenset()


def workers_for(sizes: Sequence[int], jobs: int | None = None) -> int:
    """How many worker processes files of these sizes (bytes) are worth, 0 meaning none (scan them in this
    process). ``jobs`` is what the user asked for (1: this process). Otherwise one per core this process may
    use, at most one per file, and one even for a single file where there is a second core: the scan then
    runs beside the correlation instead of taking turns with it. None below :data:`WORTH_A_WORKER` in all,
    where starting a worker costs more than it saves."""
    if jobs is not None:
        return 0 if jobs <= 1 else min(jobs, len(sizes))
    cores = len(os.sched_getaffinity(0))
    if sum(sizes) < WORTH_A_WORKER or cores < 2:
        return 0
    return min(cores, len(sizes))


class ScanPool:
    """Scans files in ``workers`` processes; :meth:`results` yields their hand-overs."""

    def __init__(self, catalogue: Catalogue, tasks: Sequence[Task], workers: int) -> None:
        context = multiprocessing.get_context("forkserver")
        self._tasks = list(tasks)
        self._todo: Queue[Task | None] = context.Queue()
        self._out: Queue[Scanned | Done] = context.Queue(maxsize=WAITING_PER_WORKER * workers)
        for task in self._tasks:
            self._todo.put(task)
        for _ in range(workers):
            self._todo.put(None)
        self._workers: list[BaseProcess] = []
        for _ in range(workers):
            worker = context.Process(target=_work, args=(catalogue, self._todo, self._out), daemon=True)
            worker.start()
            self._workers.append(worker)

    def results(self, poll: float = 0.2) -> Iterator[Scanned | Done]:
        """Every file's hand-overs, file after file in the order of the tasks, whichever worker finishes
        first (see :class:`~.handover.InOrder`). A worker that dies takes its file with it: that file is reported done,
        with the reason."""
        order = InOrder([t.file.name for t in self._tasks])
        while not order.complete:
            try:
                arrived = self._out.get(timeout=poll)
            except queue.Empty:
                if not any(w.is_alive() for w in self._workers):
                    for name in order.unfinished():
                        yield from order.add(Done(name, DIED))
                continue
            yield from order.add(arrived)

    def close(self) -> None:
        """Stop the workers (those still scanning are ended) and wait for them."""
        for worker in self._workers:
            if worker.is_alive():
                worker.terminate()
        for worker in self._workers:
            worker.join()
        for q in (self._todo, self._out):
            q.close()
            q.cancel_join_thread()


def _work(catalogue: Catalogue, todo: Queue[Task | None], out: Queue[Scanned | Done]) -> None:
    """A worker: the rules once, then file after file until the sentinel."""
    rules = Rules(catalogue)
    while (task := todo.get()) is not None:
        for item in scan_file(rules, task):
            out.put(item)


def scan_file(rules: Rules, task: Task) -> Iterator[Scanned | Done]:
    """One file's hand-overs, block by block, what its end leaves open (:meth:`Scan.end`), then :class:`Done`;
    the node is learnt from its content as the file says (:meth:`FileSource.learner`)."""
    scan = Scan(rules, task.file.name, task.node, task.known)
    counted = BytesRead()
    learner = task.file.learner(scan.node)
    try:
        for block in task.file.blocks(counted):
            scan.node = learner.learn(block)
            scan.feed(block)
            yield scan.take(read_bytes=counted.read)
    except Exception as exc:  # the file's own reason, one line (what was read stays); the next file goes on
        yield Done(task.file.name, str(exc) or type(exc).__name__)
        return
    yield scan.end(read_bytes=counted.read)
    yield Done(task.file.name)
