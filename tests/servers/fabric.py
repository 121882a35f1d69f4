"""Sysfs-like RDMA trees for the fabric tests (issue 28): ``/sys/class/infiniband`` as the kernel lays it out
(drivers/infiniband/core/sysfs.c, described in shared/reference/fabric/README.md), written from the values of
real samples, and bound over ``/sys/class/infiniband`` inside a spark test node's mount namespace.

Values taken from samples in tests/fixtures/fabric/: the DGX Spark's four RDMA functions and their network
devices, cabled in the second cage (``spark-ibdev2netdev-two-sparks-port1-up.txt``: rocep1s0f1 and
roceP2p1s0f1 Up, the others Down); a down port's ``1: DOWN`` / ``3: Disabled`` (the Dell GB10's ibstat,
in sysfs's spelling); the link-local GIDs from the MAC addresses of ``spark-ip-link-mtu1500.txt``; the GID
layout (link-local v1/v2 at 0 and 1, the IPv4 ones at 2 and 3) of ``show_gids-h100-ipv4-rocev2-at-index-3``.
The IPv4 addresses are the ones the caller gives (the test nodes' own, where the tree is mounted on them).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.servers.sparks import SparkNode, Sparks

EMPTY = ":".join(["0000"] * 8)
MAC_A, MAC_B = "32c5:99ff:fe3e:6a14", "32c5:99ff:fe3e:6a13"
SPARK_DOWN = {"roceP2p1s0f0": "enP2p1s0f0np0", "rocep1s0f0": "enp1s0f0np0"}
SPARK_UP = {"roceP2p1s0f1": "enP2p1s0f1np1", "rocep1s0f1": "enp1s0f1np1"}


@dataclass
class Port:
    device: str
    state: str = "4: ACTIVE"
    phys: str = "5: LinkUp"
    layer: str = "Ethernet"
    gids: list[tuple[int, str, str, str]] = field(default_factory=list)  # index, GID, type, netdev
    netdev: str = ""
    number: int = 1
    slots: int = 16


def ipv4_gid(address: str) -> str:
    """The IPv4-mapped GID of ``address`` as sysfs prints it."""
    a, b, c, d = (int(x) for x in address.split("."))
    return f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"


def tree(root: Path, ports: list[Port], mtus: dict[str, int] | None = None) -> tuple[Path, Path]:
    """``root/infiniband`` and ``root/net`` (each netdev's ``mtu``) as sysfs lays them out. Empty GID slots read
    all zeros and have no type or netdev file (reading those fails on a real system)."""
    ib, net = root / "infiniband", root / "net"
    ib.mkdir(parents=True, exist_ok=True)
    for port in ports:
        device = ib / port.device
        if port.netdev:
            (device / "device" / "net" / port.netdev).mkdir(parents=True, exist_ok=True)
        p = device / "ports" / str(port.number)
        for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
            (p / sub).mkdir(parents=True)
        for name, value in (("state", port.state), ("phys_state", port.phys), ("link_layer", port.layer)):
            (p / name).write_text(value + "\n")
        (p / "rate").write_text("200 Gb/sec (4X HDR)\n")
        given = {g[0]: g for g in port.gids}
        for index in range(max([port.slots, *(g[0] + 1 for g in port.gids)])):
            if index not in given:
                (p / "gids" / str(index)).write_text(EMPTY + "\n")
                continue
            _, value, kind, owner = given[index]
            (p / "gids" / str(index)).write_text(value + "\n")
            (p / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")
            (p / "gid_attrs" / "ndevs" / str(index)).write_text(owner + "\n")
    for name, mtu in (mtus or {}).items():
        (net / name).mkdir(parents=True, exist_ok=True)
        (net / name / "mtu").write_text(f"{mtu}\n")
    return ib, net


def spark_ports(address: str, mac: str, *, ipv4_at: int = 2, twin: str = "") -> list[Port]:
    """A Spark cabled in its second cage: ``address`` on rocep1s0f1's network device, its IPv4 GIDs (v1, then
    v2) at ``ipv4_at`` and the next index; "" for a port left with link-local GIDs only. The twin
    roceP2p1s0f1 is up with link-local GIDs only (no address for it is cited), or with ``twin``'s."""
    ports = [Port(d, state="1: DOWN", phys="3: Disabled", netdev=n) for d, n in SPARK_DOWN.items()]
    for device, netdev in SPARK_UP.items():
        local = f"fe80:0000:0000:0000:{mac}"
        gids = [(0, local, "IB/RoCE v1", netdev), (1, local, "RoCE v2", netdev)]
        given = address if device == "rocep1s0f1" else twin
        if given:
            mapped = ipv4_gid(given)
            gids += [(ipv4_at, mapped, "IB/RoCE v1", netdev), (ipv4_at + 1, mapped, "RoCE v2", netdev)]
        ports.append(Port(device, gids=gids, netdev=netdev))
    return ports


#: Binds ``$1`` (a tree's infiniband folder) over /sys/class/infiniband, which sysfs does not have on a
#: machine without RDMA and where no folder can be made: a tmpfs over /sys/class holding each class bound
#: back from a handle on the original (``$2``), and the tree. The classes' links are relative
#: (``../../devices/...``), so they still lead into the node's sysfs.
MOUNT = r"""set -e
mkdir -p "$2"
mount --bind /sys/class "$2"
mount -t tmpfs -o mode=755 sparktui-fabric /sys/class
for c in "$2"/*; do mkdir "/sys/class/${c##*/}"; mount --bind "$c" "/sys/class/${c##*/}"; done
mkdir -p /sys/class/infiniband
mount --bind "$1" /sys/class/infiniband
"""
UNMOUNT = r"""umount -l /sys/class; umount -l "$1" 2>/dev/null; true"""


@contextmanager
def mounted(sparks: Sparks, root: Path, ports: Mapping[str, list[Port]]) -> Iterator[None]:
    """Each named node with a tree of ``ports`` bound over its /sys/class/infiniband (its own mount
    namespace: this machine and the other nodes see nothing), undone afterwards."""
    done: list[tuple[SparkNode, Path]] = []
    try:
        for name, listed in ports.items():
            node = sparks[name]
            ib, _ = tree(root / name, listed)
            handle = root / name / "class"
            node.run(f"set -- {shlex.quote(str(ib))} {shlex.quote(str(handle))}\n{MOUNT}")
            done.append((node, handle))
        yield
    finally:
        for node, handle in done:
            node.run(f"set -- {shlex.quote(str(handle))}\n{UNMOUNT}", check=False)
