"""The spool is private: written by a live run through the real pipeline, its folders are 0700 and its files
0600 whatever the umask, the secrets in the lines are redacted as in exports (kept only with --spool-raw),
it replays and diagnoses as the logs it copied, and old incidents are pruned by age and by size, never one
that a live session is writing."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparktui.cli import main
from sparktui.core.catalogue import Catalogue
from sparktui.core.clock import ReplayClock
from sparktui.core.pipeline import run
from sparktui.core.redact import REDACTED
from sparktui.core.settings import SpoolSettings
from sparktui.core.sources import bundle
from sparktui.core.sources.follow import FollowedFile
from sparktui.core.sources.replay import replay
from sparktui.core.sources.spool import Spool, prune
from tests.servers.sshd import SshdCluster, command_line

from ..conftest import FIXTURES
from ..waiting import until, wait_until

HANG = FIXTURES / "nccl" / "two-hosts-second-group-not-joined"
TOKEN = "hf_PlantedTokenForTheSpoolTest0123456789"
API_KEY = "PlantedApiKeyForTheSpool"
DAY = 86400


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """The two ranks' real logs, with a Hugging Face token and an --api-key value added to two lines."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for name, line, secret in (("rank0.log", 4, f" HF_TOKEN={TOKEN}"), ("rank1.log", 7, f" --api-key {API_KEY}")):
        lines = (HANG / name).read_text().split("\n")
        lines[line] += secret
        (folder / name).write_text("\n".join(lines))
    return folder


def incidents() -> Path:
    return Path(os.environ["XDG_STATE_HOME"]) / "sparktui" / "incidents"


def spooled(umask: int, *arguments: str) -> Path:
    """The incident folder of one `diagnose --follow` run under ``umask``."""
    before = set(incidents().iterdir()) if incidents().exists() else set()
    old = os.umask(umask)
    try:
        assert main(["diagnose", "--follow", "--for", "2s", "--quiet", "--json", *arguments]) in (0, 1)
    finally:
        os.umask(old)
    (made,) = set(incidents().iterdir()) - before
    return made


def tree(path: Path) -> Iterator[Path]:
    yield path
    yield from path.rglob("*")


def modes(path: Path) -> set[tuple[str, int]]:
    """(kind, permission bits) of the folder and everything in it."""
    return {("dir" if p.is_dir() else "file", stat.S_IMODE(os.stat(p).st_mode)) for p in tree(path)}


def text_of(path: Path) -> str:
    return "".join(p.read_text() for p in tree(path) if p.is_file())


