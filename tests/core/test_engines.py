"""The literal engine and the Hyperscan engine propose lines differently but must agree on every match."""

from __future__ import annotations

from sparktui.core.analysis.matcher import HyperscanEngine, LiteralEngine, Matcher
from sparktui.core.catalogue import Catalogue

from ..conftest import FIXTURES


def patterns(catalogue: Catalogue) -> list[str]:
    out = [p for s in catalogue.signatures for p in (*s.any, *s.none)]
    out += [p for t in catalogue.tracks for stage in t.stages for p in stage.any]
    return out


def test_engines_agree_on_every_fixture(catalogue: Catalogue) -> None:
    pats = patterns(catalogue)
    literal, fast = Matcher(pats, LiteralEngine(pats)), Matcher(pats, HyperscanEngine(pats))
    files = [p for p in FIXTURES.rglob("*") if p.is_file()]
    assert files
    for path in files:
        text = path.read_text(errors="replace")
        a = [(m.index, m.key, m.match.span()) for m in literal.scan(text)]
        b = [(m.index, m.key, m.match.span()) for m in fast.scan(text)]
        assert a == b, path


def test_pattern_without_literal_still_matches() -> None:
    pats = [r"\d+x\d+", "Init COMPLETE"]
    text = "a\n12x34\nfoo Init COMPLETE\n"
    for engine in (LiteralEngine(pats), HyperscanEngine(pats)):
        found = [(m.index, m.key) for m in Matcher(pats, engine).scan(text)]
        assert found == [(1, 0), (2, 1)]
