"""Verification: reading real `ray status` output, the three checks polled on this machine against a real
HTTP server and real commands, and a run whose check fails rolling back (or not, when the user says no)."""

from __future__ import annotations

import http.server
import shlex
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from sparktui.core.audit import AuditLog, read_log
from sparktui.core.remedy import actions
from sparktui.core.remedy import playbook as pb
from sparktui.core.remedy import render as rd
from sparktui.core.remedy.verify import Verdict, ray_cluster_size, run_check
from sparktui.core.remote.command import Command
from sparktui.core.remote.runner import LocalRunner

from ..conftest import FIXTURES

STATUS = FIXTURES / "commands"


@pytest.mark.parametrize("version", ["2.40.0", "2.60.0"])
def test_ray_status_counts_nodes_and_gpus(version: str) -> None:
    assert ray_cluster_size((STATUS / f"ray-status-{version}-head-only.txt").read_text()) == (1, 1.0)
    assert ray_cluster_size((STATUS / f"ray-status-{version}-two-nodes.txt").read_text()) == (2, 2.0)


def test_ray_status_without_a_cluster_is_none() -> None:
    assert ray_cluster_size("ConnectionError: Could not find any running Ray instance.") is None


class _Health(http.server.BaseHTTPRequestHandler):
    answers: ClassVar[list[int]] = []

    def do_GET(self) -> None:
        code = self.answers.pop(0) if self.answers else 200
        self.send_response(code if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def check(kind: str, **fields: object) -> rd.Check:
    return rd.Check(kind, node="local", **fields)  # type: ignore[arg-type]


async def test_http_check_waits_for_2xx(server: int) -> None:
    _Health.answers = [503, 503]
    seen: list[str] = []
    verdict = await run_check(
        check("http", url=f"http://localhost:{server}/health", within=10),
        LocalRunner(),
        lambda node, text: seen.append(text),
        interval=0.05,
    )
    assert verdict == Verdict(True, f"GET http://localhost:{server}/health: 200")
    assert sum("503" in line for line in seen) == 2


async def test_http_check_gives_up_naming_what_it_saw(server: int) -> None:
    verdict = await run_check(
        check("http", url=f"http://localhost:{server}/nothing", within=1),
        LocalRunner(),
        lambda node, text: None,
        interval=0.2,
    )
    assert not verdict.passed and verdict.note.endswith(": 404") and "not within 1 s" in verdict.note


async def test_http_check_on_a_closed_port() -> None:
    verdict = await run_check(
        check("http", url="http://127.0.0.1:9/health", within=1), LocalRunner(), lambda n, t: None
    )
    assert not verdict.passed and "connection refused" in verdict.note


async def test_log_check_stops_the_command_once_the_pattern_shows(tmp_path: Path) -> None:
    marker = tmp_path / "still-running"
    command = (
        f"echo starting; sleep 0.3; echo 'Application startup complete.'; sleep 30; touch {shlex.quote(str(marker))}"
    )
    verdict = await run_check(
        check("log", command=command, pattern=r"startup complete", within=20),
        LocalRunner(),
        lambda n, t: None,
    )
    assert verdict.passed
    assert not marker.exists()


async def test_ray_status_check_needs_enough_nodes_and_gpus() -> None:
    one = shlex.quote(str(STATUS / "ray-status-2.60.0-head-only.txt"))
    two = shlex.quote(str(STATUS / "ray-status-2.60.0-two-nodes.txt"))
    runner = LocalRunner()
    passed = await run_check(check("ray-status", command=f"cat {two}", nodes=2, gpus=2, within=5), runner, print)
    assert passed == Verdict(True, "Ray: 2 nodes, 2 GPUs (needs 2 and 2)")
    failed = await run_check(
        check("ray-status", command=f"cat {one}", nodes=2, gpus=2, within=1), runner, print, interval=0.2
    )
    assert not failed.passed and "1 nodes, 1 GPUs" in failed.note


BOOK = """
id = "touch-and-check"
title = "Touch a file, then check a server"
key = "k"
risk = "changes-node"
description = "A file is made; the check decides; the rollback removes the file."

[params.dir]
kind = "path"
from = ["ask"]

[params.port]
kind = "port"
from = ["ask"]

[[steps]]
on = "local"
run = "touch {dir}/made"

[verify]
kind = "http"
on = "local"
url = "http://localhost:{port}/health"
within = 1

[[rollback]]
on = "local"
run = "rm {dir}/made"
"""


@pytest.fixture
def book(tmp_path: Path) -> pb.Playbook:
    path = tmp_path / "touch-and-check.toml"
    path.write_text(BOOK)
    return pb.load(path)


async def test_failed_verification_runs_the_rollback(book: pb.Playbook, tmp_path: Path) -> None:
    rendered = rd.render(book, {"dir": str(tmp_path), "port": "9"}, rd.HeadAndWorkers("spark-a"))
    audit = AuditLog((tmp_path / "audit.jsonl",))
    outcome = await actions.execute(rendered, LocalRunner(), audit=audit)
    assert not outcome.ok and outcome.failure.startswith("verification failed: ")
    assert [e.step for e in outcome.entries] == ["touch {dir}/made", "verify"]
    assert [e.exit_code for e in outcome.rolled_back] == [0]
    assert not (tmp_path / "made").exists()
    assert len(read_log(audit.paths[0])) == 3


async def test_rollback_declined_leaves_things_as_they_are(book: pb.Playbook, tmp_path: Path) -> None:
    rendered = rd.render(book, {"dir": str(tmp_path), "port": "9"}, rd.HeadAndWorkers("spark-a"))
    offered: list[str] = []

    async def decline(outcome: actions.Outcome) -> bool:
        offered.append(outcome.failure)
        return False

    outcome = await actions.execute(rendered, LocalRunner(), offer_rollback=decline)
    assert offered and offered[0].startswith("verification failed")
    assert outcome.rolled_back == [] and (tmp_path / "made").exists()


async def test_passing_verification_keeps_the_change(book: pb.Playbook, tmp_path: Path, server: int) -> None:
    _Health.answers = []
    rendered = rd.render(book, {"dir": str(tmp_path), "port": str(server)}, rd.HeadAndWorkers("spark-a"))
    outcome = await actions.execute(rendered, LocalRunner())
    assert outcome.ok and outcome.verdict is not None and outcome.verdict.passed
    assert outcome.rolled_back == [] and (tmp_path / "made").exists()


async def test_runner_output_comes_in_whole_lines() -> None:
    """A line written in two pieces, a character cut between two writes, and a last line without newline."""
    script = r"printf 'half'; sleep 0.2; printf ' line\n\303'; sleep 0.2; printf '\251 end'"
    lines: list[str] = []
    code = await LocalRunner().run(Command("t", "local", "host", script), lambda n, line: lines.append(line))
    assert code == 0 and lines == ["half line", "é end"]
