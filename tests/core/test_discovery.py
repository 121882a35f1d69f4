"""How `sparktui discover` picks the network NCCL, Gloo and Ray use from what it saw on the nodes: the
interface on which every node has an address in one subnet, one with RDMA devices first."""

from __future__ import annotations

from pathlib import Path

from sparktui.core import cluster as config
from sparktui.core.inventory.discover import NodeLook, cluster_file, network

# Two DGX Sparks as they are usually set up: the LAN with the default route on enP7s7, the QSFP link on
# enp1s0f1np1 (whose RDMA device is rocep1s0f1, its twin roceP2p1s0f1 on the other half of the port), and
# Docker's bridge.
HEAD = NodeLook(
    "nvidia@spark-a",
    hostname="spark-a",
    addresses=[
        ("lo", "127.0.0.1/8"),
        ("enP7s7", "10.0.0.21/24"),
        ("enp1s0f1np1", "192.168.100.10/24"),
        ("docker0", "172.17.0.1/16"),
    ],
    rdma={"rocep1s0f1": "enp1s0f1np1", "roceP2p1s0f1": "enP2p1s0f1np1"},
)
WORKER = NodeLook(
    "nvidia@spark-b",
    hostname="spark-b",
    addresses=[("enP7s7", "10.0.0.22/24"), ("enp1s0f1np1", "192.168.100.11/24"), ("docker0", "172.17.0.1/16")],
    rdma={"rocep1s0f1": "enp1s0f1np1", "roceP2p1s0f1": "enP2p1s0f1np1"},
)


def test_the_link_with_rdma_wins_over_the_lan() -> None:
    found = network(HEAD, [WORKER])
    assert found is not None
    assert (found.iface, found.head_ip, found.subnet, found.hca) == (
        "enp1s0f1np1",
        "192.168.100.10",
        "192.168.100.0/24",
        ("rocep1s0f1",),
    )


def test_without_rdma_the_shared_subnet_is_enough_and_bridges_never_count() -> None:
    head = NodeLook("a", addresses=[("docker0", "172.17.0.1/16"), ("eth0", "10.0.0.1/24")])
    worker = NodeLook("b", addresses=[("docker0", "172.17.0.1/16"), ("eth0", "10.0.0.2/24")])
    found = network(head, [worker])
    assert found is not None and (found.iface, found.hca) == ("eth0", ())


def test_no_shared_subnet_or_no_worker_gives_none() -> None:
    apart = NodeLook("b", addresses=[("enp1s0f1np1", "192.168.200.11/24")])
    assert network(HEAD, [apart]) is None
    assert network(HEAD, []) is None


def test_the_cluster_file_carries_the_network(tmp_path: Path) -> None:
    path = tmp_path / "sparktui.toml"
    path.write_text(cluster_file([HEAD, WORKER]))
    loaded = config.load(path)
    assert loaded.network == config.Network("enp1s0f1np1", "192.168.100.10", "rocep1s0f1")
    assert "# other RDMA devices seen: roceP2p1s0f1 (enP2p1s0f1np1)" in path.read_text()


def test_both_rails_of_the_cage_are_named_where_each_links_the_nodes() -> None:
    """The trial's C14: rocep1s0f1 and its twin roceP2p1s0f1 both ACTIVE, each on an interface with an address in
    a subnet both nodes share; discover named rocep1s0f1 alone, which `check` then calls rdma-one-rail-of-two."""
    twin = [("enP2p1s0f1np1", "10.20.22.10/24")], [("enP2p1s0f1np1", "10.20.22.20/24")]
    head = NodeLook(HEAD.target, hostname="spark-a", addresses=[*HEAD.addresses, *twin[0]], rdma=HEAD.rdma)
    worker = NodeLook(WORKER.target, hostname="spark-b", addresses=[*WORKER.addresses, *twin[1]], rdma=WORKER.rdma)
    found = network(head, [worker])
    assert found is not None and found.iface == "enp1s0f1np1"
    assert found.hca == ("rocep1s0f1", "roceP2p1s0f1")
    assert 'hca = "rocep1s0f1,roceP2p1s0f1"' in cluster_file([head, worker])