def test_a_live_run_keeps_a_private_redacted_spool(
    logs: Path, capsys: pytest.CaptureFixture[str], catalogue: Catalogue
) -> None:
    spool = spooled(0o000, str(logs))  # the widest umask: nothing may come out wider than the spool's modes
    capsys.readouterr()
    assert modes(spool) == {("dir", 0o700), ("file", 0o600)}
    assert stat.S_IMODE(os.stat(incidents()).st_mode) == 0o700
    kept = text_of(spool)
    assert TOKEN not in kept and API_KEY not in kept
    assert f"HF_TOKEN={REDACTED}" in kept and f"--api-key {REDACTED}" in kept
    loaded = bundle.load(spool)
    assert 'redacted = "secrets"' in (spool / "bundle.toml").read_text()
    assert sorted(s.name for s in loaded.sources) == ["spark-a/rank0.log", "spark-b/rank1.log"]
    for source in loaded.sources:  # line for line the logs it copied, so evidence lines and times stay true
        original = (logs / Path(source.name).name).read_text()
        assert len(source.path.read_text().splitlines()) == len(original.splitlines())
    # It diagnoses, and replays as the cockpit replays it, to what the logs themselves give.
    assert main(["diagnose", "--json", str(logs)]) == 1
    expected = [f["signature"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert main(["diagnose", "--json", str(spool)]) == 1
    assert [f["signature"] for f in json.loads(capsys.readouterr().out)["findings"]] == expected
    clock = ReplayClock(0)
    replayed = run(catalogue, replay(loaded, clock), clock=clock, show=False).wait()
    assert [f.signature for f in replayed.findings] == expected
    assert "nccl-second-communicator-not-joined" in expected


def test_the_raw_spool_keeps_the_secrets_when_asked(logs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spool = spooled(0o022, "--spool-raw", str(logs))
    assert modes(spool) == {("dir", 0o700), ("file", 0o600)}
    kept = text_of(spool)
    assert TOKEN in kept and API_KEY in kept and REDACTED not in kept
    assert 'redacted = "none"' in (spool / "bundle.toml").read_text()
    assert main(["diagnose", "--spool-raw", str(logs)]) == 2
    assert "--spool-raw needs --follow" in capsys.readouterr().err
    assert main(["diagnose", "--no-spool", str(logs)]) == 2  # trial 2026-12c: accepted, and meant nothing
    assert capsys.readouterr().err == "sparktui: --no-spool needs --follow (only live sources are spooled)\n"


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077, 0o277], ids=oct)
def test_the_modes_hold_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    """0o277 would take the owner's own write right away: the modes are put right on the descriptors."""
    lines = tuple((HANG / "rank0.log").read_text().splitlines())
    old = os.umask(umask)
    try:
        spool = Spool.new("umask", root=tmp_path, keep=SpoolSettings())
        for _ in range(3):  # past max_bytes: the files rotate and are made again
            spool.write("rank0.log", "spark-a", lines)
        spool.max_bytes = 1
        spool.write("rank0.log", "spark-a", lines)
        spool.close()
    finally:
        os.umask(old)
    assert (spool.path / "spark-a" / "rank0.log.1").exists()
    assert modes(tmp_path / "incidents") == {("dir", 0o700), ("file", 0o600)}


def test_a_private_key_split_across_two_batches_is_redacted_whole(tmp_path: Path) -> None:
    """A live source hands over lines in batches: a key that begins in one and ends in the next goes whole,
    line for line, and the lines around it stay."""
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(tmp_path / "key")], check=True)
    key = (tmp_path / "key").read_text().splitlines()
    log = (HANG / "rank0.log").read_text().splitlines()
    first, second = (*log[:10], *key[:5]), (*key[5:], *log[10:])
    spool = Spool.new("key", root=tmp_path, keep=SpoolSettings())
    spool.write("rank0.log", "spark-a", first)
    spool.write("rank0.log", "spark-a", second)
    spool.write("rank0.log", "spark-a", tuple(log[:3]))  # the key ended: what comes next is kept as it is
    spool.close()
    kept = (spool.path / "spark-a" / "rank0.log").read_text().splitlines()
    assert kept == [*log[:10], *[REDACTED] * len(key), *log[10:], *log[:3]]


def test_an_earlier_world_readable_incidents_folder_is_made_private(tmp_path: Path) -> None:
    (tmp_path / "incidents").mkdir(mode=0o755)
    os.chmod(tmp_path / "incidents", 0o755)
    Spool.new("old", root=tmp_path, keep=SpoolSettings()).close()
    assert stat.S_IMODE(os.stat(tmp_path / "incidents").st_mode) == 0o700


def incident(root: Path, days_ago: float, copies: int = 1) -> Path:
    """A spooled incident of real lines, last written ``days_ago`` days ago."""
    lines = tuple((HANG / "rank0.log").read_text().splitlines())
    spool = Spool.new("old", root=root, keep=SpoolSettings(keep_days=1e9, keep_mb=1e9))
    for _ in range(copies):
        spool.write("rank0.log", "spark-a", lines)
    spool.close()
    when = time.time() - days_ago * DAY
    for path in tree(spool.path):
        os.utime(path, (when, when))
    return spool.path


def test_old_incidents_are_pruned_by_age(tmp_path: Path) -> None:
    old, recent = incident(tmp_path, 20), incident(tmp_path, 10)
    notes = tmp_path / "incidents" / "notes"  # not a folder a spool made: never touched
    notes.mkdir()
    os.utime(notes, (0, 0))
    spool = Spool.new("new", root=tmp_path, keep=SpoolSettings(keep_days=14))
    assert not old.exists()
    assert recent.exists() and notes.exists() and spool.path.exists()
    spool.close()


