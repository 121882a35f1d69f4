"""The ``ray://`` source: addresses, lines and cursors on their own, then against a real Ray cluster.

The cluster tests live in ray_in_netns.py and run in a process of their own inside a network namespace
that has only ``lo`` (``unshare --net``): Ray replaces 127.0.0.1 by the machine's outside address
whenever there is a route outside, and nothing here may use that address.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sparktui.core.errors import Refused, Unavailable
from sparktui.core.events import State, StateChange
from sparktui.core.lines import MAX_LINE
from sparktui.core.sources.base import Backoff, Received, supervise
from sparktui.core.sources.ray import LineSplitter, RayAddress, RayLogs, RayLogSource, parse_address, ray_log_sources

from ..conftest import ROOT
from ..waiting import until

HERE = Path(__file__).parent


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("ray://head", RayAddress("head", 6379)),
        ("ray://head-1.cluster.local:6380/", RayAddress("head-1.cluster.local", 6380)),
        ("10.0.0.7:7000", RayAddress("10.0.0.7", 7000)),
        ("ray://[fd00::7]:6379", RayAddress("fd00::7", 6379)),
    ],
)
def test_ray_addresses(address: str, expected: RayAddress) -> None:
    assert parse_address(address) == expected
    assert str(expected).endswith(f":{expected.port}")


@pytest.mark.parametrize(
    "address",
    [
        "http://head:8265",
        "ray://head:gcs",
        "ray://head:70000",
        "ray://head:0",
        "ray://",
        "ray://head:6379/logs",
        "ray://admin@head",
        "ray://head?glob=*",
        "ray://he ad",
        "ray://$(reboot)",
    ],
)
async def test_ray_bad_addresses_are_refused_in_one_line(address: str) -> None:
    with pytest.raises(Refused) as refused:
        parse_address(address)
    assert "\n" not in str(refused.value) and address in str(refused.value)
    with pytest.raises(Refused):
        await RayLogs(address).expand()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ray_listing_refuses_bad_globs_and_reports_an_unreachable_head() -> None:
    for glob in ("", "/etc/*", "../*", "logs/../../*"):
        with pytest.raises(Refused, match="must name files inside the Ray log directory"):
            ray_log_sources("ray://127.0.0.1", glob)
    port = closed_port()
    with pytest.raises(Unavailable, match=rf"^cannot reach the Ray head at 127\.0\.0\.1:{port}: Connection refused$"):
        ray_log_sources(f"ray://127.0.0.1:{port}")


async def supervised_states(source: RayLogSource, enough: int) -> list[StateChange]:
    """The state changes of ``source`` under the supervisor, until ``enough`` of them or it stops."""
    states: list[StateChange] = []

    async def deliver(_name: str, _received: Received) -> None:
        raise AssertionError("no lines expected")

    async def no_wait(_delay: float) -> None:
        await asyncio.sleep(0)

    task = asyncio.create_task(supervise(source, deliver, states.append, Backoff(), no_wait))
    await until(lambda: len(states) >= enough or task.done(), 10, f"{enough} state changes")
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return states


async def test_ray_source_with_a_bad_address_fails_at_once() -> None:
    source = RayLogSource("ray://head:gcs", "abc", "raylet.out", node_name="node-a")
    assert (source.name, source.node) == ("ray://head:gcs/node-a/raylet.out", "node-a")
    states = await supervised_states(source, 3)
    assert [s.state for s in states] == [State.CONNECTING, State.FAILED]
    assert states[1].detail.startswith("ray://head:gcs: ") and "\n" not in states[1].detail


async def test_ray_source_retries_an_unreachable_head() -> None:
    port = closed_port()
    source = RayLogSource(f"127.0.0.1:{port}", "abc", "raylet.out", node_name="node-a")
    states = await supervised_states(source, 4)
    assert [s.state for s in states[:4]] == [State.CONNECTING, State.RETRYING] * 2
    assert states[1].detail.startswith(f"cannot reach the Ray head at 127.0.0.1:{port}: Connection refused; retrying")


def test_ray_lines_are_complete_decoded_and_resume_at_a_byte_offset() -> None:
    data = b"one\r\ntwo \xff\n\x1b[1mbold\x1b[0m\nunterminated \x1b]title\nafter it\npartial"
    expected = ["one", "two \ufffd", "bold", "unterminated ", "after it"]
    for size in (1, 2, 3, 7, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        splitter, got, cursors = LineSplitter(0), [], []
        for chunk in chunks:
            lines = splitter.feed(chunk)
            got += lines
            if lines:
                cursors.append((len(got), splitter.offset))
        assert got == expected, size  # the partial last line waits for its newline
        assert splitter.offset == data.rindex(b"\n") + 1
        for delivered, cursor in cursors:  # a stream resumed there reads the file again from its start
            resumed = LineSplitter(cursor)
            rest = [line for chunk in chunks for line in resumed.feed(chunk)]
            assert rest == expected[delivered:], (size, cursor)


def test_ray_line_without_end_is_handed_over_in_pieces() -> None:
    splitter = LineSplitter(0)
    assert splitter.feed(b"x" * (2 * MAX_LINE + 5)) == ["x" * MAX_LINE] * 2
    assert splitter.feed(b"yz\nnext") == ["xxxxxyz"]
    assert splitter.offset == 2 * MAX_LINE + 8


def test_ray_module_imports_without_ray() -> None:
    probe = "import sys, sparktui.core.sources.ray; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_ray_sources_against_a_real_cluster() -> None:
    """ray_in_netns.py: a real head and worker node (CPU only) that its fixtures start and stop, listed,
    followed across a reconnect, and a worker stopped mid-stream."""
    command = ["unshare", "--net", sys.executable, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, str(HERE / "ray_in_netns.py")], cwd=ROOT, capture_output=True, text=True, timeout=240
    )
    # Without a route outside, Ray's C++ client warns on every connection that it fell back to the host name.
    report = "\n".join(line for line in (done.stdout + done.stderr).splitlines() if "network_util.cc" not in line)
    assert done.returncode == 0, report[-8000:]
    summary = report.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary, summary
