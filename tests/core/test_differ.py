"""Values that differ between nodes (``differ`` signatures): the real capture of a rank on another NCCL is
named with the odd node first; one node on one version, or a node that printed two versions beside nodes on
either, is not a difference; world sizes differ only within one rendezvous; a signature naming a fact no track
reads is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.commands.common import catalogue
from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.catalogue import CatalogueError
from sparktui.core.catalogue import load as load_catalogue
from sparktui.core.pipeline import diagnose_files
from sparktui.core.sources.open import file_sources

from ..conftest import ROOT

OTHER_NCCL = ROOT / "tests" / "fixtures" / "nccl4" / "four-hosts-other-nccl-rank3"
#: The version lines of that capture (rank 3 on node-d loaded the system's 2.28.3).
LINES = {node: (OTHER_NCCL / f"rank{r}.log").read_text().splitlines() for r, node in enumerate("abcd")}


def version_line(rank: str) -> str:
    return next(line for line in LINES[rank] if "NCCL INFO NCCL version" in line)


def differing(*logs: tuple[str, str], signature: str = "nccl-versions-differ") -> list[str]:
    """The details of ``signature``'s findings in logs given as (node, text), each node's a source of its own."""
    analyzer = Analyzer(catalogue([]))
    for node, text in logs:
        analyzer.add_source(f"{node}.log", node)
        analyzer.feed(f"{node}.log", text + "\n")
    return [f.detail for f in analyzer.finish().findings if f.signature == signature]


def test_the_capture_names_the_node_on_another_nccl_first() -> None:
    sources, _ = file_sources([str(OTHER_NCCL)])
    found = diagnose_files(sources, catalogue([]))
    first = found.findings[0]
    assert first.signature == "nccl-versions-differ" and first.nodes == ("node-d",)
    assert first.detail == "node-d printed NCCL 2.28.3; node-a, node-b and node-c printed 2.28.9."
    assert first.facts["other_values"] == "2.28.3" and first.evidence[0].node == "node-d"


def test_one_version_everywhere_is_no_difference() -> None:
    assert differing(*((f"node-{r}", version_line(r)) for r in "abc")) == []


def test_a_node_that_printed_both_versions_differs_from_neither() -> None:
    # node-d's line, then node-a's as if node-d's own log had gone on after an upgrade
    both = version_line("d") + "\n" + version_line("a").replace("node-a", "node-d")
    assert differing(("node-d", both), ("node-a", version_line("a"))) == []
    found = differing(("node-a", version_line("a")), ("node-d", version_line("d")))
    assert found == ["node-a printed NCCL 2.28.9; node-d printed 2.28.3."]


TP_MISMATCH = ROOT / "tests" / "fixtures" / "vllm" / "mp-2-nodes-tp-mismatch"
HEALTHY = ROOT / "tests" / "fixtures" / "vllm" / "healthy"


def world_size_line(path: Path, size: str) -> str:
    return next(line for line in path.read_text().splitlines() if f"] world_size={size} rank=" in line)


def world_size_findings(*logs: tuple[str, str]) -> list[str]:
    return differing(*logs, signature="vllm-world-size-differs")


def test_world_sizes_differ_only_within_one_rendezvous() -> None:
    four = world_size_line(TP_MISMATCH / "node1.log", "4")  # tcp://127.0.0.1:29551
    two = world_size_line(TP_MISMATCH / "server.log", "2")  # the same rendezvous
    one = world_size_line(HEALTHY / "server.log", "1")  # another job's, at a file:// address
    assert world_size_findings(("node1", four), ("node0", two)) == [
        "node1 printed world size 4 for tcp://127.0.0.1:29551; node0 printed 2."
    ]
    assert world_size_findings(("node1", four), ("node2", one)) == []


def test_a_differ_signature_names_a_fact_some_track_reads(tmp_path: Path) -> None:
    text = (ROOT / "diagnostics" / "vllm-world-size-differs.toml").read_text()
    (tmp_path / "vllm-world-size-differs.toml").write_text(text.replace('fact = "world_size"', 'fact = "wrold_size"'))
    with pytest.raises(CatalogueError) as caught:
        load_catalogue([tmp_path])
    assert caught.value.key == "differ.fact" and "no stage track reads a fact 'wrold_size'" in caught.value.reason