def test_empty_incident_folders_left_by_killed_sessions_are_pruned(tmp_path: Path) -> None:
    """Trial 12b §4 item 20: sessions killed before they could close left empty incident folders behind."""
    (tmp_path / "incidents").mkdir(parents=True)
    left = [tmp_path / "incidents" / f"20261203-20000{n}" for n in range(3)]
    for folder in left:
        folder.mkdir()
    live = Spool.new("live", root=tmp_path, keep=SpoolSettings())  # empty too, but another session's, locked
    spool = Spool.new("new", root=tmp_path, keep=SpoolSettings())
    assert set((tmp_path / "incidents").iterdir()) == {live.path, spool.path}
    spool.close()
    live.close()


def test_old_incidents_are_pruned_by_size_oldest_first_never_a_live_one(tmp_path: Path) -> None:
    live_lines = tuple((HANG / "rank1.log").read_text().splitlines())
    live = Spool.new("live", root=tmp_path, keep=SpoolSettings())  # another session, still writing
    live.write("rank1.log", "spark-b", live_lines * 40)
    live.flush()
    for path in tree(live.path):
        os.utime(path, (time.time() - 3 * DAY,) * 2)  # the oldest of all
    first, second, third = (incident(tmp_path, days, copies=40) for days in (2, 1, 0.5))
    size = sum(p.stat().st_size for p in tree(second) if p.is_file())
    assert size > 150_000
    keep = SpoolSettings(keep_mb=(2.5 * size + 1000) / (1 << 20))  # the live one and one more fit
    assert prune(tmp_path / "incidents", keep, current=third) == [first]  # the live one was skipped
    # A new spool prunes: what is over the size goes, the oldest first, down to what fits.
    spool = Spool.new("new", root=tmp_path, keep=keep)
    assert set((tmp_path / "incidents").iterdir()) == {live.path, third, spool.path}  # second went
    spool.close()
    live.close()
    smaller = SpoolSettings(keep_mb=1.5 * size / (1 << 20))
    assert prune(tmp_path / "incidents", smaller) == [live.path]  # once closed, it goes first: the oldest


