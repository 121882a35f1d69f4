"""``sparktui check`` on the two spark test nodes with an RDMA fabric (issue 28): a sysfs-like tree bound over
/sys/class/infiniband inside each node's mount namespace, built from real samples' values
(tests/servers/fabric.py says which) with the node's own address in its IPv4 GIDs, read by the inventory
script over SSH like any node's. Each planted fault gives its finding, verdict and the per-node value to
use; the clean pair is in test_check_on_sparks.py (test_a_clean_pair_is_ready)."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparktui.cli import main
from tests.servers.fabric import MAC_A, MAC_B, mounted, spark_ports
from tests.servers.sparks import IFACE, SparkNode, Sparks, audit
from tests.sparks.test_playbooks_on_sparks import NODES, ray_start_cluster


def checked(capsys: pytest.CaptureFixture[str], launch: str) -> tuple[int, dict[str, object]]:
    code = main(["check", "--json", "--no-probe", "spark-a", "spark-b", "--launch", launch])
    return code, json.loads(capsys.readouterr().out)


def fabric(found: dict[str, object]) -> dict[str, dict[str, object]]:
    return {f["signature"]: f for f in found["findings"] if f["signature"].startswith("rdma-")}  # type: ignore[attr-defined, index]


@pytest.fixture
def jumbo_on_a(sparks: Sparks) -> Iterator[None]:
    """spark-a's ConnectX interface at MTU 9000, spark-b's left at 1500 (as after a firmware reboot)."""
    sparks.head.run(f"ip link set {IFACE} mtu 9000")
    try:
        yield
    finally:
        sparks.head.run(f"ip link set {IFACE} mtu 1500", check=False)


def test_a_moved_gid_under_a_pinned_index_an_uncabled_hca_and_mtus_that_differ_block(
    sparks: Sparks, tmp_path: Path, jumbo_on_a: None, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = sparks.head, sparks["spark-b"]
    trees = {"spark-a": spark_ports(a.address, MAC_A), "spark-b": spark_ports(b.address, MAC_B, ipv4_at=3)}
    launch = "NCCL_IB_HCA=rocep1s0f0,rocep1s0f1 NCCL_IB_GID_INDEX=3 vllm serve /m --tensor-parallel-size 2"
    with mounted(sparks, tmp_path, trees):
        code, found = checked(capsys, launch)
    assert code == 1 and found["verdict"] == "block"
    named = fabric(found)
    blocks = {"rdma-hca-not-active", "rdma-gid-index-pinned-wrong", "rdma-mtu-differs"}
    assert set(named) == {*blocks, "rdma-one-rail-of-two"}  # the twin roceP2p1s0f1, active, is left out
    assert {s for s, f in named.items() if f["verdict"] == "block"} == blocks
    assert named["rdma-hca-not-active"]["nodes"] == ["spark-a", "spark-b"]
    assert "no ACTIVE port for rocep1s0f0; its RDMA ports: roceP2p1s0f0:1=DOWN" in str(
        named["rdma-hca-not-active"]["detail"]
    )
    pinned = named["rdma-gid-index-pinned-wrong"]
    assert pinned["nodes"] == ["spark-b"]
    said = f"NCCL_IB_GID_INDEX=3 on spark-b, where that index holds rocep1s0f1:1/3=IPv4 {b.address} IB/RoCE v1; "
    assert said + "there the IPv4 RoCE v2 GID is at rocep1s0f1:1=4" in str(pinned["detail"])
    subnet = ipaddress.ip_network(f"{a.address}/24", strict=False)
    assert f"spark-a: {subnet}=4096; spark-b: {subnet}=1024" in str(named["rdma-mtu-differs"]["detail"])
    facts = found["nodes"]["spark-b"]["facts"]  # type: ignore[index]
    assert facts["rdma.gid_index"] == ["roceP2p1s0f1:1=none", "rocep1s0f1:1=4"]
    assert facts["rdma.port_states"] == [
        "roceP2p1s0f0:1=DOWN",
        "roceP2p1s0f1:1=ACTIVE",
        "rocep1s0f0:1=DOWN",
        "rocep1s0f1:1=ACTIVE",
    ]


def test_a_node_with_link_local_gids_only_blocks_and_an_empty_gid_index_is_said(
    sparks: Sparks, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = sparks.head
    trees = {"spark-a": spark_ports(a.address, MAC_A), "spark-b": spark_ports("", MAC_B)}
    with mounted(sparks, tmp_path, trees):
        _, found = checked(capsys, "NCCL_IB_GID_INDEX= vllm serve /m --tensor-parallel-size 2")
    named = fabric(found)
    assert set(named) == {"rdma-no-shared-ipv4-gid", "rdma-gid-index-empty"}
    assert named["rdma-no-shared-ipv4-gid"]["verdict"] == "block"
    subnet = ipaddress.ip_network(f"{a.address}/24", strict=False)
    assert f"spark-a: {subnet}; spark-b: none" in str(named["rdma-no-shared-ipv4-gid"]["detail"])
    assert named["rdma-gid-index-empty"]["verdict"] == "advice"
    assert "NCCL ignores an empty value" in str(named["rdma-gid-index-empty"]["detail"])


#: Two rails' subnets of their own, added to the nodes' interface for the crossed-cables test only.
RAIL_ONE, RAIL_TWO = ipaddress.ip_network("10.231.1.0/24"), ipaddress.ip_network("10.231.2.0/24")


@pytest.fixture
def two_rails(sparks: Sparks) -> Iterator[None]:
    """Each node's interface holds an address on each rail's subnet (.1 on spark-a, .2 on spark-b)."""
    added = [(n, f"{net[host]}/24") for n, host in (("spark-a", 1), ("spark-b", 2)) for net in (RAIL_ONE, RAIL_TWO)]
    for name, given in added:
        sparks[name].run(f"ip addr add {given} dev {IFACE}")
    try:
        yield
    finally:
        for name, given in added:
            sparks[name].run(f"ip addr del {given} dev {IFACE}", check=False)


def test_crossed_cables_put_one_port_name_on_two_subnets_and_block(
    sparks: Sparks, tmp_path: Path, two_rails: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """spark-a's rocep1s0f1 is on rail one and its twin on rail two; spark-b is cabled the other way round, so
    NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 pairs each port with a peer it cannot reach."""
    one_a, two_a, one_b, two_b = (str(net[host]) for host in (1, 2) for net in (RAIL_ONE, RAIL_TWO))
    trees = {
        "spark-a": spark_ports(one_a, MAC_A, twin=two_a),
        "spark-b": spark_ports(two_b, MAC_B, twin=one_b),
    }
    with mounted(sparks, tmp_path, trees):
        code, found = checked(capsys, "NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 vllm serve /m --tensor-parallel-size 2")
    assert code == 1 and found["verdict"] == "block"
    crossed = fabric(found)["rdma-port-subnets-differ"]
    assert crossed["verdict"] == "block"
    detail = str(crossed["detail"])
    assert f"rocep1s0f1:1={RAIL_ONE}; spark-b: roceP2p1s0f1:1={RAIL_ONE}, rocep1s0f1:1={RAIL_TWO}" in detail


def test_without_a_tree_the_nodes_have_no_rdma_and_nccl_will_use_sockets(
    sparks: Sparks, capsys: pytest.CaptureFixture[str]
) -> None:
    _, found = checked(capsys, "vllm serve /m --tensor-parallel-size 2")
    named = fabric(found)
    assert set(named) == {"rdma-none"} and named["rdma-none"]["verdict"] == "advice"
    assert named["rdma-none"]["nodes"] == ["spark-a", "spark-b"]
    unknown = found["nodes"]["spark-a"]["unknown"]  # type: ignore[index]
    assert unknown["rdma.gid_index"] == "no RDMA devices: NCCL will use sockets"


def test_the_fabric_table_is_shown_and_in_the_report(
    sparks: Sparks, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = sparks.head, sparks["spark-b"]
    trees = {"spark-a": spark_ports(a.address, MAC_A), "spark-b": spark_ports(b.address, MAC_B, ipv4_at=3)}
    launch = "NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 vllm serve /m --tensor-parallel-size 2"
    report = tmp_path / "report"
    with mounted(sparks, tmp_path / "trees", trees):
        main(["check", "--no-probe", "spark-a", "spark-b", "--launch", launch, "--report", str(report)])
    shown = capsys.readouterr().out
    assert "fabric (RDMA ports, from /sys/class/infiniband):" in shown
    lines = [" ".join(line.split()) for line in shown.splitlines()]
    assert f"spark-a rocep1s0f1:1 ACTIVE Ethernet 1024 {IFACE} 1500 3 {a.address}/24" in lines
    assert f"spark-b rocep1s0f1:1 ACTIVE Ethernet 1024 {IFACE} 1500 4 {b.address}/24" in lines
    assert any(line.startswith("spark-a roceP2p1s0f0:1 DOWN Ethernet") for line in lines)
    md = (report / "report.md").read_text()
    assert "### Fabric" in md and f"`{b.address}/" in md


# The remedy: set-nccl-ib-per-node, run with sparktui play on the spark test nodes (Ray in their engine
# containers), each reading its own tree.


def raylet_environ(node: SparkNode) -> list[str]:
    raylets = r"for p in $(pgrep raylet); do tr '\000' '\n' < /proc/$p/environ 2>/dev/null; done; true"
    return node.run(raylets).stdout.splitlines()


def per_node(sparks: Sparks, *extra: str, serve: str = "vllm serve org/model --tensor-parallel-size 2") -> int:
    given = ["--set", "container=vllm_node", "--set", f"head_ip={sparks.head.address}"]
    given += ["--set", f"serve={serve}", "--set", "port=18091"]
    return main(["play", "set-nccl-ib-per-node", *NODES, *given, *extra, "--yes"])


def test_each_node_gets_its_own_values_and_the_pinned_index_is_taken_out(sparks: Sparks, tmp_path: Path) -> None:
    a, b = sparks.head, sparks["spark-b"]
    trees = {"spark-a": spark_ports(a.address, MAC_A), "spark-b": spark_ports(b.address, MAC_B, ipv4_at=3)}
    assert ray_start_cluster(sparks) == 0
    with mounted(sparks, tmp_path, trees):
        assert per_node(sparks) == 0
    assert ("spark-a", "verify", 0) in audit()
    for node in sparks:
        environ = raylet_environ(node)
        assert "NCCL_IB_HCA==rocep1s0f1:1" in environ and "NCCL_IB_DISABLE=0" in environ
        assert not [v for v in environ if v.startswith("NCCL_IB_GID_INDEX=")]
    where = "${VLLM_CONFIG_ROOT:-${XDG_CONFIG_HOME:-$HOME/.config}/vllm}/ray_non_carry_over_env_vars.json"
    kept = a.run(f"docker exec vllm_node sh -c 'cat \"{where}\"'").stdout
    assert json.loads(kept) == ["NCCL_IB_HCA", "NCCL_IB_GID_INDEX"]
    serve = a.run("tr '\\000' '\\n' < /proc/$(pgrep -o -f 'vllm serve')/environ").stdout.splitlines()
    assert "NCCL_IB_HCA==rocep1s0f1:1" in serve


def test_the_launchs_own_nccl_ib_values_do_not_undo_each_nodes(sparks: Sparks, tmp_path: Path) -> None:
    """The trial's C15: a launch of the README's form (`NCCL_IB_HCA=... NCCL_IB_GID_INDEX=3 vllm serve ...`) was
    relaunched as written, its own values overriding the head's in vllm serve. They are taken out."""
    a, b = sparks.head, sparks["spark-b"]
    trees = {"spark-a": spark_ports(a.address, MAC_A), "spark-b": spark_ports(b.address, MAC_B, ipv4_at=3)}
    assert ray_start_cluster(sparks) == 0
    launch = "NCCL_IB_HCA=rocep1s0f0,rocep1s0f1 NCCL_IB_GID_INDEX=3 vllm serve org/model --tensor-parallel-size 2"
    with mounted(sparks, tmp_path, trees):
        assert per_node(sparks, serve=launch) == 0
    # the newest: vLLM itself, not the sh -c that started it (the launch's own values were not in its environment);
    # [v] keeps the shell that runs pgrep out
    serve = a.run("tr '\\000' '\\n' < /proc/$(pgrep -n -f '[v]llm serve')/environ").stdout.splitlines()
    assert "NCCL_IB_HCA==rocep1s0f1:1" in serve
    assert not [v for v in serve if v.startswith("NCCL_IB_GID_INDEX=")]


