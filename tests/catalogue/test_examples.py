"""One test per signature file, stage track, line prefix and program format, generated from diagnostics/:
every example must behave as declared."""

from __future__ import annotations

import pytest

from sparktui.core import catalogue as cat
from sparktui.core.analysis.examples import check, check_format, check_prefix, check_track
from sparktui.core.classify import FORMATS, PREFIXES
from sparktui.core.formats import Format, Prefix

CATALOGUE = cat.load()


@pytest.mark.parametrize("sig", CATALOGUE.signatures, ids=[s.id for s in CATALOGUE.signatures])
def test_signature_examples(sig: cat.Signature, catalogue: cat.Catalogue) -> None:
    assert check(sig, catalogue) == []


@pytest.mark.parametrize("track", CATALOGUE.tracks, ids=[t.id for t in CATALOGUE.tracks])
def test_stage_track_examples(track: cat.Track) -> None:
    assert check_track(track) == []


@pytest.mark.parametrize("prefix", PREFIXES, ids=[p.id for p in PREFIXES])
def test_prefix_examples(prefix: Prefix) -> None:
    assert check_prefix(prefix) == []


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.id for f in FORMATS])
def test_program_format_examples(fmt: Format) -> None:
    assert check_format(fmt) == []
