from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.core import catalogue as cat

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(scope="session")
def catalogue() -> cat.Catalogue:
    return cat.load()
