"""Trial 2026-12b §4 item 20's polish on sources: a symbolic link loop is said as one (N19), and a host name no
connection could use is refused in one line, not with the idna codec's UnicodeError."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparktui.core.sources.open import file_sources, parse_ssh_uri

ROOT = Path(__file__).resolve().parents[2]


def test_a_symbolic_link_loop_is_said_as_one(tmp_path: Path) -> None:
    (tmp_path / "a.log").symlink_to("b.log")
    (tmp_path / "b.log").symlink_to("a.log")
    assert file_sources([str(tmp_path / "a.log")]) == ([], [f"{tmp_path / 'a.log'}: too many levels of symbolic links"])
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", str(tmp_path / "a.log")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.stderr == f"sparktui: {tmp_path / 'a.log'}: too many levels of symbolic links\n"
    assert done.returncode == 2


@pytest.mark.parametrize("host", ["\u202eevil", "x" * 70])
def test_a_host_name_no_connection_could_use_is_refused_in_one_line(host: str) -> None:
    with pytest.raises(ValueError, match=r"is not a host name \(letters, digits, '-' and '\.'\)$"):
        parse_ssh_uri(f"ssh://{host}/var/log/x.log")


def test_an_international_host_name_is_kept() -> None:
    assert parse_ssh_uri("ssh://bücher.example/x.log").host == "bücher.example"


@pytest.mark.parametrize("command", [["stacks"], ["discover"], ["check", "--no-probe"]])
def test_a_node_named_with_a_direction_character_is_refused_in_one_line(command: list[str], tmp_path: Path) -> None:
    """Trial 2026-12c, P-idna: `stacks`, `discover` and `check --no-probe` with host `node5\\u202e` printed
    a 60-line traceback ending in IDNA's UnicodeError. The node is refused in one line, shown inert, as an
    `ssh://` address's host is: a usage error, before anything is asked."""
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", *command, "node5\u202e"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.stdout == ""
    assert done.stderr == "sparktui: 'node5\\u202e' is not a host name (letters, digits, '-' and '.')\n"
    assert done.returncode == 2
