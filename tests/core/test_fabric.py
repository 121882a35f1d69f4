"""The RDMA fabric of a node (issue 28): the parsers on real outputs (``tests/fixtures/fabric/``, copied from
``shared/reference/fabric/`` with their source lines), the fabric section of the inventory script run here over
sysfs-like trees built in tmp_path from those real samples' values, and the pre-launch checks over what it
reads.

The trees are not captures of a real /sys: each value written comes from a sample (a ``show_gids`` row, the
Spark's ``ibdev2netdev`` map, ``ip link``'s MTU, the GIDs of NCCL's completion error on a Spark pair); the
file layout and the formats (``4: ACTIVE``, ``RoCE v2``) are the kernel's, as the fabric README describes
them (drivers/infiniband/core/sysfs.c). What a sample does not give is said where it is chosen.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.events import Finding
from sparktui.core.inventory import collect, fabric, parse, rules, script
from sparktui.core.inventory.expr import UNKNOWN, Scope, compile_expression, evaluate
from sparktui.core.inventory.facts import Gid, ImageFacts, Interface, NodeInventory, Value
from sparktui.core.inventory.names import NO_RDMA, known, node_facts
from sparktui.core.inventory.preflight import judge
from sparktui.core.launch.serve import parse_launch
from sparktui.core.report.export import export
from sparktui.core.report.incident import Incident, Inventory

from ..conftest import ROOT
from ..servers.fabric import EMPTY, MAC_A, MAC_B, SPARK_DOWN, SPARK_UP, Port, spark_ports, tree

FABRIC = ROOT / "tests" / "fixtures" / "fabric"


def sample(name: str) -> str:
    """A sample's output, without its three lines of source, command and context."""
    lines = (FABRIC / name).read_text().splitlines()
    assert lines[0].startswith("# source: ")
    return "\n".join(lines[3:])


# The parsers, on real outputs.


def test_ibv_devinfo_of_a_spark_all_four_functions_active_at_mtu_1024() -> None:
    ports = parse.ibv_devinfo(sample("spark-ibv_devinfo-4hca-active-mtu-1024.txt"))
    assert [p.name for p in ports] == ["rocep1s0f0:1", "rocep1s0f1:1", "roceP2p1s0f0:1", "roceP2p1s0f1:1"]
    assert {(p.state, p.link_layer, p.active_mtu) for p in ports} == {("ACTIVE", "Ethernet", 1024)}


def test_ibv_devinfo_with_a_prompt_and_tabs_as_spaces_an_infiniband_port_down() -> None:
    (port,) = parse.ibv_devinfo(sample("ibv_devinfo-cx7-ib-port-down.txt"))  # mlx5_1's block is cut off
    assert (port.name, port.state, port.link_layer, port.active_mtu) == ("mlx5_0:1", "DOWN", "InfiniBand", 4096)


def test_ibv_devinfo_starting_inside_a_block_keeps_only_the_ports_of_a_named_device() -> None:
    (port,) = parse.ibv_devinfo(sample("ibv_devinfo-mixed-cx5-roce-mtu1024-and-cx7-ib.txt"))
    assert (port.name, port.state) == ("mlx5_7:1", "ACTIVE")  # the CX-5 before it has no hca_id here


def test_gids_as_sysfs_prints_them_link_local_ipv4_mapped_and_empty() -> None:
    values = re.findall(r"[0-9a-f]{4}(?::[0-9a-f]{4}){7}", sample("sysfs-gids-cat-linklocal-ipv4-and-empty-slots.txt"))
    assert len(values) == 4 and values[2] == values[3] == EMPTY
    local, mapped = Gid(0, values[0], "RoCE v2"), Gid(1, values[1], "RoCE v2")
    assert local.link_local and not local.ipv4
    assert mapped.ipv4 == "1.1.1.2" and not mapped.link_local and mapped.roce_v2
    assert not Gid(2, values[2], "").ipv4


@pytest.mark.parametrize(("netdev", "active"), [(1500, 1024), (4200, 4096), (9000, 4096), (1100, 512), (200, None)])
def test_the_active_mtu_of_roce_follows_the_network_devices(netdev: int, active: int | None) -> None:
    assert parse.roce_mtu(netdev) == active


# Sysfs-like trees, and the script's fabric section over them.


