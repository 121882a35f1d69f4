from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.core import catalogue as cat

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(scope="session")
def catalogue() -> cat.Catalogue:
    return cat.load()


@pytest.fixture(autouse=True)
def private_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spools, approvals and other state of the tests go to temporary folders, never the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("SPARKTUI_CONFIG_DIR", raising=False)