def test_pinned_each_node_gets_its_own_index(sparks: Sparks, tmp_path: Path) -> None:
    a, b = sparks.head, sparks["spark-b"]
    trees = {"spark-a": spark_ports(a.address, MAC_A), "spark-b": spark_ports(b.address, MAC_B, ipv4_at=3)}
    assert ray_start_cluster(sparks) == 0
    with mounted(sparks, tmp_path, trees):
        assert per_node(sparks, "--set", "gid=pin") == 0
    assert "NCCL_IB_GID_INDEX=3" in raylet_environ(a) and "NCCL_IB_GID_INDEX=4" in raylet_environ(b)


def test_a_node_with_no_usable_port_stops_it_before_any_change(
    sparks: Sparks, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = sparks.head
    trees = {"spark-a": spark_ports(a.address, MAC_A), "spark-b": spark_ports("", MAC_B)}  # link-local only
    assert ray_start_cluster(sparks) == 0
    before = raylet_environ(a)
    with mounted(sparks, tmp_path, trees):
        assert per_node(sparks) == 1
    said = capsys.readouterr().out
    assert "Failed before changing anything" in said and "no ACTIVE RoCE port with an IPv4 RoCE v2 GID" in said
    assert "this node: NCCL_IB_HCA==rocep1s0f1:1 NCCL_IB_GID_INDEX=(unset)" in said  # spark-a's, shown first
    assert raylet_environ(a) == before  # Ray was not restarted