def run_fabric(ib: Path, net: Path) -> tuple[str, int]:
    """The script's fabric section, run by sh over ``ib`` and ``net`` as it runs on a node."""
    head = f"have() {{ command -v \"$1\" >/dev/null 2>&1; }}\nib='{ib}'\nsysnet='{net}'\n"
    program = head + script.FABRIC + "fabric_part\n"
    done = subprocess.run(["sh", "-c", program], capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr, done.returncode


def show_gids(name: str) -> list[list[tuple[str, int, int, str, str, str]]]:
    """The tables of a ``show_gids`` sample: (device, port, index, GID, version, netdev) per row, a list per
    table (one per pod in the two-pods sample)."""
    tables: list[list[tuple[str, int, int, str, str, str]]] = []
    for line in sample(name).splitlines():
        words = line.split()
        if words[:1] == ["DEV"]:
            tables.append([])
        elif len(words) >= 6 and words[1].isdigit() and words[2].isdigit():
            tables[-1].append((words[0], int(words[1]), int(words[2]), words[3], words[-2], words[-1].rstrip(".")))
    return tables


def as_port(rows: list[tuple[str, int, int, str, str, str]]) -> Port:
    kind = {"v1": "IB/RoCE v1", "v2": "RoCE v2"}
    return Port(rows[0][0], gids=[(i, gid, kind[v], dev) for _, _, i, gid, v, dev in rows], netdev=rows[0][5])


def test_the_fabric_section_reads_a_port_gid_table_with_its_ipv4_roce_v2_gid_at_index_5(tmp_path: Path) -> None:
    (rows,) = show_gids("show_gids-cx6-ipv4-gid-at-index-5.txt")
    ib, net = tree(tmp_path, [as_port(rows)], {"ens1f0": 1500})
    text, code = run_fabric(ib, net)
    assert code == 0 and "No such file" not in text
    (port,) = parse.fabric(text)
    assert (port.name, port.state, port.phys_state, port.link_layer) == ("mlx5_0:1", "ACTIVE", "LinkUp", "Ethernet")
    assert (port.netdev, port.netdev_mtu, port.active_mtu) == ("ens1f0", 1500, 1024)
    assert [g.index for g in port.gids] == [0, 1, 2, 3, 4, 5]  # the empty slots are left out
    assert [g.index for g in port.ipv4_roce_v2()] == [5] and port.ipv4_roce_v2()[0].ipv4 == "172.19.0.60"


def test_no_infiniband_folder_is_no_rdma_devices_not_a_failure(tmp_path: Path) -> None:
    text, code = run_fabric(tmp_path / "infiniband", tmp_path / "net")
    assert code == 0 and parse.fabric(text) == ()


@pytest.mark.slow  # the whole fabric script on this machine: about 20 s on a busy one
def test_this_machine_without_rdma_says_nccl_will_use_sockets() -> None:
    """The whole script, run here (no /sys/class/infiniband on this machine)."""
    if Path(script.IB_ROOT).exists():
        pytest.skip("this machine has RDMA devices")
    run = script.nonce()
    request = script.Request(probe=False)
    done = subprocess.run(["sh", "-c", script.script(request, run)], capture_output=True, text=True, timeout=120)
    inv = collect.inventory("local", script.split((done.stdout + done.stderr).splitlines(), run), request)
    assert inv.fabric == () and "fabric" not in inv.unknown
    alone = judge([inv], {"local"}, None, rules.builtin())
    assert alone.facts["local"].reasons["rdma.gid_index"] == NO_RDMA == "no RDMA devices: NCCL will use sockets"
    assert not [f for f in alone.findings if f.signature.startswith("rdma-")]  # one machine needs no network
    assert not [n for n in alone.not_checked if n.rule.id.startswith("rdma-")]
    pair = judge([inv, replace(inv, node="other")], {"local"}, None, rules.builtin())
    (none,) = [f for f in pair.findings if f.signature.startswith("rdma-")]
    assert none.signature == "rdma-none" and none.verdict == "advice" and none.nodes == ("local", "other")
    assert none.detail.startswith("no RDMA devices, or none ACTIVE, on local (its RDMA ports: none)")
    assert none.detail.endswith("NCCL will use sockets")


# The facts and the checks: a Spark pair (tests/servers/fabric.py says which values come from which sample),
# with the addresses of the GIDs of NCCL's completion error on rocep1s0f1 of a Spark pair (10.20.21.10 and
# .20) and a /24 prefix (chosen), MTU 1500 from ip link on a Spark.


def spark(
    tmp_path: Path, name: str, address: str, mac: str, *, ipv4_at: int = 2, mtu: int = 1500, twin: str = ""
) -> NodeInventory:
    """A Spark's inventory with its fabric read by the script from a tree."""
    netdevs = [*SPARK_DOWN.values(), *SPARK_UP.values()]
    ports = spark_ports(address, mac, ipv4_at=ipv4_at, twin=twin)
    ib, net = tree(tmp_path / name, ports, {n: mtu for n in netdevs})
    text, code = run_fabric(ib, net)
    assert code == 0
    given = {"enp1s0f1np1": address, "enP2p1s0f1np1": twin}
    interfaces = tuple(Interface(n, "UP", mtu, (f"{given[n]}/24",) if given.get(n) else ()) for n in netdevs)
    return NodeInventory(name, hostname=name, interfaces=interfaces, fabric=parse.fabric(text))


def fabric_findings(
    nodes: list[NodeInventory], launch: str = "vllm serve /m --tensor-parallel-size 2"
) -> dict[str, Finding]:
    result = judge(nodes, {nodes[0].node}, parse_launch(launch), rules.builtin())
    return {f.signature: f for f in result.findings if f.signature.startswith("rdma-")}


def test_a_clean_spark_pair_gives_no_fabric_finding(tmp_path: Path) -> None:
    a = spark(tmp_path, "spark-a", "10.20.21.10", MAC_A)
    b = spark(tmp_path, "spark-b", "10.20.21.20", MAC_B)
    facts = node_facts(a, head=True).values
    assert facts["rdma.active_ports"] == ("roceP2p1s0f1:1", "rocep1s0f1:1")
    assert facts["rdma.port_states"][0] == "roceP2p1s0f0:1=DOWN"
    assert facts["rdma.gid_index"] == ("roceP2p1s0f1:1=none", "rocep1s0f1:1=3")
    assert facts["rdma.subnets"] == ("10.20.21.0/24",)
    assert facts["rdma.mtu_by_subnet"] == ("10.20.21.0/24=1024",)
    assert fabric_findings([a, b], "NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 vllm serve /m --tensor-parallel-size 2") == {}
    one = fabric_findings([a, b], "NCCL_IB_HCA=rocep1s0f1 vllm serve /m --tensor-parallel-size 2")
    assert set(one) == {"rdma-one-rail-of-two"} and one["rdma-one-rail-of-two"].verdict == "slow"
    assert "NCCL_IB_HCA=rocep1s0f1 on spark-a selects rocep1s0f1:1 alone, of its active RDMA ports" in str(
        one["rdma-one-rail-of-two"].detail
    )


def test_the_ipv4_gid_moved_on_one_node_under_a_pinned_index_blocks_with_the_index_to_use(tmp_path: Path) -> None:
    a = spark(tmp_path, "spark-a", "10.20.21.10", MAC_A, twin="10.20.22.10")
    b = spark(tmp_path, "spark-b", "10.20.21.20", MAC_B, twin="10.20.22.20", ipv4_at=3)  # IPv4 RoCE v2 at 4
    found = fabric_findings([a, b], "NCCL_IB_GID_INDEX=3 vllm serve /m --tensor-parallel-size 2")
    assert set(found) == {"rdma-gid-index-pinned-wrong"}
    finding = found["rdma-gid-index-pinned-wrong"]
    assert finding.nodes == ("spark-b",) and finding.verdict == "block"
    assert (
        "where that index holds roceP2p1s0f1:1/3=IPv4 10.20.22.20 IB/RoCE v1, "
        "rocep1s0f1:1/3=IPv4 10.20.21.20 IB/RoCE v1" in finding.detail
    )
    assert "the IPv4 RoCE v2 GID is at roceP2p1s0f1:1=4, rocep1s0f1:1=4" in finding.detail
    assert fabric_findings([a, b], "NCCL_IB_GID_INDEX=4 vllm serve /m --tensor-parallel-size 2").keys() == {
        "rdma-gid-index-pinned-wrong"  # then spark-a is the one that is wrong
    }


def test_a_pinned_index_on_both_twins_of_which_one_has_only_link_local_gids_blocks(tmp_path: Path) -> None:
    a = spark(tmp_path, "spark-a", "10.20.21.10", MAC_A)
    b = spark(tmp_path, "spark-b", "10.20.21.20", MAC_B)
    found = fabric_findings([a, b], "NCCL_IB_GID_INDEX=3 vllm serve /m --tensor-parallel-size 2")
    assert found["rdma-gid-index-pinned-wrong"].nodes == ("spark-a", "spark-b")
    detail = found["rdma-gid-index-pinned-wrong"].detail
    assert "roceP2p1s0f1:1=none" in detail and "where that index holds roceP2p1s0f1:1/3=empty;" in detail
    found = fabric_findings([a, b], "NCCL_IB_GID_INDEX=1 vllm serve /m --tensor-parallel-size 2")
    assert "index holds roceP2p1s0f1:1/1=link-local RoCE v2, rocep1s0f1:1/1=link-local RoCE v2;" in str(
        found["rdma-gid-index-pinned-wrong"].detail
    )


def test_a_node_left_with_link_local_gids_only_blocks(tmp_path: Path) -> None:
    a = spark(tmp_path, "spark-a", "10.20.21.10", MAC_A)
    b = spark(tmp_path, "spark-b", "", MAC_B)
    found = fabric_findings([a, b])
    assert set(found) == {"rdma-no-shared-ipv4-gid"}
    assert "spark-b: none" in found["rdma-no-shared-ipv4-gid"].detail


def test_one_end_at_mtu_9000_the_other_at_1500_blocks(tmp_path: Path) -> None:
    a = spark(tmp_path, "spark-a", "10.20.21.10", MAC_A, mtu=9000)
    b = spark(tmp_path, "spark-b", "10.20.21.20", MAC_B)
    found = fabric_findings([a, b])
    assert set(found) == {"rdma-mtu-differs"}
    assert "spark-a: 10.20.21.0/24=4096; spark-b: 10.20.21.0/24=1024" in found["rdma-mtu-differs"].detail


def test_nccl_ib_hca_naming_the_cage_with_no_cable_blocks(tmp_path: Path) -> None:
    a = spark(tmp_path, "spark-a", "10.20.21.10", MAC_A)
    b = spark(tmp_path, "spark-b", "10.20.21.20", MAC_B)
    found = fabric_findings([a, b], "NCCL_IB_HCA=rocep1s0f0,roceP2p1s0f1 vllm serve /m --tensor-parallel-size 2")
    assert set(found) == {"rdma-hca-not-active", "rdma-one-rail-of-two"}  # roceP2p1s0f1 alone is used
    assert found["rdma-hca-not-active"].nodes == ("spark-a", "spark-b")
    assert "no ACTIVE port for rocep1s0f0; its RDMA ports: roceP2p1s0f0:1=DOWN" in found["rdma-hca-not-active"].detail


def test_the_cages_crossed_between_the_nodes_put_one_port_on_two_subnets(tmp_path: Path) -> None:
    a = spark(tmp_path, "spark-a", "10.20.21.10", MAC_A, twin="10.20.22.10")
    b = spark(tmp_path, "spark-b", "10.20.22.20", MAC_B, twin="10.20.21.20")
    assert node_facts(b, head=False).values["rdma.subnet_by_port"] == (
        "roceP2p1s0f1:1=10.20.21.0/24",
        "rocep1s0f1:1=10.20.22.0/24",
    )
    found = fabric_findings([a, b])
    assert set(found) == {"rdma-port-subnets-differ"}  # both subnets are shared: only the pairing is wrong
    assert found["rdma-port-subnets-differ"].detail.startswith("roceP2p1s0f1:1, rocep1s0f1:1 on different subnets")
    b = spark(tmp_path / "again", "spark-b", "10.20.21.20", MAC_B, twin="10.20.22.20")
    assert fabric_findings([a, b]) == {}


def test_two_pods_on_one_hca_with_the_ipv4_gid_at_5_and_7(tmp_path: Path) -> None:
    first, second = show_gids("show_gids-two-pods-same-hca-different-index.txt")
    nodes = []
    for name, rows in (("pod-a", first), ("pod-b", second)):
        ib, net = tree(tmp_path / name, [as_port(rows)], {"net1": 1500})
        fabric = parse.fabric(run_fabric(ib, net)[0])
        address = fabric[0].ipv4_roce_v2()[0].ipv4
        nodes.append(
            NodeInventory(name, interfaces=(Interface("net1", "UP", 1500, (f"{address}/16",)),), fabric=fabric)
        )
    assert node_facts(nodes[1], head=False).values["rdma.gid_index"] == ("mlx5_4:1=7",)
    found = fabric_findings(nodes, "NCCL_IB_GID_INDEX=5 vllm serve /m --tensor-parallel-size 2")
    assert set(found) == {"rdma-gid-index-pinned-wrong"} and found["rdma-gid-index-pinned-wrong"].nodes == ("pod-b",)
    assert fabric_findings(nodes, "NCCL_IB_GID_INDEX= vllm serve /m --tensor-parallel-size 2").keys() == {
        "rdma-gid-index-empty"
    }


def test_nccl_conf_sets_what_the_environment_does_not() -> None:
    probe = ImageFacts(
        "container vllm",
        env={"NCCL_IB_HCA": "rocep1s0f1"},
        nccl_conf={
            "/etc/nccl.conf": "# site\nNCCL_IB_GID_INDEX=3\nNCCL_IB_HCA=mlx5\n",
            "~/.nccl.conf": "NCCL_IB_GID_INDEX = 4",
        },
    )
    values = node_facts(NodeInventory("n", probe=probe), head=True).values
    assert values["env.NCCL_IB_GID_INDEX"] == "4" and values["env.NCCL_IB_HCA"] == "rocep1s0f1"


# The functions the checks gained.


def value(text: str, facts: dict[str, Value], nodes: dict[str, dict[str, Value]] | None = None) -> object:
    return evaluate(compile_expression(text, known), Scope(facts, nodes or {}))[0]


def test_nccl_ib_hca_matching_as_nccl_does() -> None:
    ports = ("mlx5_0:1", "mlx5_1:1", "mlx5_10:1")
    assert value("hca_ports('mlx5_1', rdma.ports)", {"rdma.ports": ports}) == ("mlx5_1:1", "mlx5_10:1")
    assert value("hca_ports('=mlx5_1', rdma.ports)", {"rdma.ports": ports}) == ("mlx5_1:1",)
    assert value("hca_ports('^=mlx5_1', rdma.ports)", {"rdma.ports": ports}) == ("mlx5_0:1", "mlx5_10:1")
    assert value("hca_ports('mlx5_0:2', rdma.ports)", {"rdma.ports": ports}) == ()
    assert value("unmatched_hcas('mlx5_0:2,mlx5_1', rdma.ports)", {"rdma.ports": ports}) == ("mlx5_0:2",)


def test_what_each_port_holds_at_a_gid_index() -> None:
    table = ("a:1/0=link-local RoCE v1", "a:1/3=IPv4 10.0.0.1 RoCE v2")
    facts: dict[str, Value] = {"rdma.gids": table, "rdma.gid_index": ("a:1=3", "b:1=none")}
    assert value("gid_at(rdma.gids, rdma.gid_index, 0)", facts) == ("a:1/0=link-local RoCE v1", "b:1/0=empty")


def test_common_and_disagree_over_the_nodes() -> None:
    nodes = {"a": {"rdma.subnets": ("x", "y")}, "b": {"rdma.subnets": ("y",)}, "c": {}}
    assert value("common('rdma.subnets')", {}, nodes) == ("y",)
    assert value("common('rdma.subnets')", {}, {"a": nodes["a"]}) is UNKNOWN
    mtus = {"a": {"rdma.mtu_by_subnet": ("x=1024", "y=4096")}, "b": {"rdma.mtu_by_subnet": ("x=4096",)}}
    assert value("disagree('rdma.mtu_by_subnet')", {}, mtus) == ("x",)


def test_a_node_whose_fabric_could_not_be_read_leaves_unset_nccl_variables_unjudged_quietly() -> None:
    """Without NCCL_IB_HCA or a pinned GID index nothing needs the fabric: those checks are decided, not
    'not checked'; the fabric's own facts carry the reason."""
    inv = NodeInventory("n", unknown={"fabric": "not printed (the script was cut off)"})
    result = judge([inv], {"n"}, parse_launch("vllm serve /m"), rules.builtin())
    assert not [n.rule.id for n in result.not_checked if n.rule.id.startswith("rdma-")]
    assert result.facts["n"].reasons["rdma.ports"] == "not printed (the script was cut off)"
    pinned = judge([inv], {"n"}, parse_launch("NCCL_IB_HCA=mlx5_0 vllm serve /m"), rules.builtin())
    (lacking,) = [n for n in pinned.not_checked if n.rule.id == "rdma-hca-not-active"]
    assert lacking.lacking == (("rdma.active_ports", "not printed (the script was cut off)"),)


# The fabric table of sparktui check and its report: per node, per port.


def test_the_fabric_table_has_every_port_of_every_node_and_why_a_node_has_none(tmp_path: Path) -> None:
    a = spark(tmp_path, "spark-a", "10.20.21.10", MAC_A, mtu=9000)
    b = spark(tmp_path, "spark-b", "10.20.21.20", MAC_B, ipv4_at=3)
    gone = NodeInventory("spark-c", error="ssh: connect to host spark-c port 22: Connection refused")
    table = fabric.rows([a, b, NodeInventory("local"), gone])
    by = {(r.node, r.port): r for r in table}
    up = by[("spark-a", "rocep1s0f1:1")]
    assert (up.state, up.link_layer, up.active_mtu, up.netdev, up.netdev_mtu) == (
        "ACTIVE",
        "Ethernet",
        "4096",
        "enp1s0f1np1",
        "9000",
    )
    assert (up.gid, up.ipv4) == ("3", "10.20.21.10/24")
    assert (by[("spark-b", "rocep1s0f1:1")].gid, by[("spark-b", "rocep1s0f1:1")].active_mtu) == ("4", "1024")
    assert by[("spark-b", "roceP2p1s0f1:1")].gid == "none"  # the twin: link-local GIDs only
    down = by[("spark-a", "rocep1s0f0:1")]
    assert (down.state, down.gid, down.ipv4) == ("DOWN", "", "")
    assert by[("local", "")].note == NO_RDMA
    assert by[("spark-c", "")].note.startswith("not asked: ssh: connect to host spark-c")
    shown = fabric.lines(table)
    assert shown[0].split() == [
        "node",
        "port",
        "state",
        "link",
        "MTU",
        "netdev",
        "netdev",
        "MTU",
        "RoCE",
        "v2",
        "GID",
        "IPv4",
    ]
    assert re.search(
        r"^spark-a +rocep1s0f1:1 +ACTIVE +Ethernet +4096 +enp1s0f1np1 +9000 +3 +10\.20\.21\.10/24$",
        "\n".join(shown),
        re.M,
    )
    assert f"local    {NO_RDMA}" in shown


def test_the_check_report_carries_the_fabric_table(tmp_path: Path) -> None:
    a = spark(tmp_path, "spark-a", "10.20.21.10", MAC_A)
    b = spark(tmp_path, "spark-b", "10.20.21.20", MAC_B, ipv4_at=3)
    found = judge([a, b], {"spark-a"}, parse_launch("NCCL_IB_GID_INDEX=3 vllm serve /m -tp 2"), rules.builtin())
    inventory = Inventory(found.verdict, tuple(found.verdicts.items()), found.drift, 0.0, fabric.rows([a, b]))
    incident = Incident(Diagnosis((), found.findings, {}), title="sparktui check", inventory=inventory)
    written = {p.name: p for p in export(incident, tmp_path / "report")}
    md = written["report.md"].read_text()
    row = "| `spark-b` | `rocep1s0f1:1` | `ACTIVE` | `Ethernet` | `1024` | `enp1s0f1np1` | `1500` | `4` | "
    row += "`10.20.21.20/24` |"
    assert "### Fabric" in md and row in md
    report = json.loads(written["report.json"].read_text())
    rows = report["inventory"]["fabric"]
    assert len(rows) == 8 and {r["gid"] for r in rows if r["port"] == "rocep1s0f1:1"} == {"3", "4"}
    assert 'class="fabric"' in written["report.html"].read_text()
    hidden = export(incident, tmp_path / "anonymised", anonymise_hosts=True, hosts=["spark-a", "spark-b"])
    md = next(p for p in hidden if p.name == "report.md").read_text()
    assert "### Fabric" in md and "spark-a" not in md and "10.20.21.20" not in md
