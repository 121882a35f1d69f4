"""The audit log and the state folder are private like the spool: the log 0600, its folder and the state
folder 0700, whatever the umask, and an earlier world-readable one is put right."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sparktui.core.audit import AuditEntry, AuditLog, read_log
from sparktui.core.dirs import state_dir
from sparktui.core.settings import SpoolSettings
from sparktui.core.sources.spool import Spool

ENTRY = AuditEntry("ss -Hltnp 'sport = :8000'", "spark-a", datetime(2026, 12, 1, tzinfo=UTC), 0, "LISTEN 0 4096\n")


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277], ids=oct)
def test_the_audit_log_is_private_whatever_the_umask(
    umask: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0o277 would take the owner's own write right from each folder made: the modes are put right."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "home" / ".local" / "state"))
    log = state_dir() / "audit.jsonl"
    old = os.umask(umask)
    try:
        AuditLog((log,)).add(ENTRY)
        AuditLog((log,)).add(ENTRY)
    finally:
        os.umask(old)
    assert (mode(state_dir()), mode(log)) == (0o700, 0o600)
    made = [tmp_path / "home", tmp_path / "home" / ".local", state_dir().parent]  # missing: made private too
    assert [mode(folder) for folder in made] == [0o700] * 3
    assert read_log(log) == [ENTRY, ENTRY]


def test_an_earlier_world_readable_state_folder_and_log_are_made_private() -> None:
    state_dir().mkdir(parents=True)
    os.chmod(state_dir(), 0o755)
    log = state_dir() / "audit.jsonl"
    log.write_text("")
    os.chmod(log, 0o644)
    AuditLog((log,)).add(ENTRY)
    assert (mode(state_dir()), mode(log)) == (0o700, 0o600)
    os.chmod(state_dir(), 0o755)
    Spool.new("state", keep=SpoolSettings()).close()  # a spool puts the state folder right as well
    assert mode(state_dir()) == 0o700
