"""One test per signature file and per stage track, generated from diagnostics/: every example must behave
as declared."""

from __future__ import annotations

import pytest

from sparktui.core import catalogue as cat
from sparktui.core.analysis.examples import check, check_track

CATALOGUE = cat.load()


@pytest.mark.parametrize("sig", CATALOGUE.signatures, ids=[s.id for s in CATALOGUE.signatures])
def test_signature_examples(sig: cat.Signature, catalogue: cat.Catalogue) -> None:
    assert check(sig, catalogue) == []


@pytest.mark.parametrize("track", CATALOGUE.tracks, ids=[t.id for t in CATALOGUE.tracks])
def test_stage_track_examples(track: cat.Track) -> None:
    assert check_track(track) == []
