"""The shell programs sparktui sends to nodes parse: each one, as it would be sent, goes through ``bash -n``
(and the POSIX ``sh -n`` where it runs under ``sh``), so a quoting slip fails here and not on a node."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sparktui.core.inventory.script import Request, nonce, script
from sparktui.core.remote import ssh as remote_ssh
from sparktui.core.sources import ssh as ssh_sources
from sparktui.core.stacks import script as stacks

from ..conftest import ROOT

INVENTORY_REQUESTS = {
    "node only": Request(probe=False),
    "image, containers, model, probe": Request(image="vllm/vllm-openai:v0.11.0", containers=("vllm",), model="/m"),
    "a model repository id": Request(model="Qwen/Qwen3-8B", probe=False),
}


#: The shell files in the package (sent to nodes as they are, or with the values they run with before them).
SHIPPED = sorted(p for pattern in ("*.sh", "*.bash") for p in (ROOT / "sparktui").rglob(pattern))


def parses(shell: str, program: str) -> str:
    """What ``shell -n`` says of ``program`` ("" when it parses)."""
    done = subprocess.run([shell, "-n", "-c", program], capture_output=True, text=True, timeout=30)
    return "" if done.returncode == 0 else done.stderr.strip() or f"exit {done.returncode}"


@pytest.mark.parametrize("name", INVENTORY_REQUESTS)
def test_the_inventory_script_parses(name: str) -> None:
    # run as sh -c on the nodes (POSIX sh: dash here)
    for shell in ("sh", "bash"):
        assert parses(shell, script(INVENTORY_REQUESTS[name], nonce())) == ""


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shell_file_shipped_parses(path: Path) -> None:
    """A .sh file is POSIX sh, a .bash file bash; each parses as its own file too (what sparktui sends is
    checked above, as sent)."""
    assert parses("sh" if path.suffix == ".sh" else "bash", path.read_text(encoding="utf-8")) == ""


@pytest.mark.parametrize("request_", [stacks.Request(), stacks.Request(native=True, containers=("vllm", "a b"))])
def test_the_stacks_script_parses(request_: stacks.Request) -> None:
    assert parses("bash", stacks.PLACE) == ""
    assert parses("sh", stacks.script(request_, stacks.nonce())) == ""


def test_the_remote_follower_parses() -> None:
    assert parses("bash", ssh_sources.FOLLOWER) == ""


def test_the_remote_command_wrapper_parses_in_posix_sh() -> None:
    # every remote command runs as sh -c '<wrapper> exec <command>'
    assert parses("sh", remote_ssh.UNTIL_CLOSED + "true") == ""
