"""A restart resumes from the spool's checkpoint (trial 2026-12b §4 item 19, N11): a second ``diagnose --follow``
of the same file reads only what was written since, keeps nothing twice and gives the diagnosis one session
would. Real processes, a real captured log, real signals (SIGTERM as ``timeout`` sends it, SIGKILL), the file
local or on a node of the test sshd."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sparktui.core.settings import SpoolSettings
from sparktui.core.sources.spool import CHECKPOINT, Spool
from tests.servers.sshd import SshdCluster

from ..conftest import FIXTURES
from ..waiting import wait_until

LOG = FIXTURES / "nccl" / "single-host-rendezvous-wrong-port" / "rank1.log"
#: Lines the first session reads: the second error (line 31) among them, past the file's first KiB.
FIRST = 40


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}


def _follow(tmp_path: Path, *extra: str, source: str = "app.log") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sparktui", "diagnose", "--follow", "--json", *extra, source],
        cwd=tmp_path / "run",
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _checkpointed(tmp_path: Path) -> int:
    """The bytes of the log the spool's last checkpoint says are kept (0 before there is one)."""
    marks = list((tmp_path / "state").rglob(CHECKPOINT))
    lines = marks[0].read_text().splitlines()[1:] if marks else []
    return json.loads(lines[-1])["log"] if lines else 0


def _ended(process: subprocess.Popen[str], number: signal.Signals) -> tuple[str, str]:
    try:
        assert process.poll() is None, process.communicate()[1]
        process.send_signal(number)
        return process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _findings(diagnosis: dict[str, Any]) -> list[tuple[str, int, list[tuple[int, str]]]]:
    return sorted(
        (f["signature"], f["count"], [(e["line"], e["text"]) for e in f["evidence"]]) for f in diagnosis["findings"]
    )


