"""Which node a line belongs to: a source is one node unless its lines prove otherwise (an SSH alias and the
host NCCL prints were once two node columns for one file). Real captured logs of four one-GPU
hosts (``node-a`` … ``node-d``), read as sources whose declared node is another name."""

from __future__ import annotations

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.catalogue import Catalogue
from sparktui.core.classify import classify
from sparktui.core.report.summary import also_named

from ..conftest import FIXTURES

HANG = FIXTURES / "nccl4" / "four-hosts-first-collective-hang"


def lines_of(rank: int) -> list[str]:
    return (HANG / f"rank{rank}.log").read_text().splitlines()


def nodes_named(analyzer: Analyzer) -> set[str]:
    d = analyzer.finish()
    return {n for f in d.findings for n in f.nodes} | set(d.stages) | {s.node for s in d.sources}


def test_a_file_of_one_host_under_an_alias_is_one_node_and_says_so(catalogue: Catalogue) -> None:
    analyzer = Analyzer(catalogue)
    analyzer.add_source("ssh://node5/var/log/rank1.log", "node5")
    analyzer.feed("ssh://node5/var/log/rank1.log", "\n".join(lines_of(1)))
    d = analyzer.finish()
    assert d.findings, "the hang's rank still has its findings"
    assert nodes_named(analyzer) == {"node5"}  # before: node5 for the first lines, node-b for the NCCL ones
    assert d.sources[0].hosts == ("node-b",)
    assert also_named(d) == ["node5 is node-b in its logs"]
    assert d.as_dict()["sources"][0]["hosts"] == ["node-b"]


def test_a_log_that_merges_hosts_keeps_each_host_but_the_first(catalogue: Catalogue) -> None:
    analyzer = Analyzer(catalogue)
    analyzer.add_source("all.log", "head")
    merged = [line for rank in range(4) for line in lines_of(rank)]
    analyzer.feed("all.log", "\n".join(merged))
    assert nodes_named(analyzer) == {"head", "node-b", "node-c", "node-d"}
    assert analyzer.finish().sources[0].hosts == ("node-a",)


def test_the_machines_own_names_decide_where_known(catalogue: Catalogue) -> None:
    """Over SSH the machine says its name: a copy of another node's log on it stays that node's."""
    analyzer = Analyzer(catalogue)
    for rank in (0, 1):
        name = f"ssh://head/logs/rank{rank}.log"
        analyzer.add_source(name, "head")
        analyzer.know_hosts(name, frozenset({"node-a", "node-a.cluster.example"}))
        analyzer.feed(name, "\n".join(lines_of(rank)))
    assert nodes_named(analyzer) == {"head", "node-b"}
    assert [s.hosts for s in analyzer.finish().sources] == [("node-a",), ()]


def test_lines_relayed_through_a_prefix_are_not_taken_for_the_sources_own(catalogue: Catalogue) -> None:
    """A driver's log carries its workers' lines behind Ray's prefix: they name other nodes."""
    analyzer = Analyzer(catalogue)
    analyzer.add_source("driver.log", "head")
    relayed = [f"(RayWorkerWrapper pid=548, ip=10.0.0.2) {line}" for line in lines_of(1)]
    assert classify(relayed[5]).relayed and not classify(lines_of(1)[5]).relayed
    analyzer.feed("driver.log", "\n".join(relayed + lines_of(0)))
    assert nodes_named(analyzer) == {"head", "10.0.0.2"}
    assert analyzer.finish().sources[0].hosts == ("node-a",)
