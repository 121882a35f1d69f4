"""The fabric table of ``sparktui check``: one row per RDMA port of every node (its state, link layer, active
MTU, network device and that device's MTU, the index of the IPv4 RoCE v2 GID NCCL picks and its address with
the prefix the device gives it), or one row saying why a node has none (no RDMA devices, the fabric could not
be read, the node did not answer). Pure: made from the inventories."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sparktui.core.inventory.facts import NodeInventory, RdmaPort
from sparktui.core.inventory.names import NO_RDMA, interface_of

#: The columns, as a person reads them.
COLUMNS = ("node", "port", "state", "link", "MTU", "netdev", "netdev MTU", "RoCE v2 GID", "IPv4")


@dataclass(frozen=True, slots=True)
class FabricRow:
    """One RDMA port of a node (``port`` "device:port"), or where ``port`` is "" a node without one and why
    (``note``). ``gid`` is the index of the port's first IPv4 RoCE v2 GID ("none" where it has none; "" for an
    InfiniBand port or a port that is not ACTIVE); ``ipv4`` that GID's address with its network device's prefix
    (``10.20.21.10/24``; the bare address where no interface has it: a stale GID)."""

    node: str
    port: str = ""
    state: str = ""
    link_layer: str = ""
    active_mtu: str = ""
    netdev: str = ""
    netdev_mtu: str = ""
    gid: str = ""
    ipv4: str = ""
    note: str = ""

    @property
    def cells(self) -> tuple[str, ...]:
        if not self.port:
            return (self.node, self.note, "", "", "", "", "", "", "")
        return (
            self.node,
            self.port,
            self.state,
            self.link_layer,
            self.active_mtu,
            self.netdev,
            self.netdev_mtu,
            self.gid,
            self.ipv4,
        )


def rows(inventories: Iterable[NodeInventory]) -> tuple[FabricRow, ...]:
    """Every node's RDMA ports, in the order the nodes were given."""
    found: list[FabricRow] = []
    for inv in inventories:
        if inv.error:
            found.append(FabricRow(inv.node, note=f"not asked: {inv.error}"))
        elif "fabric" in inv.unknown:
            found.append(FabricRow(inv.node, note=f"not read: {inv.unknown['fabric']}"))
        elif not inv.fabric:
            found.append(FabricRow(inv.node, note=NO_RDMA))
        else:
            found += [_row(inv, port) for port in inv.fabric]
    return tuple(found)


def _row(inv: NodeInventory, port: RdmaPort) -> FabricRow:
    roce = port.link_layer == "Ethernet" and port.state == "ACTIVE"
    picked = port.ipv4_roce_v2()[:1]
    gid = str(picked[0].index) if picked else "none" if roce else ""
    address = _with_prefix(inv, picked[0].netdev or port.netdev, picked[0].ipv4) if picked else ""
    return FabricRow(
        inv.node,
        port.name,
        port.state or "unknown",
        port.link_layer,
        str(port.active_mtu or ""),
        port.netdev,
        str(port.netdev_mtu or ""),
        gid,
        address,
    )


def _with_prefix(inv: NodeInventory, netdev: str, address: str) -> str:
    """``address`` with the prefix an interface gives it (``netdev`` first), else the bare address."""
    found = interface_of(inv, netdev, address)
    return found.with_prefixlen if found is not None else address


def lines(table: Iterable[FabricRow]) -> list[str]:
    """The table as aligned text lines, a header first where some node has ports; a node without ports is its
    name and why."""
    table = list(table)
    ported = [COLUMNS, *(r.cells for r in table if r.port)]
    widths = [max(len(c[i]) for c in ported) for i in range(len(COLUMNS))]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    header = [line(COLUMNS)] if len(ported) > 1 else []
    return header + [line(r.cells) if r.port else f"{r.node:<{widths[0]}}  {r.note}" for r in table]
