"""One test per signature file, generated from diagnostics/: every example must behave as declared."""

from __future__ import annotations

import pytest

from sparktui.core import catalogue as cat
from sparktui.core.analysis.examples import check

SIGNATURES = cat.load().signatures


@pytest.mark.parametrize("sig", SIGNATURES, ids=[s.id for s in SIGNATURES])
def test_signature_examples(sig: cat.Signature) -> None:
    assert check(sig, cat.load()) == []
