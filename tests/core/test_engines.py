"""The literal engine and the Hyperscan engine propose lines differently but must agree on every match."""

from __future__ import annotations

import pytest

from sparktui.core.analysis.matcher import Matcher
from sparktui.core.catalogue import Catalogue
from sparktui.core.search.engines import ENGINE_VARIABLE, HyperscanEngine, LiteralEngine, word_engine
from sparktui.core.search.literals import required_literals

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
        a = [(line.row, key, m.span()) for line in literal.scan(text) for key, m in line.matches]
        b = [(line.row, key, m.span()) for line in fast.scan(text) for key, m in line.matches]
        assert a == b, path


def test_pattern_without_literal_still_matches() -> None:
    pats = [r"\d+x\d+", "Init COMPLETE"]
    text = "a\n12x34\nfoo Init COMPLETE\n"
    for engine in (LiteralEngine(pats), HyperscanEngine(pats)):
        found = [(line.row, key) for line in Matcher(pats, engine).scan(text) for key, _ in line.matches]
        assert found == [(1, 0), (2, 1)]


def test_a_literal_run_joins_the_alternatives_that_follow_it() -> None:
    channel = r"INFO (?:Channel \d+(?:/0)?|Ring \d+) : (?P<rank>\d+) -> \d+ (?:\[send\] )?via (?P<transport>\S+)"
    assert required_literals(channel) == {"INFO Channel ", "INFO Ring "}  # not "INFO ", on every NCCL line
    assert required_literals(r"Init (START|COMPLETE)") == {"Init START", "Init COMPLETE"}
    assert required_literals(r"(?:abc|\d+)xyzw") == {"xyzw"}  # an alternative without a literal head


@pytest.mark.parametrize("pure", [True, False])
def test_words_of_any_length_are_found_with_the_words_each_line_holds(
    pure: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if pure:
        monkeypatch.setenv(ENGINE_VARIABLE, "pure")
    else:
        monkeypatch.delenv(ENGINE_VARIABLE, raising=False)
    words = ("gl", "glpat-", "key", "xoxb-")
    engine = word_engine(words)
    assert isinstance(engine, LiteralEngine) is pure
    text = "nothing here\nGL glpat-abc\ntoken xoxb-1 key=2\nglobal"
    assert [(c.row, c.keys) for c in engine.scan(text)] == [(1, (0, 1)), (2, (2, 3)), (3, (0,))]
