from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.core import catalogue as cat

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

#: The folders whose tests start real servers or processes (sshd, dockerd, a Ray head, vLLM, torch ranks, tmux):
#: the slow tier, with single tests elsewhere marked ``@pytest.mark.slow`` by hand. ``pytest -m "not slow"`` is
#: the quick run during work; CI runs both tiers.
SLOW_FOLDERS = frozenset({"sources", "sparks", "serving", "stacks", "tui"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.relative_to(ROOT / "tests").parts
        if len(parts) > 1 and parts[0] in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def catalogue() -> cat.Catalogue:
    return cat.load()


@pytest.fixture(autouse=True)
def private_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spools, approvals and other state of the tests go to temporary folders, never the user's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("SPARKTUI_CONFIG_DIR", raising=False)