@pytest.mark.parametrize(
    ("where", "number"), [("here", signal.SIGTERM), ("here", signal.SIGKILL), ("over ssh", signal.SIGKILL)]
)
def test_a_restart_reads_only_what_is_new(
    tmp_path: Path, where: str, number: signal.Signals, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = LOG.read_bytes()
    lines = text.splitlines(keepends=True)
    head = b"".join(lines[:FIRST])
    (tmp_path / "run").mkdir()
    log = tmp_path / "run" / "app.log"
    log.write_bytes(head)
    source = "app.log"
    if where == "over ssh":
        cluster: SshdCluster = request.getfixturevalue("sshd_cluster")
        cluster.home_for(tmp_path / "home", monkeypatch)
        source = f"ssh://node-a/{log}"

    first = _follow(tmp_path, source=source)
    wait_until(lambda: _checkpointed(tmp_path) == len(head) or first.poll() is not None, 60, "the first 40 lines kept")
    _ended(first, number)

    # What the first session read is changed in place (past the first KiB, which names the file): read again,
    # the second error would be lost; resumed, it is read back from the spool as the first session kept it.
    second_error = len(b"".join(lines[:30]))
    assert second_error > 1024 and b"TCPStore" in lines[30]
    with open(log, "r+b") as changed:
        changed.seek(second_error)
        changed.write(b"x" * (len(lines[30]) - 1))
    with open(log, "ab") as more:
        more.write(b"".join(lines[FIRST:]))

    second = _follow(tmp_path, source=source)
    wait_until(lambda: _checkpointed(tmp_path) == len(text) or second.poll() is not None, 60, "the rest kept")
    out, err = _ended(second, signal.SIGTERM)
    assert second.returncode == 1, err
    assert "sparktui: resuming " in err and "Traceback" not in err
    resumed = json.loads(out)
    (source,) = resumed["sources"]
    assert source["lines"] == len(lines)  # the first 40 once (from the spool), then the rest
    assert any(note.startswith(f"resumed: the {len(head):,} bytes of it") for note in source["notes"])

    # One incident, every line once, as the log was when each was read.
    (incident,) = (tmp_path / "state" / "sparktui" / "incidents").iterdir()
    (spooled,) = incident.glob("*/*.log")
    assert spooled.read_bytes() == text
    assert len(Path(f"{spooled}.times").read_text().splitlines()) == len(lines)

    # The diagnosis one session of the original log gives.
    (tmp_path / "whole").mkdir()
    (tmp_path / "whole" / "app.log").write_bytes(text)
    once = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--json", "app.log"],
        cwd=tmp_path / "whole",
        env=_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert once.returncode == 1, once.stderr
    assert _findings(resumed) == _findings(json.loads(once.stdout))


def test_fresh_reads_from_the_start_into_a_new_incident(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "app.log").write_bytes(LOG.read_bytes())
    size = LOG.stat().st_size
    for count, extra in enumerate(((), ("--fresh",)), 1):
        process = _follow(tmp_path, *extra)
        wait_until(
            lambda n=count, p=process: (
                [_spooled(i) for i in _incidents(tmp_path)] == [size] * n or p.poll() is not None
            ),
            60,
            "the log kept",
        )
        out, err = _ended(process, signal.SIGTERM)
        assert json.loads(out)["sources"][0]["lines"] == len(LOG.read_bytes().splitlines()), err
    assert len(_incidents(tmp_path)) == 2  # each read it whole
    assert "resuming" not in err


def test_the_session_after_a_fresh_one_resumes_it(tmp_path: Path) -> None:
    """The trial's R1: a `--fresh` session's checkpoint named no inputs (`{"inputs": ""`), so the next session of
    the same file never resumed it and read every line again into a new incident."""
    text = LOG.read_bytes()
    lines = text.splitlines(keepends=True)
    head = b"".join(lines[:FIRST])
    (tmp_path / "run").mkdir()
    log = tmp_path / "run" / "app.log"
    log.write_bytes(head)
    first = _follow(tmp_path, "--fresh")
    wait_until(lambda: _checkpointed(tmp_path) == len(head) or first.poll() is not None, 60, "the first 40 lines kept")
    _ended(first, signal.SIGTERM)
    with open(log, "ab") as more:
        more.write(b"".join(lines[FIRST:]))
    second = _follow(tmp_path)
    wait_until(lambda: _checkpointed(tmp_path) == len(text) or second.poll() is not None, 60, "the rest kept")
    out, err = _ended(second, signal.SIGTERM)
    assert "sparktui: resuming " in err, err
    assert json.loads(out)["sources"][0]["lines"] == len(lines)
    (incident,) = _incidents(tmp_path)  # the fresh session's, gone on with
    assert incident.joinpath("app", "app.log").read_bytes() == text


def _incidents(tmp_path: Path) -> list[Path]:
    root = tmp_path / "state" / "sparktui" / "incidents"
    return sorted(root.iterdir()) if root.is_dir() else []


def _spooled(incident: Path) -> int:
    log = incident / "app" / "app.log"
    return log.stat().st_size if log.is_file() else 0


def test_a_batch_kept_without_its_checkpoint_is_cut_back(tmp_path: Path) -> None:
    """A session killed between a batch and its checkpoint (or during the checkpoint's line): the next one cuts the
    files back to the last whole checkpoint and reads on from its cursor, so nothing is kept twice."""
    spool = Spool.resume("test", ["a.log"], root=tmp_path, keep=SpoolSettings())
    assert not spool.resumed
    spool.write("a.log", "node", ("one", "two"), cursor="0:0:0:0:8")
    spool.close()
    folder = spool.path
    with open(folder / "node" / "a.log", "a") as log, open(folder / "node" / "a.log.times", "a") as times:
        log.write("three\n")  # a batch on disk whose checkpoint never was
        times.write("5\n")
    with open(folder / CHECKPOINT, "a") as marks:
        marks.write('{"key": "cut sh')  # killed while writing a checkpoint
    again = Spool.resume("test", ["a.log"], root=tmp_path, keep=SpoolSettings())
    assert again.resumed and again.path == folder
    at = again.resume_of("a.log")
    assert at is not None and at.cursor == "0:0:0:0:8" and at.files == ((folder / "node" / "a.log", 8),)
    assert (folder / "node" / "a.log").read_text() == "one\ntwo\n"
    again.write("a.log", "node", ("three",), cursor="0:0:0:0:14")
    again.close()
    assert (folder / "node" / "a.log").read_text() == "one\ntwo\nthree\n"
    other = Spool.resume("test", ["b.log"], root=tmp_path, keep=SpoolSettings())  # other inputs: a new incident
    assert not other.resumed and other.path != folder
    other.close()
