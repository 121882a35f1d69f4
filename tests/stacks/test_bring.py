"""Where ``sparktui stacks --bring-py-spy`` brings this machine's py-spy (pure): the places with ranks and no
py-spy, on nodes of this machine's architecture; the commands, which send the binary as their input and
remove it after. The copies themselves run in tests/stacks/test_live.py (SSH) and test_docker.py (a container)."""

from __future__ import annotations

from pathlib import Path

from sparktui.core.stacks import bring
from sparktui.core.stacks.gather import NodeStacks
from sparktui.core.stacks.script import BROUGHT


def test_only_places_without_py_spy_on_nodes_of_this_architecture() -> None:
    found = [
        NodeStacks("spark-a", arch="aarch64", unspied=["host", "vllm_node"]),
        NodeStacks("spark-b", arch="aarch64"),  # py-spy everywhere it found ranks
        NodeStacks("gpu-9", arch="x86_64", unspied=["host"]),
    ]
    plan = bring.plan(found, "aarch64")
    assert plan.places == (("spark-a", "host"), ("spark-a", "vllm_node"))
    assert plan.refused == (
        "gpu-9: not brought: the node is x86_64, this machine's py-spy is aarch64 (sparktui play py-spy-stacks "
        "installs the node's own with pip)",
    )
    assert plan.said(Path("/opt/venv/bin/py-spy"))[1].startswith(
        "spark-a: copy /opt/venv/bin/py-spy (this machine's, "
    ) and plan.said(Path("/x"))[1].endswith(f"to {BROUGHT} in container vllm_node, dump the ranks, then remove it")


def test_the_commands_send_the_binary_and_remove_the_folder() -> None:
    put, remove = bring.commands([("spark-a", "host"), ("spark-a", "vllm node")], b"\x7fELF")
    assert [c.stdin for c in put] == [b"\x7fELF"] * 2 and all(c.stdin == b"" for c in remove)
    assert put[0].command.endswith(f"mv -f {BROUGHT}.part {BROUGHT}")
    assert put[1].command.startswith("docker exec -i 'vllm node' sh -c ")  # a name is quoted
    assert remove[0].command == "rm -rf /tmp/sparktui-py-spy" and remove[1].place == "vllm node"
