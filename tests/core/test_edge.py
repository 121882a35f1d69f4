"""The edge scan without a cluster: the catalogue's digest, the shipment a node unpacks, and a node's scan
run from it in a process that has nothing but the shipment, merged here as the driver merges it."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sparktui.core import catalogue as cat
from sparktui.core import cluster as clusterfile
from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.correlate import Correlation
from sparktui.core.analysis.scan import Scanned
from sparktui.core.edge import shipment
from sparktui.core.edge.scanner import CatalogueMismatch, NodeScan, unpack
from sparktui.core.edge.targets import CONTAINER, FILE, RAY, Target, cluster_logs, match_nodes
from sparktui.core.lines import LineSplitter

from ..conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
SIGNATURE = ROOT / "diagnostics" / "server-port-in-use.toml"
LOGS = ["nccl/two-hosts-second-group-not-joined/rank0.log", "vllm/port-in-use/server.log"]


def own_signature(folder: Path, title: str) -> Path:
    """A user's copy of a built-in signature, under another id and title."""
    folder.mkdir(parents=True, exist_ok=True)
    text = SIGNATURE.read_text().replace('id = "server-port-in-use"', 'id = "my-port"')
    text = text.replace("title = ", f"title = {title!r}\n#", 1)
    (folder / "my-port.toml").write_text(text)
    return folder


def test_the_digest_names_what_was_loaded_not_where(tmp_path: Path) -> None:
    one = cat.load([own_signature(tmp_path / "a", "Port taken")])
    elsewhere = cat.load([own_signature(tmp_path / "b" / "c", "Port taken")])
    changed = cat.load([own_signature(tmp_path / "d", "Port already taken")])
    assert cat.digest(one) == cat.digest(elsewhere) == cat.digest(cat.load([tmp_path / "b" / "c"]))
    assert cat.digest(changed) != cat.digest(one) != cat.digest(cat.load())


def test_a_node_refuses_a_catalogue_other_than_the_drivers(tmp_path: Path) -> None:
    wrong = "0" * 64
    with pytest.raises(CatalogueMismatch, match="old and new catalogues never mix"):
        NodeScan(wrong, "node-a", [], follow=False, logs=str(tmp_path))


NODE = """
import asyncio, sys
from pathlib import Path
from sparktui.core.edge.scanner import NodeScan
from sparktui.core import cluster as clusterfile
from sparktui.core.edge.targets import CONTAINER, FILE, RAY, Target, cluster_logs, match_nodes

async def main():
    targets = [Target(n, "node-a", RAY, n) for n in sys.argv[3:]]
    scan = NodeScan(sys.argv[1], "node-a", targets, follow=False, logs=sys.argv[2])
    with open("batches", "wb") as out:
        async for data in scan.scan():
            out.write(len(data).to_bytes(8, "big") + data)

asyncio.run(main())
import sparktui
assert Path(sparktui.__file__).parent == Path.cwd() / "sparktui", sparktui.__file__
"""


def test_a_node_scans_with_the_shipped_code_and_catalogue_as_this_machine_would(tmp_path: Path) -> None:
    catalogue = cat.load([own_signature(tmp_path / "mine", "Port taken")])
    shipped = shipment.build(catalogue)
    assert shipment.build(catalogue) == shipped  # the same bytes: Ray uploads the package once
    node = tmp_path / "node"
    with zipfile.ZipFile(shipped.path) as z:
        z.extractall(node)
    assert (node / "signatures" / "s0000" / "my-port.toml").is_file() and not (node / "sparktui" / "tui").exists()
    logs = tmp_path / "logs"
    logs.mkdir()
    names = []
    for log in LOGS:
        names.append(log.replace("/", "-"))
        shutil.copy(FIXTURES / log, logs / names[-1])
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": ""}  # nothing but the shipment
    done = subprocess.run(
        [sys.executable, "-c", NODE, shipped.digest, str(logs), *names], cwd=node, env=env, capture_output=True
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]

    edge = Correlation(catalogue)
    data = (node / "batches").read_bytes()
    while data:
        size = int.from_bytes(data[:8], "big")
        for item in unpack(data[8 : 8 + size]):
            if isinstance(item, Scanned):
                edge.add(item)
        data = data[8 + size :]
    here = Analyzer(catalogue)
    for name in names:
        here.add_source(name, "node-a")
        lines = LineSplitter().feed((logs / name).read_bytes())
        here.feed(name, "\n".join(lines))
    assert edge.diagnosis().as_dict() == here.finish().as_dict()
    assert {"my-port", "nccl-second-communicator-not-joined"} <= {f.signature for f in here.finish().findings}


def test_the_scan_reads_a_file_as_the_log_api_delivers_it(tmp_path: Path) -> None:
    """A partial last line waits for its newline; the node is the Ray node, whatever the lines say."""
    log = tmp_path / "worker.out"
    log.write_bytes((FIXTURES / LOGS[1]).read_bytes() + b"half a line")
    catalogue = cat.load()
    scan = NodeScan(
        cat.digest(catalogue), "127.0.0.9", [Target("w", "127.0.0.9", RAY, str(log))], follow=False, logs="/"
    )

    async def items() -> list[object]:
        return [item for data in [d async for d in scan.scan()] for item in unpack(data)]

    found = asyncio.run(items())
    scanned = [i for i in found if isinstance(i, Scanned)]
    assert scanned[-1].lines == 41 and scanned[-1].read_bytes == log.stat().st_size - len("half a line")
    assert {i.node for i in scanned} == {"127.0.0.9"}


def test_the_cluster_files_nodes_are_found_among_the_ray_nodes_by_name_or_address(tmp_path: Path) -> None:
    toml = tmp_path / "sparktui.toml"
    toml.write_text(
        '[[nodes]]\nname = "spark-a"\nssh = "nvidia@10.0.0.1"\nrole = "head"\n'
        'sources = ["ssh://10.0.0.1/var/log/engine.log", "ssh://10.0.0.1/journal/vllm"]\n'
        '[[nodes]]\nname = "spark-b"\nssh = "spark-b-alias:2222"\n'
        '[[nodes]]\nname = "spark-c"\nssh = "10.0.0.3"\n'
        '[deployment]\ncontainers = ["vllm_node"]\n'
    )
    cluster = clusterfile.load(toml)
    resolved = {"spark-b-alias": {"10.0.0.2"}}
    matched = match_nodes(["10.0.0.1", "10.0.0.2", "10.0.0.9"], cluster, lambda host: resolved.get(host, set()))
    assert {ray: node.name for ray, node in matched.items()} == {"10.0.0.1": "spark-a", "10.0.0.2": "spark-b"}
    logs, others = cluster_logs(cluster, cluster.nodes[0])
    assert [log.target for log in logs] == [
        Target("ssh://nvidia@10.0.0.1/docker/vllm_node", "10.0.0.1", CONTAINER, "vllm_node"),
        Target("10.0.0.1:/var/log/engine.log", "10.0.0.1", FILE, "/var/log/engine.log"),
    ]
    assert others == ["ssh://10.0.0.1/journal/vllm"]