def test_the_settings_file_gives_the_spool_its_limits(logs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Path(os.environ["XDG_CONFIG_HOME"]) / "sparktui" / "settings.toml"
    settings.parent.mkdir(parents=True)
    first = spooled(0o022, str(logs))
    for path in tree(first):
        os.utime(path, (time.time() - 3 * DAY,) * 2)
    settings.write_text("[spool]\nkeep_days = 2\n")
    second = spooled(0o022, str(logs))
    assert not first.exists() and second.exists()
    settings.write_text('[spool]\nkeep_mb = "lots"\n')
    capsys.readouterr()
    assert main(["diagnose", "--follow", "--for", "1s", str(logs)]) == 2
    assert capsys.readouterr().err.strip() == f"sparktui: {settings}: spool.keep_mb: must be a positive number of MiB"
    settings.write_text("[spool]\nkeep_weeks = 2\n")
    assert main(["diagnose", "--follow", "--for", "1s", str(logs)]) == 2
    assert "spool.keep_weeks: unknown key (keep_days, keep_mb)" in capsys.readouterr().err


def test_the_cockpit_spools_raw_only_when_asked(tmp_path: Path, catalogue: Catalogue) -> None:
    from sparktui.cli import build_parser
    from sparktui.tui.factory import make_app
    from sparktui.tui.session import Session

    assert build_parser().parse_args(["open", "--spool-raw", "rank0.log"]).spool_raw

    shutil.copy(HANG / "rank0.log", tmp_path / "rank0.log")
    session = Session("live", live=(FollowedFile(tmp_path / "rank0.log", "rank0.log"),))
    for raw in (False, True):
        spool = make_app(session, catalogue=catalogue, spool_raw=raw).pipeline.spool
        assert spool is not None and spool.raw is raw
        assert stat.S_IMODE(os.stat(spool.path).st_mode) == 0o700
        spool.close()


def test_a_session_that_received_nothing_leaves_no_incident(
    sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A connection refused (here an unknown host key) spools nothing: no empty incident folder is left."""
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    (tmp_path / "home" / ".ssh" / "known_hosts").write_text("")
    before = set(incidents().iterdir()) if incidents().exists() else set()
    assert main(["diagnose", "--follow", "--for", "2s", "--quiet", f"ssh://node-a/{HANG}/rank0.log"]) == 2
    assert "is not in" in capsys.readouterr().out  # the source's error, in the diagnosis
    assert set(incidents().iterdir()) == before
    # A session that did receive lines keeps them, as before.
    lines = tuple((HANG / "rank0.log").read_text().splitlines())
    spool = Spool.new("kept", root=tmp_path, keep=SpoolSettings())
    spool.write("rank0.log", "spark-a", lines)
    spool.close()
    assert bundle.is_bundle(spool.path)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A real filesystem of 512 KiB to fill up: a tmpfs mounted in a mount namespace of its own, held by a
    sleeping process and reached through that process's root (``/proc/PID/root``), so no mount is made
    where the test runs. Where a mount namespace is refused (no CAP_SYS_ADMIN: not root, or a container's
    root), the namespace is a user namespace's too, where a tmpfs may be mounted."""
    folder = tmp_path / "small"
    folder.mkdir()
    refused = []
    for user in ([], ["--user", "--map-root-user"]):
        holder = tmpfs_held(folder, user)
        if holder.poll() is None:
            break
        refused.append(holder.communicate()[1].decode().strip())
    else:
        raise AssertionError(f"cannot mount a tmpfs to fill: {'; '.join(refused)}")
    try:
        yield Path(f"/proc/{holder.pid}/root{folder}")
    finally:
        holder.kill()
        holder.communicate()


def tmpfs_held(folder: Path, user: list[str]) -> subprocess.Popen[bytes]:
    """A process sleeping in a mount namespace of its own (``user``: unshare's options for a user namespace
    too) where a 512 KiB tmpfs is mounted on ``folder``; one that has ended, where the mount was refused."""
    script = 'mount -t tmpfs -o size=512k tmpfs "$0" && exec sleep infinity'
    holder = subprocess.Popen(
        ["unshare", *user, "--mount", "--propagation", "private", "sh", "-c", script, str(folder)],
        stderr=subprocess.PIPE,
    )
    wait_until(lambda: command_line(holder.pid).startswith("sleep") or holder.poll() is not None, 15, "the tmpfs")
    return holder


def big_logs(folder: Path) -> Path:
    """The two ranks' real logs, rank0's after 1 MiB of start-up lines: more than the small disk holds."""
    folder.mkdir()
    filler = "".join(
        f"INFO 12-03 10:00:00 loader.py:88 loaded weight shard {i} of 9000 (all well)\n" for i in range(14000)
    )
    (folder / "rank0.log").write_text(filler + (HANG / "rank0.log").read_text())
    shutil.copy(HANG / "rank1.log", folder / "rank1.log")
    return folder


def a_whole_bundle(spool: Path) -> int:
    """Checks that what ``spool`` kept is a bundle whose logs and times agree line for line; its log bytes."""
    kept = 0
    for source in bundle.load(spool).sources:
        lines = source.path.read_bytes()
        assert lines.endswith(b"\n") or not lines  # no half line
        assert lines.count(b"\n") == Path(f"{source.path}.times").read_bytes().count(b"\n")
        kept += len(lines)
    return kept


def test_a_full_disk_stops_the_spool_not_the_analysis(
    full_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = big_logs(tmp_path / "logs")
    total = sum(p.stat().st_size for p in logs.iterdir())
    assert main(["diagnose", "--follow", "--for", "2s", "--no-spool", "--json", str(logs)]) in (0, 1)
    expected = [f["signature"] for f in json.loads(capsys.readouterr().out)["findings"]]
    monkeypatch.setenv("XDG_STATE_HOME", str(full_disk))
    assert main(["diagnose", "--follow", "--for", "2s", "--json", str(logs)]) in (0, 1)
    out, err = capsys.readouterr()
    diagnosis = json.loads(out)
    assert [f["signature"] for f in diagnosis["findings"]] == expected  # the same diagnosis as with no spool
    assert sum(s["lines"] for s in diagnosis["sources"]) == sum(len(p.read_text().splitlines()) for p in logs.iterdir())
    (warning,) = [w for w in diagnosis["warnings"] if w.startswith("spool stopped")]
    assert warning in err
    (spool,) = (full_disk / "sparktui" / "incidents").iterdir()
    kept = a_whole_bundle(spool)
    assert 0 < kept < total
    assert warning == f"spool stopped: No space left on device; {total - kept} bytes not kept"
    assert main(["diagnose", "--json", str(spool)]) in (0, 1)  # what was kept diagnoses


def test_a_spool_that_stops_keeps_what_came_before_and_counts_the_rest(full_disk: Path) -> None:
    spool = Spool(full_disk / "incident")
    line = "x" * 99
    written = 0
    for n in range(800):  # 80 KB a batch: the disk fills up on the 7th
        spool.write(f"rank{n % 2}.log", "spark-a", (line,) * 800)
        written += 800 * 100
        assert not spool.stopped or spool.stopped == "No space left on device"
    spool.flush()
    spool.close()
    assert spool.stopped == "No space left on device"
    kept = a_whole_bundle(spool.path)
    assert spool.warning == f"spool stopped: No space left on device; {written - kept} bytes not kept"
    assert kept > 300_000  # all but the last few batches (the times take their share)


STOPPED_BY_FSIZE = """
import resource, signal, sys
from sparktui.cli import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, instead of a kill
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
sys.exit(main(["diagnose", "--follow", "--for", "2s", "--json", sys.argv[1]]))
"""


def test_a_file_too_big_stops_the_spool_not_the_analysis(tmp_path: Path) -> None:
    """The same with no filesystem to fill, and any user: writes past RLIMIT_FSIZE fail (EFBIG)."""
    logs = big_logs(tmp_path / "logs")
    done = subprocess.run(
        [sys.executable, "-c", STOPPED_BY_FSIZE, str(logs)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode in (0, 1), done.stderr
    diagnosis = json.loads(done.stdout)
    assert sum(s["lines"] for s in diagnosis["sources"]) == sum(len(p.read_text().splitlines()) for p in logs.iterdir())
    (warning,) = [w for w in diagnosis["warnings"] if w.startswith("spool stopped")]
    assert warning.startswith("spool stopped: File too large; ")
    (spool,) = incidents().iterdir()
    total = sum(p.stat().st_size for p in logs.iterdir())
    assert 0 < a_whole_bundle(spool) < total


async def test_a_full_disk_stops_the_cockpits_spool_with_a_notification_and_the_lines_go_on(
    full_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catalogue: Catalogue
) -> None:
    from sparktui.tui.factory import make_app
    from sparktui.tui.session import Session

    logs = big_logs(tmp_path / "logs")
    monkeypatch.setenv("XDG_STATE_HOME", str(full_disk))
    total = len((logs / "rank0.log").read_text().splitlines())
    app = make_app(Session("live", live=(FollowedFile(logs / "rank0.log", "rank0.log"),)), catalogue=catalogue)
    async with app.run_test(size=(160, 48)):
        said = await until(
            lambda: shown_to(app) == total and [n.message for n in app._notifications if n.title == "spool"],
            10,
            "every line shown and the spool's notification",
        )
        assert app.pipeline.lines == shown_to(app) == total  # the lines after the disk filled up are shown
        assert len(said) == 1 and said[0].startswith("spool stopped: No space left on device; ")
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert not errors, errors
    spool = app.pipeline.spool
    assert spool is not None
    assert a_whole_bundle(spool.path) > 0


def shown_to(app: Any) -> int:
    """The number of the last line the cockpit's panes show."""
    panes = [pane for column in app.nodes_area.columns.values() for pane in column.panes.values()]
    return max((line.number for pane in panes for line in pane.lines_kept), default=0)
