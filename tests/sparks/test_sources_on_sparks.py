"""Sources on the spark test nodes, whose host names are their own (``spark-a``, ``spark-b``): the name a
node goes by in its own logs is asked over SSH, so an alias and the host NCCL prints are one node, and a
copy of another node's log on it stays that node's."""

from __future__ import annotations

import shutil
from pathlib import Path

from sparktui.core.catalogue import Catalogue
from sparktui.core.pipeline import run
from sparktui.core.remote.ssh import SshNode
from sparktui.core.report.summary import also_named
from sparktui.core.sources.ssh import SshFileSource
from tests.servers.sparks import Sparks

from ..conftest import FIXTURES

IFNAME = FIXTURES / "nccl" / "two-hosts-wrong-socket-ifname"  # captured on spark-a and spark-b


async def test_an_alias_and_the_host_its_logs_name_are_one_node(
    sparks: Sparks, tmp_path: Path, catalogue: Catalogue
) -> None:
    logs = tmp_path / "logs"  # on the head: its own log, and a copy of the worker's
    logs.mkdir()
    for rank in ("rank0.log", "rank1.log"):
        shutil.copy(IFNAME / rank, logs / rank)
    # Made here, not with sparks.node(): its connection lives on the pipeline's own loop, closed with it.
    head = SshNode(
        sparks.head.address,
        name="head",
        user="root",
        client_keys=[sparks.user_key],
        config=[sparks.ssh_config],
        known_hosts=sparks.known_hosts,
        agent=False,
    )
    sources = [SshFileSource(head, str(logs / rank), f"head:{rank}") for rank in ("rank0.log", "rank1.log")]
    expected = sum(len((IFNAME / r).read_text().splitlines()) for r in ("rank0.log", "rank1.log"))
    pipeline = run(catalogue, sources, seconds=60)
    shown: list[str] = []
    for update in pipeline.updates():
        shown += [line.node for line in update.lines]
        if len(shown) >= expected:
            pipeline.stop()
    diagnosis = pipeline.result
    assert diagnosis is not None and len(shown) == expected, update.states
    assert head.names == {"spark-a"}  # what uname -n says there
    assert set(shown) == {"head", "spark-b"}  # before: head, spark-a and spark-b
    assert [s.node for s in sources] == ["head", "spark-b"]  # the copy is the worker's, lines with no host too
    assert also_named(diagnosis) == ["head is spark-a in its logs"]
    assert {n for f in diagnosis.findings for n in f.nodes} <= {"head", "spark-b"}
